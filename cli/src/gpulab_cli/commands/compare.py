"""compare: runs side by side, as the portal's comparison page shows them (GET /api/v1/compare/)."""

from __future__ import annotations

import click

from .. import context
from ..job_ids import complete_job, resolve
from ..output import emit_json, note, output_option, table

RESULT_COLUMNS = (
    ("FINAL LOSS", "final_loss"),
    ("TOK/S", "median_tok_s"),
    ("SPEED-UP", "speedup"),
    ("GPU-H", "gpu_hours"),
    ("GPU %", "mean_gpu_util"),
    ("VERDICT", "verdict"),
)


@click.command(
    epilog="""\b
Examples:
  gpulab compare 3f2a9c1e 77c0b2d4
  gpulab compare 3f2a 77c0 91de --baseline 77c0 -o json | jq '.runs[] | {name, speedup: .results.speedup}'"""
)
@click.argument("jobs", nargs=-1, required=True, shell_complete=complete_job)
@click.option("--baseline", help="The run speed-ups are measured against (default: the first).")
@click.option("--series", is_flag=True, help="With -o json: also the charts' downsampled series (Plotly figures).")
@output_option
def compare(jobs: tuple[str, ...], baseline: str | None, series: bool, output: str) -> None:
    """Two or more runs side by side: what differs between them, and their results with speed-ups."""
    portal = context.portal()
    ids = [str(resolve(portal, job)["id"]) for job in jobs]
    base = str(resolve(portal, baseline)["id"]) if baseline else None
    answer = portal.get("/compare/", jobs=",".join(ids), baseline=base)
    if output == "json":
        emit_json(answer if series else {key: value for key, value in answer.items() if key != "figures"})
        return
    if answer.get("note"):
        note(answer["note"])
    differing = [p for p in answer["parameters"] if p["differs"]]
    if differing:
        table(["PARAMETER", *(run["name"] for run in answer["runs"])], ([p["label"], *p["values"]] for p in differing))
    else:
        note("The runs' parameters are the same.")
    rows = (
        [run["id"][:8], run["name"], run["state"], *(_shown(run["results"][field]) for _, field in RESULT_COLUMNS)]
        for run in answer["runs"]
    )
    table(["JOB", "RUN", "STATE", *(title for title, _ in RESULT_COLUMNS)], rows)
    if answer.get("live"):
        note("A run is still going: its figures are as of now.")


def _shown(value: object) -> object:
    if isinstance(value, float):
        return f"{value:.3g}"
    return value
