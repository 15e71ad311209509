"""lm-eval with the model `jaxcontam` vs lm-eval's own `hf` model (PyTorch transformers), same tasks, same weights.

SmolLM2-135M-Instruct (the shared Q4_1 GGUF, dequantised once to a float32 Hugging Face folder that both load)
on ARC-Easy, PIQA, HellaSwag and COPA from the local files (`jaxcontam.data.lm_eval_tasks`), the first --limit
documents of each, zero-shot, batch size --batch for both. Both run in this process, one after the other, each
through `lm_eval.simple_evaluate` with log_samples; the jaxcontam run includes its XLA compilations (one per
bucket shape), the hf run its torch defaults (sdpa attention, all CPU threads). The script prints each one's
load and evaluation time, the ratio, the per-item agreement (largest log-likelihood difference, same choices),
the settings and the machine's load (the CPU may be shared).

  python -m experiments.perf.lm_eval_vs_hf --limit 50
"""

from __future__ import annotations

import argparse
import os
import platform
import tempfile
import time

from experiments.perf.generation_vs_torch import float_checkpoint  # the float32 HF folder, built once

TASKS = ["arc_easy", "piqa", "hellaswag", "copa"]


def timed(make):
    start = time.perf_counter()
    value = make()
    return value, time.perf_counter() - start


def agreement(ours: dict, reference: dict, task: str) -> tuple[float, int, int]:
    """(largest |log-likelihood difference|, documents with the same acc and acc_norm, documents)."""
    worst, same = 0.0, 0
    pairs = list(zip(ours["samples"][task], reference["samples"][task]))
    for a, b in pairs:
        assert a["doc_id"] == b["doc_id"]
        worst = max(worst, *(abs(x[0][0] - y[0][0]) for x, y in zip(a["resps"], b["resps"])))
        same += a["acc"] == b["acc"] and a.get("acc_norm") == b.get("acc_norm")
    return worst, same, len(pairs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=50, help="documents per task")
    parser.add_argument("--batch", type=int, default=16, help="batch size of both models")
    parser.add_argument("--tasks", default=",".join(TASKS))
    options = parser.parse_args()
    tasks = options.tasks.split(",")

    import torch
    from lm_eval.models.huggingface import HFLM

    import jaxcontam.lm_eval
    import lm_eval
    from jaxcontam.data.lm_eval_tasks import task_manager, write_task_overrides

    folder = float_checkpoint()
    with tempfile.TemporaryDirectory() as scratch:
        write_task_overrides(scratch, local_tasks=tasks)
        manager = task_manager(scratch, stock=False)
        runs = {}
        for name, make in (("jaxcontam", lambda: jaxcontam.lm_eval.JaxcontamLM(pretrained=str(folder),
                                                                               batch_size=options.batch)),
                           ("hf", lambda: HFLM(pretrained=str(folder), dtype="float32", device="cpu",
                                               batch_size=options.batch))):
            model, load = timed(make)
            result, seconds = timed(lambda model=model: lm_eval.simple_evaluate(
                model=model, tasks=tasks, task_manager=manager, limit=options.limit, log_samples=True))
            runs[name] = (result, load, seconds)
            del model
    (ours, our_load, our_time), (reference, hf_load, hf_time) = runs["jaxcontam"], runs["hf"]
    requests = sum(len(s["resps"]) for task in tasks for s in ours["samples"][task])
    print(f"tasks {','.join(tasks)}, {options.limit} documents each, {requests} loglikelihood requests, "
          f"batch {options.batch}")
    print(f"jaxcontam: load {our_load:.1f} s, evaluate {our_time:.1f} s (compilation included)")
    print(f"hf:        load {hf_load:.1f} s, evaluate {hf_time:.1f} s (torch threads {torch.get_num_threads()})")
    print(f"evaluate time hf / jaxcontam = {hf_time / our_time:.2f}")
    for task in tasks:
        worst, same, count = agreement(ours, reference, task)
        print(f"  {task}: max |log-likelihood difference| {worst:.2e}, same acc/acc_norm {same}/{count}, "
              f"acc {ours['results'][task]['acc,none']:.3f} vs {reference['results'][task]['acc,none']:.3f}")
    load = os.getloadavg()
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, load average "
          f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f} after the run")


if __name__ == "__main__":
    main()
