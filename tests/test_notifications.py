"""notify(): who is told, once; the mails and webhook posts it sends (a real SMTP server, a local HTTP receiver);
webhook URLs that reach inside the network refused; state moves notifying once; unsubscribe tokens."""

from __future__ import annotations

import pytest
from django.core import signing

from core.choices import JobState, SessionKind
from jobs.states import transition
from notifications import notify
from notifications.events import Channel, Event
from notifications.models import CourseWebhook, Notification, Preference
from notifications.unsubscribe import read, token
from notifications.webhook_urls import UnsafeURL, check
from tests.test_rightsize import big_template, oversized  # noqa: F401  (fixtures)
from tests.webhook_receiver import WebhookReceiver

pytestmark = pytest.mark.django_db


@pytest.fixture
def receiver(settings):
    settings.NOTIFY_WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.1/32"]  # the local receiver, allowed explicitly
    receiver = WebhookReceiver()
    yield receiver
    receiver.stop()


def rows(**filters):
    return list(Notification.objects.filter(**filters).values_list("channel", "event", "status"))


def with_email(user, address=None):
    user.email = address or f"{user.username}@example.edu"
    user.save()
    return user


def test_one_message_per_job_and_event_however_often_notify_is_called(alice, make_job):
    with_email(alice)
    job = make_job(alice)
    assert notify(alice, Event.FAILED, job=job) == 2  # email and browser, on by default
    assert notify(alice, Event.FAILED, job=job) == 0
    assert sorted(rows(user=alice)) == [("browser", "failed", "queued"), ("email", "failed", "queued")]


def test_started_is_not_mailed_unless_the_person_asks_for_it(alice, make_job):
    with_email(alice)
    job = make_job(alice)
    notify(alice, Event.STARTED, job=job)
    assert rows(user=alice, channel=Channel.EMAIL) == []
    Preference.objects.create(user=alice, event=Event.FAILED, channel=Channel.EMAIL, enabled=False)
    notify(alice, Event.FAILED, job=job)
    assert rows(user=alice, channel=Channel.EMAIL) == []


def test_an_event_without_a_job_needs_a_key(alice):
    with pytest.raises(ValueError):
        notify(alice, Event.BUDGET_80)
    assert notify(alice, Event.BUDGET_80, context={"key": "hpc:week-47", "text": "8 of 10 GPU-hours used."}) == 1


def test_an_inactive_account_is_told_nothing(alice):
    alice.is_active = False
    alice.save()
    assert notify(alice, Event.BUDGET_80, context={"key": "w47"}) == 0


def test_a_course_target_reaches_its_instructors_not_its_students(instructor, alice, course):
    notify(course, Event.DIGEST, context={"key": "idle:13h", "text": "5 students idle"})
    assert rows(user=instructor) == [("browser", "digest", "queued")] and rows(user=alice) == []


def test_beyond_the_hourly_limit_messages_are_kept_as_throttled(alice, settings):
    settings.NOTIFY_MAX_PER_HOUR = 2
    for week in range(3):
        notify(alice, Event.BUDGET_80, context={"key": f"week-{week}"})
    assert [status for *_, status in rows(user=alice)].count("throttled") == 1


def test_the_mail_reaches_the_smtp_server_once_with_an_unsubscribe_link(alice, make_job, inbox):
    from workers.notify import send_email

    with_email(alice)
    job = make_job(alice)
    notify(alice, Event.FAILED, job=job)
    row = Notification.objects.get(user=alice, channel=Channel.EMAIL)
    assert send_email.apply(args=[row.pk]).get() == "sent"
    assert send_email.apply(args=[row.pk]).get() == "not needed"
    (message,) = inbox.wait_for("alice@example.edu")
    assert "failed" in message["Subject"] and "/notifications/unsubscribe/" in message["List-Unsubscribe"]
    assert job.get_absolute_url() in message.get_body().get_content()


