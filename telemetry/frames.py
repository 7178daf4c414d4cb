"""From what the collector knows to one frame per group: node, job and course.

A group gets a frame on a tick when something it shows changed, and at least every HEARTBEAT_SECONDS
otherwise, so a node that stops answering turns stale on every page that shows it instead of freezing.
Stale GPUs carry no numbers (null), never zeros. The builder also feeds each job's hint rules and usage
totals (telemetry/summary.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from telemetry.collector.state import JobRef, NodeLive, Snapshot
from telemetry.hints import IDLE_SECONDS, HintRules, Sample
from telemetry.parsers import DcgmGpu, GpuSample
from telemetry.stream import course_group, job_group, node_group

HEARTBEAT_SECONDS = 1.0


def gpu_fields(sample: GpuSample) -> dict:
    return {
        "util": sample.util,
        "mem_util": sample.mem_util,
        "mem_used": sample.mem_used_mib,
        "mem_total": sample.mem_total_mib,
        "power": sample.power_w,
        "temp": sample.temp_c,
        "clock": sample.sm_clock_mhz,
    }


# A GPU whose node is stale, or whose sample is missing: every field present, none with a value.
NO_NUMBERS = dict.fromkeys(gpu_fields(GpuSample(0, "", *[None] * 7)))


def dcgm_fields(gpu: DcgmGpu) -> dict:
    v = gpu.values
    used, free = v.get("mem_used_mib"), v.get("mem_free_mib")
    engine = v.get("engine_active")
    return {
        "util": v.get("util", None if engine is None else round(engine * 100, 1)),
        "mem_util": None,
        "mem_used": used,
        "mem_total": used + free if used is not None and free is not None else None,
        "power": v.get("power_w"),
        "temp": v.get("temp_c"),
        "clock": None,
    }


def host_fields(live: NodeLive, stale: bool) -> dict:
    host = None if stale else live.host
    memory = None if stale else live.memory
    return {
        "node": live.name,
        "stale": stale,
        "cpu": None if host is None or host.cpu is None else {"busy": host.cpu.busy, "iowait": host.cpu.iowait},
        "mem": None if memory is None else {"used": memory[0], "total": memory[1]},
        "disks": []
        if host is None
        else [{"dev": d.device, "util": d.util, "r_await": d.r_await_ms, "w_await": d.w_await_ms} for d in host.disks],
    }


@dataclass
class Usage:
    """A running job's totals, for its summary when it ends."""

    samples: int = 0
    util_sum: float = 0.0
    util_max: float | None = None
    memory_peak: float | None = None
    tokens_sum: float = 0.0
    tokens_count: int = 0
    idle_seconds: float = 0.0

    def as_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass
