"""The portal a command talks to: the profile named by --profile (or $GPULAB_PROFILE), else the default one."""

from __future__ import annotations

import click

from . import exits, profiles
from .client import Portal


def profile_name() -> str | None:
    return click.get_current_context().find_root().params.get("profile")


def signed_in() -> profiles.Profile:
    try:
        return profiles.load(profile_name())
    except profiles.ProfileMissing as exc:
        raise exits.Refused(str(exc)) from None


def portal() -> Portal:
    profile = signed_in()
    return Portal(profile.url, profile.token)
