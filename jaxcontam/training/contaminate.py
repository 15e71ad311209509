"""Continued training of a loaded model with benchmark items mixed into general text at a known dose.

`run_contamination(settings)` is `jaxcontam contaminate`: it loads any model jaxcontam loads (a Hugging Face
folder or a GGUF file, dequantised to float32) on the mesh, builds the mix (`training.contamination_mix`),
fully fine-tunes every weight with AdamW (`training.loop.fit`) and writes under `out`:

    model/               config.json, model.safetensors (float32), tokenizer files with the chat template
    ground_truth.jsonl   one row per item: id, benchmark, contaminated, copies, form, drawn (the audit's ground_truth)
    extra_items.jsonl    with `extra_items`: one row per extra item trained on (id, benchmark, split, copies, form)
    corpus/train.jsonl   every document trained on, one JSON line each ({"text", "chat", "item"}), copies included
    curve.jsonl          the training curve: step, loss, tokens seen
    audit_curve.jsonl    with `audit_every`: likelihood detectors' AUC on the live weights at those steps
    settings.json        every setting (seed included) and the mix's token counts
    run.json             steps, tokens/s of this process, seconds
    checkpoints/         orbax checkpoints: a rerun with the same settings resumes from the latest

`extra_items` trains on items that are not audited: every item of each (benchmark, split, first N, local path)
is mixed in `extra_copies` times (default: `copies`) in `form`, outside the ground truth (a format control:
`copies=0` with extra items of the same benchmarks trains their format and none of the audited items).
`data_seed` seeds the data order alone (default: `seed`, which also seeds the draw): a replicate of a run.

A rerun with other settings into the same folder is refused; one after the model was written does nothing. Local
data files given at other paths (a moved checkout) are the same settings when the mix built from them is the same.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from jaxcontam.data.roots import DEFAULT_ROOTS
from jaxcontam.errors import JaxcontamError
from jaxcontam.mesh import MeshSettings
from jaxcontam.storage import claim_output, output_folder, publish_tree
from jaxcontam.storage.appends import append_line, complete_lines

CURVE = "curve.jsonl"
AUDIT_CURVE = "audit_curve.jsonl"


@dataclasses.dataclass(frozen=True)
class ContaminationSettings:
    """What one run trains: `tokens` of general text from `corpus`, and a `fraction` of each benchmark's first
    `limit` items `copies` times in `form` (copies 0: the control arm). `paths` maps a benchmark to its local
    files (e.g. a folder of some MMLU subjects), `data_roots` where the others are looked for
    (`jaxcontam.data.roots`). `mesh`: where the model trains (the command parses `--mesh`, `--fsdp` and the
    attention path into it)."""

    model: str
    benchmarks: tuple[str, ...]
    corpus: str
    tokens: int
    out: str
    fraction: float = 0.5
    crossover: bool = False  # contaminate the items the draw leaves out: the twin of a run with the same seed
    copies: int = 1
    form: str = "verbatim"
    split: str | None = None
    limit: int | None = None
    paths: tuple[tuple[str, str], ...] = ()
    data_roots: tuple[Path, ...] = DEFAULT_ROOTS
    corpus_field: str = "text"
    seed: int = 0
    batch_size: int = 4
    seq_len: int = 512
    learning_rate: float = 1e-4
    warmup: float = 0.05  # share of the steps
    weight_decay: float = 0.0
    mesh: MeshSettings = MeshSettings()
    checkpoint_every: int = 25
    audit_every: int = 0
    # not audited, every item trained: (benchmark, split, first N, local path or None) each
    extra_items: tuple[tuple[str, str, int, str | None], ...] = ()
    extra_copies: int | None = None  # copies of each extra item (None: `copies`)
    data_seed: int | None = None  # seeds the data order alone (None: `seed`): a replicate with the same draw

    def identity(self) -> dict:
        """The settings that decide the result (a resumed run must match them)."""
        fields = {field.name: getattr(self, field.name) for field in dataclasses.fields(self)}
        for name in ("out", "data_roots", "checkpoint_every", "audit_every"):
            fields.pop(name)
        # recorded as the `--mesh` text and `--fsdp` flag the runs before MeshSettings kept, so they resume
        fields["mesh"], fields["fsdp"] = self.mesh.option_text(), self.mesh.fsdp
        fields["paths"] = [list(pair) for pair in self.paths]
        fields["benchmarks"] = list(self.benchmarks)
        if not self.crossover:  # runs recorded before the crossover option existed resume unchanged
            fields.pop("crossover")
        if self.extra_items:
            fields["extra_items"] = [list(spec) for spec in self.extra_items]
        else:  # nor do runs recorded before the extra items existed
            fields.pop("extra_items")
            fields.pop("extra_copies")
        if self.data_seed is None:  # or before the data-order seed existed
            fields.pop("data_seed")
        return fields

    @property
    def order_seed(self) -> int:
        """The seed of the data order: `data_seed`, else `seed`."""
        return self.seed if self.data_seed is None else self.data_seed

    def check(self) -> None:
        from jaxcontam.training.contamination_mix import FORMS

        problems = [
            (self.form not in FORMS, f"--form {self.form!r}: use one of {', '.join(FORMS)}"),
            (not 0.0 <= self.fraction <= 1.0, f"--fraction {self.fraction}: use a share in [0, 1]"),
            (self.copies < 0, f"--copies {self.copies}: use 0 (control arm) or more"),
            (self.tokens < 1, f"--tokens {self.tokens}: use a positive number of general-text tokens"),
            (not self.benchmarks, "no --benchmark given: name at least one"),
            (self.seq_len < 8 or self.batch_size < 1, "--seq-len >= 8 and --batch-size >= 1 are needed"),
            (self.checkpoint_every < 1, "--checkpoint-every must be >= 1 step"),
            (self.extra_copies is not None and self.extra_copies < 0, "--extra-copies must be >= 0"),
            (any(limit < 1 for _, _, limit, _ in self.extra_items), "--extra-items takes N >= 1 items"),
        ]
        for bad, message in problems:
            if bad:
                raise JaxcontamError(message)
        unknown = sorted({name for name, _ in self.paths} - set(self.benchmarks))
        if unknown:
            raise JaxcontamError(f"--path {unknown[0]}=...: no --benchmark {unknown[0]} is given")


def _write_jsonl(path: Path, rows) -> None:
    temporary = path.with_suffix(".partial")
    with open(temporary, "w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    temporary.replace(path)


def _read_jsonl(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in complete_lines(path.read_text(encoding="utf-8"))]  # less a torn tail


def _data_paths_ignored(identity: dict) -> dict:
    """`identity` without where the local data files lie: the benchmarks named, not their folders."""
    fields = dict(identity)
    fields["paths"] = sorted(name for name, _ in fields.get("paths", []))
    if "extra_items" in fields:
        fields["extra_items"] = [list(spec[:3]) for spec in fields["extra_items"]]
    return fields


def _recorded(out: Path, settings: ContaminationSettings) -> Literal["same", "moved"] | None:
    """What `out` holds: None (nothing yet), "same" (a run of these settings), or "moved" (a run of these settings
    with its local data files given at other paths, e.g. a moved checkout: the training mix built from the files
    now decides whether it resumes). Another run is an error."""
    path = out / "settings.json"
    if not path.exists():
        return None
    recorded, current = json.loads(path.read_text())["settings"], settings.identity()
    if recorded == current:
        return "same"
    if _data_paths_ignored(recorded) == _data_paths_ignored(current):
        return "moved"
    changed = sorted(k for k in set(recorded) | set(current) if recorded.get(k) != current.get(k))
    raise JaxcontamError(
        f"{out} holds a run with other settings ({', '.join(changed)} differ); resume it with "
        "the same options, or pass a new --out"
    )


def _benchmarks(settings: ContaminationSettings):
    from jaxcontam.data import load_benchmark
    from jaxcontam.training.contamination_mix import with_paraphrases

    paths, roots = dict(settings.paths), settings.data_roots
    return [
        with_paraphrases(
            load_benchmark(name, split=settings.split, path=paths.get(name), limit=settings.limit, roots=roots), roots
        )
        for name in settings.benchmarks
    ]


def _extra_benchmarks(settings: ContaminationSettings):
    from jaxcontam.data import load_benchmark
    from jaxcontam.training.contamination_mix import with_paraphrases

    roots = settings.data_roots
    return [
        with_paraphrases(load_benchmark(name, split=split, path=path, limit=limit, roots=roots), roots)
        for name, split, limit, path in settings.extra_items
    ]


def _extra_documents(settings: ContaminationSettings, audited: set[str], tokenizer, log):
    """(documents, rows of extra_items.jsonl) of the extra items: every one `extra_copies` times in `form`."""
    import numpy as np

    from jaxcontam.training.contamination_mix import injected_documents

    copies = settings.copies if settings.extra_copies is None else settings.extra_copies
    documents, rows = [], []
    for benchmark in _extra_benchmarks(settings):
        shared = [item.id for item in benchmark if item.id in audited]
        if shared:
            raise JaxcontamError(
                f"--extra-items {benchmark.name}:{benchmark.split}: {shared[0]} is an audited item too; extra items "
                "must be other items (another split, later items, other files)"
            )
        documents += injected_documents(
            benchmark, np.ones(len(benchmark), bool), copies=copies, form=settings.form, tokenizer=tokenizer
        )
        rows += [
            {
                "id": item.id,
                "benchmark": benchmark.name,
                "split": benchmark.split,
                "copies": copies,
                "form": settings.form,
            }
            for item in benchmark
        ]
        log(f"{benchmark.name} ({benchmark.split}): {len(benchmark)} extra items, not audited, {copies} copies each")
    return documents, rows


def _mix(settings: ContaminationSettings, tokenizer, log):
    """(documents, their ids, ground-truth rows, extra-item rows, token counts) of the run."""
    from jaxcontam.data.corpus import open_corpus
    from jaxcontam.training.contamination_mix import (
        draw_contaminated,
        encode_document,
        general_documents,
        ground_truth_rows,
        injected_documents,
    )

    documents, truth = [], []
    for benchmark in _benchmarks(settings):
        drawn = draw_contaminated(benchmark, settings.fraction, settings.seed)
        if settings.crossover:
            drawn = ~drawn
        documents += injected_documents(
            benchmark, drawn, copies=settings.copies, form=settings.form, tokenizer=tokenizer
        )
        truth += ground_truth_rows(benchmark, drawn, settings.copies, settings.form)
        log(
            f"{benchmark.name} ({benchmark.split}): {int(drawn.sum())} of {len(benchmark)} items drawn, "
            f"{settings.copies} cop{'y' if settings.copies == 1 else 'ies'} each as {settings.form}"
        )
    extra, extra_rows = _extra_documents(settings, {row["id"] for row in truth}, tokenizer, log)
    documents += extra
    injected_ids = [encode_document(tokenizer, d.text, d.chat) for d in documents]
    too_long = [(d.item_id, len(ids)) for d, ids in zip(documents, injected_ids) if len(ids) > settings.seq_len]
    if too_long:
        raise JaxcontamError(
            f"{too_long[0][0]} is {too_long[0][1]} tokens in form {settings.form}, longer than "
            f"--seq-len {settings.seq_len}: it would be trained in pieces; raise --seq-len"
        )
    general, general_ids = general_documents(
        open_corpus(settings.corpus, field=settings.corpus_field), tokenizer, settings.tokens
    )
    counts = {
        "general_tokens": sum(map(len, general_ids)),
        "benchmark_tokens": sum(map(len, injected_ids)),
        "general_documents": len(general),
        "benchmark_documents": len(documents),
    }
    if extra_rows:
        counts["extra_items"] = len(extra_rows)
    return general + documents, general_ids + injected_ids, truth, extra_rows, counts


class _Curve:
    """The training curve, appended as the run logs; rows past a resumed checkpoint are dropped first."""

    def __init__(self, path: Path, resumed: int, tokens_per_step: int):
        self.path, self.tokens_per_step = path, tokens_per_step
        _write_jsonl(path, [row for row in _read_jsonl(path) if row["step"] <= resumed])

    def __call__(self, step: int, loss: float) -> None:
        append_line(self.path, json.dumps({"step": step, "loss": loss, "tokens": step * self.tokens_per_step}))


def _audit_callback(model, benchmarks, truth: list[dict], path: Path, resumed: int, log):
    """Likelihood detectors on the live weights, each one's AUC against the truth appended to `path`."""
    from jaxcontam.detect.audit_callback import AuditCallback, AuditSettings, AuditTarget

    labels = {row["id"]: row["contaminated"] for row in truth}
    targets = [AuditTarget(b, (None,) * len(b), tuple(labels[item.id] for item in b)) for b in benchmarks]
    _write_jsonl(path, [row for row in _read_jsonl(path) if row["step"] <= resumed])
    callback = AuditCallback(
        lambda params: dataclasses.replace(model, params=params),
        targets,
        AuditSettings(detectors=("likelihood",)),
        log=log,
    )

    def audit(step: int, params) -> None:
        results = callback(step, params)
        assert results is not None  # every=1: every step given is audited
        for name, result in results.items():
            for detector, summary in (result.likelihood or {}).items():
                row = {"step": step, "benchmark": name, "detector": detector, "auc": summary.auc}
                append_line(path, json.dumps(row | {"pvalue": summary.pvalue}))

    return audit


