"""Launching a sweep: the same checks as one job (jobs/launch.py), the plan, the fit, then the Sweep, one Job per run
and the sweep's submit task, queued on commit. Nothing reaches the cluster before every check has passed."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction

from clusters import kinds
from clusters.backends.kind import Rendered, RenderRefused, RenderRequest
from clusters.identity import IdentityMissing, account_for
from core.choices import EventKind
from core.enqueue import send_on_commit
from jobs import access
from jobs.launch import LaunchInvalid, check_files, validate_launch
from jobs.models import Job
from jobs.states import record_many

from . import fit as fitting
from .cancellation import SUBMIT_SWEEP
from .models import Sweep, SweepRun, SweepSubmission
from .plan import SweepInvalid, SweepPlan, plan


class SweepRefused(access.LaunchRefused):
    """The sweep does not fit the student's budget or limits now; the message says how many runs would."""


def prepare(
    user, *, course, template, cluster, raw_params: Mapping[str, Any], swept: Mapping[str, Sequence[Any]], mode: str
) -> tuple[dict[str, Any], SweepPlan]:
    """The shared values (typed, within the template's caps) and the plan; LaunchRefused, LaunchInvalid or
    SweepInvalid otherwise. The form's preview and the launch both start here."""
    access.check_launch(user, course, template, cluster)
    the_plan = plan(template.schema(), swept, mode)
    base = validate_launch(template, cluster, {k: v for k, v in raw_params.items() if k not in the_plan.swept})
    for run in the_plan.runs:  # each run within the template's caps and the partition's limits, as a job would be
        validate_launch(template, cluster, {**base, **run})
    return base, the_plan


def preview(user, *, course, template, cluster, raw_params, swept, mode, at_once: int | None = None) -> fitting.Fit:
    base, the_plan = prepare(
        user, course=course, template=template, cluster=cluster, raw_params=raw_params, swept=swept, mode=mode
    )
    runs = _rendered(user, course, template, cluster, base, the_plan, [uuid.uuid4() for _ in the_plan.runs])
    return _fit(user, course, template, base, the_plan, runs, at_once)


def _fit(user, course, template, base: dict, the_plan: SweepPlan, runs: list[Rendered], at_once) -> fitting.Fit:
    values = [{**base, **run} for run in the_plan.runs]
    shapes = [(rendered.gpus, int(run.get("time_minutes") or 0)) for rendered, run in zip(runs, values, strict=True)]
    return fitting.fit(user, course, template, shapes=shapes, asked_at_once=at_once)


def _rendered(user, course, template, cluster, base: dict, the_plan: SweepPlan, run_ids: list) -> list[Rendered]:
    """What each run will submit: one array script for them all (each task reads its own values), or, where an array
    cannot hold the sweep (sweeps/release.py), each run's own script with its values written in."""
    kind = kinds.kind_of(cluster.kind)
    names = tuple(the_plan.swept)
    as_array = kind.sweep_as_array(names)
    requests = [
        RenderRequest(
            job_id=run_id,
            values={**base, **run},
            template=template,
            course=course,
            user=user,
            cluster=cluster,
            swept=names if as_array else (),
        )
        for run_id, run in zip(run_ids, the_plan.runs, strict=True)
    ]
    try:
        if as_array:  # one script; each run holds what its header asks for, which no swept value changes
            return [kind.render(requests[0])] * len(requests)
        return [kind.render(request) for request in requests]
    except RenderRefused as exc:
        raise access.LaunchRefused(str(exc)) from None


def launch_sweep(user, *, course, template, cluster, raw_params, swept, mode, at_once: int | None = None) -> Sweep:
    """The Sweep and its runs, queued; SweepRefused (with how many runs fit), LaunchRefused, LaunchInvalid or
    SweepInvalid otherwise."""
    base, the_plan = prepare(
        user, course=course, template=template, cluster=cluster, raw_params=raw_params, swept=swept, mode=mode
    )
    try:
        account = account_for(cluster, user)
    except IdentityMissing as exc:
        raise access.LaunchRefused(str(exc)) from None
    if account is None:
        raise access.LaunchRefused(
            f"The cluster “{cluster.display_name}” has no account to run jobs as yet; ask an admin to add one."
        )
    check_files(template, cluster, account, user, base)
    sweep_id = uuid.uuid4()
    run_ids = [uuid.uuid4() for _ in the_plan.runs]
    names = tuple(the_plan.swept)
    kind = kinds.kind_of(cluster.kind)
    as_array = kind.sweep_as_array(names)
    # An array renders once, keyed by the sweep's id; each run of a sweep that goes run by run, by its own.
    keys = [sweep_id] * len(run_ids) if as_array else run_ids
    rendered = _rendered(user, course, template, cluster, base, the_plan, keys)
    runs = list(zip(run_ids, the_plan.runs, strict=True))
    values_file = kind.array_values(template.schema(), runs, names) if as_array else ""
    with transaction.atomic():
        get_user_model().objects.select_for_update().filter(pk=user.pk).first()
        fit = _fit(user, course, template, base, the_plan, rendered, at_once)
        if fit.refusal:
            raise SweepRefused(fit.refusal)
        sweep = Sweep.objects.create(
            id=sweep_id,
            owner=user,
            course=course,
            template=template,
            cluster=cluster,
            account=account,
            base_params=base,
            swept=the_plan.swept,
            mode=the_plan.mode,
            max_concurrent=fit.at_once,
            submission=SweepSubmission.ARRAY if as_array else SweepSubmission.RUNS,
            script=rendered[0].script,
            values_file=values_file,
        )
        jobs = Job.objects.bulk_create(
            Job(
                id=run_id,
                owner=user,
                course=course,
                template=template,
                cluster=cluster,
                account=account,
                params={**base, **run},
                script=script.script,
                gpus=script.gpus,
                in_array=True,
            )
            for run_id, run, script in zip(run_ids, the_plan.runs, rendered, strict=True)
        )
        SweepRun.objects.bulk_create(SweepRun(sweep=sweep, job=job, index=i) for i, job in enumerate(jobs))
        record_many(
            jobs, EventKind.LAUNCH, f"Launched as a run of sweep {sweep.short_id} ({fit.summary()})", actor=user
        )
        send_on_commit(SUBMIT_SWEEP, str(sweep.pk))  # the array's submission, or the first runs let out
    return sweep


__all__ = ["LaunchInvalid", "SweepInvalid", "SweepRefused", "launch_sweep", "prepare", "preview"]
