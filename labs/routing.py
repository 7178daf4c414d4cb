from core.asgi_routes import asgi_path

from . import consumers

websocket_urlpatterns = [
    asgi_path("ws/courses/<slug:slug>/labs/<slug:lab_slug>/", consumers.LabGridConsumer.as_asgi()),
]
