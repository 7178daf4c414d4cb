from django.urls import path

from . import views, webhook_views

app_name = "notifications"

urlpatterns = [
    path("", views.preferences_page, name="preferences"),
    path("browser/", views.browser_feed, name="browser_feed"),
    path("unsubscribe/<str:token>/", views.unsubscribe, name="unsubscribe"),
    path("course/<slug:slug>/webhook/", webhook_views.course_webhook, name="course_webhook"),
]
