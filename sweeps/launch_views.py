"""The launch form switched to "Sweep": the shared values (the job launch form's fields), the swept values, and
before anything is launched, how many runs, their GPU-hours against the budget and how many run at once."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404, redirect, render

from jobs import access
from jobs.budgets import standing_of
from jobs.forms import LaunchForm

from .access import get_sweep
from .forms import SweepForm, sweepable
from .launch import LaunchInvalid, SweepInvalid, launch_sweep, preview


@login_required
def sweep_form(request, course_slug: str, template_slug: str):
    course = access.get_course(request.user, course_slug)
    template = get_object_or_404(access.launchable_templates(request.user, course), slug=template_slug)
    clusters = access.launchable_clusters(request.user, course, template)
    initial, sweep_initial = {}, {}
    if request.GET.get("from"):  # "Sweep again": the earlier sweep's values
        earlier = get_sweep(request.user, request.GET["from"])
        initial = {**LaunchForm.initial_from(earlier.base_params), "cluster": earlier.cluster_id}
        sweep_initial = {**SweepForm.initial_from(earlier.swept), "mode": earlier.mode}
    form = LaunchForm(request.POST or None, template=template, clusters=clusters, initial=initial)
    sweep_form = SweepForm(request.POST or None, template=template, initial=sweep_initial)
    fit = None
    if request.method == "POST" and form.is_valid() and sweep_form.is_valid():
        asked = {
            "course": course,
            "template": template,
            "cluster": form.cleaned_data["cluster"],
            "raw_params": form.param_values(),
            "swept": sweep_form.swept(),
            "mode": sweep_form.cleaned_data["mode"],
            "at_once": sweep_form.cleaned_data.get("max_concurrent"),
        }
        try:
            if "check" in request.POST:
                fit = preview(request.user, **asked)
            else:
                sweep = launch_sweep(request.user, **asked)
                messages.success(request, f"Launched a sweep of {sweep.runs.count()} runs of {template.name}.")
                return redirect(sweep)
        except LaunchInvalid as exc:
            form.add_param_errors(exc.errors)
        except SweepInvalid as exc:
            sweep_form.add_sweep_errors(exc)
        except access.LaunchRefused as exc:
            form.add_error(None, str(exc))
    teaches = access.may_teach(request.user, course)
    budget, course_budget = (None, None) if teaches else standing_of(course, request.user)
    context = {
        "course": course,
        "template": template,
        "form": form,
        "sweep_form": sweep_form,
        "sweepable": sweepable(template),
        "fit": fit,
        "budget": budget,
        "course_budget": course_budget,
        "has_clusters": clusters.exists(),
    }
    status = 400 if form.errors or sweep_form.errors else 200
    return render(request, "sweeps/launch.html", context, status=status)
