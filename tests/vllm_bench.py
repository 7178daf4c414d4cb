"""What `vllm bench serve` prints at its end, for the tests that read it from a load generator's log."""

from __future__ import annotations


def vllm_block(**values: str) -> str:
    """A result block as `vllm bench serve --percentile-metrics ttft,tpot,itl --metric-percentiles 50,95,99` prints
    it: labels padded to 40 columns, values to 10, framed by '=' lines."""
    rows = {
        "Successful requests:": "512",
        "Failed requests:": "0",
        "Maximum request concurrency:": "16",
        "Benchmark duration (s):": "41.37",
        "Total input tokens:": "65536",
        "Total generated tokens:": "65536",
        "Request throughput (req/s):": "12.38",
        "Output token throughput (tok/s):": "1584.21",
        "Total Token throughput (tok/s):": "3168.42",
        "Mean TTFT (ms):": "63.02",
        "Median TTFT (ms):": "51.77",
        "P50 TTFT (ms):": "51.77",
        "P95 TTFT (ms):": "141.06",
        "P99 TTFT (ms):": "210.34",
        "Mean TPOT (ms):": "9.71",
        "Median TPOT (ms):": "9.52",
        "P50 TPOT (ms):": "9.52",
        "P95 TPOT (ms):": "11.80",
        "P99 TPOT (ms):": "12.44",
        "Mean ITL (ms):": "9.70",
        "P95 ITL (ms):": "14.02",
    }
    rows.update({f"{label}:": value for label, value in values.items()})
    lines = ["{s:{c}^{n}}".format(s=" Serving Benchmark Result ", n=50, c="=")]
    lines += [f"{label:<40} {value:<10}" for label, value in rows.items()]
    lines.insert(10, "{s:{c}^{n}}".format(s="Time to First Token", n=50, c="-"))
    lines.append("=" * 50)
    return "\n".join(lines) + "\n"
