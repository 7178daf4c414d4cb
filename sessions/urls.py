"""Pages of the student's workspace (files, terminal, JupyterLab); each part adds its own paths here."""

from django.urls import path

from . import notebook_views, terminal_views, views

app_name = "sessions"

urlpatterns = [
    path("files/", views.index, name="files"),
    path("files/<int:cluster_id>/", views.cluster_files, name="cluster_files"),
    path("jobs/<uuid:job_id>/files/", views.job_files, name="job_files"),
    path("jobs/<uuid:job_id>/artefacts/", views.job_artefacts, name="job_artefacts"),
    path("jobs/<uuid:job_id>/terminal/", terminal_views.job_terminal, name="job_terminal"),
    path("jobs/<uuid:job_id>/jupyter/", notebook_views.job_notebook, name="job_notebook"),
    path("jobs/<uuid:job_id>/jupyter/status/", notebook_views.job_notebook_status, name="job_notebook_status"),
    path("jobs/<uuid:job_id>/jupyter/ready/", notebook_views.job_notebook_ready, name="job_notebook_ready"),
]
