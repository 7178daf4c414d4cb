"""The instructor's budget forms: the course's settings and a top-up for one student; ranges from courses/budgets.py."""

from typing import cast

from django import forms

from . import budgets
from .models import BudgetPeriod


class BudgetSettingsForm(forms.Form):
    # Short option words, so the select shows them whole in its grid column; the reset time goes in the help.
    budget_period = forms.ChoiceField(
        label="Student budget period",
        choices=[(BudgetPeriod.WEEK, "Per week"), (BudgetPeriod.TERM, "Per term")],
        help_text="A week's budget resets on Monday at 00:00.",
    )
    student_gpu_hours = forms.DecimalField(
        label="GPU-hours per student",
        max_digits=9,
        decimal_places=2,
        required=False,
        help_text="Empty: no per-student budget.",
    )
    course_gpu_hours = forms.DecimalField(
        label="GPU-hours for the whole course",
        max_digits=9,
        decimal_places=2,
        required=False,
        help_text="Over the term. Empty: no course budget.",
    )
    budget_grace_minutes = forms.IntegerField(
        label="Grace before stopping (minutes)", help_text="Running jobs stop this long after a budget runs out."
    )

    idle_util_below = forms.IntegerField(
        label="Idle below (% GPU utilization)", required=False, help_text="Empty: idle GPUs are not reaped."
    )
    idle_warn_minutes = forms.IntegerField(label="Warn after idle (minutes)")
    idle_cancel_minutes = forms.IntegerField(
        label="Cancel after the warning (minutes)", help_text="Unless the student presses “Keep it”."
    )
    session_idle_minutes = forms.IntegerField(
        label="End idle JupyterLab sessions after (minutes)",
        required=False,
        help_text="No kernel activity and idle GPUs this long. Empty: sessions run to their time limit.",
    )

    def clean(self):
        super().clean()
        data = self.cleaned_data
        for name, message in budgets.setting_errors(data).items():
            self.add_error(name, message)
        return data


class TopUpForm(forms.Form):
    student = forms.TypedChoiceField(label="Student", coerce=int)
    hours = forms.DecimalField(label="GPU-hours to add", max_digits=9, decimal_places=2)
    reason = forms.CharField(label="Reason (kept in the changes)", max_length=200, required=False)

    def __init__(self, *args, students=(), **kwargs):
        kwargs["prefix"] = "topup"
        super().__init__(*args, **kwargs)
        self.students = {s.pk: s for s in students}
        cast(forms.ChoiceField, self.fields["student"]).choices = [(s.pk, s.username) for s in students]

    def clean_hours(self):
        hours = self.cleaned_data["hours"]
        error = budgets.top_up_error(hours)
        if error:
            raise forms.ValidationError(error)
        return hours
