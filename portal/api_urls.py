from django.contrib.auth.decorators import login_required
from django.urls import path
from drf_spectacular.utils import extend_schema
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView
from rest_framework import serializers, status
from rest_framework.authtoken.models import Token
from rest_framework.authtoken.serializers import AuthTokenSerializer
from rest_framework.authtoken.views import ObtainAuthToken
from rest_framework.exceptions import ValidationError
from rest_framework.parsers import MultiPartParser
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.routers import DefaultRouter
from rest_framework.throttling import AnonRateThrottle

from courses.api import CourseLabSession, CourseLabSessions, CourseRoster
from experiments.api import CompareView
from jobs.api import ClusterViewSet, JobViewSet, TemplateViewSet
from labs.api import ClassLabProgress, CourseLab, CourseLabFile, CourseLabs, MyLabProgress
from sessions.api_urls import urlpatterns as files_urls
from signon import credentials
from signon.cli_api import CliLoginPoll, CliLoginStart
from signon.views import DIRECTORY_DOWN
from sweeps.api import SweepViewSet
from telemetry.api import CourseDashboard

from .api_limits import BoundedFormParser, BoundedJSONParser
from .login_throttle import lockout_message

app_name = "api"


class TokenThrottle(AnonRateThrottle):
    scope = "token"  # guessing passwords through the token endpoint is slow


class BoundedTokenSerializer(AuthTokenSerializer):
    """A too-long username or password is a 400 in words before authenticate() runs (signon/credentials.py)."""

    username = serializers.CharField(
        label="Username",
        write_only=True,
        max_length=credentials.USERNAME_MAX,
        error_messages={"max_length": credentials.MESSAGES["username"]},
    )
    password = serializers.CharField(
        label="Password",
        style={"input_type": "password"},
        trim_whitespace=False,
        write_only=True,
        max_length=credentials.PASSWORD_MAX,
        error_messages={"max_length": credentials.MESSAGES["password"]},
    )


class TokenView(ObtainAuthToken):
    """POST username and password; returns {"token": …} for `Authorization: Token …`. DELETE revokes the caller's
    token (`gpulab logout`): every script and client that used it must sign in again.

    Failed tries count towards the same lockout as the login page (django-axes): a locked username or address
    gets 429 with the time left, whatever the password. With LDAP sign-in each request is a bind to the campus
    directory; when it cannot be reached the answer is 503, not a wrong password.
    """

    throttle_classes = [TokenThrottle]
    serializer_class = BoundedTokenSerializer
    parser_classes = [BoundedFormParser, MultiPartParser, BoundedJSONParser]  # `curl -d`, `curl -F` and JSON

    def get_permissions(self):
        # Signing in needs no credentials; revoking a token needs the token (or the session) it revokes.
        return [IsAuthenticated()] if self.request.method == "DELETE" else super().get_permissions()

    def get_throttles(self):
        return super().get_throttles() if self.request.method == "POST" else []

    @extend_schema(operation_id="token_destroy", request=None, responses={204: None})
    def delete(self, request, *args, **kwargs):
        Token.objects.filter(user=request.user).delete()
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(operation_id="token_create")
    def post(self, request, *args, **kwargs):
        try:
            return super().post(request, *args, **kwargs)
        except ValidationError:
            if getattr(request, "campus_directory_down", False):
                return Response({"detail": DIRECTORY_DOWN}, status=status.HTTP_503_SERVICE_UNAVAILABLE)
            if not getattr(request, "axes_locked_out", False):
                raise
        username = str(request.data.get("username", ""))
        return Response({"detail": lockout_message(request, username)}, status=status.HTTP_429_TOO_MANY_REQUESTS)


router = DefaultRouter()
router.register("templates", TemplateViewSet, basename="template")
router.register("clusters", ClusterViewSet, basename="cluster")
router.register("jobs", JobViewSet, basename="job")
router.register("sweeps", SweepViewSet, basename="sweep")

urlpatterns = [
    path("token/", TokenView.as_view(), name="token"),
    path("token/code/", CliLoginStart.as_view(), name="token_code"),
    path("token/code/poll/", CliLoginPoll.as_view(), name="token_code_poll"),
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    # The docs are a page for people: a visitor who is not signed in is sent to the login page, then back.
    path("docs/", login_required(SpectacularSwaggerView.as_view(url_name="api:schema")), name="docs"),
    *router.urls,
    *files_urls,  # /api/v1/files/…
    path("compare/", CompareView.as_view(), name="compare"),
    path("courses/<slug:slug>/lab-sessions/", CourseLabSessions.as_view(), name="lab_sessions"),
    path("courses/<slug:slug>/lab-sessions/<int:session_id>/", CourseLabSession.as_view(), name="lab_session"),
    path("courses/<slug:slug>/roster/", CourseRoster.as_view(), name="course_roster"),
    path("courses/<slug:slug>/dashboard/", CourseDashboard.as_view(), name="course_dashboard"),
    path("courses/<slug:slug>/labs/", CourseLabs.as_view(), name="labs"),
    path("courses/<slug:slug>/labs/<slug:lab_slug>/", CourseLab.as_view(), name="lab"),
    path("courses/<slug:slug>/labs/<slug:lab_slug>/file/", CourseLabFile.as_view(), name="lab_file"),
    path("courses/<slug:slug>/labs/<slug:lab_slug>/progress/", MyLabProgress.as_view(), name="lab_progress"),
    path("courses/<slug:slug>/labs/<slug:lab_slug>/progress/class/", ClassLabProgress.as_view(), name="lab_class"),
]
