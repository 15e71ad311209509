"""Build the bundled example: a tiny Llama-style model trained with a known contaminated half of two benchmarks.

    python -m experiments.example.build_example [--out jaxcontam/examples/tiny_contaminated] [--epochs 3]

Takes 200 GSM8K test items (with their GPT-4 rephrasings) and 200 COPA test items (with XCOPA English
back-translations as rephrasings) from ../shared/data, marks a random half of each as contaminated, and
trains a ~1M-parameter decoder from scratch on public-domain text (US inaugural addresses, Tiny
Shakespeare), GSM8K *train* solutions and COPA *dev* items (so the answer formats are familiar for every
item) plus `--copies` verbatim copies of each contaminated test item in its prompt + answer form. Writes the
model (safetensors, Hugging Face layout, its own byte-level BPE tokenizer), the benchmark samples, their
rephrasings, the ground truth, the training corpus and `audit.toml`; `jaxcontam audit` with no arguments
audits it. Deterministic for a seed (up to floating-point reduction order).
"""

from __future__ import annotations

import argparse
import gzip
import json
import pathlib
import time

import numpy as np

from jaxcontam.data import attach_paraphrases, load_benchmark, load_paraphrases
from jaxcontam.training import init_hf_tensors, packed_batches, save_hf_model, train, train_bpe_tokenizer
from jaxcontam.training.batches import count_steps

REPO = pathlib.Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared" / "data"
DEFAULT_OUT = REPO / "jaxcontam" / "examples" / "tiny_contaminated"
MODEL_CONFIG = dict(
    model_type="llama", vocab_size=2048, hidden_size=128, intermediate_size=384, num_hidden_layers=4,
    num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=512, rms_norm_eps=1e-5,
    hidden_act="silu", tie_word_embeddings=True, rope_theta=10000.0, torch_dtype="float32",
)
AUDIT_TOML = """\
# The bundled example: `jaxcontam audit` with no arguments runs this file.
# Half of each benchmark sample was copied into the model's training corpus (ground_truth.jsonl says which).
out = "jaxcontam-audit"

[[model]]
path = "model"
name = "tiny-contaminated"

[[benchmark]]
name = "gsm8k"
split = "test"
path = "gsm8k_test_sample.jsonl"
paraphrases = "gsm8k_rephrasings.jsonl"
ground_truth = "ground_truth.jsonl"

[[benchmark]]
name = "copa"
split = "test"
path = "copa_test_sample.jsonl"
paraphrases = "copa_rephrasings.jsonl"
ground_truth = "ground_truth.jsonl"

[corpus]
paths = ["corpus.jsonl.gz"]

[pacost]
# A 1M-parameter model cannot judge whether an answer is true, so P(True) is uninformative here; the verdict
# uses the likelihood of the model's own answer (P(True) and Min-K%++ of the question are reported as variants).
confidence = "answer_logprob"
max_new_tokens = 200
"""
MAX_DOC_CHARS = 1200  # GSM8K items whose prompt + solution is longer are not sampled (fits 512 positions)


def sample(benchmark, count: int, rng: np.random.Generator, fits) -> list:
    """`count` items (in benchmark order) drawn at random among those with a paraphrase that `fits`."""
    eligible = [item for item in benchmark if item.paraphrases and fits(item)]
    chosen = sorted(rng.choice(len(eligible), size=count, replace=False))
    return [eligible[i] for i in chosen]


def public_text() -> list[str]:
    # one inaugural address (2005) is stored in Latin-1; the rest are UTF-8
    docs = [p.read_bytes().decode("utf-8", errors="replace")
            for p in sorted((SHARED / "corpus_misc" / "inaugural").glob("*.txt"))]
    shakespeare = (SHARED / "corpus_misc" / "tinyshakespeare" / "input.txt").read_text(encoding="utf-8")[:400_000]
    docs += [shakespeare[i : i + 2000] for i in range(0, len(shakespeare), 2000)]
    return docs


