"""Rewrite the docs' generated tables from the committed result files and the settings dataclasses.

A generated table sits between `<!-- generated:NAME -->` and `<!-- /generated:NAME -->` in a Markdown file of
docs/; `TABLES[NAME]` writes it. Result tables reuse the experiments' own report code (the same Markdown their
scripts print), so a table cannot disagree with its results; a result file not there yet gives a line saying
which command writes it. The config reference reads the settings dataclasses by module name, their defaults at
run time and each field's trailing comment from the source.

    python docs/generate.py            rewrite the tables in docs/*.md
    python docs/generate.py --check    exit 1, naming the files, if a rewrite would change anything
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import importlib
import inspect
import json
import re
import sys
import types
import typing
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
EXPERIMENTS = ROOT / "experiments"
MARKER = re.compile(r"(<!-- generated:([\w-]+) -->\n)(.*?)(<!-- /generated:\2 -->)", re.S)


def experiment_module(relative: str) -> types.ModuleType:
    """An experiment script as a module of the experiments package ("real_model/report.py": experiments.real_model.
    report); the checkout is importable after whatever jaxcontam this interpreter finds first."""
    if str(ROOT) not in sys.path:
        sys.path.append(str(ROOT))
    return importlib.import_module("experiments." + relative.removesuffix(".py").replace("/", "."))


def missing(path: Path, command: str) -> str:
    return f"No results yet: `experiments/{path.relative_to(EXPERIMENTS)}` is written by `{command}`.\n"


# ---- result tables


def tpu_capacity() -> str:
    source = EXPERIMENTS / "plan" / "readme_table.jsonl"
    if not source.exists():
        return missing(source, "python -m experiments.plan.readme_table")
    rows = [json.loads(line) for line in source.read_text(encoding="utf-8").splitlines() if line.strip()]
    return experiment_module("plan/readme_table.py").markdown(rows) + "\n"


def tpu_efficiency() -> str:
    """The published fractions of peak `jaxcontam plan`'s estimate uses, per chip, each with its source."""
    from jaxcontam.planning.efficiency import EFFICIENCY

    names = {
        "compute": "compute (matmul-bound)",
        "hbm": "HBM bandwidth (decode)",
        "ici": "ICI bandwidth",
        "best_mfu": "best published MFU (flag above it)",
    }
    lines = ["| chip | what | fraction | measured | source |", "|---|---|---|---|---|"]
    for chip, entry in EFFICIENCY.items():
        for field, label in names.items():
            figure = getattr(entry, field)
            lines.append(f"| {chip} | {label} | {figure.value:.2%} | {figure.measured} | {figure.source} |")
    return "\n".join(lines) + "\n"


def real_model_audit(audit: str, command: str) -> Callable[[], str]:
    def table() -> str:
        results = EXPERIMENTS / "real_model" / "results"
        if not (results / audit / "summary.json").exists():
            return missing(results / audit / "summary.json", command)
        return "\n".join(experiment_module("real_model/report.py").benchmark_rows(results, audit)) + "\n"

    return table


def real_model_membership() -> str:
    results = EXPERIMENTS / "real_model" / "results"
    if not (results / "membership.json").exists():
        return missing(results / "membership.json", "python -m experiments.real_model.run")
    return "\n".join(experiment_module("real_model/report.py").membership_rows(results)) + "\n"


def real_contamination_table(result: str, script: str) -> Callable[[], str]:
    """The table `script`'s `docs_table` renders from its results/`result` (experiments/real_contamination)."""

    def table() -> str:
        source = EXPERIMENTS / "real_contamination" / "results" / result
        if not source.exists():
            return missing(source, f"python -m experiments.real_contamination.{script.removesuffix('.py')}")
        report = json.loads(source.read_text(encoding="utf-8"))
        return experiment_module(f"real_contamination/{script}").docs_table(report)

    return table


def real_contamination_balanced() -> str:
    source = EXPERIMENTS / "real_contamination" / "results" / "crossover.json"
    report = json.loads(source.read_text(encoding="utf-8")) if source.exists() else {}
    if not report.get("balanced"):
        command = "python -m experiments.real_contamination.crossover --out experiments/real_contamination/results"
        return missing(source, command)
    return experiment_module("real_contamination/crossover.py").balanced_docs_table(report)


def corpus_storage() -> str:
    source = EXPERIMENTS / "perf" / "corpus_storage.jsonl"
    if not source.exists():
        return missing(source, "python -m experiments.perf.corpus_storage")
    record = json.loads(source.read_text(encoding="utf-8").splitlines()[-1])
    return experiment_module("perf/corpus_storage.py").markdown(record)


