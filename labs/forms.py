from __future__ import annotations

from django import forms

from .builtin import builtin_definitions


class LoadLabForm(forms.Form):
    lab = forms.ChoiceField(label="Built-in lab", choices=())

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["lab"].choices = [(slug, d["title"]) for slug, d in sorted(builtin_definitions().items())]  # type: ignore[attr-defined]


class AnswerForm(forms.Form):
    text = forms.CharField(label="Your answer", max_length=2000, widget=forms.Textarea(attrs={"rows": 3}))


class NoteForm(forms.Form):
    text = forms.CharField(label="Note", max_length=2000, widget=forms.Textarea(attrs={"rows": 2}))
    student: forms.ModelChoiceField = forms.ModelChoiceField(
        queryset=None, required=False, empty_label="The whole class", help_text="Who sees it on their lab page."
    )

    def __init__(self, *args, students, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["student"].queryset = students  # type: ignore[attr-defined]


class MarkForm(forms.Form):
    accepted = forms.TypedChoiceField(choices=[("1", "Accept"), ("0", "Ask again")], coerce=lambda v: v == "1")


class LabSessionForm(forms.Form):
    lab_session: forms.ModelChoiceField = forms.ModelChoiceField(
        queryset=None, required=False, label="Lab session", empty_label="None: the lab runs at any time"
    )

    def __init__(self, *args, course, **kwargs):
        from courses.models import LIVE_LAB_SESSION_STATES

        super().__init__(*args, **kwargs)
        sessions = course.lab_sessions.filter(state__in=LIVE_LAB_SESSION_STATES).select_related("cluster")
        self.fields["lab_session"].queryset = sessions.order_by("starts_at")  # type: ignore[attr-defined]
