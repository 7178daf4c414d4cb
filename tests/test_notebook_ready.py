"""The session page's readiness answers (sessions/notebook_ready.py, GET /jobs/<id>/jupyter/ready/): what the page
says while the job waits for a node and while its server starts, and the frame's address once the server answers.
The server here is a real HTTP server on 127.0.0.1 that answers only with the session's token (the portal's, kept on
the job's row); the cluster is the fake at the backend interface (the port the job reports, its nodes and their
addresses)."""

from __future__ import annotations

import json
import threading
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.utils import timezone

from clusters import crypto
from core.choices import JobState, SessionKind
from jobs.models import Job

TOKEN = "t0ken-" + "x" * 40


@pytest.fixture
def session(make_job, alice, sleep_template, fake_backend, settings):
    settings.GPULAB_NOTEBOOK_PORTS = (1024, 65535)  # the test's server listens on whatever port was free
    sleep_template.session = SessionKind.JUPYTERLAB
    sleep_template.save()
    job = make_job(alice, seconds=60, time_minutes=10)
    Job.objects.filter(pk=job.pk).update(
        state=JobState.PENDING,
        scheduler_id="4242",
        created_at=timezone.now() - timedelta(seconds=40),
        session_token_encrypted=crypto.encrypt(TOKEN),
    )
    fake_backend.nodes_of["4242"] = ["node01"]
    fake_backend.node_addresses["node01"] = "127.0.0.1"
    job.refresh_from_db()
    return job


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start(job, minutes_ago: float = 0.5) -> None:
    Job.objects.filter(pk=job.pk).update(
        state=JobState.RUNNING, started_at=timezone.now() - timedelta(minutes=minutes_ago)
    )


def wrote(fake_backend, job, port: int) -> None:
    fake_backend.job_files[(job.pk, ".gpulab-notebook.json")] = json.dumps({"port": port})


@pytest.fixture
def jupyter():
    """A server that answers /jobs/<id>/lab/api/status as Jupyter does: 200 with the token, 403 without."""

    class Status(BaseHTTPRequestHandler):
        def do_GET(self):
            ok = self.path.endswith("/lab/api/status") and self.headers.get("Authorization") == f"token {TOKEN}"
            self.send_response(200 if ok else 403)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(b'{"started": "now"}')

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Status)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()


def ready(client, job) -> dict:
    response = client.get(f"/jobs/{job.pk}/jupyter/ready/")
    assert response.status_code == 200, response.content
    assert response["Cache-Control"] == "no-store"
    return response.json()


def test_anonymous_other_students_and_staff_never_learn_the_sessions_state(
    client, login, session, bob, carol, instructor
):
    url = f"/jobs/{session.pk}/jupyter/ready/"
    assert client.get(url).status_code == 302
    for user in (bob, carol):
        assert login(user).get(url).status_code == 404
    assert login(instructor).get(url).status_code == 403  # may see the job, never open its JupyterLab


def test_a_waiting_session_says_it_waits_for_a_gpu_node_and_for_how_long(login, session, alice):
    Job.objects.filter(pk=session.pk).update(scheduler_reason="Resources")
    answer = ready(login(alice), session)
    assert answer["phase"] == "waiting" and answer["lab_url"] == ""
    assert answer["message"].startswith("Waiting for a GPU node") and "Resources" in answer["message"]
    assert 40 <= answer["elapsed_s"] < 100


def test_a_session_not_yet_on_the_scheduler_says_it_is_being_sent(login, session, alice):
    Job.objects.filter(pk=session.pk).update(state=JobState.SUBMITTING)
    answer = ready(login(alice), session)
    assert answer["phase"] == "waiting" and answer["message"] == "Sending the session to the cluster…"


def test_a_running_session_whose_server_has_not_said_where_it_listens_is_starting(login, session, alice):
    start(session, minutes_ago=0.5)
    answer = ready(login(alice), session)
    assert answer["phase"] == "starting" and "Starting JupyterLab" in answer["message"]
    assert 30 <= answer["elapsed_s"] < 90 and answer["lab_url"] == ""


def test_a_server_that_does_not_answer_yet_is_starting(login, session, alice, fake_backend):
    start(session)
    wrote(fake_backend, session, free_port())  # its file is written before the server listens
    assert ready(login(alice), session)["phase"] == "starting"


def test_the_frame_loads_once_the_server_answers_the_portal_with_its_token(
    login, session, alice, fake_backend, jupyter
):
    start(session)
    wrote(fake_backend, session, jupyter)
    answer = ready(login(alice), session)
    assert answer == {
        "phase": "ready",
        "message": "JupyterLab is ready: open it in a new tab with the button above.",
        "elapsed_s": answer["elapsed_s"],
        "lab_url": f"/jobs/{session.pk}/lab/lab",
    }
    assert TOKEN not in json.dumps(answer)


def test_a_port_outside_the_portals_range_is_refused_in_words(login, session, alice, fake_backend, jupyter, settings):
    settings.GPULAB_NOTEBOOK_PORTS = (8800, 8999)
    start(session)
    wrote(fake_backend, session, 6379)
    answer = ready(login(alice), session)
    assert answer["phase"] == "refused" and "8800 to 8999" in answer["message"]


def test_a_cluster_whose_job_files_the_portal_cannot_read_stops_the_asking_with_the_reason(
    login, session, alice, fake_backend
):
    start(session)
    fake_backend.files_unreadable = "The files jobs write here are read over SSH; an admin can add the login node."
    answer = ready(login(alice), session)
    assert answer["phase"] == "refused" and "add the login node" in answer["message"]


def test_a_cluster_the_portal_cannot_reach_keeps_the_page_asking(login, session, alice, fake_backend):
    start(session)
    fake_backend.down = True
    answer = ready(login(alice), session)
    assert answer["phase"] == "unreachable" and "The fake cluster is down" in answer["message"]


def test_an_ended_session_says_so(login, session, alice):
    Job.objects.filter(pk=session.pk).update(state=JobState.TIMED_OUT, finished_at=timezone.now())
    answer = ready(login(alice), session)
    assert answer["phase"] == "ended" and "timed out" in answer["message"].lower()


def test_the_owners_page_waits_with_an_empty_frame_that_the_script_fills(login, session, alice):
    page = login(alice).get(f"/jobs/{session.pk}/jupyter/").content.decode()
    assert 'id="notebook-waiting"' in page and "Waiting for a GPU node" in page
    assert 'id="session-waiting"' not in page  # said once, by the line that counts the time
    assert 'data-telemetry="job"' in page  # the charts fill in once the job runs, without a reload
    assert f'data-ready-url="/jobs/{session.pk}/jupyter/ready/"' in page and "js/notebook.js" in page
    assert '<iframe class="notebook-frame" id="notebook-frame" title="JupyterLab" hidden></iframe>' in page
