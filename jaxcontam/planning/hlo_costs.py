"""Loop-aware costs of a compiled program, read from its optimized HLO text.

XLA's `cost_analysis()` counts the body of a while loop once, whatever its trip count: a `lax.scan` over 32
layers reports the flops of one layer. This module re-counts from the optimized HLO text (with its constants
written out: `planning.plan.program_text`), weighting every computation by how often it runs (the product of the
trip counts of the loops around it):

- flops: 2 x output elements x contracted elements of every dot and convolution (matmuls are what the
  roofline needs; elementwise work is ignored);
- bytes accessed: operands + result of every instruction outside fused computations (a fusion reads its
  inputs from and writes its output to memory once; inside it values stay on chip);
- the TPU splash attention kernel (a Mosaic custom call XLA cannot see into): its score and value matmuls over
  the key blocks its block mask visits (the mask is a constant operand of the call), and its reads of those
  key/value blocks (`_splash_costs`);
- collectives: every all-gather / all-reduce / reduce-scatter / all-to-all / collective-permute with its result
  shape and bytes, and how many times it runs.

A loop's trip count is XLA's `known_trip_count` when given, else the constant its condition compares the loop
counter against (`i < N`); a condition without one (a data-dependent stop) counts once and is reported.
"""

from __future__ import annotations

import dataclasses
import math
import re

import numpy as np

COLLECTIVES = ("all-gather", "all-reduce", "reduce-scatter", "all-to-all", "collective-permute")
_DTYPE_BYTES = {
    "pred": 1,
    "s4": 0.5,
    "u4": 0.5,
    "s8": 1,
    "u8": 1,
    "f8e4m3fn": 1,
    "f8e5m2": 1,
    "bf16": 2,
    "f16": 2,
    "s16": 2,
    "u16": 2,
    "f32": 4,
    "s32": 4,
    "u32": 4,
    "f64": 8,
    "s64": 8,
    "u64": 8,
    "c64": 8,
    "c128": 16,
}
_ARRAY = re.compile(r"\b(" + "|".join(_DTYPE_BYTES) + r")\[([0-9,]*)\]")
_INSTRUCTION = re.compile(r"^\s*(?:ROOT\s+)?%(\S+)\s*=\s*(.+?)\s+([a-z][a-z0-9-]*)\((.*)$")
_HEADER = re.compile(r"^(?:ENTRY\s+)?%(\S+)\s")
_NO_TRAFFIC = {
    "parameter",
    "tuple",
    "get-tuple-element",
    "bitcast",
    "constant",
    "after-all",
    "partition-id",
    "replica-id",
    "copy-done",
    "all-gather-done",
    "all-reduce-done",
    "collective-permute-done",
    "async-done",
    "while",
    "conditional",
    "call",
}


@dataclasses.dataclass(frozen=True)
class Collective:
    """One collective instruction: kind, result shape, bytes per run, and runs per program execution."""

    kind: str
    shape: str
    bytes: int
    count: float  # fractional inside a conditional branch (branches share its runs)
    groups: tuple[tuple[int, ...], ...] | None = None  # devices exchanging data (positions in the device
    # assignment); None: every device in one group (or not read)


@dataclasses.dataclass(frozen=True)
class HloCosts:
    flops: float
    bytes_accessed: float
    collectives: tuple[Collective, ...]
    unknown_trip_loops: int  # while loops whose trip count could not be read (counted once)

    @property
    def collective_bytes(self) -> float:
        return sum(c.bytes * c.count for c in self.collectives)


@dataclasses.dataclass
class _Instruction:
    name: str
    shape: str
    op: str
    rest: str


def _arrays(shape: str) -> list[tuple[str, list[int]]]:
    return [(dtype, [int(d) for d in dims.split(",") if d]) for dtype, dims in _ARRAY.findall(shape)]


def shape_bytes(shape: str) -> int:
    """Bytes of an HLO shape string (a tuple's arrays summed)."""
    return int(sum(_DTYPE_BYTES[dtype] * math.prod(dims) for dtype, dims in _arrays(shape)))


