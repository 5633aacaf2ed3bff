"""The edits that make a positive pair: what happens to a text between one
copy and another in the wild.

Every edit is a pure function of the text, the language and a seeded
`random.Random`, so the pairs are the same on every run and machine.

* insert / delete / substitute at 1%, 3%, 5% and 10% of the characters
  (at least one): typos, OCR and transcription noise. Inserted and
  substituted characters are drawn from the group's own character
  frequencies (`pairs.CharSampler`), spaces included for English.
* swap: two sentences trade places.
* footer: a source, copyright or mailing-list line appended.
* punct: punctuation swapped for look-alikes (，for , and back), spaces
  and line breaks changed: a copy re-typeset by another site.
* width: full-width and half-width forms exchanged. Chinese: every
  character that has the other form (zh_news writes digits and Latin
  letters full-width); English: digits and punctuation only, as a text
  that went through a CJK input method.
* traditional (Chinese only): 30% of the characters that have a
  traditional form converted character by character, or the whole text
  converted phrase-aware (100%), with zhconv's tables.
"""

from __future__ import annotations

import random
import re
from functools import lru_cache

import zhconv

RATES = [0.01, 0.03, 0.05, 0.10]


def variants(lang: str) -> list[tuple[str, float | None]]:
    out: list[tuple[str, float | None]] = [
        (kind, r) for kind in ("insert", "delete", "substitute") for r in RATES
    ]
    out += [("swap", None), ("footer", None), ("punct", None), ("width", None)]
    if lang == "zh":
        out += [("traditional", 0.3), ("traditional", 1.0)]
    return out


def rate_label(rate: float | None) -> str:
    return "" if rate is None else f"{round(rate * 100)}%"


def apply(kind: str, rate, text: str, lang: str, rng: random.Random, sampler) -> str | None:
    """The edited text, or None when the edit does not apply to this text
    (one sentence only, nothing to convert ...)."""
    if kind in ("insert", "delete", "substitute"):
        return char_edits(kind, rate, text, rng, sampler)
    if kind == "swap":
        return swap_sentences(text, lang, rng)
    if kind == "footer":
        return text + "\n" + footer(lang, rng)
    if kind == "punct":
        return punctuation(text, lang, rng)
    if kind == "width":
        return width(text, lang)
    if kind == "traditional":
        return traditional(text, rate, rng)
    raise ValueError(kind)


def char_edits(kind: str, rate: float, text: str, rng: random.Random, sampler) -> str:
    chars = list(text)
    n = max(1, round(rate * len(chars)))
    # Right to left, so that earlier positions stay valid.
    for pos in sorted(rng.sample(range(len(chars)), min(n, len(chars))), reverse=True):
        if kind == "delete":
            del chars[pos]
        elif kind == "insert":
            chars.insert(pos, sampler.draw(rng))
        else:
            new = sampler.draw(rng)
            while new == chars[pos]:
                new = sampler.draw(rng)
            chars[pos] = new
    return "".join(chars)


# A sentence: anything up to and including its end marks and closing
# quotes; the white space after it is kept apart so that a swap moves only
# the sentences.
_SENTENCE = {
    "zh": re.compile(r"([^。！？!?]*[。！？!?]+[”’」』\"']*)(\s*)"),
    "en": re.compile(r"([^.!?]*[.!?]+[\"')\]”’]*)(\s*)"),
}


def sentences(text: str, lang: str) -> list[tuple[str, str]]:
    """(sentence, white space after it) pairs that concatenate to `text`."""
    out, end = [], 0
    for m in _SENTENCE[lang].finditer(text):
        if m.end() == m.start():
            continue
        out.append((m.group(1), m.group(2)))
        end = m.end()
    if end < len(text):
        out.append((text[end:], ""))
    return out


def swap_sentences(text: str, lang: str, rng: random.Random) -> str | None:
    sents = sentences(text, lang)
    real = [i for i, (s, _) in enumerate(sents) if sum(c.isalnum() for c in s) >= 3]
    if len(real) < 2:
        return None
    i, j = sorted(rng.sample(real, 2))
    sents[i], sents[j] = (sents[j][0], sents[i][1]), (sents[i][0], sents[j][1])
    return "".join(s + ws for s, ws in sents)


