"""The telemetry wire format: the records a frame is made of, each turned into JSON by its one to_wire().

Invariants:
- Every frame the collector publishes is built from these records (telemetry/frames.py) and nothing else
  writes a frame's keys; docs/telemetry-wire.md says what each key means, for static/js/telemetry.js,
  static/js/class_dashboard.js and static/js/telemetry-charts.json, which read them.
- A number that is not known (a stale node, a field the GPU does not report) is null on the wire, never 0.
- The publisher adds "type", "seq" and "t" to each frame (telemetry/stream.py); nothing here sets them.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from functools import cached_property

from telemetry.parsers import DcgmGpu, GpuSample, HostSample


@dataclass(frozen=True)
class GpuNumbers:
    """One GPU's numbers at one moment (nvidia-smi or DCGM): percent, MiB, W, °C, MHz."""

    util: float | None = None
    mem_util: float | None = None
    mem_used: float | None = None
    mem_total: float | None = None
    power: float | None = None
    temp: float | None = None
    clock: float | None = None
    simulated: bool = False  # replayed by the demo's stand-in nvidia-smi, not measured

    @classmethod
    def from_sample(cls, sample: GpuSample | None) -> GpuNumbers:
        if sample is None:
            return NO_NUMBERS
        return cls(sample.util, sample.mem_util, sample.mem_used_mib, sample.mem_total_mib, sample.power_w,
                   sample.temp_c, sample.sm_clock_mhz, sample.simulated)  # fmt: skip

    @classmethod
    def from_dcgm(cls, gpu: DcgmGpu) -> GpuNumbers:
        v = gpu.values
        used, free = v.get("mem_used_mib"), v.get("mem_free_mib")
        engine = v.get("engine_active")
        util = v.get("util", None if engine is None else round(engine * 100, 1))
        total = used + free if used is not None and free is not None else None
        return cls(util=util, mem_used=used, mem_total=total, power=v.get("power_w"), temp=v.get("temp_c"))

    @property
    def memory_fraction(self) -> float | None:
        return self.mem_used / self.mem_total if self.mem_used is not None and self.mem_total else None

    def to_wire(self) -> dict:
        return {"util": self.util, "mem_util": self.mem_util, "mem_used": self.mem_used, "mem_total": self.mem_total,
                "power": self.power, "temp": self.temp, "clock": self.clock, "simulated": self.simulated}  # fmt: skip


NO_NUMBERS = GpuNumbers()


@dataclass(frozen=True)
class GpuRow:
    """One GPU in a node or job frame: which it is, its legend, and its numbers."""

    node: str
    index: int
    label: str
    stale: bool
    numbers: GpuNumbers
    holder: str | None = None  # node frames: the job holding this GPU (None: free)
    on_node_page: bool = False  # only node frames carry "job"

    @property
    def key(self) -> str:
        return f"{self.node}/{self.index}"

    def to_wire(self) -> dict:
        row = {"key": self.key, "node": self.node, "i": self.index, "label": self.label}
        if self.on_node_page:
            row["job"] = self.holder
        return {**row, "stale": self.stale, **self.numbers.to_wire()}


@dataclass(frozen=True)
class DiskRow:
    dev: str
    util: float
    r_await: float
    w_await: float

    def to_wire(self) -> dict:
        return {"dev": self.dev, "util": self.util, "r_await": self.r_await, "w_await": self.w_await}


@dataclass(frozen=True)
class HostRow:
    """A node's CPU, memory and disks (None when stale or not reported)."""

    node: str
    stale: bool
    cpu: tuple[float, float] | None = None  # busy %, iowait %
    mem: tuple[int, int] | None = None  # used, total bytes
    disks: tuple[DiskRow, ...] = ()

    @classmethod
    def of(cls, name: str, stale: bool, host: HostSample | None, memory: tuple[int, int] | None) -> HostRow:
        if stale:
            return cls(name, True)
        cpu = None if host is None or host.cpu is None else (host.cpu.busy, host.cpu.iowait)
        disks = () if host is None else tuple(DiskRow(d.device, d.util, d.r_await_ms, d.w_await_ms) for d in host.disks)
        return cls(name, False, cpu, memory, disks)

    def to_wire(self) -> dict:
        return {
            "node": self.node,
            "stale": self.stale,
            "cpu": None if self.cpu is None else {"busy": self.cpu[0], "iowait": self.cpu[1]},
            "mem": None if self.mem is None else {"used": self.mem[0], "total": self.mem[1]},
            "disks": [d.to_wire() for d in self.disks],
        }


