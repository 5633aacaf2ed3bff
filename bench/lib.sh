# Shared set-up of the benchmark scripts; sourced, not run.
# shellcheck shell=bash
. "$(dirname "${BASH_SOURCE[0]}")/../scripts/common.sh"

BENCH_DB=simhash_bench

# Starts the throwaway cluster (SIMHASH_PGPORT / SIMHASH_PGDATA pick
# another), exports the connection, and makes the benchmarks' database with
# the extension as currently installed (the database is the benchmarks'
# own, so the extension is made anew and its SQL is never stale).
bench_db() {
    log "starting the throwaway cluster"
    "$ROOT/scripts/cluster.sh" start
    eval "$("$ROOT/scripts/cluster.sh" env)"
    export PGHOST PGPORT PGUSER
    if [ -z "$(psql -X -At -d postgres -c "SELECT 1 FROM pg_database WHERE datname = '$BENCH_DB'")" ]; then
        psql -X -q -d postgres -c "CREATE DATABASE $BENCH_DB"
    fi
    psql_db -c "SET client_min_messages = warning" \
        -c "DROP EXTENSION IF EXISTS simhash CASCADE" -c "CREATE EXTENSION simhash"
}

psql_db() { psql -X -q -At -v ON_ERROR_STOP=1 -d "$BENCH_DB" "$@"; }

# The texts of a corpus (JSON lines {"id","text"}, gzip'd or not) as a
# COPY text file of one column, on standard output.
copy_text_of() {
    zcat -f -- "$1" | python3 -c '
import json, sys
for line in sys.stdin:
    t = json.loads(line)["text"].replace("\x00", "")
    sys.stdout.write(t.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t") + "\n")
'
}

# The widest vector instructions this processor has, for the log of a run.
instruction_set() {
    if grep -qw avx512f /proc/cpuinfo; then echo AVX-512
    elif grep -qw avx2 /proc/cpuinfo; then echo "AVX2, no AVX-512"
    else echo "no AVX2"; fi
}

# A fresh Citus cluster of scripts/citus.sh for a benchmark (a coordinator
# and two workers, in CITUS_BENCH_DIR, default /tmp/simhash-citus-bench-pgNN,
# ports from CITUS_BENCH_PORT, default 55450), with the extension made
# anew; exports PGHOST, PGPORT, PGUSER, PGDATABASE and sets BENCH_DB.
# `citus_sh destroy` removes it (the caller's EXIT trap).
CITUS_BENCH_DIR=${CITUS_BENCH_DIR:-/tmp/simhash-citus-bench-pg$PG_MAJOR}
CITUS_BENCH_PORT=${CITUS_BENCH_PORT:-55450}
citus_sh() {
    SIMHASH_CITUS_DIR=$CITUS_BENCH_DIR SIMHASH_CITUS_PORT=$CITUS_BENCH_PORT "$ROOT/scripts/citus.sh" "$@"
}
citus_bench_db() {
    [ "$CITUS_BENCH_DIR" != "/tmp/simhash-citus-pg$PG_MAJOR" ] \
        || die "CITUS_BENCH_DIR is the test cluster's directory; pick another"
    citus_sh destroy
    citus_sh start
    eval "$(citus_sh env)"
    export PGHOST PGPORT PGUSER PGDATABASE
    BENCH_DB=$PGDATABASE
    psql_db -c "SET client_min_messages = warning" \
        -c "DROP EXTENSION IF EXISTS simhash CASCADE" -c "CREATE EXTENSION simhash"
}

# The sentences of a corpus (JSON lines {"id","text"}, gzip'd or not) of
# 40 to 400 characters, one a line, white space folded and backslashes
# doubled for COPY: what bench/lsh_sql.sh and bench/lsh_load.sh build
# their rows from.
corpus_sentences() {
    zcat -f -- "$1" | python3 -c '
import json, re, sys
for line in sys.stdin:
    for s in re.split(r"(?<=[.!?])\s+", json.loads(line)["text"].replace("\x00", "")):
        s = " ".join(s.split())
        if 40 <= len(s) <= 400:
            sys.stdout.write(s.replace("\\", "\\\\") + "\n")
'
}
