"""The instructor's booking form for a lab session; the rules themselves are courses/lab_sessions.py's."""

from datetime import datetime
from typing import cast

from django import forms
from django.conf import settings
from django.utils import timezone

from .lab_sessions import Booking, lab_clusters


class LabSessionForm(forms.Form):
    cluster: forms.ModelChoiceField = forms.ModelChoiceField(queryset=None, empty_label=None, label="Cluster")
    date = forms.DateField(label="Date", widget=forms.DateInput(attrs={"type": "date"}))
    time = forms.TimeField(label="Start time", widget=forms.TimeInput(attrs={"type": "time"}))
    # Wide bounds against absurd numbers only; the booking rules (courses/lab_sessions.py) give the real range.
    minutes = forms.IntegerField(label="Length (minutes)", initial=120, min_value=1, max_value=100_000)
    gpus = forms.IntegerField(label="GPUs", initial=4, min_value=1, max_value=10_000)

    def __init__(self, *args, course, **kwargs):
        super().__init__(*args, **kwargs)
        cast(forms.ModelChoiceField, self.fields["cluster"]).queryset = lab_clusters(course)
        low, high = settings.GPULAB_LAB_SESSION_MIN_MINUTES, settings.GPULAB_LAB_SESSION_MAX_MINUTES
        self.fields["minutes"].widget.attrs.update(min=low, max=high, step=5)
        self.fields["minutes"].help_text = f"From {low} to {high} minutes."
        self.fields["gpus"].widget.attrs.update(min=1)
        self.fields["time"].help_text = f"In the portal's time zone ({timezone.get_current_timezone_name()})."

    def booking(self) -> Booking:
        data = self.cleaned_data
        starts_at = timezone.make_aware(datetime.combine(data["date"], data["time"]))
        return Booking(cluster=data["cluster"], starts_at=starts_at, minutes=data["minutes"], gpus=data["gpus"])

    def add_refusal(self, errors: dict[str, str]) -> None:
        for name, message in errors.items():
            self.add_error("date" if name == "starts_at" else name if name in self.fields else None, message)
