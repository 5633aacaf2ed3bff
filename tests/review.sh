#!/usr/bin/env bash
# simhash_review(): the HTML page of a table's near-duplicate candidates,
# opened in a real browser. A table of the paragraphs in tests/review/ and
# planted near-copies of them (an edited phrase, an exact copy, an added
# sentence, a text with a <script> element in it, a long text, a series of
# copies edited more and more, a Chinese text) and candidates that are not
# near-duplicates (the same Chinese characters in another order), with
# band indexes; then:
#   - the page of the default call, loaded by headless Chromium: its DOM has
#     both histograms, the table per distance, at most per_distance pairs
#     at each distance, and no script element; a screenshot of it is a PNG
#     of the window's size that is not blank;
#   - the page of all pairs (per_distance => 100): the planted edit at its
#     distance, marked (<mark>) in the copy; the <script> text shown as
#     text; the long text cut, saying so;
#   - every bad argument gets its SQLSTATE;
#   - a role with SELECT on the three columns only gets the page, and row-
#     level security hides rows from it; a role without the text column
#     gets 42501; a view with a text key works.
# Needs the throwaway cluster running with the extension installed
# (scripts/test.sh does both). Chromium: Debian's `chromium`, installed
# with apt when missing and running as root; elsewhere the browser checks
# are skipped, saying so (under CI they fail instead).
#
#   SIMHASH_REVIEW_OUT=DIR   keep the pages, the DOMs and the screenshot in
#                            DIR (default: a temporary directory, removed)
set -euo pipefail
. "$(dirname "$0")/../scripts/common.sh"
eval "$("$ROOT/scripts/cluster.sh" env)"
export PGHOST PGPORT PGUSER

DB=simhash_review
fail() { die "review test: $*"; }
q() { psql -X -q -At -v ON_ERROR_STOP=1 -d "$DB" "$@"; }

if [ -n "${SIMHASH_REVIEW_OUT:-}" ]; then
    out=$SIMHASH_REVIEW_OUT
    mkdir -p "$out"
else
    out=$(mktemp -d /tmp/simhash-review.XXXXXX)
    trap 'rm -rf "$out"' EXIT
fi
out=$(cd "$out" && pwd)
# The server's user writes nothing here; the browser (as this user) reads.
chmod 755 "$out"

# ---------------------------------------------------------------------------
# The browser: found, installed, or skipped.
# ---------------------------------------------------------------------------
browser=""
for b in chromium chromium-browser google-chrome; do
    if command -v "$b" >/dev/null; then browser=$b; break; fi
