from django.urls import path

from . import oidc

app_name = "signon"

urlpatterns = [
    path("login/", oidc.LoginView.as_view(), name="oidc_login"),
    path("callback/", oidc.CallbackView.as_view(), name="oidc_callback"),
]
