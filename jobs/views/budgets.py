"""GPU-hour budget pages: a student's own standing and burn-down, and the instructor's page (settings, top-ups,
everyone's standing and burn-down, the changes)."""

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from courses import access, budgets, terms
from courses.budget_forms import BudgetSettingsForm, TopUpForm
from courses.models import Role
from jobs import budget_news
from jobs.budgets import standing_of, standings
from jobs.burndown import HEIGHT, WIDTH, course_curves, empty_curve

RECENT_CHANGES = 50
BUDGETS = "see and set its GPU-hour budgets"
SPARK_WIDTH, SPARK_HEIGHT = 120, 30  # each student's small burn-down in the instructor's table


@login_required
def my_budget(request, course_slug: str):
    course = access.get_course(request.user, course_slug)
    now = timezone.now()
    mine, whole = standing_of(course, request.user, now)
    curve = None
    if mine is not None:
        curves = course_curves(course, mine.period, {request.user.pk: mine.limit}, mine.limit, now)
        curve = curves.get(request.user.pk) or empty_curve(mine.limit, mine.period, now)
    context = {"course": course, "mine": mine, "whole": whole, "curve": curve, "width": WIDTH, "height": HEIGHT}
    context["teaches"] = access.may_teach(request.user, course)
    context["manages"] = access.may_manage(request.user, course)
    return render(request, "jobs/budget.html", context)


def _settings(course) -> dict:
    return {name: getattr(course, name) for name in budgets.SETTINGS + budgets.IDLE_SETTINGS}


def _students(course):
    return list(
        get_user_model()
        .objects.filter(enrollments__course=course, enrollments__role=Role.STUDENT)
        .only("pk", "username")
        .order_by("username")
    )


@login_required
def course_budgets(request, course_slug: str):
    course = access.get_managed_course(request.user, course_slug, BUDGETS, write=request.method == "POST")
    students = _students(course)
    settings_form = BudgetSettingsForm(request.POST or None, initial=_settings(course))
    if request.method == "POST" and settings_form.is_valid():
        values = {name: settings_form.cleaned_data[name] for name in budgets.SETTINGS + budgets.IDLE_SETTINGS}
        changed = budgets.set_settings(course, values, actor=request.user)
        messages.success(request, f"Saved: {changed} setting(s) changed." if changed else "Nothing changed.")
        return redirect("jobs:course_budgets", course_slug=course.slug)
    status = 400 if settings_form.errors else 200
    return render(request, "jobs/course_budgets.html", _context(course, students, settings_form, None), status=status)


@login_required
@require_POST
def top_up(request, course_slug: str):
    course = access.get_managed_course(request.user, course_slug, BUDGETS, write=True)
    students = _students(course)
    form = TopUpForm(request.POST, students=students)
    if form.is_valid():
        student = form.students[form.cleaned_data["student"]]
        with transaction.atomic():
            change = budgets.top_up(
                course, student, form.cleaned_data["hours"], actor=request.user, reason=form.cleaned_data["reason"]
            )
            budget_news.tell_top_up(course, student, change)
        messages.success(request, f"Added {form.cleaned_data['hours']} GPU-hour(s) to {student.username}'s budget.")
        return redirect("jobs:course_budgets", course_slug=course.slug)
    settings_form = BudgetSettingsForm(initial=_settings(course))
    return render(request, "jobs/course_budgets.html", _context(course, students, settings_form, form), status=400)


def _context(course, students, settings_form, top_up_form) -> dict:
    now = timezone.now()
    rows, whole = [], None
    if budgets.has_budget(course):
        per_student, totals = standings([course], now)
        whole = totals[0] if totals else None
        by_student = {s.student_id: s for s in per_student}
        period = budgets.student_period(course, now)
        limits = {sid: s.limit for sid, s in by_student.items() if sid is not None}
        curves = course_curves(course, period, limits, float(course.student_gpu_hours or 0), now)
        if course.student_gpu_hours is not None:
            for student in students:
                curve = curves.get(student.pk)
                spark = curve.svg_points(SPARK_WIDTH, SPARK_HEIGHT) if curve else ""
                rows.append({"student": student, "standing": by_student.get(student.pk), "spark": spark})
            rows.sort(key=lambda row: -(row["standing"].percent if row["standing"] else 0))  # the most used first
    return {
        "course": course,
        "settings_form": settings_form,
        "top_up_form": top_up_form or TopUpForm(students=students),
        "students": students,
        "rows": rows,
        "whole": whole,
        "period": budgets.student_period(course, now) if course.student_gpu_hours is not None else None,
        "changes": course.budget_changes.select_related("student")[:RECENT_CHANGES],
        "read_only": terms.has_ended(course),
        "spark_width": SPARK_WIDTH,
        "spark_height": SPARK_HEIGHT,
    }
