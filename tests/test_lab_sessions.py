"""Lab sessions without a cluster: the booking rules (form and API refuse every bad input with the reason), who may
see and cancel a session, the conditional and audited moves, the retry-safe reservation task against the fake
backend, and the job submitted into the reservation of its course's session."""

import html
from datetime import datetime, time, timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from clusters.backends.base import NodeInfo
from clusters.backends.slurm_family.reservations import (
    ReservationRefused,
    ReservationRequest,
    create_argv,
    nodes_for,
    parse_show,
    refusal,
    release,
)
from courses import lab_reservations, lab_sessions
from courses.models import Enrollment, LabSession, LabSessionEvent, LabSessionState, Role
from jobs.submission import submit_request

pytestmark = pytest.mark.django_db

GPU_PARTITION = {"name": "gpu", "nodes": 1, "gpus_per_node": 4, "max_nodes_per_job": None, "max_minutes": 120}


@pytest.fixture
def lab_cluster(cluster, other_course):
    cluster.lab_reservations = True
    cluster.partition_limits = {"gpu": {**GPU_PARTITION, "default": True}}
    cluster.save()
    other_course.clusters.add(cluster)
    return cluster


@pytest.fixture
def other_instructor(make_user, other_course):
    user = make_user("otto")
    Enrollment.objects.create(course=other_course, user=user, role=Role.INSTRUCTOR)
    return user


@pytest.fixture
def sent(monkeypatch):
    calls = []
    monkeypatch.setattr("core.enqueue.send", lambda name, args: calls.append((name, args)))
    return calls


def at(minutes_from_now: int):
    start = timezone.localtime() + timedelta(minutes=minutes_from_now)
    return start.replace(second=0, microsecond=0)


def form_data(cluster, start, minutes=60, gpus=2):
    return {"cluster": cluster.pk, "date": start.date().isoformat(), "time": start.strftime("%H:%M"),
            "minutes": minutes, "gpus": gpus}  # fmt: skip


def book(course, cluster, start, minutes=60, gpus=2, actor=None):
    return lab_sessions.book(course, lab_sessions.Booking(cluster, start, minutes, gpus), actor=actor)


# -- booking: the form ------------------------------------------------------------------------------------------


def test_an_instructor_books_a_session_and_its_reservation_is_asked_for_on_commit(
    login, instructor, course, lab_cluster, sent, django_capture_on_commit_callbacks
):
    url = reverse("courses:lab_sessions", args=[course.slug])
    page = login(instructor).get(url).content.decode()
    assert 'name="gpus"' in page and "No session booked" in page
    with django_capture_on_commit_callbacks(execute=True):
        response = login(instructor).post(url, form_data(lab_cluster, at(30)))
    assert response.status_code == 302
    session = LabSession.objects.get()
    assert (session.course, session.cluster, session.gpus, session.minutes) == (course, lab_cluster, 2, 60)
    assert session.state == LabSessionState.BOOKED and session.booked_by == instructor
    assert sent == [(lab_sessions.MAKE_RESERVATION, (session.pk,))]
    assert LabSessionEvent.objects.get(session=session).to_state == LabSessionState.BOOKED


@pytest.mark.parametrize(
    ("start", "minutes", "gpus", "field", "words"),
    [
        (-10, 60, 2, "date", "That time has passed"),
        (30, 5, 2, "minutes", "from 15 to 480 minutes"),
        (30, 9 * 60, 2, "minutes", "from 15 to 480 minutes"),
        (30, 60, 5, "gpus", "has 4 GPU(s); book at most 4"),
        (30, 60, 0, "gpus", "greater than or equal to 1"),
        (30, 10**15, 2, "minutes", "less than or equal to 100000"),
        (60 * 24 * 200, 60, 2, "date", "at most 180 days ahead"),
    ],
)
def test_the_form_refuses_a_bad_booking_with_the_reason(
    login, instructor, course, lab_cluster, start, minutes, gpus, field, words
):
    url = reverse("courses:lab_sessions", args=[course.slug])
    response = login(instructor).post(url, form_data(lab_cluster, at(start), minutes, gpus))
    assert response.status_code == 400
    assert words in " ".join(response.context["form"].errors[field])
    assert not LabSession.objects.exists()


