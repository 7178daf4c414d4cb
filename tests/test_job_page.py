"""The job page's progress and time, the cancel confirmation and its aftermath, and times in the viewer's zone."""

from datetime import UTC, timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from core.choices import EventKind, JobState
from jobs.models import Job
from jobs.progress import job_progress
from jobs.states import record, transition
from telemetry.models import SeriesChunk

pytestmark = pytest.mark.django_db

POINTS = [{"epoch": 0, "step": s, "loss": 3.0, "tok_s": 900.0, "step_ms": 400.0} for s in range(10, 160, 10)]


def _running(make_job, owner, minutes_ago: float = 12, **params):
    job = make_job(owner, **params)
    transition(job, JobState.SUBMITTING)
    transition(job, JobState.RUNNING, scheduler_id=str(4000 + Job.objects.count()))
    started = timezone.now() - timedelta(minutes=minutes_ago)
    Job.objects.filter(pk=job.pk).update(submitted_at=started, started_at=started)
    job.refresh_from_db()
    return job


@pytest.fixture
def points(monkeypatch):
    """The trainer points telemetry holds for a job (the page reads them through telemetry's function)."""
    stored = {}
    monkeypatch.setattr("jobs.views.jobs.recent_curve_points", lambda job_id, count=10: stored.get(job_id, [])[-count:])
    return stored


class TestProgress:
    def test_step_eta_and_time_left_from_the_last_points(self, make_job, alice):
        job = _running(make_job, alice, minutes_ago=12, time_minutes=10)
        job.params["max_steps"] = 300
        now = timezone.now()
        progress = job_progress(job, POINTS, now)
        assert (progress.step, progress.max_steps, progress.percent) == (150, 300, 50)
        assert progress.eta == timedelta(seconds=150 * 0.4)  # 150 steps left at the recent 400 ms
        assert progress.ends_at == job.started_at + timedelta(minutes=10)
        assert progress.time_left == timedelta(0) and progress.finishes_after_limit  # 12 min run of a 10 min limit
        assert abs(progress.elapsed - timedelta(minutes=12)) < timedelta(seconds=5)

    def test_eta_follows_the_recent_pace_not_the_first_steps(self, make_job, alice):
        job = _running(make_job, alice)
        job.params["max_steps"] = 1000
        slow_start = [{"step": 10, "step_ms": 5000.0}] + [{"step": 20 + i, "step_ms": 10.0} for i in range(5)]
        assert job_progress(job, slow_start, timezone.now()).eta == timedelta(milliseconds=(1000 - 24) * 10)

    def test_nothing_is_guessed_without_numbers(self, make_job, alice):
        queued = make_job(alice)
        assert job_progress(queued, POINTS, timezone.now()).elapsed is None
        job = _running(make_job, alice)
        progress = job_progress(job, [{"step": 40}], timezone.now())  # no max_steps, no step_ms
        assert progress.step == 40 and progress.percent is None and progress.eta is None

    def test_finished_job_shows_how_long_it_ran_and_no_time_left(self, make_job, alice):
        job = _running(make_job, alice, minutes_ago=30, time_minutes=10)
        transition(job, JobState.COMPLETED, finished_at=job.started_at + timedelta(minutes=7))
        progress = job_progress(job, POINTS, timezone.now())
        assert progress.elapsed == timedelta(minutes=7) and progress.time_left is None and progress.eta is None

    def test_step_of_and_eta_count_to_the_steps_the_trainer_plans_not_max_steps(self, make_job, alice):
        job = _running(make_job, alice)
        job.params["max_steps"] = 300  # the epoch ends first: the trainer plans 214
        planned = [{**p, "total_steps": 214} for p in POINTS]
        progress = job_progress(job, planned, timezone.now())
        assert (progress.step, progress.max_steps, progress.percent) == (150, 214, 70)
        assert progress.eta == timedelta(seconds=(214 - 150) * 0.4)

    def test_a_finished_job_without_planned_steps_says_no_step_of_max_steps(self, make_job, alice):
        job = _running(make_job, alice)
        transition(job, JobState.COMPLETED)
        job.params["max_steps"] = 300
        progress = job_progress(job, [{"step": 214}], timezone.now())
        assert (progress.step, progress.max_steps, progress.percent) == (214, None, None)


