"""Servers' load tests in a comparison: the last report the portal read of each server job is kept (jobs/servers.py)
and shown side by side (requests/s, TTFT and TPOT p50/p95) on the page, in its CSV and in GET /api/v1/compare/; runs
without one show nothing, and a run the viewer may not see is never shown."""

from __future__ import annotations

import csv
import io
from types import SimpleNamespace

import pytest
from django.urls import reverse

from clusters.backends.kinds.kubernetes.endpoints import LoadTestReport
from jobs import servers
from jobs.models import Job, LoadTestResult
from tests.test_compare import api_url, page_queries, ran, url

pytestmark = pytest.mark.django_db

REPORT = {
    "api": "openai",
    "num_prompts": 64,
    "max_concurrency": 8,
    "output_len": 64,
    "completed": 64,
    "failed": 0,
    "requests_per_s": 12.345,
    "output_tokens_per_s": 790.1,
    "ttft_p50_ms": 41.25,
    "ttft_p95_ms": 97.5,
    "tpot_p50_ms": 6.75,
    "tpot_p95_ms": 11.0,
    "tpot_p99_ms": 15.0,
}


def server(job, **figures) -> Job:
    """A finished server job whose last load test the portal kept, with REPORT's figures changed by `figures`."""
    ran(job, tok=[], loss=[])
    LoadTestResult.objects.create(job=job, name=f"load-{job.short_id}", figures={**REPORT, **figures})
    return Job.objects.get(pk=job.pk)


def csv_rows(client, table: str, *jobs) -> list[dict]:
    answer = client.get(reverse("experiments:compare_csv", args=[table]) + url(*jobs)[len("/compare/") :])
    assert answer.status_code == 200
    return list(csv.DictReader(io.StringIO(answer.content.decode())))


def test_two_servers_load_tests_are_side_by_side_on_the_page_in_the_api_and_in_the_csv(login, api_for, make_job, alice):
    small = server(make_job(alice, seconds=1))
    large = server(make_job(alice, seconds=2), requests_per_s=30.5, ttft_p95_ms=150.2, tpot_p50_ms=4.5)
    body = api_for(alice).get(api_url(small, large)).json()
    tests = [run["load_test"] for run in body["runs"]]
    assert [t["requests_per_s"] for t in tests] == [12.345, 30.5]
    assert [(t["ttft_p50_ms"], t["ttft_p95_ms"]) for t in tests] == [(41.25, 97.5), (41.25, 150.2)]
    assert [(t["tpot_p50_ms"], t["tpot_p95_ms"]) for t in tests] == [(6.75, 11.0), (4.5, 11.0)]
    assert tests[0]["prompts"] == 64 and tests[0]["concurrency"] == 8 and tests[0]["name"] == f"load-{small.short_id}"

    page = login(alice).get(url(small, large)).content.decode()
    table = page.split('id="compare-load-tests"', 1)[1].split("</section>", 1)[0]
    assert table.count("<tr data-run=") == 2 and "12.35" in table and "30.50" in table
    assert "150.2 ms" in table and "4.5 ms" in table and "64 prompts, 8 at once" in table

    rows = csv_rows(login(alice), "load-tests", small, large)
    assert [(r["job"], float(r["requests_per_s"]), float(r["ttft_p95_ms"])) for r in rows] == [
        (str(small.pk), 12.345, 97.5),
        (str(large.pk), 30.5, 150.2),
    ]


def test_runs_without_a_load_test_show_no_row_and_no_table_when_none_has_one(login, api_for, make_job, alice):
    tested = server(make_job(alice, seconds=1))
    trained = ran(make_job(alice, seconds=2), tok=[100.0], loss=[2.0])
    other = ran(make_job(alice, seconds=3), tok=[110.0], loss=[2.0])
    page = login(alice).get(url(tested, trained)).content.decode()
    assert page.split('id="compare-load-tests"', 1)[1].split("</section>", 1)[0].count("<tr data-run=") == 1
    assert [run["load_test"] is None for run in api_for(alice).get(api_url(tested, trained)).json()["runs"]] == [
        False,
        True,
    ]
    none = login(alice).get(url(trained, other)).content.decode()
    assert "compare-load-tests" not in none and "Requests/s" not in none and "TTFT" not in none
    assert csv_rows(login(alice), "load-tests", trained, other) == []  # the header alone


