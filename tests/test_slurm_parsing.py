"""Parsers of the SLURM backend, on output captured from the local cluster. Both poll paths also run for real in
integration (tests/integration/test_slurm_jobs.py); the sacct answers that slurmdbd gives only for a moment, such as
a cancelled job whose batch step has not yet stored its signal, are checked here."""

from clusters.backends.base import complete_utf8
from clusters.backends.kinds.slurm.backend import SlurmBackend, _parse_exit_code, _parse_time
from clusters.backends.ssh import CommandResult
from clusters.models import Cluster


def test_exit_codes():
    assert _parse_exit_code("0:0") == 0
    assert _parse_exit_code("3:0") == 3
    assert _parse_exit_code("0:9") == 137  # killed by SIGKILL, like a shell reports it
    assert _parse_exit_code("junk") is None


def test_times():
    assert _parse_time("N/A") is None and _parse_time("Unknown") is None
    assert _parse_time("2026-11-21T04:27:07").isoformat().startswith("2026-11-21T04:27:07")


def test_a_cut_multibyte_character_waits_for_the_next_chunk():
    text = "loss=2.3 ✓".encode()
    assert complete_utf8(text) == text
    assert complete_utf8(text[:-1]) == text[:-3]  # "✓" is three bytes; two of them are held back
    assert complete_utf8(b"") == b""


def test_sacct_output_is_parsed(db):
    cluster = Cluster(name="acct", host="127.0.0.1", kind_settings={"has_accounting": True})
    backend = SlurmBackend(cluster, account=None)
    sacct_output = (
        "101|COMPLETED|0:0|2026-11-21T10:00:00|2026-11-21T10:05:00|None\n"
        "102|CANCELLED by 1001|0:0|2026-11-21T10:00:00|2026-11-21T10:01:00|None\n"
        "102.batch|CANCELLED|0:15|2026-11-21T10:00:00|2026-11-21T10:01:00|\n"
        "103|PENDING|0:0|Unknown|Unknown|Resources\n"
        "104|TIMEOUT|0:0|2026-11-21T10:00:00|2026-11-21T11:00:00|TimeLimit\n"
        "104.batch|CANCELLED|0:15|2026-11-21T10:00:00|2026-11-21T11:00:00|\n"
        "106|CANCELLED by 0|0:0|2026-11-21T10:02:00|2026-11-21T10:02:00|None\n"  # cancelled while pending
    )
    calls = []
    backend._run = lambda argv: calls.append(argv) or CommandResult(0, sacct_output, "")
    statuses = backend.poll(["101", "102", "103", "104", "105", "106"])
    assert [argv[0] for argv in calls] == ["sacct", "squeue"]  # squeue: does the controller answer too?
    assert "--jobs=101,102,103,104,105,106" in calls[0] and statuses.from_controller
    assert "-X" not in calls[0]  # the batch steps hold the signal that stopped a job
    assert statuses["101"].state == "completed" and statuses["101"].exit_code == 0
    assert statuses["102"].state == "cancelled" and statuses["102"].raw_state == "CANCELLED"
    assert statuses["102"].exit_code == 143  # the batch step's 0:15, as scontrol reports it without accounting
    assert statuses["103"].state == "pending" and statuses["103"].reason == "Resources"
    assert statuses["103"].exit_code is None
    assert statuses["104"].state == "timed_out" and statuses["104"].exit_code == 143
    assert "105" not in statuses


