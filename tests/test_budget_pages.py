"""The budget pages: a student's own standing and burn-down, the instructor's settings, top-ups and everyone's
standing; anonymous, wrong-user and right-user cases, and values out of range refused."""

import re
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from core.choices import JobState
from courses.models import BudgetChange, Course, Enrollment, Role
from jobs.models import Job

pytestmark = pytest.mark.django_db


@pytest.fixture
def budgeted(course):
    Course.objects.filter(pk=course.pk).update(student_gpu_hours=4, course_gpu_hours=100)
    course.refresh_from_db()
    return course


@pytest.fixture
def other_instructor(make_user, other_course):
    user = make_user("otto")
    Enrollment.objects.create(course=other_course, user=user, role=Role.INSTRUCTOR)
    return user


def settings_data(**values):
    return {
        "budget_period": "week",
        "student_gpu_hours": "4",
        "course_gpu_hours": "100",
        "budget_grace_minutes": "10",
        "idle_util_below": "",
        "idle_warn_minutes": "30",
        "idle_cancel_minutes": "15",
    } | values


def test_anonymous_is_sent_to_login(client, budgeted):
    for name in ("jobs:budget", "jobs:course_budgets"):
        response = client.get(reverse(name, args=[budgeted.slug]))
        assert response.status_code == 302 and "/login/" in response["Location"]


def test_student_sees_own_burn_down_and_not_the_instructor_page(login, alice, budgeted, make_job):
    job = make_job(alice, gpus_per_node=2)
    Job.objects.filter(pk=job.pk).update(state=JobState.RUNNING, started_at=timezone.now() - timedelta(hours=1.7))
    client = login(alice)
    page = client.get(reverse("jobs:budget", args=[budgeted.slug])).content.decode()
    assert "3.4</strong> of 4 GPU-hours used" in page and "<polyline" in page and "85 % of this budget is used" in page
    assert client.get(reverse("jobs:course_budgets", args=[budgeted.slug])).status_code == 404
    assert client.post(reverse("jobs:course_budgets", args=[budgeted.slug]), settings_data()).status_code == 404
    top_up = {"topup-student": alice.pk, "topup-hours": 100}
    assert client.post(reverse("jobs:budget_top_up", args=[budgeted.slug]), top_up).status_code == 404
    assert not BudgetChange.objects.exists()


def test_student_of_another_course_gets_404(login, carol, budgeted):
    assert login(carol).get(reverse("jobs:budget", args=[budgeted.slug])).status_code == 404


def test_instructor_of_another_course_gets_404(login, other_instructor, budgeted, alice):
    client = login(other_instructor)
    assert client.get(reverse("jobs:course_budgets", args=[budgeted.slug])).status_code == 404
    top_up = {"topup-student": alice.pk, "topup-hours": 5}
    assert client.post(reverse("jobs:budget_top_up", args=[budgeted.slug]), top_up).status_code == 404


def test_instructor_saves_settings_and_the_change_is_audited(login, instructor, alice, course):
    client = login(instructor)
    url = reverse("jobs:course_budgets", args=[course.slug])
    assert "No budget yet" in client.get(url).content.decode()
    response = client.post(url, settings_data(student_gpu_hours="6", course_gpu_hours=""), follow=True)
    assert response.status_code == 200 and "1 setting(s) changed" in response.content.decode()
    course.refresh_from_db()
    assert course.student_gpu_hours == 6 and course.course_gpu_hours is None
    change = BudgetChange.objects.get(what="student_gpu_hours")
    assert (change.old_value, change.new_value, change.actor_username) == ("", "6", instructor.username)
    assert "alice" in response.content.decode()


@pytest.mark.parametrize(
    "field, value",
    [
        ("student_gpu_hours", "0"),
        ("student_gpu_hours", "100000"),
        ("budget_grace_minutes", "-1"),
        ("budget_grace_minutes", "99999"),
        ("idle_util_below", "0"),
        ("idle_util_below", "101"),
        ("idle_warn_minutes", "0"),
        ("course_gpu_hours", "abc"),
        ("budget_period", "month"),
    ],
)
def test_settings_out_of_range_are_refused_and_change_nothing(login, instructor, budgeted, field, value):
    response = login(instructor).post(
        reverse("jobs:course_budgets", args=[budgeted.slug]), settings_data(**{field: value})
    )
    assert response.status_code == 400 and "nothing was saved" in response.content.decode()
    assert not BudgetChange.objects.exists()