@pytest.mark.parametrize(
    ("now", "refused"),
    [("16:03:00", False), ("16:04:00.07", False), ("16:04:59", False), ("16:05:00", True), ("17:03:00", True)],
)
def test_the_current_minute_sent_a_little_later_still_books_a_session_that_starts_now(
    course, lab_cluster, now, refused
):
    """The instructor types the minute it is (the form books whole minutes) and sends the form in the next one: the
    session starts now. Only a minute that ended more than PAST_GRACE ago has passed."""
    minute = timezone.localtime().replace(hour=16, minute=3, second=0, microsecond=0)
    sent = datetime.combine(minute.date(), time.fromisoformat(now), minute.tzinfo)
    booking = lab_sessions.Booking(cluster=lab_cluster, starts_at=minute, minutes=60, gpus=1)
    errors = lab_sessions.booking_errors(course, booking, now=sent)
    assert ("starts_at" in errors) is refused, errors
    if refused:
        assert errors["starts_at"] == f"That time has passed ({minute:%a %d %b} 16:03). Book a start from now on."


def test_an_overlapping_session_of_the_course_is_refused(login, instructor, course, lab_cluster, sent):
    first = book(course, lab_cluster, at(30), 60, 1)
    url = reverse("courses:lab_sessions", args=[course.slug])
    response = login(instructor).post(url, form_data(lab_cluster, at(60), 60, 1))
    assert response.status_code == 400
    assert "already has a session" in " ".join(response.context["form"].errors["date"])
    assert list(LabSession.objects.all()) == [first]


def test_another_courses_session_leaves_only_the_free_gpus(course, other_course, lab_cluster, sent):
    book(other_course, lab_cluster, at(30), 60, 3)
    with pytest.raises(lab_sessions.BookingRefused) as refused:
        book(course, lab_cluster, at(60), 60, 2)
    assert "hold 3 of the cluster's 4 GPUs" in refused.value.errors["gpus"]
    assert "Book at most 1" in refused.value.errors["gpus"]
    assert book(course, lab_cluster, at(60), 60, 1).gpus == 1  # what is left fits
    assert book(course, lab_cluster, at(120), 60, 4) is not None  # and after both sessions, every GPU


def test_a_cluster_whose_admin_did_not_allow_sessions_is_refused(course, cluster, sent):
    with pytest.raises(lab_sessions.BookingRefused) as refused:
        book(course, cluster, at(30))
    assert "an admin must allow them" in refused.value.errors["cluster"]


def test_the_page_says_so_when_no_cluster_takes_sessions(login, instructor, course, cluster):
    page = login(instructor).get(reverse("courses:lab_sessions", args=[course.slug])).content.decode()
    assert "None of this course's clusters takes lab sessions" in page


# -- booking: the API -------------------------------------------------------------------------------------------


def api_body(cluster, start, minutes=60, gpus=2):
    return {"cluster": cluster.name, "starts_at": start.isoformat(), "minutes": minutes, "gpus": gpus}


def test_the_api_books_lists_and_cancels(api_for, instructor, course, lab_cluster, sent):
    api = api_for(instructor)
    url = f"/api/v1/courses/{course.slug}/lab-sessions/"
    made = api.post(url, api_body(lab_cluster, at(30)), format="json")
    assert made.status_code == 201, made.content
    assert made.json()["state"] == "booked" and made.json()["reservation"].startswith("gpulab-hpc-")
    assert [s["id"] for s in api.get(url).json()] == [made.json()["id"]]
    cancelled = api.delete(f"{url}{made.json()['id']}/")
    assert cancelled.status_code == 200 and cancelled.json()["state"] == "cancelled"
    assert api.delete(f"{url}{made.json()['id']}/").status_code == 409


@pytest.mark.parametrize(
    ("body", "field", "words"),
    [
        ({"starts_at": -10}, "starts_at", "That time has passed"),
        ({"minutes": 600}, "minutes", "from 15 to 480 minutes"),
        ({"gpus": 8}, "gpus", "book at most 4"),
        ({"gpus": "four"}, "gpus", "valid integer"),
        ({"cluster": "elsewhere"}, "cluster", "Not one of the course's clusters"),
        ({"starts_at": "tomorrow"}, "starts_at", "Datetime has wrong format"),
    ],
)
def test_the_api_refuses_a_bad_booking_with_the_reason(api_for, instructor, course, lab_cluster, body, field, words):
    data = api_body(lab_cluster, at(30))
    data.update({k: (at(v).isoformat() if k == "starts_at" and isinstance(v, int) else v) for k, v in body.items()})
    response = api_for(instructor).post(f"/api/v1/courses/{course.slug}/lab-sessions/", data, format="json")
    assert response.status_code == 400
    assert words in str(response.json()[field])
    assert not LabSession.objects.exists()


