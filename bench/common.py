"""Shared set-up for the benchmarks: a throw-away PostgreSQL database, the lab rows, worker and web processes.

Run a benchmark after `make test` or `make demo` has started the services (it reads their env files).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LOCAL_DIR = Path(os.environ.get("GPULAB_LOCAL_DIR", "/var/lib/gpulab-local"))
sys.path.insert(0, str(ROOT))


def load_env() -> None:
    for name in ("services.env", "cluster.env"):
        path = LOCAL_DIR / name
        if not path.exists():
            sys.exit(
                f"{path} is missing: start the services first (make test, or scripts/services.sh start and "
                "scripts/local_slurm.sh start)."
            )
        for line in path.read_text().splitlines():
            key, _, value = line.partition("=")
            if key and not key.startswith("#"):
                os.environ.setdefault(key.strip(), value.strip().strip('"'))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
    # Redis database 2: a demo (0) or a test run (1) on this machine must not take the benchmark's messages.
    # BENCH_REDIS_DB picks another, for two benchmarks at once on one machine.
    os.environ["REDIS_URL"] = os.environ["REDIS_URL"].rsplit("/", 1)[0] + "/" + os.environ.get("BENCH_REDIS_DB", "2")


def setup_database():
    """A fresh test_<name> database, migrated; returns a teardown function."""
    load_env()
    import django

    django.setup()
    from django.db import connection
    from django.test.utils import setup_test_environment

    setup_test_environment()
    old_name = connection.settings_dict["NAME"]
    connection.creation.create_test_db(verbosity=0, autoclobber=True)

    def teardown():
        # A worker's pool process may still hold a connection as it exits: the bench's database is its own to drop.
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
        connection.creation.destroy_test_db(old_name, verbosity=0)

    return teardown


def database_url() -> str:
    from django.conf import settings

    db = settings.DATABASES["default"]
    return f"postgres://{db['USER']}:{db['PASSWORD']}@{db['HOST']}:{db['PORT']}/{db['NAME']}"


def make_lab(*, max_jobs: int = 10_000):
    """An instructor-free course with one student, the local cluster and a one-second template."""
    from django.contrib.auth import get_user_model

    from clusters.models import AuthMethod, Cluster, ClusterAccount, RunAs
    from courses.models import Course, Enrollment
    from jobs.models import JobTemplate

    course = Course.objects.create(slug="bench", name="Bench", max_concurrent_jobs=max_jobs, max_gpus=max_jobs)
    student = get_user_model().objects.create_user("bench-student", password="bench-password-123")
    Enrollment.objects.create(course=course, user=student)
    cluster = Cluster.objects.create(
        name="local",
        host=os.environ["GPULAB_SSH_HOST"],
        port=int(os.environ["GPULAB_SSH_PORT"]),
        host_key=os.environ["GPULAB_HOST_KEY"],
        partitions=["debug"],
        lab_dir="~/gpulab-bench",
        # As the integration tests' cluster: jobs and files as the one unprivileged shared user, through the sudo rule
        run_as=RunAs.SERVICE,
        shared_user=os.environ.get("GPULAB_SHARED_USER", "labshared"),
    )
    account = ClusterAccount(cluster=cluster, username=os.environ["GPULAB_SERVICE_USER"], auth_method=AuthMethod.KEY)
    account.set_secret(Path(os.environ["GPULAB_SERVICE_KEY"]).read_text())
    account.save()
    course.clusters.add(cluster)
    template = JobTemplate.objects.create(
        name="Sleep",
        slug="sleep",
        body="sleep {{ seconds }}\n",
        parameters=[
            {"name": "partition", "type": "choice", "default": "debug"},
            {"name": "time_minutes", "type": "int", "default": 2, "min": 1, "max": 5},
            {"name": "seconds", "type": "int", "default": 1, "min": 0, "max": 60},
        ],
        status=JobTemplate.Status.PUBLISHED,
    )
    template.courses.add(course)
    return course, student, cluster, template


def start(argv: list[str], log: Path, **env: str) -> subprocess.Popen:
    full_env = {**os.environ, "DATABASE_URL": database_url(), "DJANGO_SETTINGS_MODULE": "tests.settings", **env}
    return subprocess.Popen(
        argv, cwd=ROOT, env=full_env, stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True
    )


def start_web(name: str) -> tuple[subprocess.Popen, int]:
    """uvicorn serving portal.asgi on a free port of 127.0.0.1, started and ready: (its process, its port)."""
    import socket
    import tempfile

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    log = Path(tempfile.gettempdir()) / f"bench-{name}-web.log"
    argv = [str(ROOT / ".venv/bin/uvicorn"), "portal.asgi:application", "--host", "127.0.0.1", "--port", str(port)]
    web = start(argv, log)
    wait_for(lambda: "Uvicorn running on" in log.read_text(), 60, "uvicorn to start")
    return web, port


def session_cookie(user) -> str:
    """A Django session for `user`, as the browser's sessionid cookie."""
    from django.test import Client

    client = Client()
    client.force_login(user)
    return client.cookies["sessionid"].value


def stop(proc: subprocess.Popen) -> None:
    import signal

    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)


def wait_for(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise SystemExit(f"timed out waiting for {what}")


def percentile(values: list[float], pct: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(pct / 100 * len(ordered) + 0.5) - 1))
    return ordered[index]


def summary(values: list[float]) -> str:
    return (
        f"p50 {percentile(values, 50):.3f} s, p95 {percentile(values, 95):.3f} s, "
        f"max {max(values):.3f} s, mean {statistics.mean(values):.3f} s"
    )


def slurm_comments() -> list[str]:
    out = subprocess.run(["squeue", "--states=all", "--noheader", "--format=%k"], capture_output=True, text=True)
    return out.stdout.split()


def cancel_all() -> None:
    subprocess.run(["scancel", f"--user={os.environ['GPULAB_SERVICE_USER']}"], capture_output=True, check=False)
