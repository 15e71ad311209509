"""Mesh options: `--mesh data=D,model=M` / `--fsdp` on the commands, the audit config's `[mesh]` table and the
rephrase model's own mesh and dtype, fsdp weight sharding (same log-probs, 1/(data x model) of each weight per
device), and the refusals (malformed strings, a mesh that is not the device count, before any model loads).

The 8-device checks run once in a subprocess (XLA_FLAGS must be set before JAX is imported), as in
tests/test_models_sharding.py; the rest runs in-process on this process's one CPU device.
"""

import json
import math
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest
from jax.sharding import AbstractMesh

import jaxcontam
from helpers import audit_config_of
from jaxcontam.audit.config import EXAMPLE_CONFIG, PacostConfig, load_config
from jaxcontam.errors import JaxcontamError
from jaxcontam.mesh import MeshSettings, mesh_sizes, parse_mesh
from jaxcontam.models.checkpoint_map import checkpoint_entries
from jaxcontam.models.llama2c import convert_llama2c
from jaxcontam.models.sharding import LAYERS, warn_unsplit, weight_sharding
from jaxcontam.models.spec import from_hf_config

FSDP_MESHES = [(1, 1, False), (4, 2, True), (8, 1, True)]
TEXTS = [
    "Once upon a time there was a little dog.",
    "The sun was warm and the girl smiled.",
    "Tom had a red ball. He liked to play with it every day.",
]
CLI_RUNS = {"plain": [], "mesh": ["--mesh", "data=2,model=4"], "fsdp": ["--mesh", "model=2", "--fsdp"]}

SCRIPT = r"""
import json, sys, warnings
import jax
import jaxcontam
from jaxcontam.cli import main
from jaxcontam.mesh import make_mesh

path, texts, out_dir = sys.argv[1:4]
meshes, runs = json.loads(sys.argv[4]), json.loads(sys.argv[5])
seqs = [[1, 5, 9, 33, 7, 2, 60], [1, 2], [1] + list(range(3, 40)), [4, 8, 15, 16, 23, 42]]
result = {"load": {}, "cli": [], "warnings": []}
for data, model, fsdp in meshes:
    loaded = jaxcontam.load_model(path, mesh=make_mesh(data, model, devices=jax.devices()[: data * model]), fsdp=fsdp)
    weights = {"wq": loaded.params["layers"]["wq"], "w_gate": loaded.params["layers"]["w_gate"],
               "embed": loaded.params["embed"], "final_norm": loaded.params["final_norm"]["scale"]}
    result["load"][f"{data}x{model}"] = {
        "logprobs": [lp.tolist() for lp in loaded.logprobs(seqs)],
        "weights": {name: {"shape": list(w.shape), "shard": list(w.addressable_shards[0].data.shape),
                           "spec": list(w.sharding.spec)} for name, w in weights.items()},
    }

original = jaxcontam.load_model


def recording(path, **options):
    model = original(path, **options)
    wq = model.params["layers"]["wq"]
    result["cli"].append({"mesh": dict(model.mesh.shape), "fsdp": options.get("fsdp"),
                          "wq_shard": list(wq.addressable_shards[0].data.shape)})
    return model


jaxcontam.load_model = recording
for name, extra in runs.items():
    main(["score", "--model", path, "--data", texts, "--out", f"{out_dir}/{name}.jsonl", *extra])
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    original(path, mesh=make_mesh(1, 8))
result["warnings"] = [str(w.message) for w in caught if issubclass(w.category, jaxcontam.JaxcontamWarning)]
print(json.dumps(result))
"""


@pytest.fixture(scope="module")
def stories(shared_data, tmp_path_factory):
    """stories260K as a Hugging Face folder: 8 heads, 4 kv heads, hidden 64, MLP 172, vocabulary 512, 5 layers."""
    folder = shared_data / "tiny_lm_stories260K"
    return convert_llama2c(folder / "stories260K.bin", folder / "tok512.bin", tmp_path_factory.mktemp("stories"))


@pytest.fixture(scope="module")
def eight_devices(stories, tmp_path_factory):
    """SCRIPT's results on 8 forced CPU devices, and the folder of its `jaxcontam score` outputs."""
    out = tmp_path_factory.mktemp("scores")
    texts = out / "texts.txt"
    texts.write_text("\n".join(TEXTS) + "\n")
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=8", "JAX_PLATFORMS": "cpu"}
    command = [
        sys.executable,
        "-c",
        SCRIPT,
        str(stories),
        str(texts),
        str(out),
        json.dumps(FSDP_MESHES),
        json.dumps(CLI_RUNS),
    ]
    proc = subprocess.run(command, check=False, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1]), out


