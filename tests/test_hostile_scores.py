"""A model that computes NaN or inf stops the work with an error naming the texts or items; stats refuse NaN.

Reproduction of issue 61's case: a copy of the bundled example model with one NaN weight made `jaxcontam score`
write NaN log-probs with exit 0 and `jaxcontam audit` report accuracy and "no test" verdicts from NaN scores.
"""

import os
import shutil
import subprocess
import sys
import textwrap

import jax.numpy as jnp
import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

from helpers import run_cli, toy_model
from jaxcontam.audit.config import EXAMPLE_CONFIG
from jaxcontam.engine.finite import NonFiniteScoresError, nonfinite_weights, weights_cause
from jaxcontam.engine.generation import generate
from jaxcontam.engine.scoring import score_logprobs
from jaxcontam.stats import StatsInputError, paired_test, power, sample_size
from jaxcontam.stats.batched import METHODS, paired_pvalues
from jaxcontam.stats.wilcoxon import wilcoxon_pvalues

BROKEN = 7  # the toy token whose embedding is NaN


@pytest.fixture(scope="module")
def broken_toy():
    model = toy_model()
    model.params = dict(model.params, embed=model.params["embed"].at[BROKEN].set(np.nan))
    return model


@pytest.fixture(scope="module")
def nan_weight_model(tmp_path_factory):
    """The bundled example model with one NaN in a layer-0 attention weight."""
    folder = tmp_path_factory.mktemp("nan-model")
    shutil.copytree(EXAMPLE_CONFIG.parent / "model", folder, dirs_exist_ok=True)
    weights = load_file(folder / "model.safetensors")
    name = "model.layers.0.self_attn.q_proj.weight"
    weights[name] = weights[name].copy()
    weights[name][0, 0] = np.nan
    save_file(weights, folder / "model.safetensors", metadata={"format": "pt"})
    return folder


def test_scoring_refuses_the_sequences_that_score_nan_and_names_them(broken_toy):
    sequences = [[1, 2, 3], [4, BROKEN, 5, 6], [8, 9], [BROKEN, 1]]
    with pytest.raises(NonFiniteScoresError, match="2 of 4 sequences are NaN or infinite") as caught:
        score_logprobs(broken_toy, sequences, with_stats=True, pack=False)  # a row per sequence: NaN stays in it
    assert caught.value.bad == (1, 3)
    assert "rms_norm_eps" in str(caught.value) and "float32" in str(caught.value)
    fine = score_logprobs(broken_toy, sequences[:1] + sequences[2:3], with_stats=True, pack=False)
    assert all(np.isfinite(s.logprobs).all() for s in fine)


def test_generation_from_nan_logits_is_refused_even_when_it_stops_at_once(broken_toy):
    """A row picked from NaN logits may stop at its first token (an empty answer): its pick still counts."""
    with pytest.raises(NonFiniteScoresError, match="generated tokens' log-probs of 1 of 2"):
        generate(broken_toy, [[1, 2, 3], [4, BROKEN]], max_new_tokens=3, stop_token_ids=list(range(61)))


def test_naming_replaces_sequence_numbers_by_item_names():
    error = NonFiniteScoresError("log-probs", [0, 2], 3).naming(["text 'a'", "text 'c'"], "data.txt")
    assert str(error).startswith("data.txt: log-probs of 2 of 3 sequences are NaN or infinite (text 'a', text 'c')")


def test_the_weights_that_hold_nan_or_inf_are_named_with_their_layers(broken_toy):
    """Every floating tensor is read, a stacked layer's index is given, an integer tensor is not a weight that can be
    NaN, and a model whose weights are all finite is said to be so (its NaN comes from a config or overflow)."""
    assert nonfinite_weights(broken_toy.params) == ("embed",)
    assert nonfinite_weights(toy_model().params) == ()
    stacked = np.zeros((4, 3, 2), np.float32)
    stacked[2, 1, 0], stacked[3, 0, 1] = np.inf, np.nan
    params = {"layers": {"wq": jnp.asarray(stacked), "scale": jnp.ones((4, 3))}, "codes": jnp.zeros(5, jnp.uint8)}
    assert nonfinite_weights(params) == ("layers.wq (layers 2, 3)",)
    assert nonfinite_weights({"head": {"w": jnp.asarray([1.0, np.nan], jnp.bfloat16)}}) == ("head.w",)
    broken = weights_cause([("model m", params), ("reference model r", toy_model().params)])
    assert broken.startswith("the weights hold NaN or inf (model m: layers.wq (layers 2, 3)): the checkpoint is broken")
    finite = weights_cause([("model m", toy_model().params)])
    assert finite.startswith("every weight of model m is finite") and "rms_norm_eps" in finite
    error = NonFiniteScoresError("log-probs", [0], 1).naming(["text 'a'"], "data.txt").explained(broken)
    assert str(error) == f"data.txt: log-probs of 1 of 1 sequences are NaN or infinite (text 'a'): {broken}"
    assert error.naming(["text 'b'"], "other.txt").cause == broken  # naming keeps the explanation


