"""Where a user's own files lie under a cluster's lab directory: one answer for the file browser (sessions/files.py)
and for job scripts ($GPULAB_FILES_DIR), so a file a student uploads is the file their job reads.

- As their own registered account, or their own user through the service account: the lab directory itself (in
  their home), or `students/<cluster username>` when the lab directory is a shared absolute path.
- Under the shared service account: `students/user-<portal user id>`, private to them in the portal.
"""

from __future__ import annotations

import posixpath

from .choices import AuthMethod


def files_subdir(cluster, account, user) -> str:
    """The user's file space relative to the lab directory ("" for the lab directory itself)."""
    lab = (cluster.lab_dir or "").strip() or "~/gpulab"
    if account.auth_method == AuthMethod.VIA_SERVICE:
        return posixpath.join("students", account.username) if posixpath.isabs(lab) else ""
    if account.user_id == user.pk:
        return ""
    return posixpath.join("students", f"user-{user.pk}")
