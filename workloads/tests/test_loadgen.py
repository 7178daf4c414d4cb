import json
import subprocess
import sys

from conftest import ENV, WORKLOADS


def test_loadgen_reports_every_figure_for_both_apis(server, tmp_path):
    for api in ("openai", "ollama"):
        out = tmp_path / f"{api}.json"
        result = subprocess.run(
            [
                sys.executable,
                str(WORKLOADS / "inference" / "loadgen.py"),
                "--base-url",
                server.url,
                "--api",
                api,
                "--num-prompts",
                "12",
                "--max-concurrency",
                "4",
                "--input-len",
                "16",
                "--output-len",
                "8",
                "--json",
                str(out),
            ],
            capture_output=True,
            text=True,
            timeout=120,
            env=ENV,
            check=False,
        )
        assert result.returncode == 0, result.stdout + result.stderr
        figures = json.loads(out.read_text())
        assert figures["completed"] == 12 and figures["failed"] == 0
        assert figures["total_output_tokens"] == 12 * 8
        for key in [
            "requests_per_s",
            "output_tokens_per_s",
            "ttft_p50_ms",
            "ttft_p95_ms",
            "ttft_p99_ms",
            "tpot_p50_ms",
            "tpot_p95_ms",
            "tpot_p99_ms",
        ]:
            assert figures[key] > 0, key
        assert "output tokens/s" in result.stdout and "TTFT" in result.stdout