def test_fsdp_logprobs_equal_the_single_device_ones_with_weights_split_data_x_model_ways(eight_devices):
    results, _ = eight_devices
    base = results["load"]["1x1"]
    for data, model, _ in FSDP_MESHES[1:]:
        run = results["load"][f"{data}x{model}"]
        for a, b in zip(base["logprobs"], run["logprobs"], strict=True):
            np.testing.assert_allclose(a, b, atol=1e-5, rtol=0, err_msg=f"fsdp on mesh ({data}, {model})")
        for name, w in run["weights"].items():  # every one of these has a dim "data" (and "model") divides
            split = data if name == "final_norm" else data * model  # a norm has no dim "model" splits
            assert math.prod(w["shard"]) * split == math.prod(w["shape"]), (name, data, model, w)
            assert "data" in w["spec"], (name, w["spec"])
        assert run["weights"]["wq"]["spec"] == [None, "data", "model" if model > 1 else None, None]  # [L, D, H, Dh]
        assert run["weights"]["wq"]["shard"] == [5, 64 // data, 8 // model, 8]


def test_cli_mesh_reaches_the_model_and_the_scores_stay_the_same(eight_devices):
    results, out = eight_devices
    plain, mesh, fsdp = results["cli"]
    assert plain == {"mesh": {"data": 8, "model": 1}, "fsdp": False, "wq_shard": [5, 64, 8, 8]}  # the default
    assert mesh == {"mesh": {"data": 2, "model": 4}, "fsdp": False, "wq_shard": [5, 64, 2, 8]}
    assert fsdp == {"mesh": {"data": 4, "model": 2}, "fsdp": True, "wq_shard": [5, 16, 4, 8]}  # data: the rest
    scores = {
        name: [json.loads(line) for line in (out / f"{name}.jsonl").read_text().splitlines()] for name in CLI_RUNS
    }
    assert len(scores["plain"]) == len(TEXTS)
    for name in ("mesh", "fsdp"):
        for a, b in zip(scores["plain"], scores[name], strict=True):
            assert a["id"] == b["id"] and a["num_tokens"] == b["num_tokens"]
            np.testing.assert_allclose(a["token_logprobs"], b["token_logprobs"], atol=1e-5, rtol=0, err_msg=name)


def test_a_model_axis_that_does_not_divide_says_which_weights_are_replicated(eight_devices):
    results, _ = eight_devices
    (message,) = results["warnings"]
    assert "model axis (8) does not divide its 4 kv_heads (layers/wk, layers/wv)" in message
    assert "its 172 mlp (layers/w_gate, layers/w_up, layers/w_down)" in message
    assert "replicated over 'model'" in message and "e.g. --mesh data=2,model=4" in message


def test_warn_unsplit_names_nothing_when_the_model_axis_divides():
    spec = from_hf_config(
        {
            "model_type": "llama",
            "vocab_size": 64,
            "hidden_size": 32,
            "intermediate_size": 48,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "hidden_act": "silu",
            "max_position_embeddings": 64,
            "rms_norm_eps": 1e-5,
        }
    )
    entries = checkpoint_entries(spec)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert warn_unsplit(entries, AbstractMesh((4, 2), ("data", "model")), "x") == []
    with pytest.warns(jaxcontam.JaxcontamWarning, match=r"does not divide its 2 kv_heads .*data=2,model=2"):
        assert warn_unsplit(entries, AbstractMesh((1, 4), ("data", "model")), "x") == ["layers/wk", "layers/wv"]


def test_fsdp_splits_the_largest_free_dim_never_the_layers():
    def spec(shape, axes, fsdp=True, mesh=(4, 2)):
        return tuple(weight_sharding(AbstractMesh(mesh, ("data", "model")), shape, axes, fsdp=fsdp).spec)

    assert spec((5, 64, 8, 8), (LAYERS, None, "heads", None)) == (None, "data", "model", None)
    assert spec((5, 64, 8, 8), (LAYERS, None, "heads", None), fsdp=False) == (None, None, "model", None)
    assert spec((8, 6), (LAYERS, None)) == (None, None)  # the stacked layers stay whole; 4 does not divide 6
    assert spec((512, 64), ("vocab", None)) == ("model", "data")
    assert spec((8, 172), (None, "mlp")) == ("data", "model")  # 8: the one dim left
    assert spec((64, 8), (None, "heads"), mesh=(1, 8)) == (None, "model")  # no data axis to split over


@pytest.mark.parametrize("text", ["data=2;model=4", "data=0", "gpu=2", "data=2,data=4", "", "data=two", "model"])
def test_malformed_mesh_strings_are_refused_with_an_example(text):
    with pytest.raises(JaxcontamError, match=r"expected AXIS=SIZE .*e\.g\. --mesh data=2,model=4"):
        mesh_sizes(text)


def test_one_parser_for_plan_commands_and_config():
    from jaxcontam.planning import plan as planning

    assert planning.parse_mesh is parse_mesh
    assert parse_mesh("data=2,model=4") == (2, 4) and parse_mesh(" model = 4 ") == (1, 4)  # plan: left out is 1
    assert MeshSettings.from_option("model=2", fsdp=True) == MeshSettings(data=None, model=2, fsdp=True)
    assert MeshSettings.from_option(None) == MeshSettings()
    assert dict(MeshSettings().build().shape) == {"data": 1, "model": 1}  # default: every device on "data"


def test_commands_refuse_a_mesh_that_is_not_the_device_count_before_loading(jaxcontam_cli, tmp_path):
    texts = tmp_path / "t.txt"
    texts.write_text("a b c\n")
    common = ["--data", texts, "--out", tmp_path / "o.jsonl", "--model", "m"]
    for command in ("score", "generate"):
        code, err = jaxcontam_cli(command, *common, "--mesh", "data=2,model=4")
        assert code == 2 and "mesh data=2,model=4 needs 8 devices but 1 are available" in err, err
        assert "choose data x model = 1, e.g. data=1,model=1" in err and "MODEL LOAD REACHED" not in err
        code, err = jaxcontam_cli(command, *common, "--mesh", "data=two")
        assert code == 2 and "--mesh 'data=two': expected AXIS=SIZE" in err and "MODEL LOAD REACHED" not in err
    code, err = jaxcontam_cli("audit", "--config", EXAMPLE_CONFIG, "--mesh", "model=2", "--out", tmp_path / "a")
    assert code == 2 and "needs 2 devices but 1 are available" in err and "MODEL LOAD REACHED" not in err
    code, err = jaxcontam_cli(
        "pacost",
        "--model",
        EXAMPLE_CONFIG.parent / "model",
        "--benchmark",
        "copa",
        "--split",
        "test",
        "--rephrase-model",
        "r",
        "--rephrase-mesh",
        "data=4",
        "--out",
        tmp_path / "p",
    )
    assert code == 2 and "mesh data=4,model=1 needs 4 devices" in err and "MODEL LOAD REACHED" not in err
    code, err = jaxcontam_cli("score", *common)  # no --mesh: the default mesh, and the model is loaded
    assert "MODEL LOAD REACHED" in err


def write_config(tmp_path, extra: str):
    path = tmp_path / "audit.toml"
    path.write_text(f'{extra}\n[[model]]\npath = "m"\n[[benchmark]]\nname = "copa"\n')
    return path


def test_the_config_mesh_table_and_the_rephrase_models_mesh_and_dtype(tmp_path):
    config = load_config(
        write_config(
            tmp_path,
            "[mesh]\ndata = 2\nmodel = 4\nfsdp = true\n[pacost]\n"
            'rephrase_model = "r"\nrephrase_dtype = "bfloat16"\n'
            "rephrase_mesh = {model = 2}",
        )
    )
    assert config.mesh == MeshSettings(data=2, model=4, fsdp=True)
    assert config.pacost.rephrase_mesh == MeshSettings(data=None, model=2, fsdp=False)
    assert config.pacost.rephrase_dtype == "bfloat16" and config.settings()["rephrase_dtype"] == "bfloat16"
    plain = load_config(write_config(tmp_path, ""))
    assert plain.mesh == MeshSettings() and plain.pacost == PacostConfig()
    # the command line takes precedence: --mesh replaces the sizes, --fsdp/--no-fsdp the flag
    configured = ("--config", write_config(tmp_path, "[mesh]\ndata = 2\nmodel = 4\nfsdp = true"))
    assert audit_config_of(*configured, "--no-fsdp").mesh == MeshSettings(data=2, model=4, fsdp=False)
    assert audit_config_of(*configured, "--mesh", "model=8").mesh == MeshSettings(data=None, model=8, fsdp=True)
    assert audit_config_of("--model", "m", "--benchmark", "b", "--mesh", "data=1").mesh == MeshSettings(data=1)


@pytest.mark.parametrize(
    "extra, message",
    [
        (
            "[mesh]\ndata = 0",
            r"\[mesh\]: data = 0 is not a number of devices; write a whole number >= 1, e\.g\. data = 2",
        ),
        ('[mesh]\nmodel = "4"', r"\[mesh\]: model = '4' is not a number of devices; .*e\.g\. model = 2"),
        ("[mesh]\nfsdp = 1", r"\[mesh\]: fsdp = 1 must be true or false, e\.g\. fsdp = true"),
        ("[mesh]\ntensor = 2", r"\[mesh\]: unknown key\(s\) tensor; known: data, fsdp, model"),
        ("mesh = 2", r"\[mesh\]: expected a table of data, model, fsdp, got 2; write e\.g\. \{data = 2, model = 4\}"),
        (
            '[pacost]\nrephrase_mesh = "data=2"',
            r"rephrase_mesh: expected a table .*write e\.g\. \{data = 2, model = 4\}",
        ),
        ("[pacost]\nrephrase_mesh = {data = 1, pipeline = 2}", r"rephrase_mesh: unknown key\(s\) pipeline"),
        (
            '[pacost]\nrephrase_dtype = "float16"',
            r"rephrase_dtype: dtype 'float16' is not supported; use one of float32",
        ),
    ],
)
def test_a_bad_mesh_or_rephrase_setting_is_refused_naming_the_fix(tmp_path, extra, message):
    with pytest.raises(JaxcontamError, match=message):
        load_config(write_config(tmp_path, extra))
