"""The two model shapes of the check (configs/), random weights for each, and their FLOP and byte counts.

One torch `LlamaForCausalLM` per shape is built with seeded random weights (on the GPU when there is one) and saved
as a safetensors folder: jaxcontam loads that folder as a user's checkpoint, torch keeps the module, so both sides
score the same weights. `--smoke` shrinks every shape to a few layers of 64 features.
"""

from __future__ import annotations

import dataclasses
import json
import pathlib

CONFIGS = pathlib.Path(__file__).resolve().parents[1] / "configs"
NAMES = ("SmolLM2-135M", "Llama-3.2-1B")
SMOKE = {
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "vocab_size": 512,
    "max_position_embeddings": 512,
}


@dataclasses.dataclass(frozen=True)
class Shape:
    """A decoder's sizes, as config.json gives them."""

    name: str
    config: dict

    @property
    def layers(self) -> int:
        return self.config["num_hidden_layers"]

    @property
    def hidden(self) -> int:
        return self.config["hidden_size"]

    @property
    def heads(self) -> int:
        return self.config["num_attention_heads"]

    @property
    def kv_heads(self) -> int:
        return self.config["num_key_value_heads"]

    @property
    def head_dim(self) -> int:
        return self.config.get("head_dim") or self.hidden // self.heads

    @property
    def vocab(self) -> int:
        return self.config["vocab_size"]

    @property
    def matmul_params(self) -> int:
        """Weights that enter a matrix product per token: attention and MLP projections and the output head."""
        attention = self.hidden * self.head_dim * (2 * self.heads + 2 * self.kv_heads)
        mlp = 3 * self.hidden * self.config["intermediate_size"]
        return self.layers * (attention + mlp) + self.vocab * self.hidden

    def flops_per_token(self, context: int) -> float:
        """Forward FLOPs per token of a causal row of `context` tokens: 2 per matmul weight, plus the scores and
        the weighted values over the half of the square the mask keeps (2 x 2 x context / 2 x heads x head_dim)."""
        return 2.0 * self.matmul_params + 2.0 * self.layers * context * self.heads * self.head_dim

    def kv_bytes_per_token(self, itemsize: int) -> int:
        """KV-cache bytes one cached token holds over all layers."""
        return 2 * self.layers * self.kv_heads * self.head_dim * itemsize


def load(name: str, smoke: bool) -> Shape:
    config = json.loads((CONFIGS / f"{name}.json").read_text())
    if smoke:
        config.update(SMOKE)
    return Shape(name, config)


def build(shape: Shape, folder: pathlib.Path, device: str):
    """A seeded random float32 torch model of `shape` on `device`, also saved to `folder` (safetensors)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(**{k: v for k, v in shape.config.items() if k not in ("architectures", "torch_dtype")})
    config._attn_implementation = "sdpa"
    torch.manual_seed(0)
    with torch.device(device):
        model = LlamaForCausalLM(config).float().eval()
    model.save_pretrained(folder, safe_serialization=True)
    (folder / "config.json").write_text(json.dumps(shape.config | {"torch_dtype": "float32"}, indent=1))
    return model


def torch_dtype(dtype: str):
    import torch

    return {"float32": torch.float32, "bfloat16": torch.bfloat16}[dtype]
