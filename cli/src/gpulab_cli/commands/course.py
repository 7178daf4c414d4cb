"""course jobs|dashboard|roster: what an instructor or TA sees of a whole course, from a terminal."""

from __future__ import annotations

import click

from .. import context
from ..output import emit_json, note, output_option, table
from .jobs import ps


@click.group(
    epilog="""\b
Examples:
  gpulab course jobs hpc --state pending
  gpulab course dashboard hpc --flag stuck
  gpulab course roster hpc -o json | jq -r '.[] | select(.signed_in | not) | .email'"""
)
def course() -> None:
    """A course you teach: its jobs, the class dashboard's table, its roster."""


@course.command(name="jobs", epilog="\b\nExample:\n  gpulab course jobs hpc --state running -o json")
@click.argument("slug")
@click.option("--state", help="Only jobs in this state (queued, pending, running, completed, failed, …).")
@click.option("--limit", type=click.IntRange(min=1), default=100, show_default=True, help="The newest this many.")
@output_option
@click.pass_context
def course_jobs(ctx: click.Context, slug: str, state: str | None, limit: int, output: str) -> None:
    """Every job of the course SLUG, newest first (as `gpulab ps --all --course SLUG`)."""
    ctx.invoke(ps, state=state, course=slug, mine=False, limit=limit, output=output)


STUDENT_COLUMNS = (
    ("STUDENT", "username"),
    ("JOBS", "jobs"),
    ("RUNNING", "running"),
    ("WAITING", "waiting"),
    ("DONE", "completed"),
    ("FAILED", "failed"),
    ("GPU-H", "gpu_hours"),
    ("GPU %", "mean_gpu_util"),
    ("LAST", "last_state"),
    ("FLAGS", "flags"),
)


@course.command(epilog="\b\nExamples:\n  gpulab course dashboard hpc\n  gpulab course dashboard hpc --flag stuck")
@click.argument("slug")
@click.option(
    "--flag",
    type=click.Choice(["stuck", "waiting", "failed"]),
    help="Only the students with this flag, as the page's filter buttons.",
)
@output_option
def dashboard(slug: str, flag: str | None, output: str) -> None:
    """The class dashboard of SLUG: jobs per state, and each student's jobs, GPU-hours and flags."""
    answer = context.portal().get(f"/courses/{slug}/dashboard/")
    students = [s for s in answer["students"] if flag is None or flag in s["flags"]]
    if output == "json":
        emit_json({**answer, "students": students})
        return
    counted = ", ".join(f"{state} {n}" for state, n in answer["states"].items() if n)
    note(f"Jobs: {counted or 'none yet'}")
    if not students:
        note("No students" + (f" flagged {flag}." if flag else " in this course yet."))
        return
    table([title for title, _ in STUDENT_COLUMNS], ([s[field] for _, field in STUDENT_COLUMNS] for s in students))


@course.command(epilog="\b\nExample:\n  gpulab course roster hpc -o json")
@click.argument("slug")
@output_option
def roster(slug: str, output: str) -> None:
    """The people of the course SLUG, with their roles and whether they have signed in (instructors only)."""
    people = context.portal().get(f"/courses/{slug}/roster/")
    if output == "json":
        emit_json(people)
        return
    if not people:
        note("Nobody is in this course yet.")
        return
    columns = ("USERNAME", "NAME", "EMAIL", "ROLE", "SIGNED IN", "CLUSTER USER")
    fields = ("username", "name", "email", "role", "signed_in", "cluster_username")
    table(columns, ([person[field] for field in fields] for person in people))
