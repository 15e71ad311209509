"""Train small decoders in JAX (optax) with the same weights layout jaxcontam loads.

Used by the bundled example and the controlled-contamination experiments: a model is
trained from scratch on public text with benchmark items injected at known rates, then
saved as a Hugging Face directory that `jaxcontam.load_model` reads like any checkpoint.

    tensors = init_hf_tensors(config, seed=0)
    tensors = train(config, tensors, packed_batches(docs, seq_len=256, batch_size=16), steps=600)
    save_hf_model(out_dir, config, tensors, tokenizer)

The loop needs the `train` extra (optax, orbax): `pip install "jaxcontam[train]"`; it is imported on first use,
so the weights, batches and tokenizer helpers (and `jaxcontam.AuditCallback`) work without it.
"""

import typing as _typing

from jaxcontam.training.batches import packed_batches
from jaxcontam.training.tokenizer import train_bpe_tokenizer
from jaxcontam.training.weights import init_hf_tensors, params_from_hf, save_hf_model

if _typing.TYPE_CHECKING:  # the names `__getattr__` imports on first use, for type checkers
    from jaxcontam.training.loop import TrainResult, train

__all__ = [
    "TrainResult",
    "init_hf_tensors",
    "packed_batches",
    "params_from_hf",
    "save_hf_model",
    "train",
    "train_bpe_tokenizer",
]


def __getattr__(name: str):
    """`train` and `TrainResult`, imported on first use (they need the `train` extra)."""
    if name in ("train", "TrainResult"):
        from jaxcontam.training import loop

        return getattr(loop, name)
    raise AttributeError(f"module 'jaxcontam.training' has no attribute {name!r}")
