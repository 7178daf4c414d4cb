"""The sudo rule that lets a cluster's service account run jobs as each student, read from `sudo -n -l`, and judged.

Invariant: the portal runs, as a student, only the commands in REQUIRED (SLURM's sbatch, scancel, squeue,
`scontrol show job`, its two file operations, mkdir and dd, the SFTP server behind the file browser, and the terminal's
`srun --jobid=<id> --overlap --pty bash -l`). srun is pinned to that form: as the student it can do no more than
sbatch already does, but the rule says what the portal runs. A rule that lets the service account run anything
else as a student, or anything at all as root or as every user, gives whoever holds the service account's key more
than the portal needs: Test connection flags it, naming what is too broad and what to write instead.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field

from ..as_student import SFTP_SERVER as SFTP_SERVER  # the path the rule names

# What the portal runs through sudo, by command name: the arguments the rule may pin ("" = any arguments).
REQUIRED = {
    "sbatch": "",
    "scancel": "",
    "squeue": "",
    "scontrol": "show job",
    "mkdir": "",
    "dd": "",
    "sftp-server": "",
    "srun": "--jobid=",
}
TERMINAL_SRUN = ("--overlap", "--pty", "bash", "-l")  # after --jobid=<id>: the only srun the rule may allow
SHELLS = {"sh", "bash", "dash", "zsh", "ksh", "csh", "tcsh", "fish", "su", "sudo", "login", "runuser", "script"}
EDITORS = {"vi", "vim", "nvim", "view", "nano", "emacs", "ed", "ex", "pico", "joe", "mcedit", "sudoedit", "less"}
EDITORS |= {"more", "man"}  # pagers open a shell with "!"
# Commands that run other commands or programs given to them.
RUNNERS = {"env", "find", "xargs", "nice", "nohup", "timeout", "awk", "gawk", "perl", "ruby", "node", "lua", "php"}
RUNNERS |= {"tclsh", "srun", "salloc", "ssh", "git", "tar", "rsync", "make"}
_TAGS = re.compile(r"^(?:[A-Z_]+:\s*)+")
_ENTRY = re.compile(r"^\((?P<runas>[^)]*)\)\s*(?P<rest>.*)$")
_ALLOWED_RULE = (
    "<service account> ALL=(%<students' group>) NOPASSWD: /usr/bin/sbatch, /usr/bin/scancel, /usr/bin/squeue, "
    "/usr/bin/scontrol show job *, /usr/bin/mkdir, /usr/bin/dd, /usr/lib/openssh/sftp-server, "
    "/usr/bin/srun --jobid=* --overlap --pty bash -l"
)


@dataclass
class SudoRule:
    """What `sudo -n -l` says the service account may run: (run-as list, tags, commands) per entry."""

    entries: list[tuple[list[str], str, list[str]]] = field(default_factory=list)

    def allowed(self) -> set[str]:
        """The REQUIRED command names some entry allows without a password."""
        found: set[str] = set()
        for _runas, tags, commands in self.entries:
            if "NOPASSWD" not in tags:
                continue  # sudo -n would stop at the password prompt
            for command in commands:
                name, args = _split(command)
                if command == "ALL":
                    found.update(REQUIRED)
                elif name == "srun" and args and not _terminal_srun(args):
                    continue  # another srun form is not the terminal's
                elif name in REQUIRED and (args.startswith(REQUIRED[name]) or args == "*" or not args):
                    found.add(name)
        return found


@dataclass
class Verdict:
    too_broad: list[str]
    missing: list[str]

    @property
    def ok(self) -> bool:
        return not self.too_broad and not self.missing

    def lines(self, account: str) -> list[str]:
        if self.ok:
            return [
                f"sudo rule of {account}: only the portal's commands (sbatch, scancel, squeue, scontrol show job, "
                "mkdir, dd, sftp-server, srun into a job's terminal), only as students. Jobs, files and terminals "
                "run as each student's own user."
            ]
        lines = [f"TOO BROAD: {problem}" for problem in self.too_broad]
        if self.missing:
            lines.append(f"MISSING: {account} may not run {', '.join(self.missing)} as students without a password.")
        lines.append(f"Write the rule as: {_ALLOWED_RULE} (see docs/cluster-identity.md).")
        return lines


def parse(text: str) -> SudoRule:
    """The entries of `sudo -n -l` output (the lines under "User … may run the following commands on …:")."""
    rule, joined, listing = SudoRule(), [], False
    for line in text.splitlines():
        if "may run the following commands" in line:
            listing = True
            continue
        if not listing or not line.strip():
            continue
        if line.startswith("    ") and not line.startswith("     ") and line.strip().startswith("("):
            joined.append(line.strip())  # a new entry; deeper-indented lines continue it
        elif joined:
            joined[-1] += " " + line.strip()
    for entry in joined:
        match = _ENTRY.match(entry)
        if not match:
            continue
        rest = match.group("rest")
        tags = _TAGS.match(rest)
        tag_text = tags.group(0) if tags else ""
        commands = [c.strip() for c in rest[len(tag_text) :].split(", ") if c.strip()]
        runas = [r.strip() for r in match.group("runas").split(",") if r.strip()]
        rule.entries.append((runas, tag_text, commands))
    return rule


def judge(rule: SudoRule) -> Verdict:
    too_broad: list[str] = []
    for runas, _tags, commands in rule.entries:
        users = [r.split(":")[0].strip() for r in runas] or ["root"]
        if any(u in {"ALL", "root", "#0"} or u == "" for u in users):
            who = "every user" if "ALL" in users else "root"
            named = ", ".join(runas) or "root"
            too_broad.append(f"({named}): it may run commands as {who}; name only the students' group (%group).")
        for command in commands:
            problem = _command_problem(command)
            if problem:
                too_broad.append(f"{command}: {problem}")
    missing = [name for name in REQUIRED if name not in rule.allowed()]
    return Verdict(too_broad=too_broad, missing=missing)


def _split(command: str) -> tuple[str, str]:
    path, _, args = command.partition(" ")
    return posixpath.basename(path), args.replace("\\", "").strip()  # sudo -l writes "=" in arguments as "\\="


def _terminal_srun(args: str) -> bool:
    """srun pinned to the terminal's form: `--jobid=* --overlap --pty bash -l`."""
    words = args.split()
    return len(words) == 5 and words[0].startswith("--jobid=") and tuple(words[1:]) == TERMINAL_SRUN


def _command_problem(command: str) -> str:
    if command.startswith("!"):
        return ""  # a negation narrows the rule
    if command == "ALL":
        return "every command (ALL); list only the portal's commands."
    name, args = _split(command)
    if not command.startswith("/"):
        return "not an absolute path (sudo -l shows it as written); list the portal's commands by their full paths."
    if name in SHELLS:
        return "a shell runs any command; remove it."
    if name in EDITORS:
        return "an editor can open a shell and change any file; remove it."
    if name == "srun":
        if _terminal_srun(args):
            return ""
        return "srun runs any program; pin it to the terminal's form “srun --jobid=* --overlap --pty bash -l”."
    if name in RUNNERS or re.match(r"python[\d.]*$", name):
        return "it runs other programs; remove it."
    if name not in REQUIRED:
        return "not one of the portal's commands; remove it."
    if name == "scontrol" and not args.startswith("show job"):
        return "every scontrol subcommand (update, requeue, …); limit it to “scontrol show job *”."
    return ""
