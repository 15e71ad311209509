"""Answer extraction and normalisation (GSM8K final numbers, MATH boxed answers, alias scoring)."""

from hypothesis import given
from hypothesis import strategies as st

from jaxcontam.data.answers import (
    alias_scorer,
    extract_boxed,
    gsm8k_final_answer,
    normalize_gsm8k_answer,
    normalize_math_answer,
    normalize_number,
)
from jaxcontam.data.item import Item

words = st.text(alphabet=st.sampled_from("abcdefgh xyz?!\n"), max_size=40)


@given(st.integers(-(10**12), 10**12), words)
def test_gsm8k_integer_survives_any_thousands_and_currency_formatting(value, prefix):
    formatted = f"{'-' if value < 0 else ''}${abs(value):,}."
    assert normalize_gsm8k_answer(f"{prefix} the answer is {formatted}") == str(value)
    assert normalize_gsm8k_answer(f"{prefix} 7 apples\n#### {abs(value):,}") == str(abs(value))


@given(st.decimals(min_value=-(10**6), max_value=10**6, places=2, allow_nan=False, allow_infinity=False))
def test_gsm8k_decimal_equals_python_float_reading(value):
    text = f"{value:.2f}"
    assert float(normalize_gsm8k_answer(f"so {text}")) == float(text)


def test_gsm8k_final_line_wins_over_earlier_numbers():
    solution = "She sells 16 - 3 - 4 = <<16-3-4=9>>9 eggs.\nShe makes 9 * 2 = $<<9*2=18>>18.\n#### 18"
    assert gsm8k_final_answer(solution) == "18"
    assert normalize_gsm8k_answer(solution) == "18"
    assert normalize_gsm8k_answer("18.00") == normalize_gsm8k_answer("18") == "18"
    assert normalize_gsm8k_answer("no number here") == "no number here"
    assert normalize_number("1,000.50") == "1000.5" and normalize_number("abc") is None


balanced = st.recursive(
    st.text(alphabet=st.sampled_from("abc123+-=^_\\ "), max_size=8),
    lambda inner: st.builds(lambda a, b: f"{a}{{{b}}}", inner, inner),
    max_leaves=6,
)


@given(balanced, words, words)
def test_boxed_content_with_nested_braces_is_recovered(content, before, after):
    assert extract_boxed(f"{before} $\\boxed{{{content}}}$ {after}") == content


def test_boxed_takes_the_last_box_and_handles_missing_or_open_boxes():
    assert extract_boxed("\\boxed{1} then \\boxed{\\frac{2}{3}}") == "\\frac{2}{3}"
    assert extract_boxed("\\boxed 5$") == "5"
    assert extract_boxed("no box") is None and extract_boxed("\\boxed{open") is None


def test_math_answers_equal_after_latex_cleanup():
    same = ["\\boxed{\\frac{1}{2}}", "\\dfrac12", "1/2", "0.5", "\\tfrac{1}{2}."]
    assert len({normalize_math_answer(s) for s in same}) == 1
    assert normalize_math_answer("\\boxed{90^\\circ}") == normalize_math_answer("90")
    assert normalize_math_answer("x = 3") == "3"
    assert normalize_math_answer("\\left( 3, \\frac{\\pi}{2} \\right)") == "(3,\\frac{\\pi}{2})"
    assert normalize_math_answer("\\$5") == "5" and normalize_math_answer("10\\%") == "10"
    assert normalize_math_answer("2") != normalize_math_answer("3")


def test_alias_scorer_accepts_any_listed_answer_after_normalisation():
    item = Item(id="q", benchmark="nq", question="when?", answer="14 December 1972", meta={"answers": ["Dec 1972"]})
    score = alias_scorer("answers")
    assert score(item, "The 14 december 1972.") == 1.0
    assert score(item, "dec 1972") == 1.0
    assert score(item, "1969") == 0.0
