"""Whether a shell or file space a student opens on a cluster is theirs alone, for the pages that offer one
(terminal, JupyterLab, Files): where every student's jobs share one identity, those pages say that it separates
nobody."""

from __future__ import annotations

from . import kinds
from .choices import AuthMethod, RunAs


def shared_by(cluster, *, account=None, user=None, course=None) -> str:
    """Who shares the identity behind a job's shell or a user's file space on `cluster`, in words ("" when it is its
    owner's alone): the one cluster user every student's jobs run as, or the course's one Kubernetes namespace.

    `account`: the identity a job ran as (its page's terminal, JupyterLab, run directory). `user` instead: their own
    file space, as their next job would run. `course`: the job's course (Kubernetes namespaces are per course)."""
    if cluster is None or cluster.kind not in kinds.KINDS:
        return ""
    if not kinds.kind_of(cluster.kind).shared_user_mode:  # the kind's own space decides (Kubernetes: namespaces)
        return kinds.kind_of(cluster.kind).shared_by_course(course) if course is not None else ""
    if account is None and user is not None:
        own = cluster.accounts.filter(user=user).exclude(auth_method=AuthMethod.VIA_SERVICE).exists()
        if cluster.run_as != RunAs.SERVICE or own:
            return ""
        service = cluster.service_account()
        name = cluster.shared_user or (service.username if service else "")
        return f"every student's jobs run as one cluster user, {name}" if name else ""
    if account is None:
        return ""
    shared = account.user_id is None or (
        account.auth_method == AuthMethod.VIA_SERVICE and account.username == cluster.shared_user
    )
    return f"every student's jobs run as one cluster user, {account.username}" if shared else ""
