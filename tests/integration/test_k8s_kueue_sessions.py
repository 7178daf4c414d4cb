"""Lab sessions on Kubernetes with Kueue, through the real API, pages and worker, against the emulated API server with
Kueue's CRDs registered from its published schemas (Kueue v0.13, kueue.x-k8s.io/v1beta1). For the session's window
the course's ClusterQueue holds the session's GPUs on top of its quota, lent by the other queues of the cluster's
cohort; the tests read back the ClusterQueue the portal wrote and check it against Kueue's schema. Kueue's controller
itself has nothing to do here: an admin's queue in the cohort is created as an admin would."""

from __future__ import annotations

import html
import os
import threading
import time
from datetime import timedelta

import pytest
from django.db import connection
from django.urls import reverse
from django.utils import timezone
from playwright.sync_api import expect
from rest_framework.test import APIClient

from clusters.backends.kinds.kubernetes import crds
from clusters.kinds import get_backend, kind_of
from clusters.models import AuthMethod, Cluster, ClusterAccount
from courses import lab_reservations, lab_sessions
from courses.models import LabSession, LabSessionState
from tests.kind_settings import set_cluster, set_course

from . import test_browser
from .conftest import K8S_TOKEN, wait_for
from .k8s import Emulator
from .kueue import KUEUE
from .test_browser import log_in

QUEUE = f"{KUEUE}/clusterqueues/gpulab-hpc"  # the course's ClusterQueue, which the portal manages
LENDER = "physics-queue"  # an admin's ClusterQueue in the same cohort
SESSION = "gpulab.io/lab-session"
SHOTS = os.environ.get("GPULAB_SCREENSHOT_DIR", "/tmp")


@pytest.fixture(scope="module")
def sessions_kube(tmp_path_factory):
    emulator = Emulator(tmp_path_factory.mktemp("kueue-sessions"), mpi=False, kueue=True)
    yield emulator
    emulator.stop()


def drop_queues(kube: Emulator) -> None:
    for queue in kube.items(f"{KUEUE}/clusterqueues"):
        kube.call("DELETE", f"{KUEUE}/clusterqueues/{queue['metadata']['name']}")


@pytest.fixture
def kueue_cluster(transactional_db, course, alice, bob, sessions_kube):
    """A Kubernetes cluster where Test connection found Kueue, course queues in cohort “lab”, lab sessions allowed.
    The course has two students at 4 GPUs each: its ClusterQueue's own quota is 8 GPUs."""
    sessions_kube.deny()
    drop_queues(sessions_kube)
    cluster = Cluster.objects.create(
        name="k8s",
        title="Kueue cluster",
        kind="kubernetes",
        kind_settings={"kube_addons": {"kueue": True, "kueue_visibility": True}, "kueue_cohort": "lab"},
        lab_reservations=True,
    )
    account = ClusterAccount(cluster=cluster, username="gpulab-portal", auth_method=AuthMethod.KUBECONFIG)
    account.set_secret(sessions_kube.kubeconfig(K8S_TOKEN))
    account.save()
    course.clusters.add(cluster)
    yield cluster
    LabSession.objects.update(state=LabSessionState.CANCELLED)  # nothing more to hold for this test's sessions
    drop_queues(sessions_kube)


def lender(kube: Emulator, gpus: int, lending_limit: int | None = None, cohort: str = "lab") -> dict:
    """Another department's ClusterQueue, as an admin creates it with kubectl (the API server checks its schema)."""
    quota: dict[str, object] = {"name": "nvidia.com/gpu", "nominalQuota": gpus}
    if lending_limit is not None:
        quota["lendingLimit"] = lending_limit
    queue = {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "ClusterQueue",
        "metadata": {"name": LENDER},
        "spec": {
            "cohort": cohort,
            "namespaceSelector": {},
            "resourceGroups": [
                {
                    "coveredResources": ["cpu", "nvidia.com/gpu"],
                    "flavors": [{"name": "default-flavor", "resources": [{"name": "cpu", "nominalQuota": 64}, quota]}],
                }
            ],
        },
    }
    return kube.call("POST", f"{KUEUE}/clusterqueues", queue)


def course_queue(kube: Emulator) -> dict:
    """The course's ClusterQueue as the API server holds it, checked against Kueue's published schema."""
    found = kube.get(QUEUE)
    assert found is not None, "the course's ClusterQueue is missing"
    crds.validate({k: v for k, v in found.items() if k != "status"})
    return found


