"""The job tables' filters (My jobs, a course's jobs): state, template, student and a text search.

Filters only add WHERE clauses to the table's one query, so a filtered table costs what the whole one does. The
choices a page offers (templates, the roster) are rendered by the page; the form itself never queries, so the
table's 5-second refresh checks the same filters without loading them again.
"""

from __future__ import annotations

from typing import cast

from django import forms
from django.db.models import CharField, Q
from django.db.models.functions import Cast

from core.choices import ACTIVE_STATES, JobState

from .models import JobQuerySet

UNFINISHED = "unfinished"


class JobFilterForm(forms.Form):
    q = forms.CharField(label="Search", required=False, max_length=100)
    state = forms.ChoiceField(label="State", required=False)
    template = forms.SlugField(label="Template", required=False, max_length=50)
    student = forms.CharField(label="Student", required=False, max_length=150)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        state = cast(forms.ChoiceField, self.fields["state"])
        state.choices = [("", "any state"), (UNFINISHED, "unfinished"), *JobState.choices]
        self.fields["q"].widget.attrs.update(type="search", placeholder="job id, template, scheduler id…")

    @property
    def active(self) -> bool:
        """Whether any filter narrows the table (then an empty table means "no match", not "no jobs")."""
        return self.is_valid() and any(self.cleaned_data.values())

    def apply(self, jobs: JobQuerySet) -> JobQuerySet:
        if not self.is_valid():
            return jobs
        data = self.cleaned_data
        if data["state"] == UNFINISHED:
            jobs = jobs.filter(state__in=ACTIVE_STATES)
        elif data["state"]:
            jobs = jobs.filter(state=data["state"])
        if data["template"]:
            jobs = jobs.filter(template__slug=data["template"])
        if data["student"]:
            jobs = jobs.filter(owner__username=data["student"])
        if text := data["q"].strip():
            jobs = jobs.alias(id_text=Cast("id", CharField())).filter(
                Q(id_text__startswith=text.lower())
                | Q(template__name__icontains=text)
                | Q(scheduler_id__icontains=text)
                | Q(cluster__name__icontains=text)
                | Q(owner__username__icontains=text)
            )
        return jobs
