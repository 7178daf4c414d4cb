"""Test connection refuses a SLURM cluster where students' code would run as an account that holds the portal's
privileges: the service account itself (the two are one), a SLURM operator or administrator, SLURM's SlurmUser, the
slurmrestd token's user or a member of a sudo group; it says why and what to do. The login node's answers are
what SLURM 22.05, sudo 1.9 and getent print; the SSH step itself is not taken."""

import pytest

from clusters.backends import ssh
from clusters.backends.ssh import CommandResult
from clusters.choices import RunAs
from clusters.identity import set_cluster_username
from clusters.kinds import get_backend

pytestmark = pytest.mark.django_db

NARROW_RULE = """User labsvc may run the following commands on login1:
    (%gpulab-students) NOPASSWD: /usr/bin/sbatch, /usr/bin/scancel,
        /usr/bin/squeue, /usr/bin/scontrol show job *, /usr/bin/mkdir,
        /usr/bin/dd, /usr/lib/openssh/sftp-server, /usr/bin/srun --jobid\\=* --overlap
        --pty bash -l
"""
CONFIG = "Configuration data as of 2026-11-27T10:00:00\nSlurmUser               = root(0)\nSlurmdUser = root(0)\n"


@pytest.fixture
def login_node(monkeypatch):
    """What the login node answers, by command; `asked` records each command the service account ran."""
    answers = {
        "sinfo --version": "slurm-wlm 22.05.8",
        "sinfo --all": "debug*|1|1-infinite|1:00:00|gpu:demo:4\n",
        "sacctmgr": "labshared|None\n",  # before "sacct", which it starts with
        "sacct": "",
        "sudo -n -l": NARROW_RULE,
        "scontrol show config": CONFIG,
        "getent group": "sudo:x:27:ada\n",
    }
    asked = []

    def run(cluster, account, argv, **kwargs):
        line = " ".join(argv)
        asked.append((account.username, line))
        found = next((v for k, v in answers.items() if line.startswith(k)), "")
        return CommandResult(0, found, "")

    monkeypatch.setattr(ssh, "run", run)
    return answers, asked


def report_of(cluster):
    report = get_backend(cluster).test_connection()
    return report, "\n".join(report.lines)


def test_an_unprivileged_shared_user_passes_and_is_named(cluster, login_node):
    report, said = report_of(cluster)
    assert report.ok, said
    assert "Students' code runs as labshared, never as the service account labsvc" in said
    assert "sudo rule of labsvc: only the portal's commands" in said  # it reaches labshared through that rule


def test_the_shared_mode_without_a_shared_user_is_refused_the_two_are_one(cluster, login_node):
    type(cluster).objects.filter(pk=cluster.pk).update(shared_user="")
    cluster.refresh_from_db()
    report, said = report_of(cluster)
    assert not report.ok
    assert "REFUSED: no shared cluster user is named, so students' jobs would run as the service account labsvc" in said
    assert "useradd -m labshared" in said  # what to do
    assert "REFUSED: labsvc has a sudo rule ((%gpulab-students) /usr/bin/sbatch" in said  # why it matters


def test_a_shared_user_that_is_a_slurm_operator_is_refused(cluster, login_node):
    answers, asked = login_node
    answers["sacctmgr"] = "labshared|Operator\n"
    report, said = report_of(cluster)
    assert not report.ok and "REFUSED: labshared runs students' code and is a SLURM operator" in said
    assert "sacctmgr modify user labshared set adminlevel=none" in said
    assert ("labsvc", "sacctmgr -n -P show user labshared format=user,adminlevel") in asked


@pytest.mark.parametrize(("group", "slurm_user"), [("sudo:x:27:ada,labshared\n", "root"), ("", "labshared")])
def test_a_shared_user_in_a_sudo_group_or_that_is_the_slurmuser_is_refused(cluster, login_node, group, slurm_user):
    answers, _ = login_node
    answers["getent group"], answers["scontrol show config"] = group, CONFIG.replace("root(0)", f"{slurm_user}(64)", 1)
    report, said = report_of(cluster)
    assert not report.ok
    assert ("is in the group sudo" in said) if group else ("is SLURM's SlurmUser" in said)


def test_students_own_users_are_checked_too(cluster, login_node, alice, bob):
    answers, _ = login_node
    cluster.run_as = RunAs.SUDO
    cluster.save()
    set_cluster_username(alice, "alice01")
    set_cluster_username(bob, "bob01")
    answers["sacctmgr"] = "alice01|None\nbob01|Administrator\n"
    report, said = report_of(cluster)
    assert not report.ok and "REFUSED: bob01 runs students' code and is a SLURM administrator" in said
    answers["sacctmgr"] = "alice01|None\nbob01|None\n"
    report, said = report_of(cluster)
    assert report.ok and "each student's own cluster user (2 checked)" in said


def test_a_shared_user_that_is_the_slurmrestd_tokens_user_is_refused(cluster, login_node):
    from clusters.backends.slurm_family import runner_check

    runners = runner_check.Runners(login="labsvc", users=("labrest",), token_user="labrest")
    report = runner_check.check(runners, lambda argv: CommandResult(0, "", ""))
    assert not report.ok and "whose slurmrestd token the portal holds" in report.lines[0]


def test_the_check_runs_as_the_service_account_never_as_a_student(cluster, login_node):
    _, asked = login_node
    report_of(cluster)
    assert {who for who, _ in asked} == {"labsvc"} and not any(line.startswith("sudo -n -u") for _, line in asked)


def test_without_a_login_node_it_checks_names_and_the_token_and_says_what_it_could_not_ask():
    from clusters.backends.slurm_family import runner_check

    def no_login(argv):
        raise AssertionError(f"asked {argv} with no login node")

    runners = runner_check.Runners(login="labrest", users=("labshared",), token_user="root", over_ssh=False)
    line = runner_check.check(runners, no_login).lines[0]
    assert "runs as labshared, never as the service account labrest, not the slurmrestd token's user (root)" in line
    assert "checked over the login node" in line
