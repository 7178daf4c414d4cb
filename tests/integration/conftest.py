"""Fixtures for tests against the real services `make test` starts: PostgreSQL, Redis, SLURM behind sshd.

The portal under test talks to SLURM only through sshd on 127.0.0.1; a real Celery worker (with beat)
runs against the test database. Tests wait for real state changes.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from django.conf import settings

from clusters.choices import RunAs
from clusters.models import AuthMethod, Cluster, ClusterAccount
from tests.kind_settings import set_cluster

ROOT = Path(__file__).resolve().parents[2]
REQUIRED = ["GPULAB_SSH_HOST", "GPULAB_SSH_PORT", "GPULAB_SERVICE_KEY", "GPULAB_HOST_KEY", "REDIS_URL", "DATABASE_URL"]


# A parallel run (pytest-xdist, --dist loadgroup) shares one local SLURM node (16 cores, 4 GPUs) between its test
# processes. The tests that put jobs or reservations on it (the SLURM cluster with the Celery worker or the collector
# behind it) run in lanes (four by default, GPULAB_SLURM_LANES), xdist groups, each on one process, one test after
# another; every other test runs
# beside them. A test process has its own database, Redis database, Celery worker and web server, so the Kubernetes,
# sign-on, browser and files tests need no lane. The lanes' tests share the node, each with its own small jobs,
# except a test marked `slurm_exclusive` (it stops a daemon, reserves the node, holds its GPUs, reads the whole
# queue): that one waits until the other lanes' tests are done and runs alone (node_turn, below). The exclusive tests
# run first, one after another, in the first lane, so the node is handed over once, not before each of them; the
# other modules are dealt to the lanes whole (a module's tests may share what lives on the node, such as a lab folder
# in a student's home), longest first, each to the lane with the least to do, to even out what the lanes do after
# that block; each lane runs its longest tests first, so the short ones fill its end.
#
# Tests marked `slurm_gpu_replays` have the stand-in nvidia-smi show recorded figures on the GPUs their jobs got
# (tests/integration/gpu_replays.py: an idle GPU, a starving one), through one file on the node: their modules are
# dealt to the same lane as one, where they run one after another.
#
# A test marked `slurm_outage` takes away what every user of the cluster needs (it stops slurmctld, freezes or kills
# the service account's SSH sessions, changes a partition's limits): besides the node, it waits for and holds off
# every test outside the lanes that talks to the cluster (the daemons turn). Those tests run at the end of the
# first lane, when the tests outside the lanes are mostly done, so that few wait for them.
SLURM_LANES = tuple(
    "slurm-node" if lane == 1 else f"slurm-node-{lane}"
    for lane in range(1, int(os.environ.get("GPULAB_SLURM_LANES", "4")) + 1)
)
SLURM_CLUSTERS = {"cluster", "rest_cluster", "lab_cluster"}
SLURM_DRIVERS = {"worker", "collector"}
NODE_TURN = Path(tempfile.gettempdir()) / f"gpulab-tests-slurm-node-{os.getuid()}"
NODE, DAEMONS = "node", "daemons"  # the node's jobs; slurmctld and the service account's SSH sessions


def pytest_collection_modifyitems(config, items):
    on_node: dict[str, list] = {}
    for item in items:
        if "tests/integration" not in str(item.fspath):
            continue
        item.add_marker(pytest.mark.integration)
        fixtures = set(getattr(item, "fixturenames", ()))
        driven = fixtures & SLURM_CLUSTERS and fixtures & SLURM_DRIVERS
        if item.get_closest_marker("slurm_outage"):
            item.add_marker(pytest.mark.slurm_exclusive)
        if driven or item.get_closest_marker("slurm_node") or item.get_closest_marker("slurm_exclusive"):
            item.add_marker(pytest.mark.slurm_node)
            on_node.setdefault(str(item.fspath), []).append(item)
        elif fixtures & SLURM_CLUSTERS:
            item.add_marker(pytest.mark.slurm_daemons)
    seconds = _deal_to_lanes(on_node)
    # The lanes are the longest: they go first, so their processes start on them while the others share the rest.
    items.sort(key=lambda item: _lane_order(item, seconds))


def _lane_order(item, seconds: Callable) -> tuple:
    if not item.get_closest_marker("slurm_node"):
        return (3, 0.0)
    if item.get_closest_marker("slurm_outage"):
        return (2, -seconds(item))
    return (0 if item.get_closest_marker("slurm_exclusive") else 1, -seconds(item))


# Seconds each test took in a recorded full run (scripts/lane_seconds.py turns a run's JUnit report into it): the
# lanes are dealt by time, not by count. A test not in it (a new one) counts as TEST_SECONDS.
LANE_SECONDS = Path(__file__).resolve().parent / "lane_seconds.json"
TEST_SECONDS = 20.0


def _recorded_seconds() -> dict[str, float]:
    try:
        return json.loads(LANE_SECONDS.read_text())
    except (OSError, ValueError):
        return {}


def _deal_to_lanes(modules: dict[str, list]) -> Callable:
    """The exclusive tests to the first lane (the other lanes wait through them, so they are not counted against
    any); then each module's other tests, whole (the modules with a `slurm_gpu_replays` test as one), longest first, to
    the lane with the least to do so far. Returns the seconds each test is expected to take."""
    recorded = _recorded_seconds()

    def seconds(item) -> float:
        return recorded.get(item.nodeid.split("@")[0], TEST_SECONDS)

    load = dict.fromkeys(SLURM_LANES, 0.0)
    units: dict[str, list] = {}
    for module, tests in modules.items():
        for item in tests:
            if item.get_closest_marker("slurm_exclusive"):
                item.add_marker(pytest.mark.xdist_group(SLURM_LANES[0]))
        replays = any(item.get_closest_marker("slurm_gpu_replays") for item in tests)
        units.setdefault("GPU replays" if replays else module, []).extend(tests)
    for _, tests in sorted(units.items(), key=lambda unit: -sum(seconds(item) for item in unit[1])):
        shared = [item for item in tests if not item.get_closest_marker("slurm_exclusive")]
        lane = min(SLURM_LANES, key=load.__getitem__)
        for item in shared:
            item.add_marker(pytest.mark.xdist_group(lane))
        load[lane] += sum(seconds(item) for item in shared)
    return seconds


@contextlib.contextmanager
def node_turn(exclusive: bool, what: str = NODE):
    """A turn on the node (or on its daemons): shared with the other tests, or alone. An exclusive taker holds the
    gate while it waits, so the other tests' next one waits behind it instead of overtaking it (a writer-preferring
    lock, on two flock(2) files that every test process of this machine opens)."""
    turn = _Turn(exclusive, what)
    try:
        yield
    finally:
        turn.release()


class _Turn:
    def __init__(self, exclusive: bool, what: str = NODE):
        NODE_TURN.mkdir(exist_ok=True)
        self.exclusive = exclusive
        self.gate, self.node = open(NODE_TURN / f"{what}-gate", "a"), open(NODE_TURN / what, "a")  # noqa: SIM115
        fcntl.flock(self.gate, fcntl.LOCK_EX)
        try:
            fcntl.flock(self.node, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        finally:
            if not exclusive:
                fcntl.flock(self.gate, fcntl.LOCK_UN)

    def release(self) -> None:
        fcntl.flock(self.node, fcntl.LOCK_UN)
        if self.exclusive:
            fcntl.flock(self.gate, fcntl.LOCK_UN)
        self.gate.close()
        self.node.close()


_held: list[_Turn] = []  # this process's exclusive turn, kept from one exclusive test to the next


def _exclusive(item) -> bool:
    return item is not None and item.get_closest_marker("slurm_exclusive") is not None


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    """A node test's turn, held from before its set-up to after its teardown (conftest's _quiesce cancels its jobs
    in it). Taken around the whole protocol, outside pytest-timeout's timer: waiting for the other lane is not the
    test's own time. An exclusive turn is kept while this process's next test is exclusive too: the first lane's
    exclusive tests run one after another, and the other lane's tests do not slip in between them, each making the
    next one wait."""
    if not item.get_closest_marker("slurm_node") or not _exclusive(item):
        while _held:
            _held.pop().release()
    if item.get_closest_marker("slurm_daemons"):
        with node_turn(exclusive=False, what=DAEMONS):
            return (yield)
    if not item.get_closest_marker("slurm_node"):
        return (yield)
    if not _exclusive(item):
        with node_turn(exclusive=False):
            return (yield)
    if not _held:
        _held.append(_Turn(exclusive=True))
    daemons = (
        node_turn(exclusive=True, what=DAEMONS) if item.get_closest_marker("slurm_outage") else contextlib.nullcontext()
    )
    try:
        with daemons:
            return (yield)
    finally:
        if not _exclusive(nextitem):
            _held.pop().release()


@pytest.fixture(scope="session")
def services():
    missing = [name for name in REQUIRED if not os.environ.get(name)]
    if missing:
        message = f"integration services not started (missing {', '.join(missing)}); run `make test`"
        if os.environ.get("GPULAB_REQUIRE_SERVICES") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return {name: os.environ[name] for name in os.environ if name.startswith("GPULAB_")}


def wait_for(predicate: Callable[[], object], *, timeout: float = 60, interval: float = 0.5, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")


def wait_for_polls(cluster: str, cycles: int = 3, timeout: float = 60) -> None:
    """Wait until the worker's beat has finished `cycles` more poll cycles of `cluster` (each one records its time)."""
    from core import measurements

    def last() -> float:
        return measurements.polls().get(cluster, {}).get("at", 0.0)

    for cycle in range(cycles):
        before = last()
        wait_for(
            lambda b=before: last() > b, timeout=timeout, interval=0.2, what=f"poll cycle {cycle + 1} of {cluster}"
        )


