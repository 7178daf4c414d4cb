from django.urls import path

from clusters import kinds

from .views import authoring, catalog, jobs, launch

app_name = "jobs"

urlpatterns = [
    path("", catalog.catalog, name="catalog"),
    path("courses/<slug:course_slug>/launch/<slug:template_slug>/", launch.launch_form, name="launch"),
    path("jobs/", jobs.my_jobs, name="my_jobs"),
    path("jobs/<uuid:job_id>/", jobs.detail, name="detail"),
    path("jobs/<uuid:job_id>/status/", jobs.status, name="status"),
    path("jobs/<uuid:job_id>/log/", jobs.log, name="log"),
    path("jobs/<uuid:job_id>/cancel/", jobs.cancel, name="cancel"),
    path("jobs/<uuid:job_id>/clone/", launch.clone, name="clone"),
    path("courses/<slug:course_slug>/templates/", authoring.template_list, name="template_list"),
    path("courses/<slug:course_slug>/templates/new/", authoring.template_edit, name="template_new"),
    path("courses/<slug:course_slug>/templates/preview/", authoring.template_preview, name="template_preview"),
    path("courses/<slug:course_slug>/templates/<slug:slug>/", authoring.template_edit, name="template_edit"),
    path(
        "courses/<slug:course_slug>/templates/<slug:slug>/publish/", authoring.template_publish, name="template_publish"
    ),
    *kinds.urlpatterns(),  # each kind's own job-page actions (Kubernetes: scale, try it, load test)
]
