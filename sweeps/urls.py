from django.urls import path

from . import launch_views, views

app_name = "sweeps"

urlpatterns = [
    path("sweeps/<uuid:sweep_id>/", views.detail, name="detail"),
    path("sweeps/<uuid:sweep_id>/cancel/", views.cancel, name="cancel"),
    path("courses/<slug:course_slug>/sweep/<slug:template_slug>/", launch_views.sweep_form, name="launch"),
]