MESH_WEIGHTS = textwrap.dedent(
    """
    import jax, numpy as np
    from jaxcontam.engine.finite import nonfinite_weights
    values = np.ones((4, 6, 8), np.float32)
    values[1, 5, 7] = np.nan
    for axis_type in (jax.sharding.AxisType.Explicit, jax.sharding.AxisType.Auto):
        mesh = jax.make_mesh((2, 2), ("data", "model"), (axis_type,) * 2)
        on = lambda spec: jax.device_put(values, jax.sharding.NamedSharding(mesh, spec))
        print(nonfinite_weights({"layers": {"split": on(jax.P(None, None, "model")), "copied": on(jax.P())}}))
    """
)


def test_weights_sharded_or_copied_over_a_process_s_devices_name_their_layer():
    """One process, 4 CPU devices: a layer split along its last axis (which a reshape could not merge under
    explicit sharding) and one copied to every device are each named once, with the layer."""
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=4", "JAX_PLATFORMS": "cpu"}
    proc = subprocess.run(
        [sys.executable, "-c", MESH_WEIGHTS], check=False, env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split("\n")[:2] == ["('layers.copied (layer 1)', 'layers.split (layer 1)')"] * 2


@pytest.mark.parametrize("method", METHODS)
def test_paired_kernels_refuse_nan_and_inf_differences(method):
    for bad in (np.nan, np.inf, -np.inf):
        with pytest.raises(StatsInputError, match="not finite"):
            paired_pvalues(np.array([[0.1, bad, 0.3]]), method, "greater")
    with pytest.raises(StatsInputError, match="not finite"):
        wilcoxon_pvalues(np.array([0.2, np.nan]), "greater")


def test_a_paired_test_with_only_missing_pairs_gives_no_pvalue():
    with pytest.raises(StatsInputError, match="needs at least 1 usable pairs, got 0 of 3"):
        paired_test([np.nan] * 3, [0.1, 0.2, 0.3], method="permutation")


def test_power_refuses_a_nan_effect():
    """sample_size(NaN) returned 2 pairs before."""
    with pytest.raises(StatsInputError, match="effect_size=nan"):
        sample_size(float("nan"))
    with pytest.raises(StatsInputError, match="effect_size=nan"):
        power(float("nan"), 30)
    with pytest.raises(StatsInputError, match="mean_difference=inf"):
        sample_size(mean_difference=float("inf"), sd=1.0)


def test_score_command_stops_naming_the_texts_and_writes_nothing(nan_weight_model, tmp_path, capsys):
    data = tmp_path / "texts.txt"
    data.write_text("The quick brown fox jumps\nAnother line of text here\n")
    out = tmp_path / "scores.jsonl"
    code, printed = run_cli(["score", "--model", nan_weight_model, "--data", data, "--out", out], capsys)
    assert code == 2, printed
    assert "log-probs of 2 of 2 sequences are NaN or infinite (text '1', text '2')" in printed
    assert f"the weights hold NaN or inf ({nan_weight_model}: layers.wq (layer 0)): the checkpoint is broken" in printed
    assert "Traceback" not in printed and not out.exists()


def test_generate_command_stops_naming_the_prompts_and_the_broken_tensor(nan_weight_model, tmp_path, capsys):
    data = tmp_path / "prompts.txt"
    data.write_text("Question: what is two plus two?\nName a colour.\n")
    out = tmp_path / "completions.jsonl"
    args = ["generate", "--model", nan_weight_model, "--data", data, "--out", out, "--max-new-tokens", 4]
    code, printed = run_cli(args, capsys)
    assert code == 2, printed
    assert f"{data} answered by {nan_weight_model}: generated tokens' log-probs of 2 of 2 sequences" in printed
    assert "(prompt '1', prompt '2')" in printed
    assert f"the weights hold NaN or inf ({nan_weight_model}: layers.wq (layer 0))" in printed
    assert "Traceback" not in printed and not out.exists()


def test_audit_stops_naming_model_benchmark_stage_and_items(nan_weight_model, tmp_path, capsys):
    out = tmp_path / "audit"
    args = ["audit", "--config", EXAMPLE_CONFIG, "--model", nan_weight_model, "--limit", 2, "--out", out]
    code, printed = run_cli(args, capsys)
    assert code == 2, printed
    assert (
        f"model {nan_weight_model.name} ({nan_weight_model}) on gsm8k: pacost, items gsm8k/test/0 .. gsm8k/test/1 (2)"
        in printed
    )
    assert "NaN or infinite" in printed and "Traceback" not in printed
    assert f"the weights hold NaN or inf (model {nan_weight_model.name}: layers.wq (layer 0))" in printed
    assert not (out / "summary.json").exists()