# -- who sees what ----------------------------------------------------------------------------------------------


def test_another_courses_instructor_cannot_see_or_cancel_a_session(
    login, api_for, other_instructor, course, lab_cluster, sent
):
    session = book(course, lab_cluster, at(30))
    page = reverse("courses:lab_sessions", args=[course.slug])
    cancel = reverse("courses:lab_session_cancel", args=[course.slug, session.pk])
    assert login(other_instructor).get(page).status_code == 404
    assert login(other_instructor).post(cancel).status_code == 404
    api = api_for(other_instructor)
    assert api.get(f"/api/v1/courses/{course.slug}/lab-sessions/").status_code == 404
    assert api.delete(f"/api/v1/courses/{course.slug}/lab-sessions/{session.pk}/").status_code == 404
    # Through their own course's address, the other course's session is missing too.
    other_cancel = reverse("courses:lab_session_cancel", args=["ml", session.pk])
    assert login(other_instructor).post(other_cancel).status_code == 404
    session.refresh_from_db()
    assert session.state == LabSessionState.BOOKED


def test_a_student_cannot_book_or_cancel_but_sees_that_a_session_is_on(
    login, api_for, alice, course, lab_cluster, sleep_template, sent
):
    session = book(course, lab_cluster, at(0))
    LabSession.objects.filter(pk=session.pk).update(state=LabSessionState.HELD, gpus_held=4)
    assert login(alice).get(reverse("courses:lab_sessions", args=[course.slug])).status_code == 404
    cancel = reverse("courses:lab_session_cancel", args=[course.slug, session.pk])
    assert login(alice).post(cancel).status_code == 404
    assert api_for(alice).post(f"/api/v1/courses/{course.slug}/lab-sessions/", {}, format="json").status_code == 404
    catalog = login(alice).get(reverse("jobs:catalog")).content.decode()
    assert "Lab session on now" in catalog and "4 GPUs held for this course" in catalog
    launch = login(alice).get(reverse("jobs:launch", args=[course.slug, sleep_template.slug])).content.decode()
    assert "Your jobs on Local SLURM go into the course's reserved GPUs" in html.unescape(launch)


def test_the_catalog_asks_one_query_for_every_courses_session(
    login, alice, course, other_course, lab_cluster, django_assert_max_num_queries, sent
):
    Enrollment.objects.create(course=other_course, user=alice, role=Role.STUDENT)
    book(course, lab_cluster, at(30), gpus=1)
    book(other_course, lab_cluster, at(30), gpus=1)
    client = login(alice)
    client.get(reverse("jobs:catalog"))
    with django_assert_max_num_queries(12):
        page = client.get(reverse("jobs:catalog")).content.decode()
    assert page.count("Next lab session") == 2


def test_the_class_dashboard_counts_down_to_the_end_and_shows_the_gpus_held(
    login, instructor, course, lab_cluster, sent
):
    session = book(course, lab_cluster, at(0), 60, 2)
    LabSession.objects.filter(pk=session.pk).update(state=LabSessionState.HELD, gpus_held=4, nodes="vm")
    page = login(instructor).get(reverse("telemetry:dashboard", args=[course.slug])).content.decode()
    assert "Lab session on now" in page and "4 GPUs held for this course" in page
    assert f'data-countdown-to="{session.ends_at.isoformat()}"' in page


# -- moves and the cluster side ---------------------------------------------------------------------------------


def test_cancel_is_conditional_audited_and_asks_to_remove_the_reservation(
    login, instructor, course, lab_cluster, sent, django_capture_on_commit_callbacks
):
    session = book(course, lab_cluster, at(30))
    sent.clear()
    cancel = reverse("courses:lab_session_cancel", args=[course.slug, session.pk])
    with django_capture_on_commit_callbacks(execute=True):
        assert login(instructor).post(cancel).status_code == 302
        login(instructor).post(cancel)  # a second click changes nothing
    session.refresh_from_db()
    assert session.state == LabSessionState.CANCELLED
    assert sent == [(lab_sessions.REMOVE_RESERVATION, (session.pk,))]
    events = list(session.events.values_list("from_state", "to_state", "actor"))
    assert events == [("", "booked", None), ("booked", "cancelled", instructor.pk)]


