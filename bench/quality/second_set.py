"""The second labeled set of the yardstick: the same four groups built from
Debian packages that the shared developer corpora do not use, so that the
quality figures are not read off one set only.

    python3 second_set.py --cache DIR

downloads the packages with `apt-get download` (no root needed) into
DIR/debs, unpacks each with `dpkg-deb -x` into DIR/pkg/<package>, and
writes DIR/data/<lang>-<size>.jsonl.gz (one {"id", "text", "source"} per
line, in corpus order) and DIR/data/<lang>-<size>.hard.jsonl.gz (candidate
hard negatives, {"a", "b", "kind"} by id). `pairs.load_second_groups`
reads them.

| group | package | documents | hard negatives |
|---|---|---|---|
| en short | fortunes, fortunes-min | fortune entries of 60-199 characters that read as prose | consecutive entries of one file |
| en long | linux-doc-6.1 | sections of the kernel's Documentation (.rst, .txt), prose paragraphs only, 200+ characters, at most about 4,000 | consecutive sections of one file; first sections of consecutive files of one directory |
| zh short | fortunes-zh | entries of 10-199 characters (Tang poems, Song poems, proverbs, sayings) | consecutive entries of one file |
| zh long | debian-reference-zh-cn, manpages-zh (zh_CN) | HTML sections (paragraph text) and man page sections (roff stripped), 200+ characters, at least half Han, at most about 4,000 | consecutive sections of one chapter or page; first sections of consecutive pages of one man section |

Everything is read in sorted order; nothing is random here, so the same
packages give the same files.
"""

from __future__ import annotations

import argparse
import gzip
import html.parser
import json
import re
import subprocess
import sys
from pathlib import Path

PACKAGES = {
    "en-short": ["fortunes", "fortunes-min"],
    "en-long": ["linux-doc-6.1"],
    "zh-short": ["fortunes-zh"],
    "zh-long": ["debian-reference-zh-cn", "manpages-zh"],
}
SHORT_LIMIT = 200
EN_SHORT_MIN = 60
ZH_SHORT_MIN = 10
LONG_MAX = 4000

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


def han_share(text: str) -> float:
    chars = [c for c in text if not c.isspace()]
    return sum(bool(_HAN.match(c)) for c in chars) / max(1, len(chars))


def join_lines(lines: list[str]) -> str:
    """Joins wrapped lines of one paragraph: nothing between two CJK
    characters, a space otherwise."""
    out = ""
    for ln in (x.strip() for x in lines):
        if not ln:
            continue
        if out and not (ord(out[-1]) > 0x2E7F and ord(ln[0]) > 0x2E7F):
            out += " "
        out += ln
    return out


