# pyright: standard
"""GradNorm (mimir `mimir/attacks/gradnorm.py`; Wang et al. 2024, "Pandora's White-Box", arXiv 2402.17012): per
item, the norm of the gradient of the mean token loss of its solved text with respect to the model's parameters.

A model sits near a minimum of its loss at the texts it trained on, so their gradient is small: lower = seen. As
mimir does, the p-norm (default p = inf, mimir's) is taken of each parameter tensor's gradient and the norms are
averaged over the tensors (`engine.gradients` counts one tensor per layer weight, as torch's `parameters()` lists
them). mimir returns the negated mean into an AUC that reads lower as member, so its score ranks a larger gradient
as more likely seen; jaxcontam reads the norm the way the attack's rationale does (lower = seen) and says so in
docs/methods.md ("GradNorm"). No test: a summary, and with labels an AUC.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Literal

import numpy as np

from jaxcontam.detect.benchmark_results import DetectorSummary
from jaxcontam.detect.item_scores import score_summary
from jaxcontam.errors import JaxcontamError

NormName = Literal["l1", "l2", "linf"]
NORM_ORDER: dict[str, float] = {"l1": 1.0, "l2": 2.0, "linf": math.inf}


@dataclasses.dataclass(frozen=True)
class GradNormSettings:
    """The [gradnorm] table: which entrywise norm of each tensor's gradient (mimir's default: "linf", the largest
    absolute entry) and the dtype the gradient is taken in ("float32": bfloat16 weights upcast inside the step;
    "weights": the weights' own dtype, half the extra memory)."""

    norm: NormName = "linf"  # mimir's default p = inf (gradnorm.py, `kwargs.get("p", np.inf)`)
    dtype: Literal["float32", "weights"] = "float32"  # "weights": the model's own dtype, as mimir takes it

    def __post_init__(self):
        if self.norm not in NORM_ORDER:
            raise JaxcontamError(f"[gradnorm] norm = {self.norm!r}: use one of {', '.join(NORM_ORDER)}")
        if self.dtype not in ("float32", "weights"):
            raise JaxcontamError(f"[gradnorm] dtype = {self.dtype!r}: use 'float32' or 'weights'")


def mean_tensor_norm(norms) -> float:
    """mimir's statistic: the mean over parameter tensors of their gradient's norm."""
    return float(np.mean(np.asarray(norms, np.float64)))


@dataclasses.dataclass(frozen=True)
class GradNormResult:
    """The gradient norm over a benchmark's items (lower = seen; with labels, AUC and one-sided Mann-Whitney p)."""

    gradnorm: DetectorSummary

    def to_dict(self) -> dict:
        return {"gradnorm": self.gradnorm.to_dict()}

    @classmethod
    def from_dict(cls, entry: dict) -> GradNormResult:
        return cls(DetectorSummary.from_dict(entry["gradnorm"]))


def gradnorm_result(rows) -> GradNormResult:
    return GradNormResult(score_summary(rows, "gradnorm", higher_means_seen=False))
