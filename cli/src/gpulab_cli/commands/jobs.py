"""launch, clone, ps, status and cancel: the jobs of the user (and, for instructors and TAs, of their courses)."""

from __future__ import annotations

import click

from .. import context, exits
from ..client import JSONObject, Portal, Refused
from ..job_ids import complete_job, resolve, short
from ..output import emit_json, fields, note, output_option, table
from .catalog import complete_template
from .follow import INTERVAL, conclude, describe_state, wait_until_ended


def parse_params(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> dict[str, str]:
    """-p KEY=VALUE, repeated: the values go to the portal as text, which checks them against the template."""
    params: dict[str, str] = {}
    for value in values:
        key, sep, text = value.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"{value!r}: write it as KEY=VALUE, e.g. -p seconds=30")
        if key.strip() in params:
            raise click.BadParameter(f"{key.strip()!r} is given twice")
        params[key.strip()] = text
    return params


PARAMS = click.option(
    "-p",
    "--param",
    "params",
    multiple=True,
    metavar="KEY=VALUE",
    callback=parse_params,
    help="A parameter value (repeat for several); `gpulab templates TEMPLATE` lists them.",
)
# The fields of the portal's Job (and its `wait`) that the tables show; tests/test_cli_vocabulary.py checks each one
# against the API schema, so a renamed field fails a test rather than a student's `gpulab ps`.
LIST_COLUMNS = (
    ("STATE", "state"),
    ("TEMPLATE", "template"),
    ("CLUSTER", "cluster"),
    ("COURSE", "course"),
    ("OWNER", "owner"),
    ("CREATED", "created_at"),
    ("EXIT", "exit_code"),
)
STATUS_FIELDS = (
    ("Job", "id"),
    ("State", "state"),
    ("Template", "template"),
    ("Cluster", "cluster"),
    ("Course", "course"),
    ("Owner", "owner"),
    ("Parameters", "params"),
    ("Scheduler id", "scheduler_id"),
    ("Created", "created_at"),
    ("Started", "started_at"),
    ("Finished", "finished_at"),
    ("Exit code", "exit_code"),
    ("Error", "error"),
    ("Never starts", "never_starts_reason"),
    ("Cloned from", "cloned_from"),
)
WAIT_FIELDS = (("Expected start", "estimated_start"), ("Advice", "advice"))

WATCH = click.option("--watch", is_flag=True, help="Wait until the job has ended (exit 4 unless it completed).")


@click.command(
    epilog="""\b
Examples:
  gpulab launch sleep-echo -p seconds=30 -p message=hi
  gpulab launch train-gpt --cluster local --course hpc -p gpus_per_node=2 --watch
  JOB=$(gpulab launch sleep-echo)       # the new job's id on stdout"""
)
@click.argument("template", shell_complete=complete_template)
@PARAMS
@click.option("--cluster", help="The cluster's name (needed when several clusters could run the template).")
@click.option("--course", help="The course's slug (needed when the template is in several of your courses).")
@WATCH
@INTERVAL
@output_option
def launch(
    template: str,
    params: dict[str, str],
    cluster: str | None,
    course: str | None,
    watch: bool,
    interval: float,
    output: str,
) -> None:
    """Launch TEMPLATE with the given parameters; the template's defaults fill the rest."""
    portal = context.portal()
    body: JSONObject = {"template": template, "cluster": cluster or pick_cluster(portal, template), "params": params}
    if course:
        body["course"] = course
    started(portal, portal.post("/jobs/", body), watch=watch, interval=interval, output=output)


@click.command(
    epilog="""\b
Examples:
  gpulab clone 3f2a9c1e -p seconds=60
  gpulab clone 3f2a9c1e --cluster other --watch"""
)
@click.argument("job", shell_complete=complete_job)
@PARAMS
@click.option("--cluster", help="Run the copy on this cluster instead of the original's.")
@WATCH
@INTERVAL
@output_option
def clone(job: str, params: dict[str, str], cluster: str | None, watch: bool, interval: float, output: str) -> None:
    """Launch a copy of JOB; the parameters given replace the original's."""
    portal = context.portal()
    source = resolve(portal, job)
    body: JSONObject = {"params": params, **({"cluster": cluster} if cluster else {})}
    started(portal, portal.post(f"/jobs/{source['id']}/clone/", body), watch=watch, interval=interval, output=output)