def wait_for_the_node_to_end(scheduler_id: str, timeout: float = 90) -> None:
    """Wait until the SLURM job's processes have left the node (its slurmstepd is gone), whether or not slurmctld or
    slurmrestd can say so."""

    def ended() -> bool:
        # The batch step: the job's extern step stays on the node until slurmctld cleans the allocation up.
        batch = f"slurmstepd: \\[{scheduler_id}\\.batch\\]"
        found = subprocess.run(["pgrep", "-f", batch], capture_output=True, check=False)
        return found.returncode == 1

    wait_for(ended, timeout=timeout, what=f"job {scheduler_id} to end on the node")


def stop_group(proc: subprocess.Popen | None, grace: float) -> None:
    """SIGTERM a process started in a session of its own, with its children; SIGKILL what outlives `grace`."""
    if proc is None or proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)


def slurm(*argv: str) -> str:
    """Ask SLURM directly (as root on this machine) to check what the portal did."""
    return subprocess.run(list(argv), capture_output=True, text=True, check=False, timeout=30).stdout


class Worker:
    """A real `celery worker -B` process against the test database."""

    def __init__(self, env: dict[str, str], logdir: Path, *, name: str = "worker", beat: bool = True):
        self.base_env, self.logdir, self.proc, self.count = env, logdir, None, 0
        self.name, self.beat = name, beat

    @property
    def log_path(self) -> Path:
        return self.logdir / f"{self.name}-{self.count}.log"

    def start(self, **extra_env: str) -> None:
        # Never two at once: a test that failed before its kill() (a submission that never reached SLURM) would leave
        # its worker, failpoints and all, taking the queue's messages beside the new one for the rest of the session.
        self.kill()
        self.count += 1
        env = {**self.base_env, **extra_env}
        celery = str(ROOT / ".venv/bin/celery")
        if self.beat:  # the first worker starts from an empty queue; replicas join it as it is
            subprocess.run([celery, "-A", "portal", "purge", "-f"], env=env, cwd=ROOT, capture_output=True, check=False)
        argv = [
            celery,
            "-A",
            "portal",
            "worker",
            *(["-B"] if self.beat else []),
            f"--hostname={self.name}@%h",
            "--loglevel=INFO",
            "--concurrency=2",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
        ]
        self._log = self.log_path.open("w")
        self.proc = subprocess.Popen(
            argv, env=env, cwd=ROOT, stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True
        )
        wait_for(lambda: "ready." in self.log_path.read_text(), timeout=60, what="the Celery worker to start")

    def kill(self) -> None:
        """SIGKILL the whole worker (main process and children), as a crash or OOM kill would."""
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=30)

    def stop(self) -> None:
        stop_group(self.proc, grace=20)

    def logs(self) -> str:
        return "".join(p.read_text(errors="replace") for p in sorted(self.logdir.glob(f"{self.name}-*.log")))


