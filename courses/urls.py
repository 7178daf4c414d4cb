from django.urls import path

from . import quota_views, term_views, views

app_name = "courses"

urlpatterns = [
    path("<slug:slug>/", views.course_jobs, name="jobs"),
    path("<slug:slug>/roster/", views.roster_upload, name="roster"),
    path("<slug:slug>/quotas/", quota_views.quota_page, name="quotas"),
    path("<slug:slug>/cancel/", views.cancel_jobs, name="cancel_jobs"),
    path("<slug:slug>/copy/", term_views.copy_course, name="copy"),
]
