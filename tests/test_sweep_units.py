"""Sweeps without a cluster: the grid and zip expansion, the refusals of the plan, the values file and the array script
each task runs (executed by bash here, task by task, as SLURM would run it), and the array ids the backends read."""

import subprocess
import uuid

import pytest

from clusters.backends.kinds.slurm.backend import _keyed_by_task
from clusters.backends.slurm_family import arrays
from clusters.backends.slurm_family.script.rendering import RenderContext, render_script, value_text
from core.templating.params import parse_schema
from sweeps.plan import MAX_RUNS, SweepInvalid, expand, plan

SCHEMA = parse_schema(
    [
        {"name": "time_minutes", "type": "int", "default": 5, "min": 1, "max": 10},
        {"name": "lr", "type": "float", "default": 0.1, "min": 0, "max": 1, "sweep": True},
        {"name": "batch", "type": "int", "default": 8, "min": 1, "max": 512, "sweep": [8, 16, 32]},
        {
            "name": "mode",
            "type": "choice",
            "default": "a b",
            "choices": ["a b", "$(touch pwned)", "c'd"],
            "sweep": True,
        },
        {"name": "fp16", "type": "bool", "default": False, "sweep": True},
        {"name": "epochs", "type": "int", "default": 1},
        {"name": "gpus_per_node", "type": "int", "default": 0, "min": 0, "max": 4, "sweep": True},
    ]
)


def test_grid_is_every_combination_with_the_last_parameter_fastest():
    runs = expand({"lr": [0.1, 0.2], "batch": [8, 16]}, "grid")
    assert runs == [
        {"lr": 0.1, "batch": 8},
        {"lr": 0.1, "batch": 16},
        {"lr": 0.2, "batch": 8},
        {"lr": 0.2, "batch": 16},
    ]


def test_zip_pairs_the_lists_side_by_side():
    assert expand({"lr": [0.1, 0.2], "batch": [8, 16]}, "zip") == [{"lr": 0.1, "batch": 8}, {"lr": 0.2, "batch": 16}]


def test_plan_types_the_values_it_is_given():
    planned = plan(SCHEMA, {"lr": ["0.5", 0.25], "fp16": ["true", "false"]}, "grid")
    assert planned.swept == {"lr": [0.5, 0.25], "fp16": [True, False]}
    assert planned.size == 4


@pytest.mark.parametrize(
    "asked, mode, field, message",
    [
        ({"epochs": [1, 2]}, "grid", "epochs", "cannot be swept"),
        ({"nope": [1, 2]}, "grid", "nope", "no such parameter"),
        ({"batch": [8, 64]}, "grid", "batch", "Sweep only over: 8, 16, 32"),
        ({"lr": [0.1, 2]}, "grid", "lr", "at most 1"),
        ({"lr": [0.1, 0.1]}, "grid", "lr", "listed twice"),
        ({"lr": "0.1"}, "grid", "lr", "list of values"),
        ({"gpus_per_node": [1, 5]}, "grid", "gpus_per_node", "at most 4"),
        ({"lr": [0.1, 0.2], "batch": [8]}, "zip", "mode", "as long as each other"),
        ({"lr": [0.1]}, "diagonal", "mode", "grid"),
        ({}, "grid", "sweep", "at least one parameter"),
        ({"lr": [0.1], "batch": [8], "fp16": [True], "mode": ["a b"]}, "grid", "sweep", "at most 3"),
    ],
)
def test_a_sweep_that_cannot_be_made_is_refused_naming_what_to_change(asked, mode, field, message):
    with pytest.raises(SweepInvalid) as refused:
        plan(SCHEMA, asked, mode)
    assert message in refused.value.errors[field]


def test_a_sweep_of_more_than_the_most_runs_is_refused():
    many = parse_schema([{"name": "n", "type": "int", "default": 0, "sweep": True}, *[]])
    with pytest.raises(SweepInvalid, match=f"at most {MAX_RUNS}"):
        plan(many, {"n": list(range(MAX_RUNS + 1))}, "grid")


def test_array_spec_leaves_out_cancelled_runs_and_caps_those_at_once():
    assert arrays.spec_for([0, 1, 2, 3], 2) == "0-3%2"
    assert arrays.spec_for([0, 1, 3], 3) == "0-1,3"
    with pytest.raises(ValueError):
        arrays.checked_spec("0-3 --wrap=x")


def test_waiting_tasks_listed_on_one_line_are_keyed_one_by_one():
    rows = _keyed_by_task(["1240", "PENDING", "0:0", "Unknown", "Unknown", "JobArrayTaskLimit", "1240_[1-2,5%2]"])
    assert [row[0] for row in rows] == ["1240_1", "1240_2", "1240_5"]
    (step,) = _keyed_by_task(["1241.batch", "COMPLETED", "0:0", "", "", "", "1240_0.batch"])
    assert step[0] == "1240_0.batch"
    (plain,) = _keyed_by_task(["77", "RUNNING", "0:0", "", "", "", "77"])
    assert plain[0] == "77"
    assert arrays.array_job_of("1240_3") == "1240" and arrays.array_job_of("77") == "77"


def test_values_file_refuses_a_value_that_could_move_to_another_field():
    with pytest.raises(ValueError):
        arrays.values_file([(uuid.uuid4(), ["a\tb"])])
    with pytest.raises(ValueError):
        arrays.values_file([(uuid.uuid4(), [""])])


