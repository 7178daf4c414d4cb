"""Invitation and reset mails through a real SMTP server, and the links they carry: single use, expiring, one user.

The mail tasks run here in the test process (`.apply()`); tests/integration/test_invitation_browser.py runs them
in a real Celery worker.
"""

import re
import uuid

import pytest
from django.test import Client
from django.urls import reverse
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode

from courses.invitations import invite
from courses.models import Enrollment, Invitation
from passwords.tokens import invitation_tokens, reset_tokens
from tests.smtp import body, link_in
from workers import mail as mail_tasks

pytestmark = pytest.mark.django_db
NEW_PASSWORD = "violet-lantern-74-orbit"


@pytest.fixture
def zoe(course, django_user_model):
    """A student the roster created: an email, no usable password, never signed in."""
    user = django_user_model(username="zoe", email="zoe@example.edu")
    user.set_unusable_password()
    user.save()
    Enrollment.objects.create(course=course, user=user)
    return user


def invitation_mail(course, user, inbox, by=None):
    invite(course, user, invited_by=by)
    invitation = Invitation.objects.get(user=user)
    assert mail_tasks.send_invitation.apply(args=[invitation.pk]).get() == "done"
    [message] = inbox.wait_for(user.email, timeout=10)
    return message


def authenticate(*, username: str, password: str) -> bool:
    """Whether the login page lets this person in (a client of its own, so no session is shared)."""
    response = Client().post(reverse("login"), {"username": username, "password": password})
    return response.status_code == 302


def set_password(client, link: str, password: str = NEW_PASSWORD):
    """Follow a mailed link as a browser does (it moves the token into the session) and post a password."""
    path = link.removeprefix("http://localhost:8000")
    opened = client.get(path)
    if opened.status_code != 302:
        return opened
    return client.post(opened.url, {"new_password1": password, "new_password2": password})


def test_invitation_mail_names_the_course_and_carries_a_link(course, zoe, instructor, inbox):
    message = invitation_mail(course, zoe, inbox, by=instructor)
    assert message["To"] == "zoe@example.edu"
    assert message["Subject"] == "Set your password for HPC Lab on GPU Lab Portal"
    text = body(message)
    assert "ines added you to HPC Lab" in text and "Your username: zoe" in text and "for 7 days" in text
    assert link_in(message).startswith("http://localhost:8000/password/set/")
    assert Invitation.objects.get(user=zoe).sent_at is not None


def test_invited_student_sets_a_password_and_can_log_in(client, course, zoe, inbox):
    link = link_in(invitation_mail(course, zoe, inbox))
    response = set_password(client, link)
    assert response.status_code == 302 and response.url == reverse("login")
    assert authenticate(username="zoe", password=NEW_PASSWORD)
    page = client.get(reverse("login")).content.decode()
    assert "Your password is set. Log in as zoe." in page


def test_a_used_invitation_link_does_not_work_again(client, course, zoe, inbox):
    link = link_in(invitation_mail(course, zoe, inbox))
    set_password(client, link)
    again = set_password(client, link, "another-password-9876")
    assert again.status_code == 200 and "This link no longer works" in again.content.decode()
    assert authenticate(username="zoe", password=NEW_PASSWORD)


def test_an_expired_invitation_link_does_not_work(client, zoe, settings):
    tokens = invitation_tokens
    issued = tokens._num_seconds(tokens._now()) - settings.INVITATION_EXPIRY_SECONDS - 60
    token = tokens._make_token_with_timestamp(zoe, issued, settings.SECRET_KEY)
    uid = urlsafe_base64_encode(force_bytes(zoe.pk))
    response = client.get(reverse("passwords:set", args=[uid, token]))
    assert response.status_code == 200 and "This link no longer works" in response.content.decode()
    assert "Ask your instructor to send the invitation again" in response.content.decode()
    # One minute younger than the limit, the same kind of link works.
    fresh = tokens._make_token_with_timestamp(zoe, issued + 120, settings.SECRET_KEY)
    assert client.get(reverse("passwords:set", args=[uid, fresh])).status_code == 302


