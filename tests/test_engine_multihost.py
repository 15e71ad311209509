"""Two local CPU processes (gloo collectives) score one list together and both get all results in order."""

import json
import textwrap

import numpy as np

from helpers import free_port, naive_logprobs, run_processes, toy_model

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
    run_processes(lambda i: ["-c", WORKER, port, i, tmp_path / "seqs.json", tmp_path / f"out{i}.json"])
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
