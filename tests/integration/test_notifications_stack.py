"""Notifications on the real stack: a SLURM job over sshd fails, the Celery worker mails its owner through the
session's SMTP server and posts to the course's webhook (a local HTTP receiver), each once; a webhook that hangs is
retried and given up while the mail has already gone."""

from __future__ import annotations

import pytest

from notifications.events import Channel, Event
from notifications.models import CourseWebhook, Notification
from tests.smtp import body
from tests.webhook_receiver import WebhookReceiver

from .conftest import wait_for
from .jobs_api import launch

NOTIFY_ENV = {
    "NOTIFY_WEBHOOK_ALLOWED_NETWORKS": "127.0.0.1/32",  # the local receiver, allowed explicitly
    "NOTIFY_WEBHOOK_RETRIES": "2",
    "NOTIFY_WEBHOOK_RETRY_DELAY_SECONDS": "3",
    "NOTIFY_WEBHOOK_TIMEOUT_SECONDS": "2",
}


@pytest.fixture
def notify_worker(worker):
    """The session's worker, restarted with short webhook retries; back to normal afterwards."""
    worker.stop()
    worker.start(**NOTIFY_ENV)
    yield worker
    worker.stop()
    worker.start()


@pytest.fixture
def receiver():
    receiver = WebhookReceiver()
    yield receiver
    receiver.stop()


def settled(channel: str):
    """Every row of the channel sent or given up (none queued or being retried)."""
    rows = Notification.objects.filter(channel=channel)
    return rows.exists() and not rows.filter(status=Notification.Status.QUEUED).exists()


@pytest.mark.timeout(240)
def test_a_failed_job_mails_its_owner_and_posts_to_the_course_webhook_once_each(
    notify_worker, api_for, alice, course, cluster, sleep_template, job_state, smtp_server, receiver
):
    smtp_server.inbox.clear()
    alice.email = "alice@example.edu"
    alice.save()
    CourseWebhook.objects.create(course=course, url=receiver.url, events=[Event.FAILED])
    job = launch(api_for, alice, exit_code=3, message="last-words-before-failing")
    job_state(job, "failed")

    (mail,) = smtp_server.inbox.wait_for("alice@example.edu", timeout=60)
    assert "failed" in mail["Subject"] and "Exit code: 3" in body(mail)
    assert "last-words-before-failing" in body(mail)  # the log's last lines, read over SSH by the worker
    assert "/notifications/unsubscribe/" in mail["List-Unsubscribe"]
    receiver.wait_for(1)
    assert "failed" in receiver.bodies[0]["text"] and str(job.pk)[:8] in receiver.bodies[0]["text"]

    wait_for(lambda: settled(Channel.EMAIL) and settled(Channel.WEBHOOK), what="every notification to settle")
    assert len(smtp_server.inbox.messages("alice@example.edu")) == 1 and len(receiver.bodies) == 1
    assert Notification.objects.filter(job=job, event=Event.FAILED, channel=Channel.BROWSER).count() == 1


@pytest.mark.timeout(240)
def test_a_hanging_webhook_is_retried_then_given_up_and_never_holds_up_the_mail(
    notify_worker, api_for, alice, course, cluster, sleep_template, job_state, smtp_server, receiver
):
    smtp_server.inbox.clear()
    alice.email = "alice@example.edu"
    alice.save()
    receiver.hang, receiver.status = 4, 503  # past the 2 s timeout, and an error when it does answer
    CourseWebhook.objects.create(course=course, url=receiver.url, events=[Event.FAILED])
    job = launch(api_for, alice, exit_code=1)
    job_state(job, "failed")

    smtp_server.inbox.wait_for("alice@example.edu", timeout=60)
    hook = Notification.objects.get(job=job, channel=Channel.WEBHOOK)
    assert hook.status == Notification.Status.QUEUED  # still being tried when the mail was delivered

    wait_for(lambda: settled(Channel.WEBHOOK), timeout=90, what="the webhook to be given up")
    hook.refresh_from_db()
    assert hook.status == Notification.Status.FAILED and hook.tries == 3 and "3 tries" in hook.error
    assert receiver.tries == 3 and receiver.bodies == []
    assert len(smtp_server.inbox.messages("alice@example.edu")) == 1
