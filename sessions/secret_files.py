"""Files the file browser never serves, lists, archives or renames: a JupyterLab session's secrets.

Invariant: whoever may read a run directory through Files (its owner, the course's instructors and TAs) never gets a
file that would let them open a session as its student. Refused by name wherever they lie: JupyterLab's server and
connection files (`.jupyter-server*.json`, `jpserver-*.json`/`.html`, `nbserver-*`), its cookie secret, and the
portal's own runtime directory (`.gpulab-runtime`, clusters/backends/slurm_family/notebook.py) and everything under it.
Refused by name and mode: a kernel's connection file (`kernel-*.json`, which holds the kernel's signing key) when
only its owner may read it (0600, as Jupyter writes it); the same name with wider modes is an ordinary file.
"""

from __future__ import annotations

import fnmatch
import stat

RUNTIME_DIRS = frozenset({".gpulab-runtime"})
ALWAYS = (
    ".jupyter-server*.json",
    "jpserver-*.json",
    "jpserver-*.html",
    "nbserver-*.json",
    "nbserver-*.html",
    "jupyter_cookie_secret",
)
WHEN_PRIVATE = ("kernel-*.json",)
REFUSAL = (
    "This file holds a JupyterLab session's secret (its token or a kernel's key); the portal never serves or "
    "changes it here."
)


def _matches(name: str, patterns: tuple[str, ...]) -> bool:
    lowered = name.lower()
    return any(fnmatch.fnmatchcase(lowered, pattern) for pattern in patterns)


def is_secret(relative: str, mode: int | None = None) -> bool:
    """Whether the path (relative to a space's root, or absolute) names a session's secret; `mode`, where known, is
    the file's st_mode."""
    parts = [part for part in relative.split("/") if part]
    if not parts:
        return False
    if any(part.lower() in RUNTIME_DIRS for part in parts):
        return True
    name = parts[-1]
    if _matches(name, ALWAYS):
        return True
    owner_only = mode is not None and stat.S_ISREG(mode) and not mode & 0o077
    return owner_only and _matches(name, WHEN_PRIVATE)
