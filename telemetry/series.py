"""Frames turned into chart series: read by the one chart table, downsampled to what a chart can show, stored.

Invariants:
- Which number of a frame feeds which chart is written once, in static/js/telemetry-charts.json; this module
  and telemetry.js (which gets the table in the socket's first message) both read frames through it.
- A page's history is columnar and at most MAX_POINTS points per trace, whatever the run's length.
- Stored series are ten-second buckets (mean, min, max) of time charts and every trainer point, written by the
  collector in chunks (one row per job or node per flush), never per sample.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CHARTS_FILE = Path(__file__).resolve().parents[1] / "static/js/telemetry-charts.json"
CHARTS: dict[str, dict] = json.loads(CHARTS_FILE.read_text())["charts"]
MAX_POINTS = 600  # per trace in a page's history: about a chart's width in pixels
BUCKET_MS = 10_000
GAP_MS = 3 * BUCKET_MS  # time points further apart than this are drawn with a break between them
_FIELD = re.compile(r"\{(\w+)\}")


def _fill(template: str, row: dict) -> str:
    return _FIELD.sub(lambda m: str(row.get(m.group(1), "")), template)


def _value(row: dict, path) -> float | None:
    if isinstance(path, list):
        values = [v for v in (_value(row, p) for p in path) if v is not None]
        return max(values) if values else None
    value: object = row
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value if isinstance(value, int | float) else None


def _rows(frame: dict, kind: str) -> list[dict]:
    if kind == "gpus":
        return frame.get("gpus") or []
    hosts = frame.get("hosts") or ([frame] if frame.get("kind") == "node" else [])
    if kind == "hosts":
        return hosts
    if kind == "disks":
        return [{**d, "host": h["node"]} for h in hosts for d in h.get("disks") or []]
    if kind == "pod":
        return [frame["pod"]] if frame.get("pod") else []
    return frame.get("trainer") or []


def points(frame: dict) -> Iterator[tuple[str, str, str, float, float | None]]:
    """(chart, key, name, x, y) for each number of a frame; x is the frame's time (ms) or the trainer's step."""
    for chart, spec in CHARTS.items():
        for source in spec["sources"]:
            for row in _rows(frame, source["rows"]):
                y = _value(row, source["y"])
                if y is not None and "scale" in source:
                    y = y * source["scale"]
                x = row.get(spec["x"]) if "x" in spec else frame.get("t")
                if x is not None:
                    yield chart, _fill(source["key"], row), _fill(source["name"], row), x, y


def by_step(chart: str) -> bool:
    return "x" in CHARTS[chart]


# -- a series being assembled: {chart: {key: Trace}} ----------------------------------------------------------
@dataclass
class Trace:
    name: str
    x: list = field(default_factory=list)
    y: list = field(default_factory=list)


Series = dict[str, dict[str, Trace]]


def add_frames(series: Series, frames: Iterable[dict], *, after_ms: float = -math.inf) -> None:
    """Append the points of frames (oldest first); time points at or before after_ms are already there."""
    for frame in frames:
        for chart, key, name, x, y in points(frame):
            if not by_step(chart) and x <= after_ms:
                continue
            trace = series.setdefault(chart, {}).setdefault(key, Trace(name))
            trace.name = name
            trace.x.append(x)
            trace.y.append(y)


def add_stored(series: Series, data: dict) -> None:
    """Append one stored chunk ({chart: {key: {"name", "x", "y", ...}}})."""
    for chart, traces in data.items():
        if chart not in CHARTS:
            continue  # a chart since removed
        for key, stored in traces.items():
            trace = series.setdefault(chart, {}).setdefault(key, Trace(stored["name"]))
            trace.x.extend(stored["x"])
            trace.y.extend(stored["y"])


def downsample(x: list, y: list, limit: int = MAX_POINTS) -> tuple[list, list]:
    """At most `limit` points: per bucket of consecutive points, its lowest and highest (in time order).

    A bucket holding a gap (None) keeps one, so a break in the data stays a break in the line.
    """
    if len(x) <= limit:
        return x, y
    buckets = limit // 2
    size = math.ceil(len(x) / buckets)
    out_x: list = []
    out_y: list[float | None] = []
    for start in range(0, len(x), size):
        idx = [i for i in range(start, min(start + size, len(x))) if y[i] is not None]
        if not idx:
            out_x.append(x[start])
            out_y.append(None)
            continue
        low, high = min(idx, key=lambda i: y[i]), max(idx, key=lambda i: y[i])
        picked: list[int | None] = [*sorted({low, high})]
        if len(idx) < min(start + size, len(x)) - start:
            picked = [*picked[:1], None]  # the gap
        for i in picked:
            if i is None:
                out_x.append(x[idx[-1]])
                out_y.append(None)
            else:
                out_x.append(x[i])
                out_y.append(y[i])
    return out_x, out_y


def with_gaps(x: list, y: list) -> tuple[list, list]:
    """A break (None) wherever time points are further apart than GAP_MS (nothing was sampled in between)."""
    out_x: list = []
    out_y: list[float | None] = []
    for i, (xi, yi) in enumerate(zip(x, y, strict=True)):
        if i and xi - x[i - 1] > GAP_MS and y[i - 1] is not None:
            out_x.append(x[i - 1] + 1)
            out_y.append(None)
        out_x.append(xi)
        out_y.append(yi)
    return out_x, out_y


def _dedupe_steps(x: list, y: list) -> tuple[list, list]:
    """Trainer points by step: the last value for a step wins, in step order."""
    by = dict(zip(x, y, strict=True))
    steps = sorted(by)
    return steps, [by[s] for s in steps]


def message(series: Series, *, recorded: bool = False, last: dict | None = None) -> dict:
    """The socket's first message: the chart table, every trace downsampled and columnar, the newest frame."""
    charts = {}
    for chart, traces in series.items():
        out: list[dict[str, Any]] = []
        for key, trace in traces.items():
            x, y = _dedupe_steps(trace.x, trace.y) if by_step(chart) else with_gaps(trace.x, trace.y)
            x, y = downsample(x, y)
            out.append({"key": key, "name": trace.name, "x": x, "y": y})
        charts[chart] = sorted(out, key=lambda t: _natural(t["key"]))
    return {"type": "series", "charts": charts, "spec": CHARTS, "recorded": recorded, "last": last}


def _natural(key: str) -> list:
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", key)]
