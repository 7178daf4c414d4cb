"""The comparison's charts as Plotly figures, built here as plain JSON and drawn by static/js/compare.js.

One line per run, in the run's colour, named by what differs; each line at most MAX_POINTS points (the stored series
downsampled by telemetry's own min/max buckets, so a spike stays visible). Hovering shows every run's value at that x
("x unified"). Time charts carry each run's start (trace.meta.start_ms), so the page can put them on the clock.
The figures draw no legend of their own: the page names the runs once, above all the charts, in the runs' colours
(a class's fifty entries in each of five charts squeezed the plots and were half of each chart's drawing time), and
a trace's uid is its run's place in the comparison, which that legend hides and shows it by.
"""

from __future__ import annotations

from collections.abc import Sequence

from telemetry import series as charts

from .curves import CHARTS, STEP_CHARTS, RunCurves

MAX_POINTS = 1000  # per line: more than a chart's width in pixels
CHART_POINTS = 10_000  # per chart: a class's fifty runs get 200 points a line, about a chart's width in pixels
# Okabe-Ito's colour-blind-safe eight, then four more that stay apart from them.
COLOURS = [
    "#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9",
    "#F0E442", "#000000", "#8C564B", "#7F7F7F", "#17BECF", "#9467BD",
]  # fmt: skip
TITLES = {
    "loss": ("Loss", "step", "loss"),
    "tokens": ("Throughput", "step", "tok/s"),
    "step-time": ("Step time", "step", "seconds per step"),
    "gpu-util": ("GPU utilization (mean of the run's GPUs)", "minutes since the run started", "%"),
    "gpu-memory": ("GPU memory (the run's fullest GPU)", "minutes since the run started", "MiB"),
}


def plotly_text(text: str) -> str:
    """Text Plotly shows as it is: it reads <b>, <br> and <a href> in legend names as markup, and these names hold
    what instructors and students typed (template names, values)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def colour(index: int) -> str:
    return COLOURS[index % len(COLOURS)]


SIMULATED = " (simulated)"  # a run's GPU line whose figures the demo's stand-in nvidia-smi made up


def figures(names: Sequence[str], runs: Sequence[RunCurves], simulated: Sequence[bool] = ()) -> dict[str, dict]:
    """{chart: {"data": [...], "layout": {...}}} for every chart at least one run has points on. `simulated`: per
    run, whether its GPU figures are the stand-in's, said in its GPU lines' names."""
    out = {}
    points = points_per_line(len(runs))
    for chart in CHARTS:
        data = [
            _trace(chart, name + (SIMULATED if chart not in STEP_CHARTS and fake else ""), index, run, points)
            for index, (name, run, fake) in enumerate(zip(names, runs, simulated or [False] * len(runs), strict=True))
        ]
        data = [trace for trace in data if trace is not None]
        if data:
            out[chart] = {"data": data, "layout": _layout(chart)}
    return out


def points_per_line(runs: int) -> int:
    """Each line's share of what one chart draws: MAX_POINTS for a few runs, fewer (not under 200) for a class's."""
    return max(200, min(MAX_POINTS, CHART_POINTS // max(runs, 1)))


def _trace(chart: str, name: str, index: int, run: RunCurves, points: int) -> dict | None:
    curve = run.curves.get(chart)
    if curve is None or not curve.x:
        return None
    x, y = charts.downsample(curve.x, curve.y, points)
    if chart not in STEP_CHARTS:
        x = [round(seconds / 60, 3) for seconds in x]
    trace = {
        "type": "scatter",
        "mode": "lines",
        "name": plotly_text(name),
        "x": x,
        "y": y,
        "uid": str(index),
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
        "showlegend": False,
        "legend": {"orientation": "h", "y": -0.32, "yanchor": "top"},  # a PNG's, below the x axis's title
        "margin": {"l": 56, "r": 12, "t": 40, "b": 40},
        "autosize": True,
    }
    if chart == "gpu-util":
        layout["yaxis"]["range"] = [0, 100]  # type: ignore[index]
    return layout
