# pyright: standard
"""report.html's building blocks, shared by the page (`report.html`) and each detector's section
(`report.sections`, or a plug-in's own): escaped text, tables, badges and embedded figures. Every piece of text
from the inputs passes through `text` or `escape`."""

from __future__ import annotations

import base64
from collections.abc import Sequence
from html import escape
from pathlib import Path

from jaxcontam.detect.verdict import Outcome, Verdict
from jaxcontam.report.formatting import value

LABELS = {
    "mean_logprob": "mean log-prob",
    "zlib_ratio": "zlib ratio",
    "min_k": "Min-K%",
    "min_k_plus_plus": "Min-K%++",
    "gap_k": "Gap-K%",
    "dc_pdd": "DC-PDD",
    "n": "items",
    "pacost_pvalue": "PaCoST p",
    "mean_longest_match": "mean LONGEST_MATCH score",
}

BADGE_CLASS = {Outcome.CONTAMINATED: "bad", Outcome.NOT_DETECTED: "ok", Outcome.NOT_TESTED: "none"}


def text(x) -> str:
    """Any summary value as escaped text (numbers to 3 significant digits, None/NaN as n/a, inf as ∞)."""
    return escape(value(x))


def label_text(key: str) -> str:
    """A summary key as a column's plain-text name."""
    return LABELS.get(key) or key.replace("_", " ")


def label(key: str) -> str:
    return escape(label_text(key))


def table(head: str, rows: list[str], css_class: str = "") -> str:
    """A table from a ready <thead> and ready <tr> rows."""
    attribute = f' class="{css_class}"' if css_class else ""
    return f"<table{attribute}>\n{head}\n<tbody>\n" + "\n".join(rows) + "\n</tbody>\n</table>"


def head(labels: list[str]) -> str:
    """A one-row <thead> from plain-text labels."""
    return "<thead><tr>" + "".join(f"<th>{escape(name)}</th>" for name in labels) + "</tr></thead>"


def row(cells: list[str], css_class: str = "", labels: Sequence[str] = ()) -> str:
    """A <tr> of ready HTML cells; with `labels` (the column headers) each cell carries its own as `data-label`, so
    a narrow window can stack the row into one block of labelled lines."""
    attribute = f' class="{css_class}"' if css_class else ""
    named = [f' data-label="{escape(name)}"' for name in labels] + [""] * (len(cells) - len(labels))
    return f"<tr{attribute}>" + "".join(f"<td{name}>{cell}</td>" for name, cell in zip(named, cells)) + "</tr>"


def facts(pairs: list[tuple[str, str]]) -> str:
    """A two-column table of (plain-text label, ready HTML value)."""
    rows = "\n".join(f"<tr><th>{escape(name)}</th><td>{cell}</td></tr>" for name, cell in pairs)
    return f'<table class="facts">\n<tbody>\n{rows}\n</tbody>\n</table>'


def badge(contaminated: bool | None, reason: str | None = None) -> str:
    """A three-outcome verdict badge: contaminated, not detected, or "no test: <reason>" (never "not detected")."""
    outcome = Outcome.of(contaminated)
    words = outcome.value if contaminated is not None else f"no test: {reason or 'no reason recorded'}"
    return f'<span class="badge {BADGE_CLASS[outcome]}">{escape(words)}</span>'


def verdict_badge(verdict: Verdict) -> str:
    return badge(verdict.contaminated, verdict.reason)


def figure(path: Path, caption: str) -> str:
    """The PNG at `path` embedded as a data URI, with a plain-text caption."""
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return (
        f'<figure><img src="data:image/png;base64,{data}" alt="{escape(caption)}">'
        f"<figcaption>{escape(caption)}</figcaption></figure>"
    )
