"""Controlled-contamination experiments: train with known contamination, then ask every detector to find it.

    python -m experiments.contamination.run --grid experiments/contamination/grid_cpu.toml [--out DIR]

1. Base (once, resumable from orbax checkpoints): a byte-level BPE tokenizer and a small Llama-style model
   pretrained on public text (US inaugural addresses, Tiny Shakespeare) plus GSM8K *train* solutions and COPA
   *dev* items, so answer formats are known and no audited item is seen.
2. Cells (rate, copies, form, decontaminate, seed): starting from the base weights, fine-tune on
   `replay_tokens` of base text plus `copies` copies of a `rate` share of each audited benchmark in `form`
   (`jaxcontam.training.injection`). With `decontaminate`, the fine-tune stream first goes through
   jaxcontam's `DecontaminationFilter` (the control arm). An `AuditCallback` runs the likelihood detectors
   on the live weights during the fine-tune; at the end the full audit runs in process: PaCoST (the chosen
   confidence and its variants), Min-K%++ and other likelihood AUCs against the truth, the exchangeability test,
   and ConTAM's n-gram metrics over everything the model was trained on, with EPG at the selected threshold.
3. Each finished cell is written to DIR/cells/<cell>.json (a rerun skips it); `report.py` makes the tables.
"""

from __future__ import annotations

import argparse
import gzip
import json
import pathlib
import sys
import time
import tomllib

import numpy as np

from experiments.example.build_example import SHARED, public_text, sample
from jaxcontam.data import attach_paraphrases, load_benchmark, load_paraphrases
from jaxcontam.detect.exchangeability import ExchangeabilitySettings
from jaxcontam.detect.pacost.settings import PacostSettings
from jaxcontam.detect.rephrase import choose_attached
from jaxcontam.stats import separation
from jaxcontam.training import init_hf_tensors, packed_batches, save_hf_model, train, train_bpe_tokenizer
from jaxcontam.training.audit_callback import (
    AuditSettings,
    AuditTarget,
    audit_model,
    hf_weights_callback,
    model_from_weights,
)
from jaxcontam.training.batches import count_steps
from jaxcontam.training.checkpoints import TrainCheckpoints
from jaxcontam.training.injection import ITEM_TEXT_FORMS, choose_contaminated, injected_documents, item_text