def test_reading_a_servers_report_keeps_its_numbers_so_it_compares_after_it_ends(
    login, api_for, make_job, alice, monkeypatch
):
    job, other = server(make_job(alice, seconds=1)), ran(make_job(alice, seconds=2), tok=[100.0], loss=[2.0])
    hostile = {**REPORT, "requests_per_s": 7.5, "ttft_p50_ms": "=HYPERLINK(1)", "tpot_p95_ms": float("nan")}
    cluster_has = [LoadTestReport("load-2", "Succeeded", {**hostile, "first_error": "<b>boom</b>", "extra": [1] * 9})]
    kind = SimpleNamespace(load_test_report=lambda job: cluster_has[0])
    monkeypatch.setattr(servers, "_kind", lambda job: kind)
    client = login(alice)
    assert "7.50" in client.get(reverse("jobs:load_test_report", args=[other.pk])).content.decode()
    kept = LoadTestResult.objects.get(job=other)
    assert kept.name == "load-2" and kept.figures["requests_per_s"] == 7.5
    assert set(kept.figures) == set(servers.REPORT_FIGURES) - {"ttft_p50_ms", "tpot_p95_ms"}  # numbers only
    cluster_has[0] = LoadTestReport("load-3", "Running", None)  # a new test under way: the last report stays
    client.get(reverse("jobs:load_test_report", args=[other.pk]))
    assert LoadTestResult.objects.get(job=other).name == "load-2"

    Job.objects.filter(pk=other.pk).update(state="cancelled")  # the server ended; the cluster has nothing of it
    cluster_has[0] = None
    test = api_for(alice).get(api_url(job, other)).json()["runs"][1]["load_test"]
    assert test["requests_per_s"] == 7.5 and test["ttft_p50_ms"] is None and test["tpot_p95_ms"] is None
    rows = csv_rows(client, "load-tests", job, other)
    assert rows[1]["ttft_p50_ms"] == "" and "HYPERLINK" not in str(rows)


def test_a_load_test_of_a_run_the_viewer_may_not_see_is_never_shown(login, api_for, make_job, alice, bob, instructor):
    mine = server(make_job(alice, seconds=1))
    theirs = server(make_job(bob, seconds=2), requests_per_s=98.765, ttft_p50_ms=4321.5)
    other = ran(make_job(alice, seconds=3), tok=[1.0], loss=[1.0])
    for text in (
        login(alice).get(url(mine, theirs, other)).content.decode(),
        api_for(alice).get(api_url(mine, theirs, other)).content.decode(),
        "".join(map(str, csv_rows(login(alice), "load-tests", mine, theirs, other))),
    ):
        assert "98.7" not in text and "4321" not in text and f"load-{theirs.short_id}" not in text
    assert login(bob).get(url(mine, other)).status_code == 404
    staff = api_for(instructor).get(api_url(mine, theirs)).json()
    assert [run["load_test"]["requests_per_s"] for run in staff["runs"]] == [12.345, 98.765]


def test_the_load_tests_cost_no_query_per_run(login, make_job, alice):
    runs = [server(make_job(alice, seconds=i)) for i in range(4)]
    client = login(alice)
    assert page_queries(client, runs[:2]) == page_queries(client, runs)


def test_the_api_schema_documents_the_load_test_figures(api_for, alice):
    schema = api_for(alice).get(reverse("api:schema"), {"format": "json"}).json()
    run = schema["components"]["schemas"]["Run"]["properties"]["load_test"]
    assert run.get("nullable") or any(part.get("type") == "null" for part in run.get("oneOf", []))
    figures = schema["components"]["schemas"]["LoadTest"]["properties"]
    assert {"requests_per_s", "ttft_p50_ms", "ttft_p95_ms", "tpot_p50_ms", "tpot_p95_ms"} <= set(figures)


def test_a_load_test_just_started_is_awaited_by_name_until_its_pod_shows(login, make_job, alice, monkeypatch):
    """The Job the portal made has no pod yet when the page first asks: the card keeps asking for that test by name
    (a card that found no report used to stop asking, and the student saw "No load test has run yet" for good)."""
    job = make_job(alice, seconds=1)
    Job.objects.filter(pk=job.pk).update(state="running")
    cluster_has: list = [None]
    monkeypatch.setattr(servers, "_kind", lambda job: SimpleNamespace(load_test_report=lambda job: cluster_has[0]))
    client, url = login(alice), reverse("jobs:load_test_report", args=[job.pk])

    def card(query: str = "") -> str:
        return client.get(url + query).content.decode()

    assert "No load test has run yet" in card() and "every 3s" not in card()  # nothing started: nothing to ask for
    waiting = card("?expect=load-7")
    assert "load-7 is starting" in waiting and f'hx-get="{url}?expect=load-7"' in waiting and "every 3s" in waiting
    cluster_has[0] = LoadTestReport("load-6-ab12c", "Succeeded", dict(REPORT))  # an older test's pod: still waiting
    assert "load-7 is starting" in card("?expect=load-7")
    cluster_has[0] = LoadTestReport("load-7-x4k2p", "Running", None)  # its pod: the usual poll, without the name
    running = card("?expect=load-7")
    assert "load-7-x4k2p is running" in running and f'hx-get="{url}"' in running and "every 3s" in running
    cluster_has[0] = LoadTestReport("load-7-x4k2p", "Succeeded", dict(REPORT))
    assert 'id="report-rps">12.35<' in card("?expect=load-7") and "every 3s" not in card("?expect=load-7")
    cluster_has[0] = None
    hostile = card("?expect=%3Cimg%20src%3Dx%20onerror%3D1%3E")  # the name is only ever text and a query value
    assert "<img" not in hostile and "&lt;img src=x onerror=1&gt; is starting" in hostile
    assert "?expect=%3Cimg%20src%3Dx%20onerror%3D1%3E" in hostile
    Job.objects.filter(pk=job.pk).update(state="cancelled")  # an ended job makes no pod: the card stops asking
    assert "every 3s" not in card("?expect=load-8") and "load-8" not in card("?expect=load-8")