def _parse(text: str) -> tuple[dict[str, list[_Instruction]], str, set[str]]:
    """Computations (name -> instructions), the entry's name, and the names of fused computations."""
    computations: dict[str, list[_Instruction]] = {}
    entry, current, fused = "", None, set()
    for line in text.splitlines():
        if current is None:
            header = _HEADER.match(line)
            if header and line.rstrip().endswith("{"):
                current = header.group(1)
                computations[current] = []
                entry = current if line.startswith("ENTRY") else entry
            continue
        if line.strip() == "}":
            current = None
            continue
        match = _INSTRUCTION.match(line)
        if match:
            instruction = _Instruction(*match.groups())
            computations[current].append(instruction)
            if instruction.op == "fusion":
                fused.update(re.findall(r"calls=%([\w.-]+)", instruction.rest))
    return computations, entry, fused


def _trip_count(instruction: _Instruction, computations) -> int | None:
    known = re.search(r'"known_trip_count":\{"n":"(\d+)"', instruction.rest)
    if known:
        return int(known.group(1))
    condition = re.search(r"condition=%([\w.-]+)", instruction.rest)
    body = computations.get(condition.group(1), []) if condition else []
    constants = {i.name: i.rest for i in body if i.op == "constant"}
    for i in body:
        if i.op == "compare" and "direction=LT" in i.rest:
            for operand in re.findall(r"%([\w.-]+)", i.rest.split(")")[0]):
                value = re.match(r"\s*(-?\d+)\)", constants.get(operand, ""))
                if value:
                    return int(value.group(1))
    return None


def _multipliers(computations, entry) -> tuple[dict[str, float], int]:
    """How many times each computation runs per execution of the entry (a conditional's branches share its
    runs equally); loops with unknown trip counts."""
    runs: dict[str, float] = {}
    unknown = 0

    def visit(name: str, times: float) -> None:
        nonlocal unknown
        runs[name] = runs.get(name, 0) + times
        for instruction in computations.get(name, []):
            trips = 1
            if instruction.op == "while":
                trips = _trip_count(instruction, computations)
                unknown += trips is None
                trips = trips or 1
            for key, callee in re.findall(r"\b(calls|body|condition|to_apply)=%([\w.-]+)", instruction.rest):
                visit(callee, times * (trips if key in ("body", "condition") else 1))
            for group in re.findall(r"branch_computations=\{([^}]*)\}", instruction.rest):
                branches = re.findall(r"%([\w.-]+)", group)
                for callee in branches:  # one branch runs per execution: weighted equally (gemma2's windows)
                    visit(callee, times / len(branches))

    visit(entry, 1)
    return runs, unknown


def _dot_flops(instruction: _Instruction, shapes: dict[str, str]) -> float:
    out = _arrays(instruction.shape)
    if not out:
        return 0.0
    out_elements = math.prod(out[0][1])
    operands = re.findall(r"%([\w.-]+)", instruction.rest.split(")")[0])
    lhs = _arrays(shapes.get(operands[0], "")) if operands else []
    if not lhs:
        return 0.0
    lhs_dims = lhs[0][1]
    if instruction.op == "dot":
        contracting = re.search(r"lhs_contracting_dims=\{([0-9,]*)\}", instruction.rest)
        dims = [int(d) for d in contracting.group(1).split(",") if d] if contracting else []
        return 2.0 * out_elements * math.prod(lhs_dims[d] for d in dims)
    labels = re.search(r"dim_labels=([^_]+)_", instruction.rest)
    groups = re.search(r"feature_group_count=(\d+)", instruction.rest)
    if not labels:
        return 0.0
    features = lhs_dims[labels.group(1).index("f")]
    taps = _window_taps(instruction.rest, labels.group(1), lhs_dims)
    return 2.0 * out_elements * features * taps / (int(groups.group(1)) if groups else 1)


