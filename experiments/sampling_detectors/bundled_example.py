"""GradNorm, CDD and TS-Guessing on the bundled example (200 GSM8K and 200 COPA items, half of each trained into the
1M-parameter model) against its ground truth, with the detectors' defaults (CDD: 50 samples at T = 0.8, 128 tokens).

    python -m experiments.sampling_detectors.bundled_example [--samples 50] [--out results/bundled_example.jsonl]

One JSON line per benchmark: each detector's summary.json entry and its seconds (2 shared CPU cores make these
slow: CDD decodes 51 x 128 tokens per item).
"""

import argparse
import json
import time
from pathlib import Path

import jaxcontam
from jaxcontam.audit.config import EXAMPLE_CONFIG, load_config
from jaxcontam.audit.inputs import load_audit_benchmark
from jaxcontam.detect.audit_core import AuditSettings, audit_benchmark
from jaxcontam.detect.cdd import CddSettings
from jaxcontam.detect.json_values import json_ready
from jaxcontam.detect.stage import AuditTarget

DETECTORS = ("gradnorm", "cdd", "ts_guessing")
HERE = Path(__file__).resolve().parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=CddSettings.samples)
    parser.add_argument("--out", type=Path, default=HERE / "results" / "bundled_example.jsonl")
    args = parser.parse_args()
    model = jaxcontam.load_model(str(EXAMPLE_CONFIG.parent / "model"))
    lines = []
    for entry in load_config(EXAMPLE_CONFIG).benchmarks:
        loaded = load_audit_benchmark(entry)
        benchmark, truth = loaded.benchmark, loaded.truth or {}
        target = AuditTarget(benchmark, [None] * len(benchmark), contaminated=[truth.get(i.id) for i in benchmark])
        settings = AuditSettings(detectors=DETECTORS, detector_settings={"cdd": CddSettings(samples=args.samples)})
        start = time.perf_counter()
        audit = audit_benchmark(model, target, settings)
        line = {
            "benchmark": entry.name,
            "n_items": len(benchmark),
            **{name: audit.results[name].to_dict() for name in DETECTORS},
            "seconds": {name: round(audit.seconds[name], 1) for name in DETECTORS},
            "wall_seconds": round(time.perf_counter() - start, 1),
        }
        print(json.dumps(json_ready(line)))
        lines.append(json.dumps(json_ready(line)))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
