#!/usr/bin/env bash
# Backend memory and time of one fingerprint call on hostile text: N
# million random Hangul syllables (default 17, 51 MB), about one distinct
# feature per character; or, with KIND=marks, one letter and N million
# combining acute accents (2 bytes each), a run that plain NFKC holds
# whole. For each function, a new session reads its own
# peak resident size (VmHWM of /proc/<pid>/status) before and after the
# call and reports the difference and the call's time.
#   bench/hostile_memory.sh          17 million characters
#   CHARS=5 bench/hostile_memory.sh  5 million
#   KIND=marks CHARS=100 bench/hostile_memory.sh  a 200 MB run of marks
#   KIND=explain bench/hostile_memory.sh   simhash_explain of two texts
#                                          just under its 16 MB (md5 words)
#   KIND=guard bench/hostile_memory.sh     one INSERT under a verified guard
#                     (4x16 bands) whose 150 candidates (the fingerprint the
#                     application wrote, shared by all) have dissimilar
#                     texts of 600 KB (Hangul): each is read and compared once
# Needs the extension installed (scripts/install.sh); (re)starts the
# throwaway cluster; reads /proc of the server, so run it on the server's
# machine as root or as the server's user.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
CHARS=${CHARS:-17}
KIND=${KIND:-hangul}
bench_db
case $KIND in
    hangul) make="SELECT string_agg(chr(44032 + (random() * 11171)::int), '') AS s FROM generate_series(1, $CHARS * 1000000)"
            calls=("simhash(s)" "simhash_v2(s)" "simhash_v1(s)") ;;
    marks)  make="SELECT 'a' || repeat(chr(769), $CHARS * 1000000) AS s"
            calls=("simhash(s)" "simhash_v2(s)" "simhash_similarity(s, 'a')") ;;
    explain) make="SELECT string_agg(md5(i::text), ' ') AS s, string_agg(md5((i + 7)::text), ' ') AS t
                   FROM generate_series(1, 490000) i"
            calls=("simhash_explain(s, t)") ;;
    guard)  make="SELECT string_agg(chr(44032 + abs(hashint4(i)) % 11172), '') AS s FROM generate_series(1, 200000) i"
            calls=("guarded INSERT") ;;
    *) echo "KIND is hangul, marks, explain or guard" >&2; exit 2 ;;
esac
psql_db -c "DROP TABLE IF EXISTS hostile_text" \
    -c "CREATE TABLE hostile_text AS $make" \
    -c "ALTER TABLE hostile_text ALTER s SET STORAGE EXTERNAL"
printf '%s\n' "$(psql_db -c "SELECT octet_length(s) FROM hostile_text") bytes ($KIND)"
if [ "$KIND" = guard ]; then
    # 150 rows sharing the fingerprint, each text 200,000 other Hangul
    # syllables (similarity 0): every one a candidate at distance 0.
    psql_db -c "DROP TABLE IF EXISTS hostile_guard" \
        -c "CREATE TABLE hostile_guard (id int PRIMARY KEY, body text, fp simhash64)" \
        -c "ALTER TABLE hostile_guard ALTER body SET STORAGE EXTERNAL" \
        -c "SELECT count(*) FROM simhash_add_bands('hostile_guard', 'fp', '4x16')" \
        -c "INSERT INTO hostile_guard SELECT g, (SELECT string_agg(chr(44032 + abs(hashint4(i + g * 1000003)) % 11172), '') FROM generate_series(1, 200000) i), '00000000000000ff' FROM generate_series(1, 150) g" \
        -c "SELECT simhash_add_guard('hostile_guard', 'fp', 3, 'error', 'id', 'body', 0.8)" >/dev/null
fi
hwm() { awk '/VmHWM/ {print $2}' "/proc/$1/status"; }
# Shared buffers the call touched count in the peak too (a page of shared
# memory is resident in every backend that read it): reported apart.
shm() { awk '/RssShmem/ {print $2}' "/proc/$1/status"; }
for call in "${calls[@]}"; do
    out=$(mktemp)
    psql_db >"$out" 2>&1 <<SQL &
SELECT pg_backend_pid();
SELECT pg_sleep(1);
SELECT extract(epoch FROM clock_timestamp()) \gset t_
$(if [ "$KIND" = guard ]; then echo "WITH i AS (INSERT INTO hostile_guard SELECT 0, s, '00000000000000ff' FROM hostile_text RETURNING 1) SELECT count(*) = 1 FROM i;"; else echo "SELECT $call IS NOT NULL FROM hostile_text;"; fi)
SELECT round((extract(epoch FROM clock_timestamp()) - :t_extract)::numeric, 1);
SELECT pg_sleep(2);
SQL
    sleep 0.7
    pid=$(head -n 1 "$out")
    before=$(hwm "$pid")
    shm_before=$(shm "$pid")
    until [ "$(sed -n 4p "$out")" != "" ]; do sleep 0.5; done
    after=$(hwm "$pid")
    shm_after=$(shm "$pid")
    wait
    printf '%-14s peak %4d MB above the idle backend (of which %d MB shared buffers read), %s s\n' "$call" \
        $(( (after - before) / 1024 )) $(( (shm_after - shm_before) / 1024 )) "$(sed -n 4p "$out")"
    rm -f "$out"
done
psql_db -c "DROP TABLE hostile_text" -c "DROP TABLE IF EXISTS hostile_guard"
