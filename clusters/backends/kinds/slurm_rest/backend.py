"""SLURM through slurmrestd: submit with the script inline, one GET …/jobs per poll cycle, DELETE to cancel.

Identity: the token is stored on a ClusterAccount like any credential. Requests that act for a job (submit, cancel)
name the job's account in X-SLURM-USER-NAME: the student's own cluster user when they registered one (a token of
the SlurmUser may act as anyone), else the service account. Reads (poll, the search for an earlier submission) go as
the token's own user, who sees every job. A student's own account is used only after its SSH login succeeded, so
nobody can claim a cluster user they cannot log in as.

Files: the job directory and its output live where the SSH kind keeps them, and are read over SSH where the job's
account has an SSH login; without one the job runs in the account's home and the job page says logs are unavailable.
"""

from __future__ import annotations

import logging
import posixpath
import threading
import time
import uuid
from pathlib import Path

from clusters.choices import RunAs

from ... import as_student, ssh, tokens
from ...base import (
    AccountedUsage,
    BackendError,
    ClusterBackend,
    ConnectionReport,
    LogChunk,
    NodeInfo,
    QueueView,
    SchedulerStatus,
    SubmitRequest,
)
from ...slurm_family import arrays, notebook, runner_check
from ...slurm_family.hostlist import expand_hostlist
from ...slurm_family.settings import accounting_in_words, cluster_settings
from . import directives, parsing, versions
from .client import IMPERSONATION_REFUSED, INVALID_JOB_ID, RestClient, error_messages
from .errors import ImpersonationRefused, LogsUnavailable, RestRejected, TokenRejected, UnsupportedApi

logger = logging.getLogger(__name__)

LOG_NAME = "output.log"
VERSION_TTL = 600.0  # seconds a discovered API version is trusted before the OpenAPI document is read again
UPDATE_MARGIN = 5  # seconds subtracted from update_time: a controller clock slightly behind ours misses nothing

_lock = threading.Lock()
_versions: dict[str, tuple[float, versions.ApiVersion]] = {}  # base URL → (when read, version)
# (cluster, base URL, reader) → (epoch of the last full answer, its statuses, its queue): a 304 reuses them.
_job_lists: dict[tuple, tuple[int, dict[str, SchedulerStatus], QueueView]] = {}