class TestJobPageShowsProgress:
    def test_running_training_job_shows_elapsed_time_left_step_and_bar(self, login, make_job, alice, points):
        job = _running(make_job, alice, minutes_ago=3, time_minutes=10)
        Job.objects.filter(pk=job.pk).update(params={**job.params, "max_steps": 300})
        points[job.pk] = POINTS
        html = login(alice).get(reverse("jobs:detail", args=[job.pk])).content.decode()
        assert 'id="elapsed">3 min<' in html
        assert 'id="time-left">6 min' in html or 'id="time-left">7 min' in html
        assert "step 150 of 300" in html and "about 1 min to go at the recent pace" in html
        assert '<progress id="step-progress" max="100" value="50"' in html
        # The state panel's refresh carries the same numbers.
        status = login(alice).get(reverse("jobs:status", args=[job.pk])).content.decode()
        assert "step 150 of 300" in status

    def test_page_says_step_of_the_planned_steps_with_their_eta(self, login, make_job, alice, points):
        job = _running(make_job, alice, minutes_ago=3, time_minutes=10)
        Job.objects.filter(pk=job.pk).update(params={**job.params, "max_steps": 300})
        points[job.pk] = [{**p, "total_steps": 214} for p in POINTS]
        html = login(alice).get(reverse("jobs:detail", args=[job.pk])).content.decode()
        assert "step 150 of 214" in html and "of 300" not in html
        assert '<progress id="step-progress" max="100" value="70"' in html

    def test_finished_job_a_day_later_shows_its_last_step_from_the_stored_series(self, login, make_job, alice, points):
        job = _running(make_job, alice, minutes_ago=60 * 30)
        transition(job, JobState.COMPLETED, finished_at=job.started_at + timedelta(minutes=20))
        loss = {"loss": {"name": "loss", "x": [10, 20, 30], "y": [3.0, 2.5, 2.0]}}
        start = job.started_at
        SeriesChunk.objects.create(job=job, start=start, end=start + timedelta(minutes=1), series={"loss": loss})
        later = {"loss": {"name": "loss", "x": [200, 214], "y": [1.2, 1.1]}}
        SeriesChunk.objects.create(
            job=job, start=start + timedelta(minutes=1), end=start + timedelta(minutes=20), series={"loss": later}
        )
        SeriesChunk.objects.create(  # a chunk of time charts only, flushed last
            job=job, start=start + timedelta(minutes=20), end=start + timedelta(minutes=21), series={"gpu-util": {}}
        )
        assert job.pk not in points  # the curve in Redis has expired
        html = login(alice).get(reverse("jobs:detail", args=[job.pk])).content.decode()
        assert '<dd id="step">step 214</dd>' in html

    def test_times_are_time_elements_the_browser_puts_in_the_viewers_zone(self, login, make_job, alice, points):
        job = _running(make_job, alice)
        html = login(alice).get(reverse("jobs:detail", args=[job.pk])).content.decode()
        started = job.started_at.astimezone(UTC)
        iso = started.isoformat(timespec="seconds").replace("+00:00", "Z")
        assert f'<time datetime="{iso}" data-local-time="datetime">' in html
        assert started.strftime("%Y-%m-%d %H:%M:%S UTC") in html  # without JavaScript: exact, and the zone named

    def test_log_is_not_a_live_region_and_state_changes_have_one(self, login, make_job, alice):
        job = _running(make_job, alice)
        html = login(alice).get(reverse("jobs:detail", args=[job.pk])).content.decode()
        start = html.rindex("<pre", 0, html.index('id="log"'))
        log_tag = html[start : html.index(">", start)]
        assert "aria-live" not in log_tag
        assert '<p id="job-announce" class="visually-hidden" role="status"></p>' in html


