"""sweep: launch a template over several values of up to three of its sweepable parameters (POST /api/v1/sweeps/).

The portal runs a sweep as one SLURM job array and each run as a job: `gpulab ps`, `logs`, `wait` and `compare`
take its runs as they take any job."""

from __future__ import annotations

import click

from .. import context
from ..client import JSONObject
from ..output import emit_json, note, output_option, table
from .jobs import PARAMS, pick_cluster


def parse_swept(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> dict[str, list[str]]:
    """-s KEY=V1,V2,…, repeated: the values go to the portal as text, which checks each against the template."""
    swept: dict[str, list[str]] = {}
    for value in values:
        key, sep, text = value.partition("=")
        listed = [item.strip() for item in text.split(",") if item.strip()]
        if not sep or not key.strip() or not listed:
            raise click.BadParameter(f"{value!r}: write it as KEY=V1,V2,…, e.g. -s lr=1e-3,3e-4")
        if key.strip() in swept:
            raise click.BadParameter(f"{key.strip()!r} is given twice")
        swept[key.strip()] = listed
    return swept


@click.command(
    epilog="""\b
Examples:
  gpulab sweep tiny-lm-single -s precision=fp32,bf16 -s batch_size=32,64
  gpulab sweep tiny-lm-single -s lr=1e-3,3e-4,1e-4 -s batch_size=32,64,128 --zip --at-once 2
  gpulab sweep sleep-echo -s seconds=5,10 -o json | jq -r '.runs[].id'"""
)
@click.argument("template")
@click.option(
    "-s",
    "--sweep",
    "swept",
    multiple=True,
    required=True,
    metavar="KEY=V1,V2,…",
    callback=parse_swept,
    help="A parameter and its values (up to three parameters; the template says which may be swept).",
)
@PARAMS
@click.option("--zip", "zipped", is_flag=True, help="Pair the lists position by position instead of every combination.")
@click.option("--at-once", type=click.IntRange(min=1), help="Run at most this many at a time (default: what fits).")
@click.option("--cluster", help="The cluster's name (needed when several clusters could run the template).")
@click.option("--course", help="The course's slug (needed when the template is in several of your courses).")
@output_option
def sweep(
    template: str,
    swept: dict[str, list[str]],
    params: dict[str, str],
    zipped: bool,
    at_once: int | None,
    cluster: str | None,
    course: str | None,
    output: str,
) -> None:
    """Launch TEMPLATE once per combination of the swept values, as one sweep; the portal refuses one larger than
    your GPU-hour budget before anything runs, saying how many runs fit."""
    portal = context.portal()
    body: JSONObject = {
        "template": template,
        "cluster": cluster or pick_cluster(portal, template),
        "params": params,
        "swept": swept,
        "mode": "zip" if zipped else "grid",
    }
    body |= {"course": course} if course else {}
    body |= {"max_concurrent": at_once} if at_once else {}
    made = portal.post("/sweeps/", body)
    runs = made["runs"]
    note(f"Launched sweep {str(made['id'])[:8]}: {len(runs)} runs of {made['template']} on {made['cluster']}.")
    if output == "json":
        emit_json(made)
        return
    names = sorted({name for run in runs for name in swept if name in run["params"]})
    table(
        ["JOB", "TASK", *(name.upper() for name in names)],
        ([run["id"][:8], run["task"], *(run["params"][n] for n in names)] for run in runs),
    )
    note("Follow a run with: gpulab logs -f JOB; compare them with: gpulab compare JOB JOB…")
