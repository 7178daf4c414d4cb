"""Who a campus identity is in the portal, and which course rosters follow which campus groups.

Invariants: one campus subject (an OIDC issuer's `sub`) belongs to one portal user; an enrollment is removed by
group sync only if group sync made it (a `GroupEnrollment` row), so people an instructor enrolled by hand stay;
every enrollment, removal and role change made by group sync is written to `GroupSyncChange`.
"""

from django.conf import settings
from django.db import models

from courses.models import Course, Role


class Source(models.TextChoices):
    LDAP = "ldap", "LDAP group"
    OIDC = "oidc", "OIDC group claim"


class CampusIdentity(models.Model):
    """A user's subject at the campus OpenID provider: later sign-ins find the user by it, whatever the names."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="campus_identities")
    issuer = models.CharField(max_length=255)
    subject = models.CharField(max_length=255)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "campus identities"
        constraints = [models.UniqueConstraint(fields=["issuer", "subject"], name="campusidentity_unique_subject")]

    def __str__(self) -> str:
        return f"{self.user} = {self.subject} at {self.issuer}"


class CourseGroup(models.Model):
    """Members of this campus group are enrolled in the course with this role; leaving the group unenrolls them."""

    course = models.ForeignKey(Course, on_delete=models.CASCADE, related_name="campus_groups")
    source = models.CharField(max_length=8, choices=Source.choices)
    group = models.CharField(
        max_length=255,
        help_text="LDAP: the group's cn (e.g. hpc-students). OIDC: a value of the groups claim (e.g. hpc-students).",
    )
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.STUDENT)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = "course campus group"
        ordering = ["course", "source", "group"]
        constraints = [
            models.UniqueConstraint(fields=["course", "source", "group"], name="coursegroup_unique_course_group")
        ]

    def __str__(self) -> str:
        return f"{self.get_source_display()} {self.group} → {self.course} ({self.get_role_display()})"


class GroupEnrollment(models.Model):
    """An enrollment that group sync made: the only kind group sync may remove."""

    course = models.ForeignKey(Course, on_delete=models.CASCADE, related_name="+")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    source = models.CharField(max_length=8, choices=Source.choices)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["course", "user"], name="groupenrollment_unique_course_user")]

    def __str__(self) -> str:
        return f"{self.user} in {self.course} through {self.get_source_display()}"


class SyncAction(models.TextChoices):
    ENROLLED = "enrolled", "Enrolled"
    REMOVED = "removed", "Removed"
    ROLE_CHANGED = "role", "Role changed"


class GroupSyncChange(models.Model):
    """The audit of group sync: who was enrolled, removed or given another role, from which group, when, how."""

    course = models.ForeignKey(Course, on_delete=models.CASCADE, related_name="+")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    username = models.CharField(max_length=150)  # kept if the account is deleted
    action = models.CharField(max_length=16, choices=SyncAction.choices)
    source = models.CharField(max_length=8, choices=Source.choices)
    groups = models.CharField(max_length=500, blank=True, help_text="The course's groups the person is in now.")
    old_role = models.CharField(max_length=16, blank=True)
    new_role = models.CharField(max_length=16, blank=True)
    via = models.CharField(max_length=16, help_text="sign-in, or the sync_course_groups command.")
    at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-at", "-pk"]
        indexes = [models.Index(fields=["course", "-at"], name="groupsyncchange_course_at")]

    def __str__(self) -> str:
        return f"{self.username} {self.get_action_display().lower()} in {self.course} ({self.via})"


class CliLogin(models.Model):
    """A command-line client waiting for its user to confirm it in a browser where they are signed in (single
    sign-on has no password to type into a terminal). The client holds the secret `device_code` (only its SHA-256 is
    kept here) and shows the short `user_code`, which the user types on the portal's page; the token is handed out
    once, to the secret's holder, and the row goes with it (signon/cli_login.py)."""

    device_hash = models.CharField(max_length=64, unique=True)
    user_code = models.CharField(max_length=8, unique=True)
    client = models.CharField(max_length=100)  # what the client says it is: "gpulab on laptop-7", shown to the user
    address = models.GenericIPAddressField(null=True, blank=True)  # where it was started from, shown to the user
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE)
    refused = models.BooleanField(default=False)

    def __str__(self) -> str:
        return f"{self.client} ({self.user_code})"
