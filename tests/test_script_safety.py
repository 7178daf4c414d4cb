"""The bash context checker: each class of template body the hostile tester used, accepted or refused."""

import pytest

from clusters.backends.slurm_family.script.rendering import (
    DIRECTIVES,
    RenderError,
    check_placeholder_contexts,
    render_script,
    script_problems,
)
from core.templating.params import parse_schema
from core.templating.shell_safety import placeholder_problems, problems

# v: a value that cannot start with "-" (a string, a bool, a non-negative number); n: one that can.
CLASSES = {"v": False, "n": True}


def refusals(body: str) -> list[str]:
    """A batch script's refusals: it gets every value as $GPULAB_P_<name> too, and sbatch reads its #SBATCH lines."""
    return [str(p) for p in problems(body, CLASSES, exported=True, directives=DIRECTIVES)]


ACCEPTED = [
    "echo {{ v }}",
    "sleep {{ v }}\nexit {{ v }}",
    "printf '%s\\n' {{ v }}",
    "python3 train.py --lr {{ v }} --steps={{ n }} --tag=run-{{ v }}",
    "python3 -u train.py {{ v }}",
    '${PYTHON:-python3} "$GPULAB_LAB_DIR"/trainer/train.py --model {{ v }}',
    "srun --ntasks-per-node=1 python3 train.py {{ v }}",
    "srun -n {{ v }} ./a.out",
    "timeout 60 nice -n 5 ./bench {{ v }}",
    "env OMP_NUM_THREADS=4 ./bench {{ v }}",
    "[ {{ v }} = true ] && echo on",
    "case {{ v }} in fast) echo fast ;; *) echo slow ;; esac",
    "mkdir -p runs/{{ v }}",
    "echo {{ v }} | grep -c x | wc -l",
    "echo {{ v }} >&2",
    "# a comment that mentions {{ v }}\necho hi",
    "echo ${a#x} {{ v }}  # a '#' inside ${…} is no comment",
    'echo "Training $GPULAB_P_v for $GPULAB_P_n epochs"',
    'export NCCL_DEBUG="$GPULAB_P_v"',
    'python3 train.py --name "$GPULAB_P_v" --x="$GPULAB_P_n"',
    "cat <<'EOF'\nplain text\nEOF\necho {{ v }}",
    "if true; then\n  f() { echo {{ v }}; }\nfi",
    "source /etc/profile.d/modules.sh\nsrun bash -c 'echo \"rank $SLURM_PROCID\"'\nprog {{ v }}",
]


@pytest.mark.parametrize("body", ACCEPTED)
def test_inert_argument_positions_are_accepted(body):
    assert refusals(body) == []


