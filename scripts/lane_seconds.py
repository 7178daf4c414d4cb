"""Full runs' JUnit reports → tests/integration/lane_seconds.json, the seconds each SLURM-lane test took (the median
over the reports given: one run's times swing with what ran beside them), which the lanes are dealt by
(tests/integration/conftest.py). Only the integration tests are kept.

    bash scripts/test.sh --junitxml=var/test-report.xml
    .venv/bin/python scripts/lane_seconds.py var/test-report.xml [more reports …]
"""

from __future__ import annotations

import json
import statistics
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "tests/integration/lane_seconds.json"


def seconds_in(report: str) -> dict[str, float]:
    seconds: dict[str, float] = {}
    for case in ET.parse(report).getroot().iter("testcase"):  # noqa: S314 (our own test run's report)
        module = case.get("classname", "")
        if not module.startswith("tests.integration."):
            continue
        nodeid = f"{module.replace('.', '/')}.py::{case.get('name', '').split('@')[0]}"
        seconds[nodeid] = seconds.get(nodeid, 0.0) + float(case.get("time") or 0)
    return seconds


def main(reports: list[str]) -> None:
    runs = [seconds_in(report) for report in reports]
    tests = sorted(set().union(*runs))
    seconds = {test: round(statistics.median(run[test] for run in runs if test in run), 1) for test in tests}
    OUT.write_text(json.dumps(seconds, indent=0) + "\n")
    print(f"{len(seconds)} tests, {sum(seconds.values()):.0f} s (median of {len(runs)} runs), in {OUT}")


if __name__ == "__main__":
    main(sys.argv[1:])
