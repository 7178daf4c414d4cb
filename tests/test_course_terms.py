"""Course terms: who may launch when, the read-only course after its end, the term's notices and the end itself,
and copying a course to a new term."""

from datetime import timedelta

import pytest
from django.core import mail
from django.db import IntegrityError, transaction
from django.urls import reverse
from django.utils import timezone

from core.choices import EventKind, JobState
from courses import terms
from courses.copying import copy_to_new_term
from courses.forms import CopyTermForm
from courses.models import Course, Enrollment, QuotaChange, QuotaOverride, Role, TermNotice
from jobs import access, term_end
from jobs.models import Job, JobEvent, JobTemplate
from tests.kind_settings import set_course

pytestmark = pytest.mark.django_db

HOUR = timedelta(hours=1)
DAY = timedelta(days=1)


def set_term(course, starts, ends):
    Course.objects.filter(pk=course.pk).update(term_starts_at=starts, term_ends_at=ends)
    course.refresh_from_db()


@pytest.fixture
def ended(course):
    now = timezone.now()
    set_term(course, now - 90 * DAY, now - HOUR)
    return course


@pytest.fixture
def not_started(course):
    now = timezone.now()
    set_term(course, now + 2 * DAY, now + 90 * DAY)
    return course


# -- the rules ------------------------------------------------------------------------------------------------


def test_course_without_term_is_always_open(course):
    assert not terms.has_ended(course) and terms.has_started(course)
    assert terms.launch_refusal(course, teaches=False) is None


def test_student_may_not_launch_before_the_start_and_is_told_when(not_started):
    refusal = terms.launch_refusal(not_started, teaches=False)
    assert "opens for launches on" in refusal and terms.when(not_started.term_starts_at) in refusal


def test_instructor_may_launch_before_the_start_to_try_templates(not_started):
    assert terms.launch_refusal(not_started, teaches=True) is None


def test_nobody_may_launch_after_the_end(ended):
    for teaches in (False, True):
        refusal = terms.launch_refusal(ended, teaches=teaches)
        assert "ended on" in refusal and "Copy to a new term" in refusal


def test_the_end_itself_is_already_ended(course):
    now = timezone.now()
    set_term(course, now - DAY, now)
    assert terms.has_ended(course, now)
    assert not terms.has_ended(course, now - timedelta(seconds=1))


def test_term_end_before_start_is_refused_by_the_database(course):
    now = timezone.now()
    with pytest.raises(IntegrityError), transaction.atomic():
        Course.objects.filter(pk=course.pk).update(term_starts_at=now, term_ends_at=now - HOUR)


def test_term_with_only_one_date_is_refused_by_the_database(course):
    with pytest.raises(IntegrityError), transaction.atomic():
        Course.objects.filter(pk=course.pk).update(term_starts_at=timezone.now())


def test_course_form_validation_names_the_end_that_comes_first(course):
    from django.core.exceptions import ValidationError

    now = timezone.now()
    course.term_starts_at, course.term_ends_at = now, now - HOUR
    with pytest.raises(ValidationError) as caught:
        course.full_clean()
    assert "must end after it starts" in str(caught.value.message_dict["term_ends_at"])


# -- launching ------------------------------------------------------------------------------------------------


def test_check_launch_refuses_a_student_after_the_end(alice, ended, cluster, sleep_template):
    with pytest.raises(access.LaunchRefused, match="ended on"):
        access.check_launch(alice, ended, sleep_template, cluster)


def test_api_launch_before_the_start_is_403_with_the_opening_date(api_for, alice, not_started, cluster, sleep_template):
    response = api_for(alice).post(
        "/api/v1/jobs/", {"template": "sleep-echo", "cluster": "local", "params": {}}, format="json"
    )
    assert response.status_code == 403
    assert "opens for launches on" in response.json()["detail"] and not Job.objects.exists()


def test_launch_form_after_the_end_is_disabled_and_its_post_refused(login, alice, ended, cluster, sleep_template):
    client = login(alice)
    url = reverse("jobs:launch", args=[ended.slug, sleep_template.slug])
    page = client.get(url).content.decode()
    assert 'id="launch" disabled' in page and "read-only" in page
    response = client.post(url, {"cluster": cluster.pk, "seconds": 1})
    assert response.status_code == 400 and "ended on" in response.content.decode() and not Job.objects.exists()


