import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
# HTTP only for now; the telemetry WebSocket routes join here through Channels.
application = get_asgi_application()
