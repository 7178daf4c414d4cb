"""SLURM job arrays, for both SLURM kinds: how a task is named and how the scheduler lists tasks.

A task is keyed by its array's job id and its index, "<array job id>_<task id>", never by its own raw job id: SLURM
gives each task a raw id of its own and hands the array's id to the last task it starts. While tasks wait, sacct and
squeue (without -r) list them on one line, "1240_[2-3%2]"; `task_ids` expands such a line to the tasks it stands for.
"""

from __future__ import annotations

import posixpath
import re
import uuid
from collections.abc import Sequence

from core.templating.shell_safety import ENV_PREFIX

from .script.rendering import SWEPT_FLAG_PREFIX

TASK_ID = re.compile(r"^(?P<array>\d+)_(?P<task>\d+)$")
# What sbatch --array takes from the portal: indexes and ranges, optionally "%K" (at most K tasks at once).
ARRAY_SPEC = re.compile(r"^\d+(-\d+)?(,\d+(-\d+)?)*(%\d+)?$")
VALUES_NAME = "task-values.tsv"  # beside the array's script, in the sweep's directory (its tasks' working directory)
TASK_LOG = "task-%a.log"  # what a task prints before its script sends its output to its run's log
RUN_LOG = "output.log"  # each run's log in its own directory, where the job page reads it
_WAITING = re.compile(r"^(?P<array>\d+)_\[(?P<ranges>[0-9,\-]+)(%\d+)?\]$")


def array_job_of(scheduler_id: str) -> str:
    """The job id to ask the scheduler about: the array's for a task, the id itself for a plain job."""
    match = TASK_ID.match(scheduler_id)
    return match.group("array") if match else scheduler_id


def task_ids(listed: str) -> list[str]:
    """The task ids one listed id stands for: "1240_3" → ["1240_3"]; "1240_[1-2,5%2]" → 1240_1, 1240_2, 1240_5."""
    match = _WAITING.match(listed)
    if match is None:
        return [listed]
    found = []
    for part in match.group("ranges").split(","):
        first, _, last = part.partition("-")
        if first.isdigit() and (not last or last.isdigit()):
            found += [f"{match.group('array')}_{i}" for i in range(int(first), int(last or first) + 1)]
    return found


def raw_job_id(scontrol_show_job: str) -> str | None:
    """A task's own job number from `scontrol show job --oneliner <array>_<task>` (what srun --jobid takes), only
    while it runs."""
    match = re.match(r"JobId=(\d+) ", scontrol_show_job)
    return match.group(1) if match and re.search(r"\bJobState=RUNNING\b", scontrol_show_job) else None


def checked_spec(spec: str) -> str:
    """The --array value, or ValueError: it reaches sbatch as one argument and must be only indexes."""
    if not ARRAY_SPEC.match(spec):
        raise ValueError(f"{spec!r} is not an array of task indexes.")
    return spec


def spec_for(indexes: list[int], at_once: int) -> str:
    """sbatch's --array for these task indexes, at most `at_once` running together: [0, 1, 2, 4], 2 → "0-2,4%2"."""
    ranges: list[str] = []
    for index in sorted(indexes):
        if ranges and ranges[-1].rpartition("-")[2] == str(index - 1):
            ranges[-1] = f"{ranges[-1].partition('-')[0]}-{index}"
        else:
            ranges.append(str(index))
    return checked_spec(",".join(ranges) + (f"%{at_once}" if at_once < len(indexes) else ""))


def values_file(rows: Sequence[tuple[uuid.UUID, Sequence[str]]]) -> str:
    """The values file: line i+1 is task i's run id and its swept values (as the script spells them), tab-separated.

    A value is typed and checked before it comes here (core/templating/params.py): numbers, true/false, or an author's
    choice, which holds no control character, so neither a tab nor a line break can move a value to another field or
    task. Checked again here: a value that could is refused, never written."""
    lines = []
    for run_id, values in rows:
        for value in values:
            if not value or re.search(r"[\x00-\x1f\x7f]", value) or value != value.strip(" "):
                raise ValueError(f"{value!r} cannot be written as one field of a sweep's values file.")
        lines.append("\t".join([str(uuid.UUID(str(run_id))), *values]))
    return "\n".join(lines) + "\n"


def write_values(sftp, job_dir: str, text: str) -> None:
    """The values file in the array's directory, 0600 before a byte is written, over an SFTP channel of the job's
    identity (its tasks read it)."""
    with sftp.open(posixpath.join(job_dir, VALUES_NAME), "w") as fh:
        fh.chmod(0o600)
        fh.write(text)


def task_block(swept: Sequence[str], bools: Sequence[str] = ()) -> tuple[str, ...]:
    """The script's lines that make an array task the run it stands for: its id and swept values read from its line
    of the values file as data (`read`, never eval or source), the variables the rendered body refers to, and its
    output sent to its run's own directory (jobs/<run id>/, beside the sweep's own)."""
    names = " ".join(["GPULAB_JOB_ID", *(f"{ENV_PREFIX}{name}" for name in swept)])
    lines = [
        f"# A sweep's task: its run's id and values are line SLURM_ARRAY_TASK_ID + 1 of {VALUES_NAME}, read as data.",
        f'GPULAB_TASK_LINE=$(sed -n "$((SLURM_ARRAY_TASK_ID + 1))p" {VALUES_NAME})',
        f"IFS=$'\\t' read -r {names} <<<\"$GPULAB_TASK_LINE\"",
        "[[ $GPULAB_JOB_ID =~ ^[0-9a-f-]{36}$ ]] || "
        f'{{ echo "Task $SLURM_ARRAY_TASK_ID has no line in {VALUES_NAME}." >&2; exit 2; }}',
        f"export {names}",
        *(f'{SWEPT_FLAG_PREFIX}{name}=$([ "${ENV_PREFIX}{name}" = true ] && echo 1)' for name in bools),
        'mkdir -p -m 700 ../"$GPULAB_JOB_ID" && cd ../"$GPULAB_JOB_ID" || exit 2',
        f"exec >{RUN_LOG} 2>&1  # this run's log, where its page reads it",
    ]
    return tuple(lines)
