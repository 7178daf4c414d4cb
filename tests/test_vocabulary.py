"""The job-state vocabulary (core/choices.py) and the state machine agree: every state is active or terminal, and
only active states move. That the vocabulary imports nothing from the project is the import-linter contract
`vocabulary-leaf` (pyproject.toml)."""

from core.choices import ACTIVE_STATES, ON_SCHEDULER_STATES, TERMINAL_STATES, JobState
from jobs.states import TRANSITIONS


def test_every_state_is_active_or_terminal_and_only_active_states_move():
    assert set(JobState) == ACTIVE_STATES | TERMINAL_STATES and not ACTIVE_STATES & TERMINAL_STATES
    assert ON_SCHEDULER_STATES <= ACTIVE_STATES
    assert set(TRANSITIONS) <= ACTIVE_STATES
