from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404, redirect, render

from core.templating.resources import RESOURCES
from courses import quotas, terms
from jobs import access
from jobs.budgets import standing_of
from jobs.forms import LaunchForm
from jobs.launch import LaunchInvalid, launch
from jobs.launch_facts import identity_gaps, quota_use, run_estimates
from jobs.rightsize import rightsized_params
from jobs.waiting import sooner_params


@login_required
def launch_form(request, course_slug: str, template_slug: str):
    course = access.get_course(request.user, course_slug)
    template = get_object_or_404(access.launchable_templates(request.user, course), slug=template_slug)
    clusters = access.launchable_clusters(request.user, course, template)
    source = access.get_job(request.user, request.GET["from"]) if request.GET.get("from") else None
    # A lab step's link (labs/views.py) opens the form with its values (?set.<name>=…) and locks some (?fix=<name>).
    preset = {key.removeprefix("set."): value for key, value in request.GET.items() if key.startswith("set.")}
    locked = frozenset(request.GET.getlist("fix")) & preset.keys()
    initial: dict = LaunchForm.initial_from(preset)
    rightsized = source is not None and request.GET.get("rightsized") == "1"
    sooner = source is not None and request.GET.get("sooner") == "1"
    if source is not None:
        params = rightsized_params(source) if rightsized else sooner_params(source) if sooner else source.params
        initial = {**LaunchForm.initial_from(params), "cluster": source.cluster_id}
    form = LaunchForm(request.POST or None, template=template, clusters=clusters, initial=initial, locked=locked)
    if request.method == "POST" and form.is_valid():
        try:
            job = launch(
                request.user,
                course=course,
                template=template,
                cluster=form.cleaned_data["cluster"],
                raw_params=form.param_values(),
                cloned_from=source,
            )
        except LaunchInvalid as exc:
            form.add_param_errors(exc.errors)
        except access.LaunchRefused as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"Launched {template.name}. It is queued for {job.cluster.display_name}.")
            return redirect(job)
    teaches = access.may_teach(request.user, course)
    budget, course_budget = (None, None) if teaches else standing_of(course, request.user)
    context = {
        "budget": budget,
        "course_budget": course_budget,
        "course": course,
        "template": template,
        "form": form,
        "source": source,
        "rightsized": rightsized,
        "sooner": sooner,
        "has_clusters": clusters.exists(),
        "quota": quotas.limits_for(course, request.user),
        "quota_use": quota_use(request.user, course),
        "estimates": run_estimates(template, clusters),
        "identity_gaps": identity_gaps(request.user, clusters),
        "teaches": teaches,
        "term_refusal": terms.launch_refusal(course, teaches=teaches),
        # The form's switch to a sweep of the parameters the author marked (the sweep form offers those it can run).
        "sweepable": any(p.sweep and p.name not in RESOURCES for p in form.schema),
    }
    return render(request, "jobs/launch.html", context, status=400 if form.errors else 200)


@login_required
def clone(request, job_id):
    """Clone and edit: the launch form, filled with the job's values (right-sized ones with ?rightsized=1, those that
    would start a pending job sooner with ?sooner=1)."""
    job = access.get_job(request.user, job_id)
    url = redirect("jobs:launch", course_slug=job.course.slug, template_slug=job.template.slug).url
    adjusted = "".join(f"&{flag}=1" for flag in ("rightsized", "sooner") if request.GET.get(flag) == "1")
    return redirect(f"{url}?from={job.pk}{adjusted}")