def test_catalog_says_when_the_course_opens_and_links_no_launch(login, alice, not_started, cluster, sleep_template):
    page = login(alice).get(reverse("jobs:catalog")).content.decode()
    assert "opens for launches on" in page
    assert reverse("jobs:launch", args=[not_started.slug, sleep_template.slug]) not in page


# -- read-only after the end ------------------------------------------------------------------------------------


def test_quota_page_of_ended_course_is_readable_but_refuses_saving(login, instructor, alice, ended):
    client = login(instructor)
    url = reverse("courses:quotas", args=[ended.slug])
    page = client.get(url)
    assert page.status_code == 200 and "save-quotas" not in page.content.decode()
    response = client.post(url, {"max_concurrent_jobs": 9, "max_gpus": 9, f"max_gpus__{alice.pk}": 1})
    assert response.status_code == 403 and "read-only" in response.content.decode()
    ended.refresh_from_db()
    assert ended.max_gpus == 4 and not QuotaChange.objects.exists() and not QuotaOverride.objects.exists()


def test_roster_of_ended_course_refuses_an_import(login, instructor, ended):
    from django.core.files.uploadedfile import SimpleUploadedFile

    client = login(instructor)
    url = reverse("courses:roster", args=[ended.slug])
    assert "roster-closed" in client.get(url).content.decode()
    upload = SimpleUploadedFile("r.csv", b"dan,dan@example.edu,student\n", content_type="text/csv")
    assert client.post(url, {"roster": upload}).status_code == 403
    assert not Enrollment.objects.filter(user__username="dan").exists()


def test_import_roster_command_refuses_an_ended_course(ended, tmp_path):
    from django.core.management import CommandError, call_command

    roster = tmp_path / "r.csv"
    roster.write_text("dan,dan@example.edu,student\n")
    with pytest.raises(CommandError, match="read-only"):
        call_command("import_roster", ended.slug, str(roster))


def test_templates_of_ended_course_can_be_read_not_saved_or_published(login, instructor, ended, sleep_template):
    client = login(instructor)
    edit = reverse("jobs:template_edit", args=[ended.slug, sleep_template.slug])
    page = client.get(edit).content.decode()
    assert "read-only-notice" in page and "Save draft" not in page and 'id="publish"' not in page
    assert client.post(edit, {"name": "Changed", "slug": sleep_template.slug}).status_code == 403
    assert client.post(edit, {"name": "Changed", "slug": sleep_template.slug, "action": "publish"}).status_code == 403
    status = reverse("jobs:template_status", args=[ended.slug, sleep_template.slug])
    assert client.post(status, {"action": "unpublish"}).status_code == 403
    assert client.post(status, {"action": "discard"}).status_code == 403
    assert client.post(reverse("jobs:template_new", args=[ended.slug]), {"name": "New"}).status_code == 403
    sleep_template.refresh_from_db()
    assert sleep_template.name == "Sleep and echo" and sleep_template.status == JobTemplate.Status.PUBLISHED


def test_course_page_of_ended_course_stays_readable_with_its_jobs(login, instructor, alice, make_job, course):
    job = make_job(alice)
    now = timezone.now()
    set_term(course, now - DAY, now - HOUR)
    page = login(instructor).get(reverse("courses:jobs", args=[course.slug])).content.decode()
    assert job.short_id in page and "read-only" in page and "Copy to a new term" in page
    dashboard = login(instructor).get(reverse("telemetry:dashboard", args=[course.slug])).content.decode()
    assert "read-only" in dashboard and terms.when(course.term_ends_at) in dashboard
    assert login(alice).get(job.get_absolute_url()).status_code == 200


# -- the notices and the end -------------------------------------------------------------------------------------


def deliver() -> None:
    """Run the mail task of every notice not mailed yet, here in the test process (a worker does it in production)."""
    from workers import mail as mail_tasks

    for pk in TermNotice.objects.filter(mailed_at__isnull=True).values_list("pk", flat=True):
        mail_tasks.send_term_notice.apply(args=[pk])


def with_emails(*users):
    for user in users:
        user.email = f"{user.username}@example.edu"
        user.save(update_fields=["email"])


def test_instructors_are_told_once_a_week_before_the_end(instructor, alice, course):
    with_emails(instructor, alice)
    now = timezone.now()
    set_term(course, now - 60 * DAY, now + 6 * DAY)
    assert term_end.run(now).told_instructors == 1
    assert term_end.run(now + HOUR).told_instructors == 0
    deliver()
    deliver()
    assert [m.to for m in mail.outbox] == [["ines@example.edu"]]
    assert TermNotice.objects.get().mailed_at is not None
    assert "ends on" in mail.outbox[0].subject and "Copy to a new term" in mail.outbox[0].body


