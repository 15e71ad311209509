"""Can SmolLM2-135M-Instruct's P(True) tell a right answer from a wrong one? ARC-Easy test items, each judged twice:
with its gold option and with its first wrong option as the proposed answer (Kadavath judge, normalised P(True),
chat template on and off). Prints how often the gold option gets the higher P(True) and the one-sided binomial p.

  python -m experiments.real_model.ptrue_gold_vs_wrong [--items 64]
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import numpy as np

SHARED = Path(os.environ.get("JAXCONTAM_SHARED_DATA", Path(__file__).resolve().parents[3] / "shared" / "data"))
MODEL = SHARED / "smollm2_135m_instruct" / "SmolLM2-135M-Instruct.Q4_1.gguf"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=64)
    args = parser.parse_args()

    from scipy.stats import binomtest

    import jaxcontam
    from jaxcontam.data import load_benchmark
    from jaxcontam.engine.ptrue import p_true

    model = jaxcontam.load_model(MODEL)
    items = load_benchmark("arc_easy", "test", path=SHARED, limit=args.items).items
    questions = [item.question for item in items]
    gold = [item.answer_text for item in items]
    wrong = [next(c for c in item.choices if c != item.answer_text) for item in items]
    for chat in ("auto", "never"):
        right_p = p_true(model, questions, gold, chat=chat).normalised
        wrong_p = p_true(model, questions, wrong, chat=chat).normalised
        wins = int((right_p > wrong_p).sum())
        print(f"chat {chat}: gold option judged more likely true in {wins}/{len(items)} items "
              f"(binomial p = {binomtest(wins, len(items), alternative='greater').pvalue:.2f}); mean P(True) "
              f"gold {np.mean(right_p):.3f}, wrong {np.mean(wrong_p):.3f}")


if __name__ == "__main__":
    main()
