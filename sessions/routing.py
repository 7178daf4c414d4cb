"""Routes of the student's workspace (terminal, JupyterLab, a job's dashboard); portal/asgi.py serves them beside
telemetry's and Django's. JupyterLab's and a dashboard's paths are proxied for HTTP and WebSockets alike
(sessions/notebook_proxy.py)."""

from channels.auth import AuthMiddlewareStack

from core.asgi_routes import asgi_path, asgi_re_path

from .notebook_proxy import dashboard_proxy, notebook_proxy
from .terminal import TerminalConsumer

JOB = r"^jobs/(?P<job_id>[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})"
NOTEBOOK_PATH = JOB + "/lab/"
DASHBOARD_PATH = JOB + "/dashboard/"

websocket_urlpatterns = [
    asgi_path("ws/jobs/<uuid:job_id>/terminal/", TerminalConsumer.as_asgi()),
    asgi_re_path(NOTEBOOK_PATH, notebook_proxy),
    asgi_re_path(DASHBOARD_PATH, dashboard_proxy),
]
# Plain HTTP under the same path: the session cookie identifies the user, as on the sockets.
http_urlpatterns = [
    asgi_re_path(NOTEBOOK_PATH, AuthMiddlewareStack(notebook_proxy)),
    asgi_re_path(DASHBOARD_PATH, AuthMiddlewareStack(dashboard_proxy)),
]
