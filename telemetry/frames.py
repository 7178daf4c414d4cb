"""From what the collector knows to one frame per group: node, job and course.

A node or job group gets a frame on a tick when something it shows changed, and at least every HEARTBEAT_SECONDS
otherwise, so a node that stops answering turns stale on every page that shows it instead of freezing; a course
group gets every GPU of its running jobs once every HEARTBEAT_SECONDS.
Stale GPUs carry no numbers (null), never zeros. The builder also feeds each job's hint rules and usage
totals (telemetry/summary.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from telemetry.hints import IDLE_SECONDS, HintRules, Sample
from telemetry.live import JobRef, NodeLive, Snapshot
from telemetry.stream import course_group, job_group, node_group
from telemetry.wire import (
    NO_NUMBERS,
    CourseFrame,
    CourseRow,
    GpuNumbers,
    GpuRow,
    HostRow,
    JobFrame,
    NodeFrame,
    PodUsage,
    TrainerRow,
)

HEARTBEAT_SECONDS = 1.0


@dataclass
class Usage:
    """A running job's totals, for its summary when it ends."""

    samples: int = 0
    util_sum: float = 0.0
    util_max: float | None = None
    memory_peak: float | None = None
    memory_total: float | None = None  # the largest GPU's memory, MiB: what the peak is a share of
    tokens_sum: float = 0.0
    tokens_count: int = 0
    idle_seconds: float = 0.0
    simulated: bool = False  # a GPU sample came from the demo's stand-in nvidia-smi
    final_loss: float | None = None  # the newest trainer point's loss: the run's result when it ends

    def as_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass
class JobMoment:
    """One job on one tick: its GPUs and hosts, whether anything of it changed, when it was last sampled."""

    job: JobRef
    gpus: list[GpuRow]
    hosts: list[HostRow]
    no_gpu: list[str]
    changed: bool
    sampled: float