# ---- performance: every dated figure, and the README's current ones

PERF = EXPERIMENTS / "perf"
# Each figure's key, in the order docs/performance.md lists them; a key not here is an error, so a new figure gets
# a place. The README's Performance table shows the latest row of each key in README_PERF.
PERF_KEYS = (
    "scoring-16x512",
    "scoring-ceiling",
    "scoring-4x2048",
    "scoring-60m",
    "scoring-memory",
    "scoring-detectors",
    "generation-16x64",
    "decode-ceiling",
    "generation-64x96",
    "generation-32x256",
    "pacost-audit",
    "smollm2-audit",
    "bundled-audit",
    "bundled-audit-programs",
    "scoring-one-program",
    "lm-eval",
    "ngram-count-50m",
    "ngram-infinigram",
    "ngram-count-8m",
    "ngram-text",
    "ngram-text-views",
    "ngram-tokenizers-smollm2",
    "ngram-tokenizers-llama3-style",
    "ngram-tokenizers-qwen2-style",
    "ngram-tokenizers-llama2-style",
    "corpus-storage",
    "decontaminate",
    "matmul-rate",
    "ci",
)
README_PERF = (
    "scoring-16x512",
    "generation-16x64",
    "lm-eval",
    "ngram-count-50m",
    "ngram-text",
    "ngram-tokenizers-smollm2",
    "corpus-storage",
    "pacost-audit",
)
TOKENIZER_NAMES = {
    "smollm2": "SmolLM2's own (49k byte-level BPE, from its GGUF)",
    "llama3-style": "a Llama-3-style one (its split regex, byte level, `ignore_merges`; 106k trained "
    "here on the books, Llama 3's own file is not reachable offline)",
    "qwen2-style": "a Qwen2-style one (its regex, NFC; 105k trained here)",
    "llama2-style": "a SentencePiece-style BPE (Metaspace `▁`, byte fallback; the Llama 2 / Gemma "
    "shape; 32k trained here; batches of two files encoded at once, 0.34M tokens/s and "
    "1.06 cores one at a time; slower than the peer, which hands `tokenizers` every "
    "document in one call)",
}


