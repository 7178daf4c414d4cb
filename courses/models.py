from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import F, Q

from core.course_choices import Role

# Roles that see and cancel every job of the course; only instructors manage its roster.
TEACHING_ROLES = (Role.INSTRUCTOR, Role.TA)


class BudgetPeriod(models.TextChoices):
    WEEK = "week", "Per week (resets Monday 00:00)"
    TERM = "term", "Per term"


class Course(models.Model):
    slug = models.SlugField(unique=True, help_text="Short name used in URLs and the API, e.g. hpc-2026.")
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    clusters = models.ManyToManyField("clusters.Cluster", blank=True, related_name="courses")
    max_concurrent_jobs = models.PositiveIntegerField(
        "max concurrent jobs per student", default=4, help_text="Jobs that are not finished yet, per student."
    )
    max_gpus = models.PositiveIntegerField(
        "max GPUs per student", default=4, help_text="GPUs held at once by one student's unfinished jobs."
    )
    # What each kind of cluster keeps of the course ({kind name: settings}; clusters/kind_settings.py): Kubernetes'
    # namespaces and their quotas, its Kueue queue. The kind declares, validates and reads them.
    kind_settings = models.JSONField("kinds' settings", default=dict, db_default={}, blank=True, editable=False)
    # The term (courses/terms.py): students launch only between these; from the end on the course is read-only.
    # Both empty: no term, always open (courses made before terms existed).
    term_starts_at = models.DateTimeField("term starts", null=True, blank=True)
    term_ends_at = models.DateTimeField(
        "term ends",
        null=True,
        blank=True,
        help_text="Running jobs are stopped then and the course becomes read-only; pages and reports stay.",
    )
    # GPU-hour budgets (courses/budgets.py): empty means no budget of that kind.
    budget_period = models.CharField(
        "student budget period", max_length=8, choices=BudgetPeriod.choices, default=BudgetPeriod.WEEK
    )
    student_gpu_hours = models.DecimalField(
        "GPU-hours per student",
        max_digits=9,
        decimal_places=2,
        null=True,
        blank=True,
        help_text="Per period; empty: no per-student budget.",
    )
    course_gpu_hours = models.DecimalField(
        "GPU-hours for the whole course",
        max_digits=9,
        decimal_places=2,
        null=True,
        blank=True,
        help_text="Over the term; empty: no course budget.",
    )
    budget_grace_minutes = models.PositiveIntegerField(
        "grace before stopping", default=10, help_text="Running jobs are stopped this long after a budget runs out."
    )
    # Idle reaping (telemetry/idle_reaping.py): a running job's GPUs below idle_util_below % for idle_warn_minutes
    # are warned about, and the job is cancelled idle_cancel_minutes later unless someone keeps it. Empty: no rule.
    idle_util_below = models.PositiveSmallIntegerField(
        "idle below (% GPU utilization)", null=True, blank=True, help_text="Empty: idle GPUs are not reaped."
    )
    idle_warn_minutes = models.PositiveIntegerField("warn after idle (minutes)", default=30)
    idle_cancel_minutes = models.PositiveIntegerField("cancel after the warning (minutes)", default=15)
    # Interactive sessions (JupyterLab; sessions/idle_sessions.py) have their own rule: no kernel activity and idle
    # GPUs for this long ends the session. Empty: sessions run to their time limit.
    session_idle_minutes = models.PositiveIntegerField(
        "end idle sessions after (minutes)",
        null=True,
        blank=True,
        help_text="JupyterLab with no kernel activity and idle GPUs this long is ended. Empty: never.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    # Not columns: what the launch catalog sets on each course it lists (jobs.access.template_catalog, jobs.views).
    launchable: list[Any]  # its published templates that an enabled cluster of the course can run
    teaches: bool
    manages: bool  # may change the course (its instructors and admins), as against a TA who only teaches it
    launch_refusal: str | None
    lab_session: "LabSession | None"

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(
                condition=Q(term_starts_at__isnull=True, term_ends_at__isnull=True)
                | Q(term_starts_at__isnull=False, term_ends_at__isnull=False, term_ends_at__gt=F("term_starts_at")),
                name="course_term_ends_after_start",
                violation_error_message="A term needs both a start and an end, and the end must come after the start.",
            )
        ]

    def __str__(self) -> str:
        return self.name

    def clean(self):
        super().clean()
        start, end = self.term_starts_at, self.term_ends_at
        if (start is None) != (end is None):
            missing = "term_ends_at" if end is None else "term_starts_at"
            raise ValidationError({missing: "Give both the start and the end of the term, or neither."})
        if start and end and end <= start:
            raise ValidationError({"term_ends_at": "The term must end after it starts."})


