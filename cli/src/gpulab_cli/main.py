"""The `gpulab` command: its options, its commands, and the portal's refusals turned into exit codes."""

from __future__ import annotations

from typing import Any

import click

from . import __version__, client, exits
from .commands import auth, catalog, compare, course, files, follow, jobs, shell, sweep


class PortalCommands(click.Group):
    """Every command's client errors end the same way: the portal's words on stderr and the exit code they mean."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except client.Refused as exc:
            hint = "\nSign in again: gpulab login URL" if exc.status == 401 else ""
            raise exits.Refused(f"{exc}{hint}") from None
        except client.Unavailable as exc:
            raise exits.Failure(str(exc)) from None


@click.group(
    cls=PortalCommands,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110},
    epilog="""\b
Exit codes: 0 done, 1 anything else (portal unreachable, server error, --timeout), 2 usage,
3 refused or not found (the portal's words on stderr), 4 the job did not complete (wait, --watch).
Read commands take -o json: then stdout holds nothing but the JSON document.

\b
Shell completion (commands, options, template slugs, job ids), e.g. in ~/.bashrc:
  eval "$(_GPULAB_COMPLETE=bash_source gpulab)"
zsh: _GPULAB_COMPLETE=zsh_source; fish: _GPULAB_COMPLETE=fish_source gpulab | source""",
)
@click.option(
    "--profile",
    envvar="GPULAB_PROFILE",
    metavar="NAME",
    help="Which signed-in portal to use (default: the last one signed in to without --profile). Env: GPULAB_PROFILE.",
)
@click.version_option(__version__, prog_name="gpulab")
def cli(profile: str | None) -> None:
    """gpulab: launch and follow GPU Lab Portal jobs from a terminal.

    \b
    A first launch:
      gpulab login https://gpulab.example.edu
      gpulab templates
      JOB=$(gpulab launch sleep-echo -p seconds=30)
      gpulab logs -f "$JOB"; gpulab wait "$JOB"
    """


for command in (
    auth.login,
    auth.logout,
    auth.list_profiles,
    catalog.templates,
    jobs.launch,
    jobs.ps,
    jobs.status,
    follow.wait,
    follow.logs,
    jobs.cancel,
    jobs.clone,
    files.files,
    shell.shell,
    course.course,
    compare.compare,
    sweep.sweep,
):
    cli.add_command(command)


def main() -> None:
    cli(prog_name="gpulab")
