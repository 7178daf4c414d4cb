"""What goes where: results on stdout (JSON with -o json, else a table), every message on stderr.

A script that reads `-o json` gets nothing but the JSON document on stdout; progress, notes and warnings never mix
into it. Values from the portal are shown as plain text, never read as rich markup (a job's message may hold `[`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Any, TypeVar

import click
from rich.console import Console
from rich.table import Table
from rich.text import Text

JSON = "json"
TABLE = "table"
F = TypeVar("F", bound=Callable[..., Any])


def output_option(command: F) -> F:
    """-o/--output for a read command: `table` for people (the default), `json` for scripts."""
    return click.option(
        "-o",
        "--output",
        type=click.Choice([TABLE, JSON]),
        default=TABLE,
        show_default=True,
        help="json: only the JSON document on stdout, for scripts.",
    )(command)


def emit_json(data: object) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False))


def note(message: str) -> None:
    """A message for the person, on stderr."""
    click.echo(message, err=True)


def table(columns: Sequence[str], rows: Iterable[Sequence[object]]) -> None:
    grid = Table(box=None, header_style="bold", pad_edge=False)
    for column in columns:
        grid.add_column(column, overflow="fold")
    for row in rows:
        grid.add_row(*(Text(shown(value)) for value in row))
    Console(soft_wrap=False).print(grid)


def fields(pairs: Iterable[tuple[str, object]]) -> None:
    """One object as `name  value` lines, leaving out what is empty."""
    grid = Table(box=None, show_header=False, pad_edge=False)
    grid.add_column(style="bold")
    grid.add_column(overflow="fold")
    for name, value in pairs:
        if value not in (None, "", [], {}):
            grid.add_row(name, Text(shown(value)))
    Console(soft_wrap=False).print(grid)


def shown(value: object) -> str:
    """A value as a person reads it: times in local time to the minute, lists and dicts compact."""
    if value is None:
        return ""
    if isinstance(value, str):
        return local_time(value) or value
    if isinstance(value, list):
        return ", ".join(shown(item) for item in value)
    if isinstance(value, dict):
        return " ".join(f"{key}={shown(item)}" for key, item in value.items())
    return str(value)


def local_time(text: str) -> str | None:
    """An ISO 8601 time the portal sent (UTC), as local `YYYY-MM-DD HH:MM`; None for any other text."""
    if len(text) < 19 or text[4:5] != "-" or "T" not in text:
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment.astimezone().strftime("%Y-%m-%d %H:%M") if moment.tzinfo else None
