"""Course rosters kept in step with campus groups (LDAP groups, values of an OIDC groups claim).

`sync_memberships(user, source, groups)` is the one place that applies a person's current groups to every course
that names a group of that source: members are enrolled with the group's role (the highest when several groups of
one course match), people who left every such group are unenrolled — but only from enrollments group sync made,
never from ones an instructor or the roster import made, and never a course's last instructor. Changes go through
the roster service (`courses/roster_changes.py`, listed on the roster page as made by "campus group sync") and are
also kept as `GroupSyncChange` rows with the groups and how the sync ran (sign-in or command).
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Iterable

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from courses import roster_changes
from courses.models import Course, Enrollment, Role

from .models import CourseGroup, GroupEnrollment, GroupSyncChange, Source, SyncAction

log = logging.getLogger(__name__)
ACTOR = "campus group sync"  # who the roster page's changes list says made them

# "sign-in" unless the sync_course_groups command is running the sync.
current_via: contextvars.ContextVar[str] = contextvars.ContextVar("signon_sync_via", default="sign-in")


def _rank(role: str) -> int:
    ranks: dict[str, int] = {Role.STUDENT: 0, Role.INSTRUCTOR: 2}
    return ranks.get(role, 1)  # any other role (a TA) sits between


def wanted_roles(source: str, groups: Iterable[str]) -> tuple[dict[int, str], dict[int, list[str]], set[int]]:
    """For each course naming a group of this source: the role the groups give (if any), the matching groups."""
    groups = set(groups)
    roles: dict[int, str] = {}
    matched: dict[int, list[str]] = {}
    linked: set[int] = set()
    # A course whose term has ended keeps its roster as it was: leaving a group must not take a student's history.
    for link in CourseGroup.objects.filter(source=source).exclude(course__term_ends_at__lte=timezone.now()):
        linked.add(link.course_id)
        if link.group in groups:
            matched.setdefault(link.course_id, []).append(link.group)
            if link.course_id not in roles or _rank(link.role) > _rank(roles[link.course_id]):
                roles[link.course_id] = link.role
    return roles, matched, linked


def sync_memberships(user, source: Source | str, groups: Iterable[str]) -> list[GroupSyncChange]:
    """Apply the user's current campus groups of `source` to the linked courses; returns the audit rows written."""
    roles, matched, linked = wanted_roles(source, groups)
    if not linked:
        return []
    changes: list[GroupSyncChange] = []
    with transaction.atomic():
        # One sync per person at a time: two sign-ins at once must not enroll twice.
        get_user_model().objects.select_for_update().filter(pk=user.pk).first()
        courses = Course.objects.in_bulk(linked)
        enrollments = {e.course_id: e for e in Enrollment.objects.filter(user=user, course_id__in=linked)}
        made_by_sync = set(
            GroupEnrollment.objects.filter(user=user, course_id__in=linked, source=source).values_list(
                "course_id", flat=True
            )
        )

        def audit(course_id: int, action: str, old: str = "", new: str = "") -> None:
            change = GroupSyncChange(
                course_id=course_id,
                user=user,
                username=user.get_username(),
                action=action,
                source=source,
                groups=", ".join(sorted(matched.get(course_id, []))),
                old_role=old,
                new_role=new,
                via=current_via.get(),
            )
            changes.append(change)

        for course_id in sorted(linked):
            course, role, enrollment = courses[course_id], roles.get(course_id), enrollments.get(course_id)
            try:
                # Through the roster service, so the roster page's changes list these too.
                if role and enrollment is None:
                    roster_changes.enroll(course, user, role, actor=ACTOR)
                    GroupEnrollment.objects.get_or_create(course=course, user=user, defaults={"source": source})
                    audit(course_id, SyncAction.ENROLLED, new=role)
                elif role and course_id in made_by_sync and enrollment is not None and enrollment.role != role:
                    old_role = enrollment.role
                    roster_changes.set_role(course, enrollment, role, actor=ACTOR)
                    audit(course_id, SyncAction.ROLE_CHANGED, old=old_role, new=role)
                elif role is None and course_id in made_by_sync:
                    if enrollment is not None:
                        roster_changes.remove(course, enrollment, actor=ACTOR)
                        audit(course_id, SyncAction.REMOVED, old=enrollment.role)
                    GroupEnrollment.objects.filter(course=course, user=user).delete()
            except roster_changes.LastInstructor as exc:  # the course keeps its last instructor, group or not
                log.warning("campus group sync left %s in %s: %s", user.get_username(), course.slug, exc)
        GroupSyncChange.objects.bulk_create(changes)
    return changes