DEFAULT_OUT = pathlib.Path(__file__).resolve().parent / "results"
PARAPHRASES = {"gsm8k": "gsm8k_rephrase", "copa": "xcopa_backtranslation"}


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def write_jsonl_gz(path: pathlib.Path, texts: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        for text in texts:
            handle.write(json.dumps({"text": text}, ensure_ascii=False) + "\n")


def write_json(path: pathlib.Path, value) -> None:
    """Atomic: a cell file exists only once complete, so a killed run never leaves a half-written result."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial")
    partial.write_text(json.dumps(value, indent=1, default=float) + "\n")
    partial.replace(path)


def audited_benchmarks(data: dict, shared: pathlib.Path) -> list:
    """The audited samples: `items` GSM8K test items (short enough) and `items` COPA test items, each with
    an attached rephrasing, drawn once with the data seed."""
    rng = np.random.default_rng(data["seed"])
    chosen = []
    for name in ("gsm8k", "copa"):
        benchmark = load_benchmark(name, "test", path=shared)
        benchmark = attach_paraphrases(benchmark, load_paraphrases(PARAPHRASES[name], benchmark, path=shared))
        fits = (
            (lambda it, b=benchmark: len(b.solved_text(it)) <= data["gsm8k_max_chars"])
            if name == "gsm8k"
            else (lambda it: True)
        )
        chosen.append(benchmark.replace_items(sample(benchmark, data["items"], rng, fits)))
    return chosen


def base_documents(data: dict, shared: pathlib.Path) -> list[str]:
    gsm8k_train = load_benchmark("gsm8k", "train", path=shared, limit=data["gsm8k_train_items"])
    copa_dev = load_benchmark("copa", "dev", path=shared)
    docs = (
        public_text()
        + [gsm8k_train.solved_text(it) for it in gsm8k_train]
        + [copa_dev.solved_text(it) for it in copa_dev]
    )
    return [docs[i] for i in np.random.default_rng(data["seed"]).permutation(len(docs))]


class Experiment:
    """Everything shared by the cells: samples, rephrasings, tokenizer, base corpus and base weights."""

    def __init__(self, grid: dict, out: pathlib.Path, shared: pathlib.Path):
        self.grid, self.out = grid, out
        self.benchmarks = audited_benchmarks(grid["data"], shared)
        self.rephrasings = {b.name: tuple(c.rephrase for c in choose_attached(b.items)) for b in self.benchmarks}
        self.base_docs = base_documents(grid["data"], shared)
        self.tokenizer = self._tokenizer()
        self.config = dict(
            grid["model"],
            bos_token_id=self.tokenizer.bos_token_id,
            eos_token_id=self.tokenizer.eos_token_id,
            pad_token_id=self.tokenizer.pad_token_id,
        )
        self.base_tokens = self.encode(self.base_docs)
        self.base_weights = self._base()

    def encode(self, texts: list[str]) -> list[list[int]]:
        eos = self.tokenizer.eos_token_id
        return [ids + [eos] for ids in self.tokenizer(texts)["input_ids"]] if texts else []

    def _tokenizer(self):
        from transformers import PreTrainedTokenizerFast

        where = self.out / "base" / "tokenizer"
        if (where / "tokenizer.json").is_file():
            return PreTrainedTokenizerFast.from_pretrained(str(where))
        # trained on the base text and every audited item in every form, so all cells tokenize items alike
        texts = self.base_docs + [
            item_text(b, it, form) for b in self.benchmarks for it in b for form in ITEM_TEXT_FORMS
        ]
        tokenizer = train_bpe_tokenizer(texts, vocab_size=self.grid["model"]["vocab_size"])
        tokenizer.save_pretrained(str(where))
        return tokenizer

    def _base(self) -> dict:
        base = self.grid["base"]
        shape = dict(seq_len=base["seq_len"], batch_size=base["batch_size"], seed=self.grid["data"]["seed"])
        per_epoch = count_steps(self.base_tokens, **shape)
        epochs = -(-base["steps"] // per_epoch)
        checkpoints = TrainCheckpoints(self.out / "base" / "checkpoints", every=base["checkpoint_every"])
        if checkpoints.latest_step() != base["steps"]:
            log(
                f"base: {len(self.base_docs)} documents, {sum(map(len, self.base_tokens)):,} tokens per epoch, "
                f"{base['steps']} steps"
            )
            start = time.perf_counter()
            result = train(
                self.config,
                init_hf_tensors(self.config, seed=self.grid["data"]["seed"]),
                packed_batches(self.base_tokens, epochs=epochs, **shape),
                steps=base["steps"],
                learning_rate=base["learning_rate"],
                warmup=base["warmup"],
                checkpoints=checkpoints,
                log=log,
            )
            save_hf_model(self.out / "base" / "model", self.config, result.tensors, self.tokenizer)
            write_json(
                self.out / "base" / "training.json",
                {
                    "seconds": time.perf_counter() - start,
                    "losses": result.losses,
                    "steps": base["steps"],
                    "tokens_per_second": result.tokens_per_second,
                },
            )
        return checkpoints.restore_weights(base["steps"])

    def targets(self, masks: dict | None) -> list[AuditTarget]:
        return [
            AuditTarget(b, self.rephrasings[b.name], None if masks is None else tuple(masks[b.name].tolist()))
            for b in self.benchmarks
        ]

    def settings(self, detectors=("likelihood", "pacost", "exchangeability")) -> AuditSettings:
        audit = self.grid["audit"]
        pacost = PacostSettings(confidence=audit["confidence"], max_new_tokens=audit["max_new_tokens"])
        exchangeability = ExchangeabilitySettings(chunks=audit["chunks"], permutations=audit["permutations"])
        return AuditSettings(
            detectors=tuple(detectors), detector_settings={"pacost": pacost, "exchangeability": exchangeability}
        )


def expand_cells(arms: list[dict]) -> list[dict]:
    """Every (rate, copies, form, decontaminate, seed) of every arm once, seed-major so early cells span arms."""
    cells = {}
    for arm in arms:
        for seed in arm["seeds"]:
            for rate in arm["rates"]:
                for copies in arm["copies"]:
                    for form in arm["forms"]:
                        cell = {
                            "rate": rate,
                            "copies": 0 if rate == 0 else copies,
                            "form": form,
                            "decontaminate": bool(arm.get("decontaminate", False)),
                            "seed": seed,
                        }
                        key = cell_id(cell)
                        cells.setdefault(key, cell | {"id": key, "arms": []})["arms"].append(arm["name"])
    return sorted(cells.values(), key=lambda c: (c["seed"], c["decontaminate"], c["rate"], c["copies"], c["form"]))


def cell_id(cell: dict) -> str:
    form = "none" if cell["rate"] == 0 else cell["form"]
    tag = "-decon" if cell["decontaminate"] else ""
    return f"rate{cell['rate']:g}-copies{cell['copies']}-{form}{tag}-seed{cell['seed']}"


def decontaminate(experiment: Experiment, docs: list[list[int]], n: int) -> tuple[list[list[int]], np.ndarray]:
    """The documents the decontamination filter lets through, and which ones it dropped."""
    from jaxcontam.ngram.audit import NgramSettings, build_tables
    from jaxcontam.ngram.filter import DecontaminationFilter
    from jaxcontam.ngram.units import load_units

    units = load_units(experiment.out / "base" / "tokenizer")
    table = build_tables(experiment.benchmarks, units, NgramSettings(n=n, normalize="none"))["raw"]
    filter_ = DecontaminationFilter(table)
    dropped = np.array([filter_.contains(doc) for doc in docs], bool)
    return [doc for doc, drop in zip(docs, dropped) if not drop], dropped


def ngram_evidence(experiment: Experiment, corpus_files: list[pathlib.Path], counts_dir: pathlib.Path, n: int) -> dict:
    """ConTAM metrics of every audited item over everything the cell's model was trained on."""
    from jaxcontam.data.corpus import open_corpus
    from jaxcontam.ngram.audit import NgramSettings, ensure_counts, item_rows
    from jaxcontam.ngram.units import load_units

    units = load_units(experiment.out / "base" / "tokenizer")
    settings = NgramSettings(n=n)
    corpora = [(str(f), open_corpus(f)) for f in corpus_files]
    counted, _ = ensure_counts(experiment.benchmarks, corpora, units, settings, counts_dir)
    rows = item_rows(experiment.benchmarks, counted, units, settings)
    return {(r["benchmark"], r["id"]): r for r in rows}


def contam_evidence(rows: list[dict]) -> dict:
    """ConTAM's verdict and, per metric, its max-z verdict as the audit states it (`status`, `pvalue`,
    `significant`: null when no test ran, schema 2) with, under `separation`, how well the metric separates the
    known-contaminated items (AUC, Mann-Whitney p: a different test, kept apart so that neither test's p-value is
    read as the other's verdict; cells written before this kept the separation's keys at the metric's level)."""
    from jaxcontam.detect.contam import contam_result
    from jaxcontam.ngram.audit import METRICS

    summary = contam_result(rows).to_dict()
    result = {k: v for k, v in summary.items() if k != "metrics"}
    result["per_metric"] = {m: {k: v for k, v in summary["metrics"][m].items() if k != "curve"} for m in METRICS}
    if rows[0]["ground_truth_contaminated"] is not None:
        labels = [r["ground_truth_contaminated"] for r in rows]
        for metric in METRICS:
            result["per_metric"][metric]["separation"] = separation([r[metric] for r in rows], labels)
    return result


def run_cell(experiment: Experiment, cell: dict) -> dict:
    grid = experiment.grid
    rng = np.random.default_rng(
        [cell["seed"], int(cell["rate"] * 1000), cell["copies"], ITEM_TEXT_FORMS.index(cell["form"])]
    )
    masks, injected = {}, []
    for benchmark in experiment.benchmarks:
        masks[benchmark.name] = choose_contaminated(len(benchmark), cell["rate"], rng)
        injected += injected_documents(
            benchmark, list(benchmark), masks[benchmark.name], copies=cell["copies"], form=cell["form"]
        )
    replay, total = [], 0
    for index in rng.permutation(len(experiment.base_docs)):
        if total >= grid["finetune"]["replay_tokens"]:
            break
        replay.append(int(index))
        total += len(experiment.base_tokens[index])
    docs = [experiment.base_tokens[i] for i in replay] + experiment.encode(injected)
    texts = [experiment.base_docs[i] for i in replay] + injected
    record = {
        "cell": cell,
        "n_injected_documents": len(injected),
        "n_replay_documents": len(replay),
        "contaminated_items": {name: int(m.sum()) for name, m in masks.items()},
    }
    if cell["decontaminate"]:
        docs, dropped = decontaminate(experiment, docs, grid["audit"]["ngram_n"])
        texts = [t for t, d in zip(texts, dropped) if not d]
        record["filter"] = {
            "dropped_injected": int(dropped[len(replay) :].sum()),
            "dropped_replay": int(dropped[: len(replay)].sum()),
        }
    corpus_file = experiment.out / "cells" / cell["id"] / "finetune.jsonl.gz"
    write_jsonl_gz(corpus_file, texts)

    base, finetune = grid["base"], grid["finetune"]
    shape = dict(seq_len=base["seq_len"], batch_size=base["batch_size"], seed=cell["seed"])
    steps = count_steps(docs, **shape)
    callback = hf_weights_callback(
        experiment.config, experiment.tokenizer, experiment.targets(masks), experiment.settings(["likelihood"]), log=log
    )
    start = time.perf_counter()
    result = train(
        experiment.config,
        experiment.base_weights,
        packed_batches(docs, **shape),
        steps=steps,
        learning_rate=finetune["learning_rate"],
        warmup=finetune["warmup"],
        log=log,
        log_every=steps,
        callback=callback,
        callback_every=max(1, steps // finetune["audits"]),
    )
    record["training"] = {
        "steps": steps,
        "tokens": steps * base["seq_len"] * base["batch_size"],
        "seconds": time.perf_counter() - start,
        "final_loss": result.losses[-1],
    }
    record["in_training"] = [
        {
            "step": h["step"],
            "seconds": h["seconds"],
            "min_k_plus_plus_auc": {name: r.likelihood["min_k_plus_plus"].auc for name, r in h["results"].items()},
        }
        for h in callback.history
    ]

    start = time.perf_counter()
    model = model_from_weights(experiment.config, result.tensors, experiment.tokenizer)
    audit = audit_model(model, experiment.targets(masks), experiment.settings())
    record["audit_seconds"] = time.perf_counter() - start
    start = time.perf_counter()
    evidence = ngram_evidence(
        experiment,
        [experiment.out / "base" / "corpus.jsonl.gz", corpus_file],
        experiment.out / "cells" / cell["id"] / "counts",
        grid["audit"]["ngram_n"],
    )
    record["ngram_seconds"] = time.perf_counter() - start
    record["benchmarks"] = {}
    for name, result in audit.items():
        rows = [
            row | {k: v for k, v in evidence[(name, row["id"])].items() if k not in ("benchmark", "id", "span_text")}
            for row in result.rows
        ]
        record["benchmarks"][name] = result.to_dict() | {"contam": contam_evidence(rows), "seconds": result.seconds}
    return record


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--grid", type=pathlib.Path, required=True, help="grid TOML (see grid_cpu.toml)")
    parser.add_argument("--out", type=pathlib.Path, default=DEFAULT_OUT)
    parser.add_argument("--shared", type=pathlib.Path, default=SHARED, help="the shared data folder")
    parser.add_argument("--only", nargs="*", default=None, help="run only these cell ids")
    args = parser.parse_args()
    grid = tomllib.loads(args.grid.read_text())
    args.out.mkdir(parents=True, exist_ok=True)
    experiment = Experiment(grid, args.out, args.shared)
    write_jsonl_gz(args.out / "base" / "corpus.jsonl.gz", experiment.base_docs)
    cells = [c for c in expand_cells(grid["arm"]) if args.only is None or c["id"] in args.only]
    for number, cell in enumerate(cells, start=1):
        path = args.out / "cells" / f"{cell['id']}.json"
        if path.exists():
            log(f"[{number}/{len(cells)}] {cell['id']}: done in an earlier run")
            continue
        log(f"[{number}/{len(cells)}] {cell['id']} ({', '.join(cell['arms'])})")
        start = time.perf_counter()
        record = run_cell(experiment, cell)
        record["seconds"] = time.perf_counter() - start
        write_json(path, record)
        log(f"[{number}/{len(cells)}] {cell['id']}: {record['seconds']:.0f} s")


if __name__ == "__main__":
    main()
