"""Launching a job: access, typed validation, resource caps, the course quota, the Job row, the submit task."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Count, Sum

from clusters import kinds
from clusters.backends.kind import Rendered, RenderRefused, RenderRequest
from clusters.identity import IdentityMissing, account_for
from core.choices import ACTIVE_STATES, EventKind
from core.templating.params import requested_gpus, validate_values
from core.templating.resources import RESOURCES
from courses import quotas
from courses.models import Role
from jobs import access

from . import budgets, enqueue
from .models import Job, JobTemplate
from .states import record


class LaunchInvalid(Exception):
    """Parameter values failed validation; `errors` maps field name → message."""

    def __init__(self, errors: dict[str, str]):
        super().__init__("Some values are not valid.")
        self.errors = errors


class QuotaExceeded(access.LaunchRefused):
    pass


class BudgetExhausted(access.LaunchRefused):
    """A GPU-hour budget (the student's or the course's) is used up; the message says what is left and when."""


def cluster_choices(cluster) -> dict[str, tuple[str, ...]]:
    return {"partition": tuple(cluster.partitions or ()), "gpu_type": tuple(cluster.gpu_types or ())}


def validate_launch(template: JobTemplate, cluster, raw: Mapping[str, Any]) -> dict[str, Any]:
    """Typed values within the template's caps, or LaunchInvalid."""
    values, errors = validate_values(template.schema(), raw, cluster_choices=cluster_choices(cluster))
    if not errors:
        errors.update(resource_cap_errors(template, values))
    if not errors:
        errors.update(partition_fit_errors(template, cluster, values))
    if errors:
        raise LaunchInvalid(errors)
    return values


def resource_cap_errors(template: JobTemplate, values: Mapping[str, Any]) -> dict[str, str]:
    errors = {}
    if int(values.get("nodes", 1) or 1) > template.max_nodes:
        errors["nodes"] = f"This template allows at most {template.max_nodes} node(s)."
    if requested_gpus(values) > template.max_gpus:
        field = "gpus_per_node" if "gpus_per_node" in values else "nodes"
        errors[field] = f"This template allows at most {template.max_gpus} GPU(s) per job in total."
    if int(values.get("time_minutes", 0) or 0) > template.max_minutes:
        errors["time_minutes"] = f"This template allows at most {template.max_minutes} minutes."
    return errors


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def partition_fit_errors(template: JobTemplate, cluster, values: Mapping[str, Any]) -> dict[str, str]:
    """What the partition could never give this job, from the limits the cluster last reported (none learnt: no
    check; SLURM still refuses or holds the job)."""
    limits = cluster.limits_of(values.get("partition") or None)
    if limits is None:
        return {}
    labels = {p.name: p.label for p in template.schema()}

    def label(resource: str) -> str:  # the template's own label, else the resource table's
        return labels.get(resource) or RESOURCES[resource].label

    name, errors = limits.name, {}
    nodes = int(values.get("nodes", 1) or 1)
    if nodes > limits.nodes:
        errors["nodes"] = (
            f"Partition {name} has {_count(limits.nodes, 'node')}; this job asks for {nodes}. "
            f"Lower {label('nodes')} to {limits.nodes}."
        )
    elif limits.max_nodes_per_job and nodes > limits.max_nodes_per_job:
        errors["nodes"] = (
            f"Partition {name} lets one job use at most {_count(limits.max_nodes_per_job, 'node')}; this job asks "
            f"for {nodes}. Lower {label('nodes')} to {limits.max_nodes_per_job}."
        )
    gpus = int(values.get("gpus_per_node", 0) or 0)
    if gpus > limits.gpus_per_node:
        field = label("gpus_per_node")
        if limits.gpus_per_node:
            errors["gpus_per_node"] = (
                f"Nodes of partition {name} have at most {_count(limits.gpus_per_node, 'GPU')}; this job asks for "
                f"{gpus} per node. Lower {field} to {limits.gpus_per_node}."
            )
        else:
            other = " or pick a partition with GPUs" if "partition" in values else ""
            errors["gpus_per_node"] = (
                f"Partition {name} has no GPUs; this job asks for {gpus} per node. Set {field} to 0{other}."
            )
    minutes = int(values.get("time_minutes", 0) or 0)
    if limits.max_minutes and minutes > limits.max_minutes:
        errors["time_minutes"] = (
            f"Partition {name} allows at most {limits.max_minutes} minutes; this job asks for {minutes}. "
            f"Lower {label('time_minutes')} to {limits.max_minutes}."
        )
    return errors


