"""Compile the scoring head (vocabulary log-softmax) for a TPU topology on this CPU machine and print its cost.

Only the head: hidden states [B, T, D] arrive as a ShapeDtypeStruct split over "data", the [V, D] output matrix
is split over "model" (as `models.sharding` places it), and `token_logprob_stats` (or the fused Pallas kernel with
--kernel) runs under that mesh. Prints per-device temporaries from `memory_analysis()` and every collective of the
optimized HLO with the bytes it moves. Needs libtpu (`pip install "jax[tpu]"` at the installed jax version).

    JAX_PLATFORMS=cpu python -m experiments.perf.tpu_vocab_head                  # Llama-3.1-8B head, v5e:2x4
    JAX_PLATFORMS=cpu python -m experiments.perf.tpu_vocab_head --kernel         # the fused Pallas kernel
"""

from __future__ import annotations

import argparse
import collections
import functools
import re
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import topologies
from jax.sharding import NamedSharding

_COLLECTIVE = re.compile(r"=\s*(\S.*?)\s+(all-gather|all-reduce|collective-permute|reduce-scatter|all-to-all)"
                         r"(-start)?\(")
_ARRAY = re.compile(r"\b(pred|[subf]\d+|bf16)\[([\d,]*)\]")
_BYTES = {"pred": 1, "bf16": 2}


def _array_bytes(dtype: str, dims: str) -> int:
    width = _BYTES.get(dtype) or int(dtype[1:]) // 8
    return width * int(np.prod([int(d) for d in dims.split(",") if d] or [1]))


def collectives(hlo: str) -> list[tuple[str, str, int]]:
    """(kind, largest result array, bytes moved) for every collective in optimized HLO text.

    A synchronous collective of a tuple moves every element; an async -start returns (operand, result, ...),
    of which the largest is what moves.
    """
    found = []
    for line in hlo.splitlines():
        match = _COLLECTIVE.search(line)
        if match is None:
            continue
        arrays = [(f"{t}[{d}]", _array_bytes(t, d)) for t, d in _ARRAY.findall(match.group(1))]
        shape, size = max(arrays, key=lambda a: a[1])
        moved = size if match.group(3) else sum(a[1] for a in arrays)
        found.append((match.group(2), shape, moved))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topology", default="v5e:2x4")
    parser.add_argument("--data", type=int, default=2)
    parser.add_argument("--model", type=int, default=4)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--seq", type=int, default=2048)
    parser.add_argument("--vocab", type=int, default=128256)
    parser.add_argument("--hidden", type=int, default=4096)
    parser.add_argument("--vocab-block", type=int, default=2048)
    parser.add_argument("--softcap", type=float, default=None)
    parser.add_argument("--kernel", action="store_true", help="the fused Pallas kernel instead of the jnp scan")
    args = parser.parse_args()

    from jaxcontam.kernels.vocab_blocks import token_logprob_stats

    topology = topologies.get_topology_desc(platform="tpu", topology_name=args.topology)
    mesh = jax.make_mesh((args.data, args.model), ("data", "model"), (jax.sharding.AxisType.Auto,) * 2,
                         devices=topology.devices)
    hidden = jax.ShapeDtypeStruct((args.batch, args.seq, args.hidden), jnp.bfloat16,
                                  sharding=NamedSharding(mesh, jax.P("data", None, None)))
    weight = jax.ShapeDtypeStruct((args.vocab, args.hidden), jnp.bfloat16,
                                  sharding=NamedSharding(mesh, jax.P("model", None)))
    targets = jax.ShapeDtypeStruct((args.batch, args.seq), jnp.int32,
                                   sharding=NamedSharding(mesh, jax.P("data", None)))
    if args.kernel:
        from jaxcontam.kernels.vocab_logprobs import fused_token_logprob_stats as head
    else:
        head = token_logprob_stats
    head = functools.partial(head, softcap=args.softcap, vocab_block=args.vocab_block, with_stats=True)
    start = time.perf_counter()
    with jax.set_mesh(mesh):
        compiled = jax.jit(head).lower(hidden, weight, targets).compile()
    seconds = time.perf_counter() - start
    memory = compiled.memory_analysis()
    cost = compiled.cost_analysis()
    gib, mib = 2**30, 2**20
    print(f"{'kernel' if args.kernel else 'jnp scan'} head on {args.topology}, mesh data={args.data} x "
          f"model={args.model}, [{args.batch}, {args.seq}] x V={args.vocab}, D={args.hidden}, "
          f"vocab_block={args.vocab_block}: compiled in {seconds:.1f} s")
    print(f"per device: arguments {memory.argument_size_in_bytes / gib:.3f} GiB, "
          f"temporaries {memory.temp_size_in_bytes / mib:.1f} MiB, output {memory.output_size_in_bytes / mib:.2f} MiB; "
          f"XLA cost: {cost.get('flops', 0) / 1e12:.2f} TFLOP, {cost.get('bytes accessed', 0) / gib:.2f} GiB accessed")
    found = collectives(compiled.as_text())
    totals = collections.Counter()
    for kind, shape, size in found:
        totals[kind] += size
        print(f"  {kind:<18} {shape:<24} {size / 2**20:10.3f} MiB")
    print("collective bytes per device:", {k: f"{v / 2**20:.3f} MiB" for k, v in totals.items()} or "none")


if __name__ == "__main__":
    main()
