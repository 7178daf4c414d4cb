"""Each person's choices: which events reach them on which personal channel. Saved as one row per (event,
channel); events.default_on answers for pairs never saved."""

from __future__ import annotations

from jobs import access

from .events import PERSONAL_CHANNELS, Channel, Event, default_on
from .models import Preference


def events_for(user) -> list[Event]:
    """The course digest only for people who teach a course (or admins)."""
    teaches = access.teaching_courses(user).exists()
    return [e for e in Event if e != Event.DIGEST or teaches]


def matrix(user) -> list[tuple[Event, list[tuple[str, bool]]]]:
    saved = {(p.event, p.channel): p.enabled for p in Preference.objects.filter(user=user)}
    return [
        (event, [(c, saved.get((event, c), default_on(event, c))) for c in PERSONAL_CHANNELS])
        for event in events_for(user)
    ]


def field_name(event: str, channel: str) -> str:
    return f"{event}__{channel}"


def save(user, checked: set[str]) -> None:
    """Store every pair shown: on when its box was ticked."""
    for event in events_for(user):
        for channel in PERSONAL_CHANNELS:
            set_one(user, event, channel, field_name(event, channel) in checked)


def set_one(user, event: str, channel: str, enabled: bool) -> None:
    Preference.objects.update_or_create(user=user, event=event, channel=channel, defaults={"enabled": enabled})


def unsubscribe(user, event: str) -> None:
    set_one(user, event, Channel.EMAIL, False)
