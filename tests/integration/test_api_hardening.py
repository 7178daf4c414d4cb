"""Hostile input against the real stack: uvicorn in front (who may set X-Forwarded-For), SLURM behind (logs)."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request

import pytest
from axes.models import AccessAttempt

from jobs.models import Job
from tests.conftest import PASSWORD

from .conftest import start_web, wait_for


def post_token(web, username: str, password: str, forwarded_for: str) -> tuple[int, dict]:
    body = urllib.parse.urlencode({"username": username, "password": password}).encode()
    url, headers = f"{web.url}/api/v1/token/", {"X-Forwarded-For": forwarded_for}
    request = urllib.request.Request(url, data=body, headers=headers)  # noqa: S310 (loopback)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310 (loopback)
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


@pytest.fixture
def web_with(portal_env, tmp_path, transactional_db):
    servers = []

    def start(**env: str):
        server = start_web({**portal_env, "LOGIN_FAILURE_LIMIT": "3", **env}, tmp_path / f"web{len(servers)}.log")
        servers.append(server)
        return server

    AccessAttempt.objects.all().delete()
    yield start
    for server in servers:
        server.stop()


def test_a_client_that_is_no_trusted_proxy_cannot_choose_its_address(web_with, alice):
    web = web_with()  # TRUSTED_PROXIES unset: uvicorn ignores X-Forwarded-For from everyone
    for n, name in enumerate(("bob", "nobody", "root")):
        post_token(web, name, "wrong", forwarded_for=f"192.0.2.{n}")
    status, body = post_token(web, "alice", PASSWORD, forwarded_for="192.0.2.99")
    assert status == 429 and "Too many failed sign-ins" in body["detail"]
    assert set(AccessAttempt.objects.values_list("ip_address", flat=True)) == {"127.0.0.1"}


def test_behind_a_trusted_proxy_each_forwarded_client_counts_apart(web_with, alice):
    web = web_with(TRUSTED_PROXIES="127.0.0.1")
    for name in ("bob", "nobody", "root"):
        post_token(web, name, "wrong", forwarded_for="198.51.100.7")
    assert post_token(web, "alice", PASSWORD, forwarded_for="198.51.100.7")[0] == 429
    status, body = post_token(web, "alice", PASSWORD, forwarded_for="198.51.100.8")
    assert status == 200 and body["token"]
    # The proxy appends the address it saw: what the client wrote before it is not believed.
    assert post_token(web, "alice", PASSWORD, forwarded_for="198.51.100.8, 198.51.100.7")[0] == 429


def test_a_log_offset_past_the_end_answers_the_size_on_slurm(
    worker, api_for, alice, cluster, sleep_template, job_state
):
    client = api_for(alice)
    response = client.post(
        "/api/v1/jobs/", {"template": "sleep-echo", "cluster": "local", "params": {"seconds": 0}}, format="json"
    )
    job = job_state(Job.objects.get(pk=response.json()["id"]), "completed", "failed", "cancelled", "submit_failed")
    assert job.state == "completed", (job.error, list(job.events.values_list("to_state", "message")))
    # The scheduler may flush the log's last bytes just after it reports the job complete: read until it holds still.
    whole = wait_for(
        lambda: (read := client.get(f"/api/v1/jobs/{job.pk}/log/?offset=0").json())
        == client.get(f"/api/v1/jobs/{job.pk}/log/?offset=0").json()
        and read,
        timeout=30,
        what="the log to hold still",
    )
    size = whole["offset"]
    assert whole["eof"] and size == len(whole["data"].encode()) > 0
    for offset in (size, size + 1, 9223372036854775808, 10**40):
        body = client.get(f"/api/v1/jobs/{job.pk}/log/?offset={offset}").json()
        assert body == {"offset": size, "data": "", "eof": True, "done": True}, offset