class Enrollment(models.Model):
    course = models.ForeignKey(Course, on_delete=models.CASCADE, related_name="enrollments")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="enrollments")
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.STUDENT)
    created_at = models.DateTimeField(auto_now_add=True)
    # Not columns: what a page sets on the enrollments it lists.
    active: int  # the student's unfinished jobs, counted for the course's jobs page (jobs.views)
    invitation: "Invitation | None"  # their latest invitation, for those not signed in yet (invitations.py)
    pending: bool  # not signed in yet (the roster page)

    class Meta:
        ordering = ["course", "user__username"]
        constraints = [models.UniqueConstraint(fields=["course", "user"], name="enrollment_unique_course_user")]

    def __str__(self) -> str:
        return f"{self.user} in {self.course} ({self.get_role_display()})"


class QuotaField(models.TextChoices):
    """The per-student limits an instructor may change, course-wide or for one student."""

    MAX_CONCURRENT_JOBS = "max_concurrent_jobs", "Unfinished jobs at a time"
    MAX_GPUS = "max_gpus", "GPUs held at once"


class QuotaOverride(models.Model):
    """One student's own limits in one course; an empty field means the course's limit."""

    course = models.ForeignKey(Course, on_delete=models.CASCADE, related_name="quota_overrides")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="quota_overrides")
    max_concurrent_jobs = models.PositiveIntegerField("max concurrent jobs", null=True, blank=True)
    max_gpus = models.PositiveIntegerField("max GPUs", null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["course", "user"], name="quotaoverride_unique_course_user")]

    def __str__(self) -> str:
        return f"{self.user} in {self.course}"


class QuotaChange(models.Model):
    """The audit of quotas: who changed which limit, for the course or one student, from what to what, and when."""

    course = models.ForeignKey(Course, on_delete=models.CASCADE, related_name="quota_changes")
    student = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="+",
        help_text="Empty: the course's limit for every student.",
    )
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    actor_username = models.CharField("changed by", max_length=150)  # kept if the account is deleted
    field = models.CharField(max_length=32, choices=QuotaField.choices)
    old_value = models.PositiveIntegerField(null=True, blank=True, help_text="Empty: the course's limit applied.")
    new_value = models.PositiveIntegerField(null=True, blank=True, help_text="Empty: the course's limit applies.")
    at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-at", "-pk"]
        indexes = [models.Index(fields=["course", "-at"], name="quotachange_course_at")]

    def __str__(self) -> str:
        return f"{self.get_field_display()} {self.old_value}→{self.new_value} by {self.actor_username}"


class TermNotice(models.Model):
    """A term message to one person. The row is written before the mail is queued, under a unique constraint, so
    the beat task queues each message once however often or late it runs; the mail task (workers/mail.py) retries
    a relay that is down. A moved end is a new notice."""

    class Kind(models.TextChoices):
        ENDING_SOON = "ending_soon", "Term ends within a week (instructors)"
        JOBS_WILL_STOP = "jobs_will_stop", "Running jobs will be stopped (students)"

    course = models.ForeignKey(Course, on_delete=models.CASCADE, related_name="term_notices")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=32, choices=Kind.choices)
    term_ends_at = models.DateTimeField(help_text="The end the notice announced.")
    sent_at = models.DateTimeField("recorded", auto_now_add=True, help_text="When the mail was queued.")
    mailed_at = models.DateTimeField("mailed", null=True, blank=True, help_text="When the relay accepted it.")

    class Meta:
        ordering = ["-sent_at"]
        constraints = [
            models.UniqueConstraint(fields=["course", "user", "kind", "term_ends_at"], name="termnotice_once")
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} to {self.user} ({self.course})"