def test_instructors_are_not_told_eight_days_before(instructor, course):
    with_emails(instructor)
    now = timezone.now()
    set_term(course, now - 60 * DAY, now + 8 * DAY)
    assert term_end.run(now).told_instructors == 0 and not mail.outbox


def test_moved_end_is_announced_again(instructor, course):
    with_emails(instructor)
    now = timezone.now()
    set_term(course, now - 60 * DAY, now + 6 * DAY)
    term_end.run(now)
    set_term(course, now - 60 * DAY, now + 5 * DAY)
    term_end.run(now)
    deliver()
    assert len(mail.outbox) == 2 and TermNotice.objects.count() == 2


def test_students_with_unfinished_jobs_are_warned_once_with_the_time(alice, bob, course, make_job):
    with_emails(alice, bob)
    make_job(alice)
    make_job(alice)
    now = timezone.now()
    set_term(course, now - 60 * DAY, now + 3 * HOUR)
    assert term_end.run(now).warned_students == 1
    assert term_end.run(now).warned_students == 0
    deliver()
    (message,) = mail.outbox
    assert message.to == ["alice@example.edu"] and terms.when(course.term_ends_at) in message.body


def test_course_page_tells_instructors_a_week_before_the_end(login, instructor, course):
    now = timezone.now()
    set_term(course, now - 60 * DAY, now + 6 * DAY)
    page = login(instructor).get(reverse("courses:jobs", args=[course.slug])).content.decode()
    assert "The term ends in 5" in page and "Copy to a new term" in page


def test_catalog_warns_students_a_day_before_the_end(login, alice, course, cluster, sleep_template):
    now = timezone.now()
    set_term(course, now - 60 * DAY, now + 5 * HOUR)
    page = login(alice).get(reverse("jobs:catalog")).content.decode()
    assert "Running jobs are stopped then" in page and terms.when(course.term_ends_at) in page


def test_unfinished_jobs_page_warns_of_the_end_within_a_day_and_not_before(login, alice, course, make_job):
    job = make_job(alice)
    client = login(alice)
    now = timezone.now()
    set_term(course, now - 60 * DAY, now + 2 * DAY)
    assert "term-warning" not in client.get(job.get_absolute_url()).content.decode()
    set_term(course, now - 60 * DAY, now + 3 * HOUR)
    page = client.get(job.get_absolute_url()).content.decode()
    assert "term-warning" in page and terms.when(course.term_ends_at) in page


def test_notice_mail_is_queued_once_after_the_commit(instructor, course, django_capture_on_commit_callbacks):
    with_emails(instructor)
    now = timezone.now()
    set_term(course, now - 60 * DAY, now + 6 * DAY)
    with django_capture_on_commit_callbacks() as queued:
        term_end.run(now)
        term_end.run(now)
    assert len(queued) == 1 and not mail.outbox  # the mail goes from the worker, after the commit


def test_relay_saying_try_later_is_retried_and_a_refusal_is_not(instructor, course, inbox):
    from workers import mail as mail_tasks

    now = timezone.now()
    set_term(course, now - 60 * DAY, now + 6 * DAY)
    cases = [
        ("ines-defer@example.edu", "FAILURE", mail_tasks.MAX_RETRIES + 1),
        ("ines-refuse@example.edu", "SUCCESS", 1),
    ]
    for address, state, tries in cases:
        TermNotice.objects.all().delete()
        instructor.email = address
        instructor.save()
        term_end.run(now)
        result = mail_tasks.send_term_notice.apply(args=[TermNotice.objects.get().pk])
        assert result.state == state and inbox.tries[address] == tries
    assert inbox.messages() == [] and TermNotice.objects.get().mailed_at is None


def test_notice_mail_reaches_a_real_smtp_server_with_the_time(alice, course, make_job, inbox):
    with_emails(alice)
    make_job(alice)
    now = timezone.now()
    set_term(course, now - 60 * DAY, now + 2 * HOUR)
    term_end.run(now)
    deliver()
    [message] = inbox.wait_for("alice@example.edu", timeout=10)
    assert "your running jobs stop on" in message["Subject"]
    assert terms.when(course.term_ends_at) in message.get_body().get_content()


