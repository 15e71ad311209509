"""`jaxcontam contaminate` on the bundled tiny model: what it writes, what it trained on, and resuming.

The checks read the outputs the way a user's audit does: the saved folder through `jaxcontam score` and
`jaxcontam audit` (with the run's ground truth and its corpus/), the stored corpus by plain substring counts
of each item's text, and a run stopped mid-training then rerun against an uninterrupted one, byte for byte.
"""

import json
import pathlib
import textwrap

import numpy as np
import pytest

from jaxcontam import cli
from jaxcontam.data import load_benchmark
from jaxcontam.errors import JaxcontamError
from jaxcontam.mesh import MeshSettings
from jaxcontam.training.contaminate import ContaminationSettings, run_contamination

REPO = pathlib.Path(__file__).resolve().parents[1]
TINY = REPO / "jaxcontam" / "examples" / "tiny_contaminated" / "model"
LIMIT, COPIES = 12, 3


def settings(shared_data, out, **changes) -> ContaminationSettings:
    base = dict(
        model=str(TINY),
        benchmarks=("copa",),
        data_roots=(shared_data,),
        split="test",
        limit=LIMIT,
        fraction=0.5,
        copies=COPIES,
        form="verbatim",
        corpus=str(shared_data / "corpus_misc" / "tinyshakespeare"),
        tokens=2500,
        out=str(out),
        seq_len=128,
        batch_size=4,
        learning_rate=1e-3,
        checkpoint_every=2,
    )
    return ContaminationSettings(**{**base, **changes})


def rows(path):
    return [json.loads(line) for line in pathlib.Path(path).read_text().splitlines()]


@pytest.fixture(scope="module")
def runs(shared_data, tmp_path_factory):
    """{arm: its run folder} for a verbatim x3 arm and its control (copies 0)."""
    folders = {}
    for arm, copies in (("verbatim", COPIES), ("control", 0)):
        folders[arm] = tmp_path_factory.mktemp(arm)
        run_contamination(settings(shared_data, folders[arm], copies=copies), log=lambda line: None)
    return folders


@pytest.fixture(scope="module")
def copa(shared_data):
    return load_benchmark("copa", split="test", path=shared_data, limit=LIMIT)


def test_ground_truth_names_exactly_the_trained_items_by_their_benchmark_ids(runs, copa):
    truth = rows(runs["verbatim"] / "ground_truth.jsonl")
    assert [row["id"] for row in truth] == [item.id for item in copa]  # one row per item, jaxcontam's ids
    contaminated = {row["id"] for row in truth if row["contaminated"]}
    assert len(contaminated) == LIMIT // 2
    assert all(row["copies"] == (COPIES if row["contaminated"] else 0) for row in truth)
    assert {row["form"] for row in truth if row["contaminated"]} == {"verbatim"}
    trained = [row["item"] for row in rows(runs["verbatim"] / "corpus" / "train.jsonl") if row["item"]]
    assert sorted(trained) == sorted(i for i in contaminated for _ in range(COPIES))


def test_corpus_holds_each_contaminated_item_k_times_and_the_control_none(runs, copa):
    truth = {row["id"]: row for row in rows(runs["verbatim"] / "ground_truth.jsonl")}
    texts = {arm: "\n".join(row["text"] for row in rows(runs[arm] / "corpus" / "train.jsonl")) for arm in runs}
    for item in copa:
        solved = copa.solved_text(item)  # what the audit scores: the prompt and the gold choice
        assert texts["verbatim"].count(solved) == (COPIES if truth[item.id]["contaminated"] else 0), item.id
        assert texts["control"].count(solved) == 0, item.id
        assert texts["control"].count(item.question) == 0, item.id
    control_truth = rows(runs["control"] / "ground_truth.jsonl")
    assert not any(row["contaminated"] for row in control_truth)
    # the control draws the same items (same seed), marked `drawn`, and trains on the same general text
    assert [row["drawn"] for row in control_truth] == [truth[row["id"]]["contaminated"] for row in control_truth]
    general = {
        arm: [row["text"] for row in rows(runs[arm] / "corpus" / "train.jsonl") if not row["item"]] for arm in runs
    }
    assert general["verbatim"] == general["control"]


