"""Per-choice log-likelihoods on COPA validation: jaxcontam against lm-eval 0.4.13's `hf` model, SmolLM2-135M-Instruct.

lm-eval side: its `copa` task (installed YAML and utils) served SuperGLUE's validation rows (requests.py:
COPA ids 401-500 in the choice order of XCOPA's labels), its requests run through `HFLM(pretrained=<folder>,
gguf_file=...)` (torch transformers dequantising the shared Q4_1 GGUF to float32) and `loglikelihood`.
jaxcontam side: `load_benchmark("copa", split="validation")`, `jaxcontam.load_model(<gguf>)`, the choices scored as
`answer_items` scores them (`encode_pair`, the engine's packed scoring). Reports whether the strings and token ids
are identical, the largest |delta log-lik|, and how many items' acc / acc_norm choices differ.

  python -m experiments.lm_eval_parity.copa_smollm2     # 6.5 min on 2 CPU cores; writes results/copa_smollm2.json
  python -m experiments.lm_eval_parity.copa_smollm2 --out other.json   # tests/test_lm_eval_tasks.py (slow)
"""

from __future__ import annotations

import argparse
import json
import pathlib
import time

import numpy as np

from experiments.lm_eval_parity.requests import (
    SMOLLM2,
    hf_rows,
    jaxcontam_ids,
    jaxcontam_requests,
    lm_eval_hf_encoder,
    lm_eval_requests,
    with_ids,
)

ROOT = pathlib.Path(__file__).resolve().parents[2]

DATA = ROOT.parent / "shared" / "data"
OUT = pathlib.Path(__file__).resolve().parent / "results" / "copa_smollm2.json"


def lm_eval_loglikelihoods(requests: list[dict]) -> list[list[float]]:
    """lm-eval's `hf` model's log-likelihood of each continuation (its own batching, sorting and truncation)."""
    from lm_eval.api.instance import Instance
    from lm_eval.models.huggingface import HFLM

    model = HFLM(pretrained=str(DATA / SMOLLM2[0]), gguf_file=SMOLLM2[1], dtype="float32", device="cpu",
                 batch_size=8)
    instances = [Instance("loglikelihood", doc={}, arguments=(r["context"], c), idx=i)
                 for r in requests for i, c in enumerate(r["continuations"])]
    results = iter(ll for ll, _ in model.loglikelihood(instances, disable_tqdm=True))
    return [[next(results) for _ in r["continuations"]] for r in requests]


def jaxcontam_loglikelihoods(benchmark) -> tuple[list[list[float]], object]:
    import jaxcontam
    from jaxcontam.detect.answering import _continuation_logprobs, encode_pair

    model = jaxcontam.load_model(str(DATA / SMOLLM2[0] / SMOLLM2[1]))
    pairs = [encode_pair(model.tokenizer, benchmark.prompt(item), benchmark.continuation(item, i))
             for item in benchmark for i in range(len(item.choices))]
    sums = iter(float(s.sum()) for s in _continuation_logprobs(model, pairs))
    return [[next(sums) for _ in item.choices] for item in benchmark], model.tokenizer


def main() -> None:
    from jaxcontam.data import load_benchmark

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=pathlib.Path, default=OUT)
    out = parser.parse_args().out

    start = time.time()
    requests = lm_eval_requests("copa", hf_rows(DATA, "copa", 100), "validation")
    benchmark = load_benchmark("copa", split="validation", path=DATA)
    strings_equal = jaxcontam_requests(benchmark) == requests
    theirs = lm_eval_loglikelihoods(requests)
    ours, tokenizer = jaxcontam_loglikelihoods(benchmark)
    encoder = lm_eval_hf_encoder(DATA)
    ids_equal = all(jaxcontam_ids(tokenizer, r) == with_ids(encoder, r) for r in requests)
    deltas = np.abs(np.concatenate([np.subtract(o, t) for o, t in zip(ours, theirs)]))
    lengths = [[len(c.removeprefix(" ")) for c in r["continuations"]] for r in requests]  # doc_to_choice text
    acc = sum(int(np.argmax(o)) != int(np.argmax(t)) for o, t in zip(ours, theirs))
    acc_norm = sum(int(np.argmax(np.divide(o, n))) != int(np.argmax(np.divide(t, n)))
                   for o, t, n in zip(ours, theirs, lengths))
    result = {
        "benchmark": "copa validation (SuperGLUE), 100 items, 200 choices", "model": SMOLLM2[1],
        "strings_identical": strings_equal, "token_ids_identical": ids_equal,
        "max_abs_delta_loglik": float(deltas.max()), "mean_abs_delta_loglik": float(deltas.mean()),
        "acc_choices_differing": acc, "acc_norm_choices_differing": acc_norm,
        "acc_jaxcontam": float(np.mean([int(np.argmax(o)) == r["gold"] for o, r in zip(ours, requests)])),
        "acc_lm_eval": float(np.mean([int(np.argmax(t)) == r["gold"] for t, r in zip(theirs, requests)])),
        "seconds": round(time.time() - start, 1),
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
