from core.asgi_routes import asgi_path

from . import consumers

websocket_urlpatterns = [
    asgi_path("ws/jobs/<uuid:job_id>/", consumers.JobTelemetryConsumer.as_asgi()),
    asgi_path("ws/courses/<slug:slug>/", consumers.CourseTelemetryConsumer.as_asgi()),
    asgi_path("ws/nodes/<int:node_id>/", consumers.NodeTelemetryConsumer.as_asgi()),
]
