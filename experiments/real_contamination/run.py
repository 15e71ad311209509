"""Real contamination of SmolLM2-135M-Instruct, audited by every jaxcontam detector against the truth.

Each arm fine-tunes the GGUF model (`jaxcontam contaminate`, full fine-tuning in float32) on the same general
text with half of each benchmark's first N items mixed in (the same half in every arm: same seed), then:

1. checks the dose took: per item, mean log-prob after training minus before (the base GGUF), contaminated
   minus clean (a difference-in-differences with a 95% Welch CI), on the text it trained on and on the text
   the likelihood detectors score; an arm whose contaminated items did not gain says "the dose did not take";
2. audits the arm's model with `jaxcontam audit`, its ground truth and its corpus/, once per PaCoST preset
   (`jaxcontam`, `paper`).

Arms: control (copies 0), verbatim x1, verbatim x4, fields x4, rephrased x4, the crossover twins
verbatim_x1_swapped and verbatim_x4_swapped (the other half contaminated), and format_x4 (issue 48's format
control: none of the audited items, but N/2 other items of each benchmark four times, verbatim, as many benchmark
documents as verbatim x4: GSM8K train, COPA's SuperGLUE train split (ids 1-400) and two MMLU subjects outside the
audited ones, all without a built-in paraphrase, so every paraphrased item stays unseen for the fresh-items
design; `jaxcontam contaminate --copies 0 --extra-items`). Issue 48 adds two more: `<arm>_seed1` / `_seed2`
replicates of control, verbatim_x1 and verbatim_x1_swapped (the same draw, another data order: `--data-seed`),
and `diverged_sibling`, a reference an auditor can have: the base fine-tuned on other text only (the first
340,000 tokens of tinyshakespeare in corpus_misc, about 166 steps of 4 x 512; nothing of the benchmarks).
The verbatim x4 arm also runs the
likelihood detectors on the live weights during training (`--audit-every`, the AuditCallback curve). `--fresh` also
audits each arm's model on the fresh items of calibration design (b) (`fresh_parts`; PaCoST alone, into audit_fresh/).
Resumable per arm: a finished step leaves its output and a rerun skips it (training itself resumes from its
orbax checkpoint). `report.py` turns the results into the tables.

    python -m experiments.real_contamination.run                     # the full design (see --help for sizes)
    python -m experiments.real_contamination.run --pilot             # verbatim x4 only, 3 x 10 items, 16k tokens
    python -m experiments.real_contamination.run --smoke             # the bundled tiny model: the pipeline in minutes
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import pathlib
import subprocess
import sys
import time

from experiments.real_contamination.design import (
    ARMS,
    BENCHMARKS,
    DATA_SEEDS,
    FORMAT_ARM,
    FRESH,
    PRESETS,
    SIBLING_ARM,
    SWAPPED,
)

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SHARED = ROOT.parent / "shared" / "data"
GGUF = SHARED / "smollm2_135m_instruct" / "SmolLM2-135M-Instruct.Q4_1.gguf"
TINY = ROOT / "jaxcontam" / "examples" / "tiny_contaminated" / "model"
CORPUS = SHARED / "corpus_gutenberg" / "books"
MMLU_SUBJECTS = ("abstract_algebra", "sociology")  # the subjects with built-in rephrasings and short items
PARAPHRASES = {"gsm8k": "gsm8k_rephrase", "copa": "xcopa_backtranslation", "mmlu": "mmlu_rephrase"}
CURVE_ARM = "verbatim_x4"
FORMAT_COPIES = 4  # the format control (FORMAT_ARM): other items of the same benchmarks, 4 copies each
# MMLU subjects outside the audited ones and outside the built-in rephrasings' (abstract_algebra, sociology,
# high_school_us_history): a mathematics and a social-science subject, as the audited pair
FORMAT_MMLU_SUBJECTS = ("high_school_mathematics", "high_school_government_and_politics")
# the diverged sibling's text (corpus_misc's state_union and inaugural folders hold Latin-1 files the corpus reader
# refuses, so tinyshakespeare, 341k tokens in all)
SIBLING_CORPUS, SIBLING_TOKENS = SHARED / "corpus_misc" / "tinyshakespeare", 340_000


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def jaxcontam(*args) -> None:
    """Run the `jaxcontam` command line as a user does (its own process, so each arm's memory is freed)."""
    command = [sys.executable, "-m", "jaxcontam.cli", *map(str, args)]
    log("$ jaxcontam " + " ".join(map(str, args)))
    subprocess.run(command, check=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})


