#!/usr/bin/env bash
# Backend memory of the first simhash() call, with and without
# shared_preload_libraries = 'simhash'.
#
# What is measured: a new session runs `SELECT simhash('今天天气很好')`, then
# reads its own /proc/<pid>/smaps_rollup with pg_read_file() while still
# open, and the script reports, in kB:
#   private  Private_Clean + Private_Dirty: the memory only this backend
#            holds, what each more connection costs
#   dirty    Private_Dirty alone: its own heap and stack. Private_Clean
#            also counts file pages no other process maps, such as the
#            library's code when no other server on the machine loaded it
#   pss      Pss: its proportional share, shared pages split among sharers
#   rss      Rss, for reference
# plus how long the first call took (from the start of its statement).
# The baseline is the same kind of session that never calls simhash(), on
# the same server: the difference is what the first call costs.
#
# Without preloading, the first call in each backend builds jieba's
# dictionary and the IDF table itself; with it, the postmaster built them
# once and every backend shares them copy-on-write.
#
# Run it from anywhere in the checkout:
#   bench/memory.sh            5 sessions of each kind, median
#   REPS=9 bench/memory.sh     more sessions
# It needs the extension installed (scripts/install.sh) and (re)starts the
# throwaway cluster with scripts/cluster.sh (SIMHASH_PGPORT and
# SIMHASH_PGDATA pick another one), whose configuration preloads the
# library. For the second half it restarts the server with
# `-o "-c shared_preload_libraries=..."`, the same list without simhash
# (usually empty), on the command line; no file is edited. (In PostgreSQL
# 15, `ALTER SYSTEM SET shared_preload_libraries = ''` writes '""', a
# library named "", and the server then fails to start.) At the end, or on
# failure, it restarts the server with scripts/cluster.sh, which leaves it
# as it was. Sessions use the database simhash_bench, made if missing.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$ROOT"

REPS=${REPS:-5}
TEXT='今天天气很好'
[[ "$REPS" =~ ^[0-9]+$ ]] && [ "$REPS" -ge 1 ] || die "REPS must be a positive number, not '$REPS'"
export PGCLIENTENCODING=UTF8 PGOPTIONS="${PGOPTIONS:-} -c client_min_messages=warning"

bench_db
preloaded=$(psql_db -c "SHOW shared_preload_libraries" | tr -d ' "')
case ",$preloaded," in
    *,simhash,*) ;;
    *) die "the cluster does not preload simhash (see scripts/cluster.sh); nothing to compare" ;;
esac
# The same list without simhash, for the second half.
others=$(tr ',' '\n' <<<"$preloaded" | grep -vx simhash | paste -sd, - || true)

# Put the usual server back however the script ends.
preload_off=0
restore() {
    if [ "$preload_off" = 1 ]; then
        preload_off=0
        log "restarting the cluster as configured (library preloaded)"
        "$ROOT/scripts/cluster.sh" start
    fi
}
trap restore EXIT

# One new session: with "call", its first statement is the first simhash()
# call. Prints "private dirty pss rss ms" (ms is "-" without the call).
sample() {
    local first="SELECT 'ms=-'"
    if [ "$1" = call ]; then
        # The filter uses the fingerprint, so that the planner cannot drop
        # the call; clock_timestamp() is read after it.
        first="SELECT 'ms=' || round(extract(epoch FROM clock_timestamp() - statement_timestamp()) * 1000, 1)
               FROM (SELECT simhash('$TEXT') AS h) s WHERE h IS NOT NULL"
    fi
    psql_db -c "$first" -c "SELECT pg_read_file('/proc/' || pg_backend_pid() || '/smaps_rollup')" \
        | awk '/^ms=/ { ms = substr($0, 4) }
               /^Private_(Clean|Dirty):/ { private += $2 }
               /^Private_Dirty:/ { dirty = $2 }
               /^Pss:/ { pss = $2 }
               /^Rss:/ { rss = $2 }
               END {
                   if (pss == "") { print "no smaps_rollup read" > "/dev/stderr"; exit 1 }
                   print private, dirty, pss, rss, ms
               }'
}

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# Column $2 of the samples in $1, median.
col() { awk -v c="$2" '{ print $c }' <<<"$1" | median; }

declare -A result
# Sessions of both kinds, alternating, on the server as it is now.
measure() {
    local server=$1 base="" call="" i
    for ((i = 1; i <= REPS; i++)); do
        base+=$(sample nocall)$'\n'
        call+=$(sample call)$'\n'
    done
    base=${base%$'\n'} call=${call%$'\n'}
    result[$server,base]="$(col "$base" 1) $(col "$base" 2) $(col "$base" 3) $(col "$base" 4) -"
    result[$server,call]="$(col "$call" 1) $(col "$call" 2) $(col "$call" 3) $(col "$call" 4) $(col "$call" 5)"
}

log "$REPS sessions of each kind, library preloaded"
measure preload

log "restarting without shared_preload_libraries"
preload_off=1
as_server "$PG_BIN/pg_ctl" -D "$PGDATA_DIR" -m fast -w stop >/dev/null
as_server "$PG_BIN/pg_ctl" -D "$PGDATA_DIR" -l "$PGDATA_DIR/server.log" -w -t 60 \
    -o "-c shared_preload_libraries=$others" start >/dev/null \
    || { tail -n 20 "$PGDATA_DIR/server.log" >&2; die "the server did not start without the preload"; }
case ",$(psql_db -c "SHOW shared_preload_libraries" | tr -d ' "')," in
    *,simhash,*) die "the server still preloads simhash" ;;
esac
log "$REPS sessions of each kind, library not preloaded"
measure nopreload

restore

echo
echo "== backend memory after the first simhash('$TEXT'): median of $REPS sessions, kB =="
printf '%-12s %-26s %9s %9s %9s %9s %14s\n' server session private dirty pss rss "first call ms"
row() {
    local r
    read -r -a r <<<"${result[$1,$2]}"
    printf '%-12s %-26s %9s %9s %9s %9s %14s\n' "$3" "$4" "${r[0]}" "${r[1]}" "${r[2]}" "${r[3]}" "${r[4]}"
}
row preload base "preload" "no call (baseline)"
row preload call "preload" "after first simhash()"
row nopreload base "no preload" "no call"
row nopreload call "no preload" "after first simhash()"
delta() { awk -v b="${result[$1,base]%% *}" -v c="${result[$1,call]%% *}" 'BEGIN { print c - b }'; }
echo "first call adds, private: $(delta preload) kB with preload, $(delta nopreload) kB without"
