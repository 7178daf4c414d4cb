"""summary.md from results.json: each figure beside the exact command that produced it."""

from __future__ import annotations

from training import MFU_TARGET, RUNS

BASELINE = "fp32_tf32_eager"
LABELS = {
    "bf16_eager": "bf16 autocast, eager",
    "bf16_compiled": "bf16 autocast, torch.compile",
    "fp16_eager": "fp16 autocast + GradScaler, eager",
    "fp32_tf32_eager": "fp32 weights and math, TF32 matmuls, eager",
}


def summary(results: dict) -> str:
    meta, parts = results["meta"], results["parts"]
    lines = [
        "# GPU measurements" + (" (QUICK REHEARSAL on the CPU: not GPU figures)" if meta["quick_rehearsal"] else ""),
        "",
        f"- GPU: {meta.get('gpu', 'none')} ({meta.get('gpu_memory_gib', '?')} GiB, {meta.get('sms', '?')} SMs); "
        f"nvidia-smi: {meta['nvidia_smi_name_driver_memory'] or '?'}",
        f"- PyTorch {meta['torch']} (CUDA {meta['torch_cuda']}), Python {meta['python']}, {meta['date_utc']} UTC",
        f"- MFU divides by {meta.get('mfu_peak_tflops', '?')} TFLOP/s (workloads/trainer/logline.py); "
        f"target {MFU_TARGET:.0f} %",
        "- Run: `OUT=... bash bench/gpu/measure.sh` from the repository root; "
        f"total {meta.get('total_seconds', '?')} s",
        "",
        *trainer_table(parts),
        *smi_table(parts),
        *inference_table(parts.get("inference")),
        *profile_lines(parts.get("profile")),
        *problems(parts),
    ]
    return "\n".join(lines) + "\n"


def trainer_table(parts: dict) -> list[str]:
    base = parts.get(f"train_{BASELINE}", {}).get("tok_s")
    rows = [
        "## Trainer (gpt2-124m preset, one GPU, same batch in every run)",
        "",
        "| run | tok/s | MFU % | step ms | speed-up vs fp32+TF32 | steps in figures | command |",
        "|---|---:|---:|---:|---:|---|---|",
    ]
    for name in RUNS:
        r = parts.get(f"train_{name}")
        if r is None:
            continue
        if "tok_s" not in r:
            rows.append(f"| {LABELS[name]} | {why_missing(r)} | | | | | `{r.get('command', '')}` |")
            continue
        speedup = f"{r['tok_s'] / base:.2f}x" if base else "?"
        rows.append(
            f"| {LABELS[name]} | {r['tok_s']:,.0f} | {r.get('mfu_percent', 'n/a')} | {r['step_ms']} | {speedup} "
            f"| {r['steps_used']} of {r['steps']} | `{r['command']}` |"
        )
    rows += ["", "Figures: median over the logged intervals after the first ones (warm-up, compilation).", ""]
    return rows


def smi_table(parts: dict) -> list[str]:
    rows = [
        "## nvidia-smi (the collector's query, telemetry/parsers.py NVIDIA_SMI_FIELDS)",
        "",
        "| capture | raw file | rows | read by the portal's parser | GPU util mean / max % | memory used max MiB "
        "| power max W |",
        "|---|---|---:|---:|---|---:|---:|",
    ]
    for label in ("idle", "training"):
        r = parts.get(f"nvidia_smi_{label}")
        if r is None or "rows" not in r:
            rows.append(f"| {label} | {why_missing(r or {})} | | | | | |")
            continue
        for index, gpu in r["gpus"].items() or {"-": {}}.items():
            rows.append(
                f"| {label}, GPU {index} | {r['query_file']} | {r['rows']} | {r['rows_parsed']} "
                f"| {gpu.get('util_mean')} / {gpu.get('util_max')} | {gpu.get('mem_used_mib_max')} "
                f"| {gpu.get('power_w_max')} |"
            )
    static = parts.get("nvidia_smi_static", {}).get("files", {})
    rows += ["", f"Query: `{smi_query(parts)}`. Also: " + ", ".join(sorted(static)) + ", dmon files.", ""]
    return rows


