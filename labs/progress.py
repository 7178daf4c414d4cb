"""Where each student stands in a lab, computed from what the portal records: their jobs in the course (launched from
the lab page or the catalog alike), what telemetry stored when a run ended, what was found in logs, their answers.
The student's page, the instructor's grid, the CSV and the API all read this one answer."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

from core.choices import ACTIVE_STATES, JobState
from jobs.models import Job

from . import log_checks
from .figures import figure_of
from .models import Answer, FigureReading, Lab, LogMatch, Step
from .specs import FAILED_STATES, Bound, CheckKind, Figure


class State:
    NONE = "none"  # a step to read: nothing to check
    NOT_STARTED = "not_started"
    RUNNING = "running"
    WAITING = "waiting"  # an answer waiting for an instructor's mark
    DONE = "done"
    FAILED = "failed"

    LABELS = {
        NONE: "To read",
        NOT_STARTED: "Not started",
        RUNNING: "Running",
        WAITING: "Waiting for a mark",
        DONE: "Done ✓",
        FAILED: "Failed",
    }


@dataclass
class StepProgress:
    step: Step
    state: str = State.NOT_STARTED
    jobs: list[Job] = field(default_factory=list)  # newest first
    done_at: datetime | None = None
    evidence: Job | None = None  # the run that satisfied the check
    figure: float | None = None  # the value a figure check read
    why: str = ""  # why a tried step is not done, in words
    quick_fix: str = ""
    answer: Answer | None = None
    flags: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        return State.LABELS[self.state]

    @property
    def latest(self) -> Job | None:
        return self.jobs[0] if self.jobs else None


def steps_of(lab: Lab) -> list[Step]:
    return list(
        Step.objects.filter(section__lab=lab)
        .select_related("section", "template")
        .order_by("section__position", "position")
    )


def counts_for(step: Step, job: Job) -> bool:
    """A job is a run of the step when it is of the step's template and keeps the step's fixed values."""
    if step.template_id is None or job.template_id != step.template_id:
        return False
    return all(job.params.get(name) == step.preset.get(name) for name in step.fixed)


class _Evaluator:
    def __init__(self, lab: Lab, steps: list[Step], student_ids: Iterable[int], *, read_logs: bool):
        self.steps, self.read_logs = steps, read_logs
        templates = {s.template_id for s in steps if s.template_id}
        ids = list(student_ids)
        jobs = (
            Job.objects.filter(course_id=lab.course_id, owner_id__in=ids, template_id__in=templates)
            .select_related("summary", "idle_warning", "template", "cluster", "account")
            .defer("script")
            .order_by("-created_at")
        )
        self.jobs: dict[int, list[Job]] = defaultdict(list)
        for job in jobs:
            self.jobs[job.owner_id].append(job)
        self.matches = {(m.step_id, m.job_id): m for m in LogMatch.objects.filter(step__in=steps, job__in=jobs)}
        self.answers = {(a.step_id, a.student_id): a for a in Answer.objects.filter(step__in=steps, student_id__in=ids)}
        figures = {s.check_spec.get("figure") for s in steps if s.check_spec.get("kind") == CheckKind.FIGURE}
        readings = FigureReading.objects.filter(job__in=jobs, figure__in=figures) if figures else []
        self.figures = {(r.job_id, r.figure): r for r in readings}

    def student(self, student_id: int) -> list[StepProgress]:
        mine = self.jobs.get(student_id, [])
        return [self.step(step, [j for j in mine if counts_for(step, j)], student_id) for step in self.steps]

    def step(self, step: Step, jobs: list[Job], student_id: int) -> StepProgress:
        progress = StepProgress(step=step, jobs=jobs)
        check = step.check_spec or {}
        if check.get("kind") == CheckKind.ANSWER:
            return self._answer(progress, self.answers.get((step.pk, student_id)), check)
        if not jobs:
            progress.state = State.NOT_STARTED if step.template_id else State.NONE
            return progress
        if self._done(progress, check):
            progress.state = State.DONE
            return progress
        latest = jobs[0]
        if latest.state in ACTIVE_STATES:
            progress.state = State.RUNNING
        elif latest.state in FAILED_STATES or progress.why:
            progress.state = State.FAILED
        else:
            progress.state = State.RUNNING  # completed, and the check is still being read
        progress.quick_fix = self._quick_fix(step, latest)
        return progress

    def _done(self, progress: StepProgress, check: dict) -> bool:
        kind = check.get("kind", CheckKind.COMPLETED)
        completed = [j for j in progress.jobs if j.state == JobState.COMPLETED]
        if kind == CheckKind.COMPLETED:
            return self._by(progress, completed[-1] if completed else None)
        if kind == CheckKind.LOG:
            # A run that printed the line counts while it runs or once it completed; one that then failed does not.
            found = [
                j
                for j in reversed(progress.jobs)
                if j.state not in FAILED_STATES
                and log_checks.matched(progress.step, j, check["pattern"], self.matches, running=self.read_logs)
            ]
            read = [self.matches.get((progress.step.pk, j.pk)) for j in completed]
            if not found and completed and all(read):  # every completed run's whole log was read
                progress.why = f"Your run's log does not show “{check['pattern']}”."
            if found:
                row = self.matches.get((progress.step.pk, found[0].pk))
                return self._by(progress, found[0], at=row.found_at if row else None)
            return False
        if kind == CheckKind.FIGURE:
            return self._figure(progress, completed, check)
        if kind == CheckKind.DIFFERS:
            name = check["parameter"]
            for later in completed:
                for earlier in completed:
                    if later.created_at > earlier.created_at and later.params.get(name) != earlier.params.get(name):
                        return self._by(progress, later)
            if completed:
                progress.why = f"Run it again with another {name} and compare."
        return False

    def _figure(self, progress: StepProgress, completed: list[Job], check: dict) -> bool:
        label = Figure(check["figure"]).label
        for job in reversed(completed):
            value = figure_of(job, check["figure"], self.figures)
            if value is None:
                continue
            progress.figure = value
            crossed = value >= check["value"] if check["bound"] == Bound.AT_LEAST else value <= check["value"]
            if crossed:
                return self._by(progress, job)
            sign = Bound(check["bound"]).label
            progress.why = f"Your run's {label} was {value:.4g}; the step asks for {sign} {check['value']:g}."
        if completed and progress.figure is None:
            progress.why = f"Your run recorded no {label}."
        return False

    @staticmethod
    def _by(progress: StepProgress, job: Job | None, at: datetime | None = None) -> bool:
        if job is None:
            return False
        progress.evidence, progress.done_at = job, at or job.finished_at or job.updated_at
        return True

    @staticmethod
    def _answer(progress: StepProgress, answer: Answer | None, check: dict) -> StepProgress:
        progress.answer = answer
        if answer is None:
            progress.state = State.NOT_STARTED
        elif answer.accepted:
            progress.state, progress.done_at = State.DONE, answer.answered_at
        elif answer.accepted is None and "choices" not in check:
            progress.state = State.WAITING
        else:
            progress.state, progress.why = State.FAILED, "Not quite: think again and answer once more."
        return progress

    def _quick_fix(self, step: Step, job: Job) -> str:
        """The first of the step's quick fixes whose conditions all hold for the student's latest run."""
        said = " ".join((job.scheduler_reason, job.never_starts_reason, job.error))
        for fix in step.quick_fixes or []:
            if fix.get("states") and job.state not in fix["states"]:
                continue
            if fix.get("reason") and fix["reason"] not in said:
                continue
            if fix.get("log") and not (self.read_logs and log_checks.log_holds(job, fix["log"])):
                continue
            return fix["text"]
        return ""


def student_progress(lab: Lab, student, *, read_logs: bool = True) -> list[StepProgress]:
    """One student's progress, step by step; read_logs: look in their running runs' logs for what a check waits
    for (an ended run's log is read once in any case, and what it held remembered)."""
    steps = steps_of(lab)
    return _Evaluator(lab, steps, [student.pk], read_logs=read_logs).student(student.pk)


def class_progress(lab: Lab, students: Iterable, *, read_logs: bool = False) -> dict[int, list[StepProgress]]:
    """Every student's progress in a few queries; logs are read only for what was not found before when asked."""
    steps = steps_of(lab)
    people = list(students)
    evaluator = _Evaluator(lab, steps, [p.pk for p in people], read_logs=read_logs)
    return {p.pk: evaluator.student(p.pk) for p in people}
