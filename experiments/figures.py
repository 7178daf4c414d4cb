"""The comparison's charts as Plotly figures, built here as plain JSON and drawn by static/js/compare.js.

One line per run, in the run's colour, named by what differs; each line at most MAX_POINTS points (the stored series
downsampled by telemetry's own min/max buckets, so a spike stays visible). Hovering shows every run's value at that x
("x unified"). Time charts carry each run's start (trace.meta.start_ms), so the page can put them on the clock.
"""

from __future__ import annotations

from collections.abc import Sequence

from telemetry import series as charts

from .curves import CHARTS, STEP_CHARTS, RunCurves

MAX_POINTS = 1000  # per line: more than a chart's width in pixels
# Okabe-Ito's colour-blind-safe eight, then four more that stay apart from them.
COLOURS = [
    "#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9",
    "#F0E442", "#000000", "#8C564B", "#7F7F7F", "#17BECF", "#9467BD",
]  # fmt: skip
TITLES = {
    "loss": ("Loss", "step", "loss"),
    "tokens": ("Throughput", "step", "tok/s"),
    "gpu-util": ("GPU utilization (mean of the run's GPUs)", "minutes since the run started", "%"),
    "gpu-memory": ("GPU memory (the run's fullest GPU)", "minutes since the run started", "MiB"),
}


def colour(index: int) -> str:
    return COLOURS[index % len(COLOURS)]


def figures(names: Sequence[str], runs: Sequence[RunCurves]) -> dict[str, dict]:
    """{chart: {"data": [...], "layout": {...}}} for every chart at least one run has points on."""
    out = {}
    for chart in CHARTS:
        data = [_trace(chart, name, index, run) for index, (name, run) in enumerate(zip(names, runs, strict=True))]
        data = [trace for trace in data if trace is not None]
        if data:
            out[chart] = {"data": data, "layout": _layout(chart)}
    return out


def _trace(chart: str, name: str, index: int, run: RunCurves) -> dict | None:
    curve = run.curves.get(chart)
    if curve is None or not curve.x:
        return None
    x, y = charts.downsample(curve.x, curve.y, MAX_POINTS)
    if chart not in STEP_CHARTS:
        x = [round(seconds / 60, 3) for seconds in x]
    trace = {
        "type": "scatter",
        "mode": "lines",
        "name": name,
        "x": x,
        "y": y,
        "line": {"color": colour(index), "width": 2},
        "hovertemplate": "%{y:.4~g}",
    }
    if chart not in STEP_CHARTS:
        trace["meta"] = {"start_ms": run.start_ms}
    return trace


def _layout(chart: str) -> dict:
    title, x_title, y_title = TITLES[chart]
    layout = {
        "title": {"text": title, "x": 0, "xanchor": "left", "font": {"size": 15}},
        "xaxis": {"title": {"text": x_title}, "zeroline": False},
        "yaxis": {"title": {"text": y_title}, "zeroline": False},
        "hovermode": "x unified",
        "legend": {"orientation": "h", "y": -0.25},
        "margin": {"l": 56, "r": 12, "t": 40, "b": 40},
        "autosize": True,
    }
    if chart == "gpu-util":
        layout["yaxis"]["range"] = [0, 100]  # type: ignore[index]
    return layout
