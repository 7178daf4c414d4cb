"""The kind contracts in pyproject.toml name no kind: every package directly under a package named `kinds` is held to
them by wildcard (`**.kinds.*`). The fake kind in tests/kinds/fake is checked as the portal's own kinds are, and a
kind written tomorrow, wherever its `kinds` namespace is, is checked the day it is written, with no edit there."""

from __future__ import annotations

import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

# One test process runs them all, one after another: a probe kind written into the tree for one test must not be
# read by another test's lint-imports running beside it.
pytestmark = pytest.mark.xdist_group("kind-contracts")

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def lint(*contracts: str) -> subprocess.CompletedProcess:
    argv = [str(LINT_IMPORTS), "--no-cache", "--verbose"]
    for contract in contracts:
        argv += ["--contract", contract]
    return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)


def test_the_fake_kind_is_held_to_the_kind_contracts_beside_the_portals_own():
    checked = lint("kinds-independent", "kinds-take-plain-data", "kinds-behind-registry")
    assert checked.returncode == 0, checked.stdout
    for kind in ("tests.kinds.fake", "clusters.backends.kinds.slurm", "clusters.backends.kinds.kubernetes"):
        assert kind in checked.stdout


@pytest.mark.parametrize(
    ("written", "contract"),
    [
        ("from clusters.backends.kinds.slurm import backend", "kinds-independent"),  # a kind leaning on another
        ("from jobs import models", "kinds-take-plain-data"),  # a kind reading the jobs app's rows
    ],
)
def test_a_new_kind_that_breaks_a_contract_is_caught_without_being_named_anywhere(written, contract):
    probe = ROOT / "tests" / "kinds" / f"probe_{uuid.uuid4().hex[:8]}"
    probe.mkdir()
    try:
        (probe / "__init__.py").write_text(f'"""A kind written today."""\n\n{written}  # noqa: F401\n')
        checked = lint(contract)
    finally:
        shutil.rmtree(probe)
    assert checked.returncode != 0 and "BROKEN" in checked.stdout, checked.stdout
    assert f"tests.kinds.{probe.name}" in checked.stdout
