"""The markdown table of a check's JSON: one line per measurement, its physical limit and torch beside it."""

from __future__ import annotations

SMOKE = " (smoke: tiny sizes, CPU)"


def _pct(value) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def _num(value, digits: int = 1) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def _line(*cells) -> str:
    return "| " + " | ".join(str(cell) for cell in cells) + " |"


def _ratio(value) -> str:
    return "-" if value is None else f"{value:.2f}x"


def _skipped(section) -> list[str]:
    return [
        _line(item.get("what", "?"), f"skipped: {item['skipped']}", "", "", "") for item in section if "skipped" in item
    ]


def _header(result: dict) -> list[str]:
    device, ceilings = result["device"], result.get("ceilings", {})
    title = device.get("card") or device.get("name")
    measured = (
        f"measured here: bf16 matmul {_num(ceilings.get('bf16_matmul_tflops'))} TFLOP/s, "
        f"device copy {_num(ceilings.get('copy_tbps'), 2)} TB/s"
    )
    return [
        f"# jaxcontam on {title} ({device.get('name')}), {result['date']}{SMOKE if result['smoke'] else ''}",
        "",
        f"jax {device.get('jax')}, torch {device.get('torch')}; {measured}; wall {result['wall_s']:.0f} s.",
        "",
        "| what | jaxcontam | against the limit | torch | ratio to torch |",
        "|---|---|---|---|---|",
    ]


def _throughput(result: dict) -> list[str]:
    lines = []
    for row in result["scoring"]:
        if "skipped" not in row:
            lines.append(
                _line(
                    f"scoring {row['shape']} {row['dtype']}, {row['rows']} x {row['length']} tokens",
                    f"{_num(row['jaxcontam_tokens_per_s'])} tokens/s",
                    f"MFU {_pct(row.get('mfu_bf16'))} of the bf16 peak, {_pct(row.get('mfu_tf32'))} of tf32",
                    f"{_num(row['torch_tokens_per_s'])} tokens/s",
                    _ratio(row["ratio_to_torch"]),
                )
            )
    lines += _skipped(result["scoring"])
    for row in result["generation"]:
        if "skipped" not in row:
            lines.append(
                _line(
                    f"greedy generation {row['shape']} {row['dtype']}, {row['prompts']} x {row['new_tokens']} new",
                    f"{_num(row['jaxcontam_tokens_per_s'])} tokens/s",
                    f"{_pct(row.get('bandwidth_share'))} of the HBM limit",
                    f"{_num(row['torch_tokens_per_s'])} tokens/s",
                    _ratio(row["ratio_to_torch"]),
                )
            )
    lines += _skipped(result["generation"])
    return lines


def _attention(result: dict) -> list[str]:
    lines = []
    for row in result["attention"]:
        if "skipped" in row:
            continue
        ours, cudnn, own = (row.get(key, {}) for key in ("jaxcontam_auto", "jax_cudnn", "jaxcontam_jnp"))
        limit = (
            f"{_pct(ours.get('share_of_bf16_peak'))} of the bf16 peak; jax cuDNN {_num(cudnn.get('ms'), 2)} ms, "
            f"own tiles {_num(own.get('ms'), 2)} ms"
        )
        what = f"attention {row['dtype']} causal, {row['rows']} x {row['length']}"
        torch = f"{_num(row.get('torch_sdpa', {}).get('ms'), 2)} ms"
        lines.append(_line(what, f"{_num(ours.get('ms'), 2)} ms", limit, torch, _ratio(row.get("ratio_to_torch"))))
    return lines + _skipped(result["attention"])


def _audit(result: dict) -> list[str]:
    lines = []
    cold, bundled = result["audit"].get("cold", {}), result["audit"].get("bundled", {})
    pacost = result["audit"].get("pacost", {})
    if "wall_s" in cold:
        own = cold.get("audit_stages", {})
        what = f"bundled `jaxcontam audit`, cold: a fresh process, empty compile cache (exit {cold['exit_code']})"
        found = (
            f"{cold['programs']} programs compiled in {cold['compile_s']:.1f} s; the audit's load "
            f"{_num(own.get('load'))} s, compile {_num(own.get('compile'))} s"
        )
        lines.append(_line(what, f"{cold['wall_s']:.1f} s wall", found, "", ""))
    if "wall_s" in bundled:
        stages = "; ".join(f"{s['stage']} {s['seconds']} s" for s in bundled["stages"])
        what = f"bundled `jaxcontam audit` (exit {bundled['exit_code']})"
        if "wall_s" in cold:  # (a check before 2026-12-01 ran this one audit only)
            warm = "in the check's process" if result["smoke"] else "the cold run's compile cache"
            what = f"bundled `jaxcontam audit`, warm: {warm} (exit {bundled['exit_code']})"
        lines.append(_line(what, f"{bundled['wall_s']:.1f} s wall", stages, "", ""))
    if "wall_s" in pacost:
        bundled_model = pacost["model"].endswith("tiny_contaminated/model")
        model = "the bundled model" if bundled_model else "the 1B-shaped random model"
        what = f"`jaxcontam pacost`, {pacost['items']} items, {model} (exit {pacost['exit_code']})"
        lines.append(_line(what, f"{pacost['wall_s']:.1f} s, {pacost['items_per_s']} items/s", "", "", ""))
    skipped = [dict(item, what=f"audit: {key}") for key, item in result["audit"].items() if "skipped" in item]
    return lines + _skipped(skipped)


def _numerics(result: dict) -> list[str]:
    lines = []
    cpu = result["numerics"].get("accelerator_vs_cpu", {})
    if "max_abs_diff" in cpu:
        verdict = f"<= {cpu['tolerance']:.0e}: {'ok' if cpu['ok'] else 'MISSED'}"
        what = f"bundled model float32 log-probs, {cpu['platform']} against the CPU"
        lines.append(_line(what, f"max diff {cpu['max_abs_diff']:.2e}", verdict, "", ""))
    elif "skipped" in cpu:
        lines += _skipped([dict(cpu, what="numerics: bundled model against the CPU")])
    for row in result["numerics"].get("against_torch", []):
        verdict = f"<= {row['tolerance']:.1e}: {'ok' if row['ok'] else 'MISSED'}"
        if "max_abs_error_vs_float32" in row:
            what = f"log-probs against torch's float32, {row['shape']} {row['dtype']}"
            ours = f"max error {row['max_abs_error_vs_float32']:.2e}"
            torch_side = f"max error {row['torch_max_abs_error_vs_float32']:.2e}"
            lines.append(_line(what, ours, verdict, torch_side, ""))
        else:  # the first GPU run (2026-11-28) compared the two sides in the same dtype only
            what = f"log-probs against torch in the same dtype, {row['shape']} {row['dtype']}"
            lines.append(_line(what, f"max diff {row['max_abs_diff']:.2e}", verdict, "", ""))
    return lines


def table(result: dict) -> str:
    lines = _header(result) + _throughput(result) + _attention(result) + _audit(result) + _numerics(result)
    goals = result.get("goals", {})
    if goals:
        lines += ["", "Goals: " + "; ".join(f"{name}: {'met' if ok else 'missed'}" for name, ok in goals.items())]
    return "\n".join(lines) + "\n"
