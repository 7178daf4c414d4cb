"""Reading a roster file: whatever CSV a spreadsheet or a campus system writes, into rows and every problem of every
line, in words. Nothing here touches the database (courses/roster.py plans and saves).

The dialect is sniffed (comma, semicolon, tab or bar; a comma when the sniffer cannot tell); a UTF-8 or UTF-16 byte
order mark and CR, LF or CRLF line endings are read. Columns are found by their header, in any order and spelling
that COLUMNS knows (case, spaces and punctuation aside: "E-mail", "Student ID", "NetID"); a file without a header is
read as username,email,role[,cluster_username]. Without a role column everyone is a student.
"""

from __future__ import annotations

import codecs
import csv
import io
import re
from dataclasses import dataclass, field

from django.contrib.auth.validators import UnicodeUsernameValidator
from django.core.exceptions import ValidationError
from django.core.validators import validate_email

from clusters.identity import POSIX_NAME

from .models import Role

MAX_BYTES = 1024 * 1024
MAX_ROWS = 5000
MAX_CELL = 320  # characters: more than any username (150), address (254) or name a row may give
MAX_NAME = 150  # the account's first and last name each
SNIFF_CHARS, SNIFF_LINES = 2048, 20  # what the dialect is guessed from (the sniffer's time grows with its square)

ROLE_NAMES = {"student": Role.STUDENT, "ta": Role.TA, "teachingassistant": Role.TA, "instructor": Role.INSTRUCTOR}

# Each field and the headers that name it, the preferred first (when two columns name one field, the first wins).
COLUMNS = {
    "username": [
        *("username", "user name", "login", "login id", "sis login id", "netid", "net id", "user", "user id"),
        *("uid", "student id", "id"),
    ],
    "email": ["email", "e-mail", "mail", "email address", "e-mail address"],
    "name": ["name", "full name", "student name", "display name", "student"],
    "first_name": ["first name", "given name"],
    "last_name": ["last name", "surname", "family name"],
    "section": ["section", "group", "class section"],
    "role": ["role", "course role"],
    "cluster_username": ["cluster username", "cluster user", "cluster login", "cluster account", "unix username"],
}
HEADERLESS = ["username", "email", "role", "cluster_username"]  # a file without a header line: today's format


class RosterUnreadable(ValueError):
    """The file cannot be read as text; the message says what to do."""


def _key(text: str) -> str:
    return re.sub(r"[\W_]+", "", text.casefold())


SYNONYMS = {_key(name): (column, rank) for column, names in COLUMNS.items() for rank, name in enumerate(names)}


@dataclass
class RosterRow:
    line: int
    username: str
    email: str = ""
    role: str = Role.STUDENT
    cluster_username: str = ""  # the person's username on the clusters
    first_name: str = ""
    last_name: str = ""
    section: str = ""
    problems: list[str] = field(default_factory=list)


@dataclass
class RosterFile:
    rows: list[RosterRow] = field(default_factory=list)  # every line read, with its problems
    errors: list[str] = field(default_factory=list)  # what stops the whole file (no username column, too long, …)
    notes: list[str] = field(default_factory=list)  # what the instructor should know, e.g. columns not used

    @property
    def line_errors(self) -> list[str]:
        return [f"Line {row.line}: {'; '.join(row.problems)}." for row in self.rows if row.problems]

    @property
    def all_errors(self) -> list[str]:
        return self.errors + self.line_errors


def decode(raw: bytes) -> str:
    """The file's text: UTF-8 (with or without a byte order mark) or UTF-16 with its mark."""
    utf16 = raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE))
    try:
        return raw.decode("utf-16" if utf16 else "utf-8-sig")
    except UnicodeDecodeError:
        raise RosterUnreadable("The file is not UTF-8 text; save it as CSV (UTF-8).") from None


def username_problem(username: str) -> str | None:
    if not username:
        return "the username is empty"
    if len(username) > 150:
        return "the username is longer than 150 characters"
    try:
        UnicodeUsernameValidator()(username)
    except ValidationError:
        return f"“{username[:40]}” is not a valid username (letters, digits and @.+-_)"
    return None


def sniff(text: str) -> type[csv.Dialect] | csv.Dialect:
    """The file's dialect, from its first lines; a comma when the sniffer cannot tell (one column, one line)."""
    sample = "\n".join(text[:SNIFF_CHARS].splitlines()[:SNIFF_LINES])
    try:
        return csv.Sniffer().sniff(sample, delimiters=",;\t|")
    except csv.Error:
        return csv.excel


