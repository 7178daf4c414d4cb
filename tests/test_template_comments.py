"""Django's {# … #} comment ends on its own line; one that runs over two lines is printed on the page as text."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_no_page_template_has_a_comment_that_runs_over_lines():
    unclosed = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in ROOT.glob("*/templates/**/*.html")
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if line.count("{#") > line.count("#}")
    ]
    assert not unclosed, f"use {{% comment %}} for these: {unclosed}"
