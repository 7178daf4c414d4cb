"""Pages under load: the student's job list, the instructor's course job list (10,000 jobs), the class
dashboard and the launch form, served the production way (uvicorn, 2 processes, DEBUG off) from PostgreSQL on
this machine, on loopback.

    .venv/bin/python bench/pages_load.py [--jobs 10000] [--users 50] [--seconds 60]

1. Query count of each page at 80 % and at 100 % of the jobs: it must not change.
2. 50 concurrent users (45 students, 5 instructors), each with its own session and keep-alive connection,
   clicking through their pages with 1-3 s between clicks: p50/p95/p99 per page (the target: p95 <= 100 ms).
3. Saturation: `wrk` with 50 connections and no pause per page, for the most requests per second a page
   sustains on this machine (latency there is mostly queueing).

Run it after `make test` or `make demo` started the services. Needs wrk (apt-get install wrk).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from datetime import timedelta
from pathlib import Path

from common import ROOT, make_lab, percentile, setup_database, start, stop, wait_for

WRK_SCRIPT = """
local cookies = {%s}
local path = "%s"
local n = 0
request = function()
  n = n + 1
  return wrk.format("GET", path, {["Cookie"] = "sessionid=" .. cookies[(n %% #cookies) + 1]})
end
done = function(summary, latency, requests)
  io.write(string.format("RESULT %%d %%d %%d %%d %%d %%d %%d\\n", summary.requests, summary.duration,
    summary.errors.status + summary.errors.connect + summary.errors.read + summary.errors.timeout,
    latency:percentile(50), latency:percentile(95), latency:percentile(99), latency.max))
end
"""


def make_jobs(course, students, cluster, template, count: int) -> None:
    """Jobs spread over the students: mostly finished, with summaries, some running and waiting."""
    from django.db import connection
    from django.db.models import F
    from django.utils import timezone

    from jobs.models import Job
    from telemetry.models import JobSummary

    now = timezone.now()
    states = ["completed"] * 70 + ["failed"] * 10 + ["cancelled"] * 10 + ["running"] * 5 + ["pending"] * 5
    rng = random.Random(count)
    jobs, summaries = [], []
    for i in range(count):
        state = rng.choice(states)
        created = now - timedelta(minutes=rng.randint(1, 60 * 24 * 30))
        started = created + timedelta(seconds=30) if state != "pending" else None
        finished = (
            started + timedelta(minutes=rng.randint(1, 90)) if state in ("completed", "failed", "cancelled") else None
        )
        job = Job(
            owner=students[i % len(students)],
            course=course,
            template=template,
            cluster=cluster,
            params={"partition": "debug", "time_minutes": 2, "seconds": 1},
            script="sleep 1\n",
            gpus=rng.choice([0, 1, 2]),
            state=state,
            scheduler_id=str(100_000 + i + Job.objects.count()),
            scheduler_state=state.upper(),
            exit_code=0 if state == "completed" else (1 if state == "failed" else None),
            submit_attempts=1,
            submitted_at=created + timedelta(seconds=1),
            started_at=started,
            finished_at=finished,
        )
        jobs.append(job)
        if state == "completed":
            summaries.append(
                JobSummary(job=job, gpu_hours=rng.random() * 3, mean_gpu_util=rng.random() * 100, samples=60)
            )
    Job.objects.bulk_create(jobs, batch_size=2000)
    # created_at is auto_now_add: spread it over the month like the other times.
    Job.objects.filter(pk__in=[j.pk for j in jobs]).update(created_at=F("submitted_at") - timedelta(seconds=1))
    JobSummary.objects.bulk_create(summaries, batch_size=2000)
    # Planner statistics for the new rows, as autovacuum keeps them on a live database; without them PostgreSQL
    # plans the first minutes of the run for empty tables.
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")


def query_counts(pages: dict[str, tuple[str, object]]) -> dict[str, int]:
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    counts = {}
    for name, (path, user) in pages.items():
        client = Client()
        client.force_login(user)
        with CaptureQueriesContext(connection) as queries:
            response = client.get(path)
        assert response.status_code == 200, (name, response.status_code)
        counts[name] = len(queries)
    return counts


def session_cookies(users) -> list[str]:
    from django.test import Client

    cookies = []
    for user in users:
        client = Client()
        client.force_login(user)
        cookies.append(client.cookies["sessionid"].value)
    return cookies


def run_wrk(url: str, path: str, cookies: list[str], users: int, seconds: int) -> dict:
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
        script.write(WRK_SCRIPT % (", ".join(f'"{c}"' for c in cookies), path))
    argv = ["wrk", "-t1", f"-c{users}", f"-d{seconds}s", "--timeout", "10s", "-s", script.name, url]
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    values = [int(v) for v in re.search(r"RESULT ([\d ]+)", out).group(1).split()]
    requests, duration_us, errors, p50, p95, p99, worst = values
    return {
        "requests": requests,
        "rps": round(requests / (duration_us / 1e6), 1),
        "errors": errors,
        "p50_ms": p50 / 1000,
        "p95_ms": p95 / 1000,
        "p99_ms": p99 / 1000,
        "max_ms": worst / 1000,
    }


def run_users(url: str, plans: list[tuple[str, list[str]]], seconds: float) -> dict[str, list[float]]:
    """One thread per user: its own session and connection, a page, then 1-3 s of thinking, until time is up."""
    import http.client
    import threading

    latencies: dict[str, list[float]] = {}
    failures: list[str] = []
    deadline = time.monotonic() + seconds
    host, port = url.removeprefix("http://").split(":")

    def user(cookie: str, paths: list[str], seed: int) -> None:
        rng = random.Random(seed)
        connection = http.client.HTTPConnection(host, int(port), timeout=30)
        time.sleep(rng.uniform(0, 2))  # users do not all arrive in the same millisecond
        while time.monotonic() < deadline:
            path = rng.choice(paths)
            started = time.perf_counter()
            connection.request("GET", path, headers={"Cookie": f"sessionid={cookie}"})
            response = connection.getresponse()
            response.read()
            elapsed = time.perf_counter() - started
            if response.status != 200:
                failures.append(f"{path}: {response.status}")
            latencies.setdefault(path, []).append(elapsed)
            time.sleep(rng.uniform(1.0, 3.0))
        connection.close()

    threads = [threading.Thread(target=user, args=(c, p, i)) for i, (c, p) in enumerate(plans)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failures:
        print(f"  {len(failures)} failed requests, e.g. {failures[:3]}")
    return latencies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--users", type=int, default=50)
    parser.add_argument("--seconds", type=int, default=60, help="length of the 50-user run")
    parser.add_argument("--saturation-seconds", type=int, default=10, help="wrk per page; 0 skips it")
    parser.add_argument("--web-processes", type=int, default=2)
    args = parser.parse_args()
    if not shutil.which("wrk"):
        sys.exit("wrk is not installed: apt-get install wrk")

    teardown = setup_database()
    web = None
    try:
        from django.contrib.auth import get_user_model

        from courses.models import Enrollment, Role

        course, first, cluster, template = make_lab()
        User = get_user_model()
        students = [first] + [User.objects.create_user(f"student{i:02d}") for i in range(1, args.users)]
        Enrollment.objects.bulk_create([Enrollment(course=course, user=s) for s in students[1:]])
        instructors = [User.objects.create_user(f"instructor{i}") for i in range(5)]
        Enrollment.objects.bulk_create([Enrollment(course=course, user=u, role=Role.INSTRUCTOR) for u in instructors])
        pages = {
            "my jobs (student)": ("/jobs/", students[0]),
            "course jobs (instructor)": (f"/courses/{course.slug}/", instructors[0]),
            "class dashboard (instructor)": (f"/courses/{course.slug}/dashboard/", instructors[0]),
            "launch form (student)": (f"/courses/{course.slug}/launch/{template.slug}/", students[0]),
        }

        first_part = int(args.jobs * 0.8)
        make_jobs(course, students, cluster, template, first_part)
        before = query_counts(pages)
        make_jobs(course, students, cluster, template, args.jobs - first_part)
        after = query_counts(pages)
        print(f"{args.jobs} jobs, {len(students)} students, {len(instructors)} instructors")
        print("queries per page at 80 % / 100 % of the jobs:")
        for name in pages:
            print(
                f"  {name:30s} {before[name]:3d} / {after[name]:3d}{'' if before[name] == after[name] else '  CHANGED'}"
            )

        port = 8000 + random.randint(100, 900)
        log = Path(tempfile.mkdtemp()) / "web.log"
        argv = [str(ROOT / ".venv/bin/uvicorn"), "portal.asgi:application", "--host", "127.0.0.1", "--port", str(port)]
        argv += ["--workers", str(args.web_processes), "--no-access-log", "--log-level", "warning"]
        web = start(argv, log)
        url = f"http://127.0.0.1:{port}"

        def up():
            try:
                return urllib.request.urlopen(f"{url}/healthz", timeout=1).status == 200
            except OSError:
                return False

        wait_for(up, 30, "uvicorn")
        student_cookies = session_cookies(students)
        instructor_cookies = session_cookies(instructors)
        instructor_count = len(instructors)
        student_paths = [pages["my jobs (student)"][0], pages["launch form (student)"][0]]
        instructor_paths = [pages["course jobs (instructor)"][0], pages["class dashboard (instructor)"][0]]
        plans = [(c, student_paths) for c in student_cookies[: args.users - instructor_count]]
        plans += [(c, instructor_paths) for c in instructor_cookies]
        run_users(url, plans, 5)  # warm-up: connections, template caches
        latencies = run_users(url, plans, args.seconds)
        results = {}
        total = sum(len(v) for v in latencies.values())
        print(
            f"\n{len(plans)} concurrent users for {args.seconds} s, 1-3 s between clicks "
            f"({total / args.seconds:.1f} req/s):"
        )
        print(f"  {'page':30s} {'requests':>8s} {'p50 ms':>7s} {'p95 ms':>7s} {'p99 ms':>7s} {'queries':>7s}")
        for name, (path, _) in pages.items():
            values = latencies.get(path, [])
            results[name] = {
                "requests": len(values),
                "p50_ms": round(percentile(values, 50) * 1000, 1),
                "p95_ms": round(percentile(values, 95) * 1000, 1),
                "p99_ms": round(percentile(values, 99) * 1000, 1),
                "queries": after[name],
            }
            r = results[name]
            print(
                f"  {name:30s} {r['requests']:8d} {r['p50_ms']:7.1f} {r['p95_ms']:7.1f} {r['p99_ms']:7.1f}"
                f" {r['queries']:7d}"
            )
        if args.saturation_seconds:
            print(f"\nsaturation: wrk, {args.users} connections, no pause, {args.saturation_seconds} s per page:")
            print(f"  {'page':30s} {'req/s':>7s} {'p50 ms':>7s} {'p95 ms':>7s} {'errors':>6s}")
            for name, (path, _) in pages.items():
                cookies = instructor_cookies if "instructor" in name else student_cookies
                saturated = run_wrk(url, path, cookies, args.users, args.saturation_seconds)
                results[name]["saturation"] = saturated
                print(
                    f"  {name:30s} {saturated['rps']:7.1f} {saturated['p50_ms']:7.1f} {saturated['p95_ms']:7.1f}"
                    f" {saturated['errors']:6d}"
                )
        out = ROOT / "bench/results/pages_load.json"
        out.parent.mkdir(exist_ok=True)
        out.write_text(
            json.dumps({"args": vars(args), "at": time.strftime("%Y-%m-%dT%H:%M:%S"), "pages": results}, indent=2)
        )
        print(f"\nwritten to {out.relative_to(ROOT)}")
    finally:
        if web is not None:
            stop(web)
        teardown()


if __name__ == "__main__":
    main()
