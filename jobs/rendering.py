"""Turning a template body and validated values into the sbatch script that runs.

Placeholders:
    {{ name }}              the value, shell-quoted (shlex.quote): one inert word whatever it holds
    {{ name|flag:--fp16 }}  the flag when the bool parameter is true, nothing when false
    {{ lab_dir }}           the cluster's lab directory, quoted ("$HOME"/… for ~/…)
    {{ job_id }}            the portal's job UUID

A quoted value is inert only where the shell does quote removal on it, so placeholders are refused
inside '…', "…", `…`, here-documents and #SBATCH lines. The portal writes the #SBATCH header itself
from the resource parameters (partition, nodes, gpus_per_node, …), whose values are validated tokens.
"""

from __future__ import annotations

import re
import shlex
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .params import Param

PLACEHOLDER = re.compile(r"\{\{\s*([a-z][a-z0-9_]*)\s*(?:\|\s*flag\s*:\s*(-{1,2}[A-Za-z0-9][A-Za-z0-9_=.+-]*)\s*)?\}\}")
HEREDOC = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\1")
BUILTINS = ("lab_dir", "job_id")


class RenderError(ValueError):
    """The body cannot be rendered; the message says which line and why."""


@dataclass(frozen=True)
class RenderContext:
    job_id: str
    job_name: str
    lab_dir: str
    preamble: str = ""
    gpu_types: tuple[str, ...] = ()


def check_placeholder_contexts(body: str) -> None:
    """Refuse placeholders where shell quoting would not keep a value inert."""
    quote: str | None = None  # the quote character we are inside, if any
    heredoc_end: str | None = None
    for line_no, line in enumerate(body.splitlines(), start=1):
        if heredoc_end is not None:
            if PLACEHOLDER.search(line) or "{{" in line:
                raise RenderError(f"Line {line_no}: placeholders cannot be used inside a here-document.")
            if line.strip() == heredoc_end:
                heredoc_end = None
            continue
        if line.lstrip().startswith("#SBATCH") and "{{" in line:
            raise RenderError(
                f"Line {line_no}: placeholders cannot be used in #SBATCH lines; name the parameter partition, nodes, "
                "gpus_per_node, cpus_per_task, mem_gb or time_minutes and the portal writes the directive."
            )
        i = 0
        while i < len(line):
            ch = line[i]
            if line.startswith("{{", i):
                if quote is not None:
                    kind = {"'": "single quotes", '"': "double quotes", "`": "backticks"}[quote]
                    raise RenderError(
                        f"Line {line_no}: a placeholder inside {kind} would not stay quoted; the portal quotes "
                        "values itself, so write it bare, e.g. --name {{ name }}."
                    )
                i += 2
                continue
            if quote == "'":
                if ch == "'":
                    quote = None
            elif ch == "\\":
                i += 1  # the escaped character has no meaning here
            elif quote is None and ch == "#" and (i == 0 or line[i - 1] in " \t;"):
                break  # a comment: nothing in it runs, and values never hold a line break
            elif ch in "'\"`" and (quote is None or quote == ch):
                quote = None if quote == ch else ch
            i += 1
        if quote is None:
            match = HEREDOC.search(line)
            if match:
                heredoc_end = match.group(2)


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


def render_body(body: str, schema: list[Param], values: Mapping[str, Any], ctx: RenderContext) -> str:
    check_placeholder_contexts(body)
    params = {p.name: p for p in schema}

    def substitute(match: re.Match) -> str:
        name, flag = match.group(1), match.group(2)
        if name == "lab_dir" and not flag:
            return _lab_dir_word(ctx.lab_dir)
        if name == "job_id" and not flag:
            return shlex.quote(ctx.job_id)
        if name not in params:
            raise RenderError(f"{{{{ {name} }}}} is not a parameter of this template.")
        param = params[name]
        if flag:
            if param.type != "bool":
                raise RenderError(f"{{{{ {name}|flag:… }}}} needs a bool parameter; {name} is {param.type}.")
            return flag if values[name] else ""
        return shlex.quote(_value_text(param, values[name]))

    rendered = PLACEHOLDER.sub(substitute, body)
    leftover = rendered.find("{{")
    if leftover != -1:
        line_no = rendered.count("\n", 0, leftover) + 1
        raise RenderError(f"Line {line_no}: “{{{{” does not start a placeholder the portal knows.")
    return rendered


def sbatch_header(values: Mapping[str, Any], ctx: RenderContext) -> list[str]:
    lines = [f"#SBATCH --job-name={ctx.job_name}"]
    if values.get("partition"):
        lines.append(f"#SBATCH --partition={values['partition']}")
    for name, option in (("nodes", "--nodes"), ("ntasks_per_node", "--ntasks-per-node")):
        if values.get(name):
            lines.append(f"#SBATCH {option}={int(values[name])}")
    gpus = int(values.get("gpus_per_node") or 0)
    if gpus:
        gpu_type = values.get("gpu_type")
        lines.append(f"#SBATCH --gres=gpu:{gpu_type}:{gpus}" if gpu_type else f"#SBATCH --gres=gpu:{gpus}")
    if values.get("cpus_per_task"):
        lines.append(f"#SBATCH --cpus-per-task={int(values['cpus_per_task'])}")
    if values.get("mem_gb"):
        lines.append(f"#SBATCH --mem={int(values['mem_gb'])}G")
    if values.get("time_minutes"):
        lines.append(f"#SBATCH --time={int(values['time_minutes'])}")
    return lines


def render_script(body: str, schema: list[Param], values: Mapping[str, Any], ctx: RenderContext) -> str:
    """The whole script: shebang, the portal's #SBATCH header, environment, cluster preamble, the body."""
    rendered_body = render_body(body, schema, values, ctx)
    if rendered_body.startswith("#!"):
        rendered_body = rendered_body.split("\n", 1)[1] if "\n" in rendered_body else ""
    parts = [
        "#!/bin/bash",
        *sbatch_header(values, ctx),
        "",
        f"# Launched from GPU Lab Portal, job {ctx.job_id}.",
        f"export GPULAB_JOB_ID={shlex.quote(ctx.job_id)}",
        f"export GPULAB_LAB_DIR={_lab_dir_word(ctx.lab_dir)}",
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
