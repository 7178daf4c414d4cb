"""Turn what the tools print into samples: nvidia-smi CSV, iostat JSON, /proc/meminfo, trainer lines, Prometheus.

Every parser takes text exactly as the tool printed it and returns plain dataclasses; none of them invents a
value: a field the tool reports as "[N/A]" or "[Not Supported]" becomes None, and the chart shows a gap.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from datetime import datetime

# The query the collector runs on every SLURM node; the order of fields is the CSV's column order.
NVIDIA_SMI_FIELDS = (
    "timestamp",
    "index",
    "uuid",
    "utilization.gpu",
    "utilization.memory",
    "memory.used",
    "memory.total",
    "power.draw",
    "temperature.gpu",
    "clocks.sm",
)
# The demo's stand-in nvidia-smi (scripts/fixtures/nvidia-smi) gives its GPUs UUIDs of zeros but the index, which
# no NVIDIA GPU has: samples with it are simulated, and every page, report and log line showing them says so.
SIMULATED_UUID_PREFIX = "GPU-00000000-0000-4000-8000-"
_MISSING = {"", "[N/A]", "N/A", "[Not Supported]", "[Unknown Error]", "[GPU is lost]"}


@dataclass(frozen=True)
class GpuSample:
    index: int
    uuid: str
    util: float | None  # %
    mem_util: float | None  # % of time the memory controller was busy
    mem_used_mib: float | None
    mem_total_mib: float | None
    power_w: float | None
    temp_c: float | None
    sm_clock_mhz: float | None
    taken_at: datetime | None = None

    @property
    def simulated(self) -> bool:
        """Figures replayed by the demo's stand-in nvidia-smi, not measured on a GPU."""
        return self.uuid.startswith(SIMULATED_UUID_PREFIX)


@dataclass(frozen=True)
class DiskSample:
    device: str
    util: float  # % of time the device was busy
    r_await_ms: float
    w_await_ms: float
    read_kbs: float
    write_kbs: float


@dataclass(frozen=True)
class CpuSample:
    busy: float  # % user + nice + system + steal
    iowait: float
    idle: float


@dataclass(frozen=True)
class HostSample:
    """One iostat report: CPU and every disk, one second's averages."""

    cpu: CpuSample | None
    disks: tuple[DiskSample, ...]


@dataclass(frozen=True)
class TrainerPoint:
    epoch: int
    step: int
    loss: float
    tokens_per_s: float
    step_ms: float | None = None
    total_steps: int | None = None  # the steps the run plans in all (recent trainers): what progress counts to


def _number(text: str) -> float | None:
    text = text.strip()
    if text in _MISSING:
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _timestamp(text: str) -> datetime | None:
    # nvidia-smi prints local time as "2026/11/21 07:24:40.123"; collectors use their own receive time,
    # this is kept for the record only.
    for fmt in ("%Y/%m/%d %H:%M:%S.%f", "%Y/%m/%d %H:%M:%S"):
        try:
            return datetime.strptime(text.strip(), fmt)  # the node's local time, no zone printed
        except ValueError:
            continue
    return None


def parse_nvidia_smi_line(line: str) -> GpuSample | None:
    """One row of `nvidia-smi --query-gpu=<NVIDIA_SMI_FIELDS> --format=csv,noheader,nounits`; None if not a row."""
    parts = [p.strip() for p in line.split(",")]
    if len(parts) != len(NVIDIA_SMI_FIELDS):
        return None
    index = _number(parts[1])
    if index is None or not parts[2].startswith(("GPU-", "MIG-")):
        return None
    util, mem_util, used, total, power, temp, clock = (_number(p) for p in parts[3:])
    return GpuSample(
        index=int(index),
        uuid=parts[2],
        util=util,
        mem_util=mem_util,
        mem_used_mib=used,
        mem_total_mib=total,
        power_w=power,
        temp_c=temp,
        sm_clock_mhz=clock,
        taken_at=_timestamp(parts[0]),
    )


