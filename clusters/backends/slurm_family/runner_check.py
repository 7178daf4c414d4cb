"""Test connection's word on who runs students' code on a SLURM cluster: never an account that holds the portal's
privileges. Shared by both SLURM kinds (over SSH, and slurmrestd with an SSH login).

Invariant: the users students' code runs as (the cluster's shared user, or each student's cluster user) are not the
service account the portal signs in with, hold no SLURM operator or administrator level, are not SLURM's SlurmUser
(nor root), are not the user of the slurmrestd token the portal holds, and are in none of the groups that sudo lets
run anything (sudo, wheel, admin). Where the service account itself would run students' code ("the two are one"),
its own `sudo -n -l` is read too. Each finding says why and what to do; any finding refuses the configuration.

A sudo rule written for one other user cannot be read from the service account (`sudo -l -U` needs root); the
integration test runs `sudo -n -l` from a shell inside a student's job instead.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from ..ssh import CommandResult
from .sudo_rule import parse as parse_sudo_rule

SUDO_GROUPS = ("sudo", "wheel", "admin")
PRIVILEGED_LEVELS = {"operator", "administrator"}
_SLURM_USER = re.compile(r"^SlurmUser\s*=\s*([^(\s]+)", re.MULTILINE)
SHARED_USER_HOWTO = (
    "create an unprivileged user for students' jobs on the login node (e.g. `useradd -m labshared`), add it to the "
    "students' group the sudo rule names and to the SLURM account, and name it as the cluster's shared cluster user; "
    "or run jobs as each student's own user (docs/cluster-identity.md)"
)

Run = Callable[[list[str]], CommandResult]


@dataclass
class RunnerReport:
    ok: bool
    lines: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Runners:
    """Who runs students' code, as the portal names them, and what the check needs to know of the cluster."""

    login: str  # the service account the portal signs in with
    users: tuple[str, ...]  # the users students' code runs as (may include `login`: the two are one)
    shared_mode_without_user: bool = False  # the shared mode with no shared user: it would be the service account
    token_user: str = ""  # whose slurmrestd token the portal holds ("" on a cluster without one)
    has_accounting: bool = False  # admin levels live in SLURM accounting
    over_ssh: bool = True  # the login node answers commands (slurmrestd without one: names and the token only)


def check(runners: Runners, run: Run) -> RunnerReport:
    """`run(argv)` runs a command as the service account on the login node."""
    users = list(runners.users)
    if runners.shared_mode_without_user:
        users.append(runners.login)
    if not users:
        return RunnerReport(
            ok=True,
            lines=["No cluster user is named for students' code yet (registered accounts are the students' own)."],
        )
    problems = _names(runners, users)
    if runners.over_ssh:
        privileged = {runners.login} & set(users)
        problems += _admin_levels(users, run) if runners.has_accounting else []
        problems += _slurm_user(users, run)
        problems += _sudo_groups(users, run)
        problems += _own_sudo_rule(runners.login, run) if privileged else []
    if problems:
        return RunnerReport(ok=False, lines=[f"REFUSED: {p}" for p in problems])
    return RunnerReport(ok=True, lines=[_fine(runners, users)])


def _names(runners: Runners, users: list[str]) -> list[str]:
    problems = []
    if runners.shared_mode_without_user:
        problems.append(
            f"no shared cluster user is named, so students' jobs would run as the service account {runners.login}, "
            f"the account the portal signs in with: to fix it, {SHARED_USER_HOWTO}."
        )
    elif runners.login in users:
        problems.append(
            f"students' code would run as {runners.login}, the service account the portal signs in with and reaches "
            f"every student from (the two are one): to fix it, {SHARED_USER_HOWTO}."
        )
    if runners.token_user and runners.token_user in users:
        problems.append(
            f"students' code would run as {runners.token_user}, whose slurmrestd token the portal holds: a job of "
            "theirs would act with the portal's token. Store the token of another user (SLURM's SlurmUser) on the "
            "service account, and run students' jobs as users of their own."
        )
    return problems


