"""The course pages that list and cancel jobs, in the `courses` namespace beside the roster, quotas and terms."""

from django.urls import path

from .views import course

urlpatterns = [
    path("<slug:slug>/", course.course_jobs, name="jobs"),
    path("<slug:slug>/cancel/", course.cancel_jobs, name="cancel_jobs"),
]
