"""Escaped copies (JSON strings, HTML entities and tags, markdown escapes) have the words of the text they stand for,
checked against the escapers of Python's own json and html modules; the Janitor-parity tests read text as the
Janitor does (tests/test_decontaminate_parity.py, escapes off)."""

from __future__ import annotations

import html
import json
import re
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxcontam.decontam import DecontIndex, IndexSettings, ItemSides, find, word_spans, words
from jaxcontam.decontam.escapes import decode
from jaxcontam.errors import DataError

# text with no escape of its own: letters, digits, punctuation but the three an escape starts with, spaces, non-ASCII
_PLAIN = st.text(
    alphabet=string.ascii_letters
    + string.digits
    + string.punctuation.translate(str.maketrans("", "", "\\&<"))
    + " \n\t\u00a0éÉøß—“”’😀",
    max_size=200,
)
_MARKDOWN_SPECIALS = re.compile(r"([\\`*_{}\[\]()#+\-.!|>])")


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_decode_keeps_every_character_position(text):
    decoded = decode(text)
    assert len(decoded) == len(text)
    assert words(text, escapes=True) == word_spans(text, escapes=True)[0]


@settings(max_examples=200, deadline=None)
@given(_PLAIN)
def test_plain_text_is_read_as_before(text):
    assert decode(text) == text
    assert words(text, escapes=True) == words(text)


@settings(max_examples=200, deadline=None)
@given(_PLAIN, st.booleans())
def test_a_json_string_has_the_words_of_its_text(text, ascii_only):
    escaped = json.dumps(text, ensure_ascii=ascii_only)[1:-1]
    assert words(escaped, escapes=True) == words(text)


@settings(max_examples=200, deadline=None)
@given(_PLAIN, st.booleans())
def test_html_escaped_text_has_the_words_of_its_text(text, quote):
    assert words(html.escape(text, quote=quote), escapes=True) == words(text)
    numeric = "".join(f"&#{ord(c)};" if not c.isspace() and ord(c) > 127 else c for c in text)
    assert words(numeric, escapes=True) == words(text)


@settings(max_examples=200, deadline=None)
@given(st.lists(_PLAIN, min_size=1, max_size=5))
def test_html_paragraphs_and_line_breaks_separate_words(lines):
    page = '<div class="q">' + "".join(f"<p>{html.escape(line)}<br/></p>" for line in lines) + "</div>"
    assert words(page, escapes=True) == words("\n".join(lines))


@settings(max_examples=200, deadline=None)
@given(_PLAIN)
def test_markdown_escaped_text_has_the_words_of_its_text(text):
    assert words(_MARKDOWN_SPECIALS.sub(r"\\\1", text), escapes=True) == words(text)


def test_what_is_not_an_escape_stays():
    for text in ("x<y and z>w", "AT&T; &foo; &notanentity", "a \\\\n b", "<<48/2=24>>24 clips"):
        assert words(text, escapes=True) == words(text)


def _truthfulqa_index(shared_data, **options) -> tuple[DecontIndex, str, str]:
    from jaxcontam.data import load_benchmark

    benchmark = load_benchmark("truthfulqa", path=shared_data)
    from jaxcontam.decontam import benchmark_items

    items = benchmark_items([benchmark])
    item = benchmark.items[0]
    return DecontIndex.build(items, IndexSettings(**options)), item.question, str(item.answer_text)


def test_a_real_item_inside_a_json_row_or_an_html_page_is_found(shared_data):
    index, question, answer = _truthfulqa_index(shared_data)
    assert index.settings.escapes is True  # the default under the gpt3 word rule
    row = "prefix text " + json.dumps({"question": question, "answer": answer, "text": f"{question}\n{answer}"})
    page = f"<html><body><p>{html.escape(question)}</p>\n<p>{html.escape(answer)}</p></body></html>"
    for document in (row, page):
        matches = find(index, document)
        assert [m.item_id for m in matches] == ["truthfulqa/validation/0"]
    kept, *_ = _truthfulqa_index(shared_data, escapes=False)  # as before: `seeds?\nThe` is one word, `seedsnthe`
    assert find(kept, json.dumps({"text": f"{question}\n{answer}"})) == []


def test_escapes_are_for_the_gpt3_word_rule_only():
    with pytest.raises(DataError, match="gpt3 word rule only"):
        IndexSettings(preset="datatrove", escapes=True)
    assert IndexSettings(preset="datatrove").escapes is False
    assert DecontIndex.build([ItemSides("b", "0", "one two three")], IndexSettings()).settings.escapes is True
