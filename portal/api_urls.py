from django.urls import path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView
from rest_framework.authtoken.views import ObtainAuthToken
from rest_framework.routers import DefaultRouter
from rest_framework.throttling import AnonRateThrottle

from jobs.api import ClusterViewSet, JobViewSet, TemplateViewSet

app_name = "api"


class TokenThrottle(AnonRateThrottle):
    scope = "token"  # guessing passwords through the token endpoint is slow


class TokenView(ObtainAuthToken):
    """POST username and password; returns {"token": …} for `Authorization: Token …`."""

    throttle_classes = [TokenThrottle]


router = DefaultRouter()
router.register("templates", TemplateViewSet, basename="template")
router.register("clusters", ClusterViewSet, basename="cluster")
router.register("jobs", JobViewSet, basename="job")

urlpatterns = [
    path("token/", TokenView.as_view(), name="token"),
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="api:schema"), name="docs"),
    *router.urls,
]
