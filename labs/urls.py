from django.urls import path

from . import edit_views, step_views, teach_views, views

app_name = "labs"

LAB = "<slug:slug>/labs/<slug:lab_slug>/"
EDIT = LAB + "edit/"

urlpatterns = [
    path("<slug:slug>/labs/", views.lab_list, name="list"),
    path("<slug:slug>/labs/load/", teach_views.load_lab, name="load"),
    path("<slug:slug>/labs/new/", edit_views.lab_new, name="new"),
    path("<slug:slug>/labs/import/", edit_views.lab_import, name="import"),
    path(LAB, views.lab_page, name="lab"),
    path(LAB + "steps/<int:step_id>/launch/", views.launch_step, name="launch_step"),
    path(LAB + "steps/<int:step_id>/answer/", views.answer, name="answer"),
    path(LAB + "grid/", teach_views.progress_grid, name="grid"),
    path(LAB + "grid.csv", teach_views.grading_csv, name="csv"),
    path(LAB + "notes/", teach_views.note, name="note"),
    path(LAB + "session/", teach_views.tie_session, name="session"),
    path(LAB + "answers/<int:answer_id>/mark/", teach_views.mark, name="mark"),
    # The instructor's editor (labs/edit_views.py, labs/step_views.py)
    path(EDIT, edit_views.lab_edit, name="edit"),
    path(EDIT + "preview/", edit_views.preview, name="preview"),
    path(LAB + "export.yaml", edit_views.lab_export, name="export"),
    path(EDIT + "sections/", edit_views.section_add, name="section_add"),
    path(EDIT + "sections/<int:section_id>/", edit_views.section_edit, name="section_edit"),
    path(EDIT + "sections/<int:section_id>/move/", edit_views.section_move, name="section_move"),
    path(EDIT + "sections/<int:section_id>/remove/", edit_views.section_remove, name="section_remove"),
    path(EDIT + "sections/<int:section_id>/steps/new/", step_views.step_new, name="step_new"),
    path(EDIT + "steps/<int:step_id>/", step_views.step_edit, name="step_edit"),
    path(EDIT + "steps/<int:step_id>/move/", step_views.step_move, name="step_move"),
    path(EDIT + "steps/<int:step_id>/remove/", step_views.step_remove, name="step_remove"),
]
