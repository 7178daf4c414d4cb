"""Pages of the student's workspace (files, terminal, JupyterLab); each part adds its own paths here."""

app_name = "sessions"

urlpatterns = []
