"""A shell in a running Kubernetes job's pod: the portal's uvicorn opens the API server's exec stream (the official
client's stream(), v5.channel.k8s.io) on the emulated API server over TLS, whose kubelet part runs a real bash under a
PTY (tests/k8s_kubelet.py); Chromium types into xterm.js. Another student's page and socket answer as missing."""

from __future__ import annotations

import copy
import json
import os
import re
import socket as sockets

import pytest
from playwright.sync_api import expect
from websockets.exceptions import InvalidStatus

from jobs.models import JobEvent

from .test_browser import log_in, page  # noqa: F401  (the Chromium page fixture)
from .test_k8s_jobs import NS, launch, owned
from .test_terminal import SCREEN, SHOTS, open_socket, plain, read_until, type_at_prompt, wait_text

TRAIN = {"gpus": 1, "max_steps": 50, "image": "gpulab/tinylm-trainer:0.1.0-cpu"}
HOST = sockets.gethostname()
PROMPT = "~# " if os.geteuid() == 0 else "~$ "  # bash's prompt in the pod's home: the shell is ready


def running_training(api_for, user, kube, job_state, pod: str, *, sidecar: bool = False):
    """A training job whose pod the kubelet (the test) has started; with a second container if `sidecar`."""
    job = job_state(launch(api_for, user, "k8s-tinylm-train", TRAIN), "pending")
    (workload,) = owned(kube, f"/apis/batch/v1/namespaces/{NS}/jobs", job)
    if sidecar:
        workload = copy.deepcopy(workload)
        workload["spec"]["template"]["spec"]["containers"].append({"name": "watcher", "image": "busybox:1.36"})
    kube.start_pod(workload, pod, phase="Running")
    return job_state(job, "running"), workload


def test_student_opens_a_shell_in_the_pod_resizes_it_and_reads_the_answers(
    worker, web, alice, k8s_cluster, k8s_templates, api_for, kube, job_state
):
    job, _ = running_training(api_for, alice, kube, job_state, "shell-1")
    with open_socket(web, alice, job, cols=100, rows=30) as socket:
        socket.send(b"hostname; echo pod=$HOSTNAME; stty size\n")
        output, closed = read_until(socket, lambda out: re.search(r"\n30 100\r?\n", plain(out)))
        lines = [line.strip() for line in plain(output).splitlines()]
        assert closed is None and HOST in lines and "pod=shell-1" in lines, output  # a real process, in that pod
        socket.send(json.dumps({"resize": [120, 40]}))  # channel 4 of the exec stream
        socket.send(b"stty size\n")
        output, _ = read_until(socket, lambda out: "40 120" in out)
        assert "40 120" in output
    assert any("/pods/shell-1/exec?" in line for line in kube.requests())


def test_a_pod_with_two_containers_offers_a_picker_and_the_shell_opens_in_the_one_picked(
    worker, web, login, alice, k8s_cluster, k8s_templates, api_for, kube, job_state
):
    job, workload = running_training(api_for, alice, kube, job_state, "pick-1", sidecar=True)
    trainer = workload["spec"]["template"]["spec"]["containers"][0]["name"]
    page_html = login(alice).get(f"/jobs/{job.pk}/terminal/").content.decode()
    assert f'<option value="pick-1/{trainer}" selected>' in page_html and '<option value="pick-1/watcher">' in page_html
    picked = login(alice).get(f"/jobs/{job.pk}/terminal/?target=pick-1/watcher").content.decode()
    assert 'data-target="pick-1/watcher"' in picked
    with open_socket(web, alice, job, target="pick-1/watcher") as socket:
        socket.send(b"echo in=$(basename $PWD)\n")
        output, _ = read_until(socket, lambda out: "in=watcher" in out)
        assert "in=watcher" in output  # the kubelet runs each container in its own directory

    running_training(api_for, alice, kube, job_state, "other-1")
    with open_socket(web, alice, job, target="other-1/" + trainer) as socket:  # another job's pod, same namespace
        _, closed = read_until(socket, lambda out: False)
    assert closed and "not one of this job's running pods" in closed


def test_another_student_gets_404_on_the_page_and_the_socket(
    worker, web, login, alice, bob, carol, k8s_cluster, k8s_templates, api_for, kube, job_state
):
    job, _ = running_training(api_for, alice, kube, job_state, "iso-shell")
    for user in (bob, carol):
        assert login(user).get(f"/jobs/{job.pk}/terminal/").status_code == 404
        with pytest.raises(InvalidStatus) as refusal:
            open_socket(web, user, job)
        assert refusal.value.response.status_code == 403  # closed before the handshake, as a missing job
    assert not any("/pods/iso-shell/exec" in line for line in kube.requests())
    assert login(alice).get(f"/jobs/{job.pk}/terminal/").status_code == 200


def test_instructor_shell_is_told_to_the_student_and_the_terminal_closes_when_the_job_ends(
    worker, web, alice, instructor, k8s_cluster, k8s_templates, api_for, kube, job_state
):
    job, workload = running_training(api_for, alice, kube, job_state, "end-1")
    with open_socket(web, alice, job) as students, open_socket(web, instructor, job) as socket:
        told = json.loads(wait_text(students))
        assert "(instructor) opened a terminal in this job" in told["notice"]
        socket.send(b"echo seen-$((6*7))\n")
        output, _ = read_until(socket, lambda out: "seen-42" in out)
        assert "seen-42" in output
        kube.set_pod(NS, "end-1", phase="Succeeded")
        kube.set_status(
            f"/apis/batch/v1/namespaces/{NS}/jobs/{workload['metadata']['name']}",
            {"conditions": [{"type": "Complete", "status": "True"}], "completionTime": "2026-11-21T10:05:00Z"},
        )
        _, closed = read_until(students, lambda out: False, timeout=60)
        assert closed and "ended" in closed
    assert "opened a terminal" in JobEvent.objects.get(job=job, actor=instructor).message


@pytest.mark.browser
@pytest.mark.timeout(240)
def test_student_types_hostname_in_chromium_and_reads_the_pods_answer(
    worker,
    web,
    page,  # noqa: F811
    alice,
    k8s_cluster,
    k8s_templates,
    api_for,
    kube,
    job_state,
):
    job, _ = running_training(api_for, alice, kube, job_state, "xterm-1", sidecar=True)
    log_in(page, web, "alice")
    page.goto(f"{web.url}/jobs/{job.pk}/")
    page.click("#open-terminal")
    expect(page.locator("#terminal-target")).to_be_visible()
    screen = SCREEN
    type_at_prompt(page, "hostname; echo pod=$HOSTNAME\n", prompt=PROMPT)
    page.wait_for_function(f"({screen}).includes('pod=xterm-1')", timeout=30_000)
    lines = [line.strip() for line in page.evaluate(screen).splitlines()]
    assert HOST in lines, lines
    expect(page.locator(".xterm-rows")).to_contain_text("pod=xterm-1")  # drawn on the page, not only in the buffer
    page.screenshot(path=f"{SHOTS}/gpulab-k8s-terminal-laptop.png")
    page.set_viewport_size({"width": 390, "height": 844})
    page.select_option("#terminal-target", "xterm-1/watcher")
    page.click("#terminal-target-form button")
    type_at_prompt(page, "echo in=$(basename $PWD)\n", prompt=PROMPT)
    page.wait_for_function(f"({screen}).includes('in=watcher')", timeout=30_000)
    page.screenshot(path=f"{SHOTS}/gpulab-k8s-terminal-phone.png")
