"""Built-in templates a lab tells students to compare: their defaults differ only where the difference is the lesson."""

from __future__ import annotations

import re

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