class RosterAction(models.TextChoices):
    ENROLLED = "enrolled", "Enrolled"
    ROLE_CHANGED = "role", "Role changed"
    REMOVED = "removed", "Removed"


class RosterChange(models.Model):
    """The audit of a course's roster: who enrolled, removed or changed the role of whom, from what to what, when."""

    course = models.ForeignKey(Course, on_delete=models.CASCADE, related_name="roster_changes")
    person = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    person_username = models.CharField("person", max_length=150)  # kept if the account is deleted
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    actor_username = models.CharField("changed by", max_length=150)
    action = models.CharField(max_length=16, choices=RosterAction.choices)
    old_role = models.CharField(max_length=16, choices=Role.choices, blank=True)
    new_role = models.CharField(max_length=16, choices=Role.choices, blank=True)
    at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-at", "-pk"]
        indexes = [models.Index(fields=["course", "-at"], name="rosterchange_course_at")]

    def __str__(self) -> str:
        return f"{self.get_action_display()} {self.person_username} by {self.actor_username}"


class Invitation(models.Model):
    """One invitation mail to set a password: queued by the roster, marked sent by the mail task."""

    course = models.ForeignKey(Course, on_delete=models.CASCADE, related_name="invitations")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="invitations")
    invited_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField("queued at", auto_now_add=True)
    sent_at = models.DateTimeField("sent at", null=True, blank=True)
    refused = models.CharField(
        "refused by the mail relay",
        max_length=300,
        blank=True,
        help_text="The relay's answer when it refused the mail.",
    )

    class Meta:
        ordering = ["-created_at", "-pk"]
        indexes = [models.Index(fields=["course", "user", "-created_at"], name="invitation_course_user_at")]

    def __str__(self) -> str:
        return f"Invitation of {self.user} to {self.course}"


class BudgetChange(models.Model):
    """The audit of GPU-hour budgets: a course setting changed, or a student topped up for one period."""

    class What(models.TextChoices):
        STUDENT_GPU_HOURS = "student_gpu_hours", "GPU-hours per student"
        COURSE_GPU_HOURS = "course_gpu_hours", "GPU-hours for the course"
        GRACE = "budget_grace_minutes", "Grace before stopping (minutes)"
        PERIOD = "budget_period", "Student budget period"
        TOP_UP = "top_up", "Top-up (GPU-hours)"
        IDLE_BELOW = "idle_util_below", "Idle below (% GPU utilization)"
        IDLE_WARN = "idle_warn_minutes", "Warn after idle (minutes)"
        IDLE_CANCEL = "idle_cancel_minutes", "Cancel after the warning (minutes)"
        SESSION_IDLE = "session_idle_minutes", "End idle sessions after (minutes)"

    course = models.ForeignKey(Course, on_delete=models.CASCADE, related_name="budget_changes")
    student = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    actor_username = models.CharField("changed by", max_length=150)  # kept if the account is deleted
    what = models.CharField(max_length=32, choices=What.choices)
    old_value = models.CharField(max_length=16, blank=True, help_text="Empty: none.")
    new_value = models.CharField(max_length=16, blank=True, help_text="Empty: none.")
    hours = models.DecimalField("top-up GPU-hours", max_digits=9, decimal_places=2, default=0)
    period_start = models.DateTimeField(null=True, blank=True, help_text="Top-ups: the period they add to.")
    reason = models.CharField(max_length=200, blank=True)
    at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-at", "-pk"]
        indexes = [
            models.Index(fields=["course", "-at"], name="budgetchange_course_at"),
            models.Index(fields=["course", "period_start"], name="budgetchange_course_period"),
        ]

    def __str__(self) -> str:
        return f"{self.get_what_display()} {self.old_value}→{self.new_value} by {self.actor_username}"


