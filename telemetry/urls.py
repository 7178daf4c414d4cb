from django.urls import path

from . import views

app_name = "telemetry"

urlpatterns = [
    path("nodes/", views.node_list, name="nodes"),
    path("nodes/<int:node_id>/", views.node_detail, name="node"),
    path("courses/<slug:slug>/dashboard/", views.course_dashboard, name="dashboard"),
    path("courses/<slug:slug>/dashboard/hour.json", views.course_dashboard_hour, name="dashboard_hour"),
    path("courses/<slug:slug>/report.csv", views.course_report_csv, name="report"),
    path("courses/<slug:slug>/students.csv", views.course_students_csv, name="students_report"),
]
