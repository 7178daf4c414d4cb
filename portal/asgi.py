"""HTTP and WebSockets in one ASGI application (served by uvicorn)."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
os.environ["GPULAB_ASGI"] = "1"  # this process serves requests: database connections from a pool (settings.py)
django_asgi_app = get_asgi_application()  # sets Django up before the consumers import models

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402

from core.asgi_routes import asgi_re_path  # noqa: E402
from sessions.routing import http_urlpatterns as workspace_http  # noqa: E402
from sessions.routing import websocket_urlpatterns as workspace_sockets  # noqa: E402
from telemetry.routing import websocket_urlpatterns as telemetry_sockets  # noqa: E402

application = ProtocolTypeRouter(
    {
        # JupyterLab's proxied path first (sessions/notebook_proxy.py); every other request is Django's.
        "http": URLRouter([*workspace_http, asgi_re_path(r"", django_asgi_app)]),
        # Session cookies authenticate sockets; the Origin check stops other sites from opening them.
        "websocket": AllowedHostsOriginValidator(
            AuthMiddlewareStack(URLRouter([*telemetry_sockets, *workspace_sockets]))
        ),
    }
)
