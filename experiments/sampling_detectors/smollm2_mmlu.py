"""TS-Guessing and GradNorm on the real SmolLM2-135M-Instruct (the shared Q4_1 GGUF, dequantised to float32), where
the bundled 1M-parameter model cannot follow TS-Guessing's instruction: the first 40 MMLU test items, replies of at
most 32 tokens (the default is 128; 2 shared CPU cores), and GradNorm of the first 4 items' solved texts.

    python -m experiments.sampling_detectors.smollm2_mmlu [--out results/smollm2_mmlu.json]
"""

import argparse
import json
import time
from pathlib import Path

import jaxcontam
from jaxcontam.data.registry import load_benchmark
from jaxcontam.detect.gradnorm import mean_tensor_norm
from jaxcontam.detect.json_values import json_ready
from jaxcontam.detect.ts_guessing import TsGuessingSettings, ts_guessing_result
from jaxcontam.detectors.ts_guessing import ts_guessing_records
from jaxcontam.engine.gradients import loss_gradient_norms

HERE = Path(__file__).resolve().parent
SMOLLM2 = HERE.parents[1].parent / "shared" / "data" / "smollm2_135m_instruct" / "SmolLM2-135M-Instruct.Q4_1.gguf"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE / "results" / "smollm2_mmlu.json")
    args = parser.parse_args()
    model = jaxcontam.load_model(str(SMOLLM2))
    benchmark = load_benchmark("mmlu", limit=40)
    start = time.perf_counter()
    records = ts_guessing_records(model, list(benchmark), TsGuessingSettings(max_new_tokens=32), seed=0)
    ts_seconds = time.perf_counter() - start
    start = time.perf_counter()
    texts = [benchmark.solved_text(item) for item in list(benchmark)[:4]]
    norms = loss_gradient_norms(model, [model.tokenizer.encode(text) for text in texts])
    out = {
        "ts_guessing": ts_guessing_result(records).to_dict(),
        "ts_guessing_seconds": round(ts_seconds, 1),
        "guesses": [[r["id"], r["ts_skipped"], r["ts_guess"]] for r in records],
        "gradnorm_linf_mean": [round(mean_tensor_norm(n.norms), 5) for n in norms],
        "gradnorm_tensors": len(norms[0].names),
        "gradnorm_seconds": round(time.perf_counter() - start, 1),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(json_ready(out), indent=1) + "\n")
    print(json.dumps(json_ready(out))[:2000])


if __name__ == "__main__":
    main()