def gpus_of(queue: dict) -> dict:
    (group,) = queue["spec"]["resourceGroups"]
    (flavor,) = group["flavors"]
    return next(r for r in flavor["resources"] if r["name"] == "nvidia.com/gpu")


def raised_by(queue: dict) -> dict:
    annotations = queue["metadata"].get("annotations") or {}
    return {k: v for k, v in annotations.items() if k.startswith("gpulab.io/lab-session")}


def book(api_for, instructor, course, cluster, *, in_minutes=0, minutes=15, gpus=4) -> LabSession:
    start = (timezone.now() + timedelta(minutes=in_minutes)).replace(second=0, microsecond=0)
    body = {"cluster": cluster.name, "starts_at": start.isoformat(), "minutes": minutes, "gpus": gpus}
    response = api_for(instructor).post(f"/api/v1/courses/{course.slug}/lab-sessions/", body, format="json")
    assert response.status_code == 201, response.content
    return LabSession.objects.get(pk=response.json()["id"])


def state_of(session: LabSession, *states: str, timeout: float = 60) -> LabSession:
    def reached():
        session.refresh_from_db()
        return session.state in states

    wait_for(reached, timeout=timeout, what=f"lab session {session.pk} to be {'/'.join(states)}")
    return session


def nominal_is(kube: Emulator, gpus: int, what: str) -> dict:
    return wait_for(lambda: (q := kube.get(QUEUE)) and gpus_of(q)["nominalQuota"] == gpus and q, what=what)


def events_of(session: LabSession) -> list[tuple[str, str, str]]:
    return list(session.events.order_by("at", "pk").values_list("from_state", "to_state", "message"))


def test_a_session_on_now_raises_the_course_queue_keeps_it_through_a_launch_and_restores_it_at_its_end(
    worker, login, api_for, instructor, alice, course, kueue_cluster, sessions_kube
):
    lender(sessions_kube, gpus=6)
    session = state_of(book(api_for, instructor, course, kueue_cluster), LabSessionState.HELD, LabSessionState.REFUSED)
    assert session.state == LabSessionState.HELD, session.message
    queue = course_queue(sessions_kube)
    assert gpus_of(queue) == {"name": "nvidia.com/gpu", "nominalQuota": 12}  # 4 per student, 2 students, and 4
    assert raised_by(queue) == {SESSION: session.reservation_name, "gpulab.io/lab-session-gpus": "4"}
    assert queue["spec"]["cohort"] == "lab"
    assert session.gpus_held == 4 and session.nodes == ""
    held = "The course's ClusterQueue gpulab-hpc now holds 12 GPUs (8 of its own and the session's 4) until "
    assert session.message.startswith(held)
    assert [(f, t) for f, t, _ in events_of(session)] == [("", "booked"), ("booked", "held")]

    page = html.unescape(login(instructor).get(reverse("courses:lab_sessions", args=[course.slug])).content.decode())
    assert held in page and "4 GPUs held for this course" in page
    assert "The course's queue on Kueue cluster holds the session's GPUs on top of its quota" in page

    # A launch brings the course's queue to its plan; the session's GPUs stay on it.
    plan = kind_of("kubernetes").prepare_submit(course, alice, kueue_cluster)
    get_backend(kueue_cluster).ensure_namespace(plan, force=True)
    assert gpus_of(course_queue(sessions_kube))["nominalQuota"] == 12

    # Its end, as the portal sees it: the beat ends the session and the queue goes back to its own quota.
    LabSession.objects.filter(pk=session.pk).update(ends_at=timezone.now())
    session = state_of(session, LabSessionState.ENDED)
    queue = nominal_is(sessions_kube, 8, "the course's queue back to its 8 GPUs")
    assert raised_by(course_queue(sessions_kube)) == {} and queue["spec"]["cohort"] == "lab"
    wait_for(lambda: session.events.count() == 4, what="the restore's event")
    assert events_of(session)[2:] == [
        ("held", "ended", "The session ended."),
        ("ended", "ended", "The course's ClusterQueue gpulab-hpc is back to its own 8 GPUs."),
    ]


