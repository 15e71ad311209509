"""Word normalisation rules: text -> normalised words (UTF-8 bytes), fast, or with each word's character span.

A word is a run of non-whitespace characters (Python's `str.split`, the Janitor's `\\S+`), so any run of
whitespace, line breaks included, separates two words alike and a re-wrapped copy has the same words.

- `gpt3` (the default; GPT-3's rule as lm-eval's Janitor applies it, 13-grams): in each word ASCII letters are
  lowercased and ASCII punctuation is deleted; a word holding other characters is then NFKC-folded, lowercased,
  and stripped of every Unicode punctuation or symbol character (and of any space NFKC made). A word left empty
  (`=`, `--`) is no word: n-grams run over the words that remain. On ASCII text this is exactly the Janitor's
  normalisation; on other text it also folds case, compatibility forms and non-ASCII punctuation.
- `datatrove` (datatrove's `simplify_text` and NLTK words, 12-grams): lowercase; every number (with one decimal
  separator) becomes `0`; datatrove's punctuation characters become spaces; diacritics are dropped (NFD, marks
  removed); then NLTK's word splits that can still apply: `‘`, backticks, `;` and the dashes U+2012/U+2015 stand
  alone, and `cannot gimme gonna gotta lemme wanna` split in two.

`escapes=True` first reads escaped text as the text it stands for (JSON's `\\n`, HTML's `&amp;` and tags:
`escapes.decode`). It is made for the gpt3 rule, which deletes the decoder's padding; the index turns it on there
(`IndexSettings.escapes`).

`words(text)` is the fast path (whole-text byte operations, per-word work only for non-ASCII words);
`word_spans(text)` gives the same words with the [start, end) character span of the source word of each.
"""

from __future__ import annotations

import functools
import re
import string
import sys
import unicodedata
from typing import Literal

import numpy as np

from jaxcontam.decontam.escapes import decode

Preset = Literal["gpt3", "datatrove"]
PRESETS: tuple[Preset, ...] = ("gpt3", "datatrove")
DEFAULT_N: dict[Preset, int] = {"gpt3": 13, "datatrove": 12}

_ASCII_PUNCTUATION = string.punctuation.encode("utf-8", "surrogatepass")
_C0_SPACES = bytes(range(0x1C, 0x20))  # str.split() splits at these; bytes.split() does not
_GPT3_BYTES = bytes.maketrans(
    string.ascii_uppercase.encode("utf-8", "surrogatepass") + _C0_SPACES,
    string.ascii_lowercase.encode("utf-8", "surrogatepass") + b"    ",
)
_WORD = re.compile(r"\S+")


@functools.cache
def _unicode_punctuation() -> dict[int, None]:
    """Every punctuation (P*) and symbol (S*) code point -> deleted (a str.translate table)."""
    return {c: None for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c))[0] in "PS"}


def _gpt3_word(word: str) -> str:
    """One word by the gpt3 rule (ASCII part first, then the rest)."""
    return _gpt3_fold(word.translate(_GPT3_STR))


_GPT3_STR = str.maketrans(string.ascii_uppercase, string.ascii_lowercase, string.punctuation)


def _gpt3_fold(piece: str) -> str:
    """The non-ASCII step of the gpt3 rule, on a word whose ASCII step is done."""
    if piece.isascii():
        return piece
    folded = unicodedata.normalize("NFKC", piece).lower().translate(_unicode_punctuation())
    return "".join(folded.split())


def _gpt3_words(text: str) -> list[bytes]:
    chunks = text.encode("utf-8", "surrogatepass").translate(_GPT3_BYTES, _ASCII_PUNCTUATION).split()
    if text.isascii():
        return chunks
    # the ASCII step ran on the bytes; chunks holding other characters (and maybe non-ASCII spaces) get the rest
    other = np.flatnonzero(~np.fromiter(map(bytes.isascii, chunks), bool, len(chunks)))
    out: list[bytes] = []
    start = 0
    for index in other.tolist():
        out.extend(chunks[start:index])
        out.extend(
            f.encode("utf-8", "surrogatepass")
            for f in map(_gpt3_fold, chunks[index].decode("utf-8", "surrogatepass").split())
            if f
        )
        start = index + 1
    out.extend(chunks[start:])
    return out


# datatrove ---------------------------------------------------------------------------------------------------