@pytest.fixture(scope="session")
def portal_env(services, django_db_setup, smtp_server):
    """The environment of portal processes (worker, collector, web) started against the test database; their mail
    goes to the session's SMTP server (tests/smtp.py)."""
    db = settings.DATABASES["default"]
    url = f"postgres://{db['USER']}:{db['PASSWORD']}@{db['HOST']}:{db['PORT']}/{db['NAME']}"
    return {
        **os.environ,
        "DATABASE_URL": url,
        "EMAIL_HOST": "127.0.0.1",
        "EMAIL_PORT": str(smtp_server.port),
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "POLL_INTERVAL_SECONDS": "1",
        "SUBMIT_RETRIES": "1",
        "SUBMIT_RETRY_DELAY_SECONDS": "1",
        "SUBMIT_STALE_AFTER_SECONDS": "6",
        "SSH_CONNECT_TIMEOUT_SECONDS": "5",
        "LAB_SESSION_SWEEP_SECONDS": "2",
        "PYTHONUNBUFFERED": "1",
    }


@pytest.fixture(scope="session")
def worker(portal_env, django_db_blocker, tmp_path_factory):
    env = portal_env
    worker = Worker(env, tmp_path_factory.mktemp("worker"))
    worker.start()
    yield worker
    worker.stop()
    # A killed worker's sessions can outlive it for a moment; they must not block dropping the test database.
    from django.db import connection

    with django_db_blocker.unblock(), connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )


