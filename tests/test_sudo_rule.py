"""The sudo rule Test connection reads (`sudo -n -l`, as sudo 1.9 prints it): the narrow rule passes, anything
broader is flagged with what to write instead."""

import pytest

from clusters.backends.slurm_family import sudo_rule

HEADER = """Matching Defaults entries for labsvc on login1:
    env_reset, mail_badpass,
    secure_path=/usr/local/sbin\\:/usr/local/bin\\:/usr/sbin\\:/usr/bin\\:/sbin\\:/bin, use_pty

User labsvc may run the following commands on login1:
"""
NARROW = """    (%gpulab-students) NOPASSWD: /usr/bin/sbatch, /usr/bin/scancel,
        /usr/bin/squeue, /usr/bin/scontrol show job *, /usr/bin/mkdir,
        /usr/bin/dd, /usr/lib/openssh/sftp-server, /usr/bin/srun --jobid\\=* --overlap
        --pty bash -l
"""


def verdict(entries: str) -> sudo_rule.Verdict:
    return sudo_rule.judge(sudo_rule.parse(HEADER + entries))


def test_the_documented_rule_passes():
    result = verdict(NARROW)
    assert result.ok and "only as students" in result.lines("labsvc")[0]


@pytest.mark.parametrize(
    ("entry", "flagged"),
    [
        ("    (ALL) NOPASSWD: ALL\n", "every user"),
        ("    (root) NOPASSWD: /usr/bin/sbatch\n", "as root"),
        ("    (%gpulab-students) NOPASSWD: ALL\n", "every command"),
        ("    (%gpulab-students) NOPASSWD: /bin/bash\n", "a shell"),
        ("    (%gpulab-students) NOPASSWD: /usr/bin/vim\n", "an editor"),
        ("    (%gpulab-students) NOPASSWD: /usr/bin/python3\n", "runs other programs"),
        ("    (%gpulab-students) NOPASSWD: /usr/bin/scontrol\n", "every scontrol subcommand"),
        ("    (%gpulab-students) NOPASSWD: /usr/bin/cp\n", "not one of the portal's commands"),
        ("    (%gpulab-students) NOPASSWD: /usr/bin/srun\n", "pin it to the terminal's form"),
        ("    (%gpulab-students) NOPASSWD: /usr/bin/srun --jobid\\=* /bin/sh\n", "pin it to the terminal's form"),
    ],
)
def test_a_rule_that_allows_more_is_flagged(entry, flagged):
    result = verdict(NARROW + entry)
    assert not result.ok
    lines = result.lines("labsvc")
    assert any(line.startswith("TOO BROAD") and flagged in line for line in lines), lines
    assert "Write the rule as" in lines[-1]


def test_commands_that_need_a_password_count_as_missing():
    result = verdict(NARROW.replace("NOPASSWD: ", ""))
    assert result.missing == list(sudo_rule.REQUIRED) and not result.too_broad


def test_no_rule_at_all_is_reported_missing():
    result = sudo_rule.judge(sudo_rule.parse("sudo: a password is required\n"))
    assert not result.ok and "MISSING" in result.lines("labsvc")[0]


def test_srun_in_another_form_does_not_count_for_the_terminal():
    rule = NARROW.replace("/usr/bin/srun --jobid\\=* --overlap\n        --pty bash -l", "/usr/bin/srun --jobid\\=* id")
    result = verdict(rule)
    assert result.missing == ["srun"] and "srun" in result.too_broad[0]
