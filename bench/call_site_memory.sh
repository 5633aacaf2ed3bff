#!/usr/bin/env bash
# What the call sites that keep a text's fingerprint hold: one PL/pgSQL
# function with one call site, and one with CALL_SITES, over the same text
# of about MB megabytes, in one run; the growth of the backend's memory
# contexts (pg_backend_memory_contexts) from before the calls to after
# them, inside the function (the call sites keep their copies to the end
# of the transaction). Without a bound, n call sites hold n copies.
#
#   bench/call_site_memory.sh          MB=15 CALL_SITES=20
set -euo pipefail
. "$(dirname "$0")/lib.sh"

MB=${MB:-15}
CALL_SITES=${CALL_SITES:-20}
bench_db
calls() {
    local i
    for i in $(seq "$1"); do printf '    f := simhash(v);\n'; done
}
growth() {
    psql_db <<SQL
CREATE OR REPLACE FUNCTION pg_temp.growth() RETURNS bigint LANGUAGE plpgsql AS \$\$
DECLARE
    v text := repeat('the quick brown fox jumps over the lazy dog ', $MB * 1048576 / 44);
    before bigint;
    f simhash64;
BEGIN
    SELECT sum(total_bytes) INTO before FROM pg_backend_memory_contexts;
$(calls "$1")
    RETURN (SELECT sum(total_bytes) FROM pg_backend_memory_contexts) - before;
END \$\$;
SELECT round(pg_temp.growth() / 1048576.0, 1);
SQL
}
one=$(growth 1)
many=$(growth "$CALL_SITES")
printf '%-36s %10s\n' "a text of $MB MB" "growth MB"
printf '%-36s %10s\n' "1 call site" "$one"
printf '%-36s %10s\n' "$CALL_SITES call sites" "$many"
awk -v a="$many" -v b="$one" -v n="$CALL_SITES" \
    'BEGIN { printf "%s call sites: %.1fx one call site (%s copies would be %.1fx)\n", n, a / b, n, n }'
