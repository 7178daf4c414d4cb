"""Kinds that live in the test tree alone (`fake`): under a `kinds` namespace, so the kind contracts cover them as they
cover the portal's own kinds, with no edit to pyproject.toml."""
