"""The renderer: hostile values stay one inert word; placeholders where quoting would not hold are refused."""

import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from clusters.backends.slurm_family.script.rendering import (
    RenderContext,
    RenderError,
    bash_syntax_error,
    check_placeholder_contexts,
    render_script,
)
from core.templating.params import CONTROL_CHARS, SAFE_STRING, parse_schema

SCHEMA = parse_schema(
    [
        {"name": "note", "type": "string", "label": "Note", "default": "x", "max_length": 256},
        {"name": "flag", "type": "bool", "label": "Flag", "default": False},
    ]
)
CTX = RenderContext(job_id="00000000-0000-0000-0000-000000000001", job_name="gpulab-t", lab_dir="~/gpulab")
# The body prints each word it gets in brackets, so word splitting or globbing would show.
BODY = "printf '[%s]' {{ note }}\n"

HOSTILE = [
    "$(touch pwned)",
    "`touch pwned`",
    "; touch pwned",
    "a && touch pwned",
    "x' ; touch pwned; echo '",
    'x" ; touch pwned; echo "',
    "--wrap=touch pwned",
    "../../etc/passwd",
    "*",
    "~root",
    "$HOME",
    "${IFS}touch${IFS}pwned",
    "a | tee pwned",
    "> pwned",
    "\\",
    "",
    "-n",
    "!!",
]


def run_rendered(value: str, tmp_path: Path) -> set[str]:
    """Render without validation (the quoting wall alone) and run; the files the job directory holds after."""
    script = render_script(BODY, SCHEMA, {"note": value, "flag": False}, CTX)
    workdir = tmp_path / "job"
    workdir.mkdir(exist_ok=True)
    for child in workdir.iterdir():
        child.unlink()
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path)}
    command = ["/bin/bash", "-c", script]
    done = subprocess.run(command, cwd=workdir, env=env, check=True, timeout=10, capture_output=True)
    assert done.stdout.decode() == f"[{value}]"
    return {p.name for p in workdir.iterdir()}


@pytest.mark.parametrize("value", HOSTILE)
def test_hostile_value_is_one_inert_word(value, tmp_path):
    assert run_rendered(value, tmp_path) == set()
    assert {p.name for p in tmp_path.iterdir()} == {"job"}  # nothing written outside the job directory


@pytest.mark.parametrize("value", [v for v in HOSTILE if v not in ("", "../../etc/passwd")])
def test_hostile_value_is_refused_by_the_safe_character_set(value):
    with pytest.raises(ValueError, match="Use only letters, digits"):
        SCHEMA[0].clean(value)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=60))
def test_any_string_reaches_the_script_unchanged_and_only_safe_ones_validate(tmp_path, value):
    if CONTROL_CHARS.search(value):
        with pytest.raises(ValueError, match="control characters"):
            SCHEMA[0].clean(value)
        return
    assert run_rendered(value, tmp_path) == set()
    if SAFE_STRING.fullmatch(value):
        assert SCHEMA[0].clean(value) == value
    else:
        with pytest.raises(ValueError, match="Use only letters, digits"):
            SCHEMA[0].clean(value)


@pytest.mark.parametrize("value", ["{{", "}} {{ note }}", "{{ flag }}", "a{{b"])
def test_a_value_holding_braces_is_one_quoted_word_not_a_template_error(value, tmp_path):
    """Braces in a value are the student's text: only the template's own "{{" is a stray placeholder."""
    assert run_rendered(value, tmp_path) == set()
    with pytest.raises(RenderError, match="does not start a placeholder"):
        render_script("echo {{ note }} {{", SCHEMA, {"note": value, "flag": False}, CTX)


def test_newline_is_refused_by_validation():
    with pytest.raises(ValueError, match="Line breaks"):
        SCHEMA[0].clean("ok\ntouch pwned")


@pytest.mark.parametrize(
    ("body", "why"),
    [
        ("echo '{{ note }}'", "single quotes"),
        ('echo "hello {{ note }}"', "double quotes"),
        ("echo `echo {{ note }}`", "backquotes"),
        ("cat <<EOF\n{{ note }}\nEOF", "here-document"),
        ("#SBATCH --partition={{ note }}", "#SBATCH"),
    ],
)
def test_placeholder_where_quoting_would_not_hold_is_refused(body, why):
    with pytest.raises(RenderError, match=why):
        check_placeholder_contexts(body)


def test_placeholders_after_closed_quotes_and_in_comments_are_fine():
    check_placeholder_contexts(
        "echo \"a\" {{ note }} 'b' {{ note }}  # {{ note }}\ncat <<'X'\nplain\nX\necho {{ note }}"
    )


def test_unknown_placeholder_is_an_error():
    with pytest.raises(RenderError, match="not a parameter"):
        render_script("echo {{ nope }}", SCHEMA, {"note": "x", "flag": False}, CTX)
    with pytest.raises(RenderError, match="does not start a placeholder"):
        render_script("echo {{ Bad-Name }}", SCHEMA, {"note": "x", "flag": False}, CTX)


def test_flag_renders_only_when_true():
    body = "run {{ flag|flag:--fp16 }} done"
    assert "run --fp16 done" in render_script(body, SCHEMA, {"note": "x", "flag": True}, CTX)
    assert "run  done" in render_script(body, SCHEMA, {"note": "x", "flag": False}, CTX)


def test_header_comes_from_resource_parameters():
    schema = parse_schema(
        [
            {"name": "partition", "type": "choice", "default": "gpu"},
            {"name": "nodes", "type": "int", "default": 2, "min": 1, "max": 4},
            {"name": "gpus_per_node", "type": "int", "default": 2, "min": 0, "max": 8},
            {"name": "gpu_type", "type": "choice", "default": "a100"},
            {"name": "time_minutes", "type": "int", "default": 30, "min": 1, "max": 60},
        ]
    )
    values = {"partition": "gpu", "nodes": 2, "gpus_per_node": 2, "gpu_type": "a100", "time_minutes": 30}
    script = render_script("echo hi", schema, values, CTX)
    for line in ["#SBATCH --partition=gpu", "#SBATCH --nodes=2", "#SBATCH --gres=gpu:a100:2", "#SBATCH --time=30"]:
        assert line in script
    assert script.startswith("#!/bin/bash\n")
    assert 'export GPULAB_LAB_DIR="$HOME"/gpulab' in script
    assert "export GPULAB_P_partition=gpu" in script and "export GPULAB_P_time_minutes=30" in script


def test_bash_syntax_check():
    assert bash_syntax_error("echo ok\n") is None
    assert "syntax error" in bash_syntax_error("if true; then echo\n")
