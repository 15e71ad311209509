"""`jaxcontam plan`: loop-aware HLO costs, a TPU-topology plan of a tiny model, and the errors that name a fix."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcontam.cli import main
from jaxcontam.errors import JaxcontamError
from jaxcontam.models.spec import from_hf_config
from jaxcontam.planning import plan as planning
from jaxcontam.planning.hlo_costs import hlo_costs

REPO = Path(__file__).resolve().parents[1]

TINY = {
    "model_type": "llama",
    "vocab_size": 512,
    "hidden_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "intermediate_size": 128,
    "max_position_embeddings": 512,
    "hidden_act": "silu",
    "rms_norm_eps": 1e-5,
}
needs_libtpu = pytest.mark.skipif(importlib.util.find_spec("libtpu") is None, reason="libtpu not installed")


def test_hlo_costs_count_every_loop_trip():
    """A scan of L matmuls costs L x 2 B D^2 flops; XLA's own cost_analysis counts the loop body once."""
    batch, width, layers = 8, 32, 5

    def stack(x, weights):
        return jax.lax.scan(lambda h, w: (jnp.tanh(h @ w), None), x, weights)[0]

    compiled = (
        jax.jit(stack)
        .lower(
            jax.ShapeDtypeStruct((batch, width), jnp.float32), jax.ShapeDtypeStruct((layers, width, width), jnp.float32)
        )
        .compile()
    )
    costs = hlo_costs(compiled.as_text())
    assert costs.flops == pytest.approx(layers * 2 * batch * width * width)
    assert costs.unknown_trip_loops == 0
    assert costs.bytes_accessed >= 4 * (batch * width + layers * width * width)  # every weight read at least once


def test_hlo_costs_share_a_conditionals_runs_among_its_branches():
    """Each of L layers runs one of two branches (a sliding or a global layer): L x the branches' mean matmul."""
    batch, width, layers = 8, 32, 4

    def stack(x, weights, kinds):
        def layer(h, inputs):
            w, kind = inputs
            return jax.lax.switch(kind, [lambda h: jnp.tanh(h @ w), lambda h: jnp.tanh((h @ w) @ w)], h), None

        return jax.lax.scan(layer, x, (weights, kinds))[0]

    compiled = (
        jax.jit(stack)
        .lower(
            jax.ShapeDtypeStruct((batch, width), jnp.float32),
            jax.ShapeDtypeStruct((layers, width, width), jnp.float32),
            jax.ShapeDtypeStruct((layers,), jnp.int32),
        )
        .compile()
    )
    assert hlo_costs(compiled.as_text()).flops == pytest.approx(layers * 1.5 * 2 * batch * width * width)


SPLASH_HLO = """HloModule splash

ENTRY %main (q: bf16[2,2,128,1024], k: bf16[2,1,128,1024], v: bf16[2,1,1024,128]) -> bf16[2,2,1024,128] {
  %q = bf16[2,2,128,1024]{3,2,1,0} parameter(0)
  %k = bf16[2,1,128,1024]{3,2,1,0} parameter(1)
  %v = bf16[2,1,1024,128]{3,2,1,0} parameter(2)
  %blocks = s8[1,2,2]{2,1,0} constant({ { { 1, 0 }, { 2, 1 } } })
  ROOT %splash_mha_fwd_segmented.1 = bf16[2,2,1024,128]{3,2,1,0} custom-call(%blocks, %q, %k, %v), \
custom_call_target="tpu_custom_call"
}
"""


def test_splash_kernel_costs_its_visited_blocks():
    """The Mosaic call XLA cannot see into: causal 1024 tokens in 512-blocks visit 3 of 4 (q, k) blocks; each
    costs QK^T and PV, 2 x 512 x 512 x 128 flops each per head, for 2 rows x 2 query heads; and the third block
    re-reads one 512-key block of k and v beyond reading every operand once."""
    costs = hlo_costs(SPLASH_HLO)
    assert costs.flops == 3 * 2 * (2 * 512 * 512 * 128) * 2 * 2
    operands = 2 * (2 * 2 * 128 * 1024 + 2 * 1 * 128 * 1024 + 2 * 1 * 1024 * 128) + 2 * 2 * 2 * 1024 * 128 + 4
    assert costs.bytes_accessed == operands + (2 * 1 * 512 * 128 * 2) * 2


