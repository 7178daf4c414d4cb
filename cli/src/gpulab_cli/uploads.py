"""Which local file each unfinished upload came from, so that one goes on only with the same file.

The portal keeps what arrived of an interrupted upload under the file's name and says how much it holds; it cannot
say whose bytes they are. A data.tar made again since, or another file given the same --name, must start over, not
be joined to the old bytes: each upload under way is recorded here (its source's path, size and modification time)
and goes on only while they match.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .profiles import config_dir, write_private

FILE_NAME = "uploads.json"


def _path() -> Path:
    return config_dir() / FILE_NAME


def _read() -> dict[str, Any]:
    try:
        data = json.loads(_path().read_text())
    except (FileNotFoundError, ValueError):  # none yet, or a damaged record: every upload starts over
        return {}
    return data if isinstance(data, dict) else {}


def _key(portal: str, job: str, folder: str, name: str) -> str:
    return json.dumps([portal, job, folder, name])


def _source(source: Path) -> dict[str, Any]:
    facts = source.stat()
    return {"path": str(source.resolve()), "size": facts.st_size, "mtime_ns": facts.st_mtime_ns}


def started(portal: str, job: str, folder: str, name: str, source: Path) -> None:
    records = _read()
    records[_key(portal, job, folder, name)] = _source(source)
    write_private(_path(), records)


def same_source(portal: str, job: str, folder: str, name: str, source: Path) -> bool:
    """Whether the upload under way there was started from this very file, unchanged since."""
    return _read().get(_key(portal, job, folder, name)) == _source(source)


def finished(portal: str, job: str, folder: str, name: str) -> None:
    records = _read()
    if records.pop(_key(portal, job, folder, name), None) is not None:
        write_private(_path(), records)