class BudgetOverrun(models.Model):
    """A budget found used up: when, so running jobs are stopped after the course's grace. One row per budget and
    period (student empty: the course total); deleted when a top-up or a raised budget leaves hours again."""

    course = models.ForeignKey(Course, on_delete=models.CASCADE, related_name="budget_overruns")
    student = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    period_start = models.DateTimeField()
    since = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["course", "student", "period_start"],
                nulls_distinct=False,
                name="budgetoverrun_once",
            )
        ]

    def __str__(self) -> str:
        return f"budget of {self.student or 'the course'} in {self.course} used up since {self.since:%Y-%m-%d %H:%M}"


class BudgetNotice(models.Model):
    """A budget warning (80 %, 95 %) given once per student, period and level; written before it is sent."""

    course = models.ForeignKey(Course, on_delete=models.CASCADE, related_name="budget_notices")
    student = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    period_start = models.DateTimeField()
    level = models.PositiveSmallIntegerField()
    at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["course", "student", "period_start", "level"], name="budgetnotice_once")
        ]

    def __str__(self) -> str:
        return f"{self.level} % notice to {self.student} in {self.course}"


class LabSessionState(models.TextChoices):
    BOOKED = "booked", "Booked"  # the reservation is being made on the cluster
    HELD = "held", "Held"  # the cluster holds the GPUs for the session
    REFUSED = "refused", "Refused by the cluster"
    CANCELLED = "cancelled", "Cancelled"
    ENDED = "ended", "Ended"


# A session in these states holds (or is about to hold) GPUs: it counts against overlaps and its jobs go into it.
LIVE_LAB_SESSION_STATES = (LabSessionState.BOOKED, LabSessionState.HELD)


class LabSession(models.Model):
    """GPUs booked by an instructor for a live lab: on the cluster a SLURM reservation named `reservation_name` for the
    course's users (courses/lab_sessions.py makes and removes it; moves are conditional and audited)."""

    course = models.ForeignKey(Course, on_delete=models.CASCADE, related_name="lab_sessions")
    cluster = models.ForeignKey("clusters.Cluster", on_delete=models.CASCADE, related_name="lab_sessions")
    starts_at = models.DateTimeField("starts")
    ends_at = models.DateTimeField("ends")
    gpus = models.PositiveSmallIntegerField("GPUs booked")
    state = models.CharField(max_length=16, choices=LabSessionState.choices, default=LabSessionState.BOOKED)
    gpus_held = models.PositiveSmallIntegerField("GPUs held", default=0, help_text="Whole nodes hold all their GPUs.")
    nodes = models.CharField("nodes held", max_length=255, blank=True)
    message = models.CharField(max_length=500, blank=True, help_text="The cluster's last word on it, in words.")
    removed_at = models.DateTimeField(
        "reservation removed", null=True, blank=True, help_text="Empty for a cancelled session: still to remove."
    )
    pending_moved_at = models.DateTimeField(
        "pending jobs moved in",
        null=True,
        blank=True,
        help_text="When the course's jobs already waiting as the session began were moved into its reservation.",
    )
    booked_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["starts_at", "pk"]
        indexes = [
            models.Index(fields=["cluster", "state", "starts_at"], name="labsession_cluster_state"),
            models.Index(fields=["course", "state", "ends_at"], name="labsession_course_state"),
        ]
        constraints = [
            models.CheckConstraint(condition=Q(ends_at__gt=F("starts_at")), name="labsession_ends_after_start"),
        ]

    def __str__(self) -> str:
        return f"{self.course} lab session {self.starts_at:%Y-%m-%d %H:%M} ({self.gpus} GPUs)"

    @property
    def reservation_name(self) -> str:
        return f"gpulab-{self.course.slug[:30].lower().replace('_', '-')}-{self.pk}"

    @property
    def minutes(self) -> int:
        return int((self.ends_at - self.starts_at).total_seconds() // 60)


class LabSessionEvent(models.Model):
    """The audit of a lab session: who moved it from what to what, and why (the cluster's words included)."""

    session = models.ForeignKey(LabSession, on_delete=models.CASCADE, related_name="events")
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    from_state = models.CharField(max_length=16, blank=True)
    to_state = models.CharField(max_length=16)
    message = models.CharField(max_length=500, blank=True)
    at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["at", "pk"]

    def __str__(self) -> str:
        return f"{self.from_state or 'new'} → {self.to_state}: {self.message}"