def test_a_late_run_after_the_end_warns_nobody_and_stops_the_jobs(alice, instructor, course, make_job):
    with_emails(alice, instructor)
    job = make_job(alice)
    now = timezone.now()
    set_term(course, now - 60 * DAY, now - HOUR)
    report = term_end.run(now)
    assert (report.told_instructors, report.warned_students, report.cancelled) == (0, 0, 1)
    assert not mail.outbox
    job.refresh_from_db()
    assert job.state == JobState.CANCELLED  # not yet submitted: cancelled at once
    event = JobEvent.objects.filter(job=job, to_state=JobState.CANCELLED).get()
    assert "term of HPC Lab ended" in event.message


def test_stopping_twice_records_one_cancellation(alice, course, make_job):
    job = make_job(alice)
    Job.objects.filter(pk=job.pk).update(state=JobState.RUNNING, scheduler_id="4242")
    now = timezone.now()
    set_term(course, now - 60 * DAY, now - HOUR)
    assert term_end.run(now).cancelled == 1
    assert term_end.run(now).cancelled == 0
    events = JobEvent.objects.filter(job=job, kind=EventKind.CANCEL)
    assert events.count() == 1 and "ended on" in events.get().message


def test_term_end_stops_are_told_as_the_courses_rule_not_as_someone_elses_cancel(alice, course, make_job):
    from jobs.states import transition
    from notifications.models import Notification

    waiting, running = make_job(alice), make_job(alice)
    Job.objects.filter(pk=running.pk).update(state=JobState.RUNNING, scheduler_id="4243")
    now = timezone.now()
    set_term(course, now - 60 * DAY, now - HOUR)
    assert term_end.run(now).cancelled == 2
    running.refresh_from_db()
    assert transition(running, JobState.CANCELLED)  # what the poll does once scancel took effect
    told = Notification.objects.filter(user=alice).order_by("job_id")
    assert {n.event for n in told} == {"stopped_by_rule"} and {n.job_id for n in told} == {waiting.pk, running.pk}
    ended = terms.when(course.term_ends_at)
    for note in told:
        assert note.subject.endswith("was stopped by the course's rules")
        assert f"The term of HPC Lab ended on {ended}" in note.text and "someone" not in note.text


def test_jobs_of_other_courses_are_not_stopped(carol, other_course, course, make_user, cluster, sleep_template):
    from jobs.launch import launch

    other_course.clusters.add(cluster)
    sleep_template.courses.add(other_course)
    job = launch(carol, course=other_course, template=sleep_template, cluster=cluster, raw_params={})
    now = timezone.now()
    set_term(course, now - 60 * DAY, now - HOUR)
    term_end.run(now)
    job.refresh_from_db()
    assert job.state == JobState.QUEUED


# -- copy to a new term -----------------------------------------------------------------------------------------


def copy_form(**overrides):
    now = timezone.now()
    data = {
        "name": "HPC Lab 2027",
        "slug": "hpc-2027",
        "term_starts_at": (now + DAY).strftime("%Y-%m-%dT%H:%M"),
        "term_ends_at": (now + 100 * DAY).strftime("%Y-%m-%dT%H:%M"),
    }
    return data | overrides


def test_copy_form_refuses_an_existing_slug(course):
    form = CopyTermForm(copy_form(slug="HPC"))
    assert not form.is_valid() and "exists already" in form.errors["slug"][0]


def test_copy_form_refuses_an_end_before_the_start(course):
    now = timezone.now()
    form = CopyTermForm(copy_form(term_ends_at=now.strftime("%Y-%m-%dT%H:%M")))
    assert not form.is_valid() and "must end after it starts" in form.errors["term_ends_at"][0]


def test_copy_form_refuses_an_end_in_the_past(course):
    now = timezone.now()
    past = copy_form(
        term_starts_at=(now - 100 * DAY).strftime("%Y-%m-%dT%H:%M"),
        term_ends_at=(now - DAY).strftime("%Y-%m-%dT%H:%M"),
    )
    form = CopyTermForm(past)
    assert not form.is_valid() and "already past" in form.errors["term_ends_at"][0]


