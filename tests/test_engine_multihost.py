"""Two local CPU processes (gloo collectives) score one list together and both get all results in order."""

import json
import os
import pathlib
import subprocess
import sys
import textwrap

import numpy as np

from helpers import free_port, naive_logprobs, toy_model

WORKER = textwrap.dedent(
    """
    import json, sys
    import jax
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    port, pid, inp, out = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    jax.distributed.initialize(coordinator_address=f"127.0.0.1:{port}", num_processes=2, process_id=pid)
    from helpers import toy_model
    from jaxcontam.engine.generation import generate
    from jaxcontam.engine.scoring import score_logprobs
    seqs = json.load(open(inp))
    model = toy_model()
    assert model.mesh.shape["data"] == 2 and jax.process_count() == 2
    scores = score_logprobs(model, seqs, rows_per_batch=2, buckets=(16, 64))
    sampled = generate(model, [s[:5] for s in seqs], max_new_tokens=6, temperature=1.0, seed=4, rows_per_batch=2)
    json.dump({"logprobs": [s.logprobs.tolist() for s in scores], "sampled": [g.token_ids for g in sampled],
               "local_devices": len(jax.local_devices())}, open(out, "w"))
    """
)


def test_two_processes_agree_with_single_process_reference(tmp_path):
    rng = np.random.default_rng(3)
    seqs = [rng.integers(0, 61, size=rng.integers(2, 60)).tolist() for _ in range(11)]
    port = free_port()
    (tmp_path / "seqs.json").write_text(json.dumps(seqs))
    tests_dir = pathlib.Path(__file__).parent
    env = dict(
        os.environ,
        PYTHONPATH=f"{tests_dir}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
        XLA_FLAGS="--xla_force_host_platform_device_count=1",
        JAX_PLATFORMS="cpu",
    )
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                WORKER,
                str(port),
                str(i),
                str(tmp_path / "seqs.json"),
                str(tmp_path / f"out{i}.json"),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=env,
            text=True,
        )
        for i in range(2)
    ]
    logs = [p.communicate(timeout=120)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs), logs
    results = [json.loads((tmp_path / f"out{i}.json").read_text()) for i in range(2)]
    assert results[0]["local_devices"] == 1
    reference = toy_model(mesh=None)
    from jaxcontam.engine.generation import generate

    sampled = generate(reference, [s[:5] for s in seqs], max_new_tokens=6, temperature=1.0, seed=4, rows_per_batch=2)
    for r in results:
        assert len(r["logprobs"]) == len(seqs)
        assert r["sampled"] == [g.token_ids for g in sampled]
        for seq, lp in zip(seqs, r["logprobs"]):
            np.testing.assert_allclose(lp, naive_logprobs(reference, seq), rtol=1e-5, atol=1e-5)
