"""Changing a lab students may be working through: sections and steps added, moved, changed and removed, keeping
what the portal remembers of each student's progress wherever the step still exists.

Progress is computed from the student's runs, answers and what their logs were found to hold (labs/progress.py), so:
- a step keeps its identity (its row) through a change of text, order or section: its answers and log findings stay;
- a changed check reads the runs already made again: a log check whose text changed forgets what logs were found to
  hold (they are read again for the new text), and a choice answer whose correct choice changed is marked again;
- a removed step takes its answers and log findings with it; the students' runs stay in their job lists, and the
  lab's count of steps no longer counts it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import Max

from jobs.models import Job

from .models import Answer, Lab, LogMatch, Section, Step
from .progress import State, class_progress, counts_for, steps_of
from .specs import CheckKind

STEP_FIELDS = ("title", "instructions", "template", "preset", "fixed", "check_spec", "quick_fixes")


def save_step(step: Step, fields: dict[str, Any]) -> Step:
    """Save the step with `fields` (STEP_FIELDS), reconciling what was remembered of the students' progress with the
    new check."""
    before = dict(step.check_spec or {}) if step.pk else {}
    for name, value in fields.items():
        setattr(step, name, value)
    with transaction.atomic():
        step.save()
        _reconcile(step, before, dict(step.check_spec or {}))
    return step


def _reconcile(step: Step, before: dict, after: dict) -> None:
    if before.get("pattern") != after.get("pattern") or after.get("kind") != CheckKind.LOG:
        LogMatch.objects.filter(step=step).delete()  # found for another text: read the logs again
    choices_changed = (before.get("choices"), before.get("correct")) != (after.get("choices"), after.get("correct"))
    if after.get("kind") == CheckKind.ANSWER and "choices" in after and choices_changed:
        for answer in Answer.objects.filter(step=step):
            Answer.objects.filter(pk=answer.pk).update(accepted=answer.text == after["correct"], marked_by=None)


def _next_position(rows) -> int:
    return (rows.aggregate(top=Max("position"))["top"] or 0) + 1


def add_section(lab: Lab, title: str, minutes: int) -> Section:
    return Section.objects.create(lab=lab, position=_next_position(lab.sections), title=title, planned_minutes=minutes)


def add_step(section: Section, fields: dict[str, Any]) -> Step:
    with transaction.atomic():
        step = Step(section=section, position=_next_position(section.steps))
        return save_step(step, fields)


def move_step_to(step: Step, section: Section) -> None:
    """Put the step last in another section of the same lab; the one it left closes ranks."""
    if step.section_id == section.pk:
        return
    with transaction.atomic():
        left = step.section
        step.section, step.position = section, _next_position(section.steps)
        step.save(update_fields=["section", "position"])
        _close_ranks(left.steps.order_by("position"))


def move(row: Section | Step, by: int) -> bool:
    """Swap a section (within its lab) or a step (within its section) with its neighbour above (by=-1) or below
    (by=1). False when it is already first or last."""
    siblings = row.lab.sections if isinstance(row, Section) else row.section.steps
    ordered: list[Any] = list(siblings.order_by("position"))
    index = next(i for i, other in enumerate(ordered) if other.pk == row.pk)
    if not 0 <= index + by < len(ordered):
        return False
    other = ordered[index + by]
    with transaction.atomic():
        # Positions are unique, so one of the two waits on a free place while the other takes its own.
        parked, mine, theirs = _next_position(siblings), row.position, other.position
        type(row).objects.filter(pk=row.pk).update(position=parked)
        type(row).objects.filter(pk=other.pk).update(position=mine)
        type(row).objects.filter(pk=row.pk).update(position=theirs)
    return True


def _close_ranks(rows) -> None:
    """Number the rows 1, 2, … in their order (ascending, so each moves into a place already freed)."""
    for position, row in enumerate(rows, start=1):
        if row.position != position:
            type(row).objects.filter(pk=row.pk).update(position=position)


def remove_step(step: Step) -> None:
    with transaction.atomic():
        section = step.section
        step.delete()
        _close_ranks(section.steps.order_by("position"))


def remove_section(section: Section) -> None:
    with transaction.atomic():
        lab = section.lab
        section.delete()
        _close_ranks(lab.sections.order_by("position"))


@dataclass
class Stake:
    """What the students have in some steps: how many started (a run, or an answer), how many finished."""

    started: int = 0
    done: int = 0
    answers: int = 0

    @property
    def any(self) -> bool:
        return bool(self.started or self.answers)


def stake_in(lab: Lab, steps: list[Step], students) -> Stake:
    """How many students have progress on any of `steps`, read from the same progress the lab page shows."""
    ids = {step.pk for step in steps}
    stake = Stake(answers=Answer.objects.filter(step__in=steps).count())
    for cells in class_progress(lab, students).values():
        mine = [cell for cell in cells if cell.step.pk in ids]
        if any(cell.jobs or cell.answer for cell in mine):
            stake.started += 1
        if mine and any(cell.state == State.DONE for cell in mine):
            stake.done += 1
    return stake


def stakes_by_step(lab: Lab, students) -> dict[int, int]:
    """For each step, how many students have progress on it: a run that counts for it, or an answer. Read from the
    runs' rows and the answers only (no log is read, no figure computed): the editor lists it beside every step."""
    steps = steps_of(lab)
    ids = list(students.values_list("pk", flat=True))
    templates = {step.template_id for step in steps if step.template_id}
    runs = Job.objects.filter(course_id=lab.course_id, owner_id__in=ids, template_id__in=templates)
    people: dict[int, set[int]] = {step.pk: set() for step in steps}
    for job in runs.only("owner_id", "template_id", "params"):
        for step in steps:
            if counts_for(step, job):
                people[step.pk].add(job.owner_id)
    for step_id, student_id in Answer.objects.filter(step__in=steps, student_id__in=ids).values_list(
        "step_id", "student_id"
    ):
        people[step_id].add(student_id)
    return {step_id: len(who) for step_id, who in people.items() if who}
