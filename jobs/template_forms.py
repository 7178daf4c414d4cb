"""The instructor's template editor: the template's own fields and its parameter rows, checked and saved together."""

from __future__ import annotations

from typing import cast

from django import forms

from .models import JobTemplate
from .parameter_forms import PREFIX, ParameterFormSet, rearranged, rows_of


class TemplateForm(forms.ModelForm):
    class Meta:
        model = JobTemplate
        fields = [
            "name",
            "slug",
            "description",
            "backend",
            "endpoint_api",
            "courses",
            "body",
            "max_gpus",
            "max_nodes",
            "max_minutes",
        ]
        widgets = {
            "body": forms.Textarea(attrs={"rows": 16, "class": "mono", "spellcheck": "false"}),
            "description": forms.Textarea(attrs={"rows": 3}),
            "courses": forms.CheckboxSelectMultiple,
        }
        help_texts = {"courses": "Where it is offered: a change here applies when you save, published or not."}

    def __init__(self, *args, teaching, **kwargs):
        super().__init__(*args, **kwargs)
        cast(forms.ModelMultipleChoiceField, self.fields["courses"]).queryset = teaching

    def clean_body(self):
        return self.cleaned_data["body"].replace("\r\n", "\n")  # a textarea's CR LF would reach bash as CRs

    def clean_courses(self):
        courses = self.cleaned_data["courses"]
        if not courses:
            raise forms.ValidationError("Choose at least one of your courses.")
        return courses


class TemplateEditor:
    """The template's fields (TemplateForm) and one row per parameter (parameter_forms), bound to the same POST."""

    def __init__(self, data=None, *, instance: JobTemplate, teaching, initial=None):
        self.form = TemplateForm(data, instance=instance, teaching=teaching, initial=initial)
        self.parameters = ParameterFormSet(data, initial=rows_of(instance.parameters), prefix=PREFIX)

    @classmethod
    def rearranged(cls, data, action: str, *, instance: JobTemplate, teaching) -> TemplateEditor:
        """The editor shown again as posted, nothing checked or saved, its rows added to or moved (`action`)."""
        posted = {
            name: data.getlist(name) if name == "courses" else data.get(name)
            for name in TemplateForm.Meta.fields
            if name in data
        }
        editor = cls(instance=instance, teaching=teaching, initial=posted)
        editor.parameters = rearranged(data, action)
        return editor

    @property
    def instance(self) -> JobTemplate:
        return self.form.instance

    @property
    def has_errors(self) -> bool:
        return bool(self.form.errors) or self.parameters.total_error_count() > 0

    def is_valid(self) -> bool:
        form_ok = self.form.is_valid()
        return self.parameters.is_valid() and form_ok

    def edited(self) -> JobTemplate:
        """The template with the editor's content, not yet saved (authoring.save_edit and publish_edit save it)."""
        template = self.form.save(commit=False)
        template.parameters = self.parameters.parameters()
        return template

    def save_m2m(self) -> None:
        self.form.save_m2m()

    def disable(self) -> None:
        for form in (self.form, *self.parameters.forms):
            for field in form.fields.values():
                field.disabled = True
