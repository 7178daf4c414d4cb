"""SLURM over SSH: sbatch, squeue/sacct/scontrol, scancel, and the job's output read over SFTP.

Every command is built here from a fixed vocabulary; the only values that vary are job ids the portal
recorded (digits), paths it chose (the lab directory and a job UUID) and the portal's own job UUID.
"""

from __future__ import annotations

import logging
import posixpath
import re
import uuid
from dataclasses import replace
from pathlib import Path

from django.utils import timezone

from core.choices import JobState

from ... import as_student, ssh
from ...base import (
    AccountedUsage,
    BackendError,
    ClusterBackend,
    ConnectionReport,
    GpuAllocation,
    LogChunk,
    NodeInfo,
    PartitionLimits,
    Polled,
    QueueView,
    SchedulerStatus,
    SchedulerUnavailable,
    SubmitRejected,
    SubmitRequest,
)
from ...slurm_family import arrays, notebook, reservations, runner_check, sudo_rule
from ...slurm_family.accounting import SACCT_FIELDS, parse_sacct
from ...slurm_family.hostlist import expand_hostlist
from ...slurm_family.settings import accounting_in_words, cluster_settings
from ...slurm_family.states import STATE_MAP, TERMINAL_RAW, never_starts, reason_text, shell_exit_code
from . import queue as slurm_queue
from .text import _GPU_COUNT, _parse_time, parse_minutes

logger = logging.getLogger(__name__)

COMMENT_PREFIX = "gpulab:"
SCRIPT_NAME = "job.sh"
LOG_NAME = "output.log"
SCHEDULER_ID = re.compile(r"^\d+(_\d+)?$")  # a job, or one task of an array (clusters/backends/slurm_family/arrays.py)
# What a job's own account runs; with run_as "sudo" these go through the sudo rule as the student.
STUDENT_COMMANDS = {"sbatch", "scancel", "squeue"}


# What slurm clients print when slurmctld does not answer: the job is fine, the controller is away.
CONTROLLER_DOWN = re.compile(
    r"Unable to contact slurm controller|Socket timed out|Connection refused|Zero Bytes were transmitted|"
    r"slurm_load_jobs error: Unable to contact",
    re.IGNORECASE,
)
UNKNOWN_JOB = re.compile(r"Invalid job id specified", re.IGNORECASE)
CONTROLLER_SILENT = "slurmctld did not answer; job states came from accounting (slurmdbd) and may be out of date"

_GRES_IDX = re.compile(r"gpu(?::[^:(\s]+)?:\d+\(IDX:([^)]*)\)")
_NODE_DETAIL = re.compile(r"^\s*Nodes=(\S+)\s+CPU_IDs=(\S*).*?GRES=(\S*)", re.MULTILINE)


def expand_ids(text: str) -> tuple[int, ...]:
    """SLURM index lists: "0-1,3" → (0, 1, 3). "N/A" (no GPU) → ()."""
    ids: list[int] = []
    for part in text.split(","):
        first, _, last = part.strip().partition("-")
        if first.isdigit() and (not last or last.isdigit()):
            ids.extend(range(int(first), int(last or first) + 1))
    return tuple(ids)


def parse_gpu_allocations(text: str) -> list[GpuAllocation]:
    """`scontrol show job -d`: the per-node detail lines of RUNNING jobs, e.g.
    "Nodes=gpu[01-02] CPU_IDs=0-1 Mem=0 GRES=gpu:a100:2(IDX:0-1)"."""
    allocations = []
    for block in re.split(r"(?m)^(?=JobId=)", text):
        job = re.match(r"JobId=(\d+)", block)
        if not job or not re.search(r"\bJobState=RUNNING\b", block):
            continue
        # A sweep's task is keyed as the portal keys it: by its array and its index.
        task = re.search(r"\bArrayJobId=(\d+) ArrayTaskId=(\d+)\b", block)
        scheduler_id = f"{task.group(1)}_{task.group(2)}" if task else job.group(1)
        for nodes, cpus, gres in _NODE_DETAIL.findall(block):
            indexes = tuple(i for found in _GRES_IDX.findall(gres) for i in expand_ids(found))
            for node in expand_hostlist(nodes):
                allocations.append(GpuAllocation(scheduler_id, node, indexes, cpus))
    return allocations