def test_stored_corpus_is_the_token_count_trained_on(runs):
    from jaxcontam.models.loading import load_tokenizer
    from jaxcontam.training.contamination_mix import encode_document

    tokenizer = load_tokenizer(TINY)
    for arm, folder in runs.items():
        record = json.loads((folder / "settings.json").read_text())
        stored = rows(folder / "corpus" / "train.jsonl")
        general = sum(len(encode_document(tokenizer, r["text"], r["chat"])) for r in stored if not r["item"])
        injected = sum(len(encode_document(tokenizer, r["text"], r["chat"])) for r in stored if r["item"])
        assert (general, injected) == (record["general_tokens"], record["benchmark_tokens"]), arm
        assert general >= 2500 and record["steps"] > 0
        curve = rows(folder / "curve.jsonl")
        assert [row["step"] for row in curve] == list(range(1, record["steps"] + 1))
        assert all(np.isfinite(row["loss"]) for row in curve)


def test_saved_model_loads_in_score_and_audit_with_the_ground_truth_and_corpus(
    runs, copa, shared_data, tmp_path, capsys
):
    folder = runs["verbatim"]
    data = tmp_path / "texts.jsonl"
    data.write_text("".join(json.dumps({"id": item.id, "text": copa.solved_text(item)}) + "\n" for item in copa))
    cli.main(["score", "--model", str(folder / "model"), "--data", str(data), "--out", str(tmp_path / "s.jsonl")])
    scores = rows(tmp_path / "s.jsonl")
    assert [s["id"] for s in scores] == [item.id for item in copa]
    config = tmp_path / "audit.toml"
    config.write_text(
        textwrap.dedent(f"""
        out = "{tmp_path / "audit"}"
        [[model]]
        path = "{folder / "model"}"
        [[benchmark]]
        name = "copa"
        split = "test"
        path = "{shared_data}"
        limit = {LIMIT}
        paraphrases = "xcopa_backtranslation"
        ground_truth = "{folder / "ground_truth.jsonl"}"
        [corpus]
        paths = ["{folder / "corpus"}"]
        [pacost]
        confidence = "answer_logprob"
        """)
    )
    cli.main(["audit", "--config", str(config)])
    import pandas as pd

    items = pd.read_parquet(tmp_path / "audit" / "items.parquet")
    truth = {row["id"]: row["contaminated"] for row in rows(folder / "ground_truth.jsonl")}
    assert dict(zip(items["id"], items["ground_truth_contaminated"])) == truth  # the audit read the ground truth
    # ConTAM over the run's corpus/ finds every contaminated item whole, and no clean one whole
    whole = dict(zip(items["id"], items["longest_match"] == 1.0))
    assert whole == truth
    capsys.readouterr()


def test_killed_run_resumes_to_the_same_weights_as_an_uninterrupted_one(runs, shared_data, tmp_path):
    killed = tmp_path / "killed"
    _killed_at_step_3(settings(shared_data, killed))
    assert not (killed / "model").exists()
    messages = []
    run_contamination(settings(shared_data, killed), log=messages.append)
    assert "resumed from the checkpoint of step 2" in messages
    whole = (runs["verbatim"] / "model" / "model.safetensors").read_bytes()
    assert (killed / "model" / "model.safetensors").read_bytes() == whole  # bitwise: same batches, same steps
    assert rows(killed / "curve.jsonl") == rows(runs["verbatim"] / "curve.jsonl")
    assert json.loads((killed / "run.json").read_text())["resumed_from"] == 2


def test_finished_run_is_skipped_and_other_settings_are_refused(runs, shared_data):
    messages = []
    run_contamination(settings(shared_data, runs["verbatim"]), log=messages.append)
    assert any("finished" in m for m in messages)
    with pytest.raises(JaxcontamError, match="copies differ"):
        run_contamination(settings(shared_data, runs["verbatim"], copies=1), log=messages.append)


def _killed_at_step_3(settings_of_run: ContaminationSettings) -> None:
    def kill_at_step_3(line):
        if line.startswith("step 3/"):
            raise KeyboardInterrupt("killed")

    with pytest.raises(KeyboardInterrupt):
        run_contamination(settings_of_run, log=kill_at_step_3)


def _copa_copy(shared_data, folder: pathlib.Path, edit: bool = False) -> pathlib.Path:
    """A copy of the COPA test file in `folder` (a moved checkout); `edit` changes every premise (a clean item's
    text is not trained on, so only an edit of a contaminated one changes the run)."""
    folder.mkdir()
    rows = [json.loads(line) for line in (shared_data / "copa" / "copa_test.jsonl").read_text().splitlines()]
    edited = [{**row, "premise": row["premise"] + " Edited."} if edit else row for row in rows]
    (folder / "copa_test.jsonl").write_text("".join(json.dumps(row) + "\n" for row in edited))
    return folder


