"""`run_audit`: n-gram evidence, rephrasings, then per model and benchmark PaCoST and likelihood detectors,
each stage resumable; then items.parquet, summary.json, plots and report.html."""

from __future__ import annotations

import dataclasses
import json
import math
import sys
import time
from pathlib import Path

from jaxcontam import __version__
from jaxcontam.audit.config import AuditConfig
from jaxcontam.audit.inputs import AuditBenchmark, AuditInputs, check_inputs
from jaxcontam.audit.store import StageStore, fingerprint, run_chunked, write_atomic
from jaxcontam.audit.summary import run_summary, sweep_corrections
from jaxcontam.stats import sweep_resamples
from jaxcontam.stats.paired import DEFAULT_RESAMPLES

NGRAM_DEFAULTS = {"n": 8, "mincount": 1, "skip_budget": 0, "scope": "item", "normalize": "paper"}


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _progress(label: str):
    start = time.perf_counter()

    def report(done: int, total: int, reused: bool) -> None:
        status = "reused from an earlier run" if reused else f"{time.perf_counter() - start:.0f} s"
        _say(f"  {label}: chunk {done}/{total} ({status})")
    return report


def ngram_rows(config: AuditConfig, inputs: AuditInputs, out: Path) -> dict | None:
    """(benchmark name, item id) -> ConTAM metrics, or None without corpora. Counts are saved and reused."""
    if not config.corpora:
        return None
    from jaxcontam.data.corpus import open_corpus
    from jaxcontam.ngram.audit import NgramSettings, ensure_counts, item_rows
    from jaxcontam.ngram.units import load_units

    options = NGRAM_DEFAULTS | config.ngram
    tokenizer = options.get("tokenizer") or config.models[0].path
    settings = NgramSettings(n=options["n"], scope=options["scope"], normalize=options["normalize"])
    units = load_units(tokenizer)
    corpora = [(c, inputs.corpora.get(c) or open_corpus(c, field=config.corpus_text_field)) for c in config.corpora]
    counts_dir = Path(config.counts) if config.counts else out / "counts" / fingerprint(
        {"tokenizer": str(tokenizer), "corpora": list(config.corpora), **dataclasses.asdict(settings)})
    loaded = [b.benchmark for b in inputs.benchmarks]
    _say(f"n-gram counts ({settings.n}-grams, scope {settings.scope}) over {len(corpora)} corpus/corpora")
    counted, scanned = ensure_counts(loaded, corpora, units, settings, counts_dir)
    _say(f"  {'counted' if scanned else 'reused'} {counts_dir}")
    rows = item_rows(loaded, counted, units, settings, mincount=options["mincount"],
                     skip_budget=options["skip_budget"])
    return {(r["benchmark"], r["id"]): r for r in rows}


def rephrasings(config: AuditConfig, audit_benchmark: AuditBenchmark, out: Path) -> list[dict]:
    """The accepted rephrasing (or the reason there is none) of each item; generated ones are stored."""
    from jaxcontam.detect.rephrase import RephraseGates, rephrase_items

    gates = RephraseGates(**config.gates)
    items = list(audit_benchmark.benchmark)
    model = None
    if config.rephrase_model is not None:
        import jaxcontam

        model = jaxcontam.load_model(config.rephrase_model)

    def compute(chunk):
        return [dataclasses.asdict(c) for c in rephrase_items(chunk, gates, model=model)]

    if model is None:
        return compute(items)
    store = StageStore(out / "state", "rephrase", {"benchmark": audit_benchmark.entry.label,
                                                   "model": config.rephrase_model, "gates": config.gates,
                                                   "chunk_size": config.chunk_size})
    return run_chunked(store, items, config.chunk_size, compute,
                       _progress(f"rephrase {audit_benchmark.entry.label}"))


def likelihood_records(model, benchmark, items, k: float) -> list[dict]:
    """Reference-free detectors of each item's solved text (prompt + gold answer)."""
    from jaxcontam.detect.likelihood import detector_scores
    from jaxcontam.engine import score_logprobs

    texts = [benchmark.solved_text(item) for item in items]
    scores = score_logprobs(model, [model.tokenizer.encode(t) for t in texts], with_stats=True)
    return [{"id": item.id, **detector_scores(s, text, k)} for item, text, s in zip(items, texts, scores)]


