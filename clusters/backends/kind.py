"""What a cluster kind is, as the rest of the portal sees it: one object per kind, found by `Cluster.kind`.

A kind bundles everything the portal must know about one sort of cluster: its scheduler backend, how a template
becomes what is submitted (and its preview), what is prepared before a submit, what a student can do with a
running server (scale, try it, load test), the time-limit policy, the telemetry source and the admin fields. `jobs`,
`courses` and `telemetry` hold a Kind and call it; they never ask which kind it is. Each kind's package under
clusters/backends/<kind>/ defines a subclass; clusters/kinds.py lists them.

Inputs and outputs are the dataclasses below. A kind refuses with its own errors, subclasses of KindRefusal;
`jobs` shows their message to the user as it is, so it must say what to do.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from clusters.choices import AuthMethod, RunAs
from clusters.kind_settings import KindSettings

if TYPE_CHECKING:
    from .base import ClusterBackend
    from .lab_holds import LabSessionHolds
    from .queue import QueueSummary
    from .terminal import Terminal


DASHBOARD_PATH = "/jobs/{job_id}/dashboard/"  # where the portal proxies a job's dashboard (Kind.dashboard_address)


def dashboard_path(job_id) -> str:
    return DASHBOARD_PATH.format(job_id=job_id)


class KindRefusal(Exception):
    """The kind will not do this (render a template, act on a server); the message says why and what to do."""


class RenderRefused(KindRefusal):
    """The template cannot become what this kind submits, or it asks for more than the template or course allow."""


class ActionRefused(KindRefusal):
    """A job-page action (scale, try it, load test) cannot be done on this job now."""


@dataclass(frozen=True)
class RenderRequest:
    """A launch to render: the job's id, its typed values, and the template, course, user and cluster rows."""

    job_id: uuid.UUID
    values: Mapping[str, Any]
    template: Any
    course: Any
    user: Any
    cluster: Any
    # A sweep's array: these parameters' values differ per task (values holds the first run's); job_id is the sweep's.
    swept: tuple[str, ...] = ()


@dataclass(frozen=True)
class Rendered:
    script: str  # exactly what will be submitted: a batch script, or objects as YAML documents
    gpus: int  # what the job holds against the course's GPU quota


@dataclass(frozen=True)
class Scaled:
    """A server at a new size, not yet sent: what the job's script becomes and the GPUs it could then hold."""

    script: str
    gpus: int


@dataclass(frozen=True)
class ServerPanel:
    """What the job page shows of a job that serves, as data: one template (jobs/_server.html) draws every kind's."""

    title: str  # the panel's heading, e.g. "On Kubernetes"
    facts: tuple[tuple[str, str], ...] = ()  # (label, value) pairs shown as they are
    url: str = ""  # where the server answers from the browser, if anywhere
    command: str = ""  # a command that reaches the server from the student's laptop
    command_help: str = ""  # the line above that command
    scalable: bool = False  # the page offers Scale while the job runs
    replicas: int = 0
    max_replicas: int = 0
    answers_prompts: bool = False  # the page offers Try it and Load test
    reports_load: bool = False  # the job runs a load generator of its own: the page shows its report


@dataclass(frozen=True)
class NotebookAddress:
    """Where a job's notebook server answers the portal: `url` is its origin (http://host:port, reached directly
    or through a forward the kind opened), `token` what the portal adds to every request it proxies.

    A server reached through another proxy (Kubernetes: the API server's service proxy) says how: `url` then ends
    with that proxy's path, `headers` authenticate the portal to it (instead of the token's Authorization header),
    the token travels as the `token` query parameter, `ca_pem` is the CA its TLS certificate is checked against,
    `cert_file`/`key_file` name the client certificate the portal presents to it (files its client already holds,
    never the key itself), and `rewritten_prefix` is the path that proxy puts before absolute links in pages (taken
    out again)."""

    url: str
    token: str
    headers: dict[str, str] = field(default_factory=dict)
    token_in_query: bool = False
    ca_pem: str = ""
    cert_file: str = ""
    key_file: str = ""
    rewritten_prefix: str = ""


class NotebookNotReady(ActionRefused):
    """The job runs, but its notebook server has not said where it listens yet (it is starting)."""


@dataclass
class Preview:
    """A template body rendered with its defaults, or the reasons it cannot be published."""

    script: str = ""
    errors: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors


