"""Generative: random bash bodies with values in random places; whatever the checker lets publish, real bash
runs with hostile values, and no value may ever run a command or create a file.

The values are NOT validated here (that is the second wall, tested in test_rendering): this tests the checker
alone. Commands are stubs on a private PATH; `canary` creates CANARY, so a value that runs as code shows.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from clusters.backends.slurm_family.script.rendering import RenderContext, render_script
from core.templating.params import parse_schema
from jobs.authoring import preview

PARAMS = [
    {"name": "v", "type": "string", "default": "x", "max_length": 256},  # may not start with - (validated)
    {"name": "n", "type": "int", "default": 1, "min": -5, "max": 5},  # may start with -
]
SCHEMA = parse_schema(PARAMS)
CTX = RenderContext(job_id="00000000-0000-0000-0000-000000000002", job_name="gpulab-fuzz", lab_dir="~/gpulab")
RUNS = "canary"  # a command name: run as code, it leaves CANARY
HOSTILE = [
    RUNS,
    "$(canary)",
    "`canary`",
    ";canary",
    "a;canary",
    "a|canary",
    "a&&canary",
    "a[$(canary)]",
    "x[`canary`]",
    "$(>CANARY)",
    ">CANARY",
    "CANARY",
    "'$(canary)'",
    '"$(canary)"',
    "a b;canary",
    "\\$(canary)",
    "${x:-$(canary)}",
    "1)); canary; ((1",
    "]] ; canary ; [[ x",
    "EOF",
    "E2",
    "!",
    "*",
    "~",
    "",
]
DASHED = ["-oCANARY", "--output=CANARY", "-c", "-e", "-v", "-fCANARY", "+o"]
LITERALS = ["lit", "-q", '"a b"', "'$x'"]
# Fixed names the template itself redirects to (its own text, never a value's).
FILES_THE_GRAMMAR_WRITES = {"in.txt", "out.txt", "log.txt", "lit", "-q", "a b", "$x"}
STUBS = {
    "canary": ': > "$CANARY_DIR/CANARY"',
    "prog": "exit 0",
    "tool": "exit 0",
    # srun and python3 behave as the real ones do with what the grammar gives them: srun runs its command,
    # python3 -c runs code (shell code here, which is what a value would need to smuggle in).
    "srun": 'while [ "${1#-}" != "$1" ]; do shift; done; exec "$@"',
    "python3": 'if [ "$1" = -c ]; then shift; exec /bin/bash -c "$@"; fi; exit 0',
}
REAL = ["bash", "sh", "env", "timeout", "nohup", "xargs", "cat", "grep", "head", "wc", "sort", "printf", "echo"]


def _word(draw) -> str:
    return draw(
        st.sampled_from(
            [
                "{{ v }}",
                "{{ n }}",
                "{{ v }}",
                '"$GPULAB_P_v"',
                "$GPULAB_P_v",
                '"$GPULAB_P_n"',
                "--x={{ n }}",
                "run-{{ v }}",
                "{{ v }}.txt",
                *LITERALS,
            ]
        )
    )


def _args(draw) -> str:
    return " ".join(_word(draw) for _ in range(draw(st.integers(1, 3))))


SIMPLE = [
    "echo {a}",
    "printf '%s\\n' {a}",
    "printf {w}",
    "prog {a}",
    "tool --flag {a}",
    "eval {a}",
    "source {w}",
    ". {w}",
    "trap {w} EXIT",
    "let x={w}",
    "read {w} <<< 1",
    "set -- {a}",
    "set {w}",
    'set -- {a}; eval "$1"',
    'prog {a}; eval "$_"',
    "[ {w} = x ]",
    "test -n {w}",
    "declare -i y={w}",
    "export X={w}",
    "bash -c {w}",
    "bash -c 'echo \"$1\"' x {a}",
    "sh -c {w} {a}",
    "srun sh -c {w}",
    "srun --ntasks=1 prog {a}",
    "python3 -c {w}",
    "python3 script.py {a}",
    "env prog {a}",
    "env bash -c {w}",
    "xargs prog {a} < in.txt",
    "timeout 5 prog {a}",
    "nohup prog {a}",
    "x={w}",
    ": {a}",
    "sort {w} in.txt",
    "echo {w} | cat > out.txt",
    "basename {w} > log.txt",
    "cat {w}",
    "(( {w} ))",
    "[[ {w} -eq 1 ]]",
    "[[ -v {w} ]]",
    "echo $(( {w} ))",
    "echo $(echo {a})",
    "echo `echo {a}`",
    'echo "{w}"',
    "echo '{w}'",
    "echo ${{x:-{w}}}",
    "echo ${{a[{w}]}}",
    "echo {w} | bash",
    "echo {w} | python3 -c 'x'",
    "echo {w} | grep -c x",
    "echo {w} > out.txt",
    "prog {a} > log.txt 2>&1",
    "echo {w} >&2",
    "echo > {w}",
    "cat <<< {w}",
]
COMPOUND = [
    "cat <<EOF\n{w}\nEOF",
    "cat <<EOF\nhi\n  EOF  \n{s}\nEOF",
    "cat <<EOF ; cat <<E2\na\nEOF\n{s}\nE2",
    "cat <<'EOF'\n{w}\nEOF",
    "if prog; then {s}; fi",
    "{s} | {s}",
    "{s} && {s}",
    "{s}; {s}",
    "{{ {s}; }}",
    "( {s} )",
    "f() {{ {s}; }}; f {a}",
    'g() {{ eval "$1"; }}; g {a}',
    "for i in {a}; do {s}; done",
    "case {w} in x) {s};; esac",
    "while false; do {s}; done",
    "# comment {w}\n{s}",
]


@st.composite
def statement(draw, depth: int = 0) -> str:
    if depth < 2 and draw(st.booleans()):
        shape = draw(st.sampled_from(COMPOUND))
        return shape.format(w=_word(draw), a=_args(draw), s=draw(statement(depth + 1)))
    return draw(st.sampled_from(SIMPLE)).format(w=_word(draw), a=_args(draw))


@st.composite
def body(draw) -> str:
    text = "\n".join(draw(statement()) for _ in range(draw(st.integers(1, 3)))) + "\n"
    assume("{{" in text or "GPULAB_P_" in text)  # a body without values proves nothing
    return text


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("canary")
    bin_dir = root / "bin"
    bin_dir.mkdir()
    for name, code in STUBS.items():
        (bin_dir / name).write_text(f"#!/bin/bash\n{code}\n")
        (bin_dir / name).chmod(0o755)
    for name in REAL:
        found = next((d for d in ("/usr/bin", "/bin") if Path(d, name).exists()), None)
        if found:
            (bin_dir / name).symlink_to(Path(found, name))
    return root


def run_in_sandbox(script: str, root: Path) -> set[str]:
    work = root / "work"
    if work.exists():
        subprocess.run(["rm", "-rf", str(work)], check=True)
    work.mkdir()
    (work / "in.txt").write_text("a\nb\n")
    (root / "CANARY").unlink(missing_ok=True)
    (work / "job.sh").write_text(script)
    env = {"PATH": str(root / "bin"), "HOME": str(work), "CANARY_DIR": str(root), "LC_ALL": "C"}
    subprocess.run(
        ["/bin/bash", "job.sh"], cwd=work, env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=20
    )
    (work / "job.sh").unlink()
    made = {p.name for p in work.iterdir()} - FILES_THE_GRAMMAR_WRITES
    if (root / "CANARY").exists():
        made.add("CANARY (a value ran the canary command)")
    return made


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body(), st.sampled_from(HOSTILE), st.sampled_from(HOSTILE + DASHED))
def test_no_value_in_a_publishable_template_runs_or_writes(sandbox, text, value, dashed):
    if not preview(text, PARAMS).ok:
        return  # refused (or not bash): it can never be published
    script = render_script(text, SCHEMA, {"v": value, "n": dashed}, CTX)
    assert run_in_sandbox(script, sandbox) == set(), f"body:\n{text}\nv={value!r} n={dashed!r}"


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("eval {{ v }}\n", "a[$(canary)]"),
        ("bash -c {{ v }}\n", "canary"),
        ("(( {{ v }} ))\n", "a[$(canary)]"),
        ("[[ {{ v }} -eq 1 ]]\n", "a[$(canary)]"),
        ("echo > {{ v }}\n", "CANARY"),
        ("cat <<EOF\nhi\n  EOF  \necho {{ v }}\nEOF\n", "$(canary)"),
    ],
)
def test_the_sandbox_sees_a_value_that_runs_when_the_checker_is_bypassed(sandbox, monkeypatch, text, value):
    from clusters.backends.slurm_family.script import rendering

    monkeypatch.setattr(rendering, "check_placeholder_contexts", lambda body, schema=None: None)
    script = render_script(text, SCHEMA, {"v": value, "n": 1}, CTX)
    assert run_in_sandbox(script, sandbox)
    assert not preview(text, PARAMS).ok


def test_the_grammar_reaches_accepted_templates():
    """Not every body is refused: the generative test runs real accepted templates."""
    for text in ("prog {{ v }}\n", 'echo "$GPULAB_P_v" | grep -c x\n', "srun --ntasks=1 prog {{ v }}\n"):
        assert preview(text, PARAMS).ok, text
