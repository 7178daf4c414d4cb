"""What the real nvidia-smi prints: the collector's exact query (idle and under load), dmon, -L, topo -m, -q, plain.

The query is the portal's own (telemetry/parsers.py: NVIDIA_SMI_FIELDS, the collector's --query-gpu), and every
row captured is read back with the portal's parser, so a field the real tool prints differently shows up here.
"""

from __future__ import annotations

import importlib.util
import statistics
import sys
from pathlib import Path

from proc import ROOT, Child, log, run

_spec = importlib.util.spec_from_file_location("portal_parsers", ROOT / "telemetry" / "parsers.py")
assert _spec and _spec.loader
parsers = importlib.util.module_from_spec(_spec)
sys.modules["portal_parsers"] = parsers  # dataclasses look their module up there
_spec.loader.exec_module(parsers)  # stdlib only: no Django needed to read nvidia-smi's rows

QUERY = [
    "nvidia-smi",
    f"--query-gpu={','.join(parsers.NVIDIA_SMI_FIELDS)}",
    "--format=csv,noheader,nounits",
    "-lms",
    "1000",
]
STATIC = {
    "nvidia-smi-L.txt": ["nvidia-smi", "-L"],
    "nvidia-smi.txt": ["nvidia-smi"],
    "nvidia-smi-q.txt": ["nvidia-smi", "-q"],
    "nvidia-smi-topo-m.txt": ["nvidia-smi", "topo", "-m"],
    "nvidia-smi-help-query-gpu.txt": ["nvidia-smi", "--help-query-gpu"],
}


def static(out: Path, timeout: float) -> dict:
    """The one-shot outputs, each saved raw (the file's first line is the command)."""
    each = max(5.0, timeout / len(STATIC))
    results = {}
    for name, argv in STATIC.items():
        result = run(argv, out / name, each, "nvidia-smi", echo=lambda line: False)
        result.pop("lines")
        results[name] = result
    return results


class Capture:
    """The collector's query and dmon, started together and stopped after their seconds."""

    def __init__(self, out: Path, label: str, seconds: float, dmon_seconds: int):
        self.out, self.label, self.seconds = out, label, seconds
        quiet = {"echo": lambda line: False}
        self.query = Child(QUERY, out / f"nvidia-smi-query-{label}.csv", "query", header=False, **quiet)
        dmon = ["nvidia-smi", "dmon", "-s", "pucm", "-c", str(dmon_seconds)]
        self.dmon = Child(dmon, out / f"nvidia-smi-dmon-{label}.txt", "dmon", **quiet)

    def finish(self) -> dict:
        self.query.wait(self.seconds - self.query.elapsed)  # the query runs until stopped: its limit is the capture
        self.dmon.wait(max(1.0, self.seconds - self.dmon.elapsed))
        return {
            "query_command": " ".join(QUERY),
            "query_file": self.query.log_path.name,
            "dmon_file": self.dmon.log_path.name,
            "seconds": round(self.query.elapsed, 1),
            **summarize(self.query.lines),
        }


def capture(out: Path, label: str, seconds: float, dmon_seconds: int) -> dict:
    log(f"nvidia-smi query ({label}) for {seconds:.0f} s, dmon for {dmon_seconds} s")
    return Capture(out, label, seconds, dmon_seconds).finish()


def summarize(lines: list[str]) -> dict:
    """How the portal's parser reads the rows, and what they say (per GPU: utilization, memory, power)."""
    samples = [parsers.parse_nvidia_smi_line(line) for line in lines]
    parsed = [s for s in samples if s is not None]
    unread = [line for line, s in zip(lines, samples, strict=True) if s is None]
    by_gpu: dict[int, list] = {}
    for sample in parsed:
        by_gpu.setdefault(sample.index, []).append(sample)
    gpus = {}
    for index, rows in sorted(by_gpu.items()):
        gpus[str(index)] = {
            "samples": len(rows),
            "util_mean": _mean([r.util for r in rows]),
            "util_max": _max([r.util for r in rows]),
            "mem_used_mib_max": _max([r.mem_used_mib for r in rows]),
            "mem_total_mib": rows[-1].mem_total_mib,
            "power_w_max": _max([r.power_w for r in rows]),
            "sm_clock_mhz_max": _max([r.sm_clock_mhz for r in rows]),
            "fields_missing": sorted(
                {name for r in rows for name in ("util", "mem_util", "power_w", "temp_c") if getattr(r, name) is None}
            ),
        }
    return {"rows": len(lines), "rows_parsed": len(parsed), "rows_unread": unread[:5], "gpus": gpus}


def _mean(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return round(statistics.fmean(known), 1) if known else None


def _max(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return max(known) if known else None
