"""Batch-script templates, as both SLURM kinds (over SSH and through slurmrestd) run them.

The template body is a bash script after the portal's own #SBATCH header; placeholders become shell-quoted words
(script/rendering.py, checked by core/templating/shell_safety.py). A preview is published only if every
placeholder passes those checks and the script passes `bash -n`.
"""

from __future__ import annotations

import re
import shlex
import uuid
from typing import Any

import paramiko

from clusters.choices import RunAs
from clusters.identity import IdentityMissing, account_for
from clusters.lab_space import files_subdir
from core.templating.params import SchemaError, parse_schema, requested_gpus
from core.templating.placeholders import PLACEHOLDER
from core.templating.resources import RESOURCES
from core.templating.shell_safety import unix_lines

from .. import as_student, ssh, terminal
from ..base import BackendError
from ..kind import ActionRefused, Kind, NotebookAddress, Preview, Rendered, RenderRefused, RenderRequest
from . import accounting, arrays, lab_files, notebook, srun
from .script.rendering import (
    RenderContext,
    RenderError,
    bash_syntax_error,
    portal_exports,
    render_script,
    script_problems,
    value_exports,
    value_text,
)
from .settings import SlurmClusterSettings, accounting_in_words, cluster_settings

PREVIEW_JOB_ID = uuid.UUID(int=0)


def _files_subdir(cluster, user) -> str:
    """Where the launching user's own files are under the lab directory, as the identity the job runs as."""
    try:
        account = account_for(cluster, user)
    except IdentityMissing:
        return ""  # the launch itself is refused for the same reason
    return files_subdir(cluster, account, user) if account is not None else ""


SLURM_JOB_NUMBER = re.compile(r"^\d+$")


def _task_job_number(cluster, account, task_id: str) -> str:
    """A running array task's own job number, from `scontrol show job <array>_<task>` over the login node."""
    student = as_student.for_account(cluster, account)  # the service login reads the queue for a student's user
    login = student.login if student else account
    shown = ssh.run(cluster, login, ["scontrol", "show", "job", "--oneliner", task_id])
    number = arrays.raw_job_id(shown.stdout) if shown.ok else None
    if number is None:
        raise ActionRefused("This run is not running on the cluster now; open the terminal while it runs.")
    return number