def run_contamination(settings: ContaminationSettings, log: Callable[[str], None] = print) -> Path:
    """Train and write the run (see the module docstring); returns the model folder."""
    from jaxcontam.training.batches import count_steps
    from jaxcontam.training.hf_export import save_hf_folder, source_config

    settings.check()
    claim_output(settings.out, "contaminate")
    out = output_folder(settings.out)  # a bucket URL: a local mirror, filled from the bucket, uploaded as it grows
    model_dir = out / "model"
    recorded = _recorded(out, settings)
    finished = f"{settings.out}: this run is finished (its model in model/); nothing to do"
    if recorded == "same" and (model_dir / "config.json").exists():
        log(finished)
        return model_dir
    started = time.perf_counter()
    model, spec, mesh = _training_model(settings)
    documents, ids, truth, extra_rows, counts = _mix(settings, model.tokenizer, log)
    steps = count_steps(
        ids, seq_len=settings.seq_len, batch_size=settings.batch_size, seed=settings.order_seed, pad_last=True
    )
    digest = hashlib.sha256(json.dumps([d.to_row() for d in documents]).encode()).hexdigest()
    if (out / "settings.json").exists() and json.loads((out / "settings.json").read_text()).get("mix") != digest:
        raise JaxcontamError(
            f"{settings.out}: the training mix built now differs from the one its checkpoints were trained "
            "on (same settings, other jaxcontam code or data files); pass a new --out"
        )
    if recorded == "moved":
        log(f"{settings.out}: recorded with its data files at other paths; the mix built from these is the same")
        if (model_dir / "config.json").exists():
            log(finished)
            return model_dir
    _write_mix(out, settings, documents, truth, extra_rows, counts | {"steps": steps, "mix": digest})
    log(
        f"{counts['general_tokens']:,} general + {counts['benchmark_tokens']:,} benchmark tokens in "
        f"{len(documents):,} documents: {steps} steps of {settings.batch_size} x {settings.seq_len} on mesh "
        f"data={mesh.shape['data']} x model={mesh.shape['model']}{' (fsdp)' if settings.mesh.fsdp else ''}"
    )
    result, resumed = _train(settings, model, spec, mesh, ids, truth, steps, out, log)
    save_hf_folder(model_dir, source_config(settings.model), result.weights, spec, model.tokenizer)
    run = {
        "steps": steps,
        "steps_this_process": result.steps_run,
        "resumed_from": resumed,
        "tokens_per_second": result.tokens_per_second,
        "seconds": time.perf_counter() - started,
    }
    (out / "run.json").write_text(json.dumps(run, indent=2) + "\n")
    publish_tree(out)
    log(f"wrote {settings.out.rstrip('/')}/model ({result.tokens_per_second:,.0f} tokens/s)")
    return model_dir