# Each test process its own lab folder on the cluster: student spaces are named by user id, which databases repeat.
# Each xdist worker, and each checkout run beside another one (GPULAB_TEST_TAG), has lab folders of its own.
WORKER_SUFFIX = "".join(f"-{os.environ[n]}" for n in ("GPULAB_TEST_TAG", "PYTEST_XDIST_WORKER") if os.environ.get(n))
LAB_DIR = "~/gpulab-test" + WORKER_SUFFIX


@pytest.fixture
def cluster(transactional_db, course, services):
    """The local SLURM cluster, reached through sshd on 127.0.0.1 with its pinned host key. Jobs run as its one
    unprivileged shared user (labshared), reached through the service account's sudo rule, never as the service
    account; a test that wants each student's own user sets run_as (tests/integration/test_cluster_identity.py)."""
    cluster = Cluster.objects.create(
        name="local",
        title="Local SLURM",
        host=services["GPULAB_SSH_HOST"],
        port=int(services["GPULAB_SSH_PORT"]),
        host_key=services["GPULAB_HOST_KEY"],
        partitions=["debug", "gpu"],
        gpu_types=["demo"],
        lab_dir=LAB_DIR,
        run_as=RunAs.SERVICE,
        shared_user=services.get("GPULAB_SHARED_USER", "labshared"),
    )
    account = ClusterAccount(cluster=cluster, username=services["GPULAB_SERVICE_USER"], auth_method=AuthMethod.KEY)
    account.set_secret(Path(services["GPULAB_SERVICE_KEY"]).read_text())
    account.save()
    course.clusters.add(cluster)
    return cluster


