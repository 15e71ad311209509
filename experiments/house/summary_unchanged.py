"""Issue 28's check: the restructuring left the bundled audit's summary.json unchanged.

For each (before, after) pair of commits, the bundled example's COPA audit (its model, sample, rephrasings, ground
truth and corpus; the benchmark whose numbers moved during the restructuring) runs in a worktree of each commit,
and the two summary.json files are compared: every key, floats to 1e-6 relative, ignoring the corpus path and
the version string. The default pairs bracket each stretch of restructuring commits:

  727b57e -> 43ac8b4   families as modules (the first restructuring commit and its parent)
  d334360 -> 4c1a61b   typed pipeline, settings dataclasses, config from dataclasses, one --dtype
  aba397b -> c1c20c5   the small breaks (kernels/engine direction, errors, commands' helpers, plan, tokenizer_files)
  95e95f6^ -> e3f1fa7  hygiene (ruff, pyright, tests in tiers)
  5d51d38 -> e6bc840   ruff formatting, packaging, flax -> flax_models

`--bisect OLD NEW` instead finds the first commit between two whose COPA accuracy differs from OLD's
(git bisect run). Writes results.json beside this script.

    python -m experiments.house.summary_unchanged
    python -m experiments.house.summary_unchanged --bisect 727b57e 6515e92
    python -m experiments.house.summary_unchanged --pair d0a468a HEAD --audit bundled   # issue 39: the whole
    python -m experiments.house.summary_unchanged --pair d0a468a HEAD --audit smollm2   # audits, timings aside
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
PAIRS = [
    ("727b57e", "43ac8b4"),
    ("d334360", "4c1a61b"),
    ("aba397b", "c1c20c5"),
    ("95e95f6^", "e3f1fa7"),
    ("5d51d38", "e6bc840"),
]
IGNORED = {"corpora", "jaxcontam_version", "timings"}  # timings: wall seconds per stage, new in issue 39


def copa_audit(worktree: pathlib.Path, out: pathlib.Path) -> dict:
    """The bundled example's COPA audit at `worktree`'s code; its summary.json."""
    example = worktree / "jaxcontam" / "examples" / "tiny_contaminated"
    config = out.with_suffix(".toml")
    config.write_text(
        "\n".join(
            [
                f'out = "{out}"',
                "[[model]]",
                f'path = "{example / "model"}"',
                'name = "tiny-contaminated"',
                "[[benchmark]]",
                'name = "copa"',
                'split = "test"',
                f'path = "{example / "copa_test_sample.jsonl"}"',
                f'paraphrases = "{example / "copa_rephrasings.jsonl"}"',
                f'ground_truth = "{example / "ground_truth.jsonl"}"',
                "[corpus]",
                f'paths = ["{example / "corpus.jsonl.gz"}"]',
                "[pacost]",
                'confidence = "answer_logprob"',
                "max_new_tokens = 200",
            ]
        )
        + "\n"
    )
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "PYTHONPATH": str(worktree)}
    subprocess.run(
        [sys.executable, "-m", "jaxcontam.cli", "audit", "--config", str(config)],
        cwd=worktree,
        env=env,
        check=True,
        capture_output=True,
    )
    return json.loads((out / "summary.json").read_text())


def whole_audit(worktree: pathlib.Path, out: pathlib.Path, audit: str) -> dict:
    """`jaxcontam audit` at `worktree`'s code: "bundled", the bundled example as `jaxcontam audit` runs it with no
    arguments (its own audit.toml), or "smollm2", the README's "An audit" (SmolLM2-135M-Instruct, 100 COPA items,
    tinyshakespeare as the corpus); its summary.json."""
    shared = ROOT.parent / "shared" / "data"  # a worktree outside the checkout finds ../shared/data through this
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "PYTHONPATH": str(worktree), "JAXCONTAM_DATA": str(shared)}
    options = ["--out", str(out)]
    if audit == "smollm2":
        config = out.with_suffix(".toml")
        config.write_text(
            "\n".join(
                [
                    "[[model]]",
                    f'path = "{shared / "smollm2_135m_instruct"}"',
                    "[[benchmark]]",
                    'name = "copa"',
                    'split = "test"',
                    'paraphrases = "xcopa_backtranslation"',
                    "limit = 100",
                    "[corpus]",
                    f'paths = ["{shared / "corpus_misc" / "tinyshakespeare"}"]',
                ]
            )
            + "\n"
        )
        options += ["--config", str(config)]
    done = subprocess.run(
        [sys.executable, "-m", "jaxcontam.cli", "audit", *options], cwd=worktree, env=env, capture_output=True, text=True
    )
    if done.returncode != 0:
        sys.exit(f"the audit at {worktree.name} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return json.loads((out / "summary.json").read_text())


def differences(a, b, path: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        found = []
        for key in sorted(set(a) | set(b) - IGNORED):
            if key in IGNORED:
                continue
            if key not in a or key not in b:
                found.append(f"{path}.{key}: only in the {'after' if key in b else 'before'} summary")
            else:
                found += differences(a[key], b[key], f"{path}.{key}")
        return found
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in differences(x, y, f"{path}[{i}]")]
    if isinstance(a, float) and isinstance(b, float):
        return [] if abs(a - b) <= 1e-6 * max(1.0, abs(a)) else [f"{path}: {a} -> {b}"]
    return [] if a == b else [f"{path}: {str(a)[:80]} -> {str(b)[:80]}"]


def at_commit(commit: str, scratch: pathlib.Path, audit: str = "copa") -> dict:
    worktree = scratch / f"wt-{commit.replace('^', '_')}"
    subprocess.run(
        ["git", "worktree", "add", "-f", "--detach", str(worktree), commit], cwd=ROOT, check=True, capture_output=True
    )
    out = scratch / f"audit-{audit}-{commit.replace('^', '_')}"
    try:
        return copa_audit(worktree, out) if audit == "copa" else whole_audit(worktree, out, audit)
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(worktree)], cwd=ROOT, capture_output=True)


def commit_name(commit: str) -> str:
    """A symbolic name (HEAD, a branch) as its short hash, so results.json says what ran."""
    resolved = subprocess.run(["git", "rev-parse", "--short", commit], cwd=ROOT, capture_output=True, text=True)
    return resolved.stdout.strip() or commit


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bisect", nargs=2, metavar=("OLD", "NEW"))
    parser.add_argument("--pair", nargs=2, metavar=("BEFORE", "AFTER"), help="compare these two commits only")
    parser.add_argument(
        "--audit",
        choices=("copa", "bundled", "smollm2"),
        default="copa",
        help="copa: the bundled example's COPA audit (default); bundled: the whole bundled audit; "
        "smollm2: the README's SmolLM2 audit",
    )
    parser.add_argument("--accuracy-is", type=float, help=argparse.SUPPRESS)  # one bisect step (git bisect run)
    parser.add_argument("--worktree", type=pathlib.Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.accuracy_is is not None:
        with tempfile.TemporaryDirectory() as out:
            summary = copa_audit(args.worktree, pathlib.Path(out) / "audit")
        sys.exit(0 if summary["runs"][0]["accuracy"]["acc"] == args.accuracy_is else 1)
    with tempfile.TemporaryDirectory() as scratch:
        scratch = pathlib.Path(scratch)
        if args.bisect:
            old, new = args.bisect
            accuracy = at_commit(old, scratch)["runs"][0]["accuracy"]["acc"]
            worktree = scratch / "bisect"
            subprocess.run(["git", "worktree", "add", "-f", "--detach", str(worktree), new], cwd=ROOT, check=True)
            step = [sys.executable, __file__, "--accuracy-is", str(accuracy), "--worktree", str(worktree)]
            subprocess.run(["git", "bisect", "start", new, old], cwd=worktree, check=True)
            subprocess.run(["git", "bisect", "run", *step], cwd=worktree)
            subprocess.run(["git", "bisect", "reset"], cwd=worktree)
            return
        results = json.loads((HERE / "results.json").read_text()) if args.pair else []
        pairs = [tuple(commit_name(c) for c in args.pair)] if args.pair else PAIRS
        for before, after in pairs:
            found = differences(at_commit(before, scratch, args.audit), at_commit(after, scratch, args.audit))
            results = [
                r for r in results if (r["before"], r["after"], r.get("audit", "copa")) != (before, after, args.audit)
            ]
            results.append({"before": before, "after": after, "audit": args.audit, "differences": found})
            print(
                f"{before} -> {after} ({args.audit}): {len(found)} difference(s)" + "".join(f"\n  {d}" for d in found)
            )
        (HERE / "results.json").write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