class FrameBuilder:
    idle_seconds: float = IDLE_SECONDS
    rules: dict[str, HintRules] = field(default_factory=dict)
    usage: dict[str, Usage] = field(default_factory=dict)
    last_sent: dict[str, float] = field(default_factory=dict)

    def build(self, snap: Snapshot, now: float) -> dict[str, dict]:
        frames: dict[str, dict] = {}
        due = self._due(now)

        holders: dict[int, dict[int, JobRef]] = {}
        for job, node_id, indexes in snap.allocations:
            holders.setdefault(node_id, {}).update(dict.fromkeys(indexes, job))
        for node_id, live in snap.nodes.items():
            group = node_group(node_id)
            if node_id in snap.changed_nodes or due(group):
                frames[group] = self._node_frame(live, now, holders.get(node_id, {}))

        by_job: dict[str, list[tuple[JobRef, int, tuple[int, ...]]]] = {}
        for job, node_id, indexes in snap.allocations:
            by_job.setdefault(job.job_id, []).append((job, node_id, indexes))

        # Course frames carry the GPUs of the jobs that changed, and every GPU on a heartbeat.
        course_rows: dict[int, list[tuple[bool, dict]]] = {}
        course_sampled: dict[int, float] = {}
        for job_id, job in snap.jobs.items():
            allocations = by_job.get(job_id, [])
            changed = any(node_id in snap.changed_nodes for _, node_id, _ in allocations)
            changed |= job_id in snap.trainer or job_id in snap.changed_pods
            gpus, hosts, no_gpu = self._job_gpus(snap, allocations, now)
            if job_id in snap.dcgm:
                gpus += [{"key": f"{g.node}/{g.index}", "node": g.node, "i": g.index,
                          "label": f"GPU {g.index} · {g.node}", "stale": False, **dcgm_fields(g)}
                         for g in snap.dcgm[job_id]]  # fmt: skip
            rules = self.rules.setdefault(job_id, HintRules(self.idle_seconds))
            if changed:
                self._account(job_id, gpus, hosts, snap.trainer.get(job_id, []), now)
            sampled = max((_sampled_at(snap.nodes.get(node_id)) for _, node_id, _ in allocations), default=0.0)
            group = job_group(job_id)
            if changed or due(group):
                frame = {"kind": "job", "gpus": gpus, "hosts": hosts, "no_gpu": no_gpu, "st": _ms(sampled)}
                frame["trainer"] = [
                    {"epoch": p.epoch, "step": p.step, "loss": p.loss, "tok_s": p.tokens_per_s}
                    for p in snap.trainer.get(job_id, [])
                ]
                pod = snap.pods.get(job_id)
                if pod is not None:
                    frame["pod"] = {"cpu_millis": pod.cpu_millis, "mem_bytes": pod.memory_bytes}
                frame["hints"] = [h.as_dict() for h in rules.hints()]
                frame["idle_s"] = round(rules.idle_seconds(now))
                frames[group] = frame
            rows = course_rows.setdefault(job.course_id, [])
            for gpu in gpus:
                memory = (
                    round(100 * gpu["mem_used"] / gpu["mem_total"], 1)
                    if gpu["mem_used"] is not None and gpu["mem_total"]
                    else None
                )
                rows.append(
                    (
                        changed,
                        {
                            "key": f"{job.owner}/{job_id[:8]}/{gpu['key']}",
                            "job": job_id,
                            "student": job.owner,
                            "util": gpu["util"],
                            "mem": memory,
                            "stale": gpu["stale"],
                            "idle_s": round(now - rules.idle_since[gpu["key"]])
                            if gpu["key"] in rules.idle_since
                            else 0,
                        },
                    )
                )
            if changed:
                course_sampled[job.course_id] = max(course_sampled.get(job.course_id, 0.0), sampled)

        for course_id, rows in course_rows.items():
            group = course_group(course_id)
            heartbeat = due(group)
            if course_id in course_sampled or heartbeat:
                sent = [row for changed, row in rows if changed or heartbeat]
                st = _ms(course_sampled.get(course_id, 0.0))
                frames[group] = {"kind": "course", "gpus": sorted(sent, key=lambda r: r["key"]), "st": st}

        self._forget_ended(snap)
        for group in frames:
            self.last_sent[group] = now
        return frames

    def _due(self, now: float):
        return lambda group: now - self.last_sent.get(group, 0.0) >= HEARTBEAT_SECONDS

    @staticmethod
    def _node_frame(live: NodeLive, now: float, holders: dict[int, JobRef]) -> dict:
        stale = live.stale(now)
        gpus = [
            {"key": f"{live.name}/{i}", "node": live.name, "i": i, "label": holder_label(i, holders.get(i)),
             "job": holders[i].job_id if i in holders else None, "stale": stale, **gpu_fields(s)}
            for i, s in sorted(live.gpus.items())
        ]  # fmt: skip
        if stale:
            gpus = [{**g, **NO_NUMBERS} for g in gpus]
        frame = {
            "kind": "node",
            "status": live.status,
            "has_gpu": live.has_gpu,
            "gpus": gpus,
            "st": _ms(_sampled_at(live)),
        }
        frame.update(host_fields(live, stale))
        if live.usage is not None:
            frame["usage"] = None if stale else {"cpu_millis": live.usage[0], "mem_bytes": live.usage[1]}
        return frame

    @staticmethod
    def _job_gpus(snap: Snapshot, allocations, now: float) -> tuple[list[dict], list[dict], list[str]]:
        gpus, hosts, no_gpu = [], [], []
        for _, node_id, indexes in allocations:
            live = snap.nodes.get(node_id)
            if live is None:
                continue
            stale = live.stale(now)
            hosts.append(host_fields(live, stale))
            if live.has_gpu is False:
                no_gpu.append(live.name)
                continue
            for i in indexes:
                sample = None if stale else live.gpus.get(i)
                fields = gpu_fields(sample) if sample else NO_NUMBERS
                gpus.append({"key": f"{live.name}/{i}", "node": live.name, "i": i, "label": f"GPU {i} · {live.name}",
                             "stale": sample is None, **fields})  # fmt: skip
        return gpus, hosts, no_gpu

    def _account(self, job_id: str, gpus: list[dict], hosts: list[dict], trainer, now: float) -> None:
        """Feed the hint rules and the usage totals with this moment of the job."""
        utils = [g["util"] for g in gpus if g["util"] is not None]
        disks = [d for h in hosts for d in h["disks"]]
        busiest = max(disks, key=lambda d: d["util"], default=None)
        sample = Sample(
            t=now,
            gpus={
                g["key"]: (
                    g["util"],
                    g["mem_used"] / g["mem_total"] if g["mem_used"] is not None and g["mem_total"] else None,
                )
                for g in gpus
                if g["util"] is not None
            },
            disk_util=busiest["util"] if busiest else None,
            disk_await_ms=max(busiest["r_await"], busiest["w_await"]) if busiest else None,
        )
        rules = self.rules[job_id]
        was_idle = rules.idle_seconds(now)
        rules.add(sample)
        usage = self.usage.setdefault(job_id, Usage())
        if utils:
            usage.samples += len(utils)
            usage.util_sum += sum(utils)
            usage.util_max = max([*utils, usage.util_max or 0.0])
            if rules.idle_seconds(now) > 0 and was_idle > 0:
                usage.idle_seconds += rules.idle_seconds(now) - was_idle
        used = [g["mem_used"] for g in gpus if g["mem_used"] is not None]
        if used:
            usage.memory_peak = max([*used, usage.memory_peak or 0.0])
        for point in trainer:
            usage.tokens_sum += point.tokens_per_s
            usage.tokens_count += 1

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
