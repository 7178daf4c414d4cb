"""GPU-hour budgets: jobs burn them (GPUs x elapsed), a used-up budget refuses launches with what is left and when
it resets, the pass warns at 80 % and 95 % once, stops running jobs after the grace with an event, top-ups are
audited, and settings out of range are refused. The pass's query count does not grow with the number of jobs."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from core.choices import EventKind, JobState
from courses import budgets
from courses.models import BudgetChange, BudgetNotice, BudgetOverrun, BudgetPeriod, Course
from jobs import budget_pass
from jobs.budgets import standing_of
from jobs.launch import BudgetExhausted
from jobs.models import Job, JobEvent
from jobs.signals import budget_crossed
from notifications.events import Channel, Event
from notifications.models import Notification, Preference

pytestmark = pytest.mark.django_db


def ran(job, hours: float, *, finished: bool = False, state=JobState.RUNNING):
    """Mark `job` as having run for `hours` up to now (still running unless `finished`)."""
    now = timezone.now()
    Job.objects.filter(pk=job.pk).update(
        state=JobState.COMPLETED if finished else state,
        started_at=now - timedelta(hours=hours),
        finished_at=now if finished else None,
        scheduler_id=f"s{job.pk.hex[:8]}",
    )
    job.refresh_from_db()
    return job


@pytest.fixture
def budgeted(course):
    course.student_gpu_hours = 2
    course.budget_period = BudgetPeriod.TERM
    course.budget_grace_minutes = 5
    course.created_at = timezone.now() - timedelta(days=3)  # no term: the term budget counts from the creation
    course.save()
    Course.objects.filter(pk=course.pk).update(created_at=course.created_at)
    return course


@pytest.fixture
def told():
    heard = []

    def listen(sender, **kwargs):
        heard.append(kwargs)

    budget_crossed.connect(listen, dispatch_uid="test-budget-listener")
    yield heard
    budget_crossed.disconnect(dispatch_uid="test-budget-listener")


def test_running_job_burns_gpus_times_elapsed(budgeted, alice, make_job):
    ran(make_job(alice, gpus_per_node=2), 0.5)
    mine, whole = standing_of(budgeted, alice)
    assert mine.used == pytest.approx(1.0, abs=0.01) and mine.left == pytest.approx(1.0, abs=0.01)
    assert whole is None


def test_used_up_budget_refuses_launch_saying_what_is_left_and_when_it_resets(budgeted, alice, make_job):
    budgeted.budget_period = BudgetPeriod.WEEK
    budgeted.save()
    ran(make_job(alice, gpus_per_node=4), 1, finished=True)
    with pytest.raises(BudgetExhausted) as refused:
        make_job(alice, gpus_per_node=1)
    message = str(refused.value)
    assert "4 of 2 used, 0 left" in message and "resets on Mon" in message and "top-up" in message


def test_api_launch_is_refused_with_the_budget_message(budgeted, alice, make_job, api_for, cluster, sleep_template):
    ran(make_job(alice, gpus_per_node=2), 1.5)
    response = api_for(alice).post(
        "/api/v1/jobs/",
        {"template": sleep_template.slug, "cluster": cluster.name, "params": {}},
        format="json",
    )
    assert response.status_code in (400, 403) and "GPU-hour budget" in str(response.json())


def test_course_total_refuses_every_student(budgeted, alice, bob, make_job):
    budgeted.student_gpu_hours = None
    budgeted.course_gpu_hours = 1
    budgeted.save()
    ran(make_job(alice, gpus_per_node=1), 1, finished=True)
    with pytest.raises(BudgetExhausted, match="shared GPU-hour budget"):
        make_job(bob, gpus_per_node=1)


def test_instructor_is_not_bound_by_a_budget(budgeted, instructor, make_job):
    ran(make_job(instructor, gpus_per_node=4), 1, finished=True)
    assert make_job(instructor, gpus_per_node=1).state == JobState.QUEUED


def test_top_up_is_audited_and_lets_the_student_launch_again(budgeted, alice, instructor, make_job):
    ran(make_job(alice, gpus_per_node=2), 1, finished=True)
    with pytest.raises(BudgetExhausted):
        make_job(alice)
    budgets.top_up(budgeted, alice, 3, actor=instructor, reason="project deadline")
    change = BudgetChange.objects.get()
    assert (change.what, change.old_value, change.new_value, change.actor_username) == (
        "top_up",
        "0",
        "3",
        instructor.username,
    )
    assert make_job(alice).state == JobState.QUEUED


def test_pass_warns_once_at_the_highest_level_reached(budgeted, alice, bob, make_job, told):
    ran(make_job(alice, gpus_per_node=1), 1.7)  # 85 %
    ran(make_job(bob, gpus_per_node=1), 1.95)  # 97.5 %
    assert budget_pass.run().warned == 2
    assert sorted(t["level"] for t in told) == [80, 95]
    assert budget_pass.run().warned == 0 and len(told) == 2
    assert BudgetNotice.objects.count() == 2


def test_pass_stops_running_jobs_only_after_the_grace(budgeted, alice, bob, make_job, told):
    over = ran(make_job(alice, gpus_per_node=1), 2.5)
    fine = ran(make_job(bob, gpus_per_node=1), 0.5)
    now = timezone.now()
    first = budget_pass.run(now)
    assert first.overruns == 1 and first.stopped == [] and [t["level"] for t in told] == [100]
    assert budget_pass.run(now + timedelta(minutes=4)).stopped == []
    assert budget_pass.run(now + timedelta(minutes=6)).stopped == [str(over.pk)]
    event = JobEvent.objects.filter(job=over, kind=EventKind.CANCEL).get()
    assert "GPU-hour budget" in event.message and "grace of 5 minute(s)" in event.message and event.actor is None
    fine.refresh_from_db()
    assert fine.cancel_requested_at is None


def test_top_up_during_grace_keeps_the_jobs_running(budgeted, alice, instructor, make_job):
    job = ran(make_job(alice, gpus_per_node=1), 2.5)
    now = timezone.now()
    budget_pass.run(now)
    budgets.top_up(budgeted, alice, 5, actor=instructor)
    assert budget_pass.run(now + timedelta(minutes=10)).stopped == []
    assert not BudgetOverrun.objects.exists()
    job.refresh_from_db()
    assert job.cancel_requested_at is None


def test_each_budget_level_is_its_own_notification_with_its_own_preference(budgeted, alice, bob, make_job):
    Preference.objects.create(user=alice, event=Event.BUDGET_80, channel=Channel.BROWSER, enabled=False)
    Preference.objects.create(user=bob, event=Event.BUDGET_95, channel=Channel.BROWSER, enabled=False)
    ran(make_job(alice, gpus_per_node=1), 1.95)  # 97.5 %: told although she turned the 80 % message off
    ran(make_job(bob, gpus_per_node=1), 1.7)  # 85 %: told although he turned the 95 % message off
    budget_pass.run()
    ran(make_job(alice, gpus_per_node=1), 1)  # used up
    budget_pass.run()
    told = Notification.objects.filter(channel=Channel.BROWSER)
    assert sorted((n.user.username, n.event, n.subject) for n in told) == [
        ("alice", "budget_95", "GPU-hour budget 95 % used"),
        ("alice", "budget_used_up", "GPU-hour budget used up"),
        ("bob", "budget_80", "GPU-hour budget 80 % used"),
    ]


def test_the_preferences_page_lists_each_budget_level_in_plain_words(login, alice):
    page = login(alice).get("/notifications/").content.decode()
    for words in ("GPU-hour budget: 80 % used", "GPU-hour budget: 95 % used", "GPU-hour budget used up"):
        assert words in page
    assert 'name="budget_95__email"' in page and 'name="budget_used_up__browser"' in page


def test_budget_warnings_are_on_the_students_job_timelines_and_in_notifications_once(budgeted, alice, bob, make_job):
    mine, bobs = ran(make_job(alice, gpus_per_node=1), 1.7), ran(make_job(bob, gpus_per_node=1), 0.1)  # 85 %
    now = timezone.now()
    budget_pass.run(now)
    budget_pass.run(now + timedelta(seconds=30))
    notes = list(JobEvent.objects.filter(kind=EventKind.NOTE).values_list("job_id", "message"))
    assert notes == [(mine.pk, "The student's GPU-hour budget is 80 % used (1.7 of 2 GPU-hours used, 0.3 left).")]
    ran(mine, 2.2)
    budget_pass.run(now)
    budget_pass.run(now + timedelta(seconds=30))
    used_up = JobEvent.objects.filter(job=mine, kind=EventKind.NOTE).last().message
    assert (
        used_up.startswith("The student's GPU-hour budget is used up (2.2 of 2") and "grace of 5 minute(s)" in used_up
    )
    assert JobEvent.objects.filter(job=mine, kind=EventKind.NOTE).count() == 2
    assert not JobEvent.objects.filter(job=bobs, kind=EventKind.NOTE).exists()
    told = Notification.objects.filter(user=alice, channel=Channel.BROWSER).values_list("event", flat=True)
    assert sorted(told) == ["budget_80", "budget_used_up"]


def test_a_top_up_is_on_the_students_job_timelines_and_in_notifications_once(
    budgeted, alice, instructor, login, make_job
):
    job = ran(make_job(alice, gpus_per_node=1), 0.5)
    data = {"topup-student": alice.pk, "topup-hours": "1.5", "topup-reason": "project deadline"}
    assert login(instructor).post(reverse("jobs:budget_top_up", args=[budgeted.slug]), data).status_code == 302
    note = JobEvent.objects.get(job=job, kind=EventKind.NOTE)
    assert (note.message, note.actor) == (
        "1.5 GPU-hour(s) added to the student's budget (project deadline).",
        instructor,
    )
    told = Notification.objects.get(user=alice, channel=Channel.BROWSER)
    assert told.event == "budget_top_up" and "added 1.5 GPU-hour(s) to your budget in HPC Lab" in told.text


@pytest.mark.parametrize(
    "values, field",
    [
        ({"student_gpu_hours": 0}, "student_gpu_hours"),
        ({"student_gpu_hours": budgets.MAX_STUDENT_HOURS + 1}, "student_gpu_hours"),
        ({"course_gpu_hours": -1}, "course_gpu_hours"),
        ({"budget_grace_minutes": budgets.MAX_GRACE_MINUTES + 1}, "budget_grace_minutes"),
        ({"budget_period": "month"}, "budget_period"),
    ],
)
def test_budget_settings_out_of_range_are_refused(values, field):
    assert field in budgets.setting_errors(values)


def test_top_up_out_of_range_is_refused():
    assert budgets.top_up_error(0) and budgets.top_up_error(budgets.MAX_TOP_UP_HOURS + 1) and budgets.top_up_error(None)
    assert budgets.top_up_error(5) is None


def test_pass_query_count_does_not_grow_with_jobs(budgeted, alice, bob, make_job, told):
    budgeted.course_gpu_hours = 1000
    budgeted.save()

    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            budget_pass.run()
        return len(captured)

    ran(make_job(alice, gpus_per_node=1), 0.1)
    queries()  # first pass may write notices; measure the steady state
    few = queries()
    for owner in (alice, bob, bob):
        ran(make_job(owner, gpus_per_node=1), 0.1)
    queries()
    assert queries() == few