def test_a_run_whose_data_files_moved_resumes_when_they_build_the_same_mix(runs, shared_data, tmp_path):
    """The same COPA file at another path (a moved checkout) resumes the killed run to the uninterrupted one's
    weights; an edited file at the new path is refused by the mix it builds, and other settings stay refused."""
    out = tmp_path / "run"
    first = _copa_copy(shared_data, tmp_path / "first")
    _killed_at_step_3(settings(shared_data, out, paths=(("copa", str(first)),)))
    edited = settings(shared_data, out, paths=(("copa", str(_copa_copy(shared_data, tmp_path / "edited", True))),))
    with pytest.raises(JaxcontamError, match="training mix built now differs"):
        run_contamination(edited, log=lambda line: None)
    with pytest.raises(JaxcontamError, match="copies differ"):
        run_contamination(settings(shared_data, out, copies=1, paths=(("copa", str(first)),)), log=lambda line: None)
    moved = settings(shared_data, out, paths=(("copa", str(_copa_copy(shared_data, tmp_path / "moved"))),))
    messages = []
    run_contamination(moved, log=messages.append)
    assert any("data files at other paths" in m for m in messages)
    assert "resumed from the checkpoint of step 2" in messages
    whole = (runs["verbatim"] / "model" / "model.safetensors").read_bytes()
    assert (out / "model" / "model.safetensors").read_bytes() == whole
    assert json.loads((out / "settings.json").read_text())["settings"]["paths"] == [["copa", str(tmp_path / "moved")]]
    messages.clear()
    run_contamination(settings(shared_data, out, paths=(("copa", str(first)),)), log=messages.append)
    assert any("finished" in m for m in messages)


def test_a_run_in_a_bucket_killed_mid_training_resumes_there_on_a_fresh_machine(
    runs, shared_data, tmp_path, monkeypatch
):
    """--out on a local S3 server: the checkpoints are uploaded as they are saved, so a rerun with an empty
    local cache (another machine) resumes from the bucket and ends with the uninterrupted run's weights."""
    from experiments.object_stores import s3_server

    def kill_at_step_3(line):
        if line.startswith("step 3/"):
            raise KeyboardInterrupt("killed")

    with s3_server() as (bucket, _):
        bucket.mkdir("runs")
        monkeypatch.setenv("JAXCONTAM_CACHE", str(tmp_path / "first-machine"))
        with pytest.raises(KeyboardInterrupt):
            run_contamination(settings(shared_data, "s3://runs/killed"), log=kill_at_step_3)
        assert bucket.exists("runs/killed/ground_truth.jsonl") and not bucket.exists("runs/killed/model")
        monkeypatch.setenv("JAXCONTAM_CACHE", str(tmp_path / "second-machine"))
        messages = []
        run_contamination(settings(shared_data, "s3://runs/killed"), log=messages.append)
        assert "resumed from the checkpoint of step 2" in messages
        whole = (runs["verbatim"] / "model" / "model.safetensors").read_bytes()
        assert bucket.cat("runs/killed/model/model.safetensors") == whole


@pytest.mark.parametrize(
    "arm", sorted(p.parent.name for p in (REPO / "experiments/real_contamination/results/arms").glob("*/settings.json"))
)
def test_recorded_runs_keep_their_identity(arm):
    """A run recorded before `mesh` became MeshSettings still matches its settings, so it resumes: the mesh is
    recorded as the `--mesh` text and the `--fsdp` flag, the data roots not at all."""
    recorded = json.loads((REPO / "experiments/real_contamination/results/arms" / arm / "settings.json").read_text())
    fields = dict(recorded["settings"])
    mesh = MeshSettings.from_option(fields.pop("mesh"), fields.pop("fsdp"))
    rebuilt = ContaminationSettings(
        **{**fields, "benchmarks": tuple(fields["benchmarks"]), "paths": tuple(map(tuple, fields["paths"]))},
        out="anywhere",
        mesh=mesh,
        data_roots=(pathlib.Path("elsewhere"),),
    )
    assert rebuilt.identity() == recorded["settings"]


@pytest.mark.parametrize("text", [None, "data=2", "model=2", "data=1,model=2"])
def test_a_mesh_option_is_recorded_as_given(text):
    assert MeshSettings.from_option(text).option_text() == text