class TestCancelConfirmation:
    def test_anonymous_is_sent_to_login(self, client, make_job, alice):
        job = _running(make_job, alice)
        response = client.get(reverse("jobs:cancel", args=[job.pk]))
        assert response.status_code == 302 and response.url.startswith(reverse("login"))

    def test_other_student_gets_404(self, login, make_job, alice, bob):
        job = _running(make_job, alice)
        assert login(bob).get(reverse("jobs:cancel", args=[job.pk])).status_code == 404

    def test_confirm_page_says_what_stops_and_changes_nothing(self, login, make_job, alice, points):
        job = _running(make_job, alice, minutes_ago=12)
        Job.objects.filter(pk=job.pk).update(params={**job.params, "max_steps": 300})
        points[job.pk] = POINTS
        response = login(alice).get(reverse("jobs:cancel", args=[job.pk]))
        html = response.content.decode()
        assert response.status_code == 200
        assert "Stop training? It has run 12 min and reached step 150 of 300." in html
        assert f'action="{reverse("jobs:cancel", args=[job.pk])}"' in html and 'method="post"' in html
        job.refresh_from_db()
        assert job.cancel_requested_at is None and job.state == "running"

    def test_job_page_cancel_is_a_link_to_the_confirmation_with_its_question(self, login, make_job, alice):
        job = _running(make_job, alice, minutes_ago=4)
        html = login(alice).get(reverse("jobs:detail", args=[job.pk])).content.decode()
        assert f'id="cancel" href="{reverse("jobs:cancel", args=[job.pk])}"' in html
        assert 'data-cancel-question="Stop this job? It has run 4 min;' in html
        assert '<dialog id="cancel-dialog"' in html

    def test_queued_job_question_says_nothing_ran(self, login, make_job, alice):
        job = make_job(alice)
        html = login(alice).get(reverse("jobs:cancel", args=[job.pk])).content.decode()
        assert "It has not started yet" in html

    def test_instructor_confirms_and_the_page_says_who_cancelled(self, login, make_job, alice, instructor):
        job = make_job(alice)
        client = login(instructor)
        assert client.get(reverse("jobs:cancel", args=[job.pk])).status_code == 200
        response = client.post(reverse("jobs:cancel", args=[job.pk]), follow=True)
        html = response.content.decode()
        assert "Cancelled by <strong>ines</strong> at <time" in html

    def test_finished_job_confirm_page_goes_back_to_the_job(self, login, make_job, alice):
        job = _running(make_job, alice)
        transition(job, JobState.COMPLETED)
        response = login(alice).get(reverse("jobs:cancel", args=[job.pk]))
        assert response.status_code == 302 and response.url == job.get_absolute_url()


class TestAfterACancel:
    def test_cancel_under_way_is_said_by_the_panel_not_a_stale_flash(self, login, make_job, alice, fake_backend):
        job = _running(make_job, alice)
        page = login(alice).post(reverse("jobs:cancel", args=[job.pk]), follow=True).content.decode()
        assert 'id="cancelling"' in page and "Cancelling: the cluster will stop" not in page

    def test_job_that_ended_before_the_cancel_says_so(self, login, make_job, alice):
        job = _running(make_job, alice)
        Job.objects.filter(pk=job.pk).update(cancel_requested_at=timezone.now())
        record(job, EventKind.CANCEL, "Cancel requested.", actor=alice)
        transition(job, JobState.COMPLETED, exit_code=0)
        html = login(alice).get(reverse("jobs:detail", args=[job.pk])).content.decode()
        assert "The job had already ended (Completed) when the cancel reached the cluster" in html
        assert "Cancelling" not in html and 'id="cancel"' not in html

    def test_exit_143_after_a_user_cancel_reads_as_the_cancel_not_a_crash(self, login, make_job, alice):
        job = _running(make_job, alice)
        Job.objects.filter(pk=job.pk).update(cancel_requested_at=timezone.now())
        record(job, EventKind.CANCEL, "Cancel requested.", actor=alice)
        transition(job, JobState.CANCELLED, exit_code=143, error="The job was cancelled.")
        html = login(alice).get(reverse("jobs:detail", args=[job.pk])).content.decode()
        assert "(SIGTERM: the cancel stopped it, as expected)" in html
        assert "Cancelled by <strong>alice</strong>" in html and 'class="error"' not in html

    def test_a_cancelled_job_without_an_exit_code_says_none_not_0(self, login, make_job, alice):
        job = _running(make_job, alice)
        transition(job, JobState.CANCELLED, exit_code=None)
        html = login(alice).get(reverse("jobs:detail", args=[job.pk])).content.decode()
        assert '<span class="mono" id="exit-code">none</span>' in html
        assert "the cluster reported no exit code for it" in html
        queued = make_job(alice)
        transition(queued, JobState.CANCELLED, actor=alice)
        html = login(alice).get(reverse("jobs:detail", args=[queued.pk])).content.decode()
        assert '<span class="mono" id="exit-code">none</span> <span class="small muted">(it never ran)' in html

    def test_a_script_that_exits_0_on_the_cancel_shows_0_and_why(self, login, make_job, alice):
        job = _running(make_job, alice)  # the trainer saves its checkpoint on SIGTERM and exits 0
        transition(job, JobState.CANCELLED, exit_code=0)
        html = login(alice).get(reverse("jobs:detail", args=[job.pk])).content.decode()
        assert '<span class="mono" id="exit-code">0</span>' in html
        assert "the script itself exited 0: it stopped cleanly when the cancel signalled it" in html

    def test_cancel_from_outside_the_portal_says_so(self, login, make_job, alice):
        job = _running(make_job, alice)
        transition(job, JobState.CANCELLED, exit_code=143)
        html = login(alice).get(reverse("jobs:detail", args=[job.pk])).content.decode()
        assert "Cancelled on the cluster, not from this portal." in html