def parse_nodes(text: str) -> list[NodeInfo]:
    """`scontrol show node --oneliner`: one node per line."""
    nodes = []
    for line in text.splitlines():
        fields = dict(re.findall(r"(\w+)=(\S*)", line))
        if "NodeName" not in fields:
            continue
        gpus = sum(int(n) for n in _GPU_COUNT.findall(fields.get("Gres", "")))
        nodes.append(
            NodeInfo(
                name=fields["NodeName"],
                address=fields.get("NodeAddr") or fields["NodeName"],
                gpus=gpus,
                state=fields.get("State", ""),
            )
        )
    return nodes


PARTITION_FORMAT = "%P|%D|%s|%l|%G"  # name (* = default), nodes, job size in nodes, time limit, GRES


def parse_partitions(text: str) -> dict[str, PartitionLimits]:
    """`sinfo --all --noheader --format=%P|%D|%s|%l|%G`: one line per group of alike nodes in a partition, e.g.
    "gpu*|2|1-infinite|2:00:00|gpu:a100:4(S:0-1)". Lines of one partition add up their nodes."""
    found: dict[str, dict] = {}
    for line in text.splitlines():
        fields = line.strip().split("|")
        if len(fields) != 5 or not fields[1].isdigit():
            continue
        name, nodes, size, limit, gres = fields
        default = name.endswith("*")
        name = name.rstrip("*")
        entry = found.setdefault(name, {"name": name, "nodes": 0, "gpus_per_node": 0, "default": False})
        entry["nodes"] += int(nodes)
        entry["gpus_per_node"] = max(entry["gpus_per_node"], sum(int(n) for n in _GPU_COUNT.findall(gres)))
        entry["default"] = entry["default"] or default
        largest = size.partition("-")[2] or size
        entry["max_nodes_per_job"] = int(largest) if largest.isdigit() else None
        entry["max_minutes"] = parse_minutes(limit)
    return {name: PartitionLimits(**entry) for name, entry in found.items()}


def _asked(ids: list[str]) -> str:
    """The --jobs list: plain jobs by id, each array once by its own id (its tasks are then listed one by one)."""
    return ",".join(dict.fromkeys(arrays.array_job_of(i) for i in ids))


def _keyed_by_task(fields: list[str]) -> list[list[str]]:
    """A sacct row (JobIDRaw first, JobID last) as rows keyed like the portal's ids: a plain job by its raw id, an
    array's task by "<array>_<task>" (its step "<array>_<task>.batch"), waiting tasks listed on one row each on
    their own."""
    if len(fields) == 6:  # without the JobID column: plain jobs only
        return [fields]
    if len(fields) != 7:
        return []
    listed, rest = fields[6], fields[1:6]
    if "_" not in listed:
        return [[fields[0], *rest]]
    step = "." + listed.partition(".")[2] if "." in listed else ""
    return [[task + step, *rest] for task in arrays.task_ids(listed.partition(".")[0])]


def _parse_exit_code(value: str) -> int | None:
    """SLURM's "code:signal" → a shell-style exit code (128+signal when killed by one)."""
    code, _, signal = value.partition(":")
    try:
        code_num, signal_num = int(code), int(signal or 0)
    except ValueError:
        return None
    return shell_exit_code(code_num, signal_num)


