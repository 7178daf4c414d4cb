"""What goes where: results on stdout (JSON with -o json, else a table), every message on stderr.

A script that reads `-o json` gets nothing but the JSON document on stdout; progress, notes and warnings never mix
into it. Values from the portal are shown as plain text, never read as rich markup (a job's message may hold `[`),
and never as terminal commands: a job's log, a file name or a student's parameter is written by whoever ran the job,
and a TA's terminal must not take an escape sequence in it (a clipboard write, a title report) for its own (safe()).
"""

from __future__ import annotations

import json
import re
import unicodedata
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


COLOUR = re.compile(r"\x1b\[[0-9;]*m")  # SGR: colours and bold, which a training log's progress bars use


def safe(text: str, *, colours: bool = False) -> str:
    """`text` with every control character (C0 but tab, newline and carriage return; DEL; C1) and every invisible
    format character (bidirectional overrides) written out as \\xNN or \\uNNNN; with `colours`, SGR sequences stay."""
    if colours:
        kept = COLOUR.split(text)
        codes = COLOUR.findall(text)
        return "".join(safe(part) + (codes[i] if i < len(codes) else "") for i, part in enumerate(kept))
    return "".join(_written_out(char) for char in text)


def _written_out(char: str) -> str:
    if char in "\t\n\r":
        return char
    code = ord(char)
    if code < 0x20 or 0x7F <= code <= 0x9F:
        return f"\\x{code:02x}"
    if unicodedata.category(char) == "Cf":
        return f"\\u{code:04x}"
    return char


def emit_json(data: object) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False))


def note(message: str) -> None:
    """A message for the person, on stderr."""
    click.echo(safe(message), err=True)


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
        return local_time(value) or safe(value)
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