BODY = """\
printf 'run=%s lr=%s mode=%s\\n' {{ job_id }} {{ lr }} {{ mode }}
printf 'flag=%s\\n' {{ fp16|flag:--fp16 }} end
"""


def test_each_task_of_the_array_reads_its_own_values_as_data(tmp_path):
    """The rendered array script, run by bash once per task as SLURM would (in the sweep's directory, with its task
    id): each task prints its own run id and values, in its own run's log; a choice that looks like code stays text."""
    swept = ("lr", "mode", "fp16")
    runs = [
        (uuid.uuid4(), {"lr": 0.5, "mode": "a b", "fp16": True}),
        (uuid.uuid4(), {"lr": 0.25, "mode": "$(touch pwned)", "fp16": False}),
        (uuid.uuid4(), {"lr": 1.0, "mode": "c'd", "fp16": True}),
    ]
    params = {p.name: p for p in SCHEMA}
    values = {p.name: p.default for p in SCHEMA}
    ctx = RenderContext(job_id=str(uuid.uuid4()), job_name="gpulab-sweep", lab_dir=str(tmp_path))
    script = render_script(BODY, SCHEMA, values, ctx, swept=swept, task_block=arrays.task_block(swept, ["fp16"]))
    assert "0.1" not in script.split("# Launched from GPU Lab Portal")[1]  # no run's value is in the script itself
    sweep_dir = tmp_path / "jobs" / ctx.job_id
    sweep_dir.mkdir(parents=True)
    (sweep_dir / arrays.VALUES_NAME).write_text(
        arrays.values_file([(run_id, [value_text(params[n], run[n]) for n in swept]) for run_id, run in runs])
    )
    for task, (run_id, run) in enumerate(runs):
        done = subprocess.run(
            ["bash", "-c", script],
            cwd=sweep_dir,
            env={"SLURM_ARRAY_TASK_ID": str(task), "PATH": "/usr/bin:/bin"},
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        log = (tmp_path / "jobs" / str(run_id) / arrays.RUN_LOG).read_text()
        assert f"run={run_id} lr={run['lr']} mode={run['mode']}\n" in log
        assert ("flag=--fp16\nflag=end" if run["fp16"] else "flag=end") in log
    assert not list(tmp_path.rglob("pwned"))


def test_a_task_without_its_line_stops_with_a_message(tmp_path):
    script = render_script(
        BODY,
        SCHEMA,
        {p.name: p.default for p in SCHEMA},
        RenderContext(job_id="x", job_name="s", lab_dir=str(tmp_path)),
        swept=("lr",),
        task_block=arrays.task_block(["lr"]),
    )
    (tmp_path / arrays.VALUES_NAME).write_text(arrays.values_file([(uuid.uuid4(), ["0.5"])]))
    done = subprocess.run(
        ["bash", "-c", script],
        cwd=tmp_path,
        env={"SLURM_ARRAY_TASK_ID": "3", "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2 and "Task 3 has no line" in done.stderr


def test_a_running_array_task_s_gpus_are_keyed_by_array_and_task():
    from clusters.backends.kinds.slurm.backend import parse_gpu_allocations

    shown = (
        "JobId=1243 ArrayJobId=1240 ArrayTaskId=3 JobName=x\n   JobState=RUNNING Reason=None\n"
        "     Nodes=node1 CPU_IDs=0-1 Mem=0 GRES=gpu:demo:1(IDX:2)\n"
        "JobId=77 JobName=y\n   JobState=RUNNING Reason=None\n     Nodes=node1 CPU_IDs=2 Mem=0 GRES=gpu:demo:1(IDX:0)\n"
    )
    assert [(a.scheduler_id, a.indexes) for a in parse_gpu_allocations(shown)] == [("1240_3", (2,)), ("77", (0,))]


def test_slurmrestd_lists_array_tasks_by_array_and_task_and_finds_the_array_by_its_comment():
    from clusters.backends.kinds.slurm_rest.parsing import NO_VAL, find_by_comment, statuses

    answer = {
        "jobs": [
            {"job_id": 1241, "array_job_id": 1240, "array_task_id": 0, "job_state": "RUNNING", "comment": "gpulab:s"},
            {
                "job_id": 1240,
                "array_job_id": 1240,
                "array_task_id": NO_VAL,
                "array_task_string": "1-2%1",
                "job_state": "PENDING",
                "comment": "gpulab:s",
            },
            {"job_id": 77, "array_job_id": 0, "job_state": "RUNNING"},
        ]
    }
    found = statuses(answer)
    assert sorted(found) == ["1240_0", "1240_1", "1240_2", "77"]
    assert found["1240_2"].state == "pending" and found["1240_2"].scheduler_id == "1240_2"
    assert find_by_comment(answer, "s", "alice") == "1240"


def test_a_running_task_s_own_job_number_is_what_its_terminal_attaches_to():
    shown = "JobId=1876 ArrayJobId=1875 ArrayTaskId=1 ArrayTaskThrottle=2 JobName=wrap JobState=RUNNING Reason=None"
    assert arrays.raw_job_id(shown) == "1876"
    assert arrays.raw_job_id(shown.replace("RUNNING", "PENDING")) is None
