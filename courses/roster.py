"""Roster import: the rows of a roster file (courses/roster_file.py) planned, shown, then enrolled, all or none.

An import never changes an existing account: not its email, its name or its password, whichever course it is in.
A row naming an account outside the course enrolls it as it is, and the plan says so, with the file's address when
it differs, so an instructor cannot take over someone's account by importing their username with another address.
A roster gives a first cluster username only to an account it creates or one in this course alone (clusters/identity).

plan_roster answers what saving would do, line by line, and changes nothing (the preview); save_roster plans again
inside the transaction and applies it. Each enrollment and role change is written as a RosterChange; the accounts it
creates are returned so they can be invited.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models.functions import Lower

from clusters.choices import IdentitySource
from clusters.identity import cluster_username, set_cluster_username, validate_cluster_username

from . import roster_changes, roster_file
from .models import Course, Enrollment, Role
from .roster_file import MAX_ROWS, ROLE_NAMES, RosterRow, username_problem

if TYPE_CHECKING:
    from django.contrib.auth.models import User

__all__ = [
    "MAX_ROWS",
    "ROLE_NAMES",
    "Planned",
    "RosterPlan",
    "RosterResult",
    "RosterRow",
    "import_roster",
    "plan_roster",
    "save_roster",
    "username_problem",
]

NEW, ENROL, ROLE, SAME = "new", "enrol", "role", "same"  # what happens to a line


@dataclass
class Planned:
    row: RosterRow
    outcome: str = NEW
    user: User | None = None  # the existing account, if any
    enrollment: Enrollment | None = None  # its enrollment in the course, if any
    old_role: str = ""
    notes: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # the line's, all of them: nothing is saved while any is left
    set_cluster_username: bool = False

    @property
    def role_label(self) -> str:
        return Role(self.row.role).label if self.row.role else "—"

    @property
    def says(self) -> str:
        """What saving does with this line, in words."""
        if self.outcome == NEW:
            invite = f"invited at {self.row.email}" if self.row.email else "no address given, so not invited"
            return f"new account, {invite}"
        if self.outcome == ENROL:
            return "existing account, enrolled as it is"
        if self.outcome == ROLE:
            return f"already enrolled: {Role(self.old_role).label.lower()} → {self.role_label.lower()}"
        return "already enrolled: nothing changes"


@dataclass
class RosterPlan:
    lines: list[Planned] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # every problem of every line, and the file's
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors

    def count(self, outcome: str) -> int:
        return sum(1 for line in self.lines if line.outcome == outcome)


@dataclass
class RosterResult:
    created_users: list[str] = field(default_factory=list)
    enrolled: list[str] = field(default_factory=list)
    existing: list[str] = field(default_factory=list)  # of the enrolled: accounts that were there before, unchanged
    role_changed: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    new_accounts: list = field(default_factory=list)  # the User rows created, for their invitations

    @property
    def ok(self) -> bool:
        return not self.errors

    def summary(self) -> str:
        if self.errors:
            return f"Nothing was imported: {len(self.errors)} problem(s) in the file."
        existing = ""
        if self.existing:
            names = ", ".join(self.existing[:10]) + (" …" if len(self.existing) > 10 else "")
            existing = (
                f"; {len(self.existing)} existing account(s) enrolled as they are, their email, name and password "
                f"unchanged: {names}"
            )
        return (
            f"{len(self.enrolled)} enrolled ({len(self.created_users)} new accounts{existing}), "
            f"{len(self.role_changed)} role(s) changed, {len(self.unchanged)} already enrolled."
        )


def import_roster(course: Course, text: str, *, actor=None) -> RosterResult:
    """Read, plan and save in one step (the import_roster command; the page shows the plan first)."""
    read = roster_file.read(text)
    if read.errors:
        return RosterResult(errors=read.all_errors)
    result = save_roster(course, read.rows, actor=actor)
    result.notes = read.notes + result.notes
    return result


def plan_roster(course: Course, rows: list[RosterRow]) -> RosterPlan:
    """What saving these rows would do, line by line, with every problem; reads the database, writes nothing."""
    plan = RosterPlan()
    users = _existing(rows)
    enrollments = {e.user_id: e for e in Enrollment.objects.filter(course=course, user__in=users.values())}
    others = _in_other_courses(course, users.values())
    for row in rows:
        line = _plan_line(row, users.get(row.username.lower()), enrollments, others)
        plan.lines.append(line)
        line.problems = row.problems + _cluster_problems(line)
        if line.problems:
            plan.errors.append(f"Line {row.line}: {'; '.join(line.problems)}.")
    if _leaves_no_instructor(course, plan.lines):
        plan.errors.append(
            "The file would leave the course without an instructor. Keep at least one line with role instructor."
        )
    return plan


def save_roster(course: Course, rows: list[RosterRow], *, actor=None) -> RosterResult:
    """Enroll everyone in the rows, or nobody if any line is wrong. New accounts get no usable password: the
    caller invites them (courses.invitations) to set one."""
    result = RosterResult()
    if not rows:
        result.errors.append("The file has no rows. Expected lines of username,email,role.")
        return result
    with transaction.atomic():
        taught = roster_changes.lock_instructors(course)
        plan = plan_roster(course, rows)
        result.errors = plan.errors
        if plan.ok:
            for line in plan.lines:
                _save_line(course, line, result, actor)
        # Checked again at the end: a file may demote one instructor on a line and promote another later on.
        if plan.ok and taught and not roster_changes.lock_instructors(course):
            result.errors.append("The file would leave the course without an instructor.")
        if result.errors:
            transaction.set_rollback(True)
    if result.errors:
        result.created_users, result.new_accounts = [], []
    return result


def _existing(rows: list[RosterRow]) -> dict:
    # Matched without case: "Alice" on a roster is the account "alice", not a second account to invite.
    lowered = get_user_model().objects.annotate(lower_username=Lower("username"))
    return {u.lower_username: u for u in lowered.filter(lower_username__in=[r.username.lower() for r in rows])}


def _in_other_courses(course: Course, users) -> set[int]:
    found = Enrollment.objects.filter(user__in=list(users)).exclude(course=course)
    return set(found.values_list("user_id", flat=True))


def _plan_line(row: RosterRow, user, enrollments: dict, others: set[int]) -> Planned:
    line = Planned(row, user=user)
    if user is None:
        line.set_cluster_username = bool(row.cluster_username)
        return line
    line.enrollment = enrollment = enrollments.get(user.pk)
    if enrollment is None:
        line.outcome = ENROL
        line.notes.append("an account outside this course: enrolled only; its email, name and password stay")
    else:
        line.outcome, line.old_role = (SAME, "") if enrollment.role == row.role else (ROLE, enrollment.role)
    if row.email and row.email.lower() != (user.email or "").lower():
        line.notes.append(f"the file's address {row.email} is not used: the account keeps its own")
    if row.cluster_username:
        # Who someone's jobs run as is theirs: a roster names it for a person in this course alone, never for an
        # admin or someone another course shares, whom one instructor's file could otherwise point at their account.
        if enrollment is not None and user.pk not in others and not (user.is_staff or user.is_superuser):
            line.set_cluster_username = True
        else:
            line.notes.append(f"the cluster username {row.cluster_username} is not used: an admin sets it")
    return line


def _cluster_problems(line: Planned) -> list[str]:
    if not line.set_cluster_username:
        return []
    name, user = line.row.cluster_username, line.user
    current = cluster_username(user) if user is not None else ""
    if current == name:
        line.set_cluster_username = False  # nothing to change
        return []
    if user is not None and current:
        return [f"{user.get_username()} already has the cluster username {current}; an admin changes it"]
    try:
        validate_cluster_username(name, user)
    except ValidationError as exc:
        return [exc.messages[0].rstrip(".")]
    return []


def _leaves_no_instructor(course: Course, lines: list[Planned]) -> bool:
    instructors = set(Enrollment.objects.filter(course=course, role=Role.INSTRUCTOR).values_list("user_id", flat=True))
    if not instructors:
        return False
    after: set[int | str] = set(instructors)  # a new account, not yet saved, counts by its username
    for line in lines:
        key = line.user.pk if line.user is not None else line.row.username.lower()
        if line.row.role == Role.INSTRUCTOR:
            after.add(key)
        else:
            after.discard(key)
    return not after


def _save_line(course: Course, line: Planned, result: RosterResult, actor) -> None:
    row, user = line.row, line.user
    if user is None:
        user = get_user_model()(
            username=row.username, email=row.email, first_name=row.first_name, last_name=row.last_name
        )
        user.set_unusable_password()
        user.save()
        result.created_users.append(row.username)
        result.new_accounts.append(user)
    result.notes += [f"{user.get_username()}: {note}." for note in line.notes]
    if line.set_cluster_username:
        try:
            set_cluster_username(user, row.cluster_username, source=IdentitySource.ROSTER, actor=actor)
        except ValidationError as exc:
            result.errors.append(f"Line {row.line}: {exc.messages[0]}")
    if line.outcome in (NEW, ENROL):
        roster_changes.enroll(course, user, row.role, actor=actor)
        result.enrolled.append(row.username)
        if line.outcome == ENROL:
            result.existing.append(user.get_username())
    elif line.outcome == ROLE:
        assert line.enrollment is not None  # a role changes only for someone planned as enrolled already
        roster_changes.set_role(course, line.enrollment, row.role, actor=actor, keep_an_instructor=False)
        result.role_changed.append(row.username)
    else:
        result.unchanged.append(row.username)