def test_a_session_booked_ahead_is_checked_then_raised_at_its_start_once_even_across_a_worker_restart(
    worker, api_for, instructor, course, kueue_cluster, sessions_kube
):
    lender(sessions_kube, gpus=6)
    session = state_of(book(api_for, instructor, course, kueue_cluster, in_minutes=30), LabSessionState.HELD)
    assert session.gpus_held == 0 and session.message.startswith(
        "Kueue's cohort lab can lend the 4 GPU(s): the course's ClusterQueue gpulab-hpc gets them from "
    )
    assert sessions_kube.get(QUEUE) is None  # nothing raised before the start (no launch made the queue either)

    LabSession.objects.filter(pk=session.pk).update(starts_at=timezone.now())  # its start, as the portal sees it
    nominal_is(sessions_kube, 12, "the session's start to raise the course's queue")
    wait_for(lambda: LabSession.objects.get(pk=session.pk).gpus_held == 4, what="the raise recorded on the session")

    # The worker dies mid-session and comes back: the raise is found in place, never added again.
    worker.kill()
    worker.start()
    time.sleep(5)  # more than two sweeps (LAB_SESSION_SWEEP_SECONDS=2) of the new worker
    queue = course_queue(sessions_kube)
    assert gpus_of(queue)["nominalQuota"] == 12 and raised_by(queue)[SESSION] == session.reservation_name
    assert lab_reservations.keep(session.pk) == "in place"  # a retried task changes nothing either
    assert gpus_of(course_queue(sessions_kube))["nominalQuota"] == 12
    raises = [m for f, t, m in events_of(session) if (f, t) == ("held", "held")]
    assert len(raises) == 1 and raises[0].startswith("The course's ClusterQueue gpulab-hpc now holds 12 GPUs")

    # The new worker gives the GPUs back at the end.
    LabSession.objects.filter(pk=session.pk).update(ends_at=timezone.now())
    nominal_is(sessions_kube, 8, "the course's queue back to its 8 GPUs after the restart")
    assert raised_by(course_queue(sessions_kube)) == {}


def made_again_from_an_old_copy(kube: Emulator, queue: dict) -> None:
    """An admin deletes the course's queue and makes it again from an old copy: the session's GPUs are gone."""
    kube.call("DELETE", QUEUE)
    queue = {k: v for k, v in queue.items() if k in ("apiVersion", "kind", "spec")}
    queue["metadata"] = {"name": "gpulab-hpc"}
    gpus_of(queue)["nominalQuota"] = 8
    kube.call("POST", f"{KUEUE}/clusterqueues", queue)


def test_a_raise_lost_to_an_admin_who_made_the_queue_again_is_put_back_while_the_worker_was_down(
    worker, api_for, instructor, course, kueue_cluster, sessions_kube
):
    lender(sessions_kube, gpus=6)
    session = state_of(book(api_for, instructor, course, kueue_cluster), LabSessionState.HELD)
    queue = nominal_is(sessions_kube, 12, "the raise")
    worker.kill()
    made_again_from_an_old_copy(sessions_kube, queue)
    worker.start()
    nominal_is(sessions_kube, 12, "the lost raise to be put back")
    assert raised_by(course_queue(sessions_kube))[SESSION] == session.reservation_name
    wait_for(lambda: session.events.count() == 3, what="the put-back's event")
    from_, to, message = events_of(session)[2]
    assert (from_, to) == ("held", "held") and message.startswith(
        "The course's ClusterQueue gpulab-hpc had lost the session's GPUs (edited or made again); put back: it holds "
        "12 GPUs (8 of its own and the session's 4)"
    )
    session.refresh_from_db()
    assert session.state == LabSessionState.HELD and session.gpus_held == 4


def test_cancelling_mid_session_gives_the_gpus_back(worker, api_for, instructor, course, kueue_cluster, sessions_kube):
    lender(sessions_kube, gpus=6)
    session = state_of(book(api_for, instructor, course, kueue_cluster), LabSessionState.HELD)
    nominal_is(sessions_kube, 12, "the raise")
    cancelled = api_for(instructor).delete(f"/api/v1/courses/{course.slug}/lab-sessions/{session.pk}/")
    assert cancelled.status_code == 200 and cancelled.json()["state"] == "cancelled"
    nominal_is(sessions_kube, 8, "the course's queue back to its 8 GPUs")
    wait_for(lambda: LabSession.objects.filter(pk=session.pk).exclude(removed_at=None).exists(), what="removed_at")
    assert raised_by(course_queue(sessions_kube)) == {}
    assert [(f, t) for f, t, _ in events_of(session)] == [
        ("", "booked"),
        ("booked", "held"),
        ("held", "cancelled"),
        ("cancelled", "cancelled"),
    ]
    time.sleep(4)  # the sweeps that follow leave a cancelled session's queue alone
    assert gpus_of(course_queue(sessions_kube))["nominalQuota"] == 8


