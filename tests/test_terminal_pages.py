"""The job terminal's page: anonymous, another student, the owner, the course's instructor and a TA."""

from __future__ import annotations

from core.choices import JobState
from courses.models import Enrollment, Role


def url(job) -> str:
    return f"/jobs/{job.pk}/terminal/"


def test_anonymous_is_sent_to_log_in(client, running_job):
    response = client.get(url(running_job))
    assert response.status_code == 302 and "/login/" in response["Location"]


def test_another_student_gets_404(login, running_job, bob, carol):
    assert login(bob).get(url(running_job)).status_code == 404
    assert login(carol).get(url(running_job)).status_code == 404


def test_owner_gets_the_terminal_wired_to_its_socket(login, running_job, alice):
    response = login(alice).get(url(running_job))
    assert response.status_code == 200
    assert f'data-socket="/ws/jobs/{running_job.pk}/terminal/"' in response.content.decode()
    assert b"staff-notice" not in response.content


def test_instructor_is_told_the_student_will_see_it(login, running_job, instructor):
    response = login(instructor).get(url(running_job))
    assert response.status_code == 200 and b"staff-notice" in response.content


def test_teaching_assistant_is_refused_with_a_reason(login, running_job, make_user, course):
    ta = make_user("tara")
    Enrollment.objects.create(user=ta, course=course, role=Role.TA)
    response = login(ta).get(url(running_job))
    assert response.status_code == 403


def test_a_job_that_is_not_running_says_so_instead_of_a_terminal(login, make_job, alice):
    job = make_job(alice, seconds=60)
    response = login(alice).get(url(job))
    assert response.status_code == 200 and b"not running" in response.content and b"data-socket" not in response.content


def test_job_page_offers_the_terminal_only_while_running(login, running_job, alice):
    assert b'id="open-terminal"' in login(alice).get(f"/jobs/{running_job.pk}/").content
    running_job.state = JobState.COMPLETED
    running_job.save()
    assert b'id="open-terminal"' not in login(alice).get(f"/jobs/{running_job.pk}/").content


def _opened_argv(monkeypatch, job) -> tuple[str, list[str]]:
    """What the SLURM kind would run for `job`'s terminal, and as which login (the SSH step itself not taken)."""
    from clusters import kinds
    from clusters.backends import terminal

    seen: dict = {"typed": b""}

    class Typed:
        def write(self, data: bytes) -> None:
            seen["typed"] += data

    def opened(cluster, login, argv, **size):
        seen.update(login=login, argv=argv)
        return Typed()

    monkeypatch.setattr(terminal, "open_terminal", opened)
    kinds.kind_of("slurm").open_terminal(job, cols=80, rows=24)
    _opened_argv.typed = seen["typed"].decode()  # type: ignore[attr-defined]
    return seen["login"].username, seen["argv"]


def test_the_shell_runs_as_the_jobs_own_login(monkeypatch, running_job):
    running_job.account = running_job.cluster.service_account()  # a job from before the shared user
    login, argv = _opened_argv(monkeypatch, running_job)
    assert (login, argv) == ("labsvc", ["srun", "--jobid=4242", "--overlap", "--pty", "bash", "-l"])


def test_in_the_shared_mode_the_shell_is_the_shared_users_never_the_service_accounts(monkeypatch, running_job):
    login, argv = _opened_argv(monkeypatch, running_job)
    shell = ["srun", "--jobid=4242", "--overlap", "--pty", "bash", "-l"]
    assert (login, argv) == ("labsvc", ["sudo", "-n", "-u", "labshared", "--", *shell])


def test_the_shell_runs_as_the_students_user_through_sudo_when_jobs_do(monkeypatch, running_job, alice):
    from clusters.models import AuthMethod, ClusterAccount

    running_job.account = ClusterAccount.objects.create(
        cluster=running_job.cluster, user=alice, username="jalice", auth_method=AuthMethod.VIA_SERVICE
    )
    running_job.save()
    login, argv = _opened_argv(monkeypatch, running_job)
    assert login == "labsvc"
    assert argv == ["sudo", "-n", "-u", "jalice", "--", "srun", "--jobid=4242", "--overlap", "--pty", "bash", "-l"]


def test_the_shell_starts_in_the_run_directory_with_the_jobs_gpulab_variables(monkeypatch, running_job):
    """srun (pinned by the sudo rule) takes no directory or variables: the terminal types them first, as the job's
    script set them (quoted by the portal), then clears the screen."""
    running_job.script = (
        "#!/bin/bash\n#SBATCH --job-name=x\n\n# Launched from GPU Lab Portal, job 1.\numask 077\n"
        f'export GPULAB_JOB_ID={running_job.pk}\nexport GPULAB_LAB_DIR="$HOME"/gpulab\n'
        "export GPULAB_P_data='my notes.txt'\n\nexport GPULAB_FROM_BODY=$(id)\necho body\n"
    )
    _opened_argv(monkeypatch, running_job)
    typed = _opened_argv.typed  # type: ignore[attr-defined]
    assert typed == (
        f' export GPULAB_JOB_ID={running_job.pk}; export GPULAB_LAB_DIR="$HOME"/gpulab; '
        f"export GPULAB_P_data='my notes.txt'; cd -- \"$GPULAB_LAB_DIR\"/jobs/{running_job.pk} && clear\n"
    )
    running_job.script = "#!/bin/bash\necho a script from before the portal's header\n"
    _opened_argv(monkeypatch, running_job)
    assert _opened_argv.typed == ""  # type: ignore[attr-defined]
