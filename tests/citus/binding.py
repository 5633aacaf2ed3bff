"""Distance queries on a Citus distributed table from a driver, psycopg 3,
against an oracle computed here from the local copy of the rows.

Covers how applications send the query: server-side binding (the
extended protocol: unnamed statements, planned with the values), prepared
statements (prepare=True: named, custom plans first, then generic or custom
as plan_cache_mode says), client-side binding (literals); every k 0..11;
k sent as the smallest integer type that holds it (psycopg's choice) and
as a float. Connection from the PG* environment variables (tests/citus.sh).
"""

import sys

import psycopg

TABLES = "citus_test"


def oracle(conn):
    with conn.cursor() as cur:
        cur.execute(f"SELECT id, fp::bigint FROM {TABLES}.docs_local WHERE fp IS NOT NULL")
        rows = [(i, fp & 0xFFFFFFFFFFFFFFFF) for i, fp in cur.fetchall()]
        cur.execute(f"SELECT qid, fp::text, fp::bigint FROM {TABLES}.queries ORDER BY qid")
        queries = [(q, text, fp & 0xFFFFFFFFFFFFFFFF) for q, text, fp in cur.fetchall()]
    want = {}
    for qid, _, qfp in queries:
        dists = [(i, bin(fp ^ qfp).count("1")) for i, fp in rows]
        for k in range(12):
            want[qid, k] = sorted(i for i, d in dists if d <= k)
    return queries, want


def run(conn, cursor_factory, sql, queries, want, prepare=None, k_type=int):
    """Mismatching (query, k) pairs."""
    bad = []
    with cursor_factory(conn) as cur:
        for qid, text, _ in queries:
            for k in range(12):
                cur.execute(sql, (text, k_type(k)), prepare=prepare)
                got = sorted(r[0] for r in cur.fetchall())
                if got != want[qid, k]:
                    bad.append((qid, k, len(got), len(want[qid, k])))
    return bad


def plans(conn):
    """(generic, custom) plan counts of this session's prepared statements."""
    with conn.cursor() as cur:
        cur.execute(
            "SELECT coalesce(sum(generic_plans), 0), coalesce(sum(custom_plans), 0)"
            " FROM pg_prepared_statements WHERE statement LIKE '%docs WHERE fp%'",
            prepare=False,
        )
        return cur.fetchone()


def main():
    failures = 0
    checks = 0
    with psycopg.connect(autocommit=True) as conn:
        queries, want = oracle(conn)
        # Every k for a sample that keeps the run short: planted neighbours
        # at every distance, random queries, the hot bucket.
        queries = [q for q in queries if q[0] in (1, 6, 12, 101, 201, 203)]
        sql = f"SELECT id FROM {TABLES}.docs WHERE fp OPERATOR(public.<~>) %s <= %s"
        for mode in ("auto", "force_custom_plan", "force_generic_plan"):
            conn.execute(f"SET plan_cache_mode = {mode}")
            cases = [
                ("server-side binding", psycopg.Cursor, None, int),
                ("server-side binding, k as float", psycopg.Cursor, None, float),
                ("prepared statement", psycopg.Cursor, True, int),
                ("client-side binding", psycopg.ClientCursor, None, int),
            ]
            for name, factory, prepare, k_type in cases:
                before = plans(conn)
                bad = run(conn, factory, sql, queries, want, prepare=prepare, k_type=k_type)
                after = plans(conn)
                checks += 1
                label = f"{name}, plan_cache_mode = {mode}, k = 0..11"
                if prepare:
                    generic = after[0] - before[0]
                    custom = after[1] - before[1]
                    label += f" ({generic} generic and {custom} custom plans)"
                    # The plans must be the kind the mode asks for: else the
                    # check would not test what it says.
                    if mode == "force_generic_plan" and generic == 0:
                        bad.append(("no generic plan was used",))
                    if mode == "force_custom_plan" and generic != 0:
                        bad.append(("a generic plan was used",))
                if bad:
                    failures += 1
                    print(f"FAILED: {label}: {bad[:5]}")
                else:
                    print(f"ok: {label}")
    if failures:
        sys.exit(f"{failures} of {checks} driver checks failed")
    print(f"ok: {checks} driver checks")


if __name__ == "__main__":
    main()
