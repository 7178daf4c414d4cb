"""The resource table is the one place a resource parameter's type, #SBATCH option and name in messages live:
the schema check, the header and the advice all follow it."""

import pytest

from clusters.backends.kinds.slurm_rest.directives import OPTIONS
from clusters.backends.slurm_family.script.header import DIRECTIVES
from clusters.backends.slurm_family.script.rendering import (
    RenderContext,
    RenderError,
    check_placeholder_contexts,
    render_script,
)
from core.templating.params import SchemaError, parse_schema
from core.templating.resources import RESOURCES

CTX = RenderContext(job_id="00000000-0000-0000-0000-000000000001", job_name="gpulab-t", lab_dir="~/gpulab")
ALL = {
    "partition": "gpu",
    "nodes": 2,
    "ntasks_per_node": 4,
    "gpus_per_node": 2,
    "gpu_type": "a100",
    "cpus_per_task": 8,
    "mem_gb": 32,
    "time_minutes": 30,
}


def _schema(values):
    return [
        {"name": n, "type": RESOURCES[n].type, "default": v, **({"choices": [v]} if isinstance(v, str) else {})}
        for n, v in values.items()
    ]


def test_every_resource_a_job_asks_for_becomes_its_sbatch_line_in_the_tables_order():
    script = render_script("echo hi\n", parse_schema(_schema(ALL)), ALL, CTX)
    assert script.splitlines()[1:10] == [
        "#SBATCH --job-name=gpulab-t",
        "#SBATCH --partition=gpu",
        "#SBATCH --nodes=2",
        "#SBATCH --ntasks-per-node=4",
        "#SBATCH --gres=gpu:a100:2",
        "#SBATCH --cpus-per-task=8",
        "#SBATCH --mem=32G",
        "#SBATCH --time=30",
        "",
    ]


def test_resources_left_at_zero_or_absent_write_no_line_and_gpus_without_a_type_name_none():
    values = {"gpus_per_node": 1, "cpus_per_task": 0}
    script = render_script("echo hi\n", parse_schema(_schema(values)), values, CTX)
    assert [line for line in script.splitlines() if line.startswith("#SBATCH")] == [
        "#SBATCH --job-name=gpulab-t",
        "#SBATCH --gres=gpu:1",
    ]


@pytest.mark.parametrize("name", sorted(RESOURCES))
def test_a_resource_parameter_of_another_type_is_refused_naming_the_type_it_needs(name):
    wrong = "bool"
    with pytest.raises(SchemaError, match=f"sets a SLURM resource and must have type {RESOURCES[name].type}"):
        parse_schema([{"name": name, "type": wrong, "default": False}])


def test_a_placeholder_in_an_sbatch_line_is_told_every_resource_parameter_to_use_instead():
    with pytest.raises(RenderError) as refused:
        check_placeholder_contexts("#SBATCH --partition={{ part }}\necho hi\n")
    for name in RESOURCES:
        assert name in str(refused.value)


def test_slurmrestd_reads_every_option_the_header_writes():
    written = {d.option.removeprefix("--") for d in DIRECTIVES.values() if d.option} | {"job-name"}
    assert written <= set(OPTIONS)
