from django.urls import path

from . import views

app_name = "experiments"

urlpatterns = [
    path("compare/", views.compare, name="compare"),
    path("compare/<slug:table>.csv", views.compare_csv, name="compare_csv"),
]
