"""WebSocket routes of the student's workspace (terminal, JupyterLab); portal/asgi.py serves them beside telemetry's."""

websocket_urlpatterns = []