def test_a_cancel_during_a_keep_pass_waits_for_it_and_the_gpus_are_given_back_once(
    worker, api_for, instructor, course, kueue_cluster, sessions_kube, monkeypatch
):
    """The beat's keep pass puts a lost raise back while the instructor cancels: the cancel waits for the pass, and
    the GPUs are given back once, with one event. (A pass that did not hold the row put the raise back after the
    cancel had given it back, and took it away again: two give-backs in the session's history.)"""
    worker.stop()  # the test runs each step itself, in the order it means
    monkeypatch.setattr(lab_sessions, "send_on_commit", lambda *args: None)
    try:
        lender(sessions_kube, gpus=6)
        session = book(api_for, instructor, course, kueue_cluster)
        assert lab_reservations.make(session.pk) == "held"
        made_again_from_an_old_copy(sessions_kube, nominal_is(sessions_kube, 12, "the raise"))
        holder = type(lab_reservations.holds_of(session))
        hold, outcome = holder.hold, {}

        def cancel() -> None:
            try:
                outcome["cancelled"] = lab_sessions.cancel(LabSession.objects.get(pk=session.pk), actor=instructor)
            finally:
                connection.close()

        canceller = threading.Thread(target=cancel)

        def hold_while_the_instructor_cancels(self, request):
            canceller.start()
            canceller.join(timeout=1)
            outcome["waited"] = canceller.is_alive()  # on this pass's row lock
            return hold(self, request)

        monkeypatch.setattr(holder, "hold", hold_while_the_instructor_cancels)
        assert lab_reservations.keep(session.pk) == "held"
        canceller.join(timeout=30)
        assert outcome == {"waited": True, "cancelled": True}
        monkeypatch.setattr(holder, "hold", hold)
        assert lab_reservations.remove(session.pk) == "removed"
        assert gpus_of(course_queue(sessions_kube))["nominalQuota"] == 8
        assert raised_by(course_queue(sessions_kube)) == {}
        assert [(f, t) for f, t, _ in events_of(session)] == [
            ("", "booked"),
            ("booked", "held"),
            ("held", "held"),
            ("held", "cancelled"),
            ("cancelled", "cancelled"),
        ]
    finally:
        worker.start()


def test_a_session_the_cohort_cannot_lend_is_refused_with_the_figures_and_the_queue_is_untouched(
    api_for, instructor, course, other_course, kueue_cluster, sessions_kube
):
    lender(sessions_kube, gpus=6, lending_limit=3)  # it keeps 3 of its 6 GPUs for itself
    session = book(api_for, instructor, course, kueue_cluster, gpus=4)
    assert lab_reservations.make(session.pk) == "refused"
    session.refresh_from_db()
    assert session.state == LabSessionState.REFUSED and session.removed_at is not None
    assert session.message == (
        "Kueue's cohort lab can lend a session at most 3 GPU(s) of flavor default-flavor (what physics-queue may "
        "lend); the session asks for 4. Book at most 3, or another time."
    )
    assert sessions_kube.get(QUEUE) is None

    # Another course's session at the same time takes 2 of the 3: a booking of 2 is refused, one of 1 fits.
    other_course.clusters.add(kueue_cluster)
    now = timezone.now()
    LabSession.objects.create(  # booked: the cluster has not been asked for it yet, but it counts
        course=other_course, cluster=kueue_cluster, starts_at=now, ends_at=now + timedelta(minutes=30), gpus=2
    )
    two = book(api_for, instructor, course, kueue_cluster, gpus=2)
    assert lab_reservations.make(two.pk) == "refused"
    two.refresh_from_db()
    assert "; other courses' sessions take 2 of them then; the session asks for 2. Book at most 1" in two.message
    one = book(api_for, instructor, course, kueue_cluster, gpus=1)
    assert lab_reservations.make(one.pk) == "held"
    assert gpus_of(course_queue(sessions_kube))["nominalQuota"] == 9
    # Made again (as if the first answer was lost), the session finds its raise and adds nothing.
    LabSession.objects.filter(pk=one.pk).update(state=LabSessionState.BOOKED)
    assert lab_reservations.make(one.pk) == "held"
    assert gpus_of(course_queue(sessions_kube))["nominalQuota"] == 9