def test_making_a_reservation_twice_finds_the_first_and_never_makes_two(course, lab_cluster, fake_backend, sent):
    session = book(course, lab_cluster, at(0))
    assert lab_reservations.make(session.pk) == "held"
    LabSession.objects.filter(pk=session.pk).update(state=LabSessionState.BOOKED)  # as if the first answer was lost
    assert lab_reservations.make(session.pk) == "held"
    assert fake_backend.reservation_calls == [f"create {session.reservation_name}"]
    session.refresh_from_db()
    assert (session.state, session.gpus_held, session.nodes) == ("held", 4, "fake01")


def test_slurms_refusal_is_kept_in_words_on_the_session(course, lab_cluster, fake_backend, sent):
    fake_backend.refuse_reservations = refusal("Error creating the reservation: Invalid user id")
    session = book(course, lab_cluster, at(0))
    assert lab_reservations.make(session.pk) == "refused"
    session.refresh_from_db()
    assert session.state == LabSessionState.REFUSED
    assert "must make it a SLURM operator" in session.message and "(SLURM: Error creating" in session.message


def test_an_unreachable_cluster_is_retried_not_refused(course, lab_cluster, fake_backend, sent):
    fake_backend.down = True
    session = book(course, lab_cluster, at(0))
    with pytest.raises(Exception, match="down"):
        lab_reservations.make(session.pk)
    session.refresh_from_db()
    assert session.state == LabSessionState.BOOKED


def test_the_sweep_ends_past_sessions_and_removes_their_reservations(course, lab_cluster, fake_backend, sent):
    session = book(course, lab_cluster, at(0), 15)
    lab_reservations.make(session.pk)
    report = lab_reservations.sweep(now=session.ends_at + timedelta(seconds=1))
    assert report.ended == [session.pk]
    assert lab_reservations.remove(session.pk) == "removed"
    assert lab_reservations.remove(session.pk) == "nothing"
    assert fake_backend.reservation_calls[-1] == f"delete {session.reservation_name}"


def test_a_job_launched_during_the_courses_held_session_goes_into_its_reservation(
    course, other_course, lab_cluster, make_job, alice, sent
):
    session = book(course, lab_cluster, at(0))
    job = make_job(alice)
    assert submit_request(job).reservation == ""  # booked, not yet held
    LabSession.objects.filter(pk=session.pk).update(state=LabSessionState.HELD)
    assert submit_request(job).reservation == session.reservation_name
    job.course = other_course
    assert submit_request(job).reservation == ""  # another course's job stays out
    LabSession.objects.filter(pk=session.pk).update(starts_at=at(-60), ends_at=at(-1))
    job.course = course
    assert submit_request(job).reservation == ""  # after the session


def test_the_reservation_is_for_the_identities_the_courses_jobs_run_as(course, lab_cluster, alice):
    assert lab_reservations.cluster_users(course, lab_cluster) == ("labshared",)  # the shared user, never labsvc
    from clusters.identity import set_cluster_username

    set_cluster_username(alice, "labalice")
    lab_cluster.run_as = "sudo"
    assert lab_reservations.cluster_users(course, lab_cluster) == ("labalice",)


# -- the scontrol words -----------------------------------------------------------------------------------------


def test_2205_reserves_whole_nodes_and_later_releases_reserve_gpus():
    assert release("slurm-wlm 22.05.8").reserves_gpus_as_tres is False
    assert release("slurm 23.02.1").reserves_gpus_as_tres is True
    assert release("garbage").reserves_gpus_as_tres is False
    now = timezone.now()
    request = ReservationRequest("gpulab-hpc-1", now + timedelta(minutes=5), 60, 2, ("labalice", "labbob"))
    nodes = nodes_for([NodeInfo("a", "a", 2, "IDLE"), NodeInfo("b", "b", 4, "MIXED"), NodeInfo("c", "c", 8, "DOWN")], 2)
    argv = create_argv(request, now=now, nodes=nodes)
    assert argv[:4] == ["scontrol", "create", "reservation", "ReservationName=gpulab-hpc-1"]
    assert "StartTime=now+300seconds" in argv and "Duration=60" in argv and "Nodes=b" in argv
    assert "Users=labalice,labbob" in argv
    assert create_argv(request, now=now, nodes=None)[-1] == "TRES=gres/gpu=2"


