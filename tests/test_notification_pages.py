"""The notification pages: a person's choices, one-click unsubscribe, the browser feed, and a course's webhook
(anonymous, wrong user, right user for each)."""

from __future__ import annotations

import pytest
from django.test import Client

from notifications import notify
from notifications.events import Channel, Event
from notifications.models import CourseWebhook, Notification, Preference
from notifications.unsubscribe import token

pytestmark = pytest.mark.django_db


def test_anonymous_people_are_sent_to_sign_in_or_refused(client, course):
    assert client.get("/notifications/").status_code == 302
    assert client.get(f"/notifications/course/{course.slug}/webhook/").status_code == 302
    assert client.post("/notifications/browser/").status_code == 403


def test_choices_are_saved_per_event_and_channel(login, alice):
    client = login(alice)
    page = client.get("/notifications/").content.decode()
    assert 'name="failed__email" id="id_failed__email" checked' in page and "digest" not in page
    client.post("/notifications/", {"started__email": "on", "failed__browser": "on"})
    chosen = dict(((p.event, p.channel), p.enabled) for p in Preference.objects.filter(user=alice))
    assert chosen[("started", "email")] and chosen[("failed", "browser")] and not chosen[("failed", "email")]


def test_instructors_may_choose_the_digest(login, instructor):
    assert "Course digest" in login(instructor).get("/notifications/").content.decode()


def test_one_click_unsubscribe_turns_that_mail_off_without_signing_in(alice):
    link = f"/notifications/unsubscribe/{token(alice.pk, Event.FAILED)}/"
    anonymous = Client()
    assert "Stop these mails?" in anonymous.get(link).content.decode()
    assert not Preference.objects.exists()  # opening the link (a mail scanner) changes nothing
    assert "no more mails" in anonymous.post(link).content.decode()
    assert not Preference.objects.get(user=alice, event=Event.FAILED, channel=Channel.EMAIL).enabled


def test_a_damaged_unsubscribe_link_is_not_found(client, alice):
    assert client.post(f"/notifications/unsubscribe/{token(alice.pk, Event.FAILED)}x/").status_code == 404
    assert not Preference.objects.exists()


def test_the_browser_feed_shows_each_of_my_messages_once_and_nobody_elses(login, alice, bob):
    notify(alice, Event.BUDGET_80, context={"key": "w47", "text": "8 of 10 GPU-hours used."})
    assert login(bob).post("/notifications/browser/").json() == {"notifications": []}
    client = login(alice)
    (item,) = client.post("/notifications/browser/").json()["notifications"]
    assert item["title"] == "GPU-hour budget 80 % used" and item["body"] == "8 of 10 GPU-hours used."
    assert client.post("/notifications/browser/").json() == {"notifications": []}
    assert client.get("/notifications/browser/").status_code == 405


def test_a_student_cannot_see_or_set_the_course_webhook(login, alice, carol, course):
    url = f"/notifications/course/{course.slug}/webhook/"
    assert login(alice).get(url).status_code == 404
    assert login(carol).post(url, {"url": "https://93.184.215.14/x", "enabled": "on"}).status_code == 404
    assert not CourseWebhook.objects.exists()


def test_the_instructor_sets_the_webhook_and_a_loopback_url_is_refused(login, instructor, course):
    client = login(instructor)
    url = f"/notifications/course/{course.slug}/webhook/"
    assert "No webhook yet" in client.get(url).content.decode()
    refused = client.post(url, {"url": "http://127.0.0.1:6379/", "events": ["failed"], "enabled": "on"})
    assert refused.status_code == 400 and "loopback" in refused.content.decode()
    saved = client.post(url, {"url": "https://93.184.215.14/hooks/x", "events": ["failed", "digest"], "enabled": "on"})
    assert saved.status_code == 302
    hook = CourseWebhook.objects.get(course=course)
    assert hook.events == ["failed", "digest"] and hook.updated_by == instructor
    client.post(url, {"remove": "1"})
    assert not CourseWebhook.objects.exists()


def test_browser_rows_of_other_people_are_never_marked_shown(login, alice, bob):
    notify(bob, Event.BUDGET_80, context={"key": "w47"})
    login(alice).post("/notifications/browser/")
    assert Notification.objects.get(user=bob).status == Notification.Status.QUEUED


def test_the_webhook_page_lists_the_last_posts_with_what_the_webhook_answered(login, instructor, course):
    CourseWebhook.objects.create(course=course, url="https://93.184.215.14/hooks/x", events=["digest"])
    notify(course, Event.DIGEST, context={"key": "idle:1", "text": "2 students idle"})
    Notification.objects.filter(channel=Channel.WEBHOOK).update(
        status=Notification.Status.FAILED, error="Gave up after 5 tries: The webhook answered 503."
    )
    page = login(instructor).get(f"/notifications/course/{course.slug}/webhook/").content.decode()
    assert 'id="webhook-posts"' in page and "answered 503" in page and "Gave up" in page


def test_admins_see_deliveries_read_only(client, admin_user, alice):
    notify(alice, Event.BUDGET_80, context={"key": "w47"})
    client.force_login(admin_user)
    assert client.get("/admin/notifications/notification/").status_code == 200
    row = Notification.objects.get()
    assert "budget_80" in client.get(f"/admin/notifications/notification/{row.pk}/change/").content.decode()
    assert client.get("/admin/notifications/notification/add/").status_code == 403