def mmlu_subjects(out: pathlib.Path, items: int) -> pathlib.Path:
    """A folder holding the first items // len(MMLU_SUBJECTS) rows of each subject's test CSV (header kept), so the
    first `items` MMLU items are a group of subjects and keep their official ids (`mmlu/test/<subject>/<row>`)."""
    folder = out / "mmlu_subjects"
    per_subject = -(-items // len(MMLU_SUBJECTS))
    for subject in MMLU_SUBJECTS:
        subject_rows(subject, per_subject, folder)
    return folder


def subject_rows(subject: str, rows: int, folder: pathlib.Path) -> None:
    """The first `rows` rows of an MMLU subject's test CSV (header kept) in the benchmark's layout,
    <folder>/test/<subject>_test.csv, so the rows keep their official ids (`mmlu/test/<subject>/<row>`)."""
    (folder / "test").mkdir(parents=True, exist_ok=True)
    with open(SHARED / "mmlu" / "test" / f"{subject}_test.csv", encoding="utf-8", newline="") as handle:
        table = list(csv.reader(handle))
    header = table[:1] if table[0][0] == "question" else []
    with open(folder / "test" / f"{subject}_test.csv", "w", encoding="utf-8", newline="") as handle:
        csv.writer(handle).writerows(header + table[len(header):len(header) + rows])


def fresh_parts(out: pathlib.Path, items: int) -> dict[str, list[tuple[str, pathlib.Path, int, int]]]:
    """Design (b)'s items, (benchmark, path, offset, limit) per `jaxcontam pacost` run: the `items` after the audited
    ones in GSM8K's and COPA's test splits, and the rows after the audited ones in each MMLU subject (one run per
    subject: an audit holds a benchmark once); all with built-in rephrasings, none trained on by any arm (the
    format arm's items come from GSM8K train, COPA train and two other subjects)."""
    per_subject = -(-items // len(MMLU_SUBJECTS))
    folders = [out / "mmlu_fresh" / subject for subject in MMLU_SUBJECTS]
    for subject, folder in zip(MMLU_SUBJECTS, folders):  # the audited rows and as many after them
        subject_rows(subject, 2 * per_subject, folder)
    mmlu = [("mmlu", folder, per_subject, per_subject) for folder in folders]
    return {"part1": [("gsm8k", SHARED, items, items), ("copa", SHARED, items, items), mmlu[0]],
            **{f"part{i}": [part] for i, part in enumerate(mmlu[1:], start=2)}}


def fresh_audit(arm_folder: pathlib.Path, out: pathlib.Path, items: int) -> None:
    """The arm's model audited by PaCoST (jaxcontam preset) on design (b)'s fresh items, into FRESH/<part>/."""
    for part, entries in fresh_parts(out, items).items():
        folder = arm_folder / FRESH / part
        if (folder / "summary.json").exists():  # an audit writes it last: the part is finished
            continue
        folder.mkdir(parents=True, exist_ok=True)
        lines = [f'out = "{folder}"', "[[model]]", f'path = "{arm_folder / "model"}"', f'name = "{arm_folder.name}"']
        for name, path, offset, limit in entries:
            lines += ["[[benchmark]]", f'name = "{name}"', 'split = "test"', f'path = "{path}"', f"offset = {offset}",
                      f"limit = {limit}", f'paraphrases = "{PARAPHRASES[name]}"']
        lines += ["[pacost]", 'preset = "jaxcontam"']
        config = arm_folder / FRESH / f"{part}.toml"
        config.write_text("\n".join(lines) + "\n")
        jaxcontam("pacost", "--config", config)


def format_items(items: int) -> list[str]:
    """The format arm's `--extra-items`: the first items // 2 (as many as an arm's contaminated half) of GSM8K
    train, of COPA's train split (ids 1-400) and of FORMAT_MMLU_SUBJECTS (the first of each, evenly), none
    audited; each MMLU subject read from its own CSV in the shared data (`mmlu/test/<subject>/<row>` ids)."""
    half = items // 2
    per_subject = [half // len(FORMAT_MMLU_SUBJECTS) + (i < half % len(FORMAT_MMLU_SUBJECTS))
                   for i in range(len(FORMAT_MMLU_SUBJECTS))]
    shared = from_root(SHARED)
    return [f"gsm8k:train:{half}={shared}", f"copa:train:{half}={shared}"] + [
        f"mmlu:test:{n}={shared}/mmlu/test/{subject}_test.csv"
        for subject, n in zip(FORMAT_MMLU_SUBJECTS, per_subject)]


def from_root(path) -> str:
    """A local file or folder as the command line is given it: relative to the repository root (its working
    directory), as the committed settings.json record it, so a retrain resumes a committed arm and writes no machine
    path; a hub id is given as it is."""
    return os.path.relpath(path, ROOT) if os.path.exists(path) else str(path)


def contaminate(args, arm: str, out: pathlib.Path, mmlu: pathlib.Path) -> pathlib.Path:
    form, copies = ARMS[arm]
    folder = out / "arms" / arm
    corpus, tokens = (SIBLING_CORPUS, args.sibling_tokens) if arm == SIBLING_ARM else (args.corpus, args.general_tokens)
    options = ["--model", from_root(args.model), "--split", "test", "--path", f"mmlu={from_root(mmlu)}",
               "--limit", args.items, "--fraction", 0.5, "--copies", copies, "--form", form,
               "--corpus", from_root(corpus),
               "--tokens", tokens, "--out", folder, "--seed", args.seed,
               "--batch-size", args.batch_size, "--seq-len", args.seq_len, "--learning-rate", args.learning_rate,
               "--checkpoint-every", args.checkpoint_every]
    for name in BENCHMARKS:
        options += ["--benchmark", name]
    if arm in SWAPPED:
        options += ["--crossover"]
    if arm in DATA_SEEDS:
        options += ["--data-seed", DATA_SEEDS[arm]]
    if arm == FORMAT_ARM:
        options += ["--extra-copies", FORMAT_COPIES]
        for spec in format_items(args.items):
            options += ["--extra-items", spec]
    if arm == CURVE_ARM and args.audit_every:
        options += ["--audit-every", args.audit_every]
    if not (folder / "model" / "config.json").exists():
        jaxcontam("contaminate", *options)
    return folder


def benchmarks(mmlu: pathlib.Path, items: int):
    from jaxcontam.data import load_benchmark
    from jaxcontam.training.contamination_mix import with_paraphrases

    paths = {"mmlu": mmlu}
    return [with_paraphrases(load_benchmark(name, split="test", path=paths.get(name, SHARED), limit=items))
            for name in BENCHMARKS]


def item_logprobs(model_path, benches, form: str, seed: int, crossover: bool = False) -> list[dict]:
    """Per item: mean log-prob of the text the arm trains on in `form` (items without a paraphrase: their verbatim
    text) and of the text the likelihood detectors score (`detectors.likelihood.likelihood_records`: the solved
    text); `drawn`: contaminated in every arm with copies > 0 (the command's own draw; its complement in a
    crossover arm)."""
    import numpy as np

    import jaxcontam as jc
    from jaxcontam.detect.likelihood import LikelihoodSettings
    from jaxcontam.detectors.likelihood import likelihood_records
    from jaxcontam.engine.scoring import score_logprobs
    from jaxcontam.training.contamination_mix import draw_contaminated, encode_document, item_document

    model = jc.load_model(model_path)
    rows = []
    for benchmark in benches:
        items = list(benchmark)
        drawn = draw_contaminated(benchmark, 0.5, seed) ^ crossover
        documents = [item_document(benchmark, item, "verbatim" if form == "rephrased" and not item.paraphrases
                                   else form, model.tokenizer) for item in items]
        trained = score_logprobs(model, [encode_document(model.tokenizer, d.text, d.chat) for d in documents])
        audited = likelihood_records(model, benchmark, items, LikelihoodSettings(k=0.2))
        for item, flag, scores, audit in zip(items, drawn, trained, audited, strict=True):
            rows.append({"id": item.id, "benchmark": benchmark.name, "drawn": bool(flag),
                         "trained_text": float(np.mean(scores.logprobs)), "audited_text": audit["mean_logprob"]})
    return rows


def _within_benchmark_did(gain, drawn, benchmark) -> dict:
    """The drawn-minus-other gain with benchmark fixed effects (OLS: gain ~ drawn + benchmark), so a gain
    every item of a benchmark shares (its format, a chat template learnt from all copies) cancels; 95% CI
    from the t distribution of the OLS standard error (scipy)."""
    import numpy as np
    from scipy import stats

    names = sorted(set(benchmark))
    design = np.column_stack([drawn.astype(float)] + [(benchmark == name).astype(float) for name in names])
    coef, _, _, _ = np.linalg.lstsq(design, gain, rcond=None)
    residual = gain - design @ coef
    dof = len(gain) - design.shape[1]
    sigma2 = residual @ residual / dof
    se = float(np.sqrt(sigma2 * np.linalg.inv(design.T @ design)[0, 0]))
    half = stats.t.ppf(0.975, dof) * se
    return {"did": float(coef[0]), "ci95": [float(coef[0] - half), float(coef[0] + half)],
            "pvalue": float(2 * stats.t.sf(abs(coef[0]) / se, dof)) if se > 0 else None,
            "n": [int(drawn.sum()), int((~drawn).sum())], "method": "OLS with benchmark fixed effects"}


def dose_check(base: list[dict], after: list[dict]) -> dict:
    """Difference-in-differences of mean log-prob, (after - base) on the drawn items minus on the others: per
    benchmark with Welch's 95% CI, and over all benchmarks within benchmarks (`_within_benchmark_did`), on the
    text the arm trained on and on the text the likelihood detectors score."""
    import numpy as np
    from scipy import stats

    by_id = {row["id"]: row for row in base}
    result = {}
    for text in ("trained_text", "audited_text"):
        gain = np.array([r[text] - by_id[r["id"]][text] for r in after])
        drawn = np.array([r["drawn"] for r in after], bool)
        benchmark = np.array([r["benchmark"] for r in after])
        for name in sorted(set(benchmark)):
            mine = benchmark == name
            test = stats.ttest_ind(gain[mine & drawn], gain[mine & ~drawn], equal_var=False)
            low, high = test.confidence_interval(0.95)
            result[f"{text}/{name}"] = {
                "did": float(gain[mine & drawn].mean() - gain[mine & ~drawn].mean()), "ci95": [float(low), float(high)],
                "pvalue": float(test.pvalue), "gain_drawn": float(gain[mine & drawn].mean()),
                "gain_other": float(gain[mine & ~drawn].mean()), "n": [int((mine & drawn).sum()),
                                                                       int((mine & ~drawn).sum())]}
        result[f"{text}/all"] = _within_benchmark_did(gain, drawn, benchmark)
    return result


def write_audit_config(path: pathlib.Path, model: pathlib.Path, arm_folder: pathlib.Path, mmlu: pathlib.Path,
                       items: int, preset: str, out: pathlib.Path, judge_tokens: int = 64,
                       audited: tuple[str, ...] = BENCHMARKS) -> None:
    lines = [f'out = "{out}"', "[[model]]", f'path = "{model}"', f'name = "{arm_folder.name}"']
    for name in audited:
        lines += ["[[benchmark]]", f'name = "{name}"', 'split = "test"',
                  f'path = "{mmlu if name == "mmlu" else SHARED}"', f"limit = {items}",
                  f'paraphrases = "{PARAPHRASES[name]}"', f'ground_truth = "{arm_folder / "ground_truth.jsonl"}"']
    lines += ["[corpus]", f'paths = ["{arm_folder / "corpus"}"]', "[pacost]", f'preset = "{preset}"']
    if preset == "paper":  # the real-model paper audit's lengths (docs/results.md): the authors' 1,024-token judge
        lines += ["max_new_tokens = 192", f"judge_max_new_tokens = {judge_tokens}"]  # 64: 1,024 costs hours on 2 cores
    lines += ["[contam]", "min_clean = 5", "min_contaminated = 5"]  # EPG thresholds that N/2 items per half can meet
    path.write_text("\n".join(lines) + "\n")


def run_arm(args, arm: str, out: pathlib.Path, mmlu: pathlib.Path, base_rows: list[dict]) -> None:
    folder = contaminate(args, arm, out, mmlu)
    dose_file = folder / "dose.json"
    if not dose_file.exists():  # the scores; the statistics below are recomputed from them on every run
        form = ARMS[arm][0]
        crossover = arm in SWAPPED
        after = item_logprobs(folder / "model", benchmarks(mmlu, args.items), form, args.seed, crossover)
        base = base_rows if form == "verbatim" else item_logprobs(args.model, benchmarks(mmlu, args.items), form,
                                                                  args.seed)  # the base's scores: no flag read
        dose_file.write_text(json.dumps({"items": after, "base": base}, indent=2) + "\n")
    scores = json.loads(dose_file.read_text())
    did = dose_check(scores["base"], scores["items"])
    took = bool(did["audited_text/all"]["ci95"][0] > 0)
    dose_file.write_text(json.dumps({**scores, "took": took, "did": did}, indent=2) + "\n")
    verdict = "the dose took" if took else (
        "no audited item was trained on (format control: other items of the same benchmarks)" if arm == FORMAT_ARM
        else "nothing of the benchmarks was trained on (diverged sibling: other text only)" if arm == SIBLING_ARM
        else "no contaminated item was trained on (control)" if ARMS[arm][1] == 0 else "THE DOSE DID NOT TAKE")
    for text in ("audited_text", "trained_text"):
        all_did = did[f"{text}/all"]
        log(f"{arm}: DiD of mean log-prob on the {text.replace('_', ' ')}, within benchmarks, {all_did['did']:+.3f} "
            f"(95% CI {all_did['ci95'][0]:+.3f} to {all_did['ci95'][1]:+.3f})")
    log(f"{arm}: {verdict} (decided on the audited text: the item as the detectors score it)")
    if args.fresh:
        fresh_audit(folder, out, args.items)
    if args.skip_audit:
        return
    audited = tuple(args.audit_benchmarks.split(","))
    for preset in args.presets.split(","):
        name = f"audit_{preset}"  # another judge cap or fewer benchmarks: an audit of its own, beside the default's
        name += f"_judge{args.judge_tokens}" if preset == "paper" and args.judge_tokens != 64 else ""
        name += "" if audited == BENCHMARKS else "_" + "_".join(audited)
        audit_out = folder / name
        if (audit_out / "summary.json").exists() and (audit_out / "done").exists():
            continue
        config = folder / f"{name}.toml"
        write_audit_config(config, folder / "model", folder, mmlu, args.items, preset, audit_out, args.judge_tokens,
                           audited)
        jaxcontam("audit", "--config", config)
        (audit_out / "done").write_text("")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=pathlib.Path, default=HERE / "results")
    parser.add_argument("--model", default=str(GGUF))
    parser.add_argument("--corpus", default=str(CORPUS))
    parser.add_argument("--items", type=int, default=None,
                        help="first N items of each benchmark, half contaminated (default 68: 102 items per half over "
                             "the three benchmarks; pilot 10; smoke 12)")
    parser.add_argument("--general-tokens", type=int, default=None,
                        help="general-text tokens per arm (default 52,000: as much as the x4 arms' benchmark text; "
                             "pilot 16,000; smoke 3,000)")
    parser.add_argument("--arms", default=",".join(ARMS), help=f"some of {', '.join(ARMS)}")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sibling-tokens", type=int, default=None,
                        help=f"the diverged sibling's tokens of other text (default {SIBLING_TOKENS:,}; smoke: "
                             "--general-tokens)")
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--seq-len", type=int, default=512)
    parser.add_argument("--learning-rate", type=float, default=1e-4)
    parser.add_argument("--checkpoint-every", type=int, default=10)
    parser.add_argument("--audit-every", type=int, default=10, help="AuditCallback interval in the curve arm")
    parser.add_argument("--skip-audit", action="store_true", help="train and check the dose only")
    parser.add_argument("--fresh", action="store_true",
                        help=f"also audit each arm's model on design (b)'s fresh items (PaCoST, into {FRESH}/)")
    parser.add_argument("--presets", default=",".join(PRESETS), help="PaCoST presets each arm is audited with")
    parser.add_argument("--judge-tokens", type=int, default=64,
                        help="the paper preset's judge reply cap (the authors': 1024); another cap audits into "
                             "audit_paper_judge<N>")
    parser.add_argument("--audit-benchmarks", default=",".join(BENCHMARKS),
                        help=f"the benchmarks audited, some of {','.join(BENCHMARKS)}")
    parser.add_argument("--pilot", action="store_true", help="verbatim x4 alone, 3 x 10 items, 16k general tokens")
    parser.add_argument("--smoke", action="store_true", help="the bundled tiny model, few items: the pipeline")
    args = parser.parse_args()
    items, tokens = 68, 52_000  # >= 100 items per half; the training fits ~1 hour at ~120 tokens/s (README)
    if args.pilot:
        args.arms, args.skip_audit, args.audit_every, items, tokens = "verbatim_x4", True, 0, 10, 16_000
        args.out = args.out.parent / "pilot" if args.out == HERE / "results" else args.out
    if args.smoke:
        args.model, items, tokens = str(TINY), 12, 3000
        args.corpus, args.seq_len, args.learning_rate = str(SHARED / "corpus_misc" / "tinyshakespeare"), 512, 1e-3
        args.out = args.out.parent / "smoke" if args.out == HERE / "results" else args.out
    args.items = items if args.items is None else args.items
    args.general_tokens = tokens if args.general_tokens is None else args.general_tokens
    if args.sibling_tokens is None:
        args.sibling_tokens = args.general_tokens if args.smoke or args.pilot else SIBLING_TOKENS
    arms = args.arms.split(",")
    unknown = sorted(set(arms) - set(ARMS))
    if unknown:
        parser.error(f"unknown arm(s) {', '.join(unknown)}; arms: {', '.join(ARMS)}")
    if not set(args.presets.split(",")) <= set(PRESETS):
        parser.error(f"--presets takes some of {', '.join(PRESETS)}, got {args.presets!r}")
    args.out.mkdir(parents=True, exist_ok=True)
    per_invocation = ("out", "arms", "presets", "skip_audit", "fresh", "judge_tokens", "audit_benchmarks",
                      "audit_every", "pilot", "smoke")  # in each run's log and audit config
    design = {key: from_root(value) if key in ("model", "corpus") else str(value)
              for key, value in vars(args).items() if key not in per_invocation}
    (args.out / "design.json").write_text(json.dumps(design, indent=2) + "\n")  # the same for every arm's run
    mmlu = mmlu_subjects(args.out, args.items)
    base_file = args.out / "base_logprobs.json"
    if not base_file.exists():  # the base model's verbatim and audited texts: shared by every verbatim arm
        base_file.write_text(json.dumps(item_logprobs(args.model, benchmarks(mmlu, args.items), "verbatim",
                                                      args.seed)) + "\n")
    base_rows = json.loads(base_file.read_text())
    for arm in arms:
        started = time.perf_counter()
        run_arm(args, arm, args.out, mmlu, base_rows)
        log(f"{arm}: done in {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
