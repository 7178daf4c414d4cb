from django.conf import settings
from django.db import models


class Role(models.TextChoices):
    STUDENT = "student", "Student"
    INSTRUCTOR = "instructor", "Instructor"


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
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Enrollment(models.Model):
    course = models.ForeignKey(Course, on_delete=models.CASCADE, related_name="enrollments")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="enrollments")
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.STUDENT)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["course", "user__username"]
        constraints = [models.UniqueConstraint(fields=["course", "user"], name="enrollment_unique_course_user")]

    def __str__(self) -> str:
        return f"{self.user} in {self.course} ({self.get_role_display()})"
