"""A course's lab: sections with planned minutes, made of steps. A step's launch preset, check and quick fixes are
plain data an instructor fills in (validated by labs/specs.py), never code; progress is computed from what the portal
records (labs/progress.py), so a step done from the catalog counts as much as one launched from the lab page."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class Lab(models.Model):
    course = models.ForeignKey("courses.Course", on_delete=models.CASCADE, related_name="labs")
    slug = models.SlugField(help_text="Short name in the lab's URL, unique within the course.")
    title = models.CharField(max_length=200)
    summary = models.TextField(blank=True, help_text="What the lab is about, in Markdown.")
    builtin = models.CharField(
        max_length=64, blank=True, editable=False, help_text="The built-in lab it was loaded from, if any."
    )
    lab_session = models.ForeignKey(
        "courses.LabSession",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="labs",
        help_text="The booked lab session it runs in: its page then shows the countdown.",
    )
    stuck_after_minutes = models.PositiveIntegerField(
        "stuck after (minutes)", default=15, help_text="A step's job waiting longer than this is flagged on the grid."
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["course", "title"]
        constraints = [models.UniqueConstraint(fields=["course", "slug"], name="lab_slug_once_per_course")]

    def __str__(self) -> str:
        return self.title

    @property
    def planned_minutes(self) -> int:
        return sum(section.planned_minutes for section in self.sections.all())


class Section(models.Model):
    lab = models.ForeignKey(Lab, on_delete=models.CASCADE, related_name="sections")
    position = models.PositiveIntegerField()
    title = models.CharField(max_length=200)
    planned_minutes = models.PositiveIntegerField(help_text="How long the plan gives it.")

    class Meta:
        ordering = ["lab", "position"]
        constraints = [models.UniqueConstraint(fields=["lab", "position"], name="section_position_once_per_lab")]

    def __str__(self) -> str:
        return self.title


class Step(models.Model):
    section = models.ForeignKey(Section, on_delete=models.CASCADE, related_name="steps")
    position = models.PositiveIntegerField()
    title = models.CharField(max_length=200)
    instructions = models.TextField(blank=True, help_text="Markdown; rendered sanitized (labs/markdown.py).")
    template = models.ForeignKey(
        "jobs.JobTemplate",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="lab_steps",
        help_text="The template the step launches, if it launches one.",
    )
    preset = models.JSONField(default=dict, blank=True, help_text="Values the launch form opens with.")
    fixed = models.JSONField(
        default=list, blank=True, help_text="Names of preset values the student may not change for this step."
    )
    check_spec = models.JSONField(
        "check", default=dict, blank=True, help_text="When the step is done, as data (labs/specs.py); {} for none."
    )
    quick_fixes = models.JSONField(default=list, blank=True, help_text="What to tell a student whose run failed.")

    class Meta:
        ordering = ["section", "position"]
        constraints = [models.UniqueConstraint(fields=["section", "position"], name="step_position_once_per_section")]

    def __str__(self) -> str:
        return self.title


class Answer(models.Model):
    """A student's short answer to a step whose check is an answer: a choice (checked at once) or text an instructor
    marks."""

    step = models.ForeignKey(Step, on_delete=models.CASCADE, related_name="answers")
    student = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="lab_answers")
    text = models.TextField(max_length=2000)
    accepted = models.BooleanField(null=True, blank=True, help_text="Empty: not marked yet.")
    marked_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    answered_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["step", "student"], name="one_answer_per_student_step")]

    def __str__(self) -> str:
        return f"{self.student} on {self.step}"


class LogMatch(models.Model):
    """What reading a job's log for a step's pattern found: found (when first seen), or not found in an ended job's
    whole log. Either way the log is never read again for that step."""

    step = models.ForeignKey(Step, on_delete=models.CASCADE, related_name="log_matches")
    job = models.ForeignKey("jobs.Job", on_delete=models.CASCADE, related_name="lab_log_matches")
    found = models.BooleanField(default=True)
    found_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["step", "job"], name="log_match_once_per_step_job")]

    def __str__(self) -> str:
        return f"{self.step} in {self.job_id}: {'found' if self.found else 'not found'}"


class FigureReading(models.Model):
    """A figure a check read from an ended run's stored telemetry, kept once the run's summary was written (after
    that its series no longer change), so a page of sixty students does not read sixty runs' series again."""

    job = models.ForeignKey("jobs.Job", on_delete=models.CASCADE, related_name="lab_figures")
    figure = models.CharField(max_length=32)
    value = models.FloatField(null=True, blank=True, help_text="Empty: the run recorded none.")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["job", "figure"], name="figure_reading_once_per_job")]

    def __str__(self) -> str:
        return f"{self.figure} of {self.job_id}: {self.value}"


class Note(models.Model):
    """An instructor's note on a lab page: to the whole class (student empty) or to one student."""

    lab = models.ForeignKey(Lab, on_delete=models.CASCADE, related_name="notes")
    student = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE, related_name="lab_notes"
    )
    author = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    text = models.TextField(max_length=2000)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.text[:60]
