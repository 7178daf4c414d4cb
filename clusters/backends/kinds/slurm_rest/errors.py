"""What can go wrong talking to slurmrestd. Each error extends the base error with the same consequence for jobs:
transient ones (the server away, the token lapsed) never fail a job; the others carry the scheduler's words."""

from ...base import (
    AuthenticationFailed,
    BackendError,
    ClusterUnreachable,
    NotSupported,
    PermissionDenied,
    SubmitRejected,
)


class RestUnreachable(ClusterUnreachable):
    """slurmrestd did not answer, or answered without an API (a proxy's 502); jobs keep their last state."""


class SchedulerUnavailable(RestUnreachable):
    """slurmrestd answered but slurmctld did not answer it."""


class TokenExpired(AuthenticationFailed):
    """The stored token's `exp` has passed. Transient: once an admin stores a new token, work resumes."""

    transient = True


class TokenRejected(AuthenticationFailed):
    """slurmrestd or slurmctld refused the token (wrong key, not a JWT, revoked)."""


class ImpersonationRefused(PermissionDenied):
    """The token may not act as the job's cluster user (only a token of the SlurmUser or root may)."""


class RestRejected(SubmitRejected):
    """SLURM refused the request; the message carries SLURM's own errors."""

    numbers: tuple[int | None, ...] = ()  # SLURM's number for each error, where it gave one


class UnsupportedApi(BackendError):
    """The server offers none of the API versions this portal speaks."""


class LogsUnavailable(NotSupported):
    """Job output is read over SSH, and this cluster has no SSH login for the job's account."""