def test_a_finished_jobs_log_and_charts_do_not_call_themselves_live(login, make_job, alice):
    job = _running(make_job, alice, minutes_ago=30)
    running = login(alice).get(reverse("jobs:detail", args=[job.pk])).content.decode()
    assert 'output.log, <span id="log-mode">live</span>' in running and "Loading the recorded run" not in running
    transition(job, JobState.COMPLETED, exit_code=0)
    ended = login(alice).get(reverse("jobs:detail", args=[job.pk])).content.decode()
    assert 'output.log, <span id="log-mode">as it ended</span>' in ended and ">live</span>" not in ended
    assert "Loading the recorded run…" in ended and "Waiting for the first sample" not in ended


class TestStatePanelIsSentOnlyWhenItChanged:
    """The page's poller sends the versions it holds (?seen=); the answer carries only the parts that changed."""

    @staticmethod
    def poll(client, job, seen=""):
        return client.get(reverse("jobs:status", args=[job.pk]), {"seen": seen})

    @staticmethod
    def seen_in(html: str) -> str:
        return html.split("?seen=", 1)[1].split('"', 1)[0]

    def test_nothing_changed_is_a_204_with_nothing_to_swap(self, login, make_job, alice, points):
        job = _running(make_job, alice, minutes_ago=3)
        client = login(alice)
        seen = self.seen_in(client.get(reverse("jobs:detail", args=[job.pk])).content.decode())
        response = self.poll(client, job, seen)
        assert response.status_code == 204 and response.content == b""

    def test_a_new_step_sends_only_the_progress_and_new_versions(self, login, make_job, alice, points):
        job = _running(make_job, alice, minutes_ago=3)
        Job.objects.filter(pk=job.pk).update(params={**job.params, "max_steps": 300})
        points[job.pk] = POINTS[:5]
        client = login(alice)
        seen = self.seen_in(client.get(reverse("jobs:detail", args=[job.pk])).content.decode())
        points[job.pk] = POINTS
        html = self.poll(client, job, seen).content.decode()
        assert 'id="job-progress"' in html and "step 150 of 300" in html
        assert 'id="job-status"' not in html and 'id="job-timeline"' not in html
        assert 'data-cancel-question="Stop training? It has run 3 min and reached step 150 of 300.' in html
        assert self.poll(client, job, self.seen_in(html)).status_code == 204

    def test_a_state_change_sends_the_card_and_timeline_and_ends_the_polling(self, login, make_job, alice, points):
        job = _running(make_job, alice)
        client = login(alice)
        page = client.get(reverse("jobs:detail", args=[job.pk])).content.decode()
        assert 'id="job-status-poller" hidden data-url="' in page
        transition(job, JobState.COMPLETED, exit_code=0)
        html = self.poll(client, job, self.seen_in(page)).content.decode()
        assert 'data-state="completed"' in html and 'id="job-timeline"' in html and 'id="job-progress"' in html
        poller = html[html.index('<div id="job-status-poller"') :]
        assert "data-url" not in poller.split(">", 1)[0]

    def test_another_student_polls_nothing(self, login, make_job, alice, bob):
        job = _running(make_job, alice)
        assert self.poll(login(bob), job, "a.b.c").status_code == 404


def test_the_log_poller_gets_nothing_to_swap_until_new_text_comes(login, make_job, alice, fake_backend):
    job = _running(make_job, alice)
    fake_backend.logs[job.pk] = "step 1\n"
    client = login(alice)
    url = reverse("jobs:log", args=[job.pk])
    first = client.get(url, {"offset": 0}).content.decode()
    assert "step 1" in first and '?offset=7&amp;said="' in first
    assert client.get(url, {"offset": 7, "said": ""}).status_code == 204  # nothing new: the page keeps its poller
    fake_backend.logs[job.pk] += "step 2\n"
    assert "step 2" in client.get(url, {"offset": 7, "said": ""}).content.decode()