def test_a_link_for_one_user_does_not_set_another_users_password(client, course, zoe, alice, inbox):
    link = link_in(invitation_mail(course, zoe, inbox))
    token = link.rstrip("/").rsplit("/", 1)[1]
    forged = reverse("passwords:set", args=[urlsafe_base64_encode(force_bytes(alice.pk)), token])
    response = set_password(client, forged, "taken-over-1234")
    assert response.status_code == 200 and "This link no longer works" in response.content.decode()
    assert authenticate(username="alice", password="taken-over-1234") is False


def test_a_reset_link_is_not_taken_as_an_invitation(client, zoe):
    uid = urlsafe_base64_encode(force_bytes(zoe.pk))
    response = client.get(reverse("passwords:set", args=[uid, reset_tokens.make_token(zoe)]))
    assert "This link no longer works" in response.content.decode()


def test_an_invitation_stops_working_once_its_student_has_logged_in(client, course, zoe, inbox):
    link = link_in(invitation_mail(course, zoe, inbox))
    client.force_login(zoe)  # e.g. through the campus sign-on
    client.logout()
    assert "This link no longer works" in set_password(client, link).content.decode()


def test_the_mail_task_does_nothing_for_someone_who_signed_in_meanwhile(course, zoe, inbox, client):
    invite(course, zoe)
    client.force_login(zoe)
    assert mail_tasks.send_invitation.apply(args=[Invitation.objects.get().pk]).get() == "not needed"
    assert inbox.messages() == []


def test_a_relay_that_says_try_later_is_retried_and_a_refusal_is_not(course, zoe, inbox):
    # Run eagerly, a task's retries follow at once: the server counts every try.
    zoe.email = "zoe-defer@example.edu"
    zoe.save()
    invite(course, zoe)
    result = mail_tasks.send_invitation.apply(args=[Invitation.objects.get().pk])
    assert result.state == "FAILURE" and inbox.tries["zoe-defer@example.edu"] == mail_tasks.MAX_RETRIES + 1
    assert Invitation.objects.get().sent_at is None
    zoe.email = "zoe-refuse@example.edu"
    zoe.save()
    result = mail_tasks.send_invitation.apply(args=[Invitation.objects.get().pk])
    assert result.get() == "refused" and inbox.tries["zoe-refuse@example.edu"] == 1
    assert inbox.messages() == []
    assert Invitation.objects.get().refused == "550 5.1.1 No such user here"  # the roster page says so


def test_the_roster_page_shows_a_refused_invitation(client, course, zoe, instructor):
    Invitation.objects.create(course=course, user=zoe, refused="550 5.1.1 No such user here")
    client.force_login(instructor)
    page = client.get(reverse("courses:roster", args=[course.slug])).content.decode()
    assert 'mail refused</span> <span class="refused">550 5.1.1 No such user here</span>: check the address' in page


# -- Password reset -------------------------------------------------------------------------------------------------
def reset_request(client, email: str, ip: str):
    return client.post(reverse("passwords:reset"), {"email": email}, REMOTE_ADDR=ip)


def fresh_ip() -> str:
    """Each test its own client address: the request counters live in the shared cache."""
    n = uuid.uuid4().int
    return f"10.{n % 250}.{n // 250 % 250}.{n // 62500 % 250 + 1}"


def test_reset_for_an_unknown_address_is_answered_exactly_like_a_known_one(
    client, alice, inbox, django_capture_on_commit_callbacks
):
    # Addresses of their own: the per-address counters live in the shared cache for an hour.
    known, unknown = (f"{name}-{uuid.uuid4().hex[:8]}@example.edu" for name in ("alice", "nobody"))
    alice.email = known
    alice.save()
    answers = []
    for email in (known, unknown):
        with django_capture_on_commit_callbacks() as queued:
            response = reset_request(client, email, fresh_ip())
        assert response.status_code == 302, response.content.decode()[-800:]
        sent_page = client.get(response.url)
        page = re.sub(r'"X-CSRFToken": "\w+"', "", sent_page.content.decode())  # a fresh mask on every page
        answers.append((response.status_code, response.url, len(queued), sent_page.status_code, page))
    assert answers[0] == answers[1]
    assert answers[0][:4] == (302, reverse("passwords:reset_sent"), 1, 200)
    # The queued task looks the address up: mail for the account, none for the unknown address.
    mail_tasks.send_password_reset.apply(args=[unknown])
    assert inbox.messages() == []
    mail_tasks.send_password_reset.apply(args=[known.upper()])
    [message] = inbox.wait_for(known, timeout=10)
    assert message["Subject"] == "Reset your GPU Lab Portal password" and "Your username: alice" in body(message)


