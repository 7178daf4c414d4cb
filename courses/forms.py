"""The instructor's quota form: the course's limits and, per student, an optional override of each."""

from __future__ import annotations

import re

from django import forms
from django.utils import timezone

from . import terms
from .models import Course, QuotaField, Role
from .quotas import FIELDS, MAX_VALUE
from .roster_file import MAX_BYTES, RosterUnreadable, decode, username_problem

ASCII_COUNT = re.compile(r"^[0-9]+$")


class CountField(forms.IntegerField):
    """A whole number typed with ASCII digits only (int() would also take "٢" or " 2 ")."""

    def __init__(self, **kwargs):
        super().__init__(min_value=0, max_value=MAX_VALUE, **kwargs)
        self.widget.attrs.update({"inputmode": "numeric", "class": "small-number"})

    def to_python(self, value):
        if value not in self.empty_values and not ASCII_COUNT.match(str(value)):
            raise forms.ValidationError("Enter a whole number such as 2, with the digits 0-9.", code="invalid")
        return super().to_python(value)


def override_name(field: str, user_id: int) -> str:
    return f"{field}__{user_id}"


class QuotaForm(forms.Form):
    def __init__(self, *args, course, students, overrides, **kwargs):
        super().__init__(*args, **kwargs)
        self.students = students
        for field in FIELDS:
            self.fields[field] = CountField(label=QuotaField(field).label, initial=getattr(course, field))
        for student in students:
            override = overrides.get(student.pk)
            for field in FIELDS:
                self.fields[override_name(field, student.pk)] = CountField(
                    required=False,
                    label=f"{QuotaField(field).label} for {student.username}",
                    initial=getattr(override, field, None),
                )
                self.fields[override_name(field, student.pk)].widget.attrs["placeholder"] = str(getattr(course, field))

    def course_values(self) -> dict[str, int]:
        return {field: self.cleaned_data[field] for field in FIELDS}

    def student_values(self, student) -> dict[str, int | None]:
        return {field: self.cleaned_data[override_name(field, student.pk)] for field in FIELDS}

    def rows(self):
        """(student, [bound field per quota field]) for the table."""
        for student in self.students:
            yield student, [self[override_name(field, student.pk)] for field in FIELDS]


class TermField(forms.DateTimeField):
    """A date and time picked in the browser (datetime-local), read in the portal's time zone."""

    def __init__(self, **kwargs):
        widget = forms.DateTimeInput(attrs={"type": "datetime-local"}, format="%Y-%m-%dT%H:%M")
        super().__init__(widget=widget, **kwargs)


class CopyTermForm(forms.Form):
    """A new course for a new term: its own name, slug and dates. What it carries is courses/copying.py's."""

    name = forms.CharField(max_length=Course._meta.get_field("name").max_length)
    slug = forms.SlugField(
        max_length=Course._meta.get_field("slug").max_length,
        help_text="Short name used in URLs and the API, e.g. hpc-2027. Letters, digits, - and _.",
    )
    term_starts_at = TermField(label="Term starts")
    term_ends_at = TermField(label="Term ends")

    def clean_slug(self):
        slug = self.cleaned_data["slug"]
        if Course.objects.filter(slug__iexact=slug).exists():
            raise forms.ValidationError(f"A course “{slug}” exists already. Pick another slug, e.g. {slug}-2.")
        return slug

    def clean(self):
        super().clean()
        data = self.cleaned_data
        errors = terms.term_errors(data.get("term_starts_at"), data.get("term_ends_at"), now=timezone.now())
        for field, message in errors.items():
            self.add_error(field, message)
        return data


class RosterUploadForm(forms.Form):
    roster = forms.FileField(
        help_text="A CSV with a header line naming its columns (username or id, email, name, role, section, "
        "cluster username), or lines of username,email,role[,cluster_username]. Role: student, ta or instructor."
    )

    def clean_roster(self) -> str:
        upload = self.cleaned_data["roster"]
        if upload.size > MAX_BYTES:
            raise forms.ValidationError(f"The file is larger than {MAX_BYTES // (1024 * 1024)} MB; split it.")
        try:
            return decode(upload.read(MAX_BYTES + 1))
        except RosterUnreadable as exc:
            raise forms.ValidationError(str(exc)) from None


class AddPersonForm(forms.Form):
    """One person: an existing account is enrolled as it is; a new one is created and invited by email."""

    username = forms.CharField(max_length=150, widget=forms.TextInput(attrs={"autocomplete": "off"}))
    email = forms.EmailField(required=False, help_text="Needed for a new account: the invitation goes there.")
    role = forms.ChoiceField(choices=Role.choices, initial=Role.STUDENT)

    def clean_username(self):
        username = self.cleaned_data["username"].strip()
        if problem := username_problem(username):
            raise forms.ValidationError(problem[0].upper() + problem[1:] + ".")
        return username


class RoleForm(forms.Form):
    role = forms.ChoiceField(choices=Role.choices)
