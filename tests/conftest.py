"""Standard actors (an admin, an instructor, a TA, two students in one course, one student and one instructor in
another) and helpers."""

from __future__ import annotations

import asyncio
import contextlib
import os

import pytest
import redis
from django.contrib.auth import get_user_model
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from clusters.choices import RunAs
from clusters.models import AuthMethod, Cluster, ClusterAccount
from core.course_choices import NamespaceMode
from courses.models import Course, Enrollment, Role
from jobs.models import JobTemplate

PASSWORD = "correct-horse-battery-staple"

SLEEP_TEMPLATE_BODY = """\
echo "start on $(hostname)"
sleep {{ seconds }}
printf '%s\\n' {{ message }}
echo done
exit {{ exit_code }}
"""

SLEEP_TEMPLATE_PARAMS = [
    {"name": "partition", "type": "choice", "label": "Partition", "default": "debug"},
    {"name": "time_minutes", "type": "int", "label": "Time", "default": 5, "min": 1, "max": 10},
    {"name": "gpus_per_node", "type": "int", "label": "GPUs", "default": 0, "min": 0, "max": 4},
    {"name": "seconds", "type": "int", "label": "Seconds", "default": 1, "min": 0, "max": 600, "sweep": True},
    {"name": "exit_code", "type": "int", "label": "Exit code", "default": 0, "min": 0, "max": 255, "sweep": True},
    {"name": "message", "type": "string", "label": "Message", "default": "hello", "max_length": 200},
]


@pytest.fixture(autouse=True)
def _no_earlier_tests_cluster_answers():
    """Every test's cluster is named "local", and a worker an earlier test started in this process may have heard
    from it a while ago: when a cluster last answered (jobs/staleness.py's notice) is each test's own to write."""
    if os.environ.get("REDIS_URL"):
        from core import measurements

        # A test that stops Redis may run beside this one: then there is nothing left to clear.
        with contextlib.suppress(redis.RedisError, OSError):
            measurements.client().delete(f"{measurements.PREFIX}heard")
    yield


@pytest.fixture(autouse=True)
def _no_log_context_from_an_earlier_test():
    """A request's and a task's log context (core/logs.py) is reset by the middleware and the task signals; a test
    that calls the access helper directly binds a job in this thread's context, which no request ends, so each test
    starts and ends with none."""
    from core import logs

    tokens = logs.request_id_var.set(""), logs.job_id_var.set("")
    yield
    logs.request_id_var.reset(tokens[0])
    logs.job_id_var.reset(tokens[1])


@pytest.fixture(autouse=True)
def _no_task_for_an_earlier_tests_worker(request, monkeypatch):
    """A test outside tests/integration/ runs no Celery worker, but an integration test that ran earlier in this
    process may have left one consuming this process's broker, and it works on the same database: a job a unit test
    made would be submitted (and moved) behind the test's back. Such a test's task messages are dropped, unless it
    runs them eagerly (task_always_eager) or replaces `send` itself."""
    if "tests/integration" in str(request.node.fspath):
        return
    from celery import current_app

    from core import enqueue

    send = enqueue.send
    monkeypatch.setattr(
        enqueue, "send", lambda name, args: send(name, args) if current_app.conf.task_always_eager else None
    )


@pytest.fixture
def make_user(db):
    def make(username: str, **extra):
        return get_user_model().objects.create_user(username=username, password=PASSWORD, **extra)

    return make


@pytest.fixture
def admin_user(make_user):
    return make_user("ada", is_staff=True, is_superuser=True)


@pytest.fixture
def course(db):
    # One Kubernetes namespace for the course (gpulab-hpc), which the tests name; new courses get one per student.
    return Course.objects.create(
        slug="hpc",
        name="HPC Lab",
        max_concurrent_jobs=4,
        max_gpus=4,
        kind_settings={"kubernetes": {"namespace_mode": NamespaceMode.PER_COURSE}},
    )


@pytest.fixture
def other_course(db):
    return Course.objects.create(slug="ml", name="ML Lab")


@pytest.fixture
def instructor(make_user, course):
    user = make_user("ines")
    Enrollment.objects.create(course=course, user=user, role=Role.INSTRUCTOR)
    return user


@pytest.fixture
def alice(make_user, course):
    user = make_user("alice")
    Enrollment.objects.create(course=course, user=user, role=Role.STUDENT)
    return user


@pytest.fixture
def bob(make_user, course):
    user = make_user("bob")
    Enrollment.objects.create(course=course, user=user, role=Role.STUDENT)
    return user


@pytest.fixture
def ta(make_user, course):
    """A teaching assistant of the course: sees and cancels its jobs, manages nothing (docs/roles.md)."""
    user = make_user("tara")
    Enrollment.objects.create(course=course, user=user, role=Role.TA)
    return user


@pytest.fixture
def other_instructor(make_user, other_course):
    """An instructor of another course."""
    user = make_user("otto")
    Enrollment.objects.create(course=other_course, user=user, role=Role.INSTRUCTOR)
    return user


@pytest.fixture
def carol(make_user, other_course):
    """A student of another course."""
    user = make_user("carol")
    Enrollment.objects.create(course=other_course, user=user, role=Role.STUDENT)
    return user


