"""The instructor's quota form: the course's limits and, per student, an optional override of each."""

from __future__ import annotations

import re

from django import forms

from .models import QuotaField
from .quotas import FIELDS, MAX_VALUE

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