def test_instructor_tops_up_a_student_and_it_is_audited(login, instructor, alice, budgeted):
    client = login(instructor)
    data = {"topup-student": alice.pk, "topup-hours": 3, "topup-reason": "project week"}
    response = client.post(reverse("jobs:budget_top_up", args=[budgeted.slug]), data, follow=True)
    page = response.content.decode()
    assert "Added 3 GPU-hour(s) to alice" in page and "project week" in page
    change = BudgetChange.objects.get()
    assert (change.student, change.hours, change.what) == (alice, 3, "top_up")


@pytest.mark.parametrize("hours", ["0", "5000", "x"])
def test_top_up_out_of_range_is_refused(login, instructor, alice, budgeted, hours):
    data = {"topup-student": alice.pk, "topup-hours": hours}
    response = login(instructor).post(reverse("jobs:budget_top_up", args=[budgeted.slug]), data)
    assert response.status_code == 400 and "The top-up was not added" in response.content.decode()
    assert not BudgetChange.objects.exists()


def test_top_up_of_someone_outside_the_course_is_refused(login, instructor, carol, budgeted):
    data = {"topup-student": carol.pk, "topup-hours": 3}
    assert login(instructor).post(reverse("jobs:budget_top_up", args=[budgeted.slug]), data).status_code == 400
    assert not BudgetChange.objects.exists()


def test_instructor_sets_an_idle_rule_and_it_is_audited(login, instructor, budgeted):
    url = reverse("jobs:course_budgets", args=[budgeted.slug])
    response = login(instructor).post(url, settings_data(idle_util_below="10", idle_warn_minutes="20"), follow=True)
    assert "2 setting(s) changed" in response.content.decode()
    budgeted.refresh_from_db()
    assert (budgeted.idle_util_below, budgeted.idle_warn_minutes) == (10, 20)
    assert set(BudgetChange.objects.values_list("what", flat=True)) == {"idle_util_below", "idle_warn_minutes"}


def test_launch_page_shows_what_is_left(login, alice, budgeted, sleep_template):
    page = login(alice).get(reverse("jobs:launch", args=[budgeted.slug, sleep_template.slug])).content.decode()
    assert "GPU-hour budget</a>: 4 of 4 left" in page


def test_a_small_budget_reads_the_same_everywhere_with_its_own_digits(
    login, instructor, alice, bob, course, make_job, sleep_template
):
    Course.objects.filter(pk=course.pk).update(student_gpu_hours="0.05")
    job = make_job(alice, gpus_per_node=1)
    started = timezone.now() - timedelta(seconds=300)  # ended: its 112 GPU-seconds do not grow while pages load
    Job.objects.filter(pk=job.pk).update(
        state=JobState.COMPLETED, started_at=started, finished_at=started + timedelta(seconds=112)
    )
    client = login(instructor)
    page = client.get(reverse("jobs:course_budgets", args=[course.slug])).content.decode()
    budgets = re.findall(r'data-label="Budget">([^<]*)<', page)
    assert budgets == ["0.05", "0.05"], budgets  # alice (with a standing) and bob (none yet) alike
    assert re.findall(r'data-label="Left">([^<]*)<', page) == ["0.019", "0.05"]
    launch = login(alice).get(reverse("jobs:launch", args=[course.slug, sleep_template.slug])).content.decode()
    assert "GPU-hour budget</a>: 0.019 of 0.05 left" in launch
    assert '<option value="week" selected>Per week</option>' in page and "resets on Monday at 00:00" in page


@pytest.mark.parametrize(
    ("hours", "written"),
    [("0.05", "0.05"), ("0.0312", "0.031"), ("0.0049", "0.0049"), ("0.00001", "0"), ("3.404", "3.4"), ("20.00", "20"),
     ("12.345", "12.35"), (0, "0"), (None, "")],
)  # fmt: skip
def test_gpu_hours_keep_two_significant_digits_below_one_and_two_decimals_above(hours, written):
    from core.figures import gpu_hours

    assert gpu_hours(hours) == written
