"""Labs in the admin: a lab with its sections, and each step with its check, quick fixes and preset values validated
as the lab files and the lab editor's are (labs/specs.py), so a check saved here is data the progress code
understands."""

from __future__ import annotations

from django import forms
from django.contrib import admin
from rest_framework.exceptions import ValidationError as DataInvalid

from core.templating.params import SchemaError

from .loading import cluster_choices
from .models import Lab, Section, Step
from .specs import clean_check, clean_quick_fixes, template_problems


class StepForm(forms.ModelForm):
    class Meta:
        model = Step
        fields = ["section", "position", "title", "instructions", "template", "preset", "fixed"]
        fields += ["check_spec", "quick_fixes"]

    def clean_check_spec(self):
        try:
            return clean_check(self.cleaned_data["check_spec"])
        except DataInvalid as exc:
            raise forms.ValidationError(str(exc.detail)) from None

    def clean_quick_fixes(self):
        try:
            return clean_quick_fixes(self.cleaned_data["quick_fixes"])
        except DataInvalid as exc:
            raise forms.ValidationError(str(exc.detail)) from None

    def clean(self):
        data = super().clean() or {}
        loose = [name for name in data.get("fixed") or [] if name not in (data.get("preset") or {})]
        if loose:
            self.add_error("fixed", f"Fixed values need a preset: {', '.join(loose)}.")
        template, section = data.get("template"), data.get("section")
        if template is not None and section is not None and isinstance(data.get("preset"), dict):
            try:
                schema = template.schema()
            except SchemaError:
                schema = []
            course = section.lab.course
            fixed = [name for name in data.get("fixed") or [] if isinstance(name, str)]
            _, problems = template_problems(
                schema, data["preset"], fixed, data.get("check_spec") or {}, cluster_choices(course)
            )
            for where, message in problems.items():
                if where != "fixed":  # said above
                    self.add_error("check_spec" if where.startswith("check") else "preset", message)
        return data


class SectionInline(admin.TabularInline):
    model = Section
    extra = 0


@admin.register(Lab)
class LabAdmin(admin.ModelAdmin):
    list_display = ["title", "course", "slug", "builtin", "lab_session"]
    list_filter = ["course"]
    inlines = [SectionInline]


@admin.register(Step)
class StepAdmin(admin.ModelAdmin):
    form = StepForm
    list_display = ["title", "section", "position", "template"]
    list_filter = ["section__lab__course"]
    list_select_related = ["section", "template"]
