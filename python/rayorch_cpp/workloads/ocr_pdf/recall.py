"""Word recall: how many of a reference text's words a converted text holds.

Both texts are normalised before they are split, so that what differs only in typography is
not counted as lost: Unicode compatibility forms are folded (NFKC: the ligature "ﬁ" reads
"fi", full-width "，" reads ","), typographic quotes and dashes become their ASCII forms,
list bullets are dropped, and identifiers are split at underscores. A word is a
whitespace-separated token, lower case, without the punctuation around it; tokens that are
punctuation only (a bullet, a brace) are not words."""

from __future__ import annotations

import re
import unicodedata
from collections import Counter

TYPOGRAPHY = str.maketrans(
    {
        "\u2018": "'",  # left single quotation mark
        "\u2019": "'",  # right single quotation mark, apostrophe
        "\u201a": "'",
        "\u201b": "'",
        "\u2032": "'",  # prime
        "\u00b4": "'",  # acute accent, often an apostrophe
        "`": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u201e": '"',
        "\u201f": '"',
        "\u2033": '"',
        "\u2010": "-",  # hyphen
        "\u2011": "-",
        "\u2012": "-",
        "\u2013": "-",  # en dash
        "\u2014": "-",  # em dash
        "\u2212": "-",  # minus sign
        "\u00ad": "",  # soft hyphen
        "\u2022": " ",  # bullet
        "\u00b7": " ",  # middle dot, read for a bullet
        "\u25cf": " ",  # black circle
        "\u25aa": " ",  # small square
        "\u25e6": " ",  # white bullet
        "\u2219": " ",
        "\u30fb": " ",  # katakana middle dot, read for a bullet
        "_": " ",  # TeX draws an underscore as a rule that text extraction reads as a space
    }
)
SURROUNDING = ".,;:!?()[]{}<>\"'*"
MARKUP = re.compile(r"<!--.*?-->|^#.*$", flags=re.M)


def normalize(text: str) -> str:
    """``text`` with compatibility forms folded (NFKC) and typographic quotes, dashes and
    bullets in their ASCII forms (bullets as spaces)."""
    return unicodedata.normalize("NFKC", text).translate(TYPOGRAPHY)


def words(text: str) -> list[str]:
    """The words of a text (normalised), lower case, without surrounding punctuation."""
    out = []
    for token in normalize(text).split():
        word = token.strip(SURROUNDING).lower()
        if any(c.isalnum() for c in word):
            out.append(word)
    return out


def word_recall(expected: str, found: str) -> tuple[int, int]:
    """(expected words found, expected words): each expected word counts once per occurrence
    in ``found`` (a multiset intersection, so reading order does not matter). Markdown
    headings and comments in ``found`` (the converter's own title and markers) are ignored."""
    want = Counter(words(expected))
    have = Counter(words(MARKUP.sub(" ", found)))
    return sum(min(n, have[w]) for w, n in want.items()), sum(want.values())