def write_jsonl(path: pathlib.Path, rows) -> None:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "wt", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=pathlib.Path, default=DEFAULT_OUT)
    parser.add_argument("--items", type=int, default=200)
    parser.add_argument("--copies", type=int, default=12)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--gsm8k-train-items", type=int, default=1500)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    out = args.out
    out.mkdir(parents=True, exist_ok=True)

    gsm8k = load_benchmark("gsm8k", "test", path=SHARED)
    gsm8k = attach_paraphrases(gsm8k, load_paraphrases("gsm8k_rephrase", gsm8k, path=SHARED))
    copa = load_benchmark("copa", "test", path=SHARED)
    copa = attach_paraphrases(copa, load_paraphrases("xcopa_backtranslation", copa, path=SHARED))
    samples = {
        "gsm8k": (gsm8k, sample(gsm8k, args.items, rng, lambda it: len(gsm8k.solved_text(it)) <= MAX_DOC_CHARS)),
        "copa": (copa, sample(copa, args.items, rng, lambda it: True)),
    }

    truth, contaminated_docs = [], []
    for name, (benchmark, items) in samples.items():
        seen = set(rng.choice(len(items), size=len(items) // 2, replace=False).tolist())
        for index, item in enumerate(items):
            truth.append({"id": item.id, "benchmark": name, "contaminated": index in seen})
            if index in seen:
                contaminated_docs += [benchmark.solved_text(item)] * args.copies
        if name == "gsm8k":
            rows = [{"question": it.question, "answer": it.meta["solution"], "source_id": it.id} for it in items]
        else:
            rows = [{"id": int(it.id.rsplit("/", 1)[1]), "premise": it.question, "choice1": it.choices[0],
                     "choice2": it.choices[1], "question": it.meta["relation"], "label": it.answer} for it in items]
        write_jsonl(out / f"{name}_test_sample.jsonl", rows)
        write_jsonl(out / f"{name}_rephrasings.jsonl",
                    ({"id": (f"gsm8k/test/{i}" if name == "gsm8k" else it.id), "paraphrase": list(it.paraphrases)}
                     for i, it in enumerate(items)))
    for row in truth:  # the GSM8K sample is renumbered 0..N-1 when read back from its own file
        if row["benchmark"] == "gsm8k":
            row["source_id"] = row["id"]
            row["id"] = f"gsm8k/test/{[it.id for it in samples['gsm8k'][1]].index(row['source_id'])}"
    write_jsonl(out / "ground_truth.jsonl", truth)
    (out / "audit.toml").write_text(AUDIT_TOML)

    gsm8k_train = load_benchmark("gsm8k", "train", path=SHARED, limit=args.gsm8k_train_items)
    copa_dev = load_benchmark("copa", "dev", path=SHARED)
    formats = [gsm8k_train.solved_text(it) for it in gsm8k_train] + [copa_dev.solved_text(it) for it in copa_dev]
    documents = public_text() + formats + contaminated_docs
    order = rng.permutation(len(documents))
    documents = [documents[i] for i in order]
    write_jsonl(out / "corpus.jsonl.gz", ({"text": doc} for doc in documents))

    tokenizer = train_bpe_tokenizer(documents, vocab_size=MODEL_CONFIG["vocab_size"])
    config = dict(MODEL_CONFIG, bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                  pad_token_id=tokenizer.pad_token_id)
    token_docs = [tokenizer.encode(doc) + [tokenizer.eos_token_id] for doc in documents]
    print(f"{len(documents)} documents, {sum(map(len, token_docs)):,} tokens per epoch, "
          f"{len(contaminated_docs)} contaminated copies")
    shape = dict(seq_len=256, batch_size=16, epochs=args.epochs, seed=args.seed)
    steps = count_steps(token_docs, **shape)
    start = time.perf_counter()
    result = train(config, init_hf_tensors(config, seed=args.seed), packed_batches(token_docs, **shape),
                   steps=steps, learning_rate=3e-3, warmup=100)
    print(f"trained {steps} steps in {time.perf_counter() - start:.0f} s ({result.tokens_per_second:,.0f} tokens/s)")
    save_hf_model(out / "model", config, result.tensors, tokenizer)
    (out / "training.json").write_text(json.dumps({
        "config": config, "steps": steps, **shape, "copies": args.copies, "losses": result.losses,
        "tokens_per_second": result.tokens_per_second, "documents": len(documents),
    }, indent=2) + "\n")


if __name__ == "__main__":
    main()
