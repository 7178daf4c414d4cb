"""What SLURM accounting (slurmdbd) recorded of finished jobs, read from `sacct --parsable2 --noconvert`.

One call covers a list of jobs: each job's allocation line gives elapsed time, TotalCPU, the CPUs and GPUs it held,
its time limit and the memory it asked for; its steps' lines give MaxRSS, of which the largest is the job's.
A cluster without accounting has none of this, and the portal then shows no CPU or memory figures (never zeros).
"""

from __future__ import annotations

import re

from ..base import AccountedUsage as AccountedUsage  # what sacct's lines become

# slurmdbd stores a job's end after slurmctld reports it: the poll asks again this long after the end, and job pages
# say the figures are on their way until then.
USAGE_RETRY_SECONDS = 600
SACCT_FIELDS = "JobIDRaw,ElapsedRaw,TotalCPU,AllocCPUS,MaxRSS,ReqMem,AllocTRES,TimelimitRaw"

_SIZE_UNITS = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4, "P": 1024**5}
_SIZE = re.compile(r"^(\d+(?:\.\d+)?)([KMGTP]?)[nc]?$", re.IGNORECASE)
_GPU_TRES = re.compile(r"(?:^|,)gres/gpu=(\d+)")


def parse_size(text: str) -> int | None:
    """A sacct size: "168800256" (bytes, --noconvert), "500M", "16Gn" (per node) → bytes; "" or "0" → None."""
    match = _SIZE.match(text.strip())
    if not match:
        return None
    value = int(float(match.group(1)) * _SIZE_UNITS[match.group(2).upper()])
    return value or None


def parse_cpu_time(text: str) -> float:
    """sacct's TotalCPU: "[D-][HH:]MM:SS[.mmm]" → seconds ("00:02.021" → 2.021, "1-02:00:00" → 93600)."""
    text = text.strip()
    if not text:
        return 0.0
    days, _, rest = text.rpartition("-")
    try:
        parts = [float(p) for p in rest.split(":")]
        seconds = sum(value * 60**power for power, value in enumerate(reversed(parts)))
        return int(days or 0) * 86400 + seconds
    except ValueError:
        return 0.0


def _int(text: str) -> int | None:
    text = text.strip()
    return int(text) if text.isdigit() else None


def parse_sacct(text: str, ids: list[str]) -> dict[str, AccountedUsage]:
    """`sacct -n -P --noconvert --format=SACCT_FIELDS` lines → each asked-for job's usage (steps folded in)."""
    jobs: dict[str, dict] = {}
    peak_rss: dict[str, int] = {}
    for line in text.splitlines():
        fields = line.split("|")
        if len(fields) != len(SACCT_FIELDS.split(",")):
            continue
        raw_id, elapsed, total_cpu, cpus, max_rss, req_mem, tres, limit = fields
        job_id, _, step = raw_id.partition(".")
        if job_id not in ids:
            continue
        rss = parse_size(max_rss)
        if rss:
            peak_rss[job_id] = max(rss, peak_rss.get(job_id, 0))
        if step:
            continue
        gpus = _GPU_TRES.search(tres)
        jobs[job_id] = {
            "scheduler_id": job_id,
            "elapsed_seconds": _int(elapsed) or 0,
            "cpu_seconds": round(parse_cpu_time(total_cpu), 3),
            "cpus": _int(cpus) or 0,
            "gpus": int(gpus.group(1)) if gpus else 0,
            "requested_memory_bytes": parse_size(req_mem),
            "time_limit_minutes": _int(limit),
        }
    return {job_id: AccountedUsage(max_rss_bytes=peak_rss.get(job_id), **job) for job_id, job in jobs.items()}