@pytest.fixture
def cluster(db, course):
    """A cluster row (not reachable unless a test points it at the local SLURM). Jobs run as its one shared cluster
    user, reached through the service account; a test that wants each student's own user sets run_as."""
    cluster = Cluster.objects.create(
        name="local",
        title="Local SLURM",
        host="127.0.0.1",
        port=2222,
        partitions=["debug", "gpu"],
        gpu_types=["demo"],
        lab_dir="~/gpulab-test",
        run_as=RunAs.SERVICE,
        shared_user="labshared",
    )
    account = ClusterAccount(cluster=cluster, username="labsvc", auth_method=AuthMethod.PASSWORD)
    account.set_secret("not-a-real-password")
    account.save()
    course.clusters.add(cluster)
    return cluster


@pytest.fixture
def sleep_template(db, course):
    template = JobTemplate.objects.create(
        name="Sleep and echo",
        slug="sleep-echo",
        description="Sleeps, prints a message, exits with a code.",
        body=SLEEP_TEMPLATE_BODY,
        parameters=SLEEP_TEMPLATE_PARAMS,
        status=JobTemplate.Status.PUBLISHED,
        max_gpus=4,
        max_minutes=10,
    )
    template.courses.add(course)
    return template


@pytest.fixture
def api_for():
    def client_for(user) -> APIClient:
        client = APIClient()
        token, _ = Token.objects.get_or_create(user=user)
        client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
        return client

    return client_for


@pytest.fixture
def login(client):
    def as_user(user):
        client.force_login(user)
        return client

    return as_user


@pytest.fixture
def fake_backend(monkeypatch):
    """Routes every slurm cluster to tests.fakes.FakeBackend (unit tests only)."""
    from clusters.kinds import kind_of
    from tests.fakes import FakeBackend

    FakeBackend.reset()
    monkeypatch.setattr(kind_of("slurm"), "backend_class", FakeBackend)
    return FakeBackend


@pytest.fixture
def make_job(db, cluster, sleep_template, course):
    """A job created through the real launch service (its submit message is not sent: no commit in `db` tests)."""
    from jobs.launch import launch

    def make(owner, **params):
        return launch(owner, course=course, template=sleep_template, cluster=cluster, raw_params=params)

    return make


@pytest.fixture
def running_job(make_job, alice):
    """Alice's job, running as far as the portal knows (no scheduler is asked about it)."""
    from core.choices import JobState

    job = make_job(alice, seconds=60)
    job.state, job.scheduler_id = JobState.RUNNING, "4242"
    job.save()
    return job


@pytest.fixture(scope="session")
def smtp_server():
    """A real SMTP server on 127.0.0.1 for the session; tests read its inbox (tests/smtp.py)."""
    from tests.smtp import SMTPServer

    server = SMTPServer().start()
    yield server
    server.stop()


@pytest.fixture
def inbox(smtp_server, settings):
    """The portal's mail goes to the test SMTP server; the inbox starts empty."""
    # pytest-django swaps in the in-memory backend; these tests talk SMTP as production does.
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", smtp_server.port
    smtp_server.inbox.clear()
    return smtp_server.inbox


# -- Chromium: one browser per test process, a fresh context per test ---------------------------------------------
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]


# The SLURM lanes' tests (tests/integration/conftest.py) are the parallel suite's critical path: they mostly wait on
# the node's jobs, while every other test has minutes to spare. In a parallel run a test process running anything else
# yields the CPU to them (nice 5), and takes it back for a lane's test; what a test starts (its Celery worker, its
# Chromium) keeps the process's priority of that moment. Only root may take a priority back: elsewhere a process once
# yielding stays so.
LANE_NICE, OTHER_NICE = 0, 5


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    wanted = LANE_NICE if item.get_closest_marker("slurm_node") else OTHER_NICE
    with contextlib.suppress(PermissionError):
        if os.getpriority(os.PRIO_PROCESS, 0) != wanted:
            os.setpriority(os.PRIO_PROCESS, 0, wanted)


@pytest.fixture(scope="session")
def _chromium_process():
    """Debian's Chromium, launched once per test process (a launch costs seconds; a context costs milliseconds)."""
    from playwright.sync_api import sync_playwright

    if not os.path.exists(CHROMIUM):
        pytest.fail("Debian's chromium is not installed; `make test` installs it.")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        # Playwright's sync API leaves its event loop marked as running in this thread between its calls. Between
        # browser tests the thread goes without it, so the other tests' asyncio, asgiref and ORM calls work as usual.
        loop = asyncio.events._get_running_loop()
        asyncio.events._set_running_loop(None)
        yield browser, loop
        asyncio.events._set_running_loop(loop)
        browser.close()


@pytest.fixture
def chromium(_chromium_process, monkeypatch):
    """The process's Chromium for one test: every context the test opens is closed after it."""
    browser, loop = _chromium_process
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")  # Playwright's loop runs in the test's thread
    asyncio.events._set_running_loop(loop)
    try:
        yield browser
    finally:
        for context in list(browser.contexts):
            context.close()
        asyncio.events._set_running_loop(None)


@pytest.fixture
def browser(chromium):
    return chromium
