"""The first minute of a lab: N students (60) open the lab page and launch its first step within 60 s against the
local SLURM, while the instructor's progress grid is open on its socket.

Prints p95 lab-page time, p95 launch → scheduler id, and the rows delivered to the grid (each student's row is sent
on every move of their run: at least submitting and pending per student). With the grid also open in Chromium
(Debian's; --no-browser leaves it out): its total blocking time on open (the sum of each long task's time past
50 ms) and the script time per update (the socket's message handler and the animation-frame and timer callbacks
that ran before the next message), p50 and p95, over the minute's row updates.

    BENCH_REDIS_DB=12 .venv/bin/python bench/lab_start.py [--students 60] [--seconds 60] [--no-browser]

It cancels only the jobs it launched.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, make_lab, percentile, session_cookie, setup_database, start, start_web, stop, wait_for

CHROMIUM = "/usr/bin/chromium"
# Playwright's sync API keeps an event loop in this thread while the grid is open; the bench's own queries beside it
# are synchronous and alone in the process, so Django's guard against queries from async code is lifted here.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


def students_and_lab(count: int):
    from django.contrib.auth import get_user_model
    from rest_framework.authtoken.models import Token

    from clusters.choices import RunAs
    from courses.models import Enrollment, Role
    from labs.builtin import load_lab

    course, _student, cluster, _template = make_lab()
    # Every student's job runs as the cluster's one unprivileged shared user, as in the integration tests.
    cluster.run_as, cluster.shared_user = RunAs.SERVICE, os.environ.get("GPULAB_SHARED_USER", "labshared")
    cluster.save(update_fields=["run_as", "shared_user"])
    users = get_user_model().objects
    teacher = users.create_user("bench-teacher", password="bench-password-123")
    Enrollment.objects.create(course=course, user=teacher, role=Role.INSTRUCTOR)
    students = [users.create_user(f"lab-student-{i:03d}", password="bench-password-123") for i in range(count)]
    Enrollment.objects.bulk_create([Enrollment(course=course, user=s, role=Role.STUDENT) for s in students])
    step = {"title": "First run", "template": "sleep", "preset": {"seconds": 1}, "check": {"kind": "completed"}}
    later = [{"title": f"Step {i}", "check": {"kind": "answer"}} for i in range(2, 13)]  # a 12-step grid
    sections = [{"title": "Start", "minutes": 10, "steps": [step, *later]}]
    lab = load_lab(course, {"slug": "first-minute", "title": "First minute", "sections": sections})
    tokens = {s.pk: Token.objects.create(user=s).key for s in students}
    return course, lab, teacher, students, tokens


class GridWatcher(threading.Thread):
    """The instructor's grid socket, counting the rows it receives."""

    def __init__(self, url: str, cookie: str):
        super().__init__(daemon=True)
        from websockets.sync.client import connect

        origin = url.split("/ws/")[0].replace("ws://", "http://")
        headers = {"Cookie": f"sessionid={cookie}", "Origin": origin}
        self.ws = connect(url, additional_headers=headers, open_timeout=15).__enter__()
        self.rows, self.running = 0, True

    def run(self) -> None:
        while self.running:
            try:
                message = json.loads(self.ws.recv(timeout=0.5))
            except TimeoutError:
                continue
            except Exception:
                return
            self.rows += message.get("type") == "row"


