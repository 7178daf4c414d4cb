"""Where a user's own files lie under a cluster's lab directory: one answer for the file browser (sessions/files.py)
and for job scripts ($GPULAB_FILES_DIR), so a file a student uploads is the file their job reads.

- As their own registered account, or their own user through the service account: the lab directory itself (in
  their home), or `students/<cluster username>` when the lab directory is a shared absolute path.
- Under the cluster's one shared user (or, on clusters from before it, the service account): `students/user-<portal
  user id>`, kept apart by the portal only: every job of that user can reach it.

Each is made private to its owner (0700) where the portal makes it (sessions/files.py, the job's `umask 077`).
"""

from __future__ import annotations

import posixpath

from .choices import AuthMethod


def files_subdir(cluster, account, user) -> str:
    """The user's file space relative to the lab directory ("" for the lab directory itself)."""
    lab = (cluster.lab_dir or "").strip() or "~/gpulab"
    if account.auth_method == AuthMethod.VIA_SERVICE and account.username != cluster.shared_user:
        return posixpath.join("students", account.username) if posixpath.isabs(lab) else ""
    if account.user_id == user.pk and account.auth_method != AuthMethod.VIA_SERVICE:
        return ""
    return posixpath.join("students", f"user-{user.pk}")