@pytest.fixture(scope="module")
def tiny_plan(tmp_path_factory):
    config = tmp_path_factory.mktemp("plan") / "config.json"
    config.write_text(json.dumps(TINY))
    return config


@needs_libtpu
def test_plan_v5e_every_step(tiny_plan, capsys):
    main(
        [
            "plan",
            "--model",
            str(tiny_plan),
            "--topology",
            "v5e:2x4",
            "--mesh",
            "data=4,model=2",
            "--batch",
            "8",
            "--seq",
            "64",
            "--prompt-len",
            "16",
            "--new-tokens",
            "8",
            "--chunk-tokens",
            "4096",
            "--table-rows",
            "1000",
            "--json",
        ]
    )
    report = json.loads(capsys.readouterr().out)
    assert [s["step"] for s in report["steps"]] == ["score", "generate", "p_true", "ngram"]
    assert report["chip"]["name"] == "v5e" and report["mesh"] == {"data": 4, "model": 2, "fsdp": False}
    spec = from_hf_config(TINY)
    d, v, f, layers = spec.hidden_size, spec.vocab_size, spec.intermediate_size, spec.num_layers
    head_dim, heads, kv = spec.head_dim, spec.num_heads, spec.num_kv_heads
    matmuls = v * d + layers * (d * head_dim * (2 * heads + 2 * kv) + 3 * d * f)  # output head and layers
    sharded = v * d + matmuls  # the embedding and the matmul weights are split over "model" (untied llama)
    replicated = d + 2 * layers * d  # the norms
    for step in report["steps"]:
        assert step["flops_per_device"] >= 0 and step["bytes_accessed_per_device"] > 0
        assert step["fits"] is True and step["tokens_per_second_upper_bound"] > 0
        # the roofline is a lower bound on time; the estimate takes at least as long
        assert step["seconds_estimate"] >= step["roofline_seconds_lower_bound"] > 0
        assert 0 < step["tokens_per_second_estimate"] <= step["tokens_per_second_upper_bound"]
        assert step["above_published"] is False and step["best_published_mfu"] == 0.6686
        if step["step"] != "ngram":
            assert step["weights_bytes_per_device"] == 2 * (sharded // 2 + replicated)  # bf16, model=2
            assert step["argument_bytes_per_device"] >= step["weights_bytes_per_device"]
            assert 0 < step["mfu_estimate"] <= step["mfu_upper_bound"] <= 1
        else:
            assert step["mfu_estimate"] is None and step["mfu_upper_bound"] is None
    assert "lower bound on time" in report["roofline"]
    assert {k: report["efficiency"][k]["value"] for k in ("compute", "hbm", "ici")} == {
        "compute": 0.611,
        "hbm": 0.49,
        "ici": 0.82,
    }
    score = report["steps"][0]
    # the matmuls of 8 x 64 tokens per 8 devices (model flops written from the architecture, not the code)
    tokens_per_device = 8 * 64 / 4
    matmul_flops = 2 * tokens_per_device * (matmuls / 2)
    assert matmul_flops <= score["flops_per_device"] <= 2.5 * matmul_flops
    assert any(c["kind"] == "all-reduce" for c in score["collectives"])  # tensor parallel: partial sums merged


TINY_MIXTRAL = {**TINY, "model_type": "mixtral", "num_local_experts": 4, "num_experts_per_tok": 2}
TINY_GEMMA3 = {
    **TINY,
    "model_type": "gemma3_text",
    "num_hidden_layers": 3,
    "head_dim": 16,
    "sliding_window": 16,
    "hidden_activation": "gelu_pytorch_tanh",
    "query_pre_attn_scalar": 16,
    "sliding_window_pattern": 3,
    "rope_theta": 1e6,
    "rope_local_base_freq": 1e4,
}


@needs_libtpu
@pytest.mark.parametrize("config", [TINY_MIXTRAL, TINY_GEMMA3], ids=["mixtral", "gemma3_text"])
def test_plan_compiles_moe_and_gemma3_for_tpu(config, tmp_path, capsys):
    """A Mixtral- and a Gemma-3-shaped model compile for a v5e slice; the experts are split over "model"."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    main(
        [
            "plan",
            "--model",
            str(path),
            "--topology",
            "v5e:2x2",
            "--mesh",
            "data=2,model=2",
            "--batch",
            "4",
            "--seq",
            "64",
            "--prompt-len",
            "16",
            "--new-tokens",
            "4",
            "--steps",
            "score,generate",
            "--json",
        ]
    )
    report = json.loads(capsys.readouterr().out)
    spec = from_hf_config(config)
    d, f, layers = spec.hidden_size, spec.intermediate_size, spec.num_layers
    experts = spec.experts.count or 1
    mlp_bytes = 2 * layers * experts * 3 * d * f  # bf16
    for step in report["steps"]:
        assert step["fits"] is True and step["tokens_per_second_upper_bound"] > 0
        # every MLP (or expert) weight is split over the 2 "model" devices: the rest is far smaller than half of it
        assert mlp_bytes / 2 <= step["weights_bytes_per_device"] < mlp_bytes / 2 + 0.5 * mlp_bytes, step


@needs_libtpu
def test_plan_with_fsdp_holds_a_quarter_of_the_weights_per_device(tiny_plan, capsys):
    """data=4, model=2: fsdp splits every weight over "data" too, so a device holds 1/8 instead of 1/2."""
    held = {}
    for flag in ([], ["--fsdp"]):
        main(
            [
                "plan",
                "--model",
                str(tiny_plan),
                "--topology",
                "v5e:2x4",
                "--mesh",
                "data=4,model=2",
                "--batch",
                "8",
                "--seq",
                "64",
                "--steps",
                "score",
                "--json",
                *flag,
            ]
        )
        report = json.loads(capsys.readouterr().out)
        held[bool(flag)] = report["steps"][0]["weights_bytes_per_device"]
        assert report["mesh"]["fsdp"] is bool(flag) and report["steps"][0]["fits"]
    assert 3.5 < held[False] / held[True] <= 4.0


@needs_libtpu
def test_a_batch_beyond_the_hbm_is_refused_with_the_fix(capsys):
    """XLA's compiler refuses the program; plan says so with its numbers and what to change, no traceback."""
    with pytest.raises(SystemExit) as exit_info:
        main(
            [
                "plan",
                "--model",
                str(REPO / "experiments" / "plan" / "configs" / "Llama-3.2-1B.json"),
                "--topology",
                "v5e:2x2",
                "--batch",
                "2048",
                "--seq",
                "2048",
                "--steps",
                "score",
            ]
        )
    error = capsys.readouterr().err
    assert exit_info.value.code == 2 and "Traceback" not in error
    assert re.search(r"score \(2048 x 2048\) does not fit: .*HBM.*--batch or --seq.*--fsdp", error), error


@needs_libtpu
def test_plan_prints_a_table(tiny_plan, capsys):
    main(
        ["plan", "--model", str(tiny_plan), "--topology", "v5e:2x2", "--steps", "score", "--batch", "4", "--seq", "32"]
    )
    out = capsys.readouterr().out
    assert "not measurements" in out and 'Cloud TPU docs, "TPU v5e"' in out
    assert out.count("\nscore ") == 1 and "collectives:" in out
    assert "tokens/s upper bound  MFU upper bound  est. tokens/s  est. MFU" in out
    assert "a lower bound on time, so its tokens/s and MFU are upper bounds" in out
    assert "best published MFU on v5e: 66.9%" in out and "!" not in out.split("collectives:")[0]


@needs_libtpu
def test_mesh_errors_name_the_fix():
    spec = from_hf_config(TINY)
    devices = planning.topology_devices("v5e:2x4")
    with pytest.raises(JaxcontamError, match="choose data x model = 8"):
        planning.plan_mesh(spec, devices, 3, 3)
    with pytest.raises(JaxcontamError, match=r"does not divide the model's 2 key/value heads.*\[1, 2\]"):
        planning.plan_mesh(spec, devices, 2, 4)
    with pytest.raises(JaxcontamError, match="e.g. --mesh data=2,model=4"):
        planning.parse_mesh("data=2;model=4")
    assert planning.default_model_axis(spec, 8) == 2


@needs_libtpu
def test_unknown_topology_lists_known_ones():
    with pytest.raises(JaxcontamError, match="libtpu does not know TPU topology 'v9x:2x2'.*v5e:2x4.*v5p:2x2x1"):
        planning.topology_devices("v9x:2x2")


def test_missing_libtpu_says_how_to_install(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "libtpu" else real(name, *a))
    with pytest.raises(JaxcontamError, match=r"pip install 'jaxcontam\[tpu\]'"):
        planning.topology_devices("v5e:2x4")


def test_v4_chip_is_shared_by_its_tensorcores():
    """libtpu shows each v4 TensorCore as a device: a device gets half the chip's published figures."""
    from jaxcontam.planning.tpu_chips import CHIPS

    v4 = CHIPS["TPU v4"]
    half = v4.per_device(2)
    assert half.peak_flops == 275e12 / 2 and half.hbm_bytes == 16 << 30 and half.ici_bandwidth is None
    assert np.isclose(half.hbm_bandwidth, 600e9)


@needs_libtpu
def test_forward_temporaries_grow_linearly_with_context_on_tpu():
    """Llama-3.2-1B's forward (every layer's attention) on v5e:2x2, data=2 x model=2: twice the context costs
    under 2.3x the per-device temporaries, and at 8192 tokens they are a small fraction of the float32
    [B, H, T, T] scores a quadratic attention holds (8 GiB per chip here)."""
    from jaxcontam.models import decoder

    spec = from_hf_config(json.loads((REPO / "experiments" / "plan" / "configs" / "Llama-3.2-1B.json").read_text()))
    mesh = planning.plan_mesh(spec, planning.topology_devices("v5e:2x2"), 2, 2)
    params = planning.abstract_params(spec, jnp.bfloat16, mesh)
    forward = jax.jit(
        lambda p, tokens, positions, segments: decoder.hidden_states(p, spec, tokens, positions, segments)
    )
    temps = {}
    for seq in (4096, 8192):
        rows = [planning.rows(mesh, (4, seq)) for _ in range(3)]
        with jax.set_mesh(mesh):
            temps[seq] = forward.lower(params, *rows).compile().memory_analysis().temp_size_in_bytes
    assert 0 < temps[8192] < 2.3 * temps[4096], temps
    quadratic_scores = (4 // 2) * (spec.num_heads // 2) * 8192 * 8192 * 4
    assert temps[8192] < quadratic_scores / 16, temps


def test_plan_resolves_the_model_as_load_model_does(tmp_path):
    """A config.json file or the folder holding it; a path that is neither, nor a hub id, is named."""
    from jaxcontam.commands.plan import read_spec

    (tmp_path / "config.json").write_text(json.dumps(TINY))
    assert read_spec(str(tmp_path / "config.json")) == read_spec(str(tmp_path)) == from_hf_config(TINY)
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(JaxcontamError, match="bad.json: not valid JSON"):
        read_spec(str(tmp_path / "bad.json"))
    with pytest.raises(JaxcontamError, match="no such directory, and not a hub id of the form 'owner/name'"):
        read_spec(str(tmp_path / "missing"))


def test_every_chip_has_published_efficiencies_each_with_its_source():
    """Each chip jaxcontam has figures for has an entry in the efficiency table; every figure is a fraction of
    peak with what was measured and where it is published, and the compute efficiency is no higher than the best
    MFU published for the chip."""
    from jaxcontam.planning.efficiency import EFFICIENCY
    from jaxcontam.planning.tpu_chips import CHIPS

    assert {c.name for c in CHIPS.values()} == set(EFFICIENCY)
    for chip, entry in EFFICIENCY.items():
        for name in ("compute", "hbm", "ici", "best_mfu"):
            figure = getattr(entry, name)
            assert 0 < figure.value < 1, (chip, name)
            assert figure.measured and ("github.com/" in figure.source or "jax-ml.github.io/" in figure.source)
        assert entry.compute.value <= entry.best_mfu.value, chip


def _step(**changes):
    from jaxcontam.planning.hlo_costs import Collective

    fields = dict(
        step="score",
        shape="8 x 2048",
        tokens=8 * 2048,
        weights_bytes=1 << 30,
        argument_bytes=1 << 30,
        temp_bytes=1 << 30,
        output_bytes=0,
        hbm_bytes=16 << 30,
        flops=197e12,  # one second of a v5e chip at peak
        bytes_accessed=0.2 * 819e9,  # 0.2 s at peak HBM bandwidth
        collectives=(Collective("all-reduce", "bf16[8,2048,4096]", 4_000_000_000, 2.0),),  # 8 GB: 20 ms of ICI
        model_flops=4 * 197e12,
        roofline_seconds=1.0,
        bound="compute",
        unknown_trip_loops=0,
    )
    return planning.StepPlan(**{**fields, **changes})


def test_the_estimate_divides_each_resource_time_by_its_published_efficiency():
    """max(compute / 0.611, HBM / 0.49) + ICI / 0.82 with an all-reduce's traffic twice its bytes, on 4 v5e chips."""
    from jaxcontam.planning.tpu_chips import CHIPS

    v5e = CHIPS["TPU v5 lite"]
    plan = _step()
    found = planning.estimate(plan, v5e, 4)
    seconds = max(1.0 / 0.611, 0.2 / 0.49) + 2 * 8e9 / (400e9 * 0.82)
    assert found.seconds == pytest.approx(seconds)
    assert found.tokens_per_second == pytest.approx(8 * 2048 / seconds)
    assert found.mfu == pytest.approx(1 / seconds) and found.mfu < planning.mfu_upper_bound(plan, v5e, 4) == 1
    assert found.above_published is False
    # HBM-bound: 3 s at peak bandwidth, 3 / 0.49 s estimated
    hbm = planning.estimate(_step(bytes_accessed=3 * 819e9, collectives=()), v5e, 4)
    assert hbm.seconds == pytest.approx(3 / 0.49)
    # no published figures (a CPU host): no estimate
    assert planning.estimate(plan, None, 4) is None


def test_an_estimate_above_the_best_published_mfu_is_flagged(capsys):
    """A step whose compiled flops undercount its model flops (1.5x here) estimates 0.611 x 1.5 = 92% MFU, above
    the 66.86% MaxText publishes for v5e: `above_published` in the JSON, a marker and a note in the console."""
    from jaxcontam.commands.plan import efficiency_record, print_report, step_record
    from jaxcontam.planning.tpu_chips import CHIPS

    v5e = CHIPS["TPU v5 lite"]
    plan = _step(model_flops=1.5 * 197e12, bytes_accessed=0.0, collectives=())
    record = step_record(plan, v5e, 1)
    assert record["mfu_estimate"] == pytest.approx(0.611 * 1.5)
    assert record["above_published"] is True and record["best_published_mfu"] == 0.6686
    assert record["mfu_upper_bound"] == pytest.approx(1.5)  # the roofline's MFU bounds the estimate's
    report = {
        "model": "m",
        "model_type": "llama",
        "dtype": "bfloat16",
        "topology": "v5e:1x1",
        "devices": 1,
        "device_kind": "TPU v5 lite",
        "mesh": {"data": 1, "model": 1, "fsdp": False},
        "note": "compiler estimates",
        "roofline": "a lower bound on time",
        "chip": {
            "name": "v5e",
            "source": v5e.source,
            "peak_flops_per_device": v5e.peak_flops,
            "hbm_bytes_per_device": v5e.hbm_bytes,
            "hbm_bandwidth_per_device": v5e.hbm_bandwidth,
            "ici_bandwidth_per_device": v5e.ici_bandwidth,
        },
        "efficiency": efficiency_record(v5e),
        "steps": [record, step_record(_step(), v5e, 4)],
    }
    print_report(report)
    out = capsys.readouterr().out
    score_lines = [line for line in out.splitlines() if line.startswith("score ")]
    assert score_lines[0].rstrip().endswith("92%!") and score_lines[1].rstrip().endswith("%")
    assert not score_lines[1].rstrip().endswith("!")
    assert "! an estimated MFU above the best published for v5e (66.9%)" in out


@needs_libtpu
def test_plan_v6e_uses_its_published_figures(tiny_plan, capsys):
    """libtpu knows v6e (device kind "TPU v6 lite"): Cloud TPU's v6e figures, MaxText's Llama-3.1-8B MFU."""
    main(["plan", "--model", str(tiny_plan), "--topology", "v6e:2x2", "--steps", "score", "--seq", "32", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert report["chip"]["name"] == "v6e" and report["chip"]["peak_flops_per_device"] == 918e12
    assert report["efficiency"]["compute"]["value"] == 0.4546
    step = report["steps"][0]
    assert 0 < step["mfu_estimate"] <= step["mfu_upper_bound"] and step["above_published"] is False


def test_device_groups_read_every_hlo_form():
    from jaxcontam.planning.hlo_costs import device_groups

    assert device_groups("replica_groups={{0,1},{2,3}}, dimensions={0}") == ((0, 1), (2, 3))
    assert device_groups("channel_id=1, replica_groups=[2,4]<=[8], use_global_device_ids=true") == (
        (0, 1, 2, 3),
        (4, 5, 6, 7),
    )
    # ids laid out 2 x 4, transposed to 4 x 2, cut into groups of 2: the columns of the 2 x 4 layout
    assert device_groups("replica_groups=[4,2]<=[2,4]T(1,0)") == ((0, 4), (1, 5), (2, 6), (3, 7))
    assert device_groups("source_target_pairs={{0,1},{1,2}}") == ((0, 1), (1, 2))
    assert device_groups("replica_groups={}, to_apply=%add") is None


def test_a_collective_crosses_hosts_when_a_group_holds_devices_of_two_hosts():
    from jaxcontam.planning.hlo_costs import Collective

    hosts = [0, 0, 1, 1]
    within = Collective("all-reduce", "f32[4]", 16, 1, ((0, 1), (2, 3)))
    across = Collective("all-gather", "f32[4]", 16, 1, ((0, 2), (1, 3)))
    everyone = Collective("all-reduce", "f32[]", 4, 1, None)
    assert [planning.crosses_hosts(c, hosts) for c in (within, across, everyone)] == [False, True, True]
    assert planning.crosses_hosts(within, None) is None


@needs_libtpu
def test_plan_on_a_multi_host_slice_names_its_hosts_and_which_collectives_cross_them(tiny_plan, capsys):
    """v5e:4x4 is 16 chips on 4 hosts (libtpu's topology): the data axis gathers results across hosts over ICI,
    while some model-axis exchanges stay within a host."""
    main(
        [
            "plan",
            "--model",
            str(tiny_plan),
            "--topology",
            "v5e:4x4",
            "--steps",
            "generate",
            "--batch",
            "16",
            "--prompt-len",
            "16",
            "--new-tokens",
            "4",
            "--json",
        ]
    )
    report = json.loads(capsys.readouterr().out)
    assert (report["hosts"], report["devices_per_host"], report["devices"]) == (4, 4, 16)
    assert "data-center network" in report["network"]
    flags = [c["crosses_hosts"] for c in report["steps"][0]["collectives"]]
    assert set(flags) == {True, False}