def test_values_that_are_not_names_never_reach_scontrol():
    now = timezone.now()
    for bad in [
        ReservationRequest("gpulab-x; rm -rf /", now, 60, 1, ("labsvc",)),
        ReservationRequest("gpulab-x", now, 60, 1, ("labsvc,root",)),
        ReservationRequest("gpulab-x", now, 60, 1, ()),
    ]:
        with pytest.raises(ReservationRefused):
            create_argv(bad, now=now, nodes=None)
    with pytest.raises(ReservationRefused, match="on nodes that are up"):
        nodes_for([NodeInfo("a", "a", 4, "DRAIN")], 1)


def test_scontrol_show_reservation_is_read_with_the_gpus_of_its_nodes():
    line = "ReservationName=gpulab-hpc-3 StartTime=2026-11-23T18:18:29 Nodes=vm NodeCnt=1 TRES=cpu=16 Users=labsvc"
    held = parse_show(line, lambda hosts: 4 if hosts == "vm" else 0)
    assert (held.name, held.nodes, held.gpus) == ("gpulab-hpc-3", "vm", 4)
    assert parse_show("Reservation gpulab-x not found", lambda hosts: 0) is None


def test_the_page_follows_a_booking_until_the_cluster_answers(login, instructor, course, lab_cluster, sent):
    session = book(course, lab_cluster, at(30))
    url = reverse("courses:lab_sessions", args=[course.slug])
    assert 'hx-trigger="every 3s"' in login(instructor).get(url).content.decode()
    LabSession.objects.filter(pk=session.pk).update(state=LabSessionState.HELD, gpus_held=4, nodes="vm")
    page = login(instructor).get(url).content.decode()
    assert 'hx-trigger="every 3s"' not in page and "holds 4: every GPU of vm" in page


def test_admins_read_sessions_and_their_moves_but_change_nothing(login, admin_user, course, lab_cluster, sent):
    session = book(course, lab_cluster, at(30), actor=admin_user)
    listing = login(admin_user).get("/admin/courses/labsession/")
    assert listing.status_code == 200 and "HPC Lab" in listing.content.decode()
    detail = login(admin_user).get(f"/admin/courses/labsession/{session.pk}/change/").content.decode()
    assert "Booked 2 GPU(s) on Local SLURM." in detail
    assert login(admin_user).post(f"/admin/courses/labsession/{session.pk}/delete/", {"post": "yes"}).status_code == 403


def test_a_kind_that_cannot_hold_sessions_is_refused_the_setting(lab_cluster):
    from django.core.exceptions import ValidationError

    lab_cluster.kind, lab_cluster.api_url = "slurm-rest", "http://127.0.0.1:6820"
    with pytest.raises(ValidationError, match="cannot hold lab sessions"):
        lab_cluster.clean()


def test_jobs_slurm_held_when_it_dropped_the_sessions_reservation_are_the_ones_released():
    from clusters.backends.slurm_family.reservations import held_for, release_argv

    listed = "17|Reservation gpulab-hpc-3 was deleted\n18|Reservation gpulab-hpc-30 was deleted\n19|JobHeldUser\n"
    assert held_for(listed, "gpulab-hpc-3") == ["17"]
    assert release_argv(["17", "21"]) == ["scontrol", "release", "17,21"]


def test_a_cluster_whose_gpus_are_not_known_yet_says_what_to_do(course, lab_cluster, sent):
    lab_cluster.partition_limits = {}
    lab_cluster.save()
    with pytest.raises(lab_sessions.BookingRefused) as refused:
        book(course, lab_cluster, at(30))
    assert "Ask an admin to run Test connection" in refused.value.errors["gpus"]


def test_a_session_cancelled_while_its_reservation_is_made_has_it_removed_at_once(
    course, lab_cluster, fake_backend, instructor, monkeypatch, sent
):
    session = book(course, lab_cluster, at(0))
    made = fake_backend.create_reservation

    def create_while_cancelled(self, request):
        held = made(self, request)
        lab_sessions.cancel(LabSession.objects.get(pk=session.pk), actor=instructor)  # the instructor, meanwhile
        return held

    monkeypatch.setattr(fake_backend, "create_reservation", create_while_cancelled)
    assert lab_reservations.make(session.pk) == "cancelled"
    session.refresh_from_db()
    assert session.state == LabSessionState.CANCELLED and session.removed_at is not None
    assert fake_backend.reservation_calls == [
        f"create {session.reservation_name}",
        f"delete {session.reservation_name}",
    ]
    assert fake_backend.reservations == {}