def test_copy_carries_templates_clusters_and_limits_not_people_or_jobs(
    instructor, alice, course, cluster, sleep_template, make_job
):
    from jobs.builtin import load_builtin_templates

    builtin = load_builtin_templates([course])[0]
    Course.objects.filter(pk=course.pk).update(max_gpus=2)
    set_course(course, ingress_host="lab.example.edu", save=True)
    course.refresh_from_db()
    QuotaOverride.objects.create(course=course, user=alice, max_gpus=1)
    make_job(alice)
    now = timezone.now()
    new = copy_to_new_term(
        course, actor=instructor, name="HPC 2027", slug="hpc-2027", starts=now + DAY, ends=now + 90 * DAY
    )
    assert (new.max_gpus, new.max_concurrent_jobs) == (2, 4)
    assert new.kind_settings["kubernetes"]["ingress_host"] == "lab.example.edu"
    assert new.kind_settings == Course.objects.get(pk=course.pk).kind_settings
    assert list(new.clusters.all()) == [cluster]
    assert list(new.enrollments.values_list("user__username", "role")) == [("ines", Role.INSTRUCTOR)]
    assert not new.jobs.exists() and not new.quota_overrides.exists()
    copied = new.templates.get(builtin=False)
    assert copied.pk != sleep_template.pk and copied.slug == "sleep-echo-hpc-2027"
    assert (copied.body, copied.parameters, copied.status) == (
        sleep_template.body,
        sleep_template.parameters,
        sleep_template.status,
    )
    assert list(copied.courses.all()) == [new] and copied.created_by == instructor
    assert new.templates.filter(pk=builtin.pk).exists()  # built-in templates are shared, not copied
    assert list(sleep_template.courses.all()) == [course]


def test_copy_page_anonymous_student_and_other_instructor_cannot_copy(client, login, alice, make_user, course):
    url = reverse("courses:copy", args=[course.slug])
    assert client.get(url).status_code == 302
    assert login(alice).post(url, copy_form()).status_code == 404
    other = make_user("otto")
    assert login(other).post(url, copy_form()).status_code == 404
    assert not Course.objects.filter(slug="hpc-2027").exists()


def test_teaching_assistant_may_not_copy_but_may_launch_before_the_start(login, make_user, not_started):
    ta = make_user("tara")
    Enrollment.objects.create(course=not_started, user=ta, role=Role.TA)
    response = login(ta).post(reverse("courses:copy", args=[not_started.slug]), copy_form())
    assert response.status_code == 403 and "instructors copy it to a new term" in response.content.decode()
    assert Course.objects.count() == 1
    assert terms.launch_refusal(not_started, teaches=access.may_teach(ta, not_started)) is None


def test_instructor_copies_an_ended_course_and_lands_on_the_new_one(login, instructor, ended, cluster):
    client = login(instructor)
    url = reverse("courses:copy", args=[ended.slug])
    assert client.get(url).status_code == 200
    response = client.post(url, copy_form())
    assert response.status_code == 302 and response["Location"] == reverse("courses:jobs", args=["hpc-2027"])
    new = Course.objects.get(slug="hpc-2027")
    assert not terms.has_ended(new) and access.may_teach(instructor, new)


def test_copy_page_with_bad_dates_answers_400_and_creates_nothing(login, instructor, course):
    now = timezone.now()
    response = login(instructor).post(
        reverse("courses:copy", args=[course.slug]),
        copy_form(
            term_starts_at=(now - 100 * DAY).strftime("%Y-%m-%dT%H:%M"),
            term_ends_at=(now - DAY).strftime("%Y-%m-%dT%H:%M"),
        ),
    )
    assert response.status_code == 400 and "already past" in response.content.decode()
    assert Course.objects.count() == 1


def test_group_sync_leaves_the_roster_of_an_ended_course_as_it_was(alice, ended, course):
    from signon.models import CourseGroup, GroupEnrollment, Source
    from signon.sync import sync_memberships

    CourseGroup.objects.create(course=ended, source=Source.LDAP, group="hpc-students")
    GroupEnrollment.objects.create(course=ended, user=alice, source=Source.LDAP)
    assert sync_memberships(alice, Source.LDAP, groups=[]) == []
    assert Enrollment.objects.filter(course=ended, user=alice).exists()


# -- admin and demo ---------------------------------------------------------------------------------------------


def test_admin_lists_terms_and_edits_them(login, admin_user, ended):
    client = login(admin_user)
    listing = client.get(reverse("admin:courses_course_changelist")).content.decode()
    assert "Term starts" in listing and "Term ends" in listing
    page = client.get(reverse("admin:courses_course_change", args=[ended.pk])).content.decode()
    assert 'name="term_starts_at_0"' in page and 'name="term_ends_at_0"' in page


def test_demo_course_gets_a_term_around_today(tmp_path):
    from django.core.management import call_command

    call_command("demo_setup", logins=tmp_path / "logins")
    demo = Course.objects.get(slug="demo")
    assert terms.has_started(demo) and not terms.has_ended(demo)
    assert terms.launch_refusal(demo, teaches=False) is None
