"""lm-eval's model `jaxcontam` against lm-eval's own `hf` model (PyTorch transformers), item by item.

SmolLM2-135M-Instruct (the shared Q4_1 GGUF): jaxcontam loads the file; the torch reference is the
LlamaForCausalLM `helpers.torch_smollm2` builds from the file independently of jaxcontam's loader,
saved as a float32 Hugging Face folder with transformers' GGUF tokenizer conversion, and run by lm-eval as
`model="hf", pretrained=<folder>`. The four tasks read local files through `data.lm_eval_tasks`.
"""

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

lm_eval = pytest.importorskip("lm_eval")

from lm_eval.api.instance import Instance  # noqa: E402
from lm_eval.models.huggingface import HFLM  # noqa: E402

import jaxcontam  # noqa: E402
import jaxcontam.lm_eval  # noqa: E402,F401  (registers the model "jaxcontam")
from helpers import SMOLLM2_GGUF, torch_smollm2  # noqa: E402
from jaxcontam.data import load_benchmark  # noqa: E402
from jaxcontam.data.lm_eval_tasks import task_manager, write_task_overrides  # noqa: E402
from jaxcontam.detect.answering import answer_items  # noqa: E402
from jaxcontam.errors import DataError, JaxcontamError  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[1]
TASKS = ["arc_easy", "piqa", "hellaswag", "copa"]
LIMIT = 8


@pytest.fixture(scope="module")
def models(shared_data, tmp_path_factory):
    """(jaxcontam's lm-eval model, lm-eval's hf model on the torch reference), torch on one thread."""
    folder = shared_data / "smollm2_135m_instruct"
    ours = jaxcontam.load_model(folder)
    reference = tmp_path_factory.mktemp("smollm2_hf")
    torch_smollm2(folder / SMOLLM2_GGUF).save_pretrained(reference)
    ours.tokenizer.save_pretrained(reference)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield (
        jaxcontam.lm_eval.JaxcontamLM(pretrained=ours, batch_size=16),
        HFLM(pretrained=str(reference), dtype="float32", device="cpu", batch_size=16),
    )
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def local_tasks(tmp_path_factory):
    folder = tmp_path_factory.mktemp("lm_eval_tasks")
    write_task_overrides(folder, local_tasks=TASKS)
    return task_manager(folder, stock=False)


def test_simple_evaluate_equals_hf_per_item(models, local_tasks):
    ours, reference = models
    runs = [
        lm_eval.simple_evaluate(model=lm, tasks=TASKS, task_manager=local_tasks, limit=LIMIT, log_samples=True)
        for lm in (ours, reference)
    ]
    for task in TASKS:
        mine, theirs = (run["samples"][task] for run in runs)
        assert len(mine) == len(theirs) == LIMIT
        for a, b in zip(mine, theirs):
            assert a["doc_id"] == b["doc_id"] and a["arguments"] == b["arguments"]
            (ll_a, greedy_a), (ll_b, greedy_b) = zip(*[r[0] for r in a["resps"]]), zip(*[r[0] for r in b["resps"]])
            assert max(abs(x - y) for x, y in zip(ll_a, ll_b)) < 1e-3, (task, a["doc_id"], ll_a, ll_b)
            assert greedy_a == greedy_b
            assert a["acc"] == b["acc"] and a.get("acc_norm") == b.get("acc_norm"), (task, a["doc_id"])
        assert runs[0]["results"][task] == runs[1]["results"][task]


def test_local_files_are_the_documents_of_the_tasks(local_tasks, shared_data):
    tasks = local_tasks.load(TASKS)["tasks"]
    arc = list(tasks["arc_easy"].eval_docs)
    first = json.loads((shared_data / "llm_adapters_commonsense" / "ARC-Easy" / "parsed.jsonl").open().readline())
    assert len(arc) == 2376 and arc[0]["question"] == first["question"]
    assert tasks["arc_easy"].doc_to_target(arc[0]) == first["label"]
    assert len(list(tasks["piqa"].eval_docs)) == 1838
    assert len(list(tasks["hellaswag"].eval_docs)) == 10042
    assert len(list(tasks["copa"].eval_docs)) == 100  # SuperGLUE's validation ids 401-500


def request(kind, arguments, index=0):
    return Instance(request_type=kind, doc={}, arguments=arguments, idx=index)


TEXTS = [
    "The sun rose over the quiet village, and the baker opened his shop before anyone else woke.",
    "Question: What is 12 times 7?\nAnswer:",
]


