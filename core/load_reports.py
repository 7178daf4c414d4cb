"""A load generator's report, read from its log: requests/s, output tokens/s, TTFT and TPOT.

Two load generators print one, and the templates run both:
    - the bundled one (workloads/inference/loadgen.py --report-line) ends with `GPULAB_REPORT {json}`;
    - vLLM's own (`vllm bench serve`, before it benchmarks/benchmark_serving.py) prints a block framed by
      "==== Serving Benchmark Result ====" and a line of "=", one `Label:   value` per line: "Request throughput
      (req/s):", "Median TTFT (ms):", and one "P95 TTFT (ms):" per percentile asked with --metric-percentiles.

A log is the student's to write, so what is read is numbers only: a figure whose text is not a plain decimal number
(NaN, inf, 1e400, a formula, a 40-digit run), is negative or is beyond any real measurement is left out, never
guessed. The last report in the log with figures counts: a load generator run twice reports twice.
"""

from __future__ import annotations

import json
import math
import re

REPORT_PREFIX = "GPULAB_REPORT"
IN_JOB = "load generator in the job"  # the name a report read from the job's own pod is kept under
# The figures a comparison puts side by side (jobs.models.LoadTestResult keeps them), by the bundled report's names.
FIGURES = (
    "num_prompts",
    "max_concurrency",
    "output_len",
    "completed",
    "failed",
    "requests_per_s",
    "output_tokens_per_s",
    "ttft_p50_ms",
    "ttft_p95_ms",
    "tpot_p50_ms",
    "tpot_p95_ms",
)
COUNTS = {"num_prompts", "max_concurrency", "output_len", "completed", "failed"}
LARGEST = 1e12  # a day in ms is 8.6e7, a million requests a second 1e6: anything larger is not a measurement
LONGEST_LINE = 64 * 1024  # a report line is a few hundred characters; longer lines are not read at all

VLLM_START = re.compile(r"^=+ Serving Benchmark Result =+$")
VLLM_END = re.compile(r"^={20,}$")
VLLM_LINE = re.compile(r"^(?P<label>[A-Za-z][A-Za-z0-9 ()/.,_-]{0,80}):\s+(?P<value>\S{1,40})$")
# vLLM's labels → the portal's names; "P50" and "Median" are the same figure, printed when asked.
VLLM_LABELS = {
    "Successful requests": "completed",
    "Failed requests": "failed",
    "Maximum request concurrency": "max_concurrency",
    "Request throughput (req/s)": "requests_per_s",
    "Output token throughput (tok/s)": "output_tokens_per_s",
    "Median TTFT (ms)": "ttft_p50_ms",
    "P50 TTFT (ms)": "ttft_p50_ms",
    "P95 TTFT (ms)": "ttft_p95_ms",
    "Median TPOT (ms)": "tpot_p50_ms",
    "P50 TPOT (ms)": "tpot_p50_ms",
    "P95 TPOT (ms)": "tpot_p95_ms",
}
DECIMAL = re.compile(r"[0-9]{1,15}(\.[0-9]{1,12})?")


def read_report(log: str) -> dict[str, float]:
    """The figures of the last report in `log` ({} when it holds none), by the names in FIGURES."""
    found: dict[str, float] = {}
    block: dict[str, float] | None = None
    for line in log.splitlines():
        if len(line) > LONGEST_LINE:
            continue
        line = line.rstrip()
        if line.startswith(REPORT_PREFIX + " "):
            found = _bundled(line[len(REPORT_PREFIX) + 1 :]) or found
        elif VLLM_START.match(line):
            block = {}
        elif block is not None and VLLM_END.match(line):
            found, block = _counted(block) or found, None
        elif block is not None:
            match = VLLM_LINE.match(line)
            name = VLLM_LABELS.get(match["label"]) if match else None
            value = _number(match["value"]) if match and name else None
            if name and value is not None:
                block[name] = value
    return found


def _bundled(text: str) -> dict[str, float]:
    try:
        report = json.loads(text)
    except ValueError:  # not JSON, or an integer too long to read
        return {}
    if not isinstance(report, dict):
        return {}
    figures = {name: _checked(report.get(name)) for name in FIGURES}
    return _counted({name: value for name, value in figures.items() if value is not None})


def _number(text: str) -> float | None:
    return float(text) if DECIMAL.fullmatch(text) else None


def _checked(value) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:  # an integer past float's range
        return None
    return number if math.isfinite(number) and 0 <= number <= LARGEST else None


def _counted(figures: dict[str, float]) -> dict[str, float]:
    """Counts are whole, measurements in range; the prompts sent are the completed and failed ones together."""
    kept = {
        name: value
        for name, value in figures.items()
        if _checked(value) is not None and (name not in COUNTS or value.is_integer())
    }
    if "num_prompts" not in kept and {"completed", "failed"} <= kept.keys():
        kept["num_prompts"] = kept["completed"] + kept["failed"]
    return kept
