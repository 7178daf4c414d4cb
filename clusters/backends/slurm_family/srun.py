"""A shell in a running SLURM job, for both SLURM kinds: `srun --jobid=<id> --overlap --pty bash -l` on the login
node, as the job's identity, in the terminal the hall provides (clusters/backends/terminal.py).

Invariant: the srun is the one the sudo rule pins (sudo_rule.TERMINAL_SRUN); it takes no directory or variables, so
the shell is made the job's by a first line typed into it, built from the job script's own quoted lines.
"""

from __future__ import annotations

from .. import as_student, terminal
from .sudo_rule import TERMINAL_SRUN


def in_job(cluster, account, scheduler_id: str, *, cols: int, rows: int, first_line: str = "") -> terminal.Terminal:
    """A login shell in a running SLURM job as `account`: its own login, or the student's user through the service
    account's sudo rule (which allows exactly this srun). `first_line` is typed into it first (job_shell_line)."""
    argv = ["srun", f"--jobid={scheduler_id}", *TERMINAL_SRUN]
    student = as_student.for_account(cluster, account)
    login = account
    if student:
        login, argv = student.login, student.as_student(argv)
    term = terminal.open_terminal(cluster, login, argv, cols=cols, rows=rows)
    if first_line:
        term.write(first_line.encode())
    return term


def job_shell_line(exports: list[str], run_dir: str) -> str:
    """What the terminal types first, so the shell is the job's: its GPULAB_* variables (`exports`, the job script's
    own quoted lines) and its run directory (`run_dir`, a shell word), then a clear screen. The srun the sudo rule
    pins can take neither a directory nor variables, and srun's shell starts in the login's home with the login's
    environment. A leading space keeps the line out of the shell's history where HISTCONTROL ignores such lines."""
    if not exports:
        return ""
    return " " + "; ".join([*exports, f"cd -- {run_dir} && clear"]) + "\n"