REFUSED = [
    # the scanner misread the script
    ("cat <<EOF\nhi\n  EOF  \necho {{ v }}\nEOF", "here-document"),
    ("cat <<EOF\n{{ v }}\nEOF", "here-document"),
    ("cat <<-EOF\n\t{{ v }}\n\tEOF", "here-document"),
    ("cat <<EOF ; cat <<E2\na\nEOF\nb\nE2\necho {{ v }}", "cannot parse"),
    ("cat <<EOF; cat <<E2\na\nEOF\n{{ v }}\nE2", "cannot parse"),
    ("echo ${a#{{ v }}}", "${…}"),
    ("echo ${a:-{{ v }}}", "${…}"),
    ("echo ${a[{{ v }}]}", "subscript"),
    ("echo a#{{ v }}", "shell-special"),
    # quoting does not help
    ("eval {{ v }}", "eval"),
    ('eval "echo $GPULAB_P_v"', "eval"),
    ("bash -c 'echo $1' x {{ v }}", "bash -c"),
    ("sh -c {{ v }}", "sh -c"),
    ("srun sh -c {{ v }}", "sh -c"),
    ("srun -N 1 bash -c 'echo \"$0\"' {{ v }}", "bash -c"),
    ("python3 -c 'import sys; print(sys.argv)' {{ v }}", "python3 -c"),
    ("perl -e 'print @ARGV' {{ v }}", "perl -e"),
    ("sbatch --wrap {{ v }}", "sbatch"),
    ("[[ {{ v }} -eq 1 ]]", "[[ ]]"),
    ("[[ $GPULAB_P_v == x ]]", "[[ ]]"),
    ("(( {{ v }} + 1 ))", "arithmetic"),
    ("echo $(( {{ v }} * 2 ))", "arithmetic"),
    ("for (( i = 0; i < {{ v }}; i++ )); do :; done", "loop header"),
    ("let x={{ v }}", "let"),
    ("declare -i x={{ v }}", "variable"),
    ('declare -i x="$GPULAB_P_v"', "declare"),
    ("source {{ v }}", "source"),
    (". {{ v }}", "an argument of ."),
    ("trap {{ v }} EXIT", "trap"),
    ("printf -v x '%s' {{ v }}", "printf"),
    ("printf {{ v }}", "printf"),
    ("read {{ v }} <<< x", "read"),
    ("[ -v {{ v }} ]", "-v"),
    ("env bash -c {{ v }}", "bash -c"),
    ("xargs -I{} sh -c {{ v }}", "xargs"),
    ("nohup sh -c {{ v }}", "sh -c"),
    ("exec sh -c {{ v }}", "sh -c"),
    ("timeout 5 bash -c {{ v }}", "bash -c"),
    ("ssh node1 echo {{ v }}", "ssh"),
    ("awk {{ v }} file", "awk"),
    ("find . -name {{ v }}", "find"),
    ('f() { prog "$1"; }\nf {{ v }}', "function"),
    ('X="$GPULAB_P_v"; prog "$X"', "copied into a variable"),
    ('export LD_PRELOAD="$GPULAB_P_v"', "LD_PRELOAD"),
    ("P=eval; ${P:-python3} train.py {{ v }}", "computed"),
    ("$CMD {{ v }}", "computed"),
    ("\\eval {{ v }}", "computed"),
    # option and path positions
    ("rm -f {{ v }}", "rm"),
    ("mv {{ v }} /tmp", "mv"),
    ("scancel {{ v }}", "scancel"),
    ("echo > {{ v }}", "redirection"),
    ("cat < {{ v }}", "redirection"),
    ("cat <<< {{ v }}", "redirection"),
    ("sort {{ n }}", "option"),
    ("[ {{ n }} = x ]", "operator"),
    ("timeout {{ v }} ./bench", "duration timeout waits"),
    ("srun --export={{ v }} ./a.out", "srun"),
    ("{{ v }} --help", "command name"),
    ("python3 {{ v }}", "what python3 runs"),
    # where the value would be re-read
    ("echo '{{ v }}'", "single quotes"),
    ('echo "{{ v }}"', "double quotes"),
    ("echo `echo {{ v }}`", "backquotes"),
    ("echo $(echo {{ v }})", "backquotes"),
    ("x={{ v }}", "variable"),
    ("echo $GPULAB_P_v", "double quotes"),
    ("echo {{ v }} | bash", "piped into bash"),
    ("{ echo {{ v }}; } | sh", "piped into sh"),
    ("echo {{ v }} > run.sh\nbash run.sh", "into a file"),
    ("echo {{ v }} | cat > run.sh\nbash run.sh", "file"),
    ("echo {{ v }} | sort -o run.sh", "piped into sort"),
    ("basename {{ v }} > run.sh", "into a file"),
    ("exec > >(bash)\necho {{ v }}", "elsewhere"),
    ("alias e=eval\ne {{ v }}", "elsewhere"),
    ("coproc bash\necho {{ v }} >&${COPROC[1]}", "elsewhere"),
    ("#SBATCH --partition={{ v }}", "#SBATCH"),
    ("for x in {{ v }}; do echo $x; done", "for statement"),
    ('set -- {{ v }}\nprog "$1"', "positional"),
    ('prog {{ v }}\neval "$_"', "earlier commands' words"),
    ("trap 'eval \"$BASH_COMMAND\"' DEBUG\necho {{ v }}", "earlier commands' words"),
    ('n=v; eval "echo \\$GPULAB_${n}"\necho {{ v }}', "built while it runs"),
    ('code="$1"; bash -c "$code"\necho {{ v }}', "built while it runs"),
]


@pytest.mark.parametrize(("body", "context"), REFUSED)
def test_placements_that_would_let_a_value_run_are_refused(body, context):
    found = refusals(body)
    assert found, f"accepted: {body!r}"
    assert context in " ".join(found)


def test_refusal_names_the_line_the_context_and_the_fix():
    schema = parse_schema([{"name": "steps", "type": "int", "default": 10, "min": 1, "max": 100}])
    body = "echo start\n\n\n\n\n\n(( total = {{ steps }} * 2 ))\n"
    [message] = script_problems(body, schema)
    assert message.startswith("Line 7: {{ steps }} is inside (( )) arithmetic, where a value would be evaluated;")
    assert '"$GPULAB_P_steps"' in message


def test_a_fix_names_the_exported_variable_only_where_the_kind_exports_it():
    """A batch script gets every value as $GPULAB_P_<name> too; the checker, asked for a script that does not (a
    RayJob's entrypoint), names the placeholder in the same fix."""
    schema = parse_schema([{"name": "steps", "type": "int", "default": 10, "min": 1, "max": 100}])
    body = "(( total = {{ steps }} * 2 ))"
    assert script_problems(body, schema)[0].endswith('e.g. [ "$GPULAB_P_steps" -gt 10 ] or seq 1 "$GPULAB_P_steps".')
    assert placeholder_problems(body, schema)[0].endswith("e.g. [ {{ steps }} -gt 10 ] or seq 1 {{ steps }}.")