def test_generate_until_equals_hf(models):
    ours, reference = models
    requests = [
        request("generate_until", (text, {"until": ["\n\n", "."], "max_gen_toks": 16}), i)
        for i, text in enumerate(TEXTS)
    ]
    assert ours.generate_until(requests) == reference.generate_until(requests)


def test_loglikelihood_rolling_equals_hf(models):
    """One window (the text fits) equals hf; with several windows, max_length L here equals hf's L - 1 (each
    window scores L tokens here, L + 1 in hf: the module docstring)."""
    ours, reference = models
    requests = [request("loglikelihood_rolling", (text,), i) for i, text in enumerate(TEXTS)]
    for a, b in zip(ours.loglikelihood_rolling(requests), reference.loglikelihood_rolling(requests)):
        assert math.isclose(a, b, abs_tol=1e-3)
    short = jaxcontam.lm_eval.JaxcontamLM(pretrained=ours.model, max_length=9)
    reference._max_length = 8
    try:
        for a, b in zip(short.loglikelihood_rolling(requests), reference.loglikelihood_rolling(requests)):
            assert math.isclose(a, b, abs_tol=1e-3)
    finally:
        reference._max_length = None


def test_empty_context_scores_after_the_prefix_token(models):
    ours, reference = models
    requests = [request("loglikelihood", ("", " the quiet village"), 0), request("loglikelihood", ("", "Paris"), 1)]
    for (a, greedy_a), (b, greedy_b) in zip(ours.loglikelihood(requests), reference.loglikelihood(requests)):
        assert math.isclose(a, b, abs_tol=1e-3) and greedy_a == greedy_b


def test_lm_eval_task_as_benchmark_gives_the_task_requests(models, local_tasks):
    """`lm_eval:copa` items: the task's context and `target_delimiter + choice` continuations; the audit's answer
    is the choice lm-eval's `acc` / `acc_norm` pick."""
    ours, _ = models
    bench = load_benchmark("lm_eval:copa", limit=4)
    task = local_tasks.load(["copa"])["tasks"]["copa"]
    docs = list(task.eval_docs)[:4]
    for item, doc in zip(bench, docs):
        requests = task.construct_requests(doc, task.doc_to_text(doc))
        assert [r.args for r in requests] == [
            (bench.prompt(item), bench.continuation(item, c)) for c in range(len(item.choices))
        ]
    answers = answer_items(ours.model, bench, bench.items)
    scores = ours.loglikelihood([r for doc in docs for r in task.construct_requests(doc, task.doc_to_text(doc))])
    for i, answer in enumerate(answers):
        lls = [scores[2 * i][0], scores[2 * i + 1][0]]
        assert answer.choice == max(range(2), key=lambda c: lls[c])


def test_bad_input_is_named(models, tmp_path):
    ours, _ = models
    with pytest.raises(JaxcontamError, match="not jaxcontam's"):
        jaxcontam.lm_eval.JaxcontamLM(pretrained=ours.model, parallelize=True)
    with pytest.raises(JaxcontamError, match="batch_size"):
        jaxcontam.lm_eval.JaxcontamLM(pretrained=ours.model, batch_size="many")
    with pytest.raises(DataError, match="no such file"):
        write_task_overrides(tmp_path, {"arc_easy": tmp_path / "missing.jsonl"})
    with pytest.raises(DataError, match="TASK=FILE"):
        from jaxcontam.data.lm_eval_tasks import parse_data_files

        parse_data_files(["arc_easy"])


@pytest.mark.slow  # a fresh process loading JAX, lm-eval and SmolLM2; docs/commands.md's CLI line runs in CI
def test_the_readme_example_runs(shared_data, tmp_path):
    """docs/lm_eval.md's lm-evaluation-harness example, run as written from a checkout with ../shared beside it."""
    page = (REPO_ROOT / "docs" / "lm_eval.md").read_text()
    section = page.split("\n## lm-evaluation-harness\n", 1)[1].split("\n## ", 1)[0]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    (tmp_path / "checkout").mkdir()
    (tmp_path / "checkout" / "jaxcontam").symlink_to(REPO_ROOT / "jaxcontam")
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "data").symlink_to(shared_data)
    env = {k: v for k, v in os.environ.items() if k != "JAXCONTAM_DATA"} | {"JAX_PLATFORMS": "cpu"}
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path / "checkout",
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = dict(re.findall(r"^\|(arc_easy|copa) *\|.*?\|acc +\|.*?\| *([0-9.]+)\|", proc.stdout, re.M))
    assert set(rows) == {"arc_easy", "copa"}, proc.stdout


