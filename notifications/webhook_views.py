"""The course's webhook page: its instructors (and admins) set the URL and the events it receives."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render

from jobs import access

from .events import Channel, Event
from .models import CourseWebhook, Notification
from .webhook_urls import UnsafeURL, check

RECENT = 10  # the last posts, with what the webhook answered
WEBHOOK_EVENTS = [(e.value, e.label) for e in Event]


class WebhookForm(forms.ModelForm):
    url = forms.URLField(
        label="Webhook URL",
        max_length=500,
        assume_scheme="https",
        help_text="The incoming-webhook URL your Slack or Mattermost channel gives you (https://…).",
    )
    events = forms.MultipleChoiceField(choices=WEBHOOK_EVENTS, widget=forms.CheckboxSelectMultiple, required=False)

    class Meta:
        model = CourseWebhook
        fields = ["url", "events", "enabled"]

    def clean_url(self):
        try:
            return check(self.cleaned_data["url"])
        except UnsafeURL as exc:
            raise forms.ValidationError(str(exc)) from None


@login_required
def course_webhook(request, slug: str):
    course = access.get_managed_course(request.user, slug, "see and set its webhook", write=request.method == "POST")
    hook = CourseWebhook.objects.filter(course=course).first()
    form = WebhookForm(request.POST or None, instance=hook or CourseWebhook(course=course))
    if request.method == "POST" and "remove" in request.POST:
        CourseWebhook.objects.filter(course=course).delete()
        messages.success(request, "The webhook is removed; nothing more is posted to it.")
        return redirect("notifications:course_webhook", slug=course.slug)
    if request.method == "POST" and form.is_valid():
        form.instance.course, form.instance.updated_by = course, request.user
        form.save()
        messages.success(request, "Saved. The chosen events of this course are posted to the webhook.")
        return redirect("notifications:course_webhook", slug=course.slug)
    recent = Notification.objects.filter(course=course, channel=Channel.WEBHOOK).order_by("-created_at")[:RECENT]
    context = {"course": course, "form": form, "hook": hook, "recent": recent}
    return render(request, "notifications/course_webhook.html", context, status=400 if form.errors else 200)