class SlurmBackend(ClusterBackend):
    kind = "slurm"
    run_as_modes = ("service", "sudo", "own-account")
    admin_fieldsets = (
        ("SLURM: login node", {"fields": ["host", "port", "host_key", "host_key_pinned_at"]}),
        (
            "SLURM: scheduler",
            {
                "fields": [
                    "partitions",
                    "gpu_types",
                    "has_accounting",
                    "lab_reservations",
                    "partition_limits",
                    "partition_limits_at",
                ]
            },
        ),
        ("SLURM: job environment", {"fields": ["lab_dir", "preamble", "shared_user"]}),
    )

    # Paths: "~/x" is relative to the login home, which is where SSH commands and SFTP start.
    def lab_path(self, *parts: str) -> str:
        base = self.cluster.lab_dir.strip() or "~/gpulab"
        if base == "~":
            base = "."
        elif base.startswith("~/"):
            base = base[2:]
        return posixpath.join(base, *parts)

    def __init__(self, cluster, account):
        super().__init__(cluster, account)
        # A student's cluster user reached through the service account (run_as "sudo"): the job's own commands and
        # files go through sudo as the student; the rest (sinfo, sacct, scontrol show node) as the service account.
        self.student = as_student.for_account(cluster, account)
        self.login = self.student.login if self.student else account

    def job_dir(self, job_id: uuid.UUID) -> str:
        return self.lab_path("jobs", str(job_id))

    def _run(self, argv: list[str], *, stdin: str = "") -> ssh.CommandResult:
        if self.student and argv[0] in STUDENT_COMMANDS:
            result = self.student.run(argv, stdin=stdin)
        else:
            result = ssh.run(self.cluster, self.login, argv, stdin=stdin)
        if not result.ok and CONTROLLER_DOWN.search(result.stderr):
            raise SchedulerUnavailable(
                f"The SLURM controller of “{self.cluster.display_name}” is not answering; jobs keep their last known "
                "state until it is back."
            )
        return result

    # -- submit -----------------------------------------------------------------------------------------------
    def submit(self, request: SubmitRequest) -> str:
        if self.student:  # the student's user makes its private directory; sbatch reads the script from stdin
            lab = self.student.path(self.cluster.lab_dir)
            job_dir = posixpath.join(lab, "jobs", str(request.job_id))
            self.student.make_private_dir(job_dir, below=lab)
            script, stdin = [], request.script
        else:
            job_dir = self._write_script(request)
            script, stdin = [posixpath.join(job_dir, SCRIPT_NAME)], ""
        if request.session_token:
            self._hand_over_token(request)
        argv = ["sbatch", "--parsable", f"--comment={COMMENT_PREFIX}{request.job_id}", f"--chdir={job_dir}"]
        if request.reservation:
            argv.append(f"--reservation={reservations.checked_name(request.reservation)}")
        log = LOG_NAME
        if request.array:
            self._write_task_values(job_dir, request.task_values)
            argv.append(f"--array={arrays.checked_spec(request.array)}")
            log = arrays.TASK_LOG
        result = self._run([*argv, f"--output={posixpath.join(job_dir, log)}", *script], stdin=stdin)
        scheduler_id = result.stdout.strip().split(";")[0] if result.ok else ""
        if not SCHEDULER_ID.match(scheduler_id):
            raise SubmitRejected(f"sbatch refused the job: {result.message()}")
        return scheduler_id

    def _write_script(self, request: SubmitRequest) -> str:
        """The job's directory (private to the account, 0700) with its script in it, over SFTP; its absolute path."""
        job_dir = self.job_dir(request.job_id)
        with ssh.sftp(self.cluster, self.account) as sftp:
            try:
                sftp.mkdir(job_dir, mode=0o700)  # the usual case: lab_dir/jobs exists, one round trip
            except OSError:
                ssh.makedirs(sftp, job_dir)  # first job on this cluster, or a retry that finds the directory
                sftp.chmod(job_dir, 0o700)
            job_dir = sftp.normalize(job_dir)  # absolute, so --output does not resolve against --chdir
            script_path = posixpath.join(job_dir, SCRIPT_NAME)
            with sftp.open(script_path, "w") as fh:
                fh.write(request.script)
            sftp.chmod(script_path, 0o700)
        return job_dir

    def _write_task_values(self, job_dir: str, text: str) -> None:
        """An array's values file beside its script, 0600, as the job's identity (its tasks read it)."""
        try:
            if self.student:
                with self.student.sftp() as sftp:
                    arrays.write_values(sftp, job_dir, text)
                return
            with ssh.sftp(self.cluster, self.account) as sftp:
                arrays.write_values(sftp, job_dir, text)
        except OSError as exc:
            raise BackendError(f"Could not write the sweep's values on the cluster: {exc}") from None

    def _hand_over_token(self, request: SubmitRequest) -> None:
        """The session's token for the job to read (and delete) at its start: a 0600 file in its private runtime
        directory, written as the job's identity, outside the run directory and the script (the wing's notebook.py)."""
        text = notebook.session_file(self.cluster, request.session_token)
        try:
            if self.student:  # 0700 from the lab directory down, as a run directory (a shared lab's stays 1733)
                lab = self.student.path(self.cluster.lab_dir)
                runtime = notebook.runtime_dir(lab, request.job_id)
                self.student.make_private_dir(runtime, below=lab)
                with self.student.sftp() as sftp:
                    notebook.write_session_file(sftp, runtime, text)
                return
            runtime = notebook.runtime_dir(self.lab_path(), request.job_id)
            with ssh.sftp(self.cluster, self.account) as sftp:
                notebook.write_session_file(sftp, runtime, text)
        except OSError as exc:
            raise BackendError(f"Could not hand the session its token on the cluster: {exc}") from None

    def find_submitted(self, request: SubmitRequest) -> str | None:
        comment = f"{COMMENT_PREFIX}{request.job_id}"
        # An array's tasks all carry its comment: its own job id is what a retry finds (the id before "_").
        if cluster_settings(self.cluster).has_accounting:
            argv = ["sacct", "-X", "-n", "-P", "--format=JobID,Comment", f"--user={self.account.username}"]
            argv.append("--starttime=now-7days")
        else:
            argv = ["squeue", "--states=all", "--noheader", "--format=%F|%k", f"--user={self.account.username}"]
        result = self._run(argv)
        if not result.ok:
            raise BackendError(f"Could not list earlier submissions: {result.message()}")
        for line in result.stdout.splitlines():
            listed, _, found = line.partition("|")
            scheduler_id = listed.strip().partition("_")[0]
            if found.strip() == comment and scheduler_id.isdigit():
                return scheduler_id
        return None

    # -- telemetry ----------------------------------------------------------------------------------------------
    def nodes(self) -> list[NodeInfo]:
        result = self._run(["scontrol", "show", "node", "--oneliner"])
        if not result.ok:
            raise BackendError(f"scontrol show node failed: {result.message()}")
        return parse_nodes(result.stdout)

    def gpu_allocations(self) -> list[GpuAllocation]:
        """Every running job's GPUs, in one call (the login node's view, whoever owns the jobs)."""
        result = self._run(["scontrol", "show", "job", "--details"])
        if not result.ok:
            if "No jobs in the system" in result.message():
                return []
            raise BackendError(f"scontrol show job failed: {result.message()}")
        return parse_gpu_allocations(result.stdout)

    def job_nodes(self, scheduler_id: str) -> list[str]:
        """The nodes a running job holds (scontrol's NodeList, expanded); empty when it holds none."""
        result = self._run(["scontrol", "show", "job", scheduler_id])
        if not result.ok:
            raise BackendError(f"scontrol show job failed: {result.message()}")
        match = re.search(r"^\s*NodeList=(\S+)", result.stdout, re.MULTILINE)
        return expand_hostlist(match.group(1)) if match and match.group(1) != "(null)" else []

    # -- limits -----------------------------------------------------------------------------------------------
    def partition_limits(self) -> dict[str, PartitionLimits]:
        result = self._run(["sinfo", "--all", "--noheader", f"--format={PARTITION_FORMAT}"])
        if not result.ok:
            raise BackendError(f"sinfo failed: {result.message()}")
        return parse_partitions(result.stdout)

    # -- poll -------------------------------------------------------------------------------------------------
    def poll(self, scheduler_ids: list[str]) -> dict[str, SchedulerStatus]:
        ids = [i for i in scheduler_ids if SCHEDULER_ID.match(i)]
        if not ids:
            return {}
        if cluster_settings(self.cluster).has_accounting:
            accounted = self._sacct(ids)
            if self._controller_answers(ids):
                return Polled(accounted)
            return Polled(accounted, from_controller=False, note=CONTROLLER_SILENT)
        # -r: one line per array task ("1240_3"), the array asked for once by its own id.
        result = self._run(
            ["squeue", "--states=all", "--noheader", "-r", f"--jobs={_asked(ids)}", "--format=%i|%T|%r|%S|%e"]
        )
        if not result.ok:
            if UNKNOWN_JOB.search(result.stderr):  # squeue fails outright when a lone id is unknown
                return {}
            raise BackendError(f"squeue failed: {result.message()}")
        statuses: dict[str, SchedulerStatus] = {}
        for line in result.stdout.splitlines():
            fields = line.split("|")
            if len(fields) != 5 or fields[0] not in ids:
                continue
            raw = fields[1].strip()
            reason = reason_text(fields[2])
            statuses[fields[0]] = SchedulerStatus(
                scheduler_id=fields[0],
                state=STATE_MAP.get(raw, JobState.RUNNING),
                raw_state=raw,
                reason=reason,
                never_starts=never_starts(reason) if raw == "PENDING" else "",
                started_at=_parse_time(fields[3]),
                finished_at=_parse_time(fields[4]),
            )
        # squeue has no exit code: ask scontrol once per job, only as it finishes.
        for scheduler_id, status in list(statuses.items()):
            if status.raw_state in TERMINAL_RAW:
                statuses[scheduler_id] = self._with_exit_code(status)
        return statuses

    def _controller_answers(self, ids: list[str]) -> bool:
        """Whether slurmctld answers now. sacct is slurmdbd's answer, which comes while the controller is down and
        then holds what the controller last reported (a job that ended meanwhile still "RUNNING"); one squeue of the
        same jobs asks the controller itself (a job it no longer holds is an answer too)."""
        try:
            result = self._run(["squeue", "--noheader", "--format=%i", f"--jobs={_asked(ids)}"])
        except BackendError:  # the controller is down (SchedulerUnavailable), or the login went away meanwhile
            return False
        return result.ok or bool(UNKNOWN_JOB.search(result.stderr))

    def queue(self) -> QueueView:
        """The whole queue in two calls, whatever the number of jobs: `squeue --start` and `sprio`."""
        listed = self._run(slurm_queue.SQUEUE_START)
        if not listed.ok:
            raise BackendError(f"squeue --start failed: {listed.message()}")
        factors = self._run(slurm_queue.SPRIO)
        if not factors.ok and slurm_queue.NO_MULTIFACTOR not in factors.message():
            raise BackendError(f"sprio failed: {factors.message()}")
        return slurm_queue.queue_view(listed.stdout, factors.stdout if factors.ok else None)

    def _with_exit_code(self, status: SchedulerStatus) -> SchedulerStatus:
        result = self._run(["scontrol", "show", "job", "--oneliner", status.scheduler_id])
        match = re.search(r"\bExitCode=(\d+:\d+)", result.stdout) if result.ok else None
        return replace(status, exit_code=_parse_exit_code(match.group(1))) if match else status

    def _settled_exit_code(self, status: SchedulerStatus) -> SchedulerStatus:
        try:
            result = self._run(["scontrol", "show", "job", "--oneliner", status.scheduler_id])
        except BackendError:  # slurmctld is down: accounting still answered the poll, and the code stays unknown
            return replace(status, exit_code=None)
        said = result.stdout if result.ok else ""
        if re.search(r"\bJobState=COMPLETING\b", said):
            # The controller still waits for the batch step to end and says 0:0 until it does: the job is held as
            # running (as squeue shows it) and its exit code read at the next poll, never a wrong 0.
            return replace(status, state=JobState.RUNNING, raw_state="COMPLETING", exit_code=None, finished_at=None)
        match = re.search(r"\bExitCode=(\d+:\d+)", said)
        return replace(status, exit_code=_parse_exit_code(match.group(1)) if match else None)

    def _sacct(self, ids: list[str]) -> dict[str, SchedulerStatus]:
        # Steps too (no -X): a cancelled or timed-out job's own line says 0:0, its batch step the signal that stopped
        # it, which is what scontrol (the path without accounting) reports as the job's ExitCode. slurmdbd may store
        # the step's end a moment after the job's, with 0:0 still: such a job, if it ran, asks scontrol while
        # slurmctld still holds it, and has no exit code (not a wrong 0) where scontrol cannot tell.
        result = self._run(
            ["sacct", "-n", "-P", f"--jobs={_asked(ids)}", "--format=JobIDRaw,State,ExitCode,Start,End,Reason,JobID"]
        )
        if not result.ok:
            raise BackendError(f"sacct failed: {result.message()}")
        rows = [row for line in result.stdout.splitlines() for row in _keyed_by_task(line.split("|"))]
        batch_codes = {f[0].removesuffix(".batch"): f[2] for f in rows if len(f) == 6 and f[0].endswith(".batch")}
        statuses = {}
        for fields in rows:
            if len(fields) != 6 or fields[0] not in ids:
                continue
            raw = fields[1].split()[0] if fields[1].strip() else "UNKNOWN"  # "CANCELLED by 1001"
            reason = reason_text(fields[5])
            code = fields[2]
            if code == "0:0" and raw != "COMPLETED":
                code = batch_codes.get(fields[0], code)
            started_at, finished_at = _parse_time(fields[3]), _parse_time(fields[4])
            ran = started_at is not None and started_at != finished_at  # cancelled while pending: Start is End
            unsettled = ran and code == "0:0" and raw in TERMINAL_RAW and raw != "COMPLETED"
            status = SchedulerStatus(
                scheduler_id=fields[0],
                state=STATE_MAP.get(raw, JobState.RUNNING),
                raw_state=raw,
                reason=reason,
                never_starts=never_starts(reason) if raw == "PENDING" else "",
                exit_code=_parse_exit_code(code) if raw in TERMINAL_RAW else None,
                started_at=started_at,
                finished_at=finished_at,
            )
            statuses[fields[0]] = self._settled_exit_code(status) if unsettled else status
        return statuses

    def usage(self, scheduler_ids: list[str]) -> dict[str, AccountedUsage]:
        ids = [i for i in scheduler_ids if SCHEDULER_ID.match(i) and not arrays.TASK_ID.match(i)]  # tasks: not yet
        if not ids or not cluster_settings(self.cluster).has_accounting:
            return {}
        result = self._run(["sacct", "-n", "-P", "--noconvert", f"--jobs={','.join(ids)}", f"--format={SACCT_FIELDS}"])
        if not result.ok:
            raise BackendError(f"sacct failed: {result.message()}")
        return parse_sacct(result.stdout, ids)

    # -- cancel and logs --------------------------------------------------------------------------------------
    def cancel(self, scheduler_id: str) -> None:  # the next poll reports how it ended
        if not SCHEDULER_ID.match(scheduler_id):
            raise BackendError(f"{scheduler_id!r} is not a SLURM job id.")
        result = self._run(["scancel", scheduler_id])
        if not result.ok and not UNKNOWN_JOB.search(result.stderr):
            raise BackendError(f"scancel failed: {result.message()}")

    def read_log(
        self, job_id: uuid.UUID, offset: int, limit: int, *, scheduler_id: str = "", stream: str = ""
    ) -> LogChunk:
        return self.read_job_file(job_id, LOG_NAME, offset, limit)

    def read_job_file(self, job_id: uuid.UUID, name: str, offset: int, limit: int) -> LogChunk:
        """Part of a file the job wrote in its directory (a fixed name of the portal's), as the job's identity."""
        if self.student:
            path = self.student.path(self.cluster.lab_dir, "jobs", str(job_id), name)
            return self.student.read(path, offset, limit)
        path = posixpath.join(self.job_dir(job_id), name)
        with ssh.sftp(self.cluster, self.account) as sftp:
            return ssh.read_log_chunk(sftp, path, offset, limit)

    # -- lab sessions: reservations made by the service account, a SLURM operator ------------------------------
    def create_reservation(self, request: reservations.ReservationRequest) -> reservations.HeldReservation:
        version = self._run(["scontrol", "--version"])
        nodes = None
        if not reservations.release(version.stdout).reserves_gpus_as_tres:
            nodes = reservations.nodes_for(self.nodes(), request.gpus)  # 22.05: the whole nodes holding the GPUs
        result = self._run(reservations.create_argv(request, now=timezone.now(), nodes=nodes))
        if not result.ok:
            raise reservations.ReservationRefused(reservations.refusal(result.message()))
        held = self.find_reservation(request.name)
        if held is None:
            raise BackendError(f"SLURM made the reservation {request.name} but does not list it: {result.message()}")
        return held

    def find_reservation(self, name: str) -> reservations.HeldReservation | None:
        result = self._run(reservations.show_argv(name))
        if not result.ok:
            if "not found" in result.message():
                return None
            raise BackendError(f"scontrol show reservation failed: {result.message()}")
        gpus = {node.name: node.gpus for node in self.nodes()}
        return reservations.parse_show(result.stdout, lambda hosts: sum(gpus.get(h, 0) for h in expand_hostlist(hosts)))

    def delete_reservation(self, name: str) -> None:
        """Jobs still waiting in it leave it first; then it is deleted (or ended now, while jobs run in it); jobs
        SLURM held when it dropped the reservation itself, at its end, are released. The students' jobs wait on."""
        waiting = self._run(reservations.pending_argv(name))
        self._free_jobs(name, reservations.leave_argv, waiting.stdout.split() if waiting.ok else [])
        result = self._run(reservations.delete_argv(name))
        if not result.ok and "in use" in result.message():
            result = self._run(reservations.end_now_argv(name))
        if not result.ok and "invalid" not in result.message().lower():  # "Requested reservation is invalid": gone
            raise BackendError(f"SLURM did not remove the reservation {name}: {result.message()}")
        held = self._run(reservations.HELD_ARGV)
        self._free_jobs(name, reservations.release_argv, reservations.held_for(held.stdout, name) if held.ok else [])

    def move_into_reservation(self, name: str, scheduler_ids: list[str]) -> list[str]:
        ids = [i for i in scheduler_ids if SCHEDULER_ID.match(i)]
        if not ids:
            return []
        moved = self._run(reservations.join_argv(ids, name))
        if not moved.ok:  # some had started or ended: the rest moved all the same
            logger.info("jobs %s into reservation %s: %s", ids, name, moved.message())
        waiting = self._run(reservations.pending_argv(name))
        if not waiting.ok:
            raise BackendError(f"squeue did not list the jobs of reservation {name}: {waiting.message()}")
        return sorted(set(ids) & set(waiting.stdout.split()))

    def _free_jobs(self, name: str, argv_for, job_ids: list[str]) -> None:
        ids = [i for i in job_ids if SCHEDULER_ID.match(i)]
        result = self._run(argv_for(ids)) if ids else None
        if result is not None and not result.ok:  # they stay as they are; the sweep tries the reservation again
            logger.warning("jobs %s of reservation %s: %s", ids, name, result.message())

    # -- admin actions ----------------------------------------------------------------------------------------
    def test_connection(self) -> ConnectionReport:
        version = self._run(["sinfo", "--version"])
        if not version.ok:
            return ConnectionReport(ok=False, lines=[f"sinfo failed: {version.message()}"])
        partitions = self._run(["sinfo", "--all", "--noheader", f"--format={PARTITION_FORMAT}"])
        limits = parse_partitions(partitions.stdout) if partitions.ok else {}
        accounting = self._run(["sacct", "--noheader", "-X", "--jobs=1", "--format=JobID"])
        has_accounting = accounting.ok and "disabled" not in accounting.stderr.lower()
        lines = [f"Logged in as {self.login.username}; {version.stdout.strip()}."]
        lines += [p.describe() for p in limits.values()] or [f"sinfo failed: {partitions.message()}"]
        lines.append("SLURM accounting: " + accounting_in_words(has_accounting))
        if self.cluster.lab_reservations:
            lines.append(self._operator_line(has_accounting))
        facts: dict[str, object] = {"has_accounting": has_accounting}
        if partitions.ok:
            facts["partition_limits"] = {name: p.as_dict() for name, p in limits.items()}
        rule_ok = True
        if self.cluster.run_as == "sudo" or self.cluster.uses_shared_user:  # students' users reached through sudo
            verdict = sudo_rule.judge(sudo_rule.parse(self._as_login(["sudo", "-n", "-l"]).stdout))
            lines += verdict.lines(self.login.username)
            rule_ok = verdict.ok
        runners = runner_check.runners_of(self.cluster, self.login.username, has_accounting=has_accounting)
        who = runner_check.check(runners, self._as_login)
        lines += who.lines
        return ConnectionReport(ok=rule_ok and who.ok, lines=lines, facts=facts)

    def _as_login(self, argv: list[str]) -> ssh.CommandResult:
        """A command as the service account itself (never through sudo as a student)."""
        return ssh.run(self.cluster, self.login, argv)

    def _operator_line(self, has_accounting: bool) -> str:
        """Lab sessions need the service account to be a SLURM operator (it makes their reservations)."""
        name = self.account.username
        argv = ["sacctmgr", "-n", "-P", "show", "user", name, "format=adminlevel"]
        level = self._run(argv).stdout.strip() if has_accounting else ""
        if level in {"Operator", "Administrator"}:
            return f"Lab sessions: {name} is a SLURM {level.lower()} and can make reservations."
        return (
            f"Lab sessions: {name} is not a SLURM operator, so lab sessions will be refused. Run "
            f"“sacctmgr modify user {name} set adminlevel=operator” (it needs SLURM accounting)."
        )

    def stage_lab_files(self, source: Path) -> int:
        with ssh.sftp(self.cluster, self.login) as sftp:
            return ssh.put_lab_files(sftp, source, self.lab_path)
