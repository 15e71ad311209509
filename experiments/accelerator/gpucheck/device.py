"""The device under test: its name, its datasheet limits, its measured ceilings, and timing helpers.

Peaks are NVIDIA's dense (no sparsity) figures: bf16 and tf32 tensor-core TFLOP/s, float32 without tensor cores,
and HBM bandwidth in TB/s. The card is read from the device name (an "H100 80GB HBM3" is the SXM part).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

PEAKS = {  # card: (bf16 TFLOP/s, tf32 TFLOP/s, fp32 TFLOP/s, HBM TB/s)
    "H200": (989.4, 494.7, 66.9, 4.8),
    "H100 SXM": (989.4, 494.7, 66.9, 3.35),
    "H100 NVL": (835.0, 417.5, 60.0, 3.9),
    "H100 PCIe": (756.5, 378.0, 51.2, 2.0),
}


def card(name: str) -> str | None:
    """The `PEAKS` key of a device name ("NVIDIA H100 80GB HBM3" -> "H100 SXM"), None for any other device."""
    upper = name.upper()
    if "H200" in upper:
        return "H200"
    if "H100" not in upper:
        return None
    if "NVL" in upper:
        return "H100 NVL"
    return "H100 PCIe" if "PCIE" in upper else "H100 SXM"


def describe() -> dict:
    """Platform, device name, card, datasheet peaks and memory of the default JAX device, with torch's view."""
    import jax

    device = jax.devices()[0]
    name = getattr(device, "device_kind", device.platform)
    found = card(name)
    info: dict = {"platform": device.platform, "name": name, "card": found, "jax": jax.__version__}
    if found is not None:
        bf16, tf32, fp32, hbm = PEAKS[found]
        info["peaks"] = {"bf16_tflops": bf16, "tf32_tflops": tf32, "fp32_tflops": fp32, "hbm_tbps": hbm}
    stats = device.memory_stats() or {}
    if "bytes_limit" in stats:
        info["memory_gib"] = round(stats["bytes_limit"] / 2**30, 1)
    try:
        import torch

        info["torch"] = torch.__version__
        if torch.cuda.is_available():
            info["torch_device"] = torch.cuda.get_device_name()
            info["torch_tf32_matmul"] = torch.backends.cuda.matmul.allow_tf32  # False: float32 is float32
    except ImportError:
        info["torch"] = None
    return info


def synchronize() -> None:
    """Wait for torch's queued GPU work (no-op without CUDA)."""
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()


def release() -> None:
    """Return torch's cached, unused GPU memory to the device."""
    import gc

    import torch

    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def median_time(run: Callable[[], object], repeats: int, warmups: int = 1) -> float:
    """Median wall seconds of `run` (which must block until its work is done) after `warmups` untimed calls."""
    for _ in range(warmups):
        run()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def measured_ceilings(smoke: bool) -> dict:
    """The bf16 matrix-product rate and the device-to-device copy bandwidth measured here (torch, random data)."""
    import torch

    device = "cuda" if torch.cuda.is_available() else "cpu"
    n = 512 if smoke or device == "cpu" else 8192
    a, b = (torch.randn(n, n, device=device, dtype=torch.bfloat16) for _ in range(2))

    def product():
        torch.mm(a, b)
        synchronize()

    seconds = median_time(product, 3 if smoke else 10, warmups=2)
    size = 2**24 if smoke or device == "cpu" else 2**30
    source = torch.randn(size // 4, device=device)
    target = torch.empty_like(source)

    def copy():
        target.copy_(source)
        synchronize()

    copy_seconds = median_time(copy, 3 if smoke else 10, warmups=2)
    return {
        "bf16_matmul_tflops": round(2 * n**3 / seconds / 1e12, 4),
        "matmul_size": n,
        "copy_tbps": round(2 * size / copy_seconds / 1e12, 4),  # bytes read + bytes written
        "copy_bytes": size,
    }