# The characters datatrove's simplify_text turns into spaces: ASCII punctuation, C0/C1 controls but tab and line
# feed, and these.
_DATATROVE_OTHER = (
    "\xab\xb4\xbb\u2013\u2014\u2019\u201c\u201d\u201e\u2026\u2236\u2501\u25ba\u3001\u3002\u3008\u3009\u300a"
    "\u300b\u300c\u300d\u3010\u3011\uff01\uff05\uff08\uff09\uff0c\uff0e\uff11\uff1a\uff1b\uff1f\uff5e"
)
_DATATROVE_CONTROLS = "".join(chr(c) for c in [*range(0, 9), *range(11, 32), *range(127, 160)])
_DATATROVE_PUNCTUATION = string.punctuation + _DATATROVE_OTHER + _DATATROVE_CONTROLS
_DATATROVE_STR = str.maketrans(_DATATROVE_PUNCTUATION, " " * len(_DATATROVE_PUNCTUATION))
_DATATROVE_BYTES = bytes.maketrans(
    string.ascii_uppercase.encode("utf-8", "surrogatepass")
    + string.punctuation.encode("utf-8", "surrogatepass")
    + bytes([*range(0, 9), *range(11, 32), 127]),
    string.ascii_lowercase.encode("utf-8", "surrogatepass") + b" " * (len(string.punctuation) + 9 + 21 + 1),
)
_NUMBER = re.compile(r"\d+(?:[.,\u060c\u066b\u2396\u2397\u2398]\d+)?")
_NUMBER_BYTES = re.compile(rb"[0-9]+(?:[.,][0-9]+)?")
_NLTK_ALONE = re.compile("(\u2018|`+|[;\u2012\u2015])")
_NLTK_PAIRS = r"\b(can)(not)\b|\b(gim)(me)\b|\b(gon)(na)\b|\b(got)(ta)\b|\b(lem)(me)\b|\b(wan)(na)(?=\s)"
_CONTRACTION = re.compile(_NLTK_PAIRS)
_CONTRACTION_BYTES = re.compile(_NLTK_PAIRS.encode("utf-8", "surrogatepass"))


def _split_pair(match: re.Match) -> str:
    first, second = (g for g in match.groups() if g is not None)
    return f"{first} {second}"


def _split_pair_bytes(match: re.Match) -> bytes:
    first, second = (g for g in match.groups() if g is not None)
    return first + b" " + second


def _strip_marks(word: str) -> str:
    if word.isascii():
        return word
    decomposed = unicodedata.normalize("NFD", word)
    return _NLTK_ALONE.sub(r" \1 ", "".join(c for c in decomposed if unicodedata.category(c) != "Mn"))


def _datatrove_text(text: str) -> str:
    """datatrove's simplify_text then NLTK's splits, on a whole text (or one word)."""
    text = _NUMBER.sub("0", text.lower()).translate(_DATATROVE_STR)
    if not text.isascii():  # NFD and its marks, word by word (whitespace never joins two words' marks)
        text = " ".join(map(_strip_marks, text.split()))
    return _CONTRACTION.sub(_split_pair, text + " ")


def _datatrove_words(text: str) -> list[bytes]:
    if text.isascii():
        data = _NUMBER_BYTES.sub(b"0", text.encode("utf-8", "surrogatepass")).translate(_DATATROVE_BYTES)
        return _CONTRACTION_BYTES.sub(_split_pair_bytes, data + b" ").split()
    return _datatrove_text(text).encode("utf-8", "surrogatepass").split()


def _datatrove_word(word: str) -> list[str]:
    return _datatrove_text(word).split()


# both --------------------------------------------------------------------------------------------------------


def words(text: str, preset: Preset = "gpt3", escapes: bool = False) -> list[bytes]:
    """The normalised words of `text` as UTF-8 bytes; `escapes`: decode its escapes first (`escapes.decode`)."""
    if escapes:
        text = decode(text)
    return _gpt3_words(text) if preset == "gpt3" else _datatrove_words(text)


def word_spans(text: str, preset: Preset = "gpt3", escapes: bool = False) -> tuple[list[bytes], np.ndarray]:
    """The same words as `words`, and int64 [W, 2]: the [start, end) characters of each one's source word."""
    if escapes:
        text = decode(text)  # the same length: every span is the source's
    out: list[bytes] = []
    spans: list[tuple[int, int]] = []
    for match in _WORD.finditer(text):
        raw = match.group()
        if preset == "gpt3":
            normal = _gpt3_word(raw)
            pieces = [normal] if normal else []
        else:
            pieces = _datatrove_word(raw)
        for piece in pieces:
            out.append(piece.encode("utf-8", "surrogatepass"))
            spans.append(match.span())
    return out, np.asarray(spans, np.int64).reshape(-1, 2)


def check_preset(preset: str) -> Preset:
    if preset not in PRESETS:
        raise ValueError(f"normalisation {preset!r}: choose one of {', '.join(PRESETS)}")
    return preset  # type: ignore[return-value]