@pytest.fixture(scope="session", autouse=True)
def _flush_retried_on_deadlock():
    """The flush after a test TRUNCATEs every table at once; a worker's task that locked a row first and then needs a
    table the TRUNCATE already holds makes PostgreSQL pick one of the two as a deadlock victim. When that is the
    flush, it is run again (it is all-or-nothing): the test's teardown does not fail for the worker's timing."""
    from django.db import OperationalError
    from django.db.backends.base.operations import BaseDatabaseOperations

    flush = BaseDatabaseOperations.execute_sql_flush

    def retried(self, sql_list):
        for attempt in range(5):
            try:
                return flush(self, sql_list)
            except OperationalError as exc:
                if "deadlock detected" not in str(exc) or attempt == 4:
                    raise
                time.sleep(0.2)

    BaseDatabaseOperations.execute_sql_flush = retried
    yield
    BaseDatabaseOperations.execute_sql_flush = flush


@pytest.fixture(autouse=True)
def _quiesce(request, transactional_db):
    """After each test, before its tables are flushed: stop on SLURM what this test made, and nothing else.

    Depending on transactional_db makes this teardown run before the flush. Other tests run beside this one (other
    test processes, a demo on the same machine), so nothing is cancelled by user: only the scheduler ids and the
    reservations recorded in this test's own rows.
    """
    _drop_reservations(_LEFT_BEHIND)  # a reservation an earlier test's task made after that test had ended
    yield
    from courses.models import LabSession, LabSessionState

    cancel_own_jobs()
    sessions = LabSession.objects.select_related("course")
    names = {session.reservation_name for session in sessions}
    sessions.update(state=LabSessionState.CANCELLED)
    _LEFT_BEHIND.update(names)
    _drop_reservations(names)
    if "worker" in request.fixturenames or "collector" in request.fixturenames:
        _wait_for_a_quiet_database()


def cancel_own_jobs() -> None:
    """Cancel on SLURM the jobs in this test's own rows, whoever runs them (the shared user, a student's own user);
    never every job of a user, which other test processes and a demo on the same machine share.

    A submit holds its job's row lock through the sbatch, so the update waits for any sbatch under way: once it
    returns, every job the scheduler was given carries its id in its row, and no later submit will start. A job a
    test makes by hand carries an id SLURM never gives (made_up.py): cancelling it stops no other test's job."""
    from core.choices import ACTIVE_STATES
    from jobs.models import Job

    Job.objects.filter(state__in=ACTIVE_STATES).update(state="cancelled")
    scheduler_ids = [i for i in Job.objects.values_list("scheduler_id", flat=True) if SLURM_JOB_ID.fullmatch(i)]
    if scheduler_ids:
        subprocess.run(["scancel", *scheduler_ids], capture_output=True, check=False)


SLURM_JOB_ID = re.compile(r"\d+(_\d+)?")
_LEFT_BEHIND: set[str] = set()  # reservation names tests made, checked again before each later test


def _drop_reservations(names: set[str]) -> None:
    if not names:
        return
    shown = subprocess.run(
        ["scontrol", "show", "reservation", "--oneliner"], capture_output=True, text=True, check=False
    ).stdout
    for name in set(re.findall(r"ReservationName=(\S+)", shown)) & names:
        subprocess.run(["scontrol", "delete", f"reservation={name}"], capture_output=True, check=False)


def _wait_for_a_quiet_database(timeout: float = 10) -> None:
    """Wait until no other session on the test database is inside a statement or a transaction, twice in a row: a
    worker's task that was under way has then finished, and the flush's TRUNCATE meets no half-done task."""
    from django.db import connection

    query = (
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() "
        "AND state IN ('active', 'idle in transaction', 'idle in transaction (aborted)')"
    )
    quiet_in_a_row, deadline = 0, time.monotonic() + timeout
    while quiet_in_a_row < 2 and time.monotonic() < deadline:
        with connection.cursor() as cursor:
            cursor.execute(query)
            quiet_in_a_row = quiet_in_a_row + 1 if cursor.fetchone()[0] == 0 else 0
        time.sleep(0.05)


