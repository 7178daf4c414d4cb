"""CSV the portal writes: text a spreadsheet would run as a formula is escaped, in every CSV the portal writes."""

from __future__ import annotations

import csv
import io
import re
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from core import csv_cells
from jobs.models import Job, JobTemplate

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(
    "text",
    ['=HYPERLINK("http://evil","x")', "+1+cmd|' /C calc'!A0", "-2+3", "@SUM(A1:A9)", "\tTAB=1", "\r=1"],
)
def test_text_a_spreadsheet_would_run_gets_a_leading_quote(text):
    assert csv_cells.cell(text) == "'" + text


@pytest.mark.parametrize("value", ["alice", "a=b", "", " =1", 3, 0, -1.5, -7, None, 2.5])
def test_plain_text_and_numbers_are_written_as_they_are(value):
    assert csv_cells.cell(value) == value


def test_a_negative_number_stays_a_number_in_the_file():
    out = io.StringIO()
    csv_cells.writer(out).writerow([-1.5, "-1.5", "=1"])
    assert out.getvalue() == "-1.5,'-1.5,'=1\r\n"


def test_course_report_escapes_a_hostile_username_and_template_name(login, make_user, instructor, course, cluster):
    from courses.models import Enrollment, Role

    mallory = make_user("-2+3@x")
    Enrollment.objects.create(course=course, user=mallory, role=Role.STUDENT)
    template = JobTemplate.objects.create(name='=HYPERLINK("http://evil","open")', slug="evil", body="echo")
    start = timezone.now() - timedelta(hours=2)
    Job.objects.create(owner=mallory, course=course, cluster=cluster, template=template, state="completed",
                       gpus=1, started_at=start, finished_at=start + timedelta(hours=1))  # fmt: skip
    body = login(instructor).get(f"/courses/{course.slug}/report.csv").content.decode()
    row = list(csv.reader(io.StringIO(body)))[1]
    assert row[0] == "'-2+3@x"
    assert row[2] == '\'=HYPERLINK("http://evil","open")'
    assert row[5] == "1"  # a number stays a number


def test_no_module_writes_csv_without_the_escaping_writer():
    """Every CSV writer goes through core.csv_cells; a new export that calls csv.writer directly fails here."""
    pattern = re.compile(r"\bcsv\.(writer|DictWriter)\b|from csv import[^\n]*\b(writer|DictWriter)\b")
    skip = {".venv", "tests", "node_modules", ".git"}
    offenders = [
        str(path.relative_to(ROOT))
        for path in ROOT.rglob("*.py")
        if not skip & set(path.relative_to(ROOT).parts)
        and path != ROOT / "core" / "csv_cells.py"
        and pattern.search(path.read_text(encoding="utf-8", errors="replace"))
    ]
    assert offenders == []