def _window_taps(rest: str, lhs_labels: str, lhs_dims: list[int]) -> int:
    """Input elements one output element of a convolution reads per feature.

    XLA writes batched matmuls as convolutions whose batch dimensions are spatial dimensions with a window over
    a dilated or padded input, of which one element per window is real: per spatial dimension, count the real
    elements a window covers (at most the window, the window over the dilation, and the input's size).
    """
    window = re.search(r"window=\{([^}]*)\}", rest)
    if not window:
        return 1
    fields = dict(part.split("=", 1) for part in window.group(1).split())
    sizes = [int(s) for s in fields.get("size", "").split("x") if s]
    dilation = [int(s) for s in fields.get("lhs_dilate", "").split("x") if s] or [1] * len(sizes)
    taps = 1
    for dim, (size, dilate) in enumerate(zip(sizes, dilation)):
        taps *= min(size, -(-size // dilate), lhs_dims[lhs_labels.index(str(dim))])
    return taps


_SPLASH_MATMULS = {"fwd": 2, "dq": 3, "dkv": 4}  # [Tq, Tk] matmuls per visited block: QK, PV (+ backward's)


def _constant_values(rest: str) -> list[int]:
    """The integers of a constant's literal (`rest`: what follows `constant(`, i.e. "{ ... }), metadata=...")."""
    literal = re.match(r"\s*(\{[^)]*\})\)", rest)
    return [int(v) for v in re.findall(r"-?\d+", literal.group(1))] if literal else []


def _producer(
    name: str,
    index: int | None,
    instructions: dict[str, _Instruction],
    parents: dict[str, str],
    loops: dict[str, _Instruction],
    depth: int = 0,
) -> _Instruction | None:
    """The instruction whose value `name` carries (element `index` of it when `name` is a tuple), followed through
    copies, bitcasts, tuples and loop parameters back to where it was made (e.g. a constant hoisted out of a
    loop)."""
    instruction = instructions.get(name)
    if instruction is None or depth > 64:
        return None
    operands = re.findall(r"%([\w.-]+)", instruction.rest.split(")")[0])
    if instruction.op in ("copy", "copy-start", "copy-done", "bitcast") and operands:
        return _producer(operands[0], index, instructions, parents, loops, depth + 1)
    if instruction.op == "get-tuple-element" and operands:
        found_index = re.search(r"index=(\d+)", instruction.rest)
        assert found_index is not None  # XLA writes every get-tuple-element's index
        element = int(found_index.group(1))
        found = _producer(operands[0], element, instructions, parents, loops, depth + 1)
        return (
            found
            if index is None or found is None
            else _producer(found.name, index, instructions, parents, loops, depth + 1)
        )
    if instruction.op == "tuple" and index is not None and index < len(operands):
        return _producer(operands[index], None, instructions, parents, loops, depth + 1)
    if instruction.op == "parameter" and index is not None:
        loop = loops.get(parents.get(name, ""))
        init = re.findall(r"%([\w.-]+)", loop.rest.split(")")[0]) if loop else []
        return _producer(init[0], index, instructions, parents, loops, depth + 1) if init else None
    return instruction if index is None else None


def _splash_costs(
    instruction: _Instruction,
    instructions: dict[str, _Instruction],
    parents: dict[str, str],
    loops: dict[str, _Instruction],
) -> tuple[float, float]:
    """(flops, extra bytes) of one splash attention call, from its block mask and its q, k, v operands.

    The kernel's scalar operands come first: (data_next,) block_mask (0 skip, 1 partial, 2 full per (query block,
    key block)), (mask_next,); the block mask is a constant, often hoisted out of the layer loop. A visited block
    of bq queries x bk keys costs 2 bq bk Dh flops per matmul and head, and reads its bk keys and values again
    (the generic count reads every operand once). A block mask that cannot be traced counts every block.
    """
    kind = next((k for k in _SPLASH_MATMULS if f"splash_mha_{k}" in instruction.name), None)
    operands = [instructions[o] for o in re.findall(r"%([\w.-]+)", instruction.rest.split(")")[0]) if o in instructions]
    scalars = [
        o for o in operands if _arrays(o.shape) and _arrays(o.shape)[0][0] == "s8" and len(_arrays(o.shape)[0][1]) == 3
    ]
    floats = [a for o in operands for a in _arrays(o.shape) if a[0] in ("bf16", "f16", "f32") and len(a[1]) == 4]
    if kind is None or not scalars or len(floats) < 3:
        return 0.0, 0.0
    mask = scalars[1] if len(scalars) > 1 else scalars[0]
    (mask_heads, q_blocks, k_blocks) = _arrays(mask.shape)[0][1]
    source = _producer(mask.name, None, instructions, parents, loops)
    values = _constant_values(source.rest) if source is not None and source.op == "constant" else []
    visited = sum(v != 0 for v in values) if values else mask_heads * q_blocks * k_blocks
    (q_type, q_dims), (k_type, k_dims), (v_type, v_dims) = floats[:3]
    batch, heads = q_dims[0], q_dims[1]
    head_dim = min(v_dims[2:])  # v is [B, Hkv, Tk, Dh]; q and k may be sequence-minor
    q_len, k_len = math.prod(q_dims[2:]) // head_dim, math.prod(k_dims[2:]) // head_dim
    per_head = 1 if mask_heads == heads else heads  # a mask shared by every head counts once per head
    flops = (
        2.0 * _SPLASH_MATMULS[kind] * batch * per_head * visited * (q_len // q_blocks) * (k_len // k_blocks) * head_dim
    )
    kv_bytes = (_DTYPE_BYTES[k_type] * math.prod(k_dims) + _DTYPE_BYTES[v_type] * math.prod(v_dims)) / k_blocks
    block_reads = visited / mask_heads  # (q block, k block) pairs, each reading one block of k and v for all heads
    return flops, max(0.0, block_reads - k_blocks) * kv_bytes


def device_groups(attributes: str) -> tuple[tuple[int, ...], ...] | None:
    """The device groups of a collective from its HLO attributes: `replica_groups={{0,1},{2,3}}`, the iota form
    `replica_groups=[2,2]<=[4]` or `[2,2]<=[2,2]T(1,0)` (ids laid out, transposed, then cut into groups), or a
    collective-permute's `source_target_pairs` (each pair a group); None for `{}` (all devices) or none given."""
    iota = re.search(r"replica_groups=\[([\d,]+)\]<=\[([\d,]+)\](?:T\(([\d,]+)\))?", attributes)
    if iota:
        shape, laid = [int(x) for x in iota.group(1).split(",")], [int(x) for x in iota.group(2).split(",")]
        ids = np.arange(math.prod(laid)).reshape(laid)
        if iota.group(3):
            ids = ids.transpose([int(x) for x in iota.group(3).split(",")])
        return tuple(tuple(int(i) for i in row) for row in ids.reshape(-1, shape[-1]))
    listed = re.search(r"(?:replica_groups|source_target_pairs)=\{((?:\{[\d,]*\},?)*)\}", attributes)
    if listed is None or not listed.group(1):
        return None
    return tuple(tuple(int(x) for x in g.split(",") if x) for g in re.findall(r"\{([\d,]*)\}", listed.group(1)))


def hlo_costs(text: str) -> HloCosts:
    """Flops, bytes accessed and collectives of an optimized HLO module (`compiled.as_text()`), loops counted."""
    computations, entry, fused = _parse(text)
    runs, unknown = _multipliers(computations, entry)
    shapes = {i.name: i.shape for body in computations.values() for i in body}
    instructions = {i.name: i for body in computations.values() for i in body}
    parents = {i.name: name for name, body in computations.items() for i in body}
    loops = {
        callee: i
        for body in computations.values()
        for i in body
        if i.op == "while"
        for callee in re.findall(r"\bbody=%([\w.-]+)", i.rest)
    }
    flops = traffic = 0.0
    collectives = []
    for name, body in computations.items():
        times = runs.get(name, 0)
        for instruction in body:
            if instruction.op in ("dot", "convolution"):
                flops += times * _dot_flops(instruction, shapes)
            if instruction.op == "custom-call" and 'custom_call_target="tpu_custom_call"' in instruction.rest:
                kernel_flops, kernel_bytes = _splash_costs(instruction, instructions, parents, loops)
                flops, traffic = flops + times * kernel_flops, traffic + times * kernel_bytes
            if name in fused or instruction.op in _NO_TRAFFIC:
                continue
            operands = re.findall(r"%([\w.-]+)", instruction.rest.split(")")[0])
            traffic += times * (shape_bytes(instruction.shape) + sum(shape_bytes(shapes.get(o, "")) for o in operands))
            kind = instruction.op.removesuffix("-start")
            if kind in COLLECTIVES and times:
                arrays = _arrays(instruction.shape)
                largest = max(arrays, key=lambda a: _DTYPE_BYTES[a[0]] * math.prod(a[1]))
                text_shape = f"{largest[0]}[{','.join(map(str, largest[1]))}]"
                groups = device_groups(instruction.rest)
                collectives.append(Collective(kind, text_shape, shape_bytes(text_shape), times, groups))
    return HloCosts(flops, traffic, tuple(collectives), unknown)
