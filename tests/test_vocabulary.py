"""The job-state vocabulary is a leaf: every app may name states without importing the state machine or `jobs`."""

import ast
from pathlib import Path

from core.choices import ACTIVE_STATES, ON_SCHEDULER_STATES, TERMINAL_STATES, JobState
from jobs.states import TRANSITIONS

ROOT = Path(__file__).resolve().parent.parent
PROJECT_PACKAGES = {p.name for p in ROOT.iterdir() if (p / "__init__.py").exists()} - {"core"}


def _imported_top_levels(path: Path) -> set[str]:
    tops = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            tops.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            tops.add(node.module.split(".")[0])
    return tops


def test_the_vocabulary_imports_nothing_from_the_project():
    assert {"jobs", "clusters", "courses"} <= PROJECT_PACKAGES  # the walk sees the project's apps
    for path in (ROOT / "core").rglob("*.py"):
        assert not _imported_top_levels(path) & PROJECT_PACKAGES, path


def test_every_state_is_active_or_terminal_and_only_active_states_move():
    assert set(JobState) == ACTIVE_STATES | TERMINAL_STATES and not ACTIVE_STATES & TERMINAL_STATES
    assert ON_SCHEDULER_STATES <= ACTIVE_STATES
    assert set(TRANSITIONS) <= ACTIVE_STATES