def test_a_comment_refuses_a_value_only_where_the_kind_says_a_program_reads_it():
    """sbatch reads #SBATCH lines as the job's options, so a batch script may not hold a value in one; where no
    program reads comments (a RayJob's entrypoint), the same line is a comment like any other."""
    schema = parse_schema([{"name": "v", "type": "string", "default": "x"}])
    body = "#SBATCH --partition={{ v }}\necho {{ v }}"
    [refusal] = script_problems(body, schema)
    assert refusal.startswith("Line 1: {{ v }} is in a #SBATCH directive line") and "partition" in refusal
    assert placeholder_problems(body, schema) == []
    assert placeholder_problems(body, schema, directives={"PBS": "no"}) == []


def test_every_refusal_is_reported_not_just_the_first():
    found = refusals("eval {{ v }}\necho ok {{ v }}\nrm {{ v }}")
    assert [m.split(":")[0] for m in found] == ["Line 1", "Line 3"]


def test_negative_numbers_may_stand_only_joined_to_their_option():
    schema = parse_schema([{"name": "shift", "type": "int", "default": 0, "min": -5, "max": 5}])
    assert script_problems("./bench --shift={{ shift }}", schema) == []
    assert "may begin with '-'" in script_problems("./bench --shift {{ shift }}", schema)[0]
    natural = parse_schema([{"name": "shift", "type": "int", "default": 0, "min": 0, "max": 5}])
    assert script_problems("./bench --shift {{ shift }}", natural) == []


def test_a_choice_with_a_dashed_option_counts_as_dash_prone():
    schema = parse_schema([{"name": "opt", "type": "choice", "default": "-O2", "choices": ["-O2", "-O3"]}])
    assert script_problems("gcc {{ opt }} a.c", schema)
    assert script_problems("gcc -Wall a.c --level={{ opt }}", schema) == []


def test_unknown_parameter_is_named():
    schema = parse_schema([{"name": "steps", "type": "int", "default": 1}])
    expected = ["Line 1: {{ stepz }} is not a parameter of this template."]
    assert script_problems("echo {{ stepz }}", schema) == expected


def test_a_refused_body_does_not_render():
    schema = parse_schema([{"name": "v", "type": "string", "default": "x"}])
    with pytest.raises(RenderError, match="eval"):
        render_script("eval {{ v }}", schema, {"v": "x"}, _ctx())
    with pytest.raises(RenderError, match="here-document"):
        check_placeholder_contexts("cat <<EOF\n{{ v }}\nEOF", schema)


def test_checking_runs_nothing(tmp_path, monkeypatch):
    """The checker asks bash to parse the body (as an imported function); nothing in it may run."""
    monkeypatch.chdir(tmp_path)
    canary = tmp_path / "CANARY"
    for body in [
        f"touch {canary}\necho {{{{ v }}}}",
        f"}}\ntouch {canary}\n{{ :\necho {{{{ v }}}}",
        f"echo $(touch {canary}) {{{{ v }}}}",
        f"cat <<EOF\n$(touch {canary})\nEOF\necho {{{{ v }}}}",
    ]:
        refusals(body)
    assert not canary.exists()


def _ctx():
    from clusters.backends.slurm_family.script.rendering import RenderContext

    return RenderContext(job_id="00000000-0000-0000-0000-000000000001", job_name="gpulab-t", lab_dir="~/gpulab")


def test_a_body_from_a_browser_textarea_renders_with_unix_line_ends():
    schema = parse_schema([{"name": "v", "type": "string", "default": "x"}])
    body = "echo start\r\n[ {{ v }} = x ] && echo yes\r\n"
    assert script_problems(body, schema) == []
    assert "\r" not in render_script(body, schema, {"v": "x"}, _ctx())


def test_a_stray_control_character_refuses_every_value():
    assert "control character (line 2)" in refusals("echo a\necho\r{{ v }}\n")[0]


# timeout DURATION COMMAND: a number that cannot be negative (or a choice of durations) may be the duration.
TIMEOUT_SCHEMA = parse_schema(
    [
        {"name": "seconds", "type": "int", "default": 30, "min": 0, "max": 3600},
        {"name": "minutes", "type": "float", "default": 1.5, "min": 0.5, "max": 60},
        {"name": "limit", "type": "choice", "default": "30s", "choices": ["30s", "5m", "1h"]},
        {"name": "shift", "type": "int", "default": 0, "min": -5, "max": 5},
        {"name": "unbounded", "type": "int", "default": 1},
        {"name": "word", "type": "string", "default": "10", "pattern": "[0-9]+"},
        {"name": "mode", "type": "choice", "default": "30s", "choices": ["30s", "KILL"]},
        {"name": "flag", "type": "bool", "default": False},
    ]
)

