"""Could the paper preset's 64-token judge cap have cost verdicts? Read from the stored replies (issue 48, item 6).

The published judge (`jaxcontam.engine.pacost_judge`) replies greedily and its confidence is the largest P(yes) over
the reply steps whose token says yes or no; a pair is dropped when no step does. A reply that ended before the cap
(the model's stop token) is the same under the authors' 1024-token cap, so its confidence cannot change; only a reply
cut at the cap can gain a verdict step, or a larger P(yes), from a longer reply. Per arm with a `paper` audit,
benchmark and side (original, rephrased): the replies, those cut at the cap (re-encoded with the model's tokenizer to
at least `cap - 1` tokens: the decoded text re-encodes within a token of the reply), and those cut without a verdict.

This bounds the effect; it does not replace the run with the 1024-token cap, which alone says what a longer reply holds.

    python -m experiments.real_contamination.judge_cap [--results DIR] [--model GGUF]

Writes judge_cap.json and judge_cap.md to --results.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import tomllib

import numpy as np
import pyarrow.parquet as pq

from experiments.real_contamination.design import BENCHMARKS
from experiments.real_contamination.run import GGUF

HERE = pathlib.Path(__file__).resolve().parent


def cap_of(arm: pathlib.Path) -> int:
    config = tomllib.loads((arm / "audit_paper.toml").read_text())
    return int(config["pacost"]["judge_max_new_tokens"])


def analyse(results: pathlib.Path, model: str) -> list[dict]:
    from jaxcontam.ngram.units import load_units

    tokenizer = load_units(model).tokenizer  # type: ignore[union-attr]
    rows = []
    for arm in sorted(p for p in (results / "arms").iterdir() if (p / "audit_paper" / "items.parquet").exists()):
        cap = cap_of(arm)
        items = pq.read_table(arm / "audit_paper" / "items.parquet").to_pandas()
        for benchmark in BENCHMARKS:
            chosen = items[items.benchmark == benchmark]
            for side in ("original", "rephrased"):
                replies = chosen[f"judge_reply_{side}"].dropna()
                confidence = chosen[f"p_yes_{side}"].loc[replies.index].to_numpy()
                lengths = np.array([len(tokenizer.encode(r, add_special_tokens=False).ids) for r in replies])
                cut = lengths >= cap - 1
                rows.append(
                    {
                        "arm": arm.name,
                        "benchmark": benchmark,
                        "side": side,
                        "cap": cap,
                        "replies": int(len(replies)),
                        "with_verdict": int((confidence > 0).sum()),
                        "cut_at_cap": int(cut.sum()),
                        "cut_without_verdict": int((cut & (confidence == 0)).sum()),
                        "longest_reply_tokens": int(lengths.max()) if len(lengths) else 0,
                    }
                )
    return rows


def markdown(rows: list[dict]) -> str:
    lines = [
        "| arm | benchmark | side | cap | replies | with a verdict | cut at the cap | cut, no verdict |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['arm']} | {r['benchmark']} | {r['side']} | {r['cap']} | {r['replies']} | {r['with_verdict']} | "
            f"{r['cut_at_cap']} | {r['cut_without_verdict']} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description="Could the 64-token judge cap have cost verdicts?")
    parser.add_argument("--results", type=pathlib.Path, default=HERE / "results")
    parser.add_argument("--model", default=str(GGUF), help="the model whose tokenizer counts the reply tokens")
    args = parser.parse_args()
    rows = analyse(args.results, args.model)
    (args.results / "judge_cap.json").write_text(json.dumps(rows, indent=2) + "\n")
    (args.results / "judge_cap.md").write_text(markdown(rows))
    print(markdown(rows))


if __name__ == "__main__":
    main()