@pytest.fixture(autouse=True)
def _nothing_onto_the_node_outside_its_group(request, monkeypatch):
    """A test outside the node's group sends no task that would put a job or a reservation on the node: the process's
    Celery worker, which an earlier Kubernetes test may have started, must not run them beside the group's tests."""
    if request.node.get_closest_marker("slurm_node") or "worker" in request.fixturenames:
        return
    from core import enqueue
    from courses.lab_sessions import MAKE_RESERVATION
    from jobs.enqueue import SUBMIT_JOB

    send = enqueue.send
    monkeypatch.setattr(
        enqueue, "send", lambda name, args: None if name in (SUBMIT_JOB, MAKE_RESERVATION) else send(name, args)
    )


# How long a job that asks for several of the node's four GPUs may wait to start: the other lanes' jobs share them,
# and one that holds a GPU may run a minute or two. (A job of one GPU starts within the fixture's default.)
SHARED_GPUS_WAIT = 240


@pytest.fixture
def job_state():
    from jobs.models import Job

    def state_of(job, *states: str, timeout: float = 90):
        def reached():
            current = Job.objects.get(pk=job.pk)
            return current if current.state in states else None

        try:
            return wait_for(reached, timeout=timeout, what=f"job {job.pk} to reach {'/'.join(states)}")
        except AssertionError as exc:
            raise AssertionError(f"{exc}; {_where_the_job_is(Job.objects.get(pk=job.pk))}") from None

    return state_of


def _where_the_job_is(job) -> str:
    """What a timed-out wait prints: the row and what SLURM says of the job and of the node's queue."""
    said = slurm("scontrol", "show", "job", job.scheduler_id).strip() if job.scheduler_id else "no scheduler id"
    queue = slurm("squeue", "-a", "-h", "-o", "%i %u %T %R %b %C").strip() or "the queue is empty"
    reservations = slurm("scontrol", "show", "reservation").strip()
    return (
        f"the row: {job.state} ({job.scheduler_reason or 'no reason'}), scheduler id {job.scheduler_id or '-'}\n"
        f"scontrol: {said}\nsqueue: {queue}\nreservations: {reservations}"
    )


# -- Kubernetes: kmock's emulator as a TLS API server on 127.0.0.1 ------------------------------------------------
K8S_TOKEN = "portal-sa-token-0a1b2c3d4e5f"


@pytest.fixture(scope="session")
def kube(tmp_path_factory):
    from .k8s import Emulator

    emulator = Emulator(tmp_path_factory.mktemp("kube"))
    yield emulator
    emulator.stop()


@pytest.fixture
def k8s_sign_in():
    """How the k8s_cluster signs in: a kubeconfig with a "token" or a "client-certificate", or an "api-token" (the
    API server's URL, CA and a bearer token, no kubeconfig). Parametrize a test to change it."""
    return "token"


@pytest.fixture
def k8s_cluster(transactional_db, course, kube, k8s_sign_in):
    """A Kubernetes cluster reached through a kubeconfig, as an admin would upload it; GPUs time-sliced 4 ways."""
    kube.deny()
    cluster = Cluster.objects.create(
        name="k8s",
        title="Lab Kubernetes",
        kind="kubernetes",
        kind_settings={"gpu_sharing_factor": 4, "has_mpi_operator": True},
    )
    account = ClusterAccount(cluster=cluster, username="gpulab-portal", auth_method=AuthMethod.KUBECONFIG)
    account.set_secret(kube.kubeconfig(K8S_TOKEN if k8s_sign_in == "token" else None))
    if k8s_sign_in == "api-token":
        cluster.api_url = kube.url
        set_cluster(cluster, ca_certificate=kube.ca_pem).save()
        account.auth_method = AuthMethod.TOKEN
        account.set_secret(K8S_TOKEN)
    account.save()
    course.clusters.add(cluster)
    return cluster


@pytest.fixture
def k8s_templates(transactional_db, course):
    from jobs.builtin import load_builtin_templates

    return {t.slug: t for t in load_builtin_templates([course]) if t.backend == "kubernetes"}


