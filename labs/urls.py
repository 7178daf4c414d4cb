from django.urls import path

from . import teach_views, views

app_name = "labs"

urlpatterns = [
    path("<slug:slug>/labs/", views.lab_list, name="list"),
    path("<slug:slug>/labs/load/", teach_views.load_lab, name="load"),
    path("<slug:slug>/labs/<slug:lab_slug>/", views.lab_page, name="lab"),
    path("<slug:slug>/labs/<slug:lab_slug>/steps/<int:step_id>/launch/", views.launch_step, name="launch_step"),
    path("<slug:slug>/labs/<slug:lab_slug>/steps/<int:step_id>/answer/", views.answer, name="answer"),
    path("<slug:slug>/labs/<slug:lab_slug>/grid/", teach_views.progress_grid, name="grid"),
    path("<slug:slug>/labs/<slug:lab_slug>/grid.csv", teach_views.grading_csv, name="csv"),
    path("<slug:slug>/labs/<slug:lab_slug>/notes/", teach_views.note, name="note"),
    path("<slug:slug>/labs/<slug:lab_slug>/session/", teach_views.tie_session, name="session"),
    path("<slug:slug>/labs/<slug:lab_slug>/answers/<int:answer_id>/mark/", teach_views.mark, name="mark"),
]
