"""On two local CPU processes (two hosts' stand-in), a weight sharded across them with a NaN in one process's shard:
that process names the tensor, the other says only that the shards it holds are finite, and neither waits for the
other (no collective in the error path: an error may stop one host alone)."""

import json
import textwrap

from helpers import free_port, run_processes

WORKER = textwrap.dedent(
    """
    import json, sys
    import jax
    import numpy as np
    port, pid, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    jax.distributed.initialize(coordinator_address=f"127.0.0.1:{port}", num_processes=2, process_id=pid)
    from jaxcontam.engine.finite import nonfinite_weights, weights_cause

    mesh = jax.make_mesh((2,), ("data",), (jax.sharding.AxisType.Auto,))
    values = np.ones((2, 4, 3), np.float32)
    values[1, 2, 0] = np.nan  # in the row process 1 holds
    sharded = jax.sharding.NamedSharding(mesh, jax.P("data"))
    params = {"layers": {"wq": jax.make_array_from_callback(values.shape, sharded, lambda i: values[i])}}
    assert not params["layers"]["wq"].is_fully_addressable
    if pid == 1:  # a check process 0 does not make: a collective in it would wait for process 0 forever
        nonfinite_weights(params)
    result = {"weights": nonfinite_weights(params), "cause": weights_cause([("model m", params)])}
    json.dump(result, open(out, "w"))
    """
)


def test_each_process_names_the_broken_shards_it_holds_and_says_what_it_could_not_see(tmp_path):
    port = free_port()
    run_processes(lambda i: ["-c", WORKER, port, i, tmp_path / f"out{i}.json"], timeout=120)
    first, second = (json.loads((tmp_path / f"out{i}.json").read_text()) for i in range(2))
    assert first["weights"] == [] and second["weights"] == ["layers.wq"]  # no layer index from a shard alone
    assert first["cause"].startswith(
        "every weight of model m that this process holds (other processes check the rest) is finite"
    )
    assert second["cause"].startswith("the weights hold NaN or inf (model m: layers.wq): the checkpoint is broken")
