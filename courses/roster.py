"""Roster import: a CSV of username,email,role enrolls people in a course, all rows or none."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field

from django.contrib.auth import get_user_model
from django.contrib.auth.validators import UnicodeUsernameValidator
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import transaction

from .models import Course, Enrollment, Role

ROLE_ALIASES = {"student": Role.STUDENT, "instructor": Role.INSTRUCTOR, "ta": Role.INSTRUCTOR, "": Role.STUDENT}
MAX_ROWS = 5000


@dataclass
class RosterRow:
    line: int
    username: str
    email: str
    role: str


@dataclass
class RosterResult:
    created_users: list[str] = field(default_factory=list)
    enrolled: list[str] = field(default_factory=list)
    role_changed: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors

    def summary(self) -> str:
        if self.errors:
            return f"Nothing was imported: {len(self.errors)} problem(s) in the file."
        return (
            f"{len(self.enrolled)} enrolled ({len(self.created_users)} new accounts), "
            f"{len(self.role_changed)} role(s) changed, {len(self.unchanged)} already enrolled."
        )


def parse_roster(text: str) -> tuple[list[RosterRow], list[str]]:
    """Rows and per-line errors. The header line (username,email,role) is optional."""
    rows: list[RosterRow] = []
    errors: list[str] = []
    seen: set[str] = set()
    validate_username = UnicodeUsernameValidator()
    for line_no, record in enumerate(csv.reader(io.StringIO(text)), start=1):
        if not record or all(not cell.strip() for cell in record):
            continue
        cells = [cell.strip() for cell in record] + ["", ""]
        username, email, role_name = cells[0], cells[1], cells[2].lower()
        if line_no == 1 and username.lower() == "username":
            continue
        if len(rows) >= MAX_ROWS:
            errors.append(f"The file has more than {MAX_ROWS} rows; split it.")
            break
        try:
            validate_username(username)
            if not username or len(username) > 150:
                raise ValidationError("empty or longer than 150 characters")
        except ValidationError:
            errors.append(f"Line {line_no}: “{username[:40]}” is not a valid username (letters, digits and @.+-_).")
            continue
        if email:
            try:
                validate_email(email)
            except ValidationError:
                errors.append(f"Line {line_no}: “{email[:60]}” is not a valid email address.")
                continue
        if role_name not in ROLE_ALIASES:
            errors.append(f"Line {line_no}: role “{role_name[:20]}” is not one of student, instructor, ta.")
            continue
        if username.lower() in seen:
            errors.append(f"Line {line_no}: {username} appears twice in the file.")
            continue
        seen.add(username.lower())
        rows.append(RosterRow(line_no, username, email, ROLE_ALIASES[role_name]))
    return rows, errors


def import_roster(course: Course, text: str) -> RosterResult:
    """Enroll everyone in the CSV, or nobody if any line is wrong. New accounts get no usable password."""
    result = RosterResult()
    rows, result.errors = parse_roster(text)
    if result.errors:
        return result
    if not rows:
        result.errors.append("The file has no rows. Expected lines of username,email,role.")
        return result
    User = get_user_model()
    with transaction.atomic():
        existing = {u.username.lower(): u for u in User.objects.filter(username__in=[r.username for r in rows])}
        enrollments = {e.user_id: e for e in Enrollment.objects.filter(course=course, user__in=existing.values())}
        for row in rows:
            user = existing.get(row.username.lower())
            if user is None:
                user = User(username=row.username, email=row.email)
                user.set_unusable_password()
                user.save()
                result.created_users.append(row.username)
            elif row.email and not user.email:
                user.email = row.email
                user.save(update_fields=["email"])
            enrollment = enrollments.get(user.pk)
            if enrollment is None:
                Enrollment.objects.create(course=course, user=user, role=row.role)
                result.enrolled.append(row.username)
            elif enrollment.role != row.role:
                enrollment.role = row.role
                enrollment.save(update_fields=["role"])
                result.role_changed.append(row.username)
            else:
                result.unchanged.append(row.username)
    return result
