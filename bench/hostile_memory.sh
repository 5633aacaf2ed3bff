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
    *) echo "KIND is hangul, marks or explain" >&2; exit 2 ;;
esac
psql_db -c "DROP TABLE IF EXISTS hostile_text" \
    -c "CREATE TABLE hostile_text AS $make" \
    -c "ALTER TABLE hostile_text ALTER s SET STORAGE EXTERNAL"
printf '%s\n' "$(psql_db -c "SELECT octet_length(s) FROM hostile_text") bytes ($KIND)"
hwm() { awk '/VmHWM/ {print $2}' "/proc/$1/status"; }
for call in "${calls[@]}"; do
    out=$(mktemp)
    psql_db >"$out" 2>&1 <<SQL &
SELECT pg_backend_pid();
SELECT pg_sleep(1);
SELECT extract(epoch FROM clock_timestamp()) \gset t_
SELECT $call IS NOT NULL FROM hostile_text;
SELECT round((extract(epoch FROM clock_timestamp()) - :t_extract)::numeric, 1);
SELECT pg_sleep(2);
SQL
    sleep 0.7
    pid=$(head -n 1 "$out")
    before=$(hwm "$pid")
    until [ "$(sed -n 4p "$out")" != "" ]; do sleep 0.5; done
    after=$(hwm "$pid")
    wait
    printf '%-14s peak %4d MB above the idle backend, %s s\n' "$call" $(( (after - before) / 1024 )) "$(sed -n 4p "$out")"
    rm -f "$out"
done
psql_db -c "DROP TABLE hostile_text"
