"""The load generator's report as the portal reads it from a log (core/load_reports.py): vLLM's benchmark block and the
bundled generator's GPULAB_REPORT line, the last one with figures counting, and nothing but plausible numbers kept
whatever else a log holds."""

from __future__ import annotations

import json

import pytest

from core.load_reports import FIGURES, read_report
from tests.vllm_bench import vllm_block

LOG_BEFORE = (
    "INFO 09-02 10:11:12 [__init__.py:241] Automatically detected platform cuda.\n"
    "Namespace(subparser='bench', bench_type='serve', backend='vllm', model='ibm-granite/granite-3.2-8b-instruct')\n"
    "Starting initial single prompt test run...\nInitial test run completed. Starting main benchmark run...\n"
    "Traffic request rate: inf\nBurstiness factor: 1.0 (Poisson process)\nMaximum request concurrency: 16\n"
)


def test_vllm_s_block_gives_requests_s_ttft_and_tpot_by_the_portal_s_names():
    figures = read_report(LOG_BEFORE + vllm_block())
    assert figures == {
        "completed": 512.0,
        "failed": 0.0,
        "num_prompts": 512.0,
        "max_concurrency": 16.0,
        "requests_per_s": 12.38,
        "output_tokens_per_s": 1584.21,
        "ttft_p50_ms": 51.77,
        "ttft_p95_ms": 141.06,
        "tpot_p50_ms": 9.52,
        "tpot_p95_ms": 11.8,
    }
    assert set(figures) <= set(FIGURES)


def test_an_older_vllm_without_percentiles_or_failed_count_gives_what_it_printed():
    block = vllm_block().replace("Failed requests:", "Goodput:").replace("P95 TTFT", "P90 TTFT")
    figures = read_report(block)
    assert figures["ttft_p50_ms"] == 51.77 and "ttft_p95_ms" not in figures
    assert "failed" not in figures and "num_prompts" not in figures


def test_the_bundled_generator_s_report_line_is_read_as_it_prints_it():
    report = {"num_prompts": 8, "max_concurrency": 2, "completed": 8, "failed": 0, "requests_per_s": 3.2}
    report |= {"ttft_p50_ms": 40.5, "ttft_p95_ms": 88.0, "tpot_p50_ms": 3.1, "tpot_p95_ms": 4.4, "api": "openai"}
    figures = read_report("completed requests   8 of 8\nGPULAB_REPORT " + json.dumps(report) + "\n")
    assert figures["requests_per_s"] == 3.2 and figures["tpot_p95_ms"] == 4.4 and "api" not in figures


def test_the_last_report_with_figures_counts():
    first, second = vllm_block(), vllm_block(**{"Request throughput (req/s)": "20.50"})
    assert read_report(first + second)["requests_per_s"] == 20.5
    cut = second[: second.index("Median TTFT")]  # a log cut before the block ended: the earlier report stands
    assert read_report(first + cut)["requests_per_s"] == 12.38
    assert read_report(first + "GPULAB_REPORT {not json\n")["requests_per_s"] == 12.38


@pytest.mark.parametrize(
    "value",
    [
        "nan",
        "NaN",
        "inf",
        "-inf",
        "1e400",
        "9" * 40,
        "1e300",
        "123456789012345678",
        "-3.5",
        '=HYPERLINK("http://x")',
        "0x1F",
        "12,38",
        "١٢",  # digits of another script
    ],
)
def test_a_figure_that_is_not_a_plain_plausible_number_is_left_out(value):
    figures = read_report(vllm_block(**{"Median TTFT (ms)": value, "P50 TTFT (ms)": value}))
    assert "ttft_p50_ms" not in figures and figures["tpot_p50_ms"] == 9.52


@pytest.mark.parametrize(
    "line",
    [
        'GPULAB_REPORT {"requests_per_s": NaN, "ttft_p50_ms": Infinity, "tpot_p50_ms": -1, "completed": 7.5}',
        'GPULAB_REPORT {"requests_per_s": "12", "ttft_p50_ms": true, "tpot_p50_ms": [1], "completed": null}',
        'GPULAB_REPORT {"requests_per_s": ' + "9" * 5000 + "}",  # an integer Python refuses to read
        'GPULAB_REPORT {"requests_per_s": ' + "9" * 400 + "}",  # one past float's range
        "GPULAB_REPORT [1, 2, 3]",
        "GPULAB_REPORT " + json.dumps({"requests_per_s": 1.0, "pad": "x" * 70_000}),  # a line too long to read
    ],
)
def test_a_hostile_report_line_gives_no_figures(line):
    assert read_report(line + "\n") == {}


def test_garbage_and_a_huge_log_are_read_without_harm():
    garbage = "\x00\x1b[31m\ufffd" * 1000 + "\n" + ("Successful requests: 5\n" * 100) + "=" * 50 + "\n"
    assert read_report(garbage) == {}  # label lines outside a block are not a report
    long_line = "x" * 200_000 + "\n"
    assert read_report(long_line * 10 + vllm_block())["requests_per_s"] == 12.38


def test_counts_that_are_not_whole_are_left_out_and_figures_beyond_any_measurement_too():
    beyond = {"Successful requests": "511.5", "Output token throughput (tok/s)": "2000000000000"}
    figures = read_report(vllm_block(**beyond))
    assert "completed" not in figures and "num_prompts" not in figures and "output_tokens_per_s" not in figures
