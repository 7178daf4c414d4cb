"""WebSocket routes of the student's workspace (terminal, JupyterLab); portal/asgi.py serves them beside telemetry's."""

from django.urls import path

from .terminal import TerminalConsumer

websocket_urlpatterns = [
    path("ws/jobs/<uuid:job_id>/terminal/", TerminalConsumer.as_asgi()),
]
