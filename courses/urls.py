from django.urls import path

from . import views

app_name = "courses"

urlpatterns = [
    path("<slug:slug>/", views.course_jobs, name="jobs"),
    path("<slug:slug>/roster/", views.roster_upload, name="roster"),
]
