from django.urls import path

from . import views

app_name = "passwords"

urlpatterns = [
    path("set/<uidb64>/<token>/", views.InvitationView.as_view(), name="set"),
    path("reset/", views.reset_request, name="reset"),
    path("reset/sent/", views.reset_sent, name="reset_sent"),
    path("reset/<uidb64>/<token>/", views.ResetConfirmView.as_view(), name="reset_confirm"),
]
