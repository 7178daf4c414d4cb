"""The seed lab's bottleneck checklist as rules over a job's last seconds of samples.

A rule shows on the job page only once it has held for HOLD_SECONDS of samples without a break, so a
single slow step never raises it. "GPU idle" needs IDLE_SECONDS and also flags the job on the dashboard.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

HOLD_SECONDS = 30.0
IDLE_SECONDS = 300.0
IDLE_UTIL = 2.0  # % at or below which a GPU counts as idle
STARVED_MEMORY = 0.5  # GPU memory in use, as a fraction of the GPU's
STARVED_UTIL = 40.0
SWING_LOW, SWING_HIGH, SWINGS = 20.0, 80.0, 6  # oscillation: this many low↔high crossings in HOLD_SECONDS
DISK_BUSY, DISK_AWAIT_MS = 80.0, 20.0


@dataclass(frozen=True)
class Sample:
    """One moment of a job: its GPUs (key → utilization %, memory fraction used), the busiest disk of its nodes."""

    t: float
    gpus: dict[str, tuple[float, float | None]] = field(default_factory=dict)
    disk_util: float | None = None
    disk_await_ms: float | None = None

    @property
    def gpu_util(self) -> float | None:
        return sum(u for u, _ in self.gpus.values()) / len(self.gpus) if self.gpus else None

    @property
    def starved(self) -> bool:
        """Some GPU holds most of its memory yet computes little: the seed checklist's input starvation."""
        return any(m is not None and m >= STARVED_MEMORY and u < STARVED_UTIL for u, m in self.gpus.values())


@dataclass(frozen=True)
class Hint:
    code: str
    title: str
    advice: str

    def as_dict(self) -> dict[str, str]:
        return {"code": self.code, "title": self.title, "advice": self.advice}


STARVATION = Hint(
    "input_starvation",
    "The GPU waits for data",
    "GPU memory is full but utilization stays low: the input pipeline cannot keep up. Raise the DataLoader's "
    "num_workers, set pin_memory=True, and prefetch; check that data loading does not run on the main process.",
)
OSCILLATION = Hint(
    "sync_stalls",
    "Utilization swings up and down",
    "The GPUs alternate between busy and idle: ranks wait for each other (synchronization stalls), or steps wait "
    "for I/O. Look for uneven batches across ranks, frequent .item()/.cpu() calls, and logging on every step.",
)
IO_BOUND = Hint(
    "io_bound",
    "Disk is the bottleneck",
    "The disk is busy more than 80% of the time with long waits: the job is I/O bound. Copy the data set to "
    "node-local scratch (or /dev/shm), use fewer, larger files, and cache what each epoch re-reads.",
)
IDLE = Hint(
    "gpu_idle",
    "A GPU of this job sits idle",
    "The job holds a GPU but does not use it. If it finished its work or is waiting on something, cancel it so "
    "classmates can use the GPU; your instructor sees idle GPUs on the class dashboard.",
)


class HintRules:
    """Keeps one job's recent samples; `hints()` says which rules hold now."""

    def __init__(self, idle_seconds: float = IDLE_SECONDS) -> None:
        self.samples: deque[Sample] = deque()
        self.idle_since: dict[str, float] = {}  # GPU key → when it went idle
        self.idle_limit = idle_seconds

    def add(self, sample: Sample) -> None:
        self.samples.append(sample)
        while self.samples and sample.t - self.samples[0].t > HOLD_SECONDS + 2:
            self.samples.popleft()
        for key, (util, _) in sample.gpus.items():
            if util <= IDLE_UTIL:
                self.idle_since.setdefault(key, sample.t)
            else:
                self.idle_since.pop(key, None)
        for key in [k for k in self.idle_since if k not in sample.gpus and sample.gpus]:
            self.idle_since.pop(key)

    def idle_seconds(self, now: float) -> float:
        """How long the longest-idle GPU of the job has been idle."""
        return max((now - since for since in self.idle_since.values()), default=0.0)

    def _window(self) -> list[Sample]:
        """The last HOLD_SECONDS of samples, or [] if they do not yet span that long."""
        if not self.samples or self.samples[-1].t - self.samples[0].t < HOLD_SECONDS - 1:
            return []
        end = self.samples[-1].t
        return [s for s in self.samples if end - s.t <= HOLD_SECONDS]

    def hints(self) -> list[Hint]:
        window = self._window()
        found: list[Hint] = []
        if window:
            gpu = [s for s in window if s.gpus]
            if len(gpu) == len(window) and all(s.starved for s in gpu):
                found.append(STARVATION)
            utils = [util for s in gpu if (util := s.gpu_util) is not None]  # every sample with GPUs has one
            if len(gpu) == len(window) and _swings(utils) >= SWINGS:
                found.append(OSCILLATION)
            disk = [s for s in window if s.disk_util is not None]
            if len(disk) == len(window) and all(
                (s.disk_util or 0.0) > DISK_BUSY and (s.disk_await_ms or 0.0) > DISK_AWAIT_MS for s in disk
            ):
                found.append(IO_BOUND)
        if self.samples and self.idle_seconds(self.samples[-1].t) >= self.idle_limit:
            found.append(IDLE)
        return found


def _swings(values: list[float]) -> int:
    """How many times the series crosses from below SWING_LOW to above SWING_HIGH or back."""
    swings, side = 0, None
    for value in values:
        now = "low" if value < SWING_LOW else "high" if value > SWING_HIGH else None
        if now and side and now != side:
            swings += 1
        side = now or side
    return swings
