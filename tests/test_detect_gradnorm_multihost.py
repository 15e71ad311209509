"""GradNorm on two local CPU processes (gloo collectives), the bundled tiny model: each process differentiates only
its share of the rows (split over the mesh's "data" axis, as scoring splits them), and both end with every item's
gradient norm, equal to a one-process run."""

import json
import textwrap

import numpy as np

from helpers import TINY_MODEL, bundled_target, free_port, run_processes

ITEMS = 6

WORKER = textwrap.dedent(
    """
    import dataclasses, json, sys
    import jax
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    port, pid, items, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    jax.distributed.initialize(coordinator_address=f"127.0.0.1:{port}", num_processes=2, process_id=pid)
    import jaxcontam
    from helpers import TINY_MODEL, bundled_target
    from jaxcontam.detect.gradnorm import GradNormSettings
    from jaxcontam.detect.stage import StageInput
    from jaxcontam.detectors.gradnorm import GRADNORM_STAGE

    differentiated = []  # the scored tokens of every row this process's device differentiated

    class CountingSpec:
        \"\"\"The model's spec, noting each row whose loss it runs (once per row and device, inside the step).\"\"\"

        def __init__(self, spec):
            self.spec = spec

        def __getattr__(self, name):
            return getattr(self.spec, name)

        def hidden_states(self, params, tokens, positions, segment_ids):
            note = lambda t, s: differentiated.append(t[s > 0].tolist())
            jax.debug.callback(note, tokens[0], segment_ids[0])
            return self.spec.hidden_states(params, tokens, positions, segment_ids)

    model = jaxcontam.load_model(str(TINY_MODEL))
    assert model.mesh.shape["data"] == 2 and jax.process_count() == 2 and len(jax.local_devices()) == 1
    model = dataclasses.replace(model, config=CountingSpec(model.config))
    benchmark, target = bundled_target("gsm8k", items)
    records = GRADNORM_STAGE.per_item.records(StageInput(model, target, 0, 0), GradNormSettings(), list(benchmark))
    json.dump({"records": records, "differentiated": [r for r in differentiated if r]}, open(out, "w"))
    """
)


def test_two_processes_split_the_rows_and_both_get_the_one_process_norms(tmp_path):
    import jaxcontam
    from jaxcontam.detect.gradnorm import GradNormSettings
    from jaxcontam.detect.stage import StageInput
    from jaxcontam.detectors.gradnorm import GRADNORM_STAGE

    port = free_port()
    run_processes(lambda i: ["-c", WORKER, port, i, ITEMS, tmp_path / f"out{i}.json"], timeout=300)
    results = [json.loads((tmp_path / f"out{i}.json").read_text()) for i in range(2)]

    model = jaxcontam.load_model(str(TINY_MODEL))
    benchmark, target = bundled_target("gsm8k", ITEMS)
    items = list(benchmark)
    expected = GRADNORM_STAGE.per_item.records(StageInput(model, target, 0, 0), GradNormSettings(), items)
    for result in results:
        assert [r["id"] for r in result["records"]] == [r["id"] for r in expected]
        np.testing.assert_allclose(
            [r["gradnorm"] for r in result["records"]], [r["gradnorm"] for r in expected], rtol=1e-5
        )

    texts = sorted(model.tokenizer.encode(benchmark.solved_text(item)) for item in items)
    shares = [result["differentiated"] for result in results]
    assert all(shares), "each process differentiates some rows"
    assert sorted(shares[0] + shares[1]) == texts  # every row once, on one process only