def test_a_user_file_in_hub_fields_replaces_the_hub(tmp_path):
    rows = [{"goal": f"goal {i}", "sol1": f"first {i}", "sol2": f"second {i}", "label": i % 2} for i in range(3)]
    data = tmp_path / "piqa_mine.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in rows))
    write_task_overrides(tmp_path / "tasks", {"piqa": data})
    task = task_manager(tmp_path / "tasks", stock=False).load(["piqa"])["tasks"]["piqa"]
    docs = list(task.eval_docs)
    assert [d["goal"] for d in docs] == ["goal 0", "goal 1", "goal 2"]
    assert task.doc_to_text(docs[1]) == "Question: goal 1\nAnswer:" and task.doc_to_target(docs[1]) == 1
    bench = load_benchmark("lm_eval:piqa", path=data)
    assert [item.answer for item in bench] == [0, 1, 0] and bench.continuation(bench[0], 1) == " second 0"
    with pytest.raises(DataError, match="evaluates split 'validation'"):
        load_benchmark("lm_eval:piqa", split="train", path=data)


def test_without_lm_eval_the_extra_is_named():
    code = (
        "import sys; sys.modules['lm_eval'] = None\n"
        "try:\n    import jaxcontam.lm_eval\nexcept Exception as error:\n    print(type(error).__name__, error)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120, check=True
    )
    assert (
        proc.stdout.strip()
        == 'JaxcontamError jaxcontam.lm_eval needs lm-evaluation-harness: pip install "jaxcontam[lm-eval]"'
    )


MESH_SCRIPT = """
import json, sys
import jaxcontam.lm_eval
from lm_eval.api.instance import Instance

pairs = [("The man turned on the faucet therefore", "  water flowed from the spout."),
         ("Question: Which gas do plants take in?\\nAnswer:", " carbon dioxide"), ("", "The grass was cut.")]
scored = [Instance("loglikelihood", {}, pair, i) for i, pair in enumerate(pairs)]
asked = [Instance("generate_until", {}, (pairs[0][0], {"until": ["."], "max_gen_toks": 8}), 0)]
runs = {}
for mesh, fsdp in [(None, "False"), ("2x2", "True"), ("1x4", "False")]:
    lm = jaxcontam.lm_eval.JaxcontamLM(pretrained=sys.argv[1], mesh=mesh, fsdp=fsdp, batch_size=4)
    runs[f"{mesh} {fsdp}"] = {"mesh": dict(lm.model.mesh.shape), "scores": lm.loglikelihood(scored),
                              "text": lm.generate_until(asked)}
print(json.dumps(runs))
"""


def test_model_args_mesh_and_fsdp_shard_the_model_with_the_same_results():
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=4", "JAX_PLATFORMS": "cpu"}
    model = REPO_ROOT / "jaxcontam" / "examples" / "tiny_contaminated" / "model"
    proc = subprocess.run(
        [sys.executable, "-c", MESH_SCRIPT, str(model)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    runs = json.loads(proc.stdout.strip().splitlines()[-1])
    assert [run["mesh"] for run in runs.values()] == [
        {"data": 4, "model": 1},
        {"data": 2, "model": 2},
        {"data": 1, "model": 4},
    ]
    base = runs["None False"]
    for run in runs.values():
        for (a, greedy_a), (b, greedy_b) in zip(run["scores"], base["scores"], strict=True):
            assert math.isclose(a, b, abs_tol=1e-4) and greedy_a == greedy_b
        assert run["text"] == base["text"]


def test_the_command_writes_results_to_a_bucket(shared_data, monkeypatch):
    """`jaxcontam lm-eval --out s3://...` (the bundled tiny model, 2 COPA documents): results.json and the samples
    land in the bucket."""
    from click.testing import CliRunner

    import jaxcontam
    from experiments.object_stores import s3_server
    from jaxcontam.cli import cli

    monkeypatch.setenv("JAXCONTAM_DATA", str(shared_data))
    model = Path(jaxcontam.__file__).parent / "examples" / "tiny_contaminated" / "model"
    with s3_server() as (direct, _):
        direct.mkdir("results")
        args = ["lm-eval", "--model", str(model), "--tasks", "copa", "--limit", "2", "--log-samples"]
        result = CliRunner().invoke(cli, [*args, "--out", "s3://results/lm-eval"])
        assert result.exit_code == 0, result.output
        assert json.loads(direct.cat("results/lm-eval/results.json"))["results"]["copa"]["acc,none"] in (0, 0.5, 1)
        assert len(json.loads(direct.cat("results/lm-eval/samples.json"))["copa"]) == 2