def _admin_levels(users: list[str], run: Run) -> list[str]:
    result = run(["sacctmgr", "-n", "-P", "show", "user", ",".join(sorted(set(users))), "format=user,adminlevel"])
    problems = []
    for line in result.stdout.splitlines() if result.ok else []:
        name, _, level = line.strip().partition("|")
        if level.strip().lower() in PRIVILEGED_LEVELS:
            problems.append(
                f"{name} runs students' code and is a SLURM {level.strip().lower()}: its jobs could make reservations "
                f"and change or cancel anyone's jobs. Run “sacctmgr modify user {name} set adminlevel=none”, or run "
                "students' code as another user."
            )
    return problems


def _slurm_user(users: list[str], run: Run) -> list[str]:
    result = run(["scontrol", "show", "config"])
    match = _SLURM_USER.search(result.stdout) if result.ok else None
    slurm_user = match.group(1) if match else ""
    return [
        f"{name} runs students' code and is SLURM's {'SlurmUser' if name == slurm_user else 'root'}: its jobs would "
        "control SLURM itself. Run students' code as an ordinary user."
        for name in users
        if name in {slurm_user, "root"}
    ]


def _sudo_groups(users: list[str], run: Run) -> list[str]:
    """Members of the groups sudo lets run anything (`getent group` answers for the ones that exist)."""
    result = run(["getent", "group", *SUDO_GROUPS])
    problems = []
    for line in result.stdout.splitlines():
        group, _, _, members = [*line.split(":"), "", "", ""][:4]
        for name in sorted(set(users) & {m.strip() for m in members.split(",") if m.strip()}):
            problems.append(
                f"{name} runs students' code and is in the group {group}, which sudo usually lets run anything: "
                f"“gpasswd -d {name} {group}”, or run students' code as another user."
            )
    return problems


def _own_sudo_rule(login: str, run: Run) -> list[str]:
    """The service account's own `sudo -n -l`, where it would run students' code: anything it lists is too much."""
    rule = parse_sudo_rule(run(["sudo", "-n", "-l"]).stdout)
    if not rule.entries:
        return []
    listed = "; ".join(f"({', '.join(runas) or 'root'}) {', '.join(commands)}" for runas, _, commands in rule.entries)
    return [
        f"{login} has a sudo rule ({listed[:300]}): a student's job running as {login} could use it to act as "
        "other students. Students' code must run as a user without one."
    ]


def _fine(runners: Runners, users: list[str]) -> str:
    who = users[0] if len(users) == 1 else f"each student's own cluster user ({len(users)} checked)"
    token = f"not the slurmrestd token's user ({runners.token_user})" if runners.token_user else ""
    if not runners.over_ssh:
        return (
            f"Students' code runs as {who}, never as the service account {runners.login}{', ' + token if token else ''}"
            ". SLURM admin levels, the SlurmUser and sudo groups are checked over the login node, which this cluster "
            "has none of in the portal: keep those users unprivileged (docs/cluster-identity.md)."
        )
    facts = ["no SLURM operator or administrator"] if runners.has_accounting else []
    facts += ["not SLURM's SlurmUser", *([token] if token else []), f"in none of the groups {', '.join(SUDO_GROUPS)}"]
    return f"Students' code runs as {who}, never as the service account {runners.login}: {', '.join(facts)}."


def runners_of(
    cluster, login: str, *, token_user: str = "", has_accounting: bool = False, over_ssh: bool = True
) -> Runners:
    """Who runs students' code on `cluster` (clusters.identity.job_users), as the check takes it."""
    from clusters.identity import job_users  # the portal's rows, read only here

    return Runners(
        login=login,
        users=tuple(job_users(cluster)),
        shared_mode_without_user=cluster.uses_shared_user and not cluster.shared_user,
        token_user=token_user,
        has_accounting=has_accounting,
        over_ssh=over_ssh,
    )
