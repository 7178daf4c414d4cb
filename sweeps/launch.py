"""Launching a sweep: the same checks as one job (jobs/launch.py), the plan, the fit, then the Sweep, one Job per run
and the array's submit task, queued on commit. Nothing reaches the cluster before every check has passed."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction

from clusters import kinds
from clusters.backends import arrays
from clusters.backends.kind import RenderRefused, RenderRequest
from clusters.identity import IdentityMissing, account_for
from core.choices import EventKind
from core.enqueue import send_on_commit
from core.templating.params import requested_gpus
from core.templating.rendering import value_text
from jobs import access
from jobs.launch import LaunchInvalid, check_files, validate_launch
from jobs.models import Job
from jobs.states import record_many

from . import fit as fitting
from .cancellation import SUBMIT_SWEEP
from .models import Sweep, SweepRun
from .plan import SweepInvalid, SweepPlan, plan


class SweepRefused(access.LaunchRefused):
    """The sweep does not fit the student's budget or limits now; the message says how many runs would."""


def prepare(
    user, *, course, template, cluster, raw_params: Mapping[str, Any], swept: Mapping[str, Sequence[Any]], mode: str
) -> tuple[dict[str, Any], SweepPlan]:
    """The shared values (typed, within the template's caps) and the plan; LaunchRefused, LaunchInvalid or
    SweepInvalid otherwise. The form's preview and the launch both start here."""
    access.check_launch(user, course, template, cluster)
    if not kinds.kind_of(cluster.kind).sweeps_as_arrays:
        raise access.LaunchRefused(
            f"Sweeps cannot run on “{cluster.display_name}” yet: pick a SLURM cluster reached over SSH, or launch "
            "the runs one by one."
        )
    the_plan = plan(template.schema(), swept, mode)
    base = validate_launch(template, cluster, {k: v for k, v in raw_params.items() if k not in the_plan.swept})
    for run in the_plan.runs:  # each run within the template's caps and the partition's limits, as a job would be
        validate_launch(template, cluster, {**base, **run})
    return base, the_plan


def preview(user, *, course, template, cluster, raw_params, swept, mode, at_once: int | None = None) -> fitting.Fit:
    base, the_plan = prepare(
        user, course=course, template=template, cluster=cluster, raw_params=raw_params, swept=swept, mode=mode
    )
    return _fit(user, course, template, base, the_plan, at_once)


def _fit(user, course, template, base: dict, the_plan: SweepPlan, at_once: int | None) -> fitting.Fit:
    gpus = requested_gpus(base)
    minutes = int(base.get("time_minutes") or 0)
    return fitting.fit(user, course, template, runs=the_plan.size, gpus=gpus, minutes=minutes, asked_at_once=at_once)


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
    request = RenderRequest(
        job_id=sweep_id,
        values={**base, **the_plan.runs[0]},
        template=template,
        course=course,
        user=user,
        cluster=cluster,
        swept=names,
    )
    try:
        rendered = kinds.kind_of(cluster.kind).render(request)
    except RenderRefused as exc:
        raise access.LaunchRefused(str(exc)) from None
    schema = {p.name: p for p in template.schema()}
    values_file = arrays.values_file(
        [
            (run_id, [value_text(schema[n], run[n]) for n in names])
            for run_id, run in zip(run_ids, the_plan.runs, strict=True)
        ]
    )
    with transaction.atomic():
        get_user_model().objects.select_for_update().filter(pk=user.pk).first()
        fit = _fit(user, course, template, base, the_plan, at_once)
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
            script=rendered.script,
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
                script=rendered.script,
                gpus=rendered.gpus,
                in_array=True,
            )
            for run_id, run in zip(run_ids, the_plan.runs, strict=True)
        )
        SweepRun.objects.bulk_create(SweepRun(sweep=sweep, job=job, index=i) for i, job in enumerate(jobs))
        record_many(
            jobs, EventKind.LAUNCH, f"Launched as a run of sweep {sweep.short_id} ({fit.summary()})", actor=user
        )
        send_on_commit(SUBMIT_SWEEP, str(sweep.pk))
    return sweep


__all__ = ["LaunchInvalid", "SweepInvalid", "SweepRefused", "launch_sweep", "prepare", "preview"]
