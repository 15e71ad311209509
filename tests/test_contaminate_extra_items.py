"""`jaxcontam contaminate --extra-items`: items that are trained on but not audited (a format control), on the
bundled tiny model: the ground truth keeps the audited items and their draw, every extra item is in the corpus
its number of copies, an extra item that is also audited is refused, and the settings round-trip for a resume.
`--data-seed` (a replicate: another data order, the same draw) rides along in the same run."""

import json
import pathlib

import pytest

from jaxcontam import cli
from jaxcontam.data import load_benchmark
from jaxcontam.errors import JaxcontamError
from jaxcontam.mesh import MeshSettings
from jaxcontam.training.contaminate import ContaminationSettings, run_contamination
from jaxcontam.training.contamination_mix import draw_contaminated, with_paraphrases

REPO = pathlib.Path(__file__).resolve().parents[1]
TINY = REPO / "jaxcontam" / "examples" / "tiny_contaminated" / "model"
LIMIT, EXTRA, EXTRA_COPIES = 8, 5, 2


def rows(path):
    return [json.loads(line) for line in pathlib.Path(path).read_text().splitlines()]


def options(shared_data, out, *extra):
    return [
        "contaminate",
        "--model",
        str(TINY),
        "--benchmark",
        "copa",
        "--split",
        "test",
        "--limit",
        str(LIMIT),
        "--copies",
        "0",
        "--corpus",
        str(shared_data / "corpus_misc" / "tinyshakespeare"),
        "--tokens",
        "600",
        "--seq-len",
        "128",
        "--out",
        str(out),
        *extra,
    ]


@pytest.fixture(scope="module")
def run(shared_data, tmp_path_factory, monkeypatch_module):
    out = tmp_path_factory.mktemp("format")
    monkeypatch_module.setenv("JAXCONTAM_DATA", str(shared_data))
    extra = ("--extra-items", f"copa:train:{EXTRA}", "--extra-copies", str(EXTRA_COPIES), "--data-seed", "3")
    cli.main(options(shared_data, out, *extra))
    return out


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as patch:
        yield patch


def test_audited_items_are_all_clean_with_the_arms_draw(run, shared_data):
    copa = with_paraphrases(load_benchmark("copa", split="test", path=shared_data, limit=LIMIT), (shared_data,))
    truth = rows(run / "ground_truth.jsonl")
    assert [row["id"] for row in truth] == [item.id for item in copa]  # only the audited items
    assert not any(row["contaminated"] for row in truth)
    assert [row["drawn"] for row in truth] == list(draw_contaminated(copa, 0.5, 0))  # the same halves as every arm


def test_every_extra_item_is_trained_its_copies_and_listed(run):
    extra = rows(run / "extra_items.jsonl")
    ids = [f"copa/train/{n}" for n in range(1, EXTRA + 1)]
    assert [row["id"] for row in extra] == ids
    assert {(row["copies"], row["form"], row["split"]) for row in extra} == {(EXTRA_COPIES, "verbatim", "train")}
    trained = [row["item"] for row in rows(run / "corpus" / "train.jsonl") if row["item"]]
    assert sorted(trained) == sorted(i for i in ids for _ in range(EXTRA_COPIES))
    record = json.loads((run / "settings.json").read_text())
    assert record["extra_items"] == EXTRA and record["benchmark_documents"] == EXTRA * EXTRA_COPIES
    assert record["settings"]["extra_items"] == [["copa", "train", EXTRA, None]]
    assert (record["settings"]["seed"], record["settings"]["data_seed"]) == (0, 3)
    fields = dict(record["settings"])  # a resume rebuilds the same identity from the recorded settings
    mesh = MeshSettings.from_option(fields.pop("mesh"), fields.pop("fsdp"))
    rebuilt = ContaminationSettings(
        **{**fields, "benchmarks": tuple(fields["benchmarks"]), "paths": tuple(map(tuple, fields["paths"]))},
        out="anywhere",
        mesh=mesh,
    )
    assert rebuilt.identity() == record["settings"]


def test_a_run_without_extra_items_records_none():
    identity = ContaminationSettings(model="m", benchmarks=("copa",), corpus="c", tokens=1, out="o").identity()
    assert not {"extra_items", "extra_copies", "data_seed"} & set(identity)  # older runs resume unchanged


@pytest.mark.parametrize("data_seed, order", [(None, 0), (5, 5)])
def test_the_data_seed_orders_the_batches(shared_data, tmp_path, monkeypatch, data_seed, order):
    import jaxcontam.training.batches

    class Counted(Exception):
        pass

    def count_steps(ids, *, seed, **kwargs):
        raise Counted(seed)

    monkeypatch.setattr(jaxcontam.training.batches, "count_steps", count_steps)
    settings = ContaminationSettings(
        model=str(TINY),
        benchmarks=("copa",),
        corpus=str(shared_data / "corpus_misc" / "tinyshakespeare"),
        tokens=600,
        out=str(tmp_path / "run"),
        split="test",
        limit=LIMIT,
        seq_len=128,
        data_roots=(shared_data,),
        data_seed=data_seed,
    )
    with pytest.raises(Counted) as counted:
        run_contamination(settings, log=lambda line: None)
    assert counted.value.args == (order,)


def test_an_audited_item_cannot_be_an_extra_item(shared_data, tmp_path):
    settings = ContaminationSettings(
        model=str(TINY),
        benchmarks=("copa",),
        corpus=str(shared_data / "corpus_misc" / "tinyshakespeare"),
        tokens=600,
        out=str(tmp_path / "run"),
        split="test",
        limit=LIMIT,
        copies=0,
        seq_len=128,
        data_roots=(shared_data,),
        extra_items=(("copa", "test", 3, None),),
    )
    with pytest.raises(JaxcontamError, match="copa/test/501 is an audited item too"):
        run_contamination(settings, log=lambda line: None)


@pytest.mark.parametrize("spec", ["copa:train", "copa:train:0", "copa::3", "copa:train:3=", "copa:train:x"])
def test_a_malformed_spec_is_refused(spec, tmp_path, capsys):
    with pytest.raises(SystemExit):
        cli.main(options(pathlib.Path("nowhere"), tmp_path / "run", "--extra-items", spec))
    assert "expected BENCHMARK:SPLIT:N[=PATH]" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()
