"""/api/v1/files/… (in portal/api_urls.py's API namespace): each endpoint once for the user's lab space on a
cluster and once for a job's run directory."""

from django.urls import path

from . import api

ENDPOINTS = [
    ("", api.ListView, ""),
    ("download/", api.DownloadView, "-download"),
    ("text/", api.TextView, "-text"),
    ("mkdir/", api.MkdirView, "-mkdir"),
    ("rename/", api.RenameView, "-rename"),
    ("delete/", api.DeleteView, "-delete"),
    ("upload/", api.UploadView, "-upload"),
]

urlpatterns = [
    *(path(f"files/clusters/<int:cluster_id>/{p}", v.as_view(), name=f"files-cluster{n}") for p, v, n in ENDPOINTS),
    *(path(f"files/jobs/<uuid:job_id>/{p}", v.as_view(), name=f"files-job{n}") for p, v, n in ENDPOINTS),
]
