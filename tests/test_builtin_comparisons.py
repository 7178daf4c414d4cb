"""Built-in templates a lab tells students to compare: their defaults differ only where the difference is the lesson."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from jobs.authoring import preview
from jobs.builtin import builtin_definitions

# What the DDP template is about (GPUs, nodes and what they need) and what does not change a run's numbers.
THE_LESSON = {"gpus_per_node", "nodes", "cpus_per_task", "time_minutes", "partition", "infiniband", "nccl_debug"}


def _templates() -> dict[str, dict]:
    return {d["slug"]: d for d in builtin_definitions()}


def test_the_ddp_template_starts_from_the_single_gpu_template_s_training_defaults():
    single, ddp = _templates()["tiny-lm-single"], _templates()["tiny-lm-ddp"]
    assert "compare tok/s with the single-GPU run" in ddp["description"]
    defaults = {name: {p["name"]: p["default"] for p in t["parameters"]} for name, t in (("1", single), ("n", ddp))}
    shared = (set(defaults["1"]) & set(defaults["n"])) - THE_LESSON
    assert {"model", "batch_size", "seq_len", "max_steps", "epochs", "lr", "precision"} <= shared
    assert {p: defaults["n"][p] for p in shared} == {p: defaults["1"][p] for p in shared}


def test_both_tiny_lm_templates_hand_the_trainer_the_same_training_flags():
    """A flag one template passes and the other leaves to the trainer's default would differ silently."""
    training = r"--(\w+) \{\{ (?:model|epochs|max_steps|batch_size|seq_len|lr|precision) \}\}"
    flags = {
        slug: set(re.findall(training, t["body"]))
        for slug, t in _templates().items()
        if slug in {"tiny-lm-single", "tiny-lm-ddp"}
    }
    assert flags["tiny-lm-single"] == flags["tiny-lm-ddp"] == {
        "model", "epochs", "max_steps", "batch_size", "seq_len", "lr", "precision"
    }  # fmt: skip


# What the training handouts tell students to change, and the trainer flag each one reaches.
HANDOUT_KNOBS = {
    "precision": "--precision",
    "batch_size": "--batch_size",
    "seq_len": "--seq_len",
    "lr": "--lr",
    "num_workers": "--num_workers",
    "pin_memory": "--pin_memory",
    "compile": "--compile",
}
TRAINER = Path(__file__).resolve().parents[1] / "workloads/trainer/train.py"


@pytest.mark.parametrize("slug", ["tiny-lm-single", "tiny-lm-ddp"])
def test_the_handouts_knobs_are_parameters_with_help_and_bounds_that_reach_the_trainer(slug):
    template = _templates()[slug]
    params = {p["name"]: p for p in template["parameters"]}
    assert set(HANDOUT_KNOBS) | {"gpus_per_node"} <= set(params)
    assert all(params[name].get("help") for name in [*HANDOUT_KNOBS, "gpus_per_node"])
    assert params["precision"]["choices"] == ["fp32", "fp16", "bf16"]
    for name in ("batch_size", "seq_len", "lr", "num_workers", "gpus_per_node"):
        assert params[name]["min"] <= params[name]["default"] <= params[name]["max"]
    flipped = {"compile": True, "pin_memory": False, "precision": "fp16", "num_workers": 3}
    rendered = preview(
        template["body"], [{**p, "default": flipped.get(p["name"], p["default"])} for p in params.values()]
    )
    assert rendered.ok, rendered.errors
    trainer_call = rendered.script[rendered.script.index("trainer/train.py") :]
    assert "--compile" in trainer_call and "--pin_memory false" in trainer_call and "--num_workers 3" in trainer_call
    assert "--precision fp16" in trainer_call
    declared = set(re.findall(r'add_argument\(\s*"(--\w+)"', TRAINER.read_text()))
    passed = set(re.findall(r"(?<![\w-])(--\w+)", trainer_call))
    assert set(HANDOUT_KNOBS.values()) <= passed <= declared  # every flag the template writes, the trainer takes
