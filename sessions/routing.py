"""Routes of the student's workspace (terminal, JupyterLab); portal/asgi.py serves them beside telemetry's and
Django's. JupyterLab's path is proxied for HTTP and WebSockets alike (sessions/notebook_proxy.py)."""

from channels.auth import AuthMiddlewareStack

from core.asgi_routes import asgi_path, asgi_re_path

from .notebook_proxy import notebook_proxy
from .terminal import TerminalConsumer

NOTEBOOK_PATH = r"^jobs/(?P<job_id>[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})/lab/"

websocket_urlpatterns = [
    asgi_path("ws/jobs/<uuid:job_id>/terminal/", TerminalConsumer.as_asgi()),
    asgi_re_path(NOTEBOOK_PATH, notebook_proxy),
]
# Plain HTTP under the same path: the session cookie identifies the user, as on the sockets.
http_urlpatterns = [asgi_re_path(NOTEBOOK_PATH, AuthMiddlewareStack(notebook_proxy))]
