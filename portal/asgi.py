"""HTTP and WebSockets in one ASGI application (served by uvicorn)."""

import os

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
os.environ["GPULAB_ASGI"] = "1"  # this process serves requests: database connections from a pool (settings.py)
django.setup(set_prefix=False)  # as get_asgi_application(), before the consumers import models

from portal.static_files import StreamingFilesHandler  # noqa: E402

django_asgi_app = StreamingFilesHandler()  # Django's handler, with files streamed in blocks

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402

from core.asgi_routes import asgi_re_path  # noqa: E402
from labs.routing import websocket_urlpatterns as lab_sockets  # noqa: E402
from portal.websocket_origin import SameOriginValidator  # noqa: E402
from portal.websocket_token import TokenAuthMiddleware  # noqa: E402
from sessions.routing import http_urlpatterns as workspace_http  # noqa: E402
from sessions.routing import websocket_urlpatterns as workspace_sockets  # noqa: E402
from telemetry.routing import websocket_urlpatterns as telemetry_sockets  # noqa: E402

application = ProtocolTypeRouter(
    {
        # JupyterLab's proxied path first (sessions/notebook_proxy.py); every other request is Django's.
        "http": URLRouter([*workspace_http, asgi_re_path(r"", django_asgi_app)]),
        # Session cookies authenticate sockets, or an API token for clients that are not browsers (gpulab shell);
        # the Origin check (scheme, host and port) stops other sites, and other servers on the portal's host, from
        # opening them.
        "websocket": SameOriginValidator(
            AuthMiddlewareStack(TokenAuthMiddleware(URLRouter([*telemetry_sockets, *lab_sockets, *workspace_sockets])))
        ),
    }
)