def read(text: str) -> RosterFile:
    """Every row of the file with its problems; errors when the file as a whole cannot be used."""
    result = RosterFile()
    text = text.lstrip("\ufeff")
    reader = csv.reader(io.StringIO(text, newline=""), sniff(text))
    mapping: dict[str, int] | None = None
    width = 0
    try:
        for record in reader:
            cells = [cell.strip() for cell in record]
            if not any(cells):
                continue
            if mapping is None:
                mapping, width = _columns(cells, result)
                if mapping is None:
                    return result
                if width:  # a header line, read
                    continue
            if len(result.rows) >= MAX_ROWS:
                result.errors.append(f"The file has more than {MAX_ROWS} rows; split it.")
                return result
            result.rows.append(_row(reader.line_num, cells, mapping, width or len(HEADERLESS)))
    except csv.Error as exc:
        result.errors.append(f"Line {reader.line_num} cannot be read: {_csv_words(exc)}")
        return result
    if not result.rows and not result.errors:
        result.errors.append("The file has no rows. Expected lines of username,email,role.")
    _duplicates(result.rows)
    return result


def _csv_words(exc: csv.Error) -> str:
    if "field larger than field limit" in str(exc):
        return f"a cell is longer than {MAX_CELL} characters. Is this the roster file?"
    return f"{exc}. Save the file as CSV and try again."


def _columns(cells: list[str], result: RosterFile) -> tuple[dict[str, int] | None, int]:
    """The column of each field, and the header's width (0: the file has no header line)."""
    named = [SYNONYMS.get(_key(cell)) for cell in cells]
    if not (named[0] or sum(1 for n in named if n) >= 2):
        return {name: i for i, name in enumerate(HEADERLESS)}, 0
    best: dict[str, tuple[int, int]] = {}
    for index, found in enumerate(named):
        if found and (found[0] not in best or found[1] < best[found[0]][1]):
            best[found[0]] = (index, found[1])
    mapping = {column: index for column, (index, _) in best.items()}
    if "username" not in mapping:
        names = ", ".join(cells)[:200]
        result.errors.append(
            f"No column names the username. The header line reads: {names}. Name one column username (or id, "
            "login, netid, student id)."
        )
        return None, 0
    unused = [cell or f"column {i + 1}" for i, cell in enumerate(cells) if i not in mapping.values()]
    if unused:
        result.notes.append(f"Columns not used: {', '.join(unused)[:300]}.")
    if "role" not in mapping:
        result.notes.append("The file has no role column: everyone in it is enrolled as a student.")
    if "section" in mapping:
        result.notes.append("Sections are shown here only: the portal does not keep them.")
    return mapping, len(cells)


def _row(line: int, cells: list[str], mapping: dict[str, int], width: int) -> RosterRow:
    def cell(column: str) -> str:
        index = mapping.get(column)
        return cells[index] if index is not None and index < len(cells) else ""

    row = RosterRow(line, cell("username"), cell("email"), cluster_username=cell("cluster_username"))
    row.section = cell("section")
    row.first_name, row.last_name = split_name(cell("name")) if "name" in mapping else (cell("first_name"), "")
    if "name" not in mapping:
        row.last_name = cell("last_name")
    if any(len(value) > MAX_CELL for value in cells):
        row.problems.append(f"a cell is longer than {MAX_CELL} characters")
        return row
    extra = [value for value in cells[width:] if value]
    if extra:
        row.problems.append(f"an extra column (“{extra[0][:40]}”): the file has {width} columns")
    row.problems += _cell_problems(row)
    role = cell("role")
    if "role" in mapping:
        row.role = ROLE_NAMES.get(_key(role), "")  # "" (shown as —) until the line names a role we know
        if not role:
            row.problems.append("the role is missing (write student, ta or instructor)")
        elif not row.role:
            row.problems.append(f"the role “{role[:20]}” is not one of student, ta, instructor")
    return row


def split_name(name: str) -> tuple[str, str]:
    """(first, last) from "Ada Lovelace" or "Lovelace, Ada"; one word is a first name."""
    if "," in name:
        last, _, first = name.partition(",")
        return first.strip(), last.strip()
    first, _, last = name.rpartition(" ")
    return (first.strip(), last.strip()) if first else (last.strip(), "")


def _cell_problems(row: RosterRow) -> list[str]:
    problems = []
    if row.cluster_username and not POSIX_NAME.match(row.cluster_username):
        problems.append(
            f"“{row.cluster_username[:40]}” is not a cluster username (1 to 32 lower-case letters, digits, _ or -, "
            "starting with a letter or _)"
        )
    if problem := username_problem(row.username):
        problems.append(problem)
    if row.email:
        try:
            validate_email(row.email)
        except ValidationError:
            problems.append(f"“{row.email[:60]}” is not a valid email address")
    if len(row.first_name) > MAX_NAME or len(row.last_name) > MAX_NAME:
        problems.append(f"the name is longer than {MAX_NAME} characters")
    return problems


def _duplicates(rows: list[RosterRow]) -> None:
    usernames: set[str] = set()
    cluster_names: set[str] = set()
    for row in rows:
        if row.username and row.username.lower() in usernames:
            row.problems.append(f"{row.username} appears twice in the file")
        usernames.add(row.username.lower())
        if row.cluster_username and row.cluster_username in cluster_names:
            row.problems.append(f"the cluster username {row.cluster_username} is given twice in the file")
        cluster_names.add(row.cluster_username)
