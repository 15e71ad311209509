"""Final-answer extraction and normalisation for the generative math and QA benchmarks.

GSM8K gold solutions end in `#### <number>`; model outputs are scored on their final number
(lm-eval-harness "flexible extract"). MATH solutions put the answer in `\\boxed{...}`; both gold
and predictions are compared after the usual LaTeX clean-up (Hendrycks et al. 2021, appendix).
"""

from __future__ import annotations

import re

from jaxcontam.data.item import normalize_text

_NUMBER = re.compile(r"-?[$]?\s*\d[\d,]*(?:\.\d+)?|-?\.\d+")


def gsm8k_final_answer(solution: str) -> str | None:
    """The text after the last `####` of a GSM8K solution, or None if there is no `####`."""
    if "####" not in solution:
        return None
    return solution.rsplit("####", 1)[1].strip()


def normalize_number(text: str) -> str | None:
    """A number as a canonical string: no `$`/commas/trailing dot, integers without `.0` (`"1,000.00"` -> `"1000"`)."""
    cleaned = text.strip().replace(",", "").replace("$", "").replace(" ", "").rstrip(".")
    try:
        value = float(cleaned)
    except ValueError:
        return None
    if value.is_integer():
        return str(int(value))
    return repr(value)


def normalize_gsm8k_answer(text: str) -> str:
    """The final number of a GSM8K solution or model output, canonicalised.

    Takes the number after `####` when present, else the last number in the text, so gold
    solutions and free-form generations compare equal when their final numbers agree. Text with
    no number normalises to its SQuAD-style normal form (never equal to a number).
    """
    final = gsm8k_final_answer(text)
    candidates = _NUMBER.findall(final if final is not None else text)
    if not candidates and final is not None:
        candidates = _NUMBER.findall(text)
    for candidate in reversed(candidates):
        number = normalize_number(candidate)
        if number is not None:
            return number
    return normalize_text(text)


def extract_boxed(text: str) -> str | None:
    """The content of the last `\\boxed{...}` (or `\\fbox{...}`) with balanced braces, or None."""
    start = max(text.rfind("\\boxed"), text.rfind("\\fbox"))
    if start < 0:
        return None
    rest = text[start:]
    if rest.startswith("\\boxed "):  # "\boxed 5" form, no braces
        return rest[len("\\boxed ") :].split("$")[0].strip()
    open_brace = rest.find("{")
    if open_brace < 0:
        return None
    depth = 0
    for index in range(open_brace, len(rest)):
        if rest[index] == "{":
            depth += 1
        elif rest[index] == "}":
            depth -= 1
            if depth == 0:
                return rest[open_brace + 1 : index]
    return None


_LATEX_REPLACEMENTS = (
    ("\n", ""),
    ("\\!", ""),
    ("\\\\", "\\"),
    ("tfrac", "frac"),
    ("dfrac", "frac"),
    ("\\left", ""),
    ("\\right", ""),
    ("^{\\circ}", ""),
    ("^\\circ", ""),
    ("\\$", ""),
    ("\\%", ""),
    ("%", ""),
    ("$", ""),
)


def _fix_fracs(text: str) -> str:
    """`\\frac12` -> `\\frac{1}{2}`, `\\frac1{2}` -> `\\frac{1}{2}`."""
    parts = text.split("\\frac")
    out = parts[0]
    for part in parts[1:]:
        out += "\\frac"
        if part.startswith("{") or len(part) < 2:
            out += part
            continue
        numerator, rest = part[0], part[1:]
        if rest.startswith("{"):
            out += "{" + numerator + "}" + rest
        else:
            out += "{" + numerator + "}{" + rest[0] + "}" + rest[1:]
    return out


def normalize_math_answer(text: str) -> str:
    """A MATH answer in canonical form: the boxed content if any, LaTeX spacing/units/`\\left` removed.

    Follows the clean-up of the MATH paper's evaluation: drop `\\text{...}` units at the end,
    degrees, dollars and percent signs, spaces; `dfrac`/`tfrac` -> `frac`; `0.5` keeps, `.5` -> `0.5`;
    `x = 3` -> `3` for a short left side; `\\frac12` -> `\\frac{1}{2}`; `a/b` of integers -> `\\frac{a}{b}`.
    """
    boxed = extract_boxed(text)
    answer = boxed if boxed is not None else text
    for old, new in _LATEX_REPLACEMENTS:
        answer = answer.replace(old, new)
    answer = re.sub(r"\\text\{\s*[a-zA-Z ]*\}\s*$", "", answer.strip())
    answer = re.sub(r"\\(?:mbox|text)\{(.*?)\}", r"\1", answer)
    answer = answer.replace(" .", " 0.").replace("{.", "{0.")
    if answer.startswith("."):
        answer = "0" + answer
    if "=" in answer and len(answer.split("=")[0].strip()) <= 2:
        answer = answer.split("=", 1)[1]
    answer = answer.replace(" ", "")
    answer = _fix_fracs(answer)
    if answer == "0.5":
        answer = "\\frac{1}{2}"
    match = re.fullmatch(r"(-?\d+)/(\d+)", answer)
    if match:
        answer = f"\\frac{{{match.group(1)}}}{{{match.group(2)}}}"
    return answer.rstrip(".")


def alias_scorer(meta_key: str):
    """A scorer: 1.0 when the prediction equals the gold answer or any alias in `item.meta[meta_key]`
    after SQuAD-style normalisation (NQ-open answer lists, TruthfulQA correct answers)."""

    def score(item, prediction) -> float:
        golds = {normalize_text(str(item.answer)), *(normalize_text(a) for a in item.meta.get(meta_key, ()))}
        return float(normalize_text(str(prediction)) in golds)

    return score