def parse_iostat_json(text: str) -> HostSample | None:
    """`iostat -x -y -o JSON 1 1`: the report is complete only when iostat exits, so callers pass one whole run."""
    try:
        hosts = json.loads(text)["sysstat"]["hosts"]
        stats = hosts[0]["statistics"]
    except (ValueError, KeyError, IndexError, TypeError):
        return None
    if not stats:
        return None
    report = stats[-1]
    cpu = None
    if isinstance(report.get("avg-cpu"), dict):
        c = report["avg-cpu"]
        busy = sum(float(c.get(k, 0.0)) for k in ("user", "nice", "system", "steal"))
        cpu = CpuSample(busy=round(busy, 2), iowait=float(c.get("iowait", 0.0)), idle=float(c.get("idle", 0.0)))
    disks = tuple(
        DiskSample(
            device=str(d.get("disk_device", "?")),
            util=float(d.get("util", 0.0)),
            r_await_ms=float(d.get("r_await", 0.0)),
            w_await_ms=float(d.get("w_await", 0.0)),
            read_kbs=float(d.get("rkB/s", 0.0)),
            write_kbs=float(d.get("wkB/s", 0.0)),
        )
        for d in report.get("disk", [])
        if isinstance(d, dict)
    )
    return HostSample(cpu=cpu, disks=disks)


_MEMINFO = re.compile(r"^(MemTotal|MemAvailable):\s+(\d+)\s*kB", re.MULTILINE)


def parse_meminfo(text: str) -> tuple[int, int] | None:
    """(used bytes, total bytes) from /proc/meminfo; used = total - available, what `free` calls used."""
    values = {name: int(kb) * 1024 for name, kb in _MEMINFO.findall(text)}
    if "MemTotal" not in values or "MemAvailable" not in values:
        return None
    return values["MemTotal"] - values["MemAvailable"], values["MemTotal"]


_TRAINER_PAIR = re.compile(r"(?:^|\s)([A-Za-z_/]+)=(\S+)")


def parse_trainer_line(line: str) -> TrainerPoint | None:
    """`epoch=<int> step=<int> loss=<float> tok/s=<float> [step_ms=…] [total_steps=…] [mfu=…]`; unknown keys are
    ignored."""
    if "loss=" not in line or "step=" not in line:
        return None
    pairs = dict(_TRAINER_PAIR.findall(line))
    try:
        point = TrainerPoint(
            epoch=int(pairs["epoch"]),
            step=int(pairs["step"]),
            loss=float(pairs["loss"]),
            tokens_per_s=float(pairs["tok/s"]),
            step_ms=float(pairs["step_ms"]) if "step_ms" in pairs else None,
            total_steps=int(pairs["total_steps"]) if "total_steps" in pairs else None,
        )
    except (KeyError, ValueError):
        return None
    if not (math.isfinite(point.loss) and math.isfinite(point.tokens_per_s)):
        return None
    return point


# -- Prometheus (dcgm-exporter) -------------------------------------------------------------------------------
DCGM_FIELDS = {
    "DCGM_FI_DEV_GPU_UTIL": "util",
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE": "engine_active",
    "DCGM_FI_DEV_FB_USED": "mem_used_mib",
    "DCGM_FI_DEV_FB_FREE": "mem_free_mib",
    "DCGM_FI_DEV_POWER_USAGE": "power_w",
    "DCGM_FI_DEV_GPU_TEMP": "temp_c",
}
DCGM_QUERY = "{__name__=~%s}" % json.dumps("|".join(DCGM_FIELDS))  # noqa: UP031 - PromQL braces


@dataclass(frozen=True)
class DcgmGpu:
    node: str
    index: int
    uuid: str
    namespace: str
    pod: str
    values: dict[str, float]


def parse_dcgm_vector(text: str) -> list[DcgmGpu]:
    """A Prometheus instant-query answer for DCGM_QUERY, one entry per GPU with every field it reported."""
    try:
        answer = json.loads(text)
        results = answer["data"]["result"] if answer.get("status") == "success" else []
    except (ValueError, KeyError, TypeError, AttributeError):
        return []
    gpus: dict[tuple[str, str], dict] = {}
    for item in results:
        labels, value = item.get("metric", {}), item.get("value", [None, None])
        field = DCGM_FIELDS.get(labels.get("__name__", ""))
        number = _number(str(value[1])) if isinstance(value, list) and len(value) == 2 else None
        if field is None or number is None:
            continue
        node = labels.get("Hostname") or labels.get("node") or labels.get("instance", "?")
        key = (node, labels.get("UUID", labels.get("gpu", "?")))
        entry = gpus.setdefault(
            key,
            {
                "node": node,
                "index": int(labels.get("gpu", "0")) if str(labels.get("gpu", "0")).isdigit() else 0,
                "uuid": labels.get("UUID", ""),
                "namespace": labels.get("namespace", labels.get("exported_namespace", "")),
                "pod": labels.get("pod", labels.get("exported_pod", "")),
                "values": {},
            },
        )
        entry["values"][field] = number
    return [DcgmGpu(**entry) for entry in gpus.values()]