TIMEOUT_ACCEPTED = [
    "timeout {{ seconds }} perf stat -e cycles ./bench",
    'timeout "$GPULAB_P_seconds" perf stat ./bench',
    'timeout "${GPULAB_P_seconds}" ./bench',
    "timeout {{seconds}}s ./bench\ntimeout {{ minutes }}m ./bench",
    'timeout "$GPULAB_P_minutes"m ./bench',
    "timeout {{ limit }} ./bench --steps 3",
    "timeout --foreground -k 5 {{ seconds }} ./bench",
    "timeout -k {{ seconds }} 60 ./bench",
    "timeout --kill-after {{ seconds }} 60 ./bench",
    "timeout {{ seconds }} ./bench --name {{ word }}",
    "srun -n 2 timeout {{ seconds }} ./bench",
    "nice -n 5 timeout {{ seconds }} python3 bench.py --steps {{ seconds }}",
]


@pytest.mark.parametrize("body", TIMEOUT_ACCEPTED)
def test_a_number_that_cannot_be_negative_may_be_the_duration_of_timeout(body):
    assert script_problems(body, TIMEOUT_SCHEMA) == []


TIMEOUT_REFUSED = [
    ("timeout {{ word }} ./bench", "duration timeout waits"),  # a string, even one whose pattern is digits
    ('timeout "$GPULAB_P_word" ./bench', "duration timeout waits"),
    ("timeout {{ mode }} ./bench", "duration timeout waits"),  # a choice with a non-duration option
    ("timeout {{ flag }} ./bench", "duration timeout waits"),
    ("timeout {{ unbounded }} ./bench", "duration timeout waits"),  # could be -1, an option
    ("timeout {{ shift }} ./bench", "duration timeout waits"),
    ("timeout -k {{ word }} 60 ./bench", "duration timeout waits"),
    ("timeout -s {{ seconds }} 60 ./bench", "option or operand of timeout"),
    ("timeout -s{{ seconds }} 60 ./bench", "option or operand of timeout"),
    ("timeout --signal={{ seconds }} 60 ./bench", "option or operand of timeout"),
    ("timeout --kill-after={{ seconds }} 60 ./bench", "option or operand of timeout"),
    ("timeout -{{ seconds }} ./bench", "option or operand of timeout"),
    ("timeout {{ seconds }}{{ limit }} ./bench", "duration timeout waits"),
    ("timeout {{ seconds }}x ./bench", "duration timeout waits"),
    ("timeout {{ seconds }}.{{ seconds }} ./bench", "duration timeout waits"),
    ("timeout 60 {{ seconds }} ./bench", "option or operand of timeout"),  # the command timeout runs
    ("timeout {{ seconds }} {{ seconds }}", "option or operand of timeout"),
    ("timeout {{ seconds }} bash -c {{ word }}", "bash -c"),
    ("timeout {{ seconds }} eval {{ word }}", "eval"),
    ('timeout "{{ seconds }}" ./bench', "double quotes"),
    ("timeout '{{ seconds }}' ./bench", "single quotes"),
    ("timeout $GPULAB_P_seconds ./bench", "double quotes"),
    ('timeout "$GPULAB_P_seconds$GPULAB_P_limit" ./bench', "duration timeout waits"),
    ('timeout "${GPULAB_P_seconds:-5}" ./bench', "${…}"),
    ("flock {{ seconds }} ./bench", "option or operand of flock"),  # another wrapper's operand is no duration
    ("sleep 1; timeout $(echo {{ seconds }}) ./bench", "backquotes"),
]


@pytest.mark.parametrize(("body", "context"), TIMEOUT_REFUSED)
def test_near_misses_of_a_timeout_duration_are_refused(body, context):
    found = script_problems(body, TIMEOUT_SCHEMA)
    assert found, f"accepted: {body!r}"
    assert context in " ".join(found)


def test_the_perf_tools_template_renders_with_its_timeout():
    schema = parse_schema([{"name": "seconds", "type": "int", "default": 10, "min": 1, "max": 300}])
    body = "module load perf\ntimeout {{ seconds }} perf stat -e cycles ./bench\necho done\n"
    assert "timeout 10 perf stat" in render_script(body, schema, {"seconds": 10}, _ctx())
    assert "set a minimum of 0" not in " ".join(script_problems(body, schema))