def test_reset_link_sets_a_new_password_once(client, alice, inbox):
    alice.email = "alice@example.edu"
    alice.save()
    mail_tasks.send_password_reset.apply(args=["alice@example.edu"])
    link = link_in(inbox.wait_for("alice@example.edu", timeout=10)[0])
    assert "/password/reset/" in link
    assert set_password(client, link).status_code == 302
    assert authenticate(username="alice", password=NEW_PASSWORD)
    assert authenticate(username="alice", password="correct-horse-battery-staple") is False
    assert "This link no longer works" in set_password(client, link, "again-and-again-77").content.decode()


def test_an_expired_reset_link_does_not_work(client, alice, settings):
    issued = reset_tokens._num_seconds(reset_tokens._now()) - settings.PASSWORD_RESET_EXPIRY_SECONDS - 60
    token = reset_tokens._make_token_with_timestamp(alice, issued, settings.SECRET_KEY)
    response = client.get(
        reverse("passwords:reset_confirm", args=[urlsafe_base64_encode(force_bytes(alice.pk)), token])
    )
    assert "This link no longer works" in response.content.decode()


def test_a_campus_only_account_gets_no_reset_mail(alice, inbox):
    from django.utils import timezone

    alice.email, alice.last_login = "alice@example.edu", timezone.now()
    alice.set_unusable_password()  # signs in only through the campus
    alice.save()
    mail_tasks.send_password_reset.apply(args=["alice@example.edu"])
    assert inbox.messages() == []


def test_reset_requests_are_throttled_per_address_whatever_the_client(client, settings):
    settings.PASSWORD_RESET_PER_ADDRESS = 3
    email = f"{uuid.uuid4().hex[:12]}@example.edu"  # no such account: counted the same
    statuses = [reset_request(client, email, fresh_ip()).status_code for _ in range(4)]
    assert statuses == [302, 302, 302, 429]
    response = reset_request(client, email, fresh_ip())
    assert response.status_code == 429 and "Too many reset links" in response.content.decode()
    assert reset_request(client, f"other-{email}", fresh_ip()).status_code == 302


def test_reset_requests_are_throttled_per_client_address(client, settings):
    settings.PASSWORD_RESET_PER_CLIENT = 2
    ip = fresh_ip()
    statuses = [reset_request(client, f"{uuid.uuid4().hex[:12]}@example.edu", ip).status_code for _ in range(3)]
    assert statuses == [302, 302, 429]


def test_reset_pages_open_for_anyone_and_a_bad_address_is_explained(client):
    assert client.get(reverse("passwords:reset")).status_code == 200
    assert client.get(reverse("passwords:reset_sent")).status_code == 200
    response = reset_request(client, f"not an address {uuid.uuid4().hex}", fresh_ip())
    assert response.status_code == 400 and "Enter a valid email address." in response.content.decode()
    assert 'href="/password/reset/"' in client.get(reverse("login")).content.decode()


def test_with_local_passwords_off_nobody_is_invited_and_the_pages_are_gone(client, course, zoe, settings):
    settings.SIGNON_LOCAL_PASSWORDS = False
    assert invite(course, zoe) is False and not Invitation.objects.exists()
    assert client.get(reverse("passwords:reset")).status_code == 404
    uid = urlsafe_base64_encode(force_bytes(zoe.pk))
    assert client.get(reverse("passwords:set", args=[uid, invitation_tokens.make_token(zoe)])).status_code == 404
    assert 'href="/password/reset/"' not in client.get(reverse("login")).content.decode()
