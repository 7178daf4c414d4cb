"""Paths a student asks for, checked before anything reaches the cluster.

Invariant: a path from a request is a relative path of plain names under one root (the student's lab space or a
job's run directory). `..`, absolute paths, empty names, control characters and over-long names are refused here;
sessions/files.py then refuses what only the cluster can tell: symlinks leading out of the root, hard links and
device files.

Unicode's bidirectional controls (U+202A-U+202E, U+2066-U+2069, U+200E, U+200F, U+061C) reorder the text around
them: `invoice<U+202E>txt.exe` reads "invoiceexe.txt". A new name (upload, rename, new folder) must not hold them;
a name already on the cluster (a job wrote it) still opens, and is shown with each one written out (`\u202e`).
"""

from __future__ import annotations

import posixpath
import unicodedata

MAX_NAME = 255
MAX_PATH = 4096
BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c")


class PathRefused(ValueError):
    """The path cannot be used; the message says why, for the student."""


def _has_control(text: str) -> bool:
    return any(unicodedata.category(ch) == "Cc" for ch in text)  # C0, DEL and C1 controls, NUL included


def shown(name: str) -> str:
    """The name as pages show it: each bidirectional control written out as \\uXXXX, the rest as it is."""
    return "".join(f"\\u{ord(ch):04x}" if ch in BIDI_CONTROLS else ch for ch in name)


def check_name(name: str) -> str:
    """One new file or folder name the student types (upload, rename, new folder)."""
    _check_part(name)
    if any(ch in BIDI_CONTROLS for ch in name):
        raise PathRefused(
            "A name cannot contain Unicode direction controls (they make a name read differently from what it is, "
            f"such as “{shown(name)}”); type the name again without them."
        )
    return name


def _check_part(name: str) -> str:
    """One name of a path to something that exists (a name a job wrote may hold direction controls)."""
    if not name or name in (".", ".."):
        raise PathRefused("Give a name (not “.” or “..”).")
    if "/" in name or "\\" in name:
        raise PathRefused("A name cannot contain “/” or “\\”; make the folder first, then open it.")
    if _has_control(name):
        raise PathRefused("A name cannot contain control characters (tabs, new lines, escape codes).")
    if len(name.encode()) > MAX_NAME:
        raise PathRefused(f"A name can be at most {MAX_NAME} bytes long.")
    return name


def clean(path: str | None) -> str:
    """The relative path "a/b/c" ("" for the root itself), or PathRefused."""
    path = path or ""
    if len(path.encode()) > MAX_PATH:
        raise PathRefused("That path is too long.")
    if path.startswith("/") or path.startswith("~"):
        raise PathRefused("Paths are relative to your space: no leading “/” or “~”.")
    parts = [part for part in path.split("/") if part not in ("", ".")]
    if ".." in parts:
        raise PathRefused("“..” is not allowed: open folders from the list instead.")
    for part in parts:
        _check_part(part)
    return "/".join(parts)


def join(root: str, relative: str) -> str:
    """The absolute path of a cleaned relative path under `root`."""
    return posixpath.join(root, relative) if relative else root


def inside(root: str, resolved: str) -> bool:
    """Whether the resolved (symlink-free) path is the root or under it."""
    root = root.rstrip("/") or "/"
    return resolved == root or resolved.startswith(root.rstrip("/") + "/")


def parent(relative: str) -> str:
    return posixpath.dirname(relative)


def crumbs(relative: str) -> list[tuple[str, str]]:
    """(name as shown, relative path) of each folder from the root down, for the breadcrumb."""
    parts = relative.split("/") if relative else []
    return [(shown(part), "/".join(parts[: i + 1])) for i, part in enumerate(parts)]