def render(template: JobTemplate, course, user, cluster, values: Mapping[str, Any], job_id: uuid.UUID) -> Rendered:
    """What the cluster's kind will submit for these values, and the GPUs it holds; LaunchRefused says why not."""
    request = RenderRequest(job_id=job_id, values=values, template=template, course=course, user=user, cluster=cluster)
    try:
        return kinds.kind_of(cluster.kind).render(request)
    except RenderRefused as exc:
        raise access.LaunchRefused(str(exc)) from None


def launch(user, *, course, template: JobTemplate, cluster, raw_params: Mapping[str, Any], cloned_from=None) -> Job:
    """Create the job in `queued` and queue its submission on commit. Raises LaunchRefused or LaunchInvalid."""
    access.check_launch(user, course, template, cluster)
    values = validate_launch(template, cluster, raw_params)
    try:
        account = account_for(cluster, user)
    except IdentityMissing as exc:
        raise access.LaunchRefused(str(exc)) from None
    if account is None:
        raise access.LaunchRefused(
            f"The cluster “{cluster.display_name}” has no account to run jobs as yet; ask an admin to add one."
        )
    check_files(template, cluster, account, user, values)
    job_id = uuid.uuid4()
    rendered = render(template, course, user, cluster, values, job_id)
    script, gpus = rendered.script, rendered.gpus
    with transaction.atomic():
        check_quota(user, course, gpus)
        job = Job.objects.create(
            id=job_id,
            owner=user,
            course=course,
            template=template,
            cluster=cluster,
            account=account,
            params=values,
            script=script,
            gpus=gpus,
            cloned_from=cloned_from,
        )
        origin = f" (a clone of job {cloned_from.short_id})" if cloned_from else ""
        record(job, EventKind.LAUNCH, f"Launched {template.name} on {cluster.display_name}{origin}.", actor=user)
        enqueue.submit(job.pk)
    return job


def check_files(template: JobTemplate, cluster, account, user, values: Mapping[str, Any]) -> None:
    """LaunchInvalid naming each file parameter (a path in the user's Files space) whose file the job's identity
    cannot read, where the cluster's kind can look: now, rather than after minutes in the queue."""
    paths = {p.name: values[p.name] for p in template.schema() if p.in_files and values.get(p.name)}
    if paths:
        errors = kinds.kind_of(cluster.kind).unreadable_files(cluster, account, user, paths)
        if errors:
            raise LaunchInvalid(errors)


def check_quota(user, course, gpus: int, *, replacing: Job | None = None) -> None:
    """Quotas bind students. The user row lock makes one student's simultaneous launches take turns.

    `replacing`: a job of theirs whose GPU count changes (a scaled server); it is not counted twice.
    """
    if access.is_admin(user) or access.role_in(user, course) == Role.INSTRUCTOR:
        return
    get_user_model().objects.select_for_update().filter(pk=user.pk).first()
    refusal = budgets.launch_refusal(course, user) if replacing is None else None
    if refusal:
        raise BudgetExhausted(refusal)
    limits = quotas.limits_for(course, user)
    # A job the scheduler will never start holds nothing (jobs/never_starts.py).
    active = Job.objects.filter(owner=user, course=course, state__in=ACTIVE_STATES, never_starts_since__isnull=True)
    if replacing is not None:
        active = active.exclude(pk=replacing.pk)
    totals = active.aggregate(jobs=Count("pk"), gpus=Sum("gpus"))
    running_jobs, held_gpus = totals["jobs"], totals["gpus"] or 0
    if replacing is None and running_jobs + 1 > limits.max_concurrent_jobs:
        own = "max_concurrent_jobs" in limits.overridden
        allows = "your instructor set your limit to" if own else "the course allows"
        raise QuotaExceeded(
            f"You already have {running_jobs} unfinished job(s) in {course.name}; {allows} "
            f"{limits.max_concurrent_jobs} at a time. Wait for one to finish or cancel one."
        )
    if held_gpus + gpus > limits.max_gpus:
        others = "other " if replacing is not None else ""
        if "max_gpus" in limits.overridden:
            allows = f"your instructor set your limit to {limits.max_gpus}"
        else:
            allows = f"{course.name} allows {limits.max_gpus} per student"
        # Waiting helps only when other jobs hold the GPUs; a request above the whole limit never fits.
        advice = (
            f"Ask for {limits.max_gpus} GPU(s) or fewer."
            if gpus > limits.max_gpus
            else "Ask for fewer GPUs or wait for a job to finish."
        )
        raise QuotaExceeded(
            f"This job needs {gpus} GPU(s) and your {others}unfinished jobs hold {held_gpus}; {allows}. {advice}"
        )
