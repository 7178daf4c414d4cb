"""The class dashboard's last five minutes, kept as the page draws them: what a course socket opens with.

The dashboard (static/js/class_dashboard.js) draws one cell per GPU per 5-second column over five minutes, each the
newest sample of its column. Sending a page that opens the frames behind those cells made it download every
frame of five minutes (about 50 MB for a class on 1,000 GPUs); this keeps exactly the cells instead, a few
hundred bytes per GPU. The publisher feeds it each course frame it sends (telemetry/stream.py) and stores its
message beside the group's sequence number; a course socket opens with that message, and a resync gets it too.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

BUCKET_MS = 5000  # static/js/class_dashboard.js BUCKET_MS: one column
COLUMNS = 60  # ... and COLUMNS: five minutes
KEPT_SECONDS = COLUMNS * BUCKET_MS // 1000  # a heat no frame renewed for this long shows nothing: Redis drops it


@dataclass
class Track:
    """One GPU of one student's job: who holds it, what it said last, and its newest sample per column."""

    job: str
    student: str
    seen: int  # the t (ms) of the newest frame that carried it
    idle_s: int = 0
    simulated: bool = False
    cells: dict[int, float | None] = field(default_factory=dict)  # column start (ms) → util %


class CourseHeat:
    def __init__(self) -> None:
        self.tracks: dict[str, Track] = {}
        self.roster: str | None = None  # the roster the newest frames' columns follow (telemetry/wire.py)
        self.live: list[str] = []  # ... its GPUs' keys, one per column
        self.seq: int | None = None
        self.t: int | None = None
        self._column: int | None = None

    def add(self, frame: dict) -> None:
        """A course frame as published (``seq``, ``t``, the roster and its columns): each GPU's number becomes its
        column's newest cell. A frame whose roster it never saw is left out, as the page leaves it out."""
        t = int(frame["t"])
        if "gpus" in frame:
            self.roster, self.live = frame["roster"], [entry["key"] for entry in frame["gpus"]]
            for entry in frame["gpus"]:
                track = self.tracks.setdefault(entry["key"], Track(entry["job"], entry["student"], t))
                track.simulated = bool(entry.get("simulated"))
        if frame.get("roster") != self.roster or len(frame["util"]) != len(self.live):
            return
        column = t // BUCKET_MS * BUCKET_MS
        for key, util, idle_s in zip(self.live, frame["util"], frame["idle_s"], strict=False):
            found = self.tracks.get(key)
            if found is None:
                continue
            found.seen, found.idle_s = t, int(idle_s or 0)
            found.cells[column] = util
        self.seq, self.t = frame["seq"], t
        if column != self._column:  # once a column: every GPU's oldest cell leaves
            self._column = column
            self._forget_before(column - (COLUMNS - 1) * BUCKET_MS)

    def _forget_before(self, first: int) -> None:
        for key, track in list(self.tracks.items()):
            if track.seen < first:  # its job ended more than five minutes ago: the page shows it no more
                del self.tracks[key]
                continue
            for column in [c for c in track.cells if c < first]:
                del track.cells[column]

    def message(self) -> dict:
        """{"type": "heat", …}: every GPU's cells over the five minutes up to the newest frame."""
        if self.t is None:
            return {"type": "heat", "gpus": []}
        last = self.t // BUCKET_MS * BUCKET_MS
        first = last - (COLUMNS - 1) * BUCKET_MS
        columns = range(first, last + 1, BUCKET_MS)
        gpus = [
            {"key": key, "job": track.job, "student": track.student, "seen": track.seen, "idle_s": track.idle_s,
             "simulated": track.simulated, "util": [track.cells.get(c) for c in columns]}
            for key, track in sorted(self.tracks.items())
        ]  # fmt: skip
        return {"type": "heat", "seq": self.seq, "t": self.t, "first": first, "bucket_ms": BUCKET_MS, "gpus": gpus,
                "roster": self.roster, "live": self.live}  # fmt: skip

    def text(self) -> str:
        return json.dumps(self.message(), separators=(",", ":"), allow_nan=False)

    @classmethod
    def from_text(cls, text: str | bytes | None) -> CourseHeat:
        """The heat a publisher stored before (a collector that restarts goes on from it); empty if unreadable."""
        heat = cls()
        try:
            message = json.loads(text or "{}")
            first, step = int(message["first"]), int(message["bucket_ms"])
            for row in message["gpus"]:
                cells = {first + i * step: v for i, v in enumerate(row["util"]) if v is not None}
                heat.tracks[row["key"]] = Track(row["job"], row["student"], int(row["seen"]), int(row["idle_s"]),
                                                bool(row["simulated"]), cells)  # fmt: skip
            heat.seq, heat.t = int(message["seq"]), int(message["t"])
            if message["roster"] and all(key in heat.tracks for key in message["live"]):
                heat.roster, heat.live = str(message["roster"]), list(message["live"])
        except (ValueError, KeyError, TypeError):
            return cls()
        return heat