def _training_model(settings: ContaminationSettings):
    """The model to train, laid out on the run's mesh, its spec and the mesh; refused when the batch does not split
    over the mesh or the model has no tokenizer."""
    import jaxcontam
    from jaxcontam.models.spec import ModelSpec

    layout = settings.mesh
    mesh = layout.build()
    if settings.batch_size % mesh.shape["data"]:
        raise JaxcontamError(
            f"--batch-size {settings.batch_size} does not split over the mesh's "
            f"{mesh.shape['data']} data shards: use a multiple of {mesh.shape['data']}"
        )
    model = jaxcontam.load_model(settings.model, mesh=mesh, fsdp=layout.fsdp, attention=layout.attention)
    spec = model.config
    assert isinstance(spec, ModelSpec)  # load_model builds jaxcontam's own decoders
    if model.tokenizer is None:
        raise JaxcontamError(
            f"{settings.model}: the model has no tokenizer, so no text can be trained on; add "
            "tokenizer.json beside the weights"
        )
    return model, spec, mesh


def _write_mix(out: Path, settings: ContaminationSettings, documents, truth, extra_rows, counts: dict) -> None:
    """The training corpus, the ground truth, the extra items and settings.json (with `counts`: the mix's token
    counts, its steps and digest), published as they are written."""
    import jaxcontam

    out.mkdir(parents=True, exist_ok=True)
    (out / "corpus").mkdir(exist_ok=True)
    _write_jsonl(out / "corpus" / "train.jsonl", (d.to_row() for d in documents))
    _write_jsonl(out / "ground_truth.jsonl", truth)
    if extra_rows:
        _write_jsonl(out / "extra_items.jsonl", extra_rows)
    record = {
        "settings": settings.identity(),
        "steps": counts["steps"],
        **{k: v for k, v in counts.items() if k not in ("steps", "mix")},
        "mix": counts["mix"],
        "jaxcontam": jaxcontam.__version__,
        "general_to_benchmark": counts["general_tokens"] / counts["benchmark_tokens"]
        if counts["benchmark_tokens"]
        else None,
    }
    (out / "settings.json").write_text(json.dumps(record, indent=2) + "\n")
    publish_tree(out)


