"""The errors a cluster backend may raise, below the models and the registry so that both can name them.

Messages on BackendError are written for the student who will read them. clusters/backends/base.py hands them on
beside the interface.
"""


class BackendError(Exception):
    """A failure the user should read; permanent unless a subclass says otherwise."""

    transient = False


class ClusterUnreachable(BackendError):
    """The cluster did not answer (network, daemon down). Worth retrying; never a reason to fail a job."""

    transient = True


class HostKeyNotPinned(BackendError):
    pass


class HostKeyMismatch(BackendError):
    pass


class AuthenticationFailed(BackendError):
    pass


class SubmitRejected(BackendError):
    """The scheduler refused the job; the message is the scheduler's own."""


class SchedulerUnavailable(ClusterUnreachable):
    """The login host answered but the scheduler did not (e.g. slurmctld down)."""


class PermissionDenied(BackendError):
    """The cluster refused the portal's identity (e.g. Kubernetes RBAC); the message is the server's."""


class NotSupported(BackendError):
    """The action makes no sense on this kind of cluster (e.g. scaling a SLURM job)."""
