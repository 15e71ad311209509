"""Published per-chip figures of TPU generations, for roofline estimates (`jaxcontam plan`).

Sources (Google Cloud TPU documentation, the "System architecture" table of each page):
- "TPU v5e" (cloud.google.com/tpu/docs/v5e): 197 TFLOP/s bf16, 16 GB HBM2 at 819 GB/s, ICI 400 GB/s
  bidirectional per chip, one TensorCore per chip.
- "TPU v5p" (cloud.google.com/tpu/docs/v5p): 459 TFLOP/s bf16, 95 GiB HBM at 2765 GB/s, ICI 1200 GB/s
  bidirectional per chip, two TensorCores per chip (one JAX device, megacore).
- "TPU v4" (cloud.google.com/tpu/docs/v4): 275 TFLOP/s bf16, 32 GiB HBM2 at 1200 GB/s, two TensorCores per chip.
  The page gives no per-chip ICI bandwidth, so no collective time is estimated for v4.
- "TPU v6e" (cloud.google.com/tpu/docs/v6e): 918 TFLOP/s bf16, 32 GB HBM at 1638 GB/s, ICI 800 GB/s
  bidirectional per chip, one TensorCore per chip.
When libtpu exposes each TensorCore of a chip as its own device (v4 topologies), each device gets its share.
"""

from __future__ import annotations

import dataclasses

GIB = 1 << 30


@dataclasses.dataclass(frozen=True)
class Chip:
    """Peak bf16 FLOP/s, HBM bytes, HBM bytes/s and ICI bytes/s of one chip, as published."""

    name: str
    peak_flops: float
    hbm_bytes: int
    hbm_bandwidth: float
    ici_bandwidth: float | None
    source: str

    def per_device(self, devices_per_chip: int) -> Chip:
        """The share of one device when a chip shows up as several devices (one per TensorCore)."""
        if devices_per_chip == 1:
            return self
        n = devices_per_chip
        return dataclasses.replace(
            self,
            peak_flops=self.peak_flops / n,
            hbm_bytes=self.hbm_bytes // n,
            hbm_bandwidth=self.hbm_bandwidth / n,
            ici_bandwidth=None if self.ici_bandwidth is None else self.ici_bandwidth / n,
        )


# JAX device_kind -> chip. v5e's page says "16 GB": the chip carries 16 GiB; v6e's "32 GB" read the same way.
CHIPS = {
    "TPU v5 lite": Chip("v5e", 197e12, 16 * GIB, 819e9, 400e9, 'Cloud TPU docs, "TPU v5e"'),
    "TPU v5": Chip("v5p", 459e12, 95 * GIB, 2765e9, 1200e9, 'Cloud TPU docs, "TPU v5p"'),
    "TPU v4": Chip("v4", 275e12, 32 * GIB, 1200e9, None, 'Cloud TPU docs, "TPU v4"'),
    "TPU v6 lite": Chip("v6e", 918e12, 32 * GIB, 1638e9, 800e9, 'Cloud TPU docs, "TPU v6e"'),
}
EXAMPLE_TOPOLOGIES = ("v5e:2x2", "v5e:2x4", "v5e:4x4", "v5p:2x2x1", "v5p:2x2x2", "v4:2x2x1", "v4:2x2x2", "v6e:2x2")


def chip_for(device_kind: str) -> Chip | None:
    """The published figures of a JAX device kind, or None when jaxcontam has none (CPU, GPU, newer TPUs)."""
    return CHIPS.get(device_kind)