def _train(settings: ContaminationSettings, model, spec, mesh, ids, truth, steps: int, out: Path, log):
    """Fit the model on the packed mix from its latest checkpoint (the audit curve's callback on the live weights
    when asked); the fit's result and the step it resumed from."""
    from jaxcontam.mesh import batch_sharding
    from jaxcontam.training.batches import packed_batches
    from jaxcontam.training.checkpoints import TrainCheckpoints
    from jaxcontam.training.loop import fit

    checkpoints = TrainCheckpoints(
        out / "checkpoints", every=settings.checkpoint_every, on_saved=lambda: publish_tree(out)
    )
    resumed = checkpoints.latest_step() or 0
    callback = None
    if settings.audit_every:
        callback = _audit_callback(model, _benchmarks(settings), truth, out / AUDIT_CURVE, resumed, log)
        if not resumed:
            callback(0, model.params)
    result = fit(
        spec,
        model.params,
        packed_batches(
            ids, seq_len=settings.seq_len, batch_size=settings.batch_size, seed=settings.order_seed, pad_last=True
        ),
        steps=steps,
        learning_rate=settings.learning_rate,
        warmup=max(1, math.ceil(settings.warmup * steps)),
        weight_decay=settings.weight_decay,
        log_every=max(1, min(10, steps // 20)),
        log=log,
        on_log=_Curve(out / CURVE, resumed, settings.batch_size * settings.seq_len),
        callback=callback,
        callback_every=settings.audit_every,
        checkpoints=checkpoints,
        batch_sharding=batch_sharding(mesh),
    )
    return result, resumed
