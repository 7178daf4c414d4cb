from django.urls import path

from .views import authoring, budgets, catalog, jobs, launch, servers

app_name = "jobs"

urlpatterns = [
    path("", catalog.catalog, name="catalog"),
    path("courses/<slug:course_slug>/launch/<slug:template_slug>/", launch.launch_form, name="launch"),
    path("courses/<slug:course_slug>/budget/", budgets.my_budget, name="budget"),
    path("courses/<slug:course_slug>/budgets/", budgets.course_budgets, name="course_budgets"),
    path("courses/<slug:course_slug>/budgets/top-up/", budgets.top_up, name="budget_top_up"),
    path("jobs/", jobs.my_jobs, name="my_jobs"),
    path("jobs/<uuid:job_id>/", jobs.detail, name="detail"),
    path("jobs/<uuid:job_id>/status/", jobs.status, name="status"),
    path("jobs/<uuid:job_id>/log/", jobs.log, name="log"),
    path("jobs/<uuid:job_id>/cancel/", jobs.cancel, name="cancel"),
    path("jobs/<uuid:job_id>/keep/", jobs.keep, name="keep"),
    path("jobs/<uuid:job_id>/clone/", launch.clone, name="clone"),
    path("jobs/<uuid:job_id>/scale/", servers.scale, name="scale"),
    path("jobs/<uuid:job_id>/try/", servers.try_it, name="try_it"),
    path("jobs/<uuid:job_id>/load-test/", servers.load_test, name="load_test"),
    path("jobs/<uuid:job_id>/load-test/report/", servers.load_test_report, name="load_test_report"),
    path("courses/<slug:course_slug>/templates/", authoring.template_list, name="template_list"),
    path("courses/<slug:course_slug>/templates/new/", authoring.template_edit, name="template_new"),
    path("courses/<slug:course_slug>/templates/preview/", authoring.template_preview, name="template_preview"),
    path("courses/<slug:course_slug>/templates/<slug:slug>/", authoring.template_edit, name="template_edit"),
    path("courses/<slug:course_slug>/templates/<slug:slug>/status/", authoring.template_status, name="template_status"),
    path("courses/<slug:course_slug>/templates/<slug:slug>/copy/", authoring.template_copy, name="template_copy"),
    path("courses/<slug:course_slug>/templates/<slug:slug>/move/", authoring.template_move, name="template_move"),
]
