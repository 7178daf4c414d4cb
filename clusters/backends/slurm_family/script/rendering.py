"""Turning a template body and validated values into the sbatch script that runs.

Placeholders:
    {{ name }}              the value, shell-quoted (shlex.quote): one inert word whatever it holds
    {{ name|flag:--fp16 }}  the flag when the bool parameter is true, nothing when false
    {{ lab_dir }}           the cluster's lab directory, quoted ("$HOME"/… for ~/…)
    {{ job_id }}            the portal's job UUID

A quoted value is inert only where bash does nothing more with the word than pass it to a program, so the
kind-neutral shell checker (core/templating/shell_safety.py) checks every placeholder's place with bash's own
grammar before anything renders, told what a batch script has (`script_problems`), and refuses
the rest (arithmetic, [[ ]], eval, bash -c, redirections, here-documents, quotes, #SBATCH lines, …). Every value
is also exported as GPULAB_P_<name>, for templates that need it inside text ("$GPULAB_P_name"). The portal
writes the #SBATCH header itself from the resource parameters (the table in resources.py), whose values
are validated tokens.

A sweep's array renders once for all its runs: a swept parameter's placeholder becomes "$GPULAB_P_name" (one
inert word, as the quoted value would be, in the same places the checks allow) and its flag
${GPULAB_ON_name:+--flag}; each task sets those variables from its line of the values file, read as data by
the `task_block` the kind writes (clusters/backends/slurm_family/arrays.py).
"""

from __future__ import annotations

import itertools
import re
import shlex
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from core.templating.params import Param
from core.templating.placeholders import PLACEHOLDER, not_a_parameter, stray_braces
from core.templating.resources import names_in_words
from core.templating.shell_safety import ENV_PREFIX, placeholder_problems, unix_lines

from .header import resource_directives

DEFAULT_LAB_DIR = "~/gpulab"
SWEPT_FLAG_PREFIX = "GPULAB_ON_"  # set (to 1) for a swept bool that is true in this task
# The comments sbatch reads as the job's options, with the fix a value written in one is given.
DIRECTIVES = {"SBATCH": f"name the parameter {names_in_words()} and the portal writes the directive"}


class RenderError(ValueError):
    """The body cannot be rendered; the message says which line and why."""


@dataclass(frozen=True)
class RenderContext:
    job_id: str
    job_name: str
    lab_dir: str
    preamble: str = ""
    files_subdir: str = ""  # the user's own files under the lab directory (clusters/lab_space.py)

    @classmethod
    def on(cls, cluster, job_id, job_name: str, *, files_subdir: str = "") -> RenderContext:
        """What `cluster` gives a script: its lab directory and its admin's preamble. A preview with no cluster
        renders with the default lab directory and no preamble."""
        return cls(
            job_id=str(job_id),
            job_name=job_name[:64],
            lab_dir=cluster.lab_dir if cluster else DEFAULT_LAB_DIR,
            preamble=cluster.preamble if cluster else "",
            files_subdir=files_subdir,
        )


def script_problems(body: str, schema: list[Param] | None = None) -> list[str]:
    """The shell checker's refusals for a batch script, which gets every value as $GPULAB_P_<name> too (so a fix
    may point there) and whose #SBATCH comments sbatch reads as the job's options (so no value may stand in one:
    the portal writes the header from the resource parameters)."""
    return placeholder_problems(body, schema, exported=True, directives=DIRECTIVES)


def check_placeholder_contexts(body: str, schema: list[Param] | None = None) -> None:
    """Refuse placeholders where shell quoting would not keep a value inert (RenderError names each)."""
    found = script_problems(body, schema)
    if found:
        raise RenderError(" ".join(found))


def value_text(param: Param, value: Any) -> str:
    """A value as the script (and a sweep's values file) spells it."""
    return _value_text(param, value)


def _value_text(param: Param, value: Any) -> str:
    if param.type == "bool":
        return "true" if value else "false"
    if param.type == "float":
        return repr(float(value))
    return str(value)


def _lab_dir_word(lab_dir: str) -> str:
    if lab_dir == "~":
        return '"$HOME"'
    if lab_dir.startswith("~/"):
        return '"$HOME"/' + shlex.quote(lab_dir[2:])
    return shlex.quote(lab_dir)