@dataclass(frozen=True)
class TrainerRow:
    epoch: int
    step: int
    loss: float
    tok_s: float

    def to_wire(self) -> dict:
        return {"epoch": self.epoch, "step": self.step, "loss": self.loss, "tok_s": self.tok_s}


@dataclass(frozen=True)
class PodUsage:
    """Kubernetes: a job's pods summed, or a node's usage (metrics.k8s.io)."""

    cpu_millis: float
    mem_bytes: int

    def to_wire(self) -> dict:
        return {"cpu_millis": self.cpu_millis, "mem_bytes": self.mem_bytes}


@dataclass(frozen=True)
class NodeFrame:
    status: str
    has_gpu: bool | None
    gpus: list[GpuRow]
    host: HostRow
    sampled_ms: int | None
    usage: PodUsage | None = None
    reports_usage: bool = False  # a Kubernetes node: "usage" is sent, null while stale

    def to_wire(self) -> dict:
        frame = {"kind": "node", "status": self.status, "has_gpu": self.has_gpu,
                 "gpus": [g.to_wire() for g in self.gpus], "st": self.sampled_ms, **self.host.to_wire()}  # fmt: skip
        if self.reports_usage:
            frame["usage"] = None if self.usage is None else self.usage.to_wire()
        return frame


@dataclass(frozen=True)
class JobFrame:
    gpus: list[GpuRow]
    hosts: list[HostRow]
    no_gpu: list[str]
    sampled_ms: int | None
    trainer: list[TrainerRow]
    hints: list[dict]
    idle_s: int
    pod: PodUsage | None = None

    def to_wire(self) -> dict:
        frame: dict[str, object] = {
            "kind": "job",
            "gpus": [g.to_wire() for g in self.gpus],
            "hosts": [h.to_wire() for h in self.hosts],
            "no_gpu": self.no_gpu,
            "st": self.sampled_ms,
            "trainer": [p.to_wire() for p in self.trainer],
        }
        if self.pod is not None:
            frame["pod"] = self.pod.to_wire()
        frame["hints"] = self.hints
        frame["idle_s"] = self.idle_s
        return frame


@dataclass(frozen=True)
class CourseRow:
    """One GPU of one student's job on the class dashboard."""

    student: str
    job: str
    gpu_key: str
    util: float | None
    mem: float | None  # % of the GPU's memory
    stale: bool
    idle_s: int
    simulated: bool = False  # replayed by the demo's stand-in nvidia-smi, not measured

    @property
    def key(self) -> str:
        return f"{self.student}/{self.job[:8]}/{self.gpu_key}"

    def to_wire(self) -> dict:
        """Its entry in the roster: which GPU a column is, and whose."""
        return {"key": self.key, "job": self.job, "student": self.student, "simulated": self.simulated}


@dataclass(frozen=True)
class CourseFrame:
    """Every GPU of a course's running jobs, in columns: `util`, `mem` and `idle_s` hold one number per GPU, in the
    order of the roster named by `roster`. The roster's entries (`gpus`) come in a frame only where the builder
    says (when they changed): a class of 1,000 GPUs sends 12 KB a second instead of 180."""

    gpus: list[CourseRow] = field(default_factory=list)
    sampled_ms: int | None = None

    @property
    def rows(self) -> list[CourseRow]:
        return sorted(self.gpus, key=lambda r: r.key)

    @cached_property
    def roster(self) -> str:
        """The roster's name: a digest of its entries, so a collector that starts again names the same one alike."""
        entries = json.dumps([r.to_wire() for r in self.rows], separators=(",", ":"))
        return hashlib.blake2b(entries.encode(), digest_size=6).hexdigest()

    def to_wire(self, *, with_roster: bool = True) -> dict:
        rows = self.rows
        frame: dict = {"kind": "course", "roster": self.roster, "st": self.sampled_ms}
        if with_roster:
            frame["gpus"] = [r.to_wire() for r in rows]
        frame["util"] = [None if r.stale or r.util is None else round(r.util, 1) for r in rows]
        frame["mem"] = [None if r.stale else r.mem for r in rows]
        frame["idle_s"] = [r.idle_s for r in rows]
        return frame
