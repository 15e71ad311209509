"""On a mesh spanning two processes (two local CPU processes, gloo collectives), each process reads about half of
the weight bytes of a safetensors or a quantised GGUF checkpoint: the bytes of its own shards, counted by the
kernel (/proc/self/io's rchar, on a second load so that lazy imports and compiles of the first are not counted),
and the model they build scores exactly as the single-process load does."""

import json
import pathlib
import textwrap
import threading

import numpy as np
import pytest

from helpers import TINY_LLAMA_CONFIG, free_port, run_processes
from jaxcontam.training import init_hf_tensors, save_hf_model

pytestmark = pytest.mark.skipif(not pathlib.Path("/proc/self/io").exists(), reason="needs Linux's /proc/self/io")

CONFIG = {
    **TINY_LLAMA_CONFIG,
    "vocab_size": 2048,
    "hidden_size": 256,
    "intermediate_size": 1024,
    "num_hidden_layers": 4,
    "num_attention_heads": 8,
    "num_key_value_heads": 4,
    "max_position_embeddings": 128,
}

WORKER = textwrap.dedent(
    """
    import json, sys
    import jax
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    port, pid, folder, out = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    if len(sys.argv) > 5:  # a model in a bucket: this process's own counting proxy
        import os
        os.environ["AWS_ENDPOINT_URL"] = sys.argv[5].split(",")[pid]
    jax.distributed.initialize(coordinator_address=f"127.0.0.1:{port}", num_processes=2, process_id=pid)
    import pathlib
    import numpy as np
    from jaxcontam.mesh import make_mesh
    from jaxcontam.models import loading
    from jaxcontam.engine.scoring import score_logprobs
    from jaxcontam.models.model import Model

    def read_bytes():
        return int(dict(line.split(": ") for line in open("/proc/self/io").read().splitlines())["rchar"])

    folder = loading.resolve_path(folder)
    mesh = make_mesh(data=1, model=2)
    spec = loading.read_config(folder)
    if folder.suffix == ".gguf":
        from jaxcontam.models.gguf import GGUFTensorReader, open_reader, tensor_index

        index = tensor_index(open_reader(folder), spec, folder)

        def load():
            reader = GGUFTensorReader(spec)
            return loading.place_params(spec, index, reader, np.float32, mesh, folder, "metadata")
    else:
        files = loading.weight_files(folder)

        def load():
            return loading.load_params(folder, files, spec, np.float32, mesh)

    if len(sys.argv) > 5:  # on the wire, counted by the proxy: one load
        params, read = load(), None
    else:  # by the kernel: a second load, without the imports and compiles of the first
        load()
        before = read_bytes()
        params = load()
        read = read_bytes() - before
    model = Model(config=spec, params=params, tokenizer=None, mesh=mesh)
    seqs = [[1, 5, 9, 300, 2000, 7], [1, 42, 42, 42]]
    scores = score_logprobs(model, seqs)
    json.dump({"read": read, "logprobs": [s.logprobs.tolist() for s in scores]}, open(out, "w"))
    """
)


def safetensors_checkpoint(tmp_path) -> tuple[pathlib.Path, int]:
    """The checkpoint and its weight bytes."""
    folder = save_hf_model(tmp_path / "model", CONFIG, init_hf_tensors(CONFIG, seed=0))
    return folder, (folder / "model.safetensors").stat().st_size


def gguf_checkpoint(tmp_path) -> tuple[pathlib.Path, int]:
    """The same architecture as a Q8_0 GGUF file (llama.cpp's layout) and its tensor bytes."""
    import gguf
    import torch
    import transformers

    from gguf_writer import write_gguf
    from jaxcontam.models.gguf_file import read_gguf

    torch.manual_seed(0)
    config = {k: v for k, v in CONFIG.items() if k != "model_type"}
    model = transformers.LlamaForCausalLM(transformers.LlamaConfig(**config)).eval()
    path = tmp_path / "model.Q8_0.gguf"
    write_gguf(path, model, "llama", gguf.GGMLQuantizationType.Q8_0)
    return path, sum(tensor.data.nbytes for tensor in read_gguf(path).tensors)


def assert_half_each(reads: list[int], weight_bytes: int) -> None:
    replicated = 4 * CONFIG["hidden_size"] * (2 * CONFIG["num_hidden_layers"] + 1)  # the norm scales, on both
    for read in reads:
        assert read <= (weight_bytes + replicated) / 2 + 64 * 1024, (read, weight_bytes)
        assert read >= 0.45 * weight_bytes  # it did read its own half


def assert_scores_as_one_process(results: list[dict], folder) -> None:
    import jaxcontam
    from jaxcontam.engine.scoring import score_logprobs

    reference = score_logprobs(jaxcontam.load_model(str(folder)), [[1, 5, 9, 300, 2000, 7], [1, 42, 42, 42]])
    for result in results:
        for got, want in zip(result["logprobs"], reference):
            np.testing.assert_allclose(got, want.logprobs, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("checkpoint", [safetensors_checkpoint, gguf_checkpoint], ids=["safetensors", "gguf"])
def test_each_process_reads_half_the_weight_bytes_and_scores_as_one_process(tmp_path, checkpoint):
    folder, weight_bytes = checkpoint(tmp_path)
    port = free_port()
    run_processes(lambda i: ["-c", WORKER, port, i, folder, tmp_path / f"{i}.json"], timeout=240)
    results = [json.loads((tmp_path / f"{i}.json").read_text()) for i in range(2)]
    assert_half_each([result["read"] for result in results], weight_bytes)
    assert_scores_as_one_process(results, folder)


def test_from_a_bucket_each_process_fetches_half_the_weight_bytes(tmp_path):
    """Measured on the wire: each process talks to S3 through its own counting proxy, and loads once."""
    from experiments.object_stores import CountingProxy, s3_server

    folder, weight_bytes = safetensors_checkpoint(tmp_path)
    with s3_server() as (direct, first):
        direct.mkdir("models")
        direct.put(str(folder) + "/", "models/sharded/", recursive=True)
        second = CountingProxy(first.upstream)
        threading.Thread(target=second.serve_forever, daemon=True).start()
        endpoints = ",".join(f"http://127.0.0.1:{proxy.server_address[1]}" for proxy in (first, second))
        port = free_port()
        run_processes(
            lambda i: ["-c", WORKER, port, i, "s3://models/sharded", tmp_path / f"{i}.json", endpoints], timeout=240
        )
        second.shutdown()
        fetched = [proxy.fetched["/models/sharded/model.safetensors"] for proxy in (first, second)]
    assert_half_each(fetched, weight_bytes)
    assert_scores_as_one_process([json.loads((tmp_path / f"{i}.json").read_text()) for i in range(2)], folder)