def model_rows(config: AuditConfig, entry, model, audit_benchmark: AuditBenchmark, choices: list[dict],
               out: Path) -> list[dict]:
    """PaCoST and likelihood records of every item for one model, from the store where already computed."""
    from jaxcontam.detect.pacost import pacost_records

    benchmark = audit_benchmark.benchmark
    items = list(benchmark)
    rephrase_of = {c["item_id"]: c["rephrase"] for c in choices}
    key = {"model": str(Path(entry.path).resolve()) if Path(entry.path).exists() else entry.path,
           "dtype": entry.dtype, "benchmark": audit_benchmark.entry.label, "chunk_size": config.chunk_size}
    label = f"{entry.name} | {audit_benchmark.entry.label}"
    empty = [{}] * len(items)
    pacost = empty if "pacost" not in config.stages else run_chunked(
        StageStore(out / "state", "pacost", key | {"settings": dataclasses.asdict(config.pacost),
                                                  "rephrasings": fingerprint(rephrase_of)}),
        items, config.chunk_size,
        lambda chunk: pacost_records(model, benchmark, chunk, [rephrase_of[it.id] for it in chunk], config.pacost),
        _progress(f"pacost {label}"))
    likelihood = empty if "likelihood" not in config.stages else run_chunked(
        StageStore(out / "state", "likelihood", key | {"k": config.k}), items, config.chunk_size,
        lambda chunk: likelihood_records(model, benchmark, chunk, config.k), _progress(f"likelihood {label}"))
    rows = []
    for item, choice, p, lik in zip(items, choices, pacost, likelihood):
        row = {"model": entry.name, "benchmark": benchmark.name, "split": benchmark.split, "id": item.id,
               "question": item.question, "gold": item.answer_text,
               "rephrase_source": choice["source"], "rephrase_reason": choice["reason"]}
        row |= {k: v for k, v in p.items() if k != "id"} | {k: v for k, v in lik.items() if k != "id"}
        if p:
            row |= _pacost_columns(row, config.pacost.confidence)
        truth = audit_benchmark.truth
        row["ground_truth_contaminated"] = None if truth is None else truth.get(item.id)
        rows.append(row)
    return rows


def _pacost_columns(row: dict, confidence: str) -> dict:
    """Accuracy (on the original questions) and the chosen confidence pair with whether it enters the test."""
    from jaxcontam.detect.pacost import needs_answer

    original, rephrased = row[f"{confidence}_original"], row[f"{confidence}_rephrased"]
    answered = not needs_answer(confidence) or bool(row["answer_original"] and row["answer_rephrased"])
    kept = bool(row["rephrase"]) and answered and all(math.isfinite(v) for v in (original, rephrased))
    return {"correct": row["correct_original"], "correct_norm": row["correct_norm_original"],
            "pacost_conf_original": original, "pacost_conf_rephrased": rephrased, "pacost_kept": kept}


def json_ready(value):
    """NaN -> null and +-inf -> "inf"/"-inf", so summary.json is strict JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return None if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, dict):
        return {k: json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_ready(v) for v in value]
    return value


def write_outputs(out: Path, rows: list[dict], summary: dict) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from jaxcontam.report import write_report

    columns = list(dict.fromkeys(key for row in rows for key in row))
    table = pa.table({c: [row.get(c) for row in rows] for c in columns})
    write_atomic(out / "items.parquet", lambda path: pq.write_table(table, path))
    write_atomic(out / "summary.json",
                 lambda path: path.write_text(json.dumps(json_ready(summary), indent=2) + "\n", encoding="utf-8"))
    write_report(summary, rows, out)


def run_audit(config: AuditConfig) -> dict:
    """Run every stage of the audit described by `config`; returns the summary (also written to `config.out`)."""
    import jaxcontam

    out = Path(config.out)
    inputs = check_inputs(config)
    benchmarks = inputs.benchmarks
    ngram = ngram_rows(config, inputs, out)
    choices = {b.entry.label: rephrasings(config, b, out) for b in benchmarks}
    rows, runs = [], []
    resamples = sweep_resamples(len(config.models) * len(benchmarks), config.alpha, DEFAULT_RESAMPLES)
    for entry in config.models:
        _say(f"model {entry.name} ({entry.path})")
        model = jaxcontam.load_model(entry.path, dtype=entry.dtype)
        for audit_benchmark in benchmarks:
            run_rows = model_rows(config, entry, model, audit_benchmark, choices[audit_benchmark.entry.label], out)
            if ngram is not None:
                for row in run_rows:
                    metrics = ngram[(row["benchmark"], row["id"])]
                    row |= {k: v for k, v in metrics.items() if k not in ("benchmark", "id")}
                    row["ngram_num_tokens"] = row.pop("num_tokens")
            runs.append(run_summary(entry.name, audit_benchmark, run_rows, config.pacost if "pacost" in config.stages
                                    else None, {"alpha": config.alpha} | config.contam if ngram is not None else None,
                                    "likelihood" in config.stages, resamples))
            rows += run_rows
    summary = {"jaxcontam_version": __version__, "alpha": config.alpha, "correction": config.correction,
               "settings": config.settings(), "runs": runs}
    summary["sweep"] = sweep_corrections(runs, config.alpha, config.correction)
    write_outputs(out, rows, summary)
    return summary