def test_the_course_webhook_gets_slack_json_once(instructor, alice, course, make_job, receiver):
    from workers.notify import send_webhook

    CourseWebhook.objects.create(course=course, url=receiver.url, events=[Event.FAILED])
    job = make_job(alice)
    notify(alice, Event.FAILED, job=job)
    notify(alice, Event.STARTED, job=job)  # not among the webhook's events
    (row,) = Notification.objects.filter(channel=Channel.WEBHOOK)
    assert send_webhook.apply(args=[row.pk]).get() == "sent"
    assert send_webhook.apply(args=[row.pk]).get() == "not needed"
    assert len(receiver.bodies) == 1 and "failed" in receiver.bodies[0]["text"]


def test_a_dead_webhook_is_retried_then_given_up(alice, course, make_job, receiver, settings):
    from workers.notify import send_webhook

    settings.NOTIFY_WEBHOOK_RETRIES = 2
    receiver.status = 503
    CourseWebhook.objects.create(course=course, url=receiver.url, events=[Event.FAILED])
    notify(alice, Event.FAILED, job=make_job(alice))
    row = Notification.objects.get(channel=Channel.WEBHOOK)
    assert send_webhook.apply(args=[row.pk]).get() == "gave up"
    row.refresh_from_db()
    assert receiver.tries == 3 and row.status == Notification.Status.FAILED and "503" in row.error


@pytest.mark.parametrize(
    "url",
    [
        "ftp://hooks.example.com/x",
        "javascript:alert(1)",
        "http://127.0.0.1:8000/admin/",
        "http://localhost/x",
        "http://169.254.169.254/latest/meta-data/",
        "http://10.1.2.3/hook",
        "http://192.168.0.10/hook",
        "http://[::1]/hook",
        "http://[fe80::1]/hook",
        "http://[::ffff:127.0.0.1]/hook",
        "https://user:pw@hooks.slack.com/x",
        "https://no-such-host.invalid/x",
    ],
)
def test_webhook_urls_that_reach_inside_the_network_are_refused(url):
    with pytest.raises(UnsafeURL):
        check(url)


def test_an_admin_may_allow_a_network(settings):
    settings.NOTIFY_WEBHOOK_ALLOWED_NETWORKS = ["10.20.0.0/16"]
    assert check("http://10.20.1.2/hooks/x") == "http://10.20.1.2/hooks/x"
    with pytest.raises(UnsafeURL):
        check("http://10.21.1.2/hooks/x")


def test_a_public_address_is_accepted():
    assert check("https://93.184.215.14/hooks/x")


def test_a_job_failing_notifies_its_owner_once(alice, make_job):
    job = make_job(alice)
    assert transition(job, JobState.SUBMITTING) and transition(job, JobState.RUNNING)
    assert transition(job, JobState.FAILED, exit_code=3)
    assert sorted(rows(user=alice)) == [("browser", "failed", "queued"), ("browser", "started", "queued")]


def test_a_jupyterlab_session_s_start_points_the_student_to_its_session_page(alice, make_job, sleep_template):
    batch, notebook = make_job(alice), make_job(alice)
    assert transition(batch, JobState.SUBMITTING) and transition(batch, JobState.RUNNING)
    sleep_template.session = SessionKind.JUPYTERLAB  # the two jobs share it: the batch job has started already
    sleep_template.save()
    notebook.refresh_from_db()
    assert transition(notebook, JobState.SUBMITTING) and transition(notebook, JobState.RUNNING)
    told = Notification.objects.get(user=alice, job=notebook, event=Event.STARTED)
    assert told.subject.endswith("is starting") and "JupyterLab is usually ready" in told.text
    assert told.url.endswith(f"/jobs/{notebook.pk}/jupyter/")
    plain = Notification.objects.get(user=alice, job=batch, event=Event.STARTED)
    assert plain.url.endswith(f"/jobs/{batch.pk}/") and plain.subject.endswith("started")


