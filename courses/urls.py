from django.urls import path

from . import lab_session_views, quota_views, roster_import_views, roster_views, term_views

app_name = "courses"  # with the course job pages of jobs/course_urls.py (portal/urls.py joins them)

urlpatterns = [
    path("<slug:slug>/roster/", roster_views.roster_page, name="roster"),
    path("<slug:slug>/roster/import/", roster_import_views.confirm_import, name="roster_import"),
    path("<slug:slug>/roster/add/", roster_views.add_person, name="roster_add"),
    path("<slug:slug>/roster/invite-all/", roster_views.resend_all, name="roster_invite_all"),
    path("<slug:slug>/roster/<int:user_id>/role/", roster_views.change_role, name="roster_role"),
    path("<slug:slug>/roster/<int:user_id>/remove/", roster_views.remove_person, name="roster_remove"),
    path("<slug:slug>/roster/<int:user_id>/invite/", roster_views.resend_invitation, name="roster_invite"),
    path("<slug:slug>/quotas/", quota_views.quota_page, name="quotas"),
    path("<slug:slug>/copy/", term_views.copy_course, name="copy"),
    path("<slug:slug>/lab-sessions/", lab_session_views.lab_sessions_page, name="lab_sessions"),
    path(
        "<slug:slug>/lab-sessions/<int:session_id>/cancel/",
        lab_session_views.cancel_lab_session,
        name="lab_session_cancel",
    ),
]
