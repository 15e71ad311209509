"""The real-contamination experiment's design, fixed before its runs and read by every script of this folder: the
benchmarks, the arms (what each trained on, and the order the tables show them in), the crossover doses, the
per-item detectors and the PaCoST confidences analysed, the presets and the level.

The confidences are named as the library registers them (`jaxcontam.detect.pacost.confidences.CONFIDENCES`): each
is looked up there, so a confidence the library renames or drops fails here, by name. The tuples themselves stay
fixed (the tests and families of `crossover.py` and `decision_rule.py` were fixed before any twin or round-four
run), so a confidence registered later joins no analysis by itself.
"""

from __future__ import annotations

from jaxcontam.detect.pacost.confidences import CONFIDENCES as REGISTERED_CONFIDENCES
from jaxcontam.stats.multiple import DEFAULT_ALPHA

ALPHA = DEFAULT_ALPHA  # the level of every per-half and per-item test (the audit's default)
BENCHMARKS = ("gsm8k", "copa", "mmlu")
PRESETS = ("jaxcontam", "paper")
FRESH = "audit_fresh"  # design (b)'s audit: PaCoST on items after the audited ones, in each arm's model (`--fresh`)

# arm -> (the form its contaminated half was trained in, copies); run.py trains them
ARMS = {
    "control": ("verbatim", 0),
    "verbatim_x1": ("verbatim", 1),
    "verbatim_x4": ("verbatim", 4),
    "fields_x4": ("fields", 4),
    "rephrased_x4": ("rephrased", 4),
    "verbatim_x1_swapped": ("verbatim", 1),
    "verbatim_x4_swapped": ("verbatim", 4),
    "format_x4": ("verbatim", 0),
}
FORMAT_ARM = "format_x4"  # the format control: other items of the same benchmarks, none audited
SWAPPED = {"verbatim_x1_swapped", "verbatim_x4_swapped"}  # the crossover twins: the other half contaminated
# issue 48's data-order replicates: the same draw, another data order (`--data-seed`)
REPLICATED, REPLICATE_SEEDS = ("control", "verbatim_x1", "verbatim_x1_swapped"), (1, 2)
DATA_SEEDS = {f"{arm}_seed{seed}": seed for arm in REPLICATED for seed in REPLICATE_SEEDS}
ARMS |= {name: ARMS[name.rsplit("_seed", 1)[0]] for name in DATA_SEEDS}
SWAPPED |= {name for name in DATA_SEEDS if name.startswith("verbatim_x1_swapped")}
SIBLING_ARM = "diverged_sibling"  # a reference an auditor can have: the base fine-tuned on other text only
ARMS[SIBLING_ARM] = ("verbatim", 0)
# the order of the analyses' tables (control first, then the doses, their twins, the forms, the format control)
ARM_ORDER = (
    "control",
    "verbatim_x1",
    "verbatim_x4",
    "verbatim_x1_swapped",
    "verbatim_x4_swapped",
    "fields_x4",
    "rephrased_x4",
    FORMAT_ARM,
)
# the crossover: each dose's arm and its twin, trained on the complementary half
DOSES = {"x1": ("verbatim_x1", "verbatim_x1_swapped"), "x4": ("verbatim_x4", "verbatim_x4_swapped")}

# per-item score -> does a higher score mean seen? (PaCoST gaps: original minus rephrased confidence)
LIKELIHOOD = {"mean_logprob": True, "zlib_ratio": False, "min_k": True, "min_k_plus_plus": True}
AUC_DETECTORS = {**LIKELIHOOD, "longest_match": True}
PAIRED_DETECTORS = {**AUC_DETECTORS, "pacost_gap_p_true": True, "pacost_gap_answer_logprob": True}
GAPS = {"pacost_gap_p_true": "p_true", "pacost_gap_answer_logprob": "answer_logprob"}
METRICS = ("token_match", "ngram_match", "token_extend", "longest_match")  # ConTAM's, per item over the corpus

# the confidences every audit measures, in the analyses' order; P(yes) only under the `paper` preset
CONFIDENCES = ("p_true", "p_true_raw", "answer_logprob", "question_min_k_plus_plus")
PAPER_CONFIDENCES = ("p_yes",)
for _name in (*CONFIDENCES, *PAPER_CONFIDENCES):  # refused, naming the registered ones, where the library lacks it
    REGISTERED_CONFIDENCES[_name]  # noqa: B018