def test_a_cluster_without_a_cohort_or_a_course_with_an_admins_queue_is_refused_at_booking(
    api_for, instructor, course, kueue_cluster
):
    url = f"/api/v1/courses/{course.slug}/lab-sessions/"
    start = timezone.now().replace(second=0, microsecond=0).isoformat()
    body = {"cluster": kueue_cluster.name, "starts_at": start, "minutes": 30, "gpus": 2}
    set_cluster(kueue_cluster, kueue_cohort="", save=True)
    refused = api_for(instructor).post(url, body, format="json")
    assert refused.status_code == 400
    assert "puts course queues in no Kueue cohort" in str(refused.json()["cluster"])
    set_cluster(kueue_cluster, kueue_cohort="lab", save=True)
    set_course(course, kueue_local_queue="shared-queue").save()
    refused = api_for(instructor).post(url, body, format="json")
    assert refused.status_code == 400 and "an admin's LocalQueue (shared-queue)" in str(refused.json()["cluster"])
    assert not LabSession.objects.exists()


def test_the_other_student_the_ta_and_anonymous_cannot_book_or_cancel_a_session(
    client, login, api_for, instructor, alice, ta, carol, course, kueue_cluster, sessions_kube
):
    lender(sessions_kube, gpus=6)
    session = book(api_for, instructor, course, kueue_cluster, in_minutes=30)
    page = reverse("courses:lab_sessions", args=[course.slug])
    cancel = reverse("courses:lab_session_cancel", args=[course.slug, session.pk])
    api = f"/api/v1/courses/{course.slug}/lab-sessions/"
    start = (timezone.now() + timedelta(minutes=60)).replace(second=0, microsecond=0).isoformat()
    body = {"cluster": kueue_cluster.name, "starts_at": start, "minutes": 30, "gpus": 1}
    for student in (alice, carol):  # a student of the course, and one of another course
        assert login(student).post(page, {"cluster": kueue_cluster.pk}).status_code == 404
        assert login(student).post(cancel).status_code == 404
        assert api_for(student).post(api, body, format="json").status_code == 404
        assert api_for(student).delete(f"{api}{session.pk}/").status_code == 404
    # A TA sees the course's jobs but manages nothing: told so, not shown a missing page.
    assert login(ta).post(page, {"cluster": kueue_cluster.pk}).status_code == 403
    assert login(ta).post(cancel).status_code == 403
    assert api_for(ta).post(api, body, format="json").status_code == 403
    assert api_for(ta).delete(f"{api}{session.pk}/").status_code == 403
    client.logout()
    assert client.post(cancel).status_code == 302 and "/login" in client.post(cancel)["Location"]
    anonymous = APIClient()
    assert anonymous.post(api, body, format="json").status_code in (401, 403)
    assert anonymous.delete(f"{api}{session.pk}/").status_code in (401, 403)
    session.refresh_from_db()
    assert session.state == LabSessionState.BOOKED and LabSession.objects.count() == 1
    assert sessions_kube.get(QUEUE) is None


page = test_browser.page  # the Chromium fixture


@pytest.mark.browser
@pytest.mark.timeout(120)
@pytest.mark.parametrize("width", [1280, 390])
def test_the_instructor_books_on_the_kueue_cluster_and_the_page_shows_the_gpus_the_queue_holds(
    page, live_server, instructor, course, kueue_cluster, sessions_kube, width
):
    lender(sessions_kube, gpus=6)
    page.set_viewport_size({"width": width, "height": 800})
    log_in(page, live_server, "ines")
    page.goto(f"{live_server.url}/courses/{course.slug}/lab-sessions/")
    expect(page.locator("#book-session")).to_contain_text(
        "During a session on Kueue cluster the course's Kueue queue gets the session's GPUs on top of its quota"
    )
    start = timezone.localtime()
    page.fill("#id_date", start.strftime("%Y-%m-%d"))
    page.fill("#id_time", start.strftime("%H:%M"))
    page.fill("#id_minutes", "90")
    page.fill("#id_gpus", "4")
    page.click("text=Book the session")
    expect(page.locator(".flash.success")).to_contain_text("Booked.")
    session = LabSession.objects.get()
    assert lab_reservations.make(session.pk) == "held"  # the worker's task, run here (no worker in this test)
    page.reload()
    row = page.locator(f"#lab-session-{session.pk}")
    expect(row).to_contain_text("Held")
    expect(row).to_contain_text(
        "The course's ClusterQueue gpulab-hpc now holds 12 GPUs (8 of its own and the session's 4)"
    )
    notice = page.locator("#lab-session-notice")
    expect(notice).to_contain_text("Lab session on now")
    expect(notice).to_contain_text("4 GPUs held for this course")
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    page.screenshot(path=f"{SHOTS}/gpulab-kueue-lab-session-{width}.png", full_page=True)
