#!/usr/bin/env python3
"""Lint of the manual (make test runs it next to cargo fmt).

Fails, naming file and line, when:
  - README.md has more than 8,000 words (as `wc -w` counts them);
  - README.md holds a commit hash: a token of 7 to 40 hex digits that git
    resolves to a commit of this repository (anywhere, code included), or
    any token of 7 to 40 hex digits mixing digits and letters outside code
    (fenced blocks and `inline code`; fingerprints such as
    5262f42d0016ec56 belong in code);
  - README.md, CHANGELOG.md, ARCHITECTURE.md or docs/*.md has a relative
    link, ](path) or ](path#anchor), to a file that does not exist, or a
    link to a heading (#anchor) of a Markdown file that has no such heading;
  - README.md's Reference does not name a function of sql/simhash.sql or
    sql/review.sql (other than the internal `_simhash_` ones) or a setting
    `simhash.*` that src/ defines.
Python 3 standard library only. Usage: scripts/lint_docs.py [ROOT]
"""
import os
import re
import subprocess
import sys
import unicodedata

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1
                       else os.path.join(os.path.dirname(__file__), ".."))
MAX_WORDS = 8000
HEX = re.compile(r"(?<![0-9A-Za-z_])[0-9a-fA-F]{7,40}(?![0-9A-Za-z_])")
LINK = re.compile(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
errors = []


def fail(path, line, msg):
    errors.append(f"{os.path.relpath(path, ROOT)}:{line}: {msg}")


def lines_outside_fences(text):
    """(line number, line, in_fence) for every line."""
    fence = None
    for i, line in enumerate(text.split("\n"), 1):
        m = re.match(r"^\s*(`{3,}|~{3,})", line)
        if m:
            mark = m.group(1)
            if fence is None:
                fence = mark
                yield i, line, True
                continue
            if mark[0] == fence[0] and len(mark) >= len(fence):
                fence = None
                yield i, line, True
                continue
        yield i, line, fence is not None


def strip_inline_code(line):
    return re.sub(r"(`+)(.+?)\1", " ", line)


def slug(heading):
    """GitHub's anchor of a heading."""
    s = heading.strip().lower()
    s = re.sub(r"`", "", s)
    s = "".join(c for c in s if c in " -_" or unicodedata.category(c)[0] in "LN")
    return s.replace(" ", "-")


_anchors = {}


def anchors(path):
    if path not in _anchors:
        seen, result = {}, set()
        with open(path, encoding="utf-8") as f:
            for _, line, in_fence in lines_outside_fences(f.read()):
                m = None if in_fence else re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
                if m:
                    base = slug(m.group(1))
                    k = seen.get(base, 0)
                    result.add(base if k == 0 else f"{base}-{k}")
                    seen[base] = k + 1
                for a in re.findall(r"<a\s+(?:name|id)=\"([^\"]+)\"", line):
                    result.add(a)
        _anchors[path] = result
    return _anchors[path]


def check_links(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    for n, line, in_fence in lines_outside_fences(text):
        if in_fence:
            continue
        for target in LINK.findall(strip_inline_code(line)):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):
                continue  # http:, https:, mailto: ...
            file_part, _, anchor = target.partition("#")
            dest = path if file_part == "" else os.path.normpath(
                os.path.join(os.path.dirname(path), file_part))
            if not os.path.exists(dest):
                fail(path, n, f"link to a missing file: {target}")
                continue
            if anchor and dest.endswith(".md") and anchor not in anchors(dest):
                fail(path, n, f"link to a missing heading: {target}")


def check_readme(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    words = len(text.split())
    if words > MAX_WORDS:
        fail(path, 1, f"{words} words, more than {MAX_WORDS}: move detail to docs/")
    candidates = {}
    for n, line, in_fence in lines_outside_fences(text):
        for tok in HEX.findall(line):
            candidates.setdefault(tok, n)
        if not in_fence:
            for tok in HEX.findall(strip_inline_code(line)):
                if re.search(r"[0-9]", tok) and re.search(r"[a-fA-F]", tok):
                    fail(path, n, f"a hex token outside code, a commit hash? {tok}")
    if candidates and os.path.exists(os.path.join(ROOT, ".git")):
        toks = list(candidates)
        try:
            out = subprocess.run(
                ["git", "-C", ROOT, "cat-file", "--batch-check"],
                input="".join(f"{t}^{{commit}}\n" for t in toks),
                capture_output=True, text=True, check=True).stdout.split("\n")
        except (OSError, subprocess.CalledProcessError) as e:
            fail(path, 1, f"git cat-file failed: {e}")
            return
        for tok, res in zip(toks, out):
            if res.split()[1:2] == ["commit"]:
                fail(path, candidates[tok], f"a commit hash: {tok}")


def check_reference(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"^## Reference\n(.*?)(?=^## )", text, re.S | re.M)
    if not m:
        fail(path, 1, "no section ## Reference")
        return
    ref = m.group(1)
    names = set()
    for sql in ("sql/simhash.sql", "sql/review.sql"):
        with open(os.path.join(ROOT, sql), encoding="utf-8") as f:
            names |= set(re.findall(r"CREATE\s+(?:OR\s+REPLACE\s+)?FUNCTION\s+"
                                    r"(?:@extschema@\.)?\"?([A-Za-z_][A-Za-z0-9_]*)",
                                    f.read(), re.I))
    settings = set()
    for dirpath, _, files in os.walk(os.path.join(ROOT, "src")):
        for name in files:
            if name.endswith(".rs"):
                with open(os.path.join(dirpath, name), encoding="utf-8") as f:
                    settings |= set(re.findall(r'"(simhash\.[a-z_]+)"', f.read()))

    def named(name):
        if re.search(r"(?<![A-Za-z0-9_.])" + re.escape(name) + r"(?![A-Za-z0-9_])", ref):
            return True
        # simhash64_eq and the like may be written `_eq` after simhash64_in.
        short = re.sub(r"^simhash64", "", name)
        return short != name and re.search(r"`" + re.escape(short) + r"`", ref)

    for name in sorted(names):
        if name.startswith("_"):
            continue
        if not named(name):
            fail(path, 1, f"the Reference does not name the function {name}")
    for name in sorted(settings):
        if not named(name):
            fail(path, 1, f"the Reference does not name the setting {name}")


readme = os.path.join(ROOT, "README.md")
check_readme(readme)
check_reference(readme)
paths = [readme] + [os.path.join(ROOT, p) for p in ("CHANGELOG.md", "ARCHITECTURE.md")]
docs = os.path.join(ROOT, "docs")
paths += sorted(os.path.join(docs, p) for p in os.listdir(docs) if p.endswith(".md"))
for p in paths:
    if os.path.exists(p):
        check_links(p)
for e in errors:
    print(e, file=sys.stderr)
if errors:
    sys.exit(1)
print(f"docs lint: README.md {len(open(readme, encoding='utf-8').read().split())} words; "
      f"links of {len(paths)} files checked")