def started(portal: Portal, job: JSONObject, *, watch: bool, interval: float, output: str) -> None:
    note(f"Launched job {short(job)}: {job['template']} on {job['cluster']} in {job['course']} ({job['state']}).")
    if watch:
        conclude(wait_until_ended(portal, job, interval=interval, timeout=None), output)
    elif output == "json":
        emit_json(job)
    else:
        click.echo(job["id"])
        note(f"Follow it with: gpulab logs -f {short(job)}")


def pick_cluster(portal: Portal, template: str) -> str:
    """The one cluster that can run the template, when --cluster is left out; else the user is asked to name one."""
    enabled = [c for c in portal.each("/clusters/") if c["enabled"]]
    if len(enabled) > 1:
        backend = portal.get(f"/templates/{template}/")["backend"]
        # A kind runs its own templates, and slurm-rest runs slurm's (the portal's clusters/kinds.py).
        enabled = [c for c in enabled if c["kind"] == backend or c["kind"].startswith(f"{backend}-")] or enabled
    if not enabled:
        raise exits.Refused("No cluster is open to you now.")
    if len(enabled) > 1:
        names = ", ".join(c["name"] for c in enabled)
        raise click.UsageError(f"Several clusters could run {template}; name one with --cluster ({names}).")
    return str(enabled[0]["name"])


@click.command(
    epilog="""\b
Examples:
  gpulab ps
  gpulab ps --state running -o json
  gpulab ps --all --course hpc            # instructors and TAs: the course's jobs"""
)
@click.option("--state", help="Only jobs in this state (queued, pending, running, completed, failed, …).")
@click.option("--course", help="Only jobs of the course with this slug.")
@click.option("--mine/--all", default=True, show_default=True, help="Your own jobs, or every job you may see.")
@click.option("--limit", type=click.IntRange(min=1), default=100, show_default=True, help="The newest this many.")
@output_option
def ps(state: str | None, course: str | None, mine: bool, limit: int, output: str) -> None:
    """Your jobs, newest first."""
    portal = context.portal()
    jobs = list(portal.each("/jobs/", limit=limit, state=state, course=course, mine="1" if mine else None))
    if output == "json":
        emit_json(jobs)
        return
    if not jobs:
        note("No jobs.")
        return
    columns = [(title, field) for title, field in LIST_COLUMNS if not (mine and field == "owner")]
    rows = ([short(j), *(j[field] for _, field in columns)] for j in jobs)
    table(["JOB", *(title for title, _ in columns)], rows)
    if len(jobs) == limit:
        note(f"The newest {limit}; --limit shows more.")


@click.command(
    epilog="""\b
Examples:
  gpulab status 3f2a9c1e
  gpulab status 3f2a9c1e -o json | jq -r .state"""
)
@click.argument("job", shell_complete=complete_job)
@output_option
def status(job: str, output: str) -> None:
    """JOB's state, parameters, times and, while it waits, why."""
    found = resolve(context.portal(), job)
    if output == "json":
        emit_json(found)
        return
    waiting = found.get("wait") or {}
    shown = [(label, describe_state(found) if field == "state" else found[field]) for label, field in STATUS_FIELDS]
    fields([*shown, *((label, waiting.get(field)) for label, field in WAIT_FIELDS)])


@click.command(
    epilog="""\b
Examples:
  gpulab cancel 3f2a9c1e
  gpulab cancel 3f2a 77c0 --yes"""
)
@click.argument("jobs", nargs=-1, required=True, shell_complete=complete_job)
@click.option("-y", "--yes", is_flag=True, help="Do not ask for confirmation.")
@output_option
def cancel(jobs: tuple[str, ...], yes: bool, output: str) -> None:
    """Cancel one or more jobs (asks first unless --yes). Exit 3 if the portal refused any of them."""
    portal = context.portal()
    found = [resolve(portal, name) for name in jobs]  # every name understood before anything is cancelled
    if not yes:
        listed = "".join(f"  {short(j)}  {j['template']}  {j['state']}\n" for j in found)
        which = "this job" if len(found) == 1 else f"these {len(found)} jobs"
        click.confirm(f"{listed}Cancel {which}?", abort=True, err=True)
    answers, refused = [], []
    for job in found:
        try:
            answer = portal.post(f"/jobs/{job['id']}/cancel/")
        except Refused as exc:
            refused.append(f"{short(job)}: {exc}")
            continue
        answers.append(answer)
        note(f"{short(job)}: {answer.get('detail') or answer['state']}")
    if output == "json":
        emit_json(answers)
    if refused:
        raise exits.Refused("\n".join(refused))