def trim(paragraphs: list[str], limit: int = LONG_MAX) -> str:
    """Whole paragraphs up to about `limit` characters; a first paragraph
    longer than that is cut at the last white space or sentence end before
    it."""
    out = ""
    for p in paragraphs:
        cand = f"{out}\n\n{p}" if out else p
        if len(cand) > limit:
            if not out:
                cut = max(p.rfind(" ", 0, limit), p.rfind("。", 0, limit) + 1)
                out = p[: cut if cut > limit // 2 else limit].rstrip()
            break
        out = cand
    return out


# --- downloads ---------------------------------------------------------------


def fetch(cache: Path) -> dict[str, Path]:
    debs = cache / "debs"
    debs.mkdir(parents=True, exist_ok=True)
    roots = {}
    for pkg in sorted({p for ps in PACKAGES.values() for p in ps}):
        have = sorted(debs.glob(f"{pkg}_*.deb"))
        if not have:
            print(f"apt-get download {pkg}", file=sys.stderr)
            subprocess.run(["apt-get", "download", pkg], cwd=debs, check=True)
            have = sorted(debs.glob(f"{pkg}_*.deb"))
        root = cache / "pkg" / pkg
        stamp = root / ".from"
        if not stamp.is_file() or stamp.read_text() != have[-1].name:
            subprocess.run(["rm", "-rf", str(root)], check=True)
            root.mkdir(parents=True)
            subprocess.run(["dpkg-deb", "-x", str(have[-1]), str(root)], check=True)
            stamp.write_text(have[-1].name)
        roots[pkg] = root
    return roots


def read_text(path: Path) -> str:
    data = path.read_bytes()
    if path.suffix == ".gz":
        data = gzip.decompress(data)
    return data.decode("utf-8", errors="replace")


# --- fortunes ----------------------------------------------------------------

_ATTRIBUTION = re.compile(r"^\s*(--|——|－－)")


def fortune_entries(path: Path) -> list[str]:
    """The entries of a fortune file, colour codes and attribution lines
    (`-- Author`) left out, lines stripped, runs of blank lines made one."""
    out = []
    for raw in re.split(r"^%[ \t]*$", _ANSI.sub("", read_text(path)), flags=re.M):
        lines = []
        for ln in raw.replace("\xa0", " ").splitlines():
            if _ATTRIBUTION.match(ln):
                break
            ln = ln.strip()
            if ln or (lines and lines[-1]):
                lines.append(ln)
        out.append("\n".join(lines).strip())
    return out


def fortune_files(root: Path) -> list[Path]:
    d = root / "usr/share/games/fortunes"
    return sorted(
        p for p in d.iterdir() if p.is_file() and not p.is_symlink() and p.suffix not in (".dat", ".u8")
    ) if d.is_dir() else []


_NOT_PROSE = re.compile(r"^\s*>|@|https?:|www\.|[{}<>|=_#*\\/]{2,}|\t|[$%]\s*\w+\s*[=(]", re.M)


def en_prose(p: str, min_words: int = 8) -> bool:
    letters = sum(c.isalpha() or c == " " for c in p)
    upper = sum(c.isupper() for c in p)
    return (
        not _NOT_PROSE.search(p)
        and letters >= 0.8 * len(p)
        and upper <= 0.3 * max(1, letters)
        and len(p.split()) >= min_words
    )


def en_short(roots: dict[str, Path]) -> tuple[list[dict], list[dict]]:
    docs, hard = [], []
    for pkg in PACKAGES["en-short"]:
        for f in fortune_files(roots[pkg]):
            prev = None
            for i, e in enumerate(fortune_entries(f)):
                if EN_SHORT_MIN <= len(e) < SHORT_LIMIT and en_prose(e):
                    d = {"id": f"{f.name}-{i}", "text": e, "source": f"fortunes/{f.name}"}
                    if prev is not None:
                        hard.append({"a": prev["id"], "b": d["id"], "kind": "fortunes: consecutive entries of one file"})
                    docs.append(d)
                    prev = d
                else:
                    prev = None
    return docs, hard


def zh_short(roots: dict[str, Path]) -> tuple[list[dict], list[dict]]:
    docs, hard = [], []
    for f in fortune_files(roots["fortunes-zh"]):
        prev = None
        for i, e in enumerate(fortune_entries(f)):
            # Poem headers (题目:, 作者:) are bylines, not text.
            e = "\n".join(ln for ln in e.splitlines() if not re.match(r"(题目|作者)\s*[:：]", ln)).strip()
            if ZH_SHORT_MIN <= len(e) < SHORT_LIMIT and han_share(e) >= 0.5:
                d = {"id": f"{f.name}-{i}", "text": e, "source": f"fortunes-zh/{f.name}"}
                if prev is not None:
                    hard.append({"a": prev["id"], "b": d["id"], "kind": "fortunes-zh: consecutive entries of one file"})
                docs.append(d)
                prev = d
            else:
                prev = None
    return docs, hard


# --- kernel documentation ----------------------------------------------------

_UNDERLINE = re.compile(r"^([=\-~^*#\"'`:+.])\1{2,}\s*$")


def rst_sections(text: str) -> list[list[str]]:
    """The lines of each section of a reStructuredText (or kernel .txt)
    file, cut at titles (a line underlined, and maybe overlined, with a
    repeated punctuation character)."""
    lines = text.splitlines()
    sections: list[list[str]] = [[]]
    i = 0
    while i < len(lines):
        ln = lines[i]
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if ln.strip() and not _UNDERLINE.match(ln) and _UNDERLINE.match(nxt) and len(nxt.strip()) >= len(ln.strip()) - 2:
            if sections[-1] and _UNDERLINE.match(sections[-1][-1]):
                sections[-1].pop()  # the overline
            sections.append([])
            i += 2
            continue
        sections[-1].append(ln)
        i += 1
    return sections


def rst_prose(lines: list[str]) -> list[str]:
    """Paragraphs of prose: not indented (literal blocks, directives'
    bodies, code), not directives, comments, tables or lists of fields."""
    paras, cur = [], []
    for ln in lines + [""]:
        if ln.strip():
            cur.append(ln)
            continue
        if cur:
            first = cur[0]
            if (
                not first[:1].isspace()
                and not first.lstrip().startswith((".. ", ":", "|", "+-", "=="))
                and not any(ln.startswith(("\t", "    ")) for ln in cur)
            ):
                p = join_lines(cur)
                if en_prose(p.replace("``", "").replace("`", ""), min_words=12):
                    paras.append(p)
            cur = []
    return paras


def en_long(roots: dict[str, Path]) -> tuple[list[dict], list[dict]]:
    base = roots["linux-doc-6.1"] / "usr/share/doc/linux-doc-6.1/Documentation"
    files = sorted(
        p for p in base.rglob("*")
        if p.is_file()
        and re.search(r"\.(rst|txt)(\.gz)?$", p.name)
        and p.relative_to(base).parts[0] not in ("translations", "ABI", "features", "sphinx", "sphinx-static")
    )
    docs, hard = [], []
    prev_first: dict | None = None
    for f in files:
        rel = str(f.relative_to(base)).removesuffix(".gz")
        prev = None
        first = None
        for i, sec in enumerate(rst_sections(read_text(f))):
            text = trim(rst_prose(sec))
            if len(text) < SHORT_LIMIT:
                prev = None
                continue
            d = {"id": f"{rel}#{i}", "text": text, "source": "linux-doc/" + str(Path(rel).parent)}
            if prev is not None:
                hard.append({"a": prev["id"], "b": d["id"], "kind": "linux-doc: consecutive sections of one file"})
            first = first or d
            docs.append(d)
            prev = d
        if first is not None:
            if prev_first is not None and prev_first["source"] == first["source"]:
                hard.append({"a": prev_first["id"], "b": first["id"], "kind": "linux-doc: consecutive files of one directory"})
            prev_first = first
    return docs, hard


# --- Chinese documentation ---------------------------------------------------


class _Sections(html.parser.HTMLParser):
    """Paragraph text (<p>, outside <pre> and tables) of each section of a
    DocBook HTML page, cut at <h1>..<h4>."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.sections: list[list[str]] = [[]]
        self.in_p = 0
        self.skip = 0
        self.buf: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag in ("h1", "h2", "h3", "h4"):
            self.sections.append([])
        elif tag in ("pre", "table", "script", "style"):
            self.skip += 1
        elif tag == "p":
            self.in_p += 1
            self.buf = []

    def handle_endtag(self, tag):
        if tag in ("pre", "table", "script", "style"):
            self.skip = max(0, self.skip - 1)
        elif tag == "p" and self.in_p:
            self.in_p -= 1
            if not self.skip:
                p = join_lines("".join(self.buf).splitlines())
                p = re.sub(r"\s+", " ", p).strip()
                if p:
                    self.sections[-1].append(p)

    def handle_data(self, data):
        if self.in_p and not self.skip:
            self.buf.append(data)


MDOC_INLINE = {
    "Nm", "Fl", "Ar", "Pa", "Xr", "Em", "Sy", "Dq", "Do", "Dc", "Ql", "Li", "Cm", "Va", "Ev", "Op",
    "Oo", "Oc", "Ic", "Fn", "Fa", "Ft", "Nd", "Pq", "Po", "Pc", "Sq", "Aq", "Tn", "Ux", "Bx", "An",
    "Er", "Dv", "Ad", "Ms", "Lk", "Mt", "Qq", "Qo", "Qc", "St", "Ns", "No", "Ev", "Xo", "Xc",
}

_ROFF_ESCAPES = [
    (re.compile(r"\\f(\[[^\]]*\]|\(..|.)"), ""),
    (re.compile(r"\\s[+-]?\d"), ""),
    (re.compile(r"\\\*(\(..|\[[^\]]*\]|.)"), ""),
    (re.compile(r"\\\((em|en|hy)"), "-"),
    (re.compile(r"\\\(bu"), "·"),
    (re.compile(r"\\\((lq|rq|oq|cq|dq)"), '"'),
    (re.compile(r"\\\(..|\\\[[^\]]*\]"), ""),
    (re.compile(r"\\[-e]"), lambda m: "-" if m.group() == "\\-" else "\\"),
    (re.compile(r"\\[&c/,%:]"), ""),
    (re.compile(r"\\[ ~0|^]"), " "),
]


def roff_sections(text: str) -> list[list[str]]:
    """Paragraphs of each section (.SH) of a man page: requests dropped,
    the text arguments of font macros (.B, .I, .BR ...) kept, escapes
    removed, wrapped lines joined."""
    sections: list[list[str]] = [[]]
    cur: list[str] = []
    in_def = False
    nofill = False

    def flush():
        if cur:
            p = join_lines(cur)
            if p:
                sections[-1].append(p)
            cur.clear()

    for ln in text.splitlines():
        if in_def:
            in_def = ln.strip() != ".."
            continue
        if ln.startswith((".", "'")):
            m = re.match(r"[.']\s*(\S+)\s*(.*)", ln)
            req, arg = (m.group(1), m.group(2)) if m else ("", "")
            if req.startswith('\\"') or req == "\\\"":
                continue
            if req in ("de", "de1", "am"):
                in_def = True
            elif req in ("SH", "SS", "Sh", "Ss"):
                flush()
                if req in ("SH", "Sh"):
                    sections.append([])
            elif req in ("nf", "EX"):
                flush()
                nofill = True
            elif req in ("fi", "EE"):
                nofill = False
            elif req in ("B", "I", "SM", "SB", "BR", "BI", "IB", "IR", "RB", "RI") and not nofill:
                words = re.findall(r'"([^"]*)"|(\S+)', arg)
                cur.append(" ".join(a or b for a, b in words))
            elif req in MDOC_INLINE and not nofill:
                # mdoc: .Fl l, .Ar file, .Xr ls 1 ... are words of the text.
                words = [w for w in re.findall(r'"([^"]*)"|(\S+)', arg)]
                words = [a or b for a, b in words]
                words = [w for w in words if w not in MDOC_INLINE and w not in ("Ns", "No")]
                if req == "Fl":
                    words = ["-" + w for w in words] or ["-"]
                cur.append(" ".join(words))
            else:
                flush()  # .PP, .TP, .IP, .br, .sp, .Pp, .It ...: a paragraph break
            continue
        if nofill:
            continue
        if not ln.strip():
            flush()
            continue
        cur.append(ln)
    flush()
    out = []
    for sec in sections:
        paras = []
        for p in sec:
            for rx, rep in _ROFF_ESCAPES:
                p = rx.sub(rep, p)
            p = re.sub(r"\s+", " ", p.replace("\\\\", "\\")).strip()
            if p:
                paras.append(p)
        out.append(paras)
    return out


def zh_long(roots: dict[str, Path]) -> tuple[list[dict], list[dict]]:
    docs, hard = [], []

    def keep(paras: list[str]) -> str:
        paras = [p for p in paras if han_share(p) >= 0.3]
        text = trim(paras)
        return text if len(text) >= SHORT_LIMIT and han_share(text) >= 0.5 else ""

    ref = roots["debian-reference-zh-cn"] / "usr/share/debian-reference"
    for f in sorted(ref.glob("*.zh-cn.html")):
        if f.name.startswith("index"):
            continue  # the table of contents
        p = _Sections()
        p.feed(read_text(f))
        prev = None
        for i, sec in enumerate(p.sections):
            text = keep(sec)
            if not text:
                prev = None
                continue
            d = {"id": f"debian-reference/{f.name}#{i}", "text": text, "source": "debian-reference"}
            if prev is not None:
                hard.append({"a": prev["id"], "b": d["id"], "kind": "debian-reference: consecutive sections"})
            docs.append(d)
            prev = d

    man = roots["manpages-zh"] / "usr/share/man/zh_CN"
    prev_first = None
    for f in sorted(p for p in man.rglob("*.gz") if p.is_file() and not p.is_symlink()):
        rel = str(f.relative_to(man)).removesuffix(".gz")
        text_all = read_text(f)
        if text_all.lstrip().startswith(".so "):
            continue  # a link to another page
        prev = None
        first = None
        for i, sec in enumerate(roff_sections(text_all)):
            text = keep(sec)
            if not text:
                prev = None
                continue
            d = {"id": f"manpages-zh/{rel}#{i}", "text": text, "source": "manpages-zh/" + rel.split("/")[0]}
            if prev is not None:
                hard.append({"a": prev["id"], "b": d["id"], "kind": "manpages-zh: consecutive sections of one page"})
            first = first or d
            docs.append(d)
            prev = d
        if first is not None:
            if prev_first is not None and prev_first["source"] == first["source"]:
                hard.append({"a": prev_first["id"], "b": first["id"], "kind": "manpages-zh: consecutive pages"})
            prev_first = first
    return docs, hard


def write_jsonl_gz(path: Path, rows: list[dict]) -> None:
    # mtime 0: the same rows give the same bytes.
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz:
        for r in rows:
            gz.write((json.dumps(r, ensure_ascii=False) + "\n").encode("utf-8"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache", type=Path, required=True, help="where debs/, pkg/ and data/ go")
    args = ap.parse_args()
    roots = fetch(args.cache)
    data = args.cache / "data"
    data.mkdir(parents=True, exist_ok=True)
    for name, build in (("zh-short", zh_short), ("zh-long", zh_long), ("en-short", en_short), ("en-long", en_long)):
        docs, hard = build(roots)
        write_jsonl_gz(data / f"{name}.jsonl.gz", docs)
        write_jsonl_gz(data / f"{name}.hard.jsonl.gz", hard)
        chars = sum(len(d["text"]) for d in docs)
        print(
            f"{name}: {len(docs)} documents ({chars / 1e6:.2f} M characters), {len(hard)} candidate hard pairs",
            file=sys.stderr,
        )
    (data / "packages.txt").write_text(
        "".join(sorted(f"{p.read_text()}\n" for p in (args.cache / "pkg").glob("*/.from"))), encoding="utf-8"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
