"""Escaped text read as the text it stands for, before the word rule: a copy stored inside a JSON string, an HTML
page or a markdown file still has the item's words.

Without this step an escape glues two words into one that is no item's word: `seeds?\\nThe` (a JSON line break)
becomes `seedsnthe`, `don&#39;t` becomes `don39t`, `<p>The` becomes `pthe`, and every n-gram across it is lost.

Decoded: the string escapes `\\n`, `\\r`, `\\t` (a word break) and `\\uXXXX` (surrogate pairs joined); HTML
character references (`&amp;`, `&eacute;`, `&#39;`, `&#x2019;`; a named one needs its `;`); HTML tags without
attributes or with `name=value` attributes (`<p>`, `</li>`, `<br/>`, `<a href="...">`: a word break). Markdown's
escapes (`\\*`, `\\_`, `\\#`) need nothing: the gpt3 rule deletes the backslash and the mark alike. `\\\\` stays a
backslash, so `\\\\n` is a backslash and an `n`.

The output has the input's length, character for character: a decoded escape is padded with `'` (ASCII
punctuation, which the gpt3 rule deletes, so `caf\\u00e9s` stays one word) and a break is spaces. So a word's
character span in the decoded text is its span in the source, and no offset map is needed. Items pass through the
same step as the corpus, so an item that holds `\\theta` (LaTeX) matches a plain copy of itself.
"""

from __future__ import annotations

import html
import re

PAD = "'"
_ESCAPE = re.compile(
    r"""\\\\"""  # an escaped backslash: kept
    r"""|\\[nrt]"""  # a line break or tab
    r"""|(?:\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2})|\\u[0-9a-fA-F]{4}"""  # \uXXXX, pairs
    r"""|&(?:[A-Za-z][A-Za-z0-9]{1,31};|#[0-9]{1,7};?|#[xX][0-9a-fA-F]{1,6};?)"""  # a character reference
    r"""|</?[A-Za-z][A-Za-z0-9]{0,15}"""  # a tag: its name, then name=value attributes only
    r"""(?:\s+[A-Za-z_:][-A-Za-z0-9_:.]*\s*=\s*(?:"[^"<>]*"|'[^'<>]*'|[^\s"'<>=`]+))*\s*/?>"""
)


def _decoded(match: re.Match[str]) -> str:
    escape = match.group()
    first = escape[0]
    if first == "<" or escape in ("\\n", "\\r", "\\t"):
        return " " * len(escape)
    if escape == "\\\\":
        return escape
    if first == "\\":
        units = [int(escape[i + 2 : i + 6], 16) for i in range(0, len(escape), 6)]
        code = units[0] if len(units) == 1 else 0x10000 + ((units[0] - 0xD800) << 10) + (units[1] - 0xDC00)
        text = chr(code)
    else:
        text = html.unescape(escape)
        if text == escape or len(text) > len(escape):  # not a reference html knows
            return escape
    return text + PAD * (len(escape) - len(text))


def decode(text: str) -> str:
    """`text` with its escapes decoded (see the module docstring); the same length, character for character."""
    if "\\" not in text and "&" not in text and "<" not in text:  # three substring scans: far faster than a regex
        return text
    return _ESCAPE.sub(_decoded, text)