class BatchKind(Kind):
    templates = "slurm"
    cluster_settings = SlurmClusterSettings
    telemetry_source = "nodes-over-ssh"  # both SLURM kinds: the backend interface and SSH to the nodes
    files_over_sftp = True
    stages_lab_files = True
    student_logins = True
    shared_user_mode = True
    opens_terminals = True
    terminal_note = (
        "A login shell in the job's allocation (srun --overlap --pty bash -l), in its run directory with its GPULAB_* "
        "variables."
    )
    notebook_note = "Notebooks are saved in the job's run directory and stay there after the session."

    def open_terminal(self, job, *, cols: int, rows: int, target: str = "") -> terminal.Terminal:
        """`srun --overlap --pty bash -l` in the job's allocation over the login node, as the job's identity."""
        scheduler_id = job.scheduler_id or ""
        if not (SLURM_JOB_NUMBER.match(scheduler_id) or arrays.TASK_ID.match(scheduler_id)):
            raise ActionRefused("This job has no SLURM job number yet; open the terminal once it runs.")
        if not job.cluster.host:
            raise ActionRefused(
                f"“{job.cluster.display_name}” has no SSH login node in the portal, so no terminal can be opened in "
                "its jobs. An admin can add the login node on the cluster's page."
            )
        account = job.account or job.cluster.service_account()
        # In the run directory, with the job's GPULAB_* variables: the shell the job's own commands had.
        run_dir = f'"$GPULAB_LAB_DIR"/jobs/{job.pk}'
        exports = portal_exports(job.script or "")
        if arrays.TASK_ID.match(scheduler_id):  # a sweep's run: its id and values, which its task read from a file
            exports = [line for line in exports if "=" in line] + [f"export GPULAB_JOB_ID={shlex.quote(str(job.pk))}"]
            exports += value_exports(job.template.schema(), job.params)
        first = srun.job_shell_line(exports, run_dir)
        if arrays.TASK_ID.match(scheduler_id):  # srun takes a task's own job number, never "<array>_<task>"
            scheduler_id = _task_job_number(job.cluster, account, scheduler_id)
        return srun.in_job(job.cluster, account, scheduler_id, cols=cols, rows=rows, first_line=first)

    def connection_verdict(self, cluster, ok: bool) -> str:
        if not ok and cluster.run_as == RunAs.SUDO:
            return "Login works; the sudo rule must change"
        return super().connection_verdict(cluster, ok)

    def unreadable_files(self, cluster, account, user, paths: dict[str, str]) -> dict[str, str]:
        """Each path opened for reading over SFTP as the job's identity (its own login, or the student's user through
        the sudo rule's sftp-server): the `test -r` the job's first read would be, minutes earlier. A cluster that
        cannot be reached now is not a reason to refuse: the submission says so."""
        if not paths or not cluster.host:
            return {}
        try:
            return lab_files.unreadable(cluster, account, files_subdir(cluster, account, user), paths)
        except (BackendError, OSError, paramiko.SSHException):
            return {}

    def notebook_address(self, job) -> NotebookAddress:
        """The job's node at the address SLURM records for it, on the port the job reports from the portal's range."""
        if not SLURM_JOB_NUMBER.match(job.scheduler_id or ""):
            raise ActionRefused("This job has no SLURM job number yet; open JupyterLab once it runs.")
        return notebook.address(self.backend(job.cluster, job.account), job)

    def render(self, request: RenderRequest) -> Rendered:
        template, cluster = request.template, request.cluster
        ctx = RenderContext.on(
            cluster, request.job_id, f"gpulab-{template.slug}", files_subdir=_files_subdir(cluster, request.user)
        )
        schema = template.schema()
        try:
            script = render_script(template.body, schema, request.values, ctx, **self._array_parts(request, schema))
        except RenderError as exc:
            raise RenderRefused(f"The template cannot be rendered ({exc}); tell your instructor.") from None
        return Rendered(script=script, gpus=requested_gpus(request.values))

    usage_arrives_within = accounting.USAGE_RETRY_SECONDS  # slurmdbd stores an end after slurmctld reports it

    def keeps_usage(self, cluster) -> bool:
        return bool(cluster_settings(cluster).has_accounting)

    def no_usage_reason(self, cluster) -> str:
        return f"SLURM accounting {accounting_in_words(cluster_settings(cluster).has_accounting)}."

    def array_spec(self, indexes: list[int], at_once: int) -> str:
        return arrays.spec_for(indexes, at_once)

    def array_values(self, schema, runs, swept: tuple[str, ...]) -> str:
        """Each value as the script spells it (script/rendering.value_text), read by the task as data."""
        params = {p.name: p for p in schema}
        return arrays.values_file([(run_id, [value_text(params[n], run[n]) for n in swept]) for run_id, run in runs])

    def sweep_as_array(self, swept: tuple[str, ...]) -> bool:
        """Not when a resource is swept: an array's tasks all hold what its one #SBATCH header asks for."""
        return self.sweeps_as_arrays and not any(name in RESOURCES for name in swept)

    def _array_parts(self, request: RenderRequest, schema) -> dict:
        """For a sweep's array: its swept parameters and the lines with which each task reads its values."""
        if not request.swept:
            return {}
        if not self.sweeps_as_arrays:
            raise RenderRefused(f"Sweeps cannot run on {request.cluster.display_name} yet; launch the runs one by one.")
        bools = [p.name for p in schema if p.name in request.swept and p.type == "bool"]
        return {"swept": request.swept, "task_block": arrays.task_block(request.swept, bools)}

    def preview(self, body: str, parameters: Any, cluster: Any = None) -> Preview:
        result = Preview()
        try:
            schema = parse_schema(parameters)
        except SchemaError as exc:
            result.errors.append(str(exc))
            return result
        values = {p.name: p.default for p in schema}
        refused = script_problems(body, schema)
        if refused:
            syntax = bash_syntax_error(PLACEHOLDER.sub("x", unix_lines(body)))  # a syntax error explains them best
            result.errors.extend([f"bash -n: {syntax}"] if syntax else refused)
            return result
        ctx = RenderContext.on(cluster, PREVIEW_JOB_ID, "gpulab-preview")
        try:
            result.script = render_script(body, schema, values, ctx)
        except RenderError as exc:
            result.errors.append(str(exc))
            return result
        syntax = bash_syntax_error(result.script)
        if syntax:
            result.errors.append(f"bash -n: {syntax}")
        return result
