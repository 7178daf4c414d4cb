"""Where a page's main thread spends its time: a CDP CPU profile, summed per function (self and total).

Used by bench/browser_pages.py --profile: one profile while a page opens, one over its live minutes. Minified
functions (uPlot, htmx) are named by file:line:column, which is enough to tell a library's work from the page's.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path


class CpuProfile:
    """A running V8 profile of one page (Profiler domain of the Chrome DevTools Protocol)."""

    def __init__(self, page, interval_us: int = 200):
        self.cdp = page.context.new_cdp_session(page)
        self.cdp.send("Profiler.enable")
        self.cdp.send("Profiler.setSamplingInterval", {"interval": interval_us})
        self.cdp.send("Profiler.start")

    def stop(self, path: Path) -> dict:
        profile = self.cdp.send("Profiler.stop")["profile"]
        self.cdp.detach()
        path.write_text(json.dumps(profile))  # opens in Chromium's DevTools (Performance → Load profile)
        return profile


def _name(frame: dict) -> str:
    url = frame["url"].rsplit("/", 1)[-1] or "(native)"
    return f"{frame['functionName'] or '(anonymous)'} {url}:{frame['lineNumber'] + 1}:{frame['columnNumber'] + 1}"


def summarize(profile: dict, top: int = 15) -> str:
    """The functions that took the most time, by self time and by total time (milliseconds)."""
    nodes = {n["id"]: n for n in profile["nodes"]}
    parent = {child: n["id"] for n in profile["nodes"] for child in n.get("children", [])}
    self_ms: dict[str, float] = defaultdict(float)
    total_ms: dict[str, float] = defaultdict(float)
    for node_id, delta in zip(profile["samples"], profile["timeDeltas"], strict=True):
        ms = delta / 1000
        name = _name(nodes[node_id]["callFrame"])
        self_ms[name] += ms
        seen, current = set(), node_id
        while current is not None:
            frame_name = _name(nodes[current]["callFrame"])
            if frame_name not in seen:
                seen.add(frame_name)
                total_ms[frame_name] += ms
            current = parent.get(current)
    lines = ["  self ms  function"]
    lines += [f"  {ms:7.0f}  {name}" for name, ms in sorted(self_ms.items(), key=lambda i: -i[1])[:top]]
    lines += ["  total ms  function (telemetry.js and the page's own scripts)"]
    ours = [(n, ms) for n, ms in total_ms.items() if ".js:" in n and ".min.js:" not in n]
    lines += [f"  {ms:8.0f}  {name}" for name, ms in sorted(ours, key=lambda i: -i[1])[:top]]
    return "\n".join(lines)