done
if [ -z "$browser" ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    log "installing Debian's chromium for the browser checks"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium >/dev/null \
        || { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium >/dev/null; } \
        || true
    command -v chromium >/dev/null && browser=chromium
fi
if [ -z "$browser" ]; then
    [ -z "${CI:-}" ] || fail "no Chromium to open the page with (apt-get install chromium)"
    log "review test: NO BROWSER (chromium) and cannot install one: the browser checks are SKIPPED"
fi

# ---------------------------------------------------------------------------
# The table: the paragraphs and their planted near-copies.
# ---------------------------------------------------------------------------
psql -X -q -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB"
q -c "CREATE EXTENSION simhash" \
  -c "CREATE TABLE para (n int GENERATED ALWAYS AS IDENTITY, body text)" \
  -c "\\copy para (body) FROM '$ROOT/tests/review/paragraphs.txt' WITH (FORMAT csv, DELIMITER E'\\x01', QUOTE E'\\x02')"
q >/dev/null <<'SQL'
CREATE TABLE docs (id int PRIMARY KEY, body text,
                   fp simhash64 GENERATED ALWAYS AS (simhash(body)) STORED,
                   planted text);
CREATE FUNCTION pick(i int) RETURNS text LANGUAGE sql STABLE
    RETURN (SELECT body FROM para WHERE n = i);
INSERT INTO docs (id, body, planted)
SELECT n, body, NULL FROM para;
INSERT INTO docs (id, body, planted) VALUES
    (9,  replace(pick(1), 'spiral stairs', 'iron ladder'), 'edited phrase of 1'),
    (10, pick(2), 'exact copy of 2'),
    (11, pick(3) || ' Rye flour makes a denser, darker loaf.', 'sentence added to 3'),
    (12, '<script>alert("owned")</script> ' || pick(4), 'script'),
    (13, '<script>alert("owned")</script> ' || replace(pick(4), 'barometers', 'thermometers'), 'script, edited'),
    (14, concat_ws(' ', pick(5), pick(6), pick(8), pick(1), pick(3), pick(2)), 'long'),
    (15, replace(replace(concat_ws(' ', pick(5), pick(6), pick(8), pick(1), pick(3), pick(2)),
                         'Glaciers move', 'Glaciers creep'), 'upkeep of roads', 'repair of roads'), 'long, edited'),
    (26, replace(pick(7), '增长', '提高'), 'edited Chinese'),
    (27, '!!! ??? ... ---', 'no features'),
    (28, NULL, 'no text');
-- Copies of 6 with 1, 2, ... 10 words replaced, ids 16 to 25: distances
-- and similarities spread out.
INSERT INTO docs (id, body, planted)
WITH RECURSIVE r(j, t) AS (
    SELECT 0, pick(6)
    UNION ALL
    SELECT j + 1, replace(t, (ARRAY['committee', 'proposal', 'railway', 'sessions', 'Engineers',
                                    'valley', 'tunnels', 'viaduct', 'economists', 'residents'])[j + 1],
                             (ARRAY['panel', 'plan', 'tramway', 'meetings', 'Surveyors',
                                    'basin', 'cuttings', 'bridge', 'analysts', 'neighbours'])[j + 1])
    FROM r WHERE j < 10)
SELECT 15 + j, t, format('%s words of 6 replaced', j) FROM r WHERE j >= 1;
-- Candidates that are not near-duplicates: a Chinese fingerprint weighs
-- characters, the similarity their trigrams, so the same characters in
-- another order, or every n-th character replaced, stay close by the
-- fingerprint while their texts differ (ids 29 to 34).
INSERT INTO docs (id, body, planted)
SELECT 28 + row_number() OVER (ORDER BY o), t, what
FROM (SELECT 1 AS o, reverse(pick(7)) AS t, 'the characters of 7 reversed' AS what
      UNION ALL
      SELECT 1 + e, (SELECT string_agg(CASE WHEN i % e = 0 THEN '的' ELSE substr(pick(7), i, 1) END, '' ORDER BY i)
                     FROM generate_series(1, char_length(pick(7))) AS i),
             format('every %sth character of 7 replaced', e)
      FROM unnest(ARRAY[4, 6, 8, 12]) AS e
      UNION ALL
      SELECT 20, (SELECT string_agg(c, '，' ORDER BY o DESC) FROM regexp_split_to_table(pick(7), '，') WITH ORDINALITY AS x(c, o)),
             'the clauses of 7 in reverse order') AS v;
SELECT count(*) FROM simhash_add_bands('docs', 'fp');
ANALYZE docs;
SQL
[ "$(q -c "SELECT count(*) FROM docs")" = 34 ] || fail "the table was not made as planned"

# The pairs the page should find, by SQL alone: within verify_k, each once.
read -r n_pairs d_known d_script < <(q -F ' ' -c "
    SELECT (SELECT count(*) FROM docs a JOIN docs b ON a.id < b.id AND a.fp <~> b.fp <= 11
             WHERE a.body IS NOT NULL AND b.body IS NOT NULL),
           (SELECT a.fp <~> b.fp FROM docs a, docs b WHERE a.id = 1 AND b.id = 9),
           (SELECT a.fp <~> b.fp FROM docs a, docs b WHERE a.id = 12 AND b.id = 13)")
[ "$n_pairs" -ge 10 ] || fail "only $n_pairs planted pairs within distance 11"
log "review test: $n_pairs pairs within distance 11; the edited phrase at distance $d_known, the script text at $d_script"

# ---------------------------------------------------------------------------
# The pages.
# ---------------------------------------------------------------------------
q -c "SELECT simhash_review('docs', 'fp', 'body')" >"$out/page.html"
q -c "SELECT simhash_review('docs', 'fp', 'body', per_distance => 100)" >"$out/all.html"
for f in page all; do
    grep -q '^<!DOCTYPE html>' "$out/$f.html" || fail "$f.html is not an HTML page"
    # Self-contained: nothing to fetch, no script of its own or of the data.
    ! grep -qiE '<script|<link|<img|src=|href=|@import|url\(' "$out/$f.html" ||
        fail "$f.html has a script, or fetches something: $(grep -oiE '.{0,40}(<script|<link|<img|src=|href=|@import|url\().{0,40}' "$out/$f.html" | head -3)"
done
grep -qF '&lt;script&gt;alert(&quot;owned&quot;)&lt;/script&gt;' "$out/all.html" ||
    fail "the planted <script> text is not escaped in all.html"
grep -qF 'Smith &amp; Sons&#39; workshop' "$out/all.html" || fail "& and ' are not escaped in all.html"
grep -qF "$n_pairs pairs" "$out/page.html" || fail "the page does not count $n_pairs pairs: $(grep -o 'id="pairs">[^<]*' "$out/page.html")"

# ---------------------------------------------------------------------------
# The browser: DOMs and a screenshot.
# ---------------------------------------------------------------------------
if [ -n "$browser" ]; then
    run_browser() {
        # Its own profile, so that it never meets a running browser of the
        # user's; as root it has no sandbox.
        timeout 90 "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars \
            --user-data-dir="$out/profile" --no-first-run --disable-extensions "$@" 2>>"$out/browser.log"
    }
    run_browser --dump-dom "file://$out/page.html" >"$out/page.dom.html" || fail "$browser could not load page.html (see $out/browser.log)"
    run_browser --dump-dom "file://$out/all.html" >"$out/all.dom.html" || fail "$browser could not load all.html (see $out/browser.log)"
    run_browser --screenshot="$out/shot.png" --window-size=1200,2000 "file://$out/page.html" >/dev/null ||
        fail "$browser could not take a screenshot (see $out/browser.log)"

    python3 - "$out" "$d_known" "$d_script" <<'PY' || fail "the browser's view of the pages is wrong (above)"
import html.parser, struct, sys, zlib

out, d_known, d_script = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
problems = []

class Node:
    def __init__(self, tag, attrs, parent):
        self.tag, self.attrs, self.parent, self.kids = tag, dict(attrs), parent, []
    def text(self):
        return "".join(k if isinstance(k, str) else k.text() for k in self.kids)
    def all(self, tag=None, cls=None):
        for k in self.kids:
            if isinstance(k, Node):
                if (tag is None or k.tag == tag) and (cls is None or cls in k.attrs.get("class", "").split()):
                    yield k
                yield from k.all(tag, cls)

VOID = {"meta", "br", "hr", "img", "input", "link", "line", "rect", "area", "base", "col", "wbr"}
class Tree(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.root = Node("#root", [], None)
        self.cur = self.root
    def handle_starttag(self, tag, attrs):
        n = Node(tag, attrs, self.cur)
        self.cur.kids.append(n)
        if tag not in VOID:
            self.cur = n
    def handle_startendtag(self, tag, attrs):
        self.cur.kids.append(Node(tag, attrs, self.cur))
    def handle_endtag(self, tag):
        n = self.cur
        while n is not None and n.tag != tag:
            n = n.parent
        if n is not None and n.parent is not None:
            self.cur = n.parent
    def handle_data(self, data):
        self.cur.kids.append(data)

def load(name):
    t = Tree()
    with open(f"{out}/{name}", encoding="utf-8") as f:
        t.feed(f.read())
    return t.root

def pairs(root):
    """Each shown pair: (distance, key a, key b, article node)."""
    for art in root.all("article", "pair"):
        sides = list(art.all("div", "side"))
        keys = [s.all("h4").__next__().text().split()[-1] for s in sides]
        d = int(art.all("div", "meta").__next__().all("b").__next__().text())
        yield d, keys[0], keys[1], art

page, full = load("page.dom.html"), load("all.dom.html")

# The default page.
for root, name in ((page, "page"), (full, "all")):
    if list(root.all("script")):
        problems.append(f"{name}: the DOM has a script element")
hist = [s for s in page.all("svg") if s.attrs.get("id") == "hist-distance"]
if not hist:
    problems.append("page: no distance histogram")
else:
    titles = [t.text() for t in hist[0].all("title")]
    if len(titles) != 12 or not titles[0].startswith("distance 0:") or not titles[11].startswith("distance 11:"):
        problems.append(f"page: the distance histogram's bars are {titles}")
    if not any(r.attrs.get("class") == "pass" and r.attrs.get("height") not in ("0", None) for r in hist[0].all("rect")):
        problems.append("page: no bar of pairs at or above the threshold")
if not [s for s in page.all("svg") if s.attrs.get("id") == "hist-similarity"]:
    problems.append("page: no similarity histogram")
rows = list(page.all("table", "stats").__next__().all("tbody").__next__().all("tr"))
if len(rows) != 12:
    problems.append(f"page: the table per distance has {len(rows)} rows, not 12")
shown = {}
for d, a, b, art in pairs(page):
    shown[d] = shown.get(d, 0) + 1
if not shown or max(shown.values()) > 3:
    problems.append(f"page: pairs shown per distance {shown}, want 1 to 3")
if "simhash_is_near_duplicate(a, b)" not in [p for p in page.all("pre") if p.attrs.get("id") == "rule"][0].text():
    problems.append("page: no rule of record")

# The page of all pairs: the planted edit, marked; the script as text; the cut.
found = {(a, b): (d, art) for d, a, b, art in pairs(full)}
if ("1", "9") not in found:
    problems.append(f"all: no pair of ids 1 and 9 (pairs shown: {sorted(found)})")
else:
    d, art = found[("1", "9")]
    if d != d_known:
        problems.append(f"all: the pair 1, 9 is shown at distance {d}, not {d_known}")
    sides = list(art.all("div", "side"))
    # The marks of each side lie within its edit, and hold part of it.
    marks_a = [m.text() for m in sides[0].all("mark")]
    marks_b = [m.text() for m in sides[1].all("mark")]
    if not marks_b or not all(m.strip() in "iron ladder" for m in marks_b) or "iron" not in "".join(marks_b):
        problems.append(f"all: the copy's marks {marks_b} are not the edit 'iron ladder'")
    if not marks_a or not all(m.strip() in "spiral stairs" for m in marks_a) or "piral" not in "".join(marks_a):
        problems.append(f"all: the original's marks {marks_a} are not the edited 'spiral stairs'")
    if not list(art.all("span", "verdict")):
        problems.append("all: the pair 1, 9 has no verdict")
if ("12", "13") not in found:
    problems.append("all: no pair of ids 12 and 13")
else:
    d, art = found[("12", "13")]
    texts = [p.text() for p in art.all("pre", "text")]
    if d != d_script or not all(t.startswith('<script>alert("owned")</script> ') for t in texts):
        problems.append(f"all: the <script> text is not shown as text at distance {d_script}: {[t[:50] for t in texts]}")
if ("14", "15") not in found:
    problems.append("all: no pair of ids 14 and 15")
else:
    art = found[("14", "15")][1]
    if len([c for c in art.all("p", "cut")]) != 2 or any(len(p.text()) > 2000 for p in art.all("pre", "text")):
        problems.append("all: the long texts are not cut at 2,000 characters with a note")
if not [m for m in full.all("mark") if "提高" in m.text()]:
    problems.append("all: the Chinese edit is not marked")

# The screenshot: a PNG of the window's size with something drawn on it.
with open(f"{out}/shot.png", "rb") as f:
    png = f.read()
if png[:8] != b"\x89PNG\r\n\x1a\n":
    problems.append("shot.png is not a PNG")
else:
    pos, idat, ihdr = 8, b"", None
    while pos < len(png):
        n, kind = struct.unpack(">I4s", png[pos:pos + 8])
        body = png[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    w, h, depth, color, _, _, interlace = ihdr
    if (w, h) != (1200, 2000):
        problems.append(f"shot.png is {w}x{h}, not 1200x2000")
    if depth != 8 or color not in (2, 6) or interlace:
        problems.append(f"shot.png: unexpected PNG format (depth {depth}, color type {color})")
    else:
        bpp = 3 if color == 2 else 4
        raw, stride, prev, rows_px = zlib.decompress(idat), w * bpp, bytearray(w * bpp), []
        for y in range(h):
            ft, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
            if ft == 2:
                line = bytearray((x + u) & 255 for x, u in zip(line, prev))
            for i in range(stride if ft in (1, 3, 4) else 0):
                a = line[i - bpp] if i >= bpp else 0
                b, c = prev[i], (prev[i - bpp] if i >= bpp else 0)
                if ft == 1: line[i] = (line[i] + a) & 255
                elif ft == 2: line[i] = (line[i] + b) & 255
                elif ft == 3: line[i] = (line[i] + (a + b) // 2) & 255
                elif ft == 4:
                    p = a + b - c
                    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                    line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
            rows_px.append(bytes(line))
            prev = line
        # Every fourth pixel of every fourth row.
        px = [r[x * bpp:x * bpp + 3] for r in rows_px[::4] for x in range(0, w, 4)]
        background = max(set(px), key=px.count)
        ink = sum(1 for p in px if p != background) / len(px)
        colours = len(set(px))
        greens = sum(1 for p in px if p[1] > 100 and p[0] < 80 and p[2] < 80)
        print(f"shot.png: {w}x{h}, {len(png)} bytes, {colours} colours, {ink:.1%} of pixels not background, {greens} green samples")
        if ink < 0.05 or colours < 30:
            problems.append(f"shot.png looks blank: {ink:.1%} drawn, {colours} colours")
        if greens < 50:
            problems.append("shot.png: no green bars of the histogram in sight")
for p in problems:
    print("FAIL:", p)
sys.exit(1 if problems else 0)
PY
    log "review test: the browser shows both histograms, the planted edit marked at distance $d_known, the <script> text as text; the screenshot is not blank"
fi

# ---------------------------------------------------------------------------
# Bad arguments, each with its SQLSTATE.
# ---------------------------------------------------------------------------
q -c "CREATE TABLE bad_types (id int, fp bigint, body varchar, good_fp simhash64)"
expect_state() {
    local want=$1 call=$2 got
    got=$(psql -X -q -At -v VERBOSITY=sqlstate -d "$DB" -c "SELECT simhash_review($call)" 2>&1 >/dev/null || true)
    [ "$got" = "ERROR:  $want" ] || fail "simhash_review($call): want SQLSTATE $want, got: ${got:-no error}"
}
expect_state 42P01 "'no_such_table', 'fp', 'body'"
expect_state 42P01 "999999::oid::regclass, 'fp', 'body'"
expect_state 42809 "'docs_pkey', 'fp', 'body'"
expect_state 42703 "'docs', 'no_fp', 'body'"
expect_state 42703 "'docs', 'fp', 'no_body'"
expect_state 42703 "'docs', 'fp', 'body', key_col => 'no_id'"
expect_state 42804 "'bad_types', 'fp', 'body'"
expect_state 42804 "'bad_types', 'good_fp', 'body'"
expect_state 42804 "'docs', 'body', 'body'"
expect_state 42804 "'docs', 'fp', 'id'"
expect_state 22023 "'docs', 'fp', 'body', k => 12"
expect_state 22023 "'docs', 'fp', 'body', k => -1"
expect_state 22023 "'docs', 'fp', 'body', sample => 0"
expect_state 22023 "'docs', 'fp', 'body', per_distance => 0"
expect_state 22004 "NULL, 'fp', 'body'"
expect_state 22004 "'docs', NULL, 'body'"
expect_state 22004 "'docs', 'fp', NULL"
expect_state 22004 "'docs', 'fp', 'body', key_col => NULL"
expect_state 22004 "'docs', 'fp', 'body', sample => NULL"
# k => NULL is simhash.verify_k; k => 0 shows distance 0 alone.
# The page is read whole before it is searched: grep -q would stop reading
# at the first match, psql would die of SIGPIPE, and pipefail would fail
# the check on a page that passes it.
page=$(q -c "SET simhash.verify_k = 5" -c "SELECT simhash_review('docs', 'fp', 'body', k => NULL)")
grep -qF 'simhash.verify_k = 5,' <<<"$page" ||
    fail "k => NULL does not follow simhash.verify_k"
[ "$(q -c "SELECT simhash_review('docs', 'fp', 'body', k => 0)" | grep -o '<title>distance [0-9]*:' | sort -u | tr '\n' ' ')" = '<title>distance 0: ' ] ||
    fail "k => 0 shows distances other than 0"
page=$(q -c "SELECT simhash_review('docs', 'fp', 'body', sample => 1)")
grep -qF 'the first 1 rows' <<<"$page" ||
    fail "sample => 1 does not take one row"
log "review test: bad arguments get 42P01, 42809, 42703, 42804, 22023 and 22004"

# ---------------------------------------------------------------------------
# Privileges, row-level security, a view.
# ---------------------------------------------------------------------------
q >/dev/null <<'SQL'
SET client_min_messages = warning;
DROP ROLE IF EXISTS simhash_review_reader;
DROP ROLE IF EXISTS simhash_review_peeker;
CREATE ROLE simhash_review_reader;
CREATE ROLE simhash_review_peeker;
GRANT SELECT (id, fp, body) ON docs TO simhash_review_reader;
GRANT SELECT (id, fp) ON docs TO simhash_review_peeker;
ALTER TABLE docs ENABLE ROW LEVEL SECURITY;
CREATE POLICY hide_copy ON docs TO simhash_review_reader USING (id <> 10);
CREATE POLICY all_rows ON docs TO simhash_review_peeker USING (true);
CREATE VIEW docs_view AS SELECT 'doc-' || id AS ref, fp, body FROM docs;
SQL
reader=$(q -c "SET ROLE simhash_review_reader" -c "SELECT simhash_review('docs', 'fp', 'body', per_distance => 100)") ||
    fail "a role with SELECT on id, fp and body cannot review docs"
grep -qF '<code>public.docs</code>: 33 rows' <<<"$reader" ||
    fail "row-level security does not hide row 10 from the reader: $(grep -o '<dd><code>public.docs</code>[^<]*' <<<"$reader")"
grep -qE '<h4>id 10<' <<<"$reader" && fail "the reader sees row 10, which its policy hides"
grep -qE '<h4>id 9<' <<<"$reader" || fail "the reader does not see the pair of rows 1 and 9"
got=$(psql -X -q -At -v VERBOSITY=sqlstate -d "$DB" -c "SET ROLE simhash_review_peeker" \
          -c "SELECT simhash_review('docs', 'fp', 'body')" 2>&1 >/dev/null || true)
[ "$got" = "ERROR:  42501" ] || fail "a role without SELECT on body: want 42501, got: ${got:-no error}"
view=$(q -c "SELECT simhash_review('docs_view', 'fp', 'body', 'ref', per_distance => 100)") ||
    fail "cannot review a view"
grep -qF "$n_pairs pairs" <<<"$view" || fail "the view's page does not count $n_pairs pairs"
grep -qF '<h4>ref doc-9<' <<<"$view" || fail "the view's page does not name its rows by ref"
log "review test: column privileges and row-level security apply; a role without the text column gets 42501; a view works"

# The second source: a table with simhash_add_lsh and a copy of a
# paragraph with one letter in fifteen replaced, past distance 11 of its
# original but sharing candidate keys: the page shows it as a pair found
# by shared keys (a row of its own in the table by distance, a sample
# heading that says so, the rule in SQL with both sources); the same
# table without the keys has no such pair.
q >/dev/null <<'SQL'
CREATE TABLE keyed (id int PRIMARY KEY, body text, fp simhash64 GENERATED ALWAYS AS (simhash(body)) STORED);
INSERT INTO keyed (id, body) VALUES (1, 'The committee met on Tuesday to review the proposal for a new library in the north of the city. Members heard from residents who asked for longer opening hours, a reading room for children and a small cafe near the entrance. The architect showed drawings of a two storey building with large windows facing the park, and the treasurer said the cost would be shared by the council and a private foundation. A final vote is expected next month after a public consultation.');
INSERT INTO keyed (id, body) VALUES (2, 'The committee met on Tursday uo revbrw the ersposal fer d nsw library in the north of the city. Mdmbers heard from residents who asked bor longer openirg hours, a reading room for children and a small cafs near the entrance. The arcsitect showed drahings of a two snorjy buijding with large windows facing the park, and hhe treasurer saib the cost sould be shared by tme council and a private foundation. A finau vote is expected next month after a public consultation.');
SELECT count(*) FROM simhash_add_bands('keyed', 'fp', '4x16');
SQL
d_keyed=$(q -c "SELECT a.fp <~> b.fp FROM keyed a, keyed b WHERE a.id = 1 AND b.id = 2")
[ "$d_keyed" -gt 11 ] || fail "the planted copy is within 11 ($d_keyed): it does not test the second source"
plain=$(q -c "SELECT simhash_review('keyed', 'fp', 'body')")
grep -qF 'id="by-keys"' <<<"$plain" && fail "a table without candidate keys shows pairs found by keys"
q -c "SELECT simhash_add_lsh('keyed', 'body')" >/dev/null
keyed=$(q -c "SELECT simhash_review('keyed', 'fp', 'body')")
grep -qE "<tr class=\"keys\" id=\"by-keys\"><td>past 11, shared keys</td><td>1</td><td>1</td>" <<<"$keyed" ||
    fail "the page does not count the pair found by shared keys: $(grep -o '<tr class="keys".*</tr>' <<<"$keyed")"
grep -qF "Distance $d_keyed: found by shared candidate keys</h3>" <<<"$keyed" || fail "the pair's heading does not say it was found by shared keys"
grep -qF 'body_lsh &amp;&amp;&amp; simhash_lsh($1)' <<<"$keyed" || fail "the rule in SQL does not show the second source"
grep -qF '<h4>id 2<' <<<"$keyed" || fail "the copy is not shown"
log "review test: the second source's pair (distance $d_keyed) shown apart, found by shared keys"

psql -X -q -d postgres -c "DROP DATABASE $DB" -c "DROP ROLE simhash_review_reader" -c "DROP ROLE simhash_review_peeker"
if [ -n "${SIMHASH_REVIEW_OUT:-}" ]; then
    log "review test: the pages and the screenshot are in $out"
fi
