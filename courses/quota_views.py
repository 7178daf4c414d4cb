"""The instructor's quota page: the course's per-student limits, per-student overrides, and who changed what."""

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.shortcuts import redirect, render

from . import access, quotas, terms
from .forms import QuotaForm
from .models import Role

RECENT_CHANGES = 50


@login_required
def quota_page(request, slug: str):
    course = access.get_managed_course(request.user, slug, "see and set its quotas", write=request.method == "POST")
    students = list(
        get_user_model()
        .objects.filter(enrollments__course=course, enrollments__role=Role.STUDENT)
        .only("pk", "username")
        .order_by("username")
    )
    form = QuotaForm(request.POST or None, course=course, students=students, overrides=quotas.overrides_by_user(course))
    read_only = terms.has_ended(course)
    if read_only:
        for field in form.fields.values():
            field.disabled = True
    if request.method == "POST" and form.is_valid():
        with transaction.atomic():
            changed = quotas.set_course_limits(course, form.course_values(), actor=request.user)
            for student in students:
                changed += quotas.set_overrides(course, student, form.student_values(student), actor=request.user)
        messages.success(request, f"Saved: {changed} limit(s) changed." if changed else "Nothing changed.")
        return redirect("courses:quotas", slug=course.slug)
    changes = course.quota_changes.select_related("student")[:RECENT_CHANGES]
    context = {"course": course, "form": form, "changes": changes, "read_only": read_only}
    return render(request, "courses/quotas.html", context, status=400 if form.errors else 200)