class SlurmRestBackend(ClusterBackend):
    kind = "slurm-rest"
    run_as_modes = ("service", "rest-user", "own-account")
    admin_fieldsets = (
        ("SLURM REST: slurmrestd", {"fields": ["api_url", "server_version"]}),
        (
            "SLURM: login node",
            {
                "fields": ["host", "port", "host_key", "host_key_pinned_at"],
                "description": "Optional: where job output is read over SSH. Without it, job pages say logs are "
                "unavailable and students cannot run jobs as their own cluster user.",
            },
        ),
        ("SLURM: scheduler", {"fields": ["partitions", "gpu_types"]}),
        ("SLURM: job environment", {"fields": ["lab_dir", "preamble", "shared_user"]}),
    )

    def __init__(self, cluster, account):
        super().__init__(cluster, account)
        # run_as "rest-user": the student's cluster username, named in X-SLURM-USER-NAME with the service account's
        # token; their run directory is made and their output read as them through the sudo rule over SSH.
        self.student = as_student.for_account(cluster, account)
        self._queue: QueueView | None = None  # what this cycle's poll read of the queue

    # -- identity -------------------------------------------------------------------------------------------------
    def _token(self) -> str:
        holder = self.account if self.account.has_api_token else self.cluster.service_account()
        token = holder.api_token() if holder is not None else ""
        if not token:
            raise TokenRejected(
                f"The cluster “{self.cluster.display_name}” has no slurmrestd token. An admin must store one on its "
                "service account."
            )
        return token

    def _client(self, user: str) -> RestClient:
        return RestClient(self.cluster.api_url, self._token(), user, cluster_name=self.cluster.display_name)

    def _reader(self) -> RestClient:
        token = self._token()
        user = tokens.user_of(token) or self.account.username
        return RestClient(self.cluster.api_url, token, user, cluster_name=self.cluster.display_name)

    def _actor(self) -> RestClient:
        return self._client(self.account.username)

    @property
    def has_ssh(self) -> bool:
        login = self.student.login if self.student else self.account
        return bool(self.cluster.host and self.cluster.host_key and login.has_secret)

    def _prove_own_account(self) -> None:
        """A student's own cluster user is named only after their SSH login as that user worked."""
        if self.account.user_id is None or self.student:
            return  # the service account, or a cluster username an admin or the directory set (never the student)
        if self.account.has_api_token and tokens.user_of(self.account.api_token()) == self.account.username:
            return  # their own token: slurmctld checks it
        if not self.has_ssh:
            raise ImpersonationRefused(
                f"Jobs on “{self.cluster.display_name}” run as your own cluster user {self.account.username} only "
                "when the portal can log in as it over SSH; this cluster has no SSH login. Remove your account on "
                "your profile page to run as the course's account."
            )
        ssh.pool.client(self.cluster, self.account)  # raises AuthenticationFailed with words for the student

    # -- the API version --------------------------------------------------------------------------------------------
    def version(self) -> versions.ApiVersion:
        base = self.cluster.api_url.rstrip("/")
        with _lock:
            known = _versions.get(base)
        if known and time.monotonic() - known[0] < VERSION_TTL:
            return known[1]
        status, document = self._reader().request("GET", "/openapi/v3")
        chosen = versions.choose(document) if status == 200 else None
        if chosen is None:
            offered = ", ".join(versions.offered(document)) or f"no API document (HTTP {status})"
            speaks = ", ".join(v.name for v in versions.VERSIONS)
            raise UnsupportedApi(
                f"slurmrestd of “{self.cluster.display_name}” offers {offered}; the portal speaks {speaks}. Load one "
                "of those with slurmrestd -s openapi/<version>."
            )
        with _lock:
            _versions[base] = (time.monotonic(), chosen)
        return chosen

    # -- submit -----------------------------------------------------------------------------------------------------
    def submit(self, request: SubmitRequest) -> str:
        self._prove_own_account()
        version = self.version()
        work_dir, output, home = self._job_files(request.job_id)
        if request.array:  # a sweep: its tasks' values beside the script, each task's output by its index
            output = posixpath.join(work_dir, self._write_task_values(work_dir, request.task_values))
        job = {
            **directives.job_properties(request.script),
            "comment": f"{parsing.COMMENT_PREFIX}{request.job_id}",
            "current_working_directory": work_dir,
            version.stdout_property: output,
            # sbatch would pass the login environment; slurmrestd passes only what it is given.
            "environment": {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": home, "USER": self.account.username},
        }
        if request.array:
            job["array"] = arrays.checked_spec(request.array)
        if request.session_token:  # the job's environment: never in its script or its run directory
            job["environment"].update(notebook.session_environment(self.cluster, request.session_token))
        body = {"script": request.script, "job": job}
        status, answer = self._actor().request("POST", version.path("job/submit"), body=body)
        errors = error_messages(answer)
        scheduler_id = answer.get("job_id")
        if isinstance(scheduler_id, int):  # accepted, perhaps with a warning (2015: it may never start)
            for number, words in errors:
                logger.info("slurmrestd accepted job %s with a warning: %s (%s)", scheduler_id, words, number)
            return str(scheduler_id)
        if any(number == IMPERSONATION_REFUSED for number, _ in errors):
            raise ImpersonationRefused(
                f"SLURM on “{self.cluster.display_name}” would not take a job for {self.account.username} from the "
                "portal's token (error 5005: only a token of the SlurmUser may act for other users). An admin must "
                "store a token of the SlurmUser on the cluster's service account."
            )
        words = "; ".join(text for _, text in errors) or f"HTTP {status} without a job id"
        raise RestRejected(f"slurmrestd refused the job: {words}")

    def _write_task_values(self, work_dir: str, text: str) -> str:
        """A sweep's values file in its directory, over SSH as the job's identity; the tasks' output pattern."""
        if not self.has_ssh:
            raise RestRejected(
                f"Sweeps on “{self.cluster.display_name}” need its login node in the portal: each run's values and log "
                "are files in its run directory. An admin can add the login node on the cluster's page."
            )
        try:
            if self.student:
                with self.student.sftp() as sftp:
                    arrays.write_values(sftp, work_dir, text)
            else:
                with ssh.sftp(self.cluster, self.account) as sftp:
                    arrays.write_values(sftp, work_dir, text)
        except OSError as exc:
            raise BackendError(f"Could not write the sweep's values on the cluster: {exc}") from None
        return arrays.TASK_LOG

    def _job_files(self, job_id: uuid.UUID) -> tuple[str, str, str]:
        """(working directory, output file, home): the job directory made over SSH, else the account's home."""
        if not self.has_ssh:
            home = f"/home/{self.account.username}"
            return home, posixpath.join(home, f"gpulab-{job_id}.log"), home
        if self.student:
            home = self.student.home()
            job_dir = self._lab_path(home, "jobs", str(job_id))
            self.student.make_private_dir(job_dir, below=self._lab_path(home))
            return job_dir, posixpath.join(job_dir, LOG_NAME), home
        with ssh.sftp(self.cluster, self.account) as sftp:
            home = sftp.normalize(".")
            job_dir = self._lab_path(home, "jobs", str(job_id))
            ssh.makedirs(sftp, job_dir)
            sftp.chmod(job_dir, 0o700)  # private to the account the job runs as
        return job_dir, posixpath.join(job_dir, LOG_NAME), home

    def _lab_path(self, home: str, *parts: str) -> str:
        base = self.cluster.lab_dir.strip() or "~/gpulab"
        if base == "~" or base.startswith("~/"):
            base = posixpath.join(home, base[2:])
        return posixpath.join(base, *parts)

    def find_submitted(self, request: SubmitRequest) -> str | None:
        answer = self._reader().call("GET", self.version().path("jobs"))
        return parsing.find_by_comment(answer, request.job_id, self.account.username)

    # -- poll: one GET …/jobs for every active job ----------------------------------------------------------------
    def poll(self, scheduler_ids: list[str]) -> dict[str, SchedulerStatus]:
        wanted = {i for i in scheduler_ids if i.isdigit() or arrays.TASK_ID.match(i)}
        if not wanted:
            return {}
        version, reader = self.version(), self._reader()
        key = (self.cluster.pk, self.cluster.api_url, reader.user)
        with _lock:
            cached = _job_lists.get(key)
        params = {"update_time": cached[0] - UPDATE_MARGIN} if cached and version.update_time else None
        asked_at = int(time.time())
        status, answer = reader.request("GET", version.path("jobs"), params=params)
        if status == 304 and cached:  # no job changed since the last full answer
            found, self._queue = cached[1], cached[2]
        else:
            errors = [text for _, text in error_messages(answer)]
            if errors or status >= 400:
                raise BackendError(f"slurmrestd could not list jobs: {'; '.join(errors) or f'HTTP {status}'}")
            found, self._queue = parsing.statuses(answer), parsing.queue_view(answer, version)
            with _lock:
                _job_lists[key] = (asked_at, found, self._queue)
        return {sid: found[sid] for sid in wanted if sid in found}

    def queue(self) -> QueueView:
        """The queue from the job list this cycle's poll read (pending jobs carry slurmctld's start estimate and
        their priority); one GET of its own only when this backend has not polled."""
        if self._queue is None:
            version = self.version()
            answer = self._reader().call("GET", version.path("jobs"))
            self._queue = parsing.queue_view(answer, version)
        return self._queue

    # -- accounting: one GET /slurmdb/…/jobs?step=<ids> for the jobs that ended in a cycle ----------------------------
    def usage(self, scheduler_ids: list[str]) -> dict[str, AccountedUsage]:
        ids = [i for i in scheduler_ids if i.isdigit()]
        if not ids or not cluster_settings(self.cluster).has_accounting:
            return {}
        path = f"/slurmdb/{self.version().name}/jobs"
        return parsing.usage(self._reader().call("GET", path, params={"step": ",".join(ids)}), ids)

    # -- cancel and logs --------------------------------------------------------------------------------------------
    def cancel(self, scheduler_id: str) -> None:  # the next poll reports how it ended
        if not (scheduler_id.isdigit() or arrays.TASK_ID.match(scheduler_id)):
            raise BackendError(f"{scheduler_id!r} is not a SLURM job id.")
        try:
            self._actor().call("DELETE", self.version().path(f"job/{scheduler_id}"))
        except RestRejected as exc:
            if INVALID_JOB_ID in getattr(exc, "numbers", []) or "already completed" in str(exc).lower():
                return
            raise RestRejected(f"slurmrestd could not cancel job {scheduler_id}: {exc}") from None

    def read_log(
        self, job_id: uuid.UUID, offset: int, limit: int, *, scheduler_id: str = "", stream: str = ""
    ) -> LogChunk:
        return self.read_job_file(job_id, LOG_NAME, offset, limit)

    def read_job_file(self, job_id: uuid.UUID, name: str, offset: int, limit: int) -> LogChunk:
        """Part of a file the job wrote in its directory (its output, JupyterLab's address), over SSH as the job's
        account; without an SSH login the job ran in the account's home, which the portal cannot read."""
        if not self.has_ssh:
            raise LogsUnavailable(
                f"The output of jobs on “{self.cluster.display_name}” (and where a JupyterLab session listens) is read "
                f"over SSH, and the account this job runs as ({self.account.username}) has no SSH login in the "
                f"portal. The output is in gpulab-{job_id}.log in that account's home directory on the cluster; an "
                "admin can add the login node on the cluster's page."
            )
        if self.student:
            return self.student.read(self.student.path(self.cluster.lab_dir, "jobs", str(job_id), name), offset, limit)
        with ssh.sftp(self.cluster, self.account) as sftp:
            path = self._lab_path(sftp.normalize("."), "jobs", str(job_id), name)
            return ssh.read_log_chunk(sftp, path, offset, limit)

    def job_nodes(self, scheduler_id: str) -> list[str]:
        """The nodes a running job holds, from slurmrestd's record of the job (one GET …/job/<id>)."""
        if not scheduler_id.isdigit():
            raise BackendError(f"{scheduler_id!r} is not a SLURM job id.")
        try:
            answer = self._reader().call("GET", self.version().path(f"job/{scheduler_id}"))
        except RestRejected as exc:
            if INVALID_JOB_ID in getattr(exc, "numbers", []):
                return []
            raise
        jobs = [j for j in answer.get("jobs") or [] if isinstance(j, dict)]
        nodes = str(jobs[0].get("nodes") or "") if jobs else ""
        return expand_hostlist(nodes) if nodes and nodes not in {"(null)", "None assigned"} else []

    # -- admin actions ----------------------------------------------------------------------------------------------
    def test_connection(self) -> ConnectionReport:
        version = self.version()
        reader = self._reader()
        ping = reader.call("GET", version.path("ping"))
        release = ((ping.get("meta") or {}).get("Slurm") or {}).get("release", "")
        partitions = reader.call("GET", version.path("partitions")).get("partitions") or []
        lines = [f"slurmrestd answers as {reader.user}: SLURM {release or '(version not given)'}, API {version.name}."]
        lines += [f"partition {p.get('name')} {p.get('state', '')}".strip() for p in partitions if isinstance(p, dict)]
        lapses = tokens.expires_at(self._token())
        lines.append(f"Token valid until {lapses:%Y-%m-%d %H:%M} UTC." if lapses else "The token never expires.")
        if self.has_ssh:
            ssh.run(self.cluster, self.account, ["true"])
            lines.append(f"SSH login as {self.account.username} works: logs are shown.")
        else:
            lines.append("No SSH login for the service account: job pages will say logs are unavailable.")
        facts: dict[str, object] = {"server_version": f"{release} ({version.name})"[:64]}
        # slurmrestd offers the slurmdbd API only where the cluster runs accounting (and the dbv plugin is loaded).
        status, _ = reader.request("GET", f"/slurmdb/{version.name}/diag")
        has_accounting = status == 200
        lines.append("SLURM accounting: " + accounting_in_words(has_accounting))
        acts, said = self._acting_for_others(reader, version)
        lines.append(said)
        runners = runner_check.runners_of(
            self.cluster,
            self.account.username,
            token_user=reader.user,
            has_accounting=has_accounting,
            over_ssh=self.has_ssh,
        )
        who = runner_check.check(runners, self._as_login)
        lines += who.lines
        facts["has_accounting"] = has_accounting
        return ConnectionReport(ok=acts and who.ok, lines=lines, facts=facts)

    def _as_login(self, argv: list[str]) -> ssh.CommandResult:
        """A command as the service account over SSH (the runner check asks only where it has an SSH login)."""
        return ssh.run(self.cluster, self.account, argv)

    def _acting_for_others(self, reader: RestClient, version: versions.ApiVersion) -> tuple[bool, str]:
        """Whether the token may name another user in X-SLURM-USER-NAME (only the SlurmUser's, or root's, may), as
        far as the cluster needs it, in words that say what to fix. Asked with a harmless ping naming the service
        account (or `nobody` when the token is the service account's own): slurmctld refuses it, with an entry in
        errors[], exactly when the token could not submit for that user either."""
        other = self.account.username if self.account.username != reader.user else "nobody"
        asking = RestClient(reader.base_url, reader.token, other, cluster_name=reader.cluster_name)
        try:
            refusal = "; ".join(text for _, text in error_messages(asking.request("GET", version.path("ping"))[1]))
        except TokenRejected as exc:
            refusal = str(exc)
        if not refusal:
            return True, f"The token of {reader.user} may act for other users (asked as {other}): impersonation works."
        said = f"The token of {reader.user} may not act for other users: asked as {other}, SLURM said “{refusal}”."
        slurm_user = "a token of SLURM's SlurmUser (SlurmUser in slurm.conf; `scontrol token username=<SlurmUser>`)"
        account = self.account.username
        if self.cluster.run_as == RunAs.REST_USER:
            return False, f"{said} Jobs here run as each student's cluster user: store {slurm_user} on {account}."
        if self.cluster.uses_shared_user:
            shared = self.cluster.shared_user or "the shared cluster user"
            return False, f"{said} Jobs here run as {shared}: store {slurm_user} on {account}."
        if account != reader.user:
            return False, f"{said} Every job here is submitted as {account}: store its own token or {slurm_user} on it."
        return True, f"{said} Fine while jobs run as {account}; for students' own cluster users, store {slurm_user}."

    def stage_lab_files(self, source: Path) -> int:
        if not self.has_ssh:
            raise LogsUnavailable(f"Staging copies files over SSH, and “{self.cluster.display_name}” has no SSH login.")
        with ssh.sftp(self.cluster, self.account) as sftp:
            home = sftp.normalize(".")
            return ssh.put_lab_files(sftp, source, lambda *parts: self._lab_path(home, *parts))

    # -- telemetry --------------------------------------------------------------------------------------------------
    def nodes(self) -> list[NodeInfo]:
        answer = self._reader().call("GET", self.version().path("nodes"))
        return [
            NodeInfo(
                name=node["name"],
                address=node.get("address") or node["name"],
                gpus=_gpu_count(node.get("gres", "")),
                state=str(node.get("state", "")).upper(),
            )
            for node in answer.get("nodes") or []
            if isinstance(node, dict) and node.get("name")
        ]


def _gpu_count(gres: str) -> int:
    total = 0
    for item in str(gres).split(","):
        name, _, rest = item.partition(":")
        count = rest.rpartition(":")[2].split("(")[0]
        if name == "gpu" and count.isdigit():
            total += int(count)
    return total
