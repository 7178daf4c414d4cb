from django.urls import path

from . import consumers

websocket_urlpatterns = [
    path("ws/jobs/<uuid:job_id>/", consumers.JobTelemetryConsumer.as_asgi()),
    path("ws/courses/<slug:slug>/", consumers.CourseTelemetryConsumer.as_asgi()),
    path("ws/nodes/<int:node_id>/", consumers.NodeTelemetryConsumer.as_asgi()),
]
