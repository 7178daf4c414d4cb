"""A full run's JUnit report → tests/integration/lane_seconds.json, the seconds each SLURM-lane test took, which the
lanes are dealt by (tests/integration/conftest.py). Only the integration tests are kept.

    bash scripts/test.sh --junitxml=var/test-report.xml
    .venv/bin/python scripts/lane_seconds.py var/test-report.xml
"""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "tests/integration/lane_seconds.json"


def main(report: str) -> None:
    seconds: dict[str, float] = {}
    for case in ET.parse(report).getroot().iter("testcase"):  # noqa: S314 (our own test run's report)
        module = case.get("classname", "")
        if not module.startswith("tests.integration."):
            continue
        nodeid = f"{module.replace('.', '/')}.py::{case.get('name', '').split('@')[0]}"
        seconds[nodeid] = round(seconds.get(nodeid, 0.0) + float(case.get("time") or 0), 1)
    OUT.write_text(json.dumps(dict(sorted(seconds.items())), indent=0) + "\n")
    print(f"{len(seconds)} tests, {sum(seconds.values()):.0f} s, in {OUT}")


if __name__ == "__main__":
    main(sys.argv[1])
