"""Signed-in portals, as named profiles in the user's config directory.

profiles.json holds API tokens, so it is written with mode 0600 in a 0700 directory and replaced whole (never left
half written); a file found readable by others (copied by hand) is narrowed to 0600 when it is read.
"""

from __future__ import annotations

import json
import os
import stat
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import click

APP_NAME = "gpulab"
FILE_NAME = "profiles.json"
DEFAULT_NAME = "default"


class ProfileMissing(Exception):
    """No profile of that name (or none at all): the message says how to sign in."""


@dataclass(frozen=True)
class Profile:
    name: str
    url: str
    username: str
    token: str


def config_dir() -> Path:
    """~/.config/gpulab on Linux ($XDG_CONFIG_HOME respected), the platform's equivalent elsewhere."""
    return Path(click.get_app_dir(APP_NAME))


def profiles_path() -> Path:
    return config_dir() / FILE_NAME


def _read() -> dict[str, Any]:
    path = profiles_path()
    try:
        text = path.read_text()
    except FileNotFoundError:
        return {"default": None, "profiles": {}}
    if stat.S_IMODE(path.stat().st_mode) & 0o077:
        path.chmod(0o600)
    data: dict[str, Any] = json.loads(text)
    data.setdefault("profiles", {})
    data.setdefault("default", None)
    return data


def _write(data: dict[str, Any]) -> None:
    write_private(profiles_path(), data)


def write_private(path: Path, data: dict[str, Any]) -> None:
    """`data` as JSON in `path` inside the config folder, the user's alone (folder 0700, file 0600)."""
    folder = config_dir()
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    if stat.S_IMODE(folder.stat().st_mode) & 0o077:
        folder.chmod(0o700)  # an older or hand-made folder: it holds tokens now
    # mkstemp creates the file 0600; os.replace swaps it in whole, so a crash leaves the old file, not half a new one.
    handle, temporary = tempfile.mkstemp(dir=folder, prefix=f".{path.stem}-", suffix=".json")
    try:
        with os.fdopen(handle, "w") as file:
            json.dump(data, file, indent=2, sort_keys=True)
            file.write("\n")
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def load(name: str | None) -> Profile:
    """The named profile, or the default one when name is None."""
    data = _read()
    chosen = name or data["default"]
    if chosen is None or chosen not in data["profiles"]:
        if name:
            raise ProfileMissing(f"No profile named {name!r}: sign in with `gpulab --profile {name} login URL`.")
        raise ProfileMissing("Not signed in: run `gpulab login URL` first.")
    return Profile(name=chosen, **data["profiles"][chosen])


def save(profile: Profile, *, make_default: bool) -> None:
    data = _read()
    data["profiles"][profile.name] = {k: v for k, v in asdict(profile).items() if k != "name"}
    if make_default or data["default"] not in data["profiles"]:
        data["default"] = profile.name
    _write(data)


def forget(name: str) -> None:
    data = _read()
    data["profiles"].pop(name, None)
    if data["default"] == name:
        data["default"] = next(iter(sorted(data["profiles"])), None)
    _write(data)


def listing() -> tuple[str | None, list[Profile]]:
    """(the default profile's name, every profile by name)."""
    data = _read()
    profiles = [Profile(name=name, **fields) for name, fields in sorted(data["profiles"].items())]
    return data["default"], profiles