def smi_query(parts: dict) -> str:
    for label in ("idle", "training"):
        if "query_command" in parts.get(f"nvidia_smi_{label}", {}):
            return parts[f"nvidia_smi_{label}"]["query_command"]
    return "?"


def inference_table(r: dict | None) -> list[str]:
    if not r:
        return []
    rows = ["## Inference server (16 concurrent clients)", ""]
    if "batched_output_tokens_per_s" not in r:
        return [*rows, f"Not measured: {why_missing(r)}", ""]
    rows += [
        f"Path: **{r['path']}** ({r['path_reason']}). Served: {r.get('checkpoint', '?')}. "
        f"Batching is the server's own (`{r['server_batching']}`).",
        *(
            ["In-process: the server's engine driven by asyncio clients; TTFT is submission to first token, no HTTP."]
            if r["path"] == "in-process"
            else []
        ),
        "",
        "| figure | value | target |",
        "|---|---:|---|",
        f"| output tok/s, batched (--max-batch 16) | {r['batched_output_tokens_per_s']} | |",
        f"| output tok/s, unbatched (--max-batch 1) | {r['unbatched_output_tokens_per_s']} | |",
        f"| batching speed-up | {r['batching_speedup']}x | at least 4x |",
        f"| TTFT p95, 16 clients, batched (ms) | {r['batched_16_ttft_p95_ms']} | |",
        f"| TTFT p95 / p50, single client (ms) | {r['single_client_ttft_p95_ms']} / "
        f"{r['single_client_ttft_p50_ms']} | |",
        f"| TTFT p95 16 clients / single client p95 | {r['ttft_p95_16_over_single_p95']} | at most 2 |",
        f"| TTFT p95 16 clients / single client p50 | {r['ttft_p95_16_over_single_p50']} | |",
        f"| TTFT p95, 16 clients, unbatched (ms) | {r['unbatched_16_ttft_p95_ms']} | |",
        f"| TPOT p50 batched / unbatched (ms) | {r['batched_tpot_p50_ms']} / {r['unbatched_tpot_p50_ms']} | |",
        "",
        "Commands:",
        "",
    ]
    for mode, run in r["runs"].items():
        for key in ("server_command", "command"):
            if key in run:
                rows.append(f"- {mode}: `{run[key]}`")
        for load in ("single_client", "clients"):
            if "command" in run.get(load, {}):
                rows.append(f"- {mode}, {load}: `{run[load]['command']}`")
    return [*rows, ""]


def profile_lines(r: dict | None) -> list[str]:
    if not r:
        return []
    if "skipped" in r or "step_ms" not in r:
        return ["## Profile", "", why_missing(r), ""]
    return [
        "## Profile (torch.profiler)",
        "",
        f"Why: {r['why']}. {r['steps']} steps of the bf16 {'compiled' if r['compiled'] else 'eager'} run: "
        f"{r['step_ms']} ms a step, GPU kernels busy {r['gpu_busy_percent'] or 'n/a'} % of it. "
        f"Table: {r['table']}; trace: {r['trace']}.",
        "",
        f"`{r['command']}`",
        "",
    ]


def why_missing(r: dict) -> str:
    for key in ("skipped", "error"):
        if key in r:
            return f"{key}: {r[key]}"
    if r.get("timed_out"):
        return f"timed out after {r.get('seconds')} s"
    if r.get("exit_status"):
        return f"exit status {r['exit_status']} (see {r.get('log')})"
    return "no figure"


def problems(parts: dict) -> list[str]:
    found = [f"- {name}: {why_missing(r)}" for name, r in parts.items() if "error" in r or r.get("timed_out")]
    return ["## Problems", "", *found, ""] if found else []