class Kind:
    """One sort of cluster. The defaults are those of a kind with nothing beyond submit, poll and cancel."""

    name: ClassVar[str] = ""
    label: ClassVar[str] = ""  # what the admin's kind menu and the template editor call it
    # The JobTemplate.backend this kind runs: kinds that run the same templates share one name.
    templates: ClassVar[str] = ""
    backend_class: type[ClusterBackend]
    # The settings this kind owns (clusters/kind_settings.py), kept as JSON on the shared rows: a cluster's
    # (Cluster.kind_settings) and a course's (Course.kind_settings[name]). A new one needs no migration.
    cluster_settings: ClassVar[type[KindSettings]] = KindSettings
    course_settings: ClassVar[type[KindSettings]] = KindSettings
    # What the admin shows for this kind: ((title, {"fields": [...]}), ...), naming Cluster fields and this kind's
    # cluster settings; course_fieldsets the same for a course (its fields and this kind's course settings).
    admin_fieldsets: ClassVar[tuple] = ()
    course_fieldsets: ClassVar[tuple] = ()
    # How the kind's accounts sign in (clusters.choices.AuthMethod values); the account form refuses the others.
    auth_methods: ClassVar[frozenset[str]] = frozenset({AuthMethod.KEY, AuthMethod.PASSWORD})
    # What the cluster's admin page says of keeping students apart, where the kind decides it ("": the run_as mode's
    # words, clusters/templates/admin/clusters/cluster/change_form.html).
    isolation_note: ClassVar[str] = ""
    # Which of the telemetry collector's sources measures clusters of this kind, by name ("" = none: no live charts):
    # "nodes-over-ssh" (the backend's nodes() and gpu_allocations(), each node's GPUs streamed over SSH) or
    # "metrics-api" (the backend's task_usage() and node_usage(), GPUs from the cluster's Prometheus). A name, not an
    # import: the collector stands above the kinds (telemetry/collector/sources.py).
    telemetry_source: ClassVar[str] = ""
    # Running jobs past their template's limit are stopped by the portal (the scheduler has no limit to hold).
    portal_stops_at_time_limit: ClassVar[bool] = False
    # The student's files and run directories are reached over SFTP on the cluster's login node (sessions/files).
    files_over_sftp: ClassVar[bool] = False
    # Its jobs run the bundled workloads from the cluster's lab directory, which the admin stages there (a kind whose
    # jobs run container images has nothing to stage: the admin page offers no "Stage lab files").
    stages_lab_files: ClassVar[bool] = False
    # Students may register their own cluster login on the profile page, and their jobs then run as that user.
    student_logins: ClassVar[bool] = False
    # The shared mode (RunAs.SERVICE) runs jobs as the cluster's shared user (Cluster.shared_user), reached through the
    # service account as a student's own user is, and never as the service account, which holds the portal's
    # privileges (whatever lets it act for students: docs/cluster-identity.md). False: the kind's service account
    # runs no code of students itself (its jobs run with an identity the cluster gives them).
    shared_user_mode: ClassVar[bool] = False

    def backend(self, cluster: Any, account: Any = None) -> ClusterBackend:
        """The backend for a cluster of this kind, acting as `account` (default: the cluster's service account)."""
        from .base import BackendError

        account = account or cluster.service_account()
        if account is None:
            raise BackendError(
                f"The cluster “{cluster.display_name}” has no service account. An admin must add one before jobs "
                "can run."
            )
        return self.backend_class(cluster, account)

    def missing_fields(self, cluster: Any) -> dict[str, str]:
        """Cluster fields this kind cannot work without, each with what to fill in (the admin form shows them)."""
        return {}

    def credential_problem(self, cluster: Any, method: str, secret: str) -> str:
        """What is wrong with a credential given for `cluster` (a kubeconfig without its context…), or ""."""
        return ""

    # -- launch ---------------------------------------------------------------------------------------------------
    # Whether a sweep runs here as one scheduler array (render with `swept`, submit with SubmitRequest.array).
    sweeps_as_arrays: bool = False

    def sweep_as_array(self, swept: tuple[str, ...]) -> bool:
        """Whether a sweep of these parameters goes as one array; if not, its runs go to the cluster one by one,
        each rendered with its own values."""
        return self.sweeps_as_arrays

    def array_spec(self, indexes: list[int], at_once: int) -> str:
        """How the scheduler is asked for an array of these task indexes, at most `at_once` running together
        (SubmitRequest.array); only for a kind whose sweeps go as arrays."""
        from .base import NotSupported

        raise NotSupported(f"{self.name} clusters run no job arrays.")

    def array_values(
        self, schema: Any, runs: Sequence[tuple[uuid.UUID, Mapping[str, Any]]], swept: tuple[str, ...]
    ) -> str:
        """The file an array's tasks read their run's id and swept values from (SubmitRequest.task_values), one line
        per run in task order; "" where the kind's sweeps do not go as arrays."""
        return ""

    def render(self, request: RenderRequest) -> Rendered:
        """The template and values as what will be submitted; RenderRefused names what is wrong."""
        raise RenderRefused(f"Templates cannot be launched on {self.name} clusters yet.")

    def unreadable_files(self, cluster: Any, account: Any, user: Any, paths: dict[str, str]) -> dict[str, str]:
        """Of `paths` ({parameter: path in the user's Files space}), those the job's identity (`account`) cannot
        read, each with why, for the launch form; {} where the kind cannot look (the job then finds out)."""
        return {}

    def preview(self, body: str, parameters: Any, cluster: Any = None) -> Preview:
        """The body rendered with the schema's defaults, with every reason it could not be published."""
        return Preview(errors=[f"Templates for {self.name} clusters have no preview yet."])

    def template_requirement(self, body: str) -> str:
        """What a template with this body is, where only some clusters of the kind run it, in words for the launch
        page ("MPIJobs (it needs the MPI Operator)"); "" where every cluster of the kind runs it (runs_template)."""
        return ""

    def prepare_submit(self, course: Any, user: Any, cluster: Any) -> Any:
        """What the backend must ready on `cluster` before this user's job is submitted, as the kind's own data
        (SubmitRequest.prepared; Kubernetes: a namespace with its quota, and its queue); None for nothing."""
        return None

    def queue_summary(self, cluster: Any, course: Any) -> QueueSummary | None:
        """The course's own queue on the cluster, as the cluster reports it now; None where the kind keeps none.
        Raises BackendError when the cluster cannot say."""
        return None

    # -- a running job --------------------------------------------------------------------------------------------
    def time_limit_minutes(self, job: Any) -> int | None:
        """The limit the job is held to: its own time_minutes, where the template has one."""
        minutes = job.params.get("time_minutes")
        return int(minutes) if minutes else None

    def log_streams(self, job: Any) -> list[str]:
        """The job's separate outputs (e.g. "task/process"); empty when it has one log."""
        return []

    def server(self, job: Any) -> ServerPanel | None:
        """What the job page shows of a job that serves (endpoint, scale, try it), or None."""
        return None

    # Server actions. The job page shows them through server(job); jobs/servers.py holds the quota and the job's
    # timeline around them. A kind without servers refuses each with the same words.
    def plan_scale(self, job: Any, replicas: int) -> Scaled:
        """Check a new size and say what it holds; nothing reaches the cluster yet."""
        raise ActionRefused("Only servers can be scaled; this job runs to completion.")

    def scale(self, job: Any, replicas: int) -> str:
        """Send a size plan_scale accepted; return what happened, in words for the job's timeline."""
        raise ActionRefused("Only servers can be scaled; this job runs to completion.")

    def try_it(self, job: Any, prompt: str) -> Iterator[str]:
        """The server's answer to a prompt, piece by piece as it comes."""
        raise ActionRefused("This job has no inference API to try.")

    def start_load_test(self, job: Any, *, prompts: int, concurrency: int, output_len: int) -> str:
        """Start the load generator against the server; return the load test's name."""
        raise ActionRefused("This job has no inference API to load-test.")

    def load_test_report(self, job: Any) -> Any:
        """The newest load test's name, phase, figures and error (jobs/_load_test.html), or None."""
        return None

    # Accounting: what finished jobs used, where the kind's clusters record it (ClusterBackend.usage). The record may
    # come after the job's end: the poll asks again for this many seconds, and pages say the figures are on their way.
    usage_arrives_within: ClassVar[int] = 0

    def keeps_usage(self, cluster: Any) -> bool:
        """The cluster records what finished jobs used (as Test connection last found it)."""
        return False

    def no_usage_reason(self, cluster: Any) -> str:
        """Why a finished job on this cluster has no usage record, in a sentence, where the cluster keeps none."""
        return f"{cluster.display_name} records no usage of finished jobs."

    # Lab sessions: GPUs held for a course during a live lab where the admin allows it, by the kind's holder class
    # (clusters/backends/lab_holds.py); None where its clusters cannot hold them.
    lab_holds: ClassVar[type[LabSessionHolds] | None] = None

    @property
    def holds_lab_sessions(self) -> bool:
        return self.lab_holds is not None

    def lab_session_holds(self, cluster: Any) -> LabSessionHolds:
        """How this cluster holds lab sessions; NotSupported where the kind cannot."""
        from .base import NotSupported

        if self.lab_holds is None:
            raise NotSupported(f"{cluster.display_name} cannot hold GPUs for a lab session.")
        return self.lab_holds(self, cluster)

    # A shell inside a running job, relayed to the browser by sessions/terminal.py.
    opens_terminals: ClassVar[bool] = False
    terminal_note: ClassVar[str] = ""  # what the shell is and where it runs, under the terminal page's title

    def terminal_targets(self, job: Any) -> list[str]:
        """Where in the job a shell can open (e.g. "task/process"), the default first; [] when there is one place."""
        return []

    def open_terminal(self, job: Any, *, cols: int, rows: int, target: str = "") -> Terminal:
        """A PTY inside the running job (at `target`, one of terminal_targets), as the identity the job runs as;
        ActionRefused or BackendError say why not."""
        raise ActionRefused(f"A terminal cannot be opened in jobs on {self.name} clusters yet.")

    # Where a session's notebooks are kept, in words under the session page's title.
    notebook_note: ClassVar[str] = ""

    # JupyterLab started by a session template (JobTemplate.session), proxied to the browser by sessions/notebook*.
    def notebook_address(self, job: Any) -> NotebookAddress:
        """Where the running job's notebook server listens; NotebookNotReady while it starts, ActionRefused or
        BackendError say why it cannot be reached."""
        raise ActionRefused(f"JupyterLab cannot be opened in jobs on {self.name} clusters yet.")

    # A web dashboard the job's own cluster serves (Kubernetes: KubeRay's Ray dashboard), proxied to the job's owner by
    # sessions/notebook_proxy.py under DASHBOARD_PATH, as JupyterLab is.
    def dashboard_name(self, job: Any) -> str:
        """What the job page calls the job's dashboard (e.g. "Ray dashboard"); "" when the job has none."""
        return ""

    def dashboard_address(self, job: Any) -> NotebookAddress:
        """Where the running job's dashboard answers (its root at `url`; no token); NotebookNotReady while it starts,
        ActionRefused or BackendError say why it cannot be reached."""
        raise ActionRefused(f"Jobs on {self.name} clusters have no dashboard to open.")

    def telemetry_note(self, cluster: Any) -> str:
        """A line under a job's charts saying what this cluster cannot measure, or ""."""
        return ""

    def gpu_share(self, cluster: Any) -> int:
        """How many jobs share one physical GPU (time-sliced); 1 where each GPU a job holds is its own."""
        return 1

    def shares_gpus(self, cluster: Any) -> bool:
        """Each GPU a job holds is a time-sliced share of a physical one (the launch form and job page say so)."""
        return self.gpu_share(cluster) > 1

    def gpu_metrics_url(self, cluster: Any) -> str:
        """Where the cluster's GPU metrics can be queried (a Prometheus with dcgm-exporter's), "" where nowhere."""
        return ""

    def runs_template(self, cluster: Any, template: Any) -> bool:
        """Whether this cluster, as Test connection found it, can run `template` (one of this kind's templates)."""
        return True

    def shared_by_course(self, course: Any) -> str:
        """Where the course's students share one space on clusters of this kind whatever identity their jobs have,
        in words ("" where they do not): the pages that open a shell or files say so."""
        return ""

    # -- what the admin's cluster list and its Test connection page say of a cluster of this kind ---------------

    def address(self, cluster: Any) -> str:
        """Where the portal reaches the cluster, in the admin's cluster list."""
        return cluster.api_url or f"{cluster.host}:{cluster.port}"

    def connection_target(self, cluster: Any) -> str:
        """What Test connection reaches, under the page's title."""
        return f"{cluster.host}:{cluster.port}"

    def tests_over_ssh(self, cluster: Any) -> bool:
        """Test connection pins the login node's host key, then logs in; False: it asks the backend alone."""
        return True

    def host_key_note(self, cluster: Any) -> str:
        """What the cluster list shows instead of a host key's fingerprint, or "" where a key is pinned over SSH."""
        return ""

    def connection_verdict(self, cluster: Any, ok: bool) -> str:
        """Test connection's one-line answer, above the report's lines."""
        if ok:
            return "Login works"
        if cluster.run_as == RunAs.SERVICE:
            return "Login works; what is marked below must change before students' jobs run here"
        return "Login problem"

    def __repr__(self) -> str:
        return f"<Kind {self.name}>"