def render_body(
    body: str, schema: list[Param], values: Mapping[str, Any], ctx: RenderContext, swept: frozenset[str] = frozenset()
) -> str:
    """`swept`: a sweep's parameters, whose values each array task reads at its start (module docstring)."""
    body = unix_lines(body)
    check_placeholder_contexts(body, schema)
    params = {p.name: p for p in schema}

    def substitute(match: re.Match) -> str:
        name, flag = match.group(1), match.group(2)
        if name == "lab_dir" and not flag:
            return _lab_dir_word(ctx.lab_dir)
        if name == "job_id" and not flag:
            return '"$GPULAB_JOB_ID"' if swept else shlex.quote(ctx.job_id)
        if name not in params:
            raise RenderError(not_a_parameter(name))
        param = params[name]
        if flag:
            if param.type != "bool":
                raise RenderError(f"{{{{ {name}|flag:… }}}} needs a bool parameter; {name} is {param.type}.")
            if name in swept:  # the flag's text is the PLACEHOLDER pattern's: letters, digits and _ = . + -
                return f"${{{SWEPT_FLAG_PREFIX}{name}:+{flag}}}"
            return flag if values[name] else ""
        if name in swept:
            return f'"${ENV_PREFIX}{name}"'
        return shlex.quote(_value_text(param, values[name]))

    rendered = PLACEHOLDER.sub(substitute, body)
    stray = stray_braces(PLACEHOLDER.sub("", body))  # the template's own text: a value may hold "{{", quoted
    if stray:
        raise RenderError(stray)
    return rendered


def sbatch_header(values: Mapping[str, Any], ctx: RenderContext) -> list[str]:
    return [f"#SBATCH --job-name={ctx.job_name}", *resource_directives(values)]


def value_exports(schema: list[Param], values: Mapping[str, Any]) -> list[str]:
    """export GPULAB_P_<name>=<quoted value> for every parameter, for templates that need values inside text."""
    return [
        f"export {ENV_PREFIX}{p.name}={shlex.quote(_value_text(p, values[p.name]))}" for p in schema if p.name in values
    ]


LAUNCHED_LINE = "# Launched from GPU Lab Portal"


def portal_exports(script: str) -> list[str]:
    """The `export GPULAB_…=…` lines render_script wrote in a script's header (quoted by the portal, never the
    template body's): a shell inside the job (the terminal) sets them again to have the job's variables."""
    lines = script.split("\n")
    start = next((i for i, line in enumerate(lines) if line.startswith(LAUNCHED_LINE)), None)
    if start is None:
        return []
    header = itertools.takewhile(lambda line: line.strip(), lines[start + 1 :])
    return [line for line in header if line.startswith("export GPULAB_")]


def render_script(
    body: str,
    schema: list[Param],
    values: Mapping[str, Any],
    ctx: RenderContext,
    *,
    swept: tuple[str, ...] = (),
    task_block: tuple[str, ...] = (),
) -> str:
    """The whole script: shebang, the portal's #SBATCH header, environment, cluster preamble, the body.

    A sweep's array (`swept`): `task_block` (the kind's) sets GPULAB_JOB_ID and the swept values per task instead."""
    names = frozenset(swept)
    if names and not task_block:
        raise RenderError("A sweep's script needs the lines that read each task's values.")
    rendered_body = render_body(body, schema, values, ctx, names)
    if rendered_body.startswith("#!"):
        rendered_body = rendered_body.split("\n", 1)[1] if "\n" in rendered_body else ""
    parts = [
        "#!/bin/bash",
        *sbatch_header(values, ctx),
        "",
        f"{LAUNCHED_LINE}, job {ctx.job_id}.",
        "umask 077  # what the job makes (checkpoints, outputs, folders) is its owner's alone",
        *(task_block or [f"export GPULAB_JOB_ID={shlex.quote(ctx.job_id)}"]),
        f"export GPULAB_LAB_DIR={_lab_dir_word(ctx.lab_dir)}",
        # The student's own files (the portal's Files page): where a template finds data they uploaded.
        'export GPULAB_FILES_DIR="$GPULAB_LAB_DIR"' + (f"/{shlex.quote(ctx.files_subdir)}" if ctx.files_subdir else ""),
        *value_exports([p for p in schema if p.name not in names], values),
    ]
    if ctx.preamble.strip():
        parts += ["", "# Cluster setup (set by the admin)", ctx.preamble.strip()]
    parts += ["", rendered_body.strip("\n"), ""]
    return "\n".join(parts)


def bash_syntax_error(script: str) -> str | None:
    """bash -n's complaint about the script, or None when it parses. Nothing is executed."""
    result = subprocess.run(["/bin/bash", "-n"], input=script, capture_output=True, text=True, timeout=10, check=False)
    if result.returncode == 0:
        return None
    return result.stderr.replace("bash: ", "").strip() or "bash -n rejected the script."