def jsonl_rows(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def perf_rows() -> list[dict]:
    """Every dated figure as {key, date, what, jaxcontam, peer, ratio, machine, command, source, note}: the rows of
    perf/history.jsonl (figures measured before their scripts wrote result files) and of the result files."""
    rows = [
        {**r, "source": f"`history.jsonl`, {r['commit']}" if r["commit"] else "`history.jsonl`"}
        for r in jsonl_rows(PERF / "history.jsonl")
    ]
    for r in jsonl_rows(PERF / "ngram_tokenizers.jsonl"):
        name = r["tokenizer"]
        owner = "SmolLM2" if name == "smollm2" else f"a {name} tokenizer"
        rows.append(
            {
                "key": f"ngram-tokenizers-{name}",
                "date": r["date"],
                "what": f"raw text to counts in {owner}'s `tokenizer.json` ids, "
                f"{r['characters'] / 1e6:.1f}M characters",
                "jaxcontam": f"{r['jaxcontam_tokens_per_s'] / 1e6:.2f}M tokens/s",
                "peer": f"`tokenizers` batch encoding + counting: {r['peer_tokens_per_s'] / 1e6:.2f}M tokens/s",
                "ratio": f"{r['ratio']:.2f}x",
                "machine": f"2 cores, load average {r['load_average']}",
                "command": "python -m experiments.perf.ngram_tokenizers"
                + ("" if name == "smollm2" else f" --tokenizers {name}"),
                "source": "`ngram_tokenizers.jsonl`",
                "note": f"{TOKENIZER_NAMES.get(name, name)}, vocab {r['vocab']:,}; the 15 Gutenberg books x 4, a book "
                f"per `.txt` document, the 8-gram table in those ids; {r['jaxcontam_s']} s, "
                f"{r['cores_busy']} cores busy, through "
                + (
                    "the tiktoken twin (`jaxcontam/ngram/tiktoken_twin.py`)"
                    if r["engine"] == "tiktoken"
                    else "`tokenizers` (no tiktoken twin: whole documents are not cut into pieces, a merge may cross "
                    "a `▁`)"
                )
                + f"; ids equal to `tokenizers`': {'yes' if r['ids_equal'] else 'no'}; goal >= 2.5M tokens/s: "
                f"{'met' if r['jaxcontam_tokens_per_s'] >= 2.5e6 else 'not met'}. The peer: "
                "`encode_batch_fast` over all documents in one call (a thread per core), then jaxcontam's "
                "counter on the ids",
            }
        )
    for r in jsonl_rows(PERF / "corpus_storage.jsonl"):
        tokens, seconds = r["tokens"], r["seconds"]
        rows.append(
            {
                "key": "corpus-storage",
                "date": r["date"],
                "what": f"corpus counting from {r['shards']} `.jsonl.zst` shards, {tokens / 1e6:.1f}M SmolLM2 tokens",
                "jaxcontam": f"{tokens / seconds['zstd'] / 1e6:.2f}M tokens/s; from an S3 server: "
                f"{tokens / seconds['bucket'] / 1e6:.2f}M",
                "peer": f"the same shards as plain JSONL: {tokens / seconds['plain'] / 1e6:.2f}M tokens/s",
                "ratio": f"{seconds['plain'] / seconds['zstd']:.2f}x; {seconds['plain'] / seconds['bucket']:.2f}x",
                "machine": f"{r['cores']} cores",
                "command": "python -m experiments.perf.corpus_storage",
                "source": "`corpus_storage.jsonl`",
                "note": "the whole run: [storage.md](storage.md)",
            }
        )
    for r in jsonl_rows(PERF / "decontaminate_vs_peers.jsonl"):
        per_core = {name: row["words_per_s_per_core"] for name, row in r["rows"].items()}
        decon = r["rows"].get("decon", {}).get("words_per_s_per_core_less_fixed")
        decon_text = f"; allenai's decon (less its fixed cost): {decon / 1e6:.2f}M" if decon else ""
        decon_ratio = f"; {r['summary']['ratio_vs_decon_less_fixed']}x" if decon else ""
        rows.append(
            {
                "key": "decontaminate",
                "date": r.get("date", ""),
                "what": "decontamination, GPT-3's rule (words, 13-grams), per core",
                "jaxcontam": f"{per_core['jaxcontam words gpt3 (find_batch)'] / 1e6:.2f}M words/s",
                "peer": f"datatrove's filter: {per_core['datatrove NGramsDecontFilter (NLTK words)'] / 1e3:.0f}k "
                f"words/s; lm-eval's Janitor: {per_core['lm-eval Janitor (Python mode)'] / 1e3:.0f}k{decon_text}",
                "ratio": f"{r['summary']['ratio_vs_datatrove']}x; {r['summary']['ratio_vs_janitor']}x{decon_ratio}",
                "machine": r["machine"],
                "command": "python -m experiments.perf.decontaminate_vs_peers",
                "source": "`decontaminate_vs_peers.jsonl`",
                "note": "every row: [decontamination.md](decontamination.md)",
            }
        )
    for r in jsonl_rows(PERF / "bundled_audit.jsonl"):
        rows.append(
            {
                "key": "bundled-audit",
                "date": r["date"][:16].replace("T", " "),
                "what": "`jaxcontam audit` of the bundled example, as a new user runs it",
                "jaxcontam": (
                    f"first run {r['first_run_s']:.0f} s (empty compile cache), later runs median "
                    f"{r['later_runs_median_s']:.0f} s"
                    if r.get("later_runs_median_s") is not None
                    else f"median {r['median_s']:.0f} s of {len(r['walls_s'])} runs"
                ),
                "peer": "",
                "ratio": "",
                "machine": r["machine"],
                "command": "python -m experiments.perf.bundled_audit",
                "source": f"`bundled_audit.jsonl`, {r['commit']}",
                "note": f"walls {', '.join(f'{w:.1f}' for w in r['walls_s'])} s"
                + (f"; fresh install {r['fresh_install_s']:.0f} s" if r.get("fresh_install_s") else ""),
            }
        )
    for r in jsonl_rows(PERF / "audit_programs.jsonl"):
        programs = ", ".join(f"{name} {p['count']}" for name, p in r["per_program"].items())
        rows.append(
            {
                "key": "bundled-audit-programs",
                "date": r["date"][:16].replace("T", " "),
                "what": "XLA programs the bundled `jaxcontam audit` compiles (a fresh process, an empty compile cache)",
                "jaxcontam": f"{r['programs']} programs, {r['compile_s']:.1f} s compiling (XLA's log); the audit's "
                f"load row {r['load_s']:.1f} s, compile row {r['stage_compile_s']:.1f} s; wall {r['wall_s']:.0f} s",
                "peer": "",
                "ratio": "",
                "machine": r["machine"] + (f", load average {r['load_average']}" if r.get("load_average") else ""),
                "command": "PYTHONPATH=CHECKOUT:. python -P -m experiments.perf.audit_programs",
                "source": f"`audit_programs.jsonl`, {r['commit']}",
                "note": programs,
            }
        )
    for r in jsonl_rows(PERF / "scoring_buckets.jsonl"):
        cases = [key for key in r if key.endswith(" stats")]
        rows.append(
            {
                "key": "scoring-one-program",
                "date": r["date"][:16].replace("T", " "),
                "what": "scoring SmolLM2-135M-Instruct (GGUF, f32), with and without the Min-K%++ statistics, "
                "compiles excluded",
                "jaxcontam": "; ".join(
                    [f"{key}: {r[key]['tokens_per_s']:,.0f} tokens/s" for key in cases]
                    + (
                        [
                            f"the statistics add {r['statistics']['stats_share_of_step']:.1%} to a "
                            f"{r['statistics']['shape']} step (vocabulary head "
                            f"{r['statistics']['head_without_stats_s']} -> {r['statistics']['head_with_stats_s']} s "
                            f"of a {r['statistics']['step_s']} s step)"
                        ]
                        if "statistics" in r
                        else []
                    )
                ),
                "peer": "",
                "ratio": "",
                "machine": "2 cores" + (f", load average {r['load_average']}" if r.get("load_average") else ""),
                "command": "PYTHONPATH=CHECKOUT:. python -P -m experiments.perf.scoring_buckets",
                "source": f"`scoring_buckets.jsonl`, {r.get('label') or ''} "
                f"(at {r.get('commit') or 'a commit not recorded'})",
                "note": "score_step programs compiled per case (warm-up call): "
                + ", ".join(f"{r[key]['score_step_programs']}" for key in cases)
                if cases
                else "",
            }
        )
    unknown = sorted({r["key"] for r in rows} - set(PERF_KEYS))
    if unknown:
        raise SystemExit(f"performance figures with no place in PERF_KEYS (docs/generate.py): {', '.join(unknown)}")
    return sorted(rows, key=lambda r: (PERF_KEYS.index(r["key"]), r["date"]))  # stable: file order within a date


def cell(text: str) -> str:
    return text.replace("|", "\\|")


def performance_history() -> str:
    """docs/performance.md: every figure's dated rows, oldest first, a table per figure."""
    rows, parts = perf_rows(), []
    for key in PERF_KEYS:
        group = [r for r in rows if r["key"] == key]
        if not group:
            continue
        columns = [
            c
            for c in ("date", "jaxcontam", "peer", "ratio", "machine", "note", "command", "source")
            if any(r.get(c) for r in group)
        ]
        lines = [
            f"**{group[-1]['what']}** (`{key}`)",
            "",
            "| " + " | ".join(columns) + " |",
            "|" + "---|" * len(columns),
        ]
        for r in group:
            lines.append(
                "| " + " | ".join(cell(f"`{r[c]}`" if c == "command" else r.get(c) or "") for c in columns) + " |"
            )
        parts.append("\n".join(lines) + "\n")
    return "\n".join(parts)


def performance_current() -> str:
    """README.md: the latest row of each figure in README_PERF, and the TPU estimate from experiments/plan."""
    rows = perf_rows()
    current = [[r for r in rows if r["key"] == key][-1] for key in README_PERF]
    dates = sorted(r["date"][:10] for r in current)
    lines = [
        f"Measured {dates[0]} to {dates[-1]}; each row's date and machine load, and every earlier figure: "
        "[docs/performance.md](docs/performance.md).",
        "",
        "| what | jaxcontam | peer | ratio | command |",
        "|---|---|---|---|---|",
    ]
    for r in current:
        lines.append(
            f"| {cell(r['what'])} | {cell(r['jaxcontam'])} | {cell(r['peer'])} | {cell(r['ratio'])} | "
            f"`{cell(r['command'])}` |"
        )
    plan = jsonl_rows(EXPERIMENTS / "plan" / "readme_table.jsonl")
    found = [r for r in plan if (r["model"], r["slice"], r["seq"]) == ("Llama-3.1-8B", "v5e-8", 2048)]
    if found:
        r = found[0]
        estimate = experiment_module("plan/readme_table.py").estimate(r, "large")
        lines.append(
            f"| TPU scoring, {r['model']} bf16, {r['batch']} x {r['seq']} tokens on {r['slice']} (compiled for the "
            f"topology, not run) | est. {estimate.tokens_per_second:,.0f} tokens/s, {estimate.mfu:.0%} MFU "
            f"(roofline upper bound: {r['tokens_per_second_upper_bound']:,.0f} tokens/s, "
            f"{r['mfu_upper_bound']:.0%} MFU) | best published {r['chip']} MFU: {estimate.best_published_mfu:.2%} "
            f"(MaxText, 32B training) | | `jaxcontam plan --model experiments/plan/configs/{r['model']}.json "
            f"--topology {r['topology']} --steps score --batch {r['batch']} --seq {r['seq']}` |"
        )
    return "\n".join(lines) + "\n"


EPG_SIZES = (100, 500, 2000, 14042)


def accelerator_gpu() -> str:
    """The latest GPU check (experiments/accelerator/results/) as its own report renders it, then the bundled
    audit's compile-cache runs, without their titles (the README's text names card and date)."""
    results = EXPERIMENTS / "accelerator" / "results"
    check, cache = results / "accelerator.json", results / "compile_cache.json"
    if not check.exists():
        return missing(check, "experiments/accelerator/run.sh")
    report = experiment_module("accelerator/gpucheck/report.py")
    text = report.table(json.loads(check.read_text())).split("\n", 2)[2]
    if cache.exists():
        runs = experiment_module("accelerator/compile_cache.py")
        text += "\n" + runs.table(json.loads(cache.read_text())).split("\n", 2)[2]
    return text


def epg_null_flags() -> str:
    """Per score shape and benchmark size: how often the paper's rule and the max-z test flag a null benchmark (the
    max-z test over the benchmarks it could test, the count it could not beside it)."""
    source = EXPERIMENTS / "stats" / "epg_calibration.csv"
    if not source.exists():
        return missing(source, "python -m experiments.stats.epg_calibration")
    with source.open(newline="") as handle:
        rows = [r for r in csv.DictReader(handle) if r["kind"] == "null"]
    shapes = list(dict.fromkeys(r["shape"] for r in rows))
    lines = ["| scores | " + " | ".join(f"{n:,} items" for n in EPG_SIZES) + " |", "|---|" + "---|" * len(EPG_SIZES)]
    for shape in shapes:
        cells = []
        for n in EPG_SIZES:
            part = [r for r in rows if r["shape"] == shape and int(r["n"]) == n]
            paper = sum(r["paper_rule"] == "True" for r in part) / len(part)
            tested = [float(r["p_z"]) for r in part if r["p_z"] != "nan"]
            max_z = f"{sum(p <= 0.05 for p in tested) / len(tested):.1%}" if tested else "no test"
            untested = len(part) - len(tested)  # beside the rate, never in it as "not rejected"
            cells.append(f"{paper:.1%} / {max_z}" + (f" ({untested} of {len(part):,} not tested)" if untested else ""))
        lines.append(f"| {shape} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def stats_levels() -> str:
    """Every test's false-positive rate under its simulated null (experiments/stats/levels.py)."""
    source = EXPERIMENTS / "stats" / "levels.json"
    if not source.exists():
        return missing(source, "python experiments/stats/levels.py")
    return experiment_module("stats/levels.py").docs_table(json.loads(source.read_text(encoding="utf-8")))


def evidence_table(render: str) -> Callable[[], str]:
    """A table of the evidence the audit states from (the package's measured_evidence.json), rendered by
    experiments/real_contamination/evidence_table.py's `render` (the ranking, or the README's summary)."""

    def table() -> str:
        source = ROOT / "jaxcontam" / "report" / "measured_evidence.json"
        measured = json.loads(source.read_text(encoding="utf-8"))
        return getattr(experiment_module("real_contamination/evidence_table.py"), render)(measured)

    return table


def lm_eval_parity() -> str:
    source = EXPERIMENTS / "lm_eval_parity" / "results" / "copa_smollm2.json"
    if not source.exists():
        return missing(source, "python -m experiments.lm_eval_parity.copa_smollm2")
    found = json.loads(source.read_text(encoding="utf-8"))
    return (
        "| benchmark | model | strings / token ids identical | largest / mean log-likelihood difference | "
        "acc / acc_norm choices differing | acc jaxcontam / lm-eval | seconds |\n|---|---|---|---|---|---|---|\n"
        f"| {found['benchmark']} | {found['model']} | {found['strings_identical']} / "
        f"{found['token_ids_identical']} | {found['max_abs_delta_loglik']:.1e} / "
        f"{found['mean_abs_delta_loglik']:.1e} | {found['acc_choices_differing']} / "
        f"{found['acc_norm_choices_differing']} | {found['acc_jaxcontam']} / {found['acc_lm_eval']} | "
        f"{found['seconds']:.0f} |\n"
    )


# ---- the config reference

# (TOML table, "module:attribute" of a settings dataclass or a dict of defaults, {TOML key: field} or None = all)
CONFIG_TABLES = [
    (
        "top level",
        "jaxcontam.audit.config:AuditConfig",
        {k: k for k in ("out", "alpha", "correction", "chunk_size", "reference_model")},  # also [pacost] reference
    ),
    ("[[model]]", "jaxcontam.audit.config:ModelEntry", None),
    ("[[benchmark]]", "jaxcontam.audit.config:BenchmarkEntry", None),
    ("[corpus]", "jaxcontam.audit.config:CorpusConfig", None),
    ("[pacost]", "jaxcontam.detect.pacost.settings:PacostSettings", None),
    (
        "[pacost] (the rephrase model)",
        "jaxcontam.audit.config:PacostConfig",
        {k: k for k in ("rephrase_model", "rephrase_dtype", "rephrase_mesh")},
    ),
    ("[pacost.gates]", "jaxcontam.detect.rephrase:RephraseGates", None),
    ("[likelihood]", "jaxcontam.detect.likelihood:LikelihoodSettings", None),
    ("[exchangeability]", "jaxcontam.detect.exchangeability:ExchangeabilitySettings", None),
    ("[ngram]", "jaxcontam.ngram.audit:NgramSettings", None),
    ("[ngram] (scoring)", "jaxcontam.ngram.audit:NgramScoring", None),
    ("[ngram] (tokenizer)", "jaxcontam.audit.config:NgramConfig", {"tokenizer": "tokenizer"}),
    (
        "[contam]",
        "jaxcontam.detect.contam:ContamSettings",  # alpha is the top-level key
        {k: k for k in ("metric", "z_crit", "min_clean", "min_contaminated", "resamples", "seed")},
    ),
    ("[blind_baseline]", "jaxcontam.detect.blind:BlindBaselineSettings", None),
    ("[constat]", "jaxcontam.detect.constat:ConStatSettings", None),
    ("[reference_log_ratio]", "jaxcontam.detect.reference_log_ratio:ReferenceLogRatioSettings", None),
    ("[recall]", "jaxcontam.detect.recall:RecallSettings", None),
    ("[codec]", "jaxcontam.detect.codec:CodecSettings", None),
    ("[gradnorm]", "jaxcontam.detect.gradnorm:GradNormSettings", None),
    ("[cdd]", "jaxcontam.detect.cdd:CddSettings", None),
    ("[ts_guessing]", "jaxcontam.detect.ts_guessing:TsGuessingSettings", None),
    (
        "[mesh]",
        "jaxcontam.mesh:MeshSettings",
        {k: k for k in ("data", "model", "fsdp")},
    ),  # attention: the environment's
]
# Keys whose default the TOML reader fills in itself (`jaxcontam.audit.config.load_config`), not the dataclass.
READER_DEFAULTS = {("[[model]]", "name"): "the last part of `path`"}
FIELD_LINE = re.compile(r"^\s+(\w+)\s*:[^=#]*(?:=[^#]*)?(?:#\s*(.*))?$")


def resolve(target: str):
    module, attribute = target.split(":")
    return getattr(importlib.import_module(module), attribute)


def field_comments(cls) -> dict[str, str]:
    """Each field's trailing `# comment` in the class source."""
    comments = {}
    for line in inspect.getsource(cls).splitlines():
        found = FIELD_LINE.match(line)
        if found and found[2]:
            comments[found[1]] = found[2].strip()
    return comments


def default_text(field: dataclasses.Field) -> str:
    if field.default is not dataclasses.MISSING:
        value = field.default
    elif field.default_factory is not dataclasses.MISSING:
        value = field.default_factory()
    else:
        return "required"
    if dataclasses.is_dataclass(value):
        value = {f.name: getattr(value, f.name) for f in dataclasses.fields(value) if f.init}
    return f"`{value!r}`"


def type_text(hint, written: str) -> str:
    """A field's type as written, but a `Literal` (or an optional one) spelled out as its allowed values."""
    options = typing.get_args(hint) if typing.get_origin(hint) in (typing.Union, types.UnionType) else (hint,)
    if not any(typing.get_origin(o) is typing.Literal for o in options):
        return str(written)
    parts = []
    for option in options:
        if typing.get_origin(option) is typing.Literal:
            parts += [repr(value) for value in typing.get_args(option)]
        else:
            parts.append("None" if option is type(None) else getattr(option, "__name__", str(option)))
    return " | ".join(parts)


def config_table(table: str, target: str, keys: dict[str, str] | None) -> str:
    source = resolve(target)
    if isinstance(source, dict):
        lines = ["| key | default |", "|---|---|"]
        return "\n".join(lines + [f"| `{k}` | `{v!r}` |" for k, v in source.items() if keys is None or k in keys])
    fields = {f.name: f for f in dataclasses.fields(source) if f.init}
    hints = typing.get_type_hints(source)
    comments = field_comments(source)
    keys = keys or {name: name for name in fields}
    lines = ["| key | type | default | note |", "|---|---|---|---|"]
    for key, name in keys.items():
        field = fields[name]
        note = comments.get(name, "")
        bounds = field.metadata.get("range")  # `dataclass_config.ranged`: what every entry point accepts
        written = type_text(hints[name], field.type) + ("" if bounds is None else bounds.describe())
        cells = (f"`{written}`", READER_DEFAULTS.get((table, key)) or default_text(field), note)
        lines.append(f"| `{key}` | " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return "\n".join(lines)


def config_reference() -> str:
    parts = []
    for table, target, keys in CONFIG_TABLES:
        parts.append(f"**{table}** (`{target.replace(':', '.')}`)\n\n{config_table(table, target, keys)}\n")
    return "\n".join(parts)


def option_aliases() -> str:
    """The named options of `jaxcontam audit` and the `--set` key each one sets (`commands.audit_options.ALIASES`)."""
    from jaxcontam.commands.audit_options import ALIASES, option_name

    lines = ["| option | sets | note |", "|---|---|---|"]
    for name, alias in ALIASES.items():
        note = {"every": "every entry", "one": "one entry only"}.get(alias.entries, "")
        note += f"replaces `{'`, `'.join(alias.replaces)}`" if alias.replaces else ""
        lines.append(f"| `{option_name(name)}` | `{alias.key}` | {note} |")
    return "\n".join(lines) + "\n"


def pacost_presets() -> str:
    presets = resolve("jaxcontam.detect.pacost.settings:PRESETS")
    keys = list(dict.fromkeys(k for preset in presets.values() for k in preset))
    lines = ["| preset | " + " | ".join(f"`{k}`" for k in keys) + " |", "|---|" + "---|" * len(keys)]
    for name, preset in presets.items():
        lines.append(f"| `{name}` | " + " | ".join(f"`{preset.get(k, '')}`" for k in keys) + " |")
    return "\n".join(lines) + "\n"


def environment_variables() -> str:
    """Every `JAXCONTAM_*` name the package, its tests and experiments name, with the files that name it."""
    found: dict[str, set[str]] = {}
    for path in sorted(
        p for folder in ("jaxcontam", "kernels", "tests", "experiments") for p in (ROOT / folder).rglob("*.py")
    ):
        for name in re.findall(r"\bJAXCONTAM_[A-Z_]+\b", path.read_text(encoding="utf-8")):
            found.setdefault(name, set()).add(str(path.relative_to(ROOT)))
    lines = ["| variable | named in |", "|---|---|"]
    return (
        "\n".join(
            lines
            + [f"| `{name}` | {', '.join(f'`{p}`' for p in sorted(files))} |" for name, files in sorted(found.items())]
        )
        + "\n"
    )


# ---- code-derived tables


def command_options() -> str:
    """Every command's arguments and options with their defaults and help, from the click commands themselves."""
    import click

    from jaxcontam import cli

    def describe(name: str, command: click.Command) -> list[str]:
        if isinstance(command, click.Group):
            return [
                line for sub, child in sorted(command.commands.items()) for line in describe(f"{name} {sub}", child)
            ]
        lines = [
            f"### `jaxcontam {name}`",
            "",
            (command.help or "").strip().split("\n\n")[0].replace("\n", " "),
            "",
            "| argument / option | default | help |",
            "|---|---|---|",
        ]
        for param in command.params:
            if isinstance(param, click.Argument):
                lines.append(f"| `{param.name.upper()}`{'' if param.required else ' (optional)'} | | |")
                continue
            names = " / ".join(f"`{o}`" for o in param.opts + param.secondary_opts)
            unset = param.default in (None, (), False) or type(param.default).__name__ == "Sentinel"
            default = "required" if param.required else "" if unset else f"`{param.default}`"
            help_text = (param.help or "").replace("|", "\\|").replace("\n", " ")
            lines.append(f"| {names} | {default} | {help_text} |")
        return lines + [""]

    lines = []
    for name, target in cli.COMMANDS.items():
        module, attribute = target.split(":")
        lines += describe(name, getattr(importlib.import_module(module), attribute))
    return "\n".join(lines)


def package_imports() -> str:
    """Which jaxcontam subpackages (and top-level modules) each one imports anywhere, read from the source."""
    import ast

    package = ROOT / "jaxcontam"

    def top(path: Path) -> str:  # jaxcontam/engine/scoring.py -> engine; jaxcontam/cli.py -> cli
        return path.relative_to(package).parts[0].removesuffix(".py")

    names = {top(p) for p in package.rglob("*.py")} | {"kernels"}
    graph: dict[str, set[str]] = {}
    for path in sorted(package.rglob("*.py")):
        found = graph.setdefault(top(path), set())
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            modules = (
                [node.module]
                if isinstance(node, ast.ImportFrom) and node.module and not node.level
                else [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else []
            )
            for module in modules:
                parts = module.split(".")
                if parts[0] == "jaxcontam" and len(parts) > 1:
                    found.add(parts[1])
                elif parts[0] == "jaxcontam" and isinstance(node, ast.ImportFrom):
                    found.update(a.name for a in node.names if a.name in names)
    lines = ["| package or module | imports from jaxcontam |", "|---|---|"]
    for name in sorted(graph, key=lambda n: (n == "__init__", n)):
        targets = sorted((graph[name] & names) - {name, "__init__"})
        lines.append(f"| `{name}` | {', '.join(f'`{t}`' for t in targets) or '(nothing)'} |")
    return "\n".join(lines) + "\n"


TABLES: dict[str, Callable[[], str]] = {
    "tpu-capacity": tpu_capacity,
    "tpu-efficiency": tpu_efficiency,
    "real-model-audit": real_model_audit("audit", "python -m experiments.real_model.run"),
    "real-model-audit-paper": real_model_audit(
        "audit-paper", "python -m experiments.real_model.run --preset paper --skip-membership"
    ),
    "real-model-membership": real_model_membership,
    "real-contamination": real_contamination_table("report.json", "report.py"),
    "real-contamination-balanced": real_contamination_balanced,
    "real-contamination-seeds": real_contamination_table("seeds.json", "seeds.py"),
    "real-contamination-default": real_contamination_table("round_four.json", "round_four.py"),
    "real-contamination-rule": real_contamination_table("decision_rule.json", "apply_rule.py"),
    "real-contamination-blind": real_contamination_table("blind_baseline.json", "blind_baseline.py"),
    "real-contamination-detectors": real_contamination_table("detectors.json", "detectors.py"),
    "epg-null-flags": epg_null_flags,
    "stats-levels": stats_levels,
    "evidence-ranking": evidence_table("docs_table"),
    "evidence-summary": evidence_table("summary_table"),
    "lm-eval-parity": lm_eval_parity,
    "corpus-storage": corpus_storage,
    "performance-history": performance_history,
    "performance-current": performance_current,
    "accelerator-gpu": accelerator_gpu,
    "config-reference": config_reference,
    "pacost-presets": pacost_presets,
    "option-aliases": option_aliases,
    "environment-variables": environment_variables,
    "command-options": command_options,
    "package-imports": package_imports,
}


def render(text: str, cache: dict[str, str]) -> str:
    """`text` with every generated block rewritten; an unknown block name is an error."""

    def block(found: re.Match) -> str:
        name = found[2]
        if name not in TABLES:
            raise SystemExit(f"<!-- generated:{name} --> has no generator: add it to TABLES in docs/generate.py")
        if name not in cache:
            cache[name] = TABLES[name]()
        return found[1] + cache[name] + found[4]

    return MARKER.sub(block, text)


def stale_files(write: bool) -> list[Path]:
    """The docs whose generated blocks differ from a fresh rendering (rewritten when `write`)."""
    cache: dict[str, str] = {}
    stale = []
    for path in sorted(DOCS.glob("*.md")) + [ROOT / "README.md"]:
        text = path.read_text(encoding="utf-8")
        fresh = render(text, cache)
        if fresh != text:
            stale.append(path)
            if write:
                path.write_text(fresh, encoding="utf-8")
    return stale


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if a table is stale")
    args = parser.parse_args()
    stale = stale_files(write=not args.check)
    for path in stale:
        print(f"{'stale' if args.check else 'rewrote'}: {path.relative_to(ROOT)}")
    if args.check and stale:
        raise SystemExit("generated tables are stale: run `python docs/generate.py`")


if __name__ == "__main__":
    main()
