"""The slurm-rest kind's readers, on answers recorded from the real slurmrestd 22.05 (tests/fixtures/slurm_rest/).

The recordings were trimmed to the jobs they show (a GET …/jobs lists every job of the cluster); the fields are as
slurmrestd sent them. The HTTP path itself runs for real in tests/integration/test_slurm_rest_jobs.py.
"""

import base64
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from clusters.backends import tokens
from clusters.backends.kinds.slurm_rest import directives, parsing, versions
from clusters.backends.kinds.slurm_rest.client import error_messages
from clusters.backends.kinds.slurm_rest.errors import RestRejected
from clusters.forms import token_expiry_text
from clusters.kinds import kinds_running, template_backend
from clusters.models import ClusterAccount

RECORDED = Path(__file__).parent / "fixtures" / "slurm_rest"


def recorded(name: str) -> dict:
    return json.loads((RECORDED / name).read_text())


def make_token(**claims) -> str:
    def part(data):
        return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()

    return f"{part({'alg': 'HS256', 'typ': 'JWT'})}.{part(claims)}.c2lnbmF0dXJl"


def test_job_states_reasons_and_exit_codes_read_like_the_ssh_kind():
    found = parsing.statuses(recorded("jobs_v0.0.38.json"))
    by_comment = {job["comment"]: str(job["job_id"]) for job in recorded("jobs_v0.0.38.json")["jobs"]}
    pending = found[by_comment["gpulab:rec-pending"]]
    assert (pending.state, pending.raw_state, pending.reason) == ("pending", "PENDING", "JobHeldUser")
    assert pending.started_at is None and pending.exit_code is None
    running = found[by_comment["gpulab:rec-running"]]
    assert (running.state, running.reason, running.exit_code) == ("running", "", None)
    assert running.started_at is not None and running.finished_at is None
    failed = found[by_comment["gpulab:00000000-0000-0000-0000-000000000001"]]
    assert (failed.state, failed.reason, failed.exit_code) == ("failed", "NonZeroExitCode", 3)  # wait status 768
    timed_out = found[by_comment["gpulab:rec-timeout"]]
    assert (timed_out.state, timed_out.raw_state) == ("timed_out", "TIMEOUT")
    completed = found[by_comment["gpulab:rec-completed"]]
    assert (completed.state, completed.exit_code) == ("completed", 0)
    assert completed.finished_at >= completed.started_at


def test_a_job_pending_for_a_reason_that_never_clears_is_flagged_as_the_ssh_kind_does():
    found = parsing.statuses(recorded("jobs_v0.0.38.json"))
    by_comment = {job["comment"]: str(job["job_id"]) for job in recorded("jobs_v0.0.38.json")["jobs"]}
    stuck = found[by_comment["gpulab:rec-never"]]  # 500 minutes asked of a 60-minute partition
    assert (stuck.state, stuck.reason) == ("pending", "PartitionTimeLimit")
    assert stuck.never_starts.startswith("SLURM will never start this job: its time limit is longer")
    assert found[by_comment["gpulab:rec-pending"]].never_starts == ""  # a hold may be released


def test_a_job_killed_by_a_signal_reads_as_the_shell_would_say():
    assert parsing.exit_code(15) == 143  # SIGTERM, as scancel sends it
    assert parsing.exit_code(768) == 3
    assert parsing.exit_code(None) is None


def test_the_earlier_submission_is_found_by_its_comment_and_user():
    answer = recorded("jobs_v0.0.38.json")
    job = next(j for j in answer["jobs"] if j["comment"] == "gpulab:00000000-0000-0000-0000-000000000001")
    uuid = "00000000-0000-0000-0000-000000000001"
    assert parsing.find_by_comment(answer, uuid, job["user_name"]) == str(job["job_id"])
    assert parsing.find_by_comment(answer, uuid, "someone-else") is None
    assert parsing.find_by_comment(answer, "00000000-0000-0000-0000-0000000000ff", job["user_name"]) is None


def test_slurms_errors_are_read_from_every_answer():
    assert error_messages(recorded("submit_bad_partition.json")) == [(2000, "Invalid partition name specified")]
    assert error_messages(recorded("submit_impersonation_refused.json"))[0][0] == 5005
    unknown = error_messages(recorded("cancel_unknown_job.json"))
    assert unknown[0][0] == 2017 and unknown[0][1].startswith("Invalid job id specified: unable to kill JobId=999999")
    assert error_messages(recorded("submit_ok.json")) == []


def test_the_newest_version_both_sides_speak_is_chosen():
    document = recorded("openapi_paths.json")
    assert versions.offered(document) == ["v0.0.36", "v0.0.37", "v0.0.38"]
    assert versions.choose(document).name == "v0.0.38"
    only_old = {"paths": {p: {} for p in document["paths"] if "v0.0.36" in p}}
    old = versions.choose(only_old)
    assert old.name == "v0.0.36" and old.stdout_property == "standard_out" and not old.update_time
    assert versions.choose({"paths": {"/slurm/v0.0.39/jobs": {}}}) is None


def test_the_portals_sbatch_header_becomes_job_properties():
    script = (
        "#!/bin/bash\n#SBATCH --job-name=gpulab-sleep-echo\n#SBATCH --partition=gpu\n#SBATCH --nodes=1\n"
        "#SBATCH --gres=gpu:demo:2\n#SBATCH --cpus-per-task=4\n#SBATCH --mem=8G\n#SBATCH --time=30\n\n"
        "echo hi\n#SBATCH --partition=ignored-after-the-first-command\n"
    )
    assert directives.job_properties(script) == {
        "name": "gpulab-sleep-echo",
        "partition": "gpu",
        "nodes": [1, 1],
        "gres": "gpu:demo:2",
        "cpus_per_task": 4,
        "memory_per_node": 8192,
        "time_limit": 30,
    }


def test_an_sbatch_option_the_api_cannot_take_is_refused_not_dropped():
    with pytest.raises(RestRejected, match="cannot take"):
        directives.job_properties("#!/bin/bash\n#SBATCH --exclusive\necho\n")
    with pytest.raises(RestRejected, match="value"):
        directives.job_properties("#!/bin/bash\n#SBATCH --gres=gpu:two\necho\n")


def test_token_claims_expiry_and_user():
    exp = int(datetime(2027, 1, 2, 3, 4, tzinfo=UTC).timestamp())
    token = make_token(exp=exp, iat=exp - 60, sun="root")
    assert tokens.expires_at(token) == datetime(2027, 1, 2, 3, 4, tzinfo=UTC)
    assert tokens.user_of(token) == "root"
    assert tokens.expires_at(make_token(sun="x")) is None
    with pytest.raises(tokens.NotAToken):
        tokens.claims("not-a-jwt")


def test_the_admin_reads_a_tokens_lifetime_with_a_warning_before_it_lapses(settings):
    account = ClusterAccount(username="svc")
    assert token_expiry_text(account) == "—"
    now = datetime.now(UTC)
    account.set_api_token("t", now + timedelta(days=30))
    assert token_expiry_text(account).startswith("stored; valid until")
    account.set_api_token("t", now + timedelta(days=3, hours=1))
    assert "expires" in token_expiry_text(account) and "in 3 days" in token_expiry_text(account)
    account.set_api_token("t", now - timedelta(hours=1))
    assert token_expiry_text(account).startswith("EXPIRED on")


def test_both_slurm_kinds_run_the_same_templates():
    assert template_backend("slurm-rest") == "slurm"
    assert sorted(kinds_running("slurm")) == ["slurm", "slurm-rest"]
    assert kinds_running("kubernetes") == ["kubernetes"]
