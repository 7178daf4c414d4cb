"""A course keeps an instructor when two instructors demote or remove each other at the same moment (PostgreSQL
row locks, real threads)."""

import threading
from functools import partial

from django.db import connection

from courses import roster_changes
from courses.models import Enrollment, Role


def _at_once(*actions) -> list[str]:
    barrier = threading.Barrier(len(actions))
    outcomes: list[str] = []

    def run(action):
        try:
            barrier.wait()
            action()
            outcomes.append("done")
        except roster_changes.LastInstructor:
            outcomes.append("refused")
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(action,)) for action in actions]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return sorted(outcomes)


def test_two_instructors_stepping_each_other_down_at_once_leave_one(services, course, instructor, make_user):
    assert connection.vendor == "postgresql"
    other = make_user("ivan")
    for _ in range(5):
        for user in (instructor, other):
            Enrollment.objects.update_or_create(course=course, user=user, defaults={"role": Role.INSTRUCTOR})
        mine, theirs = (Enrollment.objects.get(course=course, user=u) for u in (instructor, other))
        outcomes = _at_once(
            partial(roster_changes.set_role, course, theirs, Role.STUDENT, actor=instructor),
            partial(roster_changes.remove, course, mine, actor=other),
        )
        assert outcomes == ["done", "refused"]
        assert Enrollment.objects.filter(course=course, role=Role.INSTRUCTOR).count() == 1
