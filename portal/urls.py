from django.contrib import admin
from django.templatetags.static import static
from django.urls import include, path
from django.views.generic import RedirectView

from clusters import views as cluster_views
from courses import urls as course_urls
from jobs import course_urls as course_job_urls
from ops import views as ops_views
from portal import cli_wheels
from signon import cli_views
from signon import views as signon_views
from signon.credentials import AdminLoginForm, bad_request_when_too_long
from signon.oidc import LogoutView

admin.site.site_header = "GPU Lab Portal administration"
admin.site.site_title = "GPU Lab Portal admin"
admin.site.index_title = "Clusters, courses, templates and jobs"
admin.site.login_form = AdminLoginForm  # over-long credentials are refused before the lockout records them


class FaviconView(RedirectView):
    """Browsers ask for /favicon.ico on pages without an icon link (the API docs, files); the URL has its hash."""

    def get_redirect_url(self, *args, **kwargs):
        return static("img/favicon.ico")


urlpatterns = [
    path("favicon.ico", FaviconView.as_view()),
    path("", include("jobs.urls")),
    path("", include("telemetry.urls")),
    path("", include("experiments.urls")),
    path("", include("sessions.urls")),
    path("", include("sweeps.urls")),
    # One `courses` namespace: the course pages of courses (roster, quotas, terms) and of jobs (its jobs).
    path("courses/", include(([*course_job_urls.urlpatterns, *course_urls.urlpatterns], course_urls.app_name))),
    path("courses/", include("labs.urls")),  # a course's labs: /courses/<slug>/labs/…
    path("notifications/", include("notifications.urls")),
    path("profile/", cluster_views.profile, name="profile"),
    path("profile/token/", cluster_views.new_token, name="new_token"),
    path("profile/token/reveal/", cluster_views.reveal_token, name="reveal_token"),
    path("profile/accounts/<int:account_id>/remove/", cluster_views.remove_account, name="remove_account"),
    path("profile/accounts/<int:account_id>/new-key/", cluster_views.new_key, name="new_account_key"),
    path("profile/accounts/<int:account_id>/test/", cluster_views.test_login, name="test_account_login"),
    path("login/", signon_views.login, name="login"),
    path("cli/login/", cli_views.cli_login_page, name="cli_login"),
    path("cli/", cli_wheels.cli_page, name="cli"),
    path("cli/wheels/", cli_wheels.wheel_index, name="cli_wheels"),
    path("cli/wheels/<str:name>", cli_wheels.wheel_file, name="cli_wheel"),
    path("logout/", LogoutView.as_view(), name="logout"),  # and at the campus provider, after an OIDC sign-in
    path("oidc/", include("signon.urls")),
    path("password/", include("passwords.urls")),
    path("api/v1/", include("portal.api_urls")),
    path("admin/operations/", admin.site.admin_view(ops_views.operations), name="operations"),
    path("admin/login/", bad_request_when_too_long(admin.site.login)),  # the admin's own, answering 400 then
    path("admin/", admin.site.urls),
]