def test_a_cancel_by_the_owner_is_not_announced_but_one_by_the_instructor_is(alice, instructor, make_job):
    mine, theirs = make_job(alice), make_job(alice)
    transition(mine, JobState.CANCELLED, actor=alice)
    transition(theirs, JobState.CANCELLED, actor=instructor)
    (row,) = Notification.objects.filter(user=alice, event=Event.CANCELLED_BY_OTHER)
    assert row.job_id == theirs.pk and "ines" in row.text


def test_an_unsubscribe_token_names_its_user_and_event_and_cannot_be_forged(alice):
    assert read(token(alice.pk, Event.FAILED)) == (alice.pk, "failed")
    with pytest.raises(signing.BadSignature):
        read(token(alice.pk, Event.FAILED)[:-2] + "xx")
    with pytest.raises(signing.BadSignature):
        read(signing.dumps({"u": alice.pk, "e": "failed"}))  # signed, but not for unsubscribing


def test_ten_minutes_before_its_time_limit_the_owner_is_told_once(alice, make_job):
    from datetime import timedelta

    from notifications.reminders import time_limit_soon

    job = make_job(alice, time_minutes=10)
    assert transition(job, JobState.SUBMITTING) and transition(job, JobState.RUNNING)
    assert time_limit_soon(job.started_at - timedelta(minutes=1)) == 0
    assert time_limit_soon(job.started_at + timedelta(minutes=1)) == 1
    assert time_limit_soon(job.started_at + timedelta(minutes=2)) == 0
    (row,) = Notification.objects.filter(user=alice, event=Event.TIME_LIMIT_SOON)
    assert "reaches its time limit in 9 minute(s)" in row.text


def test_instructors_get_one_hourly_digest_of_idle_students(alice, bob, instructor, course, make_job):
    from datetime import timedelta

    from django.utils import timezone

    from notifications.reminders import idle_digest

    for student in (alice, bob):
        notify(student, Event.IDLE_WARNING, job=make_job(student))
    next_hour = timezone.now() + timedelta(hours=1)
    assert idle_digest(next_hour) == 1 and idle_digest(next_hour) == 1
    (row,) = Notification.objects.filter(user=instructor, event=Event.DIGEST)
    assert row.text.startswith("2 student(s) of HPC Lab") and "alice, bob" in row.text
    assert row.url.endswith(f"/courses/{course.slug}/dashboard/")


def test_a_finished_jobs_mail_carries_its_right_size_summary(alice, oversized, inbox):  # noqa: F811
    from workers.notify import send_email

    with_email(alice)
    Preference.objects.create(user=alice, event=Event.FINISHED, channel=Channel.EMAIL, enabled=True)
    notify(alice, Event.FINISHED, job=oversized)
    send_email.apply(args=[Notification.objects.get(channel=Channel.EMAIL).pk])
    (message,) = inbox.wait_for("alice@example.edu")
    text = message.get_body().get_content()
    assert "Requested against used:" in text and "GPUs: asked 4" in text


def test_a_budget_message_without_a_job_reaches_the_course_webhook_named_in_its_context(alice, course):
    CourseWebhook.objects.create(course=course, url="https://93.184.215.14/hooks/x", events=[Event.BUDGET_80])
    assert notify(alice, Event.BUDGET_80, context={"key": f"{course.pk}:w47", "course": course}) == 2
    assert Notification.objects.get(channel=Channel.WEBHOOK).course == course


def test_a_message_that_cannot_be_queued_never_stops_a_jobs_move(alice, make_job, monkeypatch):
    from notifications import service

    def broken(*args, **kwargs):
        raise RuntimeError("the notification tables are unreachable")

    monkeypatch.setattr(service, "notify", broken)
    job = make_job(alice)
    assert transition(job, JobState.SUBMITTING) and transition(job, JobState.RUNNING)
    assert job.state == JobState.RUNNING and not Notification.objects.exists()