@pytest.fixture(scope="session")
def tinylm_server(tmp_path_factory):
    """The bundled inference server (workloads/, its own venv with PyTorch on CPU) serving a few-step checkpoint."""
    import socket
    import urllib.request

    python = ROOT / "workloads/.venv/bin/python"
    if not python.exists():
        pytest.fail("workloads/.venv is missing; `make test` builds it")
    run_dir = tmp_path_factory.mktemp("tinylm")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
    train = [str(python), str(ROOT / "workloads/trainer/train.py"), "--max_steps", "5", "--batch_size", "4"]
    train += ["--seq_len", "64", "--num_workers", "0", "--run_dir", str(run_dir)]
    subprocess.run(train, env=env, check=True, capture_output=True, timeout=300)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    log = (run_dir / "server.log").open("w")
    argv = [str(python), "server.py", "--checkpoint", str(run_dir), "--host", "127.0.0.1", "--port", str(port)]
    proc = subprocess.Popen(argv, cwd=ROOT / "workloads/inference", env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"

    def healthy():
        try:
            return urllib.request.urlopen(f"{url}/healthz", timeout=2).status == 200  # noqa: S310 (loopback)
        except OSError:
            return False

    wait_for(healthy, timeout=120, what="the bundled inference server")
    yield url
    proc.terminate()
    proc.wait(timeout=20)


# -- Telemetry: the collector and the ASGI web server as real processes ------------------------------------------
class Daemon:
    """A portal process (collector, web server) with its log in a file; stopped with its whole process group."""

    def __init__(self, argv: list[str], env: dict[str, str], log_path: Path, ready: Callable[[str], bool]):
        self.argv, self.env, self.log_path, self.ready = argv, env, log_path, ready
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 60) -> Daemon:
        self._log = self.log_path.open("a")
        self.proc = subprocess.Popen(
            self.argv, env=self.env, cwd=ROOT, stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True
        )
        wait_for(lambda: self.ready(self.logs()), timeout=timeout, what=f"{Path(self.argv[1]).name} to start")
        return self

    def logs(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def stop(self) -> None:
        stop_group(self.proc, grace=15)


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_web(env: dict[str, str], log: Path) -> Daemon:
    """uvicorn serving portal.asgi (HTTP and WebSockets) on a free port of 127.0.0.1; `.url` is its address."""
    port = free_port()
    argv = [str(ROOT / ".venv/bin/uvicorn"), "portal.asgi:application", "--host", "127.0.0.1", "--port", str(port)]
    argv += ["--forwarded-allow-ips", env.get("TRUSTED_PROXIES", "")]  # as scripts/demo.sh: none unless configured
    argv += ["--ws", "websockets-sansio", "--ws-per-message-deflate", "false"]  # as deployed (deploy/entrypoint.sh)
    # uvicorn logs "startup complete" before it binds; "running on" comes once the socket listens.
    server = Daemon(argv, env, log, lambda text: "Uvicorn running on" in text).start()
    server.url = f"http://127.0.0.1:{port}"
    return server


@pytest.fixture(scope="session")
def web(portal_env, tmp_path_factory):
    """The session's web server, against the test database."""
    server = start_web(portal_env, tmp_path_factory.mktemp("web") / "web.log")
    yield server
    server.stop()


@pytest.fixture
def collector(portal_env, cluster, tmp_path):
    """`manage.py collect_telemetry` following the test's clusters, stopped before the test's tables are flushed."""
    import redis

    # Each test session recreates the database, so ids repeat: start without an earlier session's rings.
    client = redis.Redis.from_url(portal_env["REDIS_URL"])
    for key in client.scan_iter("gpulab:telemetry:*"):
        client.delete(key)
    argv = [str(ROOT / ".venv/bin/python"), str(ROOT / "manage.py"), "collect_telemetry"]
    env = {**portal_env, "TELEMETRY_IDLE_SECONDS": "20"}  # the idle rule within a test's patience
    daemon = Daemon(argv, env, tmp_path / "collector.log", lambda text: "telemetry: following" in text)
    daemon.start()
    yield daemon
    daemon.stop()
