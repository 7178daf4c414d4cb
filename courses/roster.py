"""Roster import: a CSV of username,email,role[,cluster_username] enrolls people in a course, all rows or none.

Every problem of every line is reported at once, so an instructor fixes the file in one pass. Each enrollment
and role change is written as a RosterChange; the accounts it creates are returned so they can be invited.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field

from django.contrib.auth import get_user_model
from django.contrib.auth.validators import UnicodeUsernameValidator
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import transaction
from django.db.models.functions import Lower

from clusters.choices import IdentitySource
from clusters.identity import POSIX_NAME, cluster_username, set_cluster_username

from . import roster_changes
from .models import Course, Enrollment, Role

ROLE_NAMES = {"student": Role.STUDENT, "ta": Role.TA, "instructor": Role.INSTRUCTOR}
MAX_ROWS = 5000


@dataclass
class RosterRow:
    line: int
    username: str
    email: str
    role: str
    cluster_username: str = ""  # optional fourth column: the person's username on the clusters


@dataclass
class RosterResult:
    created_users: list[str] = field(default_factory=list)
    enrolled: list[str] = field(default_factory=list)
    role_changed: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    new_accounts: list = field(default_factory=list)  # the User rows created, for their invitations

    @property
    def ok(self) -> bool:
        return not self.errors

    def summary(self) -> str:
        if self.errors:
            return f"Nothing was imported: {len(self.errors)} line(s) with problems in the file."
        return (
            f"{len(self.enrolled)} enrolled ({len(self.created_users)} new accounts), "
            f"{len(self.role_changed)} role(s) changed, {len(self.unchanged)} already enrolled."
        )


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


def _line_problems(username: str, email: str, role_name: str, cluster_name: str = "") -> list[str]:
    problems = []
    if cluster_name and not POSIX_NAME.match(cluster_name):
        problems.append(
            f"“{cluster_name[:40]}” is not a cluster username (1 to 32 lower-case letters, digits, _ or -, "
            "starting with a letter or _)"
        )
    if problem := username_problem(username):
        problems.append(problem)
    if email:
        try:
            validate_email(email)
        except ValidationError:
            problems.append(f"“{email[:60]}” is not a valid email address")
    if not role_name:
        problems.append("the role is missing (write student, ta or instructor)")
    elif role_name not in ROLE_NAMES:
        problems.append(f"the role “{role_name[:20]}” is not one of student, ta, instructor")
    return problems


def parse_roster(text: str) -> tuple[list[RosterRow], list[str]]:
    """Rows and per-line errors, one error per line naming all of its problems. The header line is optional."""
    rows: list[RosterRow] = []
    errors: list[str] = []
    seen: set[str] = set()
    for line_no, record in enumerate(csv.reader(io.StringIO(text)), start=1):
        if not record or all(not cell.strip() for cell in record):
            continue
        cells = [cell.strip() for cell in record] + ["", "", ""]
        username, email, role_name = cells[0], cells[1], cells[2].lower()
        if line_no == 1 and username.lower() == "username":
            continue
        if len(rows) + len(errors) >= MAX_ROWS:
            errors.append(f"The file has more than {MAX_ROWS} rows; split it.")
            break
        problems = _line_problems(username, email, role_name, cells[3])
        if username and username.lower() in seen:
            problems.append(f"{username} appears twice in the file")
        seen.add(username.lower())
        if problems:
            errors.append(f"Line {line_no}: {'; '.join(problems)}.")
        else:
            rows.append(RosterRow(line_no, username, email, ROLE_NAMES[role_name], cells[3]))
    return rows, errors


def import_roster(course: Course, text: str, *, actor=None) -> RosterResult:
    """Enroll everyone in the CSV, or nobody if any line is wrong. New accounts get no usable password: the
    caller invites them (courses.invitations) to set one."""
    result = RosterResult()
    rows, result.errors = parse_roster(text)
    if result.errors:
        return result
    if not rows:
        result.errors.append("The file has no rows. Expected lines of username,email,role.")
        return result
    User = get_user_model()
    with transaction.atomic():
        usernames = [row.username for row in rows]
        # Matched without case: "Alice" on a roster is the account "alice", not a second account to invite.
        lowered = User.objects.annotate(lower_username=Lower("username"))
        existing = {u.lower_username: u for u in lowered.filter(lower_username__in=[n.lower() for n in usernames])}
        enrollments = {e.user_id: e for e in Enrollment.objects.filter(course=course, user__in=existing.values())}
        taught = roster_changes.lock_instructors(course)
        for row in rows:
            _apply_row(course, row, existing.get(row.username.lower()), enrollments, result, actor)
        # Checked once at the end: a file may demote one instructor on a line and promote another later on.
        if taught and not roster_changes.lock_instructors(course):
            result.errors.append(
                "The file would leave the course without an instructor. Keep at least one line with role instructor."
            )
        if result.errors:
            transaction.set_rollback(True)
    if result.errors:
        result.created_users, result.new_accounts = [], []
    return result


def _apply_row(course: Course, row: RosterRow, user, enrollments: dict, result: RosterResult, actor) -> None:
    if user is None:
        user = get_user_model()(username=row.username, email=row.email)
        user.set_unusable_password()
        user.save()
        result.created_users.append(row.username)
        result.new_accounts.append(user)
    elif row.email and not user.email:
        user.email = row.email
        user.save(update_fields=["email"])
    if row.cluster_username:  # checked against every other user's (clusters.identity): a taken name fails the file
        # A roster gives a first cluster username only: changing one (which moves whose files jobs reach) is an
        # admin's, so one course's file cannot rename a person other courses share.
        current = cluster_username(user)
        if current and current != row.cluster_username:
            result.errors.append(
                f"Line {row.line}: {user.username} already has the cluster username {current}; an admin changes it."
            )
            return
        try:
            set_cluster_username(user, row.cluster_username, source=IdentitySource.ROSTER, actor=actor)
        except ValidationError as exc:
            result.errors.append(f"Line {row.line}: {exc.messages[0]}")
    enrollment = enrollments.get(user.pk)
    if enrollment is None:
        roster_changes.enroll(course, user, row.role, actor=actor)
        result.enrolled.append(row.username)
    elif enrollment.role != row.role:
        roster_changes.set_role(course, enrollment, row.role, actor=actor, keep_an_instructor=False)
        result.role_changed.append(row.username)
    else:
        result.unchanged.append(row.username)