@dataclass
class FrameBuilder:
    idle_seconds: float = IDLE_SECONDS
    rules: dict[str, HintRules] = field(default_factory=dict)
    usage: dict[str, Usage] = field(default_factory=dict)
    last_sent: dict[str, float] = field(default_factory=dict)
    rosters: dict[int, str] = field(default_factory=dict)  # course → the roster its frames last carried

    def build(self, snap: Snapshot, now: float) -> dict[str, dict]:
        """{group: frame} for every group due on this tick: node frames, job frames, then course frames."""
        due = self._due(now)
        by_job: dict[str, list[tuple[int, tuple[int, ...]]]] = {}
        for job, node_id, indexes in snap.allocations:
            by_job.setdefault(job.job_id, []).append((node_id, indexes))
        moments = [self._moment(snap, job, by_job.get(job.job_id, []), now) for job in snap.jobs.values()]
        frames = {**self._node_frames(snap, now, due), **self._job_frames(snap, moments, now, due)}
        frames.update(self._course_frames(moments, now, due))
        self._forget_ended(snap)
        for group in frames:
            self.last_sent[group] = now
        return frames

    def _due(self, now: float):
        return lambda group: now - self.last_sent.get(group, 0.0) >= HEARTBEAT_SECONDS

    # -- node frames ------------------------------------------------------------------------------------------
    def _node_frames(self, snap: Snapshot, now: float, due) -> dict[str, dict]:
        holders: dict[int, dict[int, JobRef]] = {}
        for job, node_id, indexes in snap.allocations:
            holders.setdefault(node_id, {}).update(dict.fromkeys(indexes, job))
        frames = {}
        for node_id, live in snap.nodes.items():
            group = node_group(node_id)
            if node_id in snap.changed_nodes or due(group):
                frames[group] = self._node_frame(live, now, holders.get(node_id, {})).to_wire()
        return frames

    @staticmethod
    def _node_frame(live: NodeLive, now: float, holders: dict[int, JobRef]) -> NodeFrame:
        stale = live.stale(now)
        gpus = [
            GpuRow(live.name, i, holder_label(i, holders.get(i)), stale,
                   NO_NUMBERS if stale else GpuNumbers.from_sample(s),
                   holder=holders[i].job_id if i in holders else None, on_node_page=True)
            for i, s in sorted(live.gpus.items())
        ]  # fmt: skip
        usage = None if stale or live.usage is None else PodUsage(*live.usage)
        return NodeFrame(
            status=live.status,
            has_gpu=live.has_gpu,
            gpus=gpus,
            host=HostRow.of(live.name, stale, live.host, live.memory),
            sampled_ms=_ms(_sampled_at(live)),
            usage=usage,
            reports_usage=live.usage is not None,
        )

    # -- job frames -------------------------------------------------------------------------------------------
    def _moment(self, snap: Snapshot, job: JobRef, allocations: list, now: float) -> JobMoment:
        changed = any(node_id in snap.changed_nodes for node_id, _ in allocations)
        changed |= job.job_id in snap.trainer or job.job_id in snap.changed_pods
        gpus, hosts, no_gpu = self._job_gpus(snap, allocations, now)
        gpus += [GpuRow(g.node, g.index, f"GPU {g.index} · {g.node}", False, GpuNumbers.from_dcgm(g))
                 for g in snap.dcgm.get(job.job_id, [])]  # fmt: skip
        sampled = max((_sampled_at(snap.nodes.get(node_id)) for node_id, _ in allocations), default=0.0)
        return JobMoment(job, gpus, hosts, no_gpu, changed, sampled)

    def _job_frames(self, snap: Snapshot, moments: list[JobMoment], now: float, due) -> dict[str, dict]:
        frames = {}
        for m in moments:
            job_id = m.job.job_id
            rules = self.rules.setdefault(job_id, HintRules(self.idle_seconds))
            trainer = snap.trainer.get(job_id, [])
            if m.changed:
                self._account(job_id, m.gpus, m.hosts, trainer, now)
            group = job_group(job_id)
            if m.changed or due(group):
                pod = snap.pods.get(job_id)
                frames[group] = JobFrame(
                    gpus=m.gpus,
                    hosts=m.hosts,
                    no_gpu=m.no_gpu,
                    sampled_ms=_ms(m.sampled),
                    trainer=[TrainerRow(p.epoch, p.step, p.loss, p.tokens_per_s) for p in trainer],
                    hints=[h.as_dict() for h in rules.hints()],
                    idle_s=round(rules.idle_seconds(now)),
                    pod=None if pod is None else PodUsage(pod.cpu_millis, pod.memory_bytes),
                ).to_wire()
        return frames

    @staticmethod
    def _job_gpus(snap: Snapshot, allocations, now: float) -> tuple[list[GpuRow], list[HostRow], list[str]]:
        gpus, hosts, no_gpu = [], [], []
        for node_id, indexes in allocations:
            live = snap.nodes.get(node_id)
            if live is None:
                continue
            stale = live.stale(now)
            hosts.append(HostRow.of(live.name, stale, live.host, live.memory))
            if live.has_gpu is False:
                no_gpu.append(live.name)
                continue
            for i in indexes:
                sample = None if stale else live.gpus.get(i)
                gpus.append(
                    GpuRow(live.name, i, f"GPU {i} · {live.name}", sample is None, GpuNumbers.from_sample(sample))
                )
        return gpus, hosts, no_gpu

    # -- course frames: every GPU of the course, once a second --------------------------------------------------
    # The dashboard draws once a second into 5-second columns (static/js/class_dashboard.js): a frame for each
    # node's news (ten a second on a class of many nodes) would send it ten frames to draw one.
    def _course_frames(self, moments: list[JobMoment], now: float, due) -> dict[str, dict]:
        rows: dict[int, list[CourseRow]] = {}
        sampled: dict[int, float] = {}
        for m in moments:
            course_id = m.job.course_id
            if not due(course_group(course_id)):
                continue
            idle_since = self.rules[m.job.job_id].idle_since
            rows.setdefault(course_id, []).extend(self._course_row(m.job, gpu, idle_since, now) for gpu in m.gpus)
            sampled[course_id] = max(sampled.get(course_id, 0.0), m.sampled)
        frames = {}
        for course_id, course_rows in rows.items():
            frame = CourseFrame(course_rows, _ms(sampled[course_id]))
            frames[course_group(course_id)] = frame.to_wire(with_roster=self.rosters.get(course_id) != frame.roster)
            self.rosters[course_id] = frame.roster
        return frames

    def not_published(self) -> None:
        """The tick's frames were lost (Redis down): the next course frames carry their roster again, or pages
        would hold columns they cannot name."""
        self.rosters.clear()

    @staticmethod
    def _course_row(job: JobRef, gpu: GpuRow, idle_since: dict[str, float], now: float) -> CourseRow:
        fraction = gpu.numbers.memory_fraction
        return CourseRow(
            student=job.owner,
            job=job.job_id,
            gpu_key=gpu.key,
            util=gpu.numbers.util,
            mem=None if fraction is None else round(100 * fraction, 1),
            stale=gpu.stale,
            idle_s=round(now - idle_since[gpu.key]) if gpu.key in idle_since else 0,
            simulated=gpu.numbers.simulated,
        )

    def _account(self, job_id: str, gpus: list[GpuRow], hosts: list[HostRow], trainer, now: float) -> None:
        """Feed the hint rules and the usage totals with this moment of the job."""
        utils = [g.numbers.util for g in gpus if g.numbers.util is not None]
        disks = [d for h in hosts for d in h.disks]
        busiest = max(disks, key=lambda d: d.util, default=None)
        sample = Sample(
            t=now,
            gpus={g.key: (g.numbers.util, g.numbers.memory_fraction) for g in gpus if g.numbers.util is not None},
            disk_util=busiest.util if busiest else None,
            disk_await_ms=max(busiest.r_await, busiest.w_await) if busiest else None,
        )
        rules = self.rules[job_id]
        was_idle = rules.idle_seconds(now)
        rules.add(sample)
        usage = self.usage.setdefault(job_id, Usage())
        usage.simulated = usage.simulated or any(g.numbers.simulated for g in gpus)
        if utils:
            usage.samples += len(utils)
            usage.util_sum += sum(utils)
            usage.util_max = max([*utils, usage.util_max or 0.0])
            if rules.idle_seconds(now) > 0 and was_idle > 0:
                usage.idle_seconds += rules.idle_seconds(now) - was_idle
        used = [g.numbers.mem_used for g in gpus if g.numbers.mem_used is not None]
        if used:
            usage.memory_peak = max([*used, usage.memory_peak or 0.0])
        totals = [g.numbers.mem_total for g in gpus if g.numbers.mem_total]
        if totals:
            usage.memory_total = max([*totals, usage.memory_total or 0.0])
        for point in trainer:
            usage.tokens_sum += point.tokens_per_s
            usage.tokens_count += 1
            usage.final_loss = point.loss

    def _forget_ended(self, snap: Snapshot) -> None:
        for job_id in [j for j in self.rules if j not in snap.jobs]:
            self.rules.pop(job_id, None)


def holder_label(index: int, job: JobRef | None) -> str:
    """A node chart's legend for one GPU: which student's job holds it, from the collector's attribution."""
    if job is None:
        return f"GPU {index} · free"
    return f"GPU {index} · {job.owner}'s {job.template or 'job'}"


def _sampled_at(live: NodeLive | None) -> float:
    """When the newest sample of a node arrived at the collector (0 if never)."""
    return 0.0 if live is None else max(live.gpus_at, live.host_at)


def _ms(seconds: float) -> int | None:
    """Epoch ms for the frame's "st" (sample time): clients measure sample age with it."""
    return int(seconds * 1000) if seconds else None