def test_a_cancelled_job_s_signal_not_yet_in_accounting_is_read_from_scontrol(db):
    """slurmdbd stored this job's end with its batch step still at 0:0 (seen on the local cluster right after
    scancel; a poll later it says 0:15). scontrol has the signal from the start, so the exit code is never 0."""
    cluster = Cluster(name="acct", host="127.0.0.1", kind_settings={"has_accounting": True})
    backend = SlurmBackend(cluster, account=None)
    answers = {
        "sacct": "2823|CANCELLED by 0|0:0|2026-11-24T06:49:50|2026-11-24T06:49:53|None\n"
        "2823.batch|CANCELLED|0:0|2026-11-24T06:49:50|2026-11-24T06:49:53|\n"
        "2824|COMPLETED|0:0|2026-11-24T06:49:50|2026-11-24T06:49:53|None\n",
        "scontrol": "JobId=2823 JobName=wrap UserId=root(0) JobState=CANCELLED Reason=None BatchFlag=1 "
        "Reboot=0 ExitCode=0:15 RunTime=00:00:03 TimeLimit=01:00:00\n",
        "squeue": "",
    }
    calls = []
    backend._run = lambda argv: calls.append(argv) or CommandResult(0, answers[argv[0]], "")
    statuses = backend.poll(["2823", "2824"])
    assert statuses["2823"].exit_code == 143 and statuses["2823"].state == "cancelled"
    assert statuses["2824"].exit_code == 0
    assert [argv[0] for argv in calls] == ["sacct", "scontrol", "squeue"]  # a completed job's 0:0 is not asked again
    assert calls[1][-1] == "2823"

    # slurmctld has forgotten the job (MinJobAge) or is down: the code is unknown, not a wrong 0.
    answers["scontrol"] = ""
    for said in ("slurm_load_jobs error: Invalid job id specified", "Unable to contact slurm controller"):
        backend._run = lambda argv, said=said: (
            CommandResult(0, answers["sacct"], "") if argv[0] == "sacct" else CommandResult(1, "", said)
        )
        status = backend.poll(["2823"])["2823"]
        assert status.state == "cancelled" and status.exit_code is None


def test_a_cancelled_job_the_controller_still_completes_is_held_running_until_its_code_is_known(db):
    """Seen in CI: accounting already says CANCELLED with 0:0 while slurmctld still waits for the batch step
    (JobState=COMPLETING ExitCode=0:0). Taking that 0 would record a wrong exit code for good."""
    backend = SlurmBackend(Cluster(name="acct", host="127.0.0.1", kind_settings={"has_accounting": True}), account=None)
    answers = {
        "sacct": "2830|CANCELLED by 0|0:0|2026-11-27T06:49:50|2026-11-27T06:49:53|None\n",
        "scontrol": "JobId=2830 JobName=wrap JobState=COMPLETING Reason=None ExitCode=0:0 RunTime=00:00:03\n",
        "squeue": "",
    }
    backend._run = lambda argv: CommandResult(0, answers[argv[0]], "")
    status = backend.poll(["2830"])["2830"]
    assert (status.state, status.raw_state) == ("running", "COMPLETING")
    assert status.exit_code is None and status.finished_at is None

    answers["scontrol"] = "JobId=2830 JobName=wrap JobState=CANCELLED Reason=None ExitCode=0:15 RunTime=00:00:04\n"
    status = backend.poll(["2830"])["2830"]
    assert (status.state, status.exit_code) == ("cancelled", 143)


def _cluster_where(monkeypatch, controller_says: str) -> SlurmBackend:
    """A cluster with accounting whose slurmdbd answers sacct (job 77 running) and whose slurmctld answers squeue
    with `controller_says` on stderr ("" = it answers), as the login node's commands print them."""
    from clusters.backends import ssh

    def run(cluster, account, argv, **kwargs):
        if argv[0] == "sacct":
            return CommandResult(0, "77|RUNNING|0:0|2026-11-21T10:00:00|Unknown|None\n", "")
        return CommandResult(1, "", controller_says) if controller_says else CommandResult(0, "77\n", "")

    monkeypatch.setattr(ssh, "run", run)
    return SlurmBackend(Cluster(name="acct", host="127.0.0.1", kind_settings={"has_accounting": True}), account=None)


def test_with_slurmctld_down_a_poll_answered_by_accounting_says_so(monkeypatch):
    backend = _cluster_where(monkeypatch, "squeue: error: Unable to contact slurm controller (connect failure)")
    statuses = backend.poll(["77"])
    assert statuses["77"].state == "running"  # what slurmdbd holds: the controller's last report
    assert statuses.from_controller is False and "slurmctld did not answer" in statuses.note


def test_a_controller_that_answers_or_no_longer_holds_the_job_is_heard(monkeypatch):
    assert _cluster_where(monkeypatch, "").poll(["77"]).from_controller
    forgot = _cluster_where(monkeypatch, "slurm_load_jobs error: Invalid job id specified")
    assert forgot.poll(["77"]).from_controller