_OUTLETS_ZH = ["新华网", "人民网", "中国新闻网", "央视新闻客户端", "光明日报", "澎湃新闻"]
_EDITORS_ZH = ["王小明", "李华", "张伟", "刘洋", "陈静"]
_OUTLETS_EN = ["Reuters", "Associated Press", "The Daily Ledger", "Example Media Inc.", "NewsWire"]
_MONTHS = "January February March April May June July August September October November December"


def footer(lang: str, rng: random.Random) -> str:
    y, m, d = rng.randint(1998, 2024), rng.randint(1, 12), rng.randint(1, 28)
    if lang == "zh":
        outlet, editor = rng.choice(_OUTLETS_ZH), rng.choice(_EDITORS_ZH)
        return rng.choice(
            [
                f"（来源：{outlet}　{y}年{m}月{d}日）",
                f"本文来源：{outlet}，版权归原作者所有，如有侵权请联系删除。",
                f"【责任编辑：{editor}】",
                f"版权所有©{y} {outlet}。未经书面许可，不得转载、摘编。",
                f"转载请注明出处：http://news.example.com.cn/{y}/{m:02d}{d:02d}/{rng.randint(1000, 9999)}.html",
            ]
        )
    outlet, month = rng.choice(_OUTLETS_EN), _MONTHS.split()[m - 1]
    return rng.choice(
        [
            f"Source: {outlet}, {month} {d}, {y}.",
            f"Copyright (c) {y} {outlet}. All rights reserved.",
            f"This article first appeared at http://www.example.com/{y}/{m:02d}/{rng.randint(1000, 9999)}. Reprinted with permission.",
            f"To unsubscribe from this list, send an email to list-{rng.randint(1, 99)}-unsubscribe@example.org",
            "Sent from my mobile device",
        ]
    )


_PUNCT_ALTS = {
    "zh": {
        "，": [",", "、", "，"],
        "。": [".", "．", "！"],
        "、": [",", "，"],
        "：": [":"],
        "；": [";", "，"],
        "“": ['"', "「"],
        "”": ['"', "」"],
        "（": ["(", "【"],
        "）": [")", "】"],
        "！": ["!"],
        "？": ["?"],
        "《": ["<", "〈"],
        "》": [">", "〉"],
        "—": ["-", "–"],
    },
    "en": {
        ",": [";", " ,"],
        ".": ["!", " .", "..."],
        '"': ["“", "”", "'"],
        "'": ["’"],
        ":": [" -", ";"],
        "-": ["—", " - "],
        "!": [".", "!!"],
        "?": ["?!"],
        ";": [","],
    },
}


def punctuation(text: str, lang: str, rng: random.Random) -> str:
    """Half the punctuation marks replaced by a look-alike, a space added
    after some marks, and a third of the white-space runs replaced by
    another (never removed: in English that would join two words)."""
    alts = _PUNCT_ALTS[lang]
    out = []
    for piece in re.split(r"(\s+)", text):
        if piece and piece.isspace():
            out.append(rng.choice([" ", "  ", "\n", "\n\n", "\t"]) if rng.random() < 0.3 else piece)
            continue
        for c in piece:
            if c in alts and rng.random() < 0.5:
                c = rng.choice(alts[c])
            out.append(c)
            if not c.isalnum() and not c.isspace() and rng.random() < 0.2:
                out.append(" ")
    return "".join(out)


def _to_full(c: str) -> str:
    if c == " ":
        return "\u3000"
    if "!" <= c <= "~":
        return chr(ord(c) + 0xFEE0)
    return c


def _to_half(c: str) -> str:
    if c == "\u3000":
        return " "
    if "\uff01" <= c <= "\uff5e":
        return chr(ord(c) - 0xFEE0)
    return c


def width(text: str, lang: str) -> str:
    if lang == "zh":
        return "".join(_to_half(c) if _to_half(c) != c else _to_full(c) for c in text)
    return "".join(c if c.isalpha() or c.isspace() else _to_full(c) for c in text)


@lru_cache(maxsize=None)
def _hant(c: str) -> str:
    return zhconv.convert(c, "zh-hant")


def traditional(text: str, rate: float, rng: random.Random) -> str | None:
    if rate >= 1.0:
        return zhconv.convert(text, "zh-hant")
    out = [(_hant(c) if rng.random() < rate else c) for c in text]
    return "".join(out)