def student_minute(base: str, course, lab, cookie: str, token: str) -> tuple[float, str, float]:
    """Open the lab page (timed), then launch its first step with the step's values."""
    started = time.monotonic()
    request = urllib.request.Request(
        f"{base}/courses/{course.slug}/labs/{lab.slug}/", headers={"Cookie": f"sessionid={cookie}"}
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        response.read()
    page = time.monotonic() - started
    body = json.dumps({"template": "sleep", "cluster": "local", "params": {"seconds": 1}}).encode()
    headers = {"Authorization": f"Token {token}", "Content-Type": "application/json"}
    launched = time.monotonic()
    with urllib.request.urlopen(
        urllib.request.Request(f"{base}/api/v1/jobs/", data=body, headers=headers), timeout=60
    ) as r:
        job_id = json.loads(r.read())["id"]
    return page, job_id, time.monotonic() - launched


class GridInChromium:
    """The instructor's grid page in Chromium, with browser_pages.py's probe: long tasks, and the time spent in the
    socket's handler and in the animation-frame and timer callbacks."""

    def __init__(self, url: str, cookie: str):
        from browser_pages import PROBE
        from playwright.sync_api import sync_playwright

        self.playwright = sync_playwright().start()
        self.browser = self.playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        context = self.browser.new_context(viewport={"width": 1280, "height": 900})
        # For the whole site: a cookie set for the page's URL would be scoped to its path, and the grid's socket
        # (/ws/…) would open without it and be refused.
        context.add_cookies([{"name": "sessionid", "value": cookie, "domain": "127.0.0.1", "path": "/"}])
        self.page = context.new_page()
        self.page.add_init_script(PROBE)
        self.page.goto(url, wait_until="load", timeout=120_000)
        time.sleep(3)  # a long task of the page's set-up still running at load is counted too
        tasks = self.page.evaluate("window.__probe.longtasks")
        self.tbt_open_ms = sum(max(0.0, d - 50) for _, d in tasks)
        self.longest_open_ms = max((d for _, d in tasks), default=0.0)

    def update_costs(self) -> list[float]:
        """Per row message: its handler's time plus the callbacks that ran before the next message."""
        events = self.page.evaluate("window.__probe.events")
        costs: list[float] = []
        for kind, _start, spent in sorted(events, key=lambda e: e[1]):
            if kind in ("message", "frame"):
                costs.append(spent)
            elif costs:
                costs[-1] += spent
        return costs

    def close(self) -> None:
        self.browser.close()
        self.playwright.stop()


def _refusal(exc: urllib.error.HTTPError) -> str:
    return f"{exc.url}: {exc.code} {exc.read().decode(errors='replace')[:300]}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=60)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--no-browser", action="store_true", help="leave the grid's Chromium figures out")
    args = parser.parse_args()

    teardown = setup_database()
    from jobs.models import Job

    course, lab, teacher, students, tokens = students_and_lab(args.students)
    logs = ROOT / "var" / "bench"
    logs.mkdir(parents=True, exist_ok=True)
    celery = [str(ROOT / ".venv/bin/celery"), "-A", "portal", "worker", "-B", "--concurrency=4", "--loglevel=WARNING"]
    worker = start(celery, logs / "lab-start-worker.log", POLL_INTERVAL_SECONDS="2")
    web, port = start_web("lab-start")
    base, ids, chromium = f"http://127.0.0.1:{port}", [], None
    try:
        grid = GridWatcher(f"ws://127.0.0.1:{port}/ws/courses/{course.slug}/labs/{lab.slug}/", session_cookie(teacher))
        grid.start()
        cookies = {s.pk: session_cookie(s) for s in students}
        # The server's first requests import every app's views and compile the pages: paid before the minute starts.
        for path in ("grid/", ""):
            warm = urllib.request.Request(f"{base}/courses/{course.slug}/labs/{lab.slug}/{path}")
            warm.add_header("Cookie", f"sessionid={session_cookie(teacher)}")
            with urllib.request.urlopen(warm, timeout=60) as response:
                response.read()
        if not args.no_browser:
            chromium = GridInChromium(f"{base}/courses/{course.slug}/labs/{lab.slug}/grid/", session_cookie(teacher))
        t0 = time.monotonic()
        with ThreadPoolExecutor(max_workers=16) as pool:
            futures = []
            for i, student in enumerate(students):
                time.sleep(max(0.0, t0 + i * args.seconds / len(students) - time.monotonic()))
                futures.append(pool.submit(student_minute, base, course, lab, cookies[student.pk], tokens[student.pk]))
            try:
                results = [f.result() for f in futures]
            except urllib.error.HTTPError as exc:
                raise SystemExit(_refusal(exc)) from None
        ids = [job_id for _, job_id, _ in results]

        def all_submitted() -> bool:
            return Job.objects.filter(pk__in=ids).exclude(scheduler_id="").count() == len(ids)

        wait_for(all_submitted, 180, "every job to get a scheduler id")
        time.sleep(5)  # the last moves' rows reach the grid
        grid.running = False
        jobs = list(Job.objects.filter(pk__in=ids))
        latencies = [(j.submitted_at - j.created_at).total_seconds() for j in jobs if j.submitted_at]
        figures = {
            "students": len(students),
            "steps": 12,
            "page_p50_s": round(percentile([r[0] for r in results], 50), 3),
            "page_p95_s": round(percentile([r[0] for r in results], 95), 3),
            "page_max_s": round(max(r[0] for r in results), 3),
            "launch_api_p95_s": round(percentile([r[2] for r in results], 95), 3),
            "launch_to_scheduler_id_p95_s": round(percentile(latencies, 95), 3),
            "grid_rows_delivered": grid.rows,
            "grid_rows_expected_at_least": 2 * len(students),
        }
        if chromium is not None:
            costs = chromium.update_costs()
            figures |= {
                "grid_open_tbt_ms": round(chromium.tbt_open_ms, 1),
                "grid_open_longest_task_ms": round(chromium.longest_open_ms, 1),
                "grid_updates_in_chromium": len(costs),
                "grid_update_script_p50_ms": round(percentile(costs, 50), 2),
                "grid_update_script_p95_ms": round(percentile(costs, 95), 2),
            }
        print(json.dumps(figures, indent=2))
        out = ROOT / "bench" / "results"
        out.mkdir(exist_ok=True)
        (out / "lab_start.json").write_text(json.dumps(figures, indent=2))
    finally:
        scheduler_ids = list(
            Job.objects.filter(pk__in=ids).exclude(scheduler_id="").values_list("scheduler_id", flat=True)
        )
        if scheduler_ids:  # only this run's jobs: the node is shared
            subprocess.run(["scancel", *scheduler_ids], capture_output=True, check=False)
        if chromium is not None:
            chromium.close()
        stop(web)
        stop(worker)
        teardown()


if __name__ == "__main__":
    main()
