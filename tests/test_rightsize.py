"""The right-size report: sacct's figures parsed, advice and suggestions inside the template's schema, the job page,
the right-sized launch form and the class's efficiency table (each view: anonymous, wrong user, right user)."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from clusters.backends.slurm_family.accounting import AccountedUsage, parse_cpu_time, parse_sacct, parse_size
from core.choices import JobState
from jobs.models import Job, JobTemplate, JobUsage
from jobs.rightsize import class_efficiency, report_for, rightsized_params
from telemetry.models import JobSummary
from tests.kind_settings import set_cluster

pytestmark = pytest.mark.django_db

# Recorded from `sacct -n -P --noconvert --format=JobIDRaw,ElapsedRaw,TotalCPU,AllocCPUS,MaxRSS,ReqMem,AllocTRES,
# TimelimitRaw` on the local cluster (slurm 22.05.8, slurmdbd + MariaDB), for a 2-core, 1-GPU, 500M job.
SACCT = """\
3006|6|00:02.021|2||500M|billing=2,cpu=2,gres/gpu=1,node=1|3
3006.batch|6|00:02.021|2|168800256||cpu=2,gres/gpu=1,mem=0,node=1|
3007|61|01:02:03|4||4G|billing=4,cpu=4,node=1|10
3007.batch|61|01:00:00|4|1048576||cpu=4,mem=0,node=1|
3007.0|30|00:02:03|4|5242880||cpu=4,mem=0,node=1|
"""

RIGHTSIZE_PARAMS = [
    {"name": "partition", "type": "choice", "label": "Partition", "default": "debug"},
    {"name": "time_minutes", "type": "int", "label": "Time", "default": 60, "min": 5, "max": 120},
    {"name": "gpus_per_node", "type": "int", "label": "GPUs", "default": 4, "min": 1, "max": 4},
    {"name": "cpus_per_task", "type": "int", "label": "CPUs", "default": 8, "min": 2, "max": 16},
    {"name": "mem_gb", "type": "int", "label": "Memory (GB)", "default": 32, "min": 1, "max": 64},
]
GIB = 1024**3


class TestSacctParsing:
    def test_job_line_and_largest_step_rss(self):
        found = parse_sacct(SACCT, ["3006", "3007"])
        first, second = found["3006"], found["3007"]
        assert (first.elapsed_seconds, first.cpu_seconds, first.cpus, first.gpus) == (6, 2.021, 2, 1)
        assert first.max_rss_bytes == 168800256 and first.requested_memory_bytes == 500 * 1024**2
        assert first.time_limit_minutes == 3
        assert second.cpu_seconds == 3723 and second.max_rss_bytes == 5242880 and second.gpus == 0
        assert second.requested_memory_bytes == 4 * GIB

    def test_only_asked_jobs_and_no_rss_is_none(self):
        found = parse_sacct("9|5|00:01.000|1||||1\n", ["9", "3006"])
        assert list(found) == ["9"] and found["9"].max_rss_bytes is None and found["9"].requested_memory_bytes is None

    @pytest.mark.parametrize(
        ("text", "seconds"), [("00:02.021", 2.021), ("01:02:03", 3723), ("1-02:00:00", 93600), ("", 0.0)]
    )
    def test_total_cpu_formats(self, text, seconds):
        assert parse_cpu_time(text) == pytest.approx(seconds)

    @pytest.mark.parametrize(("text", "size"), [("168800256", 168800256), ("16Gn", 16 * GIB), ("0", None), ("", None)])
    def test_sizes(self, text, size):
        assert parse_size(text) == size


@pytest.fixture
def big_template(course):
    template = JobTemplate.objects.create(
        name="Big trainer",
        slug="big-trainer",
        body="python train.py\n",
        parameters=RIGHTSIZE_PARAMS,
        status=JobTemplate.Status.PUBLISHED,
        max_gpus=4,
        max_minutes=120,
    )
    template.courses.add(course)
    return template


def _ended(owner, course, template, cluster, *, state=JobState.COMPLETED, minutes=10, **params):
    from jobs.launch import launch

    job = launch(owner, course=course, template=template, cluster=cluster, raw_params=params)
    finished = timezone.now()
    Job.objects.filter(pk=job.pk).update(
        state=state,
        scheduler_id=str(5000 + Job.objects.count()),
        started_at=finished - timedelta(minutes=minutes),
        finished_at=finished,
    )
    return Job.objects.get(pk=job.pk)


def _accounted(job, *, cpu_seconds, cpus, elapsed, rss_gib, mem_gib, limit):
    return JobUsage.objects.create(
        job=job,
        elapsed_seconds=elapsed,
        cpu_seconds=cpu_seconds,
        cpus=cpus,
        gpus=job.gpus,
        max_rss_bytes=int(rss_gib * GIB),
        requested_memory_bytes=int(mem_gib * GIB),
        time_limit_minutes=limit,
    )


@pytest.fixture
def oversized(alice, course, big_template, cluster):
    """Four GPUs at 10 %, 8 cores of which 1 busy, 2 GiB of 32 used, 10 minutes of 60."""
    job = _ended(alice, course, big_template, cluster)
    _accounted(job, cpu_seconds=600, cpus=8, elapsed=600, rss_gib=2, mem_gib=32, limit=60)
    JobSummary.objects.create(
        job=job, gpu_hours=0.67, mean_gpu_util=10.0, peak_gpu_memory_mib=5120, gpu_memory_total_mib=81920, samples=40
    )
    return Job.objects.get(pk=job.pk)


class TestReport:
    def test_oversized_job_gets_smaller_values_inside_the_schema(self, oversized):
        report = report_for(oversized)
        lines = {line.resource: line for line in report.lines}
        assert lines["CPU cores"].percent == 12.5  # 600 s / (600 s x 8 cores)
        assert lines["Host memory"].percent == 6.2
        assert lines["Wall time"].percent == pytest.approx(16.7)
        assert lines["GPUs"].used == "10 % of their time on average" and lines["GPUs"].percent is None
        assert lines["GPU memory"].percent == 6.2 and lines["GPU memory"].requested == "80 GiB per GPU"  # 5 of 80 GiB
        # 1 busy core x 1.5 → 2 (also the schema's min); 2 GiB x 1.5 → 3; 10 min x 1.5 → 15; 4 GPUs at 10 % → 1
        assert report.suggested == {"cpus_per_task": 2, "mem_gb": 3, "time_minutes": 15, "gpus_per_node": 1}
        assert rightsized_params(oversized) == {**oversized.params, **report.suggested}
        assert report.in_words == "GPUs 1, CPUs 2, Memory (GB) 3, Time 15"

    def test_timed_out_job_asks_for_more_time_up_to_the_template_max(self, alice, course, big_template, cluster):
        job = _ended(alice, course, big_template, cluster, state=JobState.TIMED_OUT, minutes=60)
        report = report_for(job)
        assert report.suggested == {"time_minutes": 120}
        again = _ended(alice, course, big_template, cluster, state=JobState.TIMED_OUT, minutes=120, time_minutes=120)
        assert report_for(again).suggested == {}
        assert "save checkpoints" in report_for(again).lines[-1].advice

    def test_memory_near_the_limit_asks_for_more(self, alice, course, big_template, cluster):
        job = _ended(alice, course, big_template, cluster, mem_gb=4)
        _accounted(job, cpu_seconds=4800, cpus=8, elapsed=600, rss_gib=3.8, mem_gib=4, limit=60)
        report = report_for(Job.objects.get(pk=job.pk))
        assert report.suggested["mem_gb"] == 6 and "cpus_per_task" not in report.suggested

    def test_without_accounting_cpu_and_memory_are_left_out_not_zero(self, alice, course, big_template, cluster):
        set_cluster(cluster, has_accounting=False, save=True)
        report = report_for(_ended(alice, course, big_template, cluster))
        assert {line.resource for line in report.lines} == {"Wall time"}
        assert any("no SLURM accounting" in reason for reason in report.missing)
        assert any("no GPU samples" in reason for reason in report.missing)

    def test_cancelled_in_seconds_gets_one_note_and_no_advice(self, alice, course, big_template, cluster):
        job = _ended(alice, course, big_template, cluster, state=JobState.CANCELLED, minutes=0.12)
        JobSummary.objects.create(job=job, gpu_hours=0.002, mean_gpu_util=93.0, samples=1)
        report = report_for(Job.objects.get(pk=job.pk))
        assert report.lines == [] and report.suggested == {}
        assert report.too_little.startswith("The job was cancelled after 7 s, too short a run")
        page = _page(alice, job)
        assert page.count("too short a run") == 1
        assert "nothing to change" not in page and "Not shown" not in page and "About right" not in page

    def test_short_completed_run_asks_for_nothing(self, alice, course, big_template, cluster):
        job = _ended(alice, course, big_template, cluster, minutes=5 / 60)
        _accounted(job, cpu_seconds=0.2, cpus=1, elapsed=5, rss_gib=0.1, mem_gib=4, limit=60)
        report = report_for(Job.objects.get(pk=job.pk))
        assert report.lines == [] and report.suggested == {} and "ended after 5 s" in report.too_little

    def test_cancelled_run_gives_no_wall_time_verdict(self, alice, course, big_template, cluster):
        job = _ended(alice, course, big_template, cluster, state=JobState.CANCELLED, minutes=5)
        report = report_for(job)
        wall = next(line for line in report.lines if line.resource == "Wall time")
        assert "did not run to its end" in wall.advice and "time_minutes" not in report.suggested
        assert "No change to suggest from this run." in _page(alice, job)

    def test_one_idle_core_is_not_called_busy_and_plurals_agree(self, alice, course, big_template, cluster):
        job = _ended(alice, course, big_template, cluster, minutes=2, cpus_per_task=2, gpus_per_node=1)
        _accounted(job, cpu_seconds=1, cpus=1, elapsed=120, rss_gib=1, mem_gib=2, limit=60)
        JobSummary.objects.create(job=job, gpu_hours=0.03, mean_gpu_util=80.0, samples=10)
        report = report_for(Job.objects.get(pk=job.pk))
        lines = {line.resource: line for line in report.lines}
        assert "mostly idle" in lines["CPU cores"].advice and "busy; keep" not in lines["CPU cores"].advice
        assert lines["GPUs"].advice == "The GPU was busy; keep this number."
        assert lines["GPUs"].used == "80 % of its time on average"
        assert "Ask for 5 minutes." in lines["Wall time"].advice  # 2 min x 1.5 → 3, the schema's min is 5

    @pytest.mark.parametrize(
        ("has_accounting", "ended_ago", "said"),
        [
            (None, 1, "CPU and host memory: SLURM accounting not checked yet"),
            (False, 1, "CPU and host memory: SLURM accounting off: this cluster keeps no SLURM accounting"),
            (True, 1, "CPU and host memory: accounting figures arrive after the job ends"),
            (True, 60, "CPU and host memory: SLURM accounting kept no figures of this job."),
        ],
    )
    def test_missing_accounting_says_what_the_cluster_stored(
        self, alice, course, big_template, cluster, has_accounting, ended_ago, said
    ):
        set_cluster(cluster, has_accounting=has_accounting, save=True)
        job = _ended(alice, course, big_template, cluster)
        ended = timezone.now() - timedelta(minutes=ended_ago)
        Job.objects.filter(pk=job.pk).update(started_at=ended - timedelta(minutes=10), finished_at=ended)
        report = report_for(Job.objects.get(pk=job.pk))
        assert [reason for reason in report.missing if reason.startswith("CPU")] == [
            next(reason for reason in report.missing if reason.startswith(said))
        ]
        assert said in _page(alice, job)

    def test_running_or_never_started_job_has_no_report(self, make_job, alice):
        assert report_for(make_job(alice)) is None


def _page(user, job):
    from django.test import Client

    client = Client()
    client.force_login(user)
    return client.get(job.get_absolute_url()).content.decode()


class TestPages:
    def test_job_page_shows_the_report_and_the_right_sized_link(self, login, alice, oversized):
        page = login(alice).get(oversized.get_absolute_url()).content.decode()
        assert "Right-size report" in page and "(13 % of it)" in page  # CPU: 12.5 %
        assert f"{reverse('jobs:clone', args=[oversized.pk])}?rightsized=1" in page

    def test_right_sized_form_is_prefilled_with_the_suggestions(self, login, alice, oversized):
        response = login(alice).get(reverse("jobs:clone", args=[oversized.pk]) + "?rightsized=1", follow=True)
        form = response.context["form"]
        assert form["param_cpus_per_task"].value() == 2 and form["param_mem_gb"].value() == 3
        assert form["param_time_minutes"].value() == 15 and form["param_gpus_per_node"].value() == 1
        assert "right-sized from" in response.content.decode()

    def test_right_sized_form_refuses_anonymous_and_other_students(self, client, login, oversized, bob):
        url = reverse("jobs:clone", args=[oversized.pk]) + "?rightsized=1"
        assert client.get(url).status_code == 302 and "login" in client.get(url)["Location"]
        assert login(bob).get(url).status_code == 404
        launch = reverse("jobs:launch", args=[oversized.course.slug, oversized.template.slug])
        assert login(bob).get(f"{launch}?from={oversized.pk}&rightsized=1").status_code == 404

    def test_class_table_for_the_instructor_only(self, client, login, instructor, alice, oversized, course):
        url = reverse("courses:jobs", args=[course.slug])
        assert client.get(url).status_code == 302
        assert login(alice).get(url).status_code in {403, 404}
        page = login(instructor).get(url).content.decode()
        assert "Class efficiency" in page and 'data-label="CPU efficiency">13 %' in page

    def test_class_table_empty_state(self, login, instructor, course):
        page = login(instructor).get(reverse("courses:jobs", args=[course.slug])).content.decode()
        assert "No job of this course has ended yet" in page


def test_class_efficiency_is_one_query_whatever_the_number_of_jobs(alice, bob, course, big_template, cluster):
    for owner in (alice, alice, bob):
        job = _ended(owner, course, big_template, cluster)
        _accounted(job, cpu_seconds=1200, cpus=4, elapsed=600, rss_gib=8, mem_gib=32, limit=20)
    _ended(bob, course, big_template, cluster)  # no accounting: counted, not averaged in
    blip = _ended(bob, course, big_template, cluster, state=JobState.CANCELLED, minutes=0.02)
    JobSummary.objects.create(job=blip, gpu_hours=0.0, mean_gpu_util=92.0, samples=1)  # cancelled as it started
    with CaptureQueriesContext(connection) as queries:
        rows = class_efficiency(course)
    assert len(queries) == 1
    by_name = {row.username: row for row in rows}
    assert by_name[alice.username].cpu_efficiency == 50.0 and by_name[alice.username].memory_used == 25.0
    assert by_name[alice.username].time_used == 50.0
    assert (by_name[bob.username].jobs, by_name[bob.username].accounted) == (2, 1)
    assert by_name[bob.username].gpu_util is None  # the blip's start-up sample is not averaged in


# GET /slurmdb/v0.0.38/jobs?step=3006 on the local cluster, cut to the fields read (microseconds as sent).
DBV_ANSWER = {
    "errors": [],
    "jobs": [
        {
            "job_id": 3006,
            "time": {"elapsed": 6, "end": 1795439318, "limit": 3, "total": {"seconds": 0, "microseconds": 0}},
            "tres": {
                "allocated": [{"type": "cpu", "name": None, "count": 2}, {"type": "gres", "name": "gpu", "count": 1}],
                "requested": [{"type": "cpu", "name": None, "count": 2}, {"type": "mem", "name": None, "count": 500}],
            },
            "steps": [
                {
                    "step": {"id": "batch"},
                    "time": {"total": {"seconds": 1, "microseconds": 1021954}},
                    "tres": {
                        "requested": {"max": [{"type": "cpu", "count": 1530}, {"type": "mem", "count": 168800256}]}
                    },
                }
            ],
        },
        {"job_id": 77, "time": {"elapsed": 1, "end": 0}, "tres": {}, "steps": []},  # its end not stored yet
        {"job_id": 78, "time": {"elapsed": 2, "end": 1795439318, "limit": 0}, "tres": {}, "steps": []},  # nor limit
        {"job_id": 79, "time": {"elapsed": 2, "end": 1795439318, "limit": 0xFFFFFFFE}, "tres": {}, "steps": []},
    ],
}


def test_slurmdbd_answer_gives_sacct_figures():
    from clusters.backends.kinds.slurm_rest.parsing import usage

    found = usage(DBV_ANSWER, ["3006", "77", "78", "79"])
    assert list(found) == ["3006"]  # 77 to 79 are asked for again once slurmdbd has their end and their limit
    assert found["3006"] == AccountedUsage(
        scheduler_id="3006",
        elapsed_seconds=6,
        cpu_seconds=2.022,
        cpus=2,
        gpus=1,
        max_rss_bytes=168800256,
        requested_memory_bytes=500 * 1024**2,
        time_limit_minutes=3,
    )


@pytest.mark.parametrize(("limit", "kept"), [(30, 30), ({"set": True, "number": 30}, 30), (0xFFFFFFFF, None)])
def test_slurmdbd_limit_forms(limit, kept):
    from clusters.backends.kinds.slurm_rest.parsing import usage

    record = {"job_id": 5, "time": {"elapsed": 2, "end": 1795439318, "limit": limit}, "tres": {}, "steps": []}
    assert usage({"jobs": [record]}, ["5"])["5"].time_limit_minutes == kept


def _usage(scheduler_id: str) -> AccountedUsage:
    return AccountedUsage(scheduler_id, 60, 30.0, 2, 0, 1024**2, 2 * GIB, 5)


def test_poll_asks_accounting_once_for_the_jobs_that_ended_and_again_for_a_missing_one(
    fake_backend, make_job, alice, bob, cluster
):
    from clusters.backends.base import SchedulerStatus
    from jobs import polling, submission

    set_cluster(cluster, has_accounting=True, save=True)
    jobs = []
    for owner in (alice, alice, bob):
        job = make_job(owner)
        submission.submit(job.pk)
        job.refresh_from_db()
        jobs.append(job)
    done, late, running = (job.scheduler_id for job in jobs)
    fake_backend.statuses[running] = SchedulerStatus(running, JobState.RUNNING, "RUNNING")
    for sid in (done, late):
        fake_backend.statuses[sid] = SchedulerStatus(
            sid, JobState.COMPLETED, "COMPLETED", exit_code=0, started_at=timezone.now() - timedelta(minutes=1)
        )
    fake_backend.usages[done] = _usage(done)  # slurmdbd has not stored `late` yet
    polling.poll_cluster(cluster.pk)
    assert [sorted(call) for call in fake_backend.usage_calls] == [sorted([done, late])]
    assert list(JobUsage.objects.values_list("job__scheduler_id", flat=True)) == [done]

    fake_backend.usages[late] = _usage(late)
    polling.poll_cluster(cluster.pk)  # `running` keeps the cluster polled; `late` is asked for again, `done` is not
    assert fake_backend.usage_calls[-1] == [late]
    assert JobUsage.objects.get(job__scheduler_id=late).cpu_efficiency == 25.0  # 30 s / (60 s x 2 cores)


def test_cluster_without_accounting_asks_nothing_again(fake_backend, make_job, alice, cluster):
    from clusters.backends.base import SchedulerStatus
    from jobs import polling, submission

    first, second = make_job(alice), make_job(alice)
    for job in (first, second):
        submission.submit(job.pk)
        job.refresh_from_db()
    fake_backend.statuses[first.scheduler_id] = SchedulerStatus(
        first.scheduler_id, JobState.COMPLETED, "COMPLETED", exit_code=0, started_at=timezone.now()
    )
    fake_backend.statuses[second.scheduler_id] = SchedulerStatus(second.scheduler_id, JobState.RUNNING, "RUNNING")
    polling.poll_cluster(cluster.pk)
    polling.poll_cluster(cluster.pk)
    assert fake_backend.usage_calls == [[first.scheduler_id]]  # the backend answers nothing; no retries follow
    assert Job.objects.get(pk=first.pk).state == "completed" and not JobUsage.objects.exists()


@pytest.mark.parametrize("has_accounting", [None, True, False])
def test_cluster_admin_page_says_accounting_in_the_words_test_connection_uses(
    login, admin_user, cluster, has_accounting
):
    from clusters.backends.slurm_family.settings import accounting_in_words

    set_cluster(cluster, has_accounting=has_accounting, save=True)
    page = login(admin_user).get(reverse("admin:clusters_cluster_change", args=[cluster.pk])).content.decode()
    said = [value for value in (None, True, False) if accounting_in_words(value) in page]
    assert said == [has_accounting]


def test_admin_lists_accounting_read_only(client, login, admin_user, alice, oversized):
    url = reverse("admin:jobs_jobusage_changelist")
    assert login(alice).get(url).status_code == 302  # not staff: sent to the admin's login
    page = login(admin_user).get(url)
    assert page.status_code == 200 and oversized.short_id in page.content.decode()
    assert login(admin_user).get(reverse("admin:jobs_jobusage_add")).status_code == 403


class TestSimulatedGpus:
    """The demo's stand-in nvidia-smi replays figures whatever a job does: reports and pages say so, judge nothing."""

    def test_simulated_gpus_give_no_gpu_advice_and_the_report_says_so(self, alice, oversized):
        JobSummary.objects.filter(job=oversized).update(simulated_gpus=True)
        report = report_for(Job.objects.get(pk=oversized.pk))
        assert report.simulated.startswith("Simulated GPUs: this cluster's nvidia-smi is the demo's stand-in")
        assert {line.resource for line in report.lines} == {"CPU cores", "Host memory", "Wall time"}
        assert "gpus_per_node" not in report.suggested
        page = _page(alice, oversized)
        assert 'id="rightsize-simulated"' in page and 'id="summary-simulated"' in page
        assert "simulated, not measured" in page and "10.0 %" not in page

    def test_an_8_second_crash_on_simulated_gpus_shows_no_utilization_figure(
        self, alice, course, big_template, cluster
    ):
        job = _ended(alice, course, big_template, cluster, state=JobState.FAILED, minutes=8 / 60)
        figures = {
            "mean_gpu_util": 93.0,
            "max_gpu_util": 96.0,
            "peak_gpu_memory_mib": 61282,
            "gpu_memory_total_mib": 81559,
        }
        JobSummary.objects.create(job=job, gpu_hours=0.009, samples=8, simulated_gpus=True, **figures)
        report = report_for(Job.objects.get(pk=job.pk))
        assert report.too_little and report.simulated
        page = _page(alice, job)
        assert "93.0 %" not in page and "61282 MiB" not in page
        assert 'id="summary-simulated"' in page and 'id="rightsize-simulated"' in page
        assert "data-chart-simulated>" in page  # the recorded GPU charts' captions say "simulated", shown

    def test_measured_gpus_keep_their_figures_and_hidden_chart_labels(self, alice, oversized):
        page = _page(alice, oversized)
        assert "10.0 %" in page and "simulated" not in page.split('id="rightsize"')[1].split("</section>")[0]
        assert 'id="summary-simulated"' not in page and "data-chart-simulated hidden" in page
