"""Which commands keep a value an inert argument: the tables the shell checker (shell_safety.py) consults.

Invariant: `judge_command` accepts a value only as an argument of a command it knows does not run, source,
evaluate, re-parse or act destructively on its arguments; a wrapper (srun, env, timeout, …) is looked
through to the command it runs, and any option of a wrapper or interpreter it does not know is refused.
A wrapper's own operands and options take a value only where the wrapper reads it as a count or a time: an inert
option (srun -n), or a duration (timeout's first operand, its -k) holding a number that cannot be negative.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

RUNS_CODE = "pass the value as a plain argument to a program that does not run it, e.g. python3 train.py --x {env}"

# Commands whose arguments are code, variable names, shell settings or other commands.
EVALUATES = {
    **dict.fromkeys(["eval", "source", ".", "trap", "let", "fc", "bind", "complete", "compgen"], "runs it as code"),
    **dict.fromkeys(
        ["declare", "typeset", "local", "export", "readonly", "unset", "read", "mapfile", "readarray", "getopts"],
        "takes it as a variable name or assignment, which bash may evaluate",
    ),
    **dict.fromkeys(
        ["wait", "fg", "bg", "disown", "jobs", "alias", "unalias", "shopt", "enable", "hash"],
        "reads it as shell settings",
    ),
    **dict.fromkeys(["cd", "pushd", "popd", "ulimit", "umask", "dirs"], "changes the shell for every later command"),
    "set": "makes it a positional parameter or a shell option, which the checker does not follow",
    **dict.fromkeys(
        ["awk", "gawk", "mawk", "nawk", "sed", "ed", "ex", "vi", "vim", "nvim", "emacs", "dc", "bc", "m4", "jq", "yq"],
        "reads it as a program",
    ),
    **dict.fromkeys(
        ["expect", "make", "gmake", "cmake", "ninja", "gdb", "lldb", "git", "openssl", "find", "parallel", "watch"],
        "can run commands named in its arguments",
    ),
    **dict.fromkeys(
        ["ssh", "rsh", "pdsh", "clush", "su", "sudo", "doas", "runuser", "pkexec", "chroot", "nsenter", "unshare"],
        "passes it to another shell",
    ),
    **dict.fromkeys(
        ["apptainer", "singularity", "docker", "podman", "enroot", "kubectl", "crontab", "at", "batch", "script"],
        "runs it as a command",
    ),
    **dict.fromkeys(["tmux", "screen", "sbatch", "salloc", "accelerate", "deepspeed"], "runs it as a command"),
    **dict.fromkeys(
        ["module", "ml", "conda", "mamba", "micromamba", "coproc", "curl", "wget", "tar"], "evaluates or runs it"
    ),
    **dict.fromkeys(["java", "javac", "go", "cargo", "npm", "npx", "pip", "pip3", "uv", "uvx"], "runs or installs it"),
}
# Commands whose arguments choose which files or jobs are deleted, moved, overwritten or stopped.
DESTRUCTIVE = [
    "rm", "rmdir", "unlink", "shred", "mv", "cp", "ln", "dd", "tee", "truncate", "chmod", "chown", "chgrp", "install",
    "rsync", "scp", "sftp", "kill", "pkill", "killall", "skill", "scancel", "mkfifo", "mknod", "split", "csplit",
    "zip", "unzip", "gzip", "gunzip", "bzip2", "xz", "zstd",
]  # fmt: skip
# Commands that print their arguments (or a transform of them): their output must not go where it could be run.
EMITTERS = {"echo", "printf", "basename", "dirname", "realpath", "readlink", "expr", "seq", "yes"}
# Commands that can read or set a variable without naming it literally: always, or when an argument is computed.
# Either stops the checker trusting that a variable the script never names holds only what the admin set.
ALWAYS_INDIRECT = {"eval", "source", ".", "trap", "let"}
NAMING_COMMANDS = {"read", "mapfile", "readarray", "printf", "getopts", "declare", "typeset", "local", "export"}
VALUE = "\0value"  # stands for a student's value inside an argument's text
COMPUTED = "\0computed"  # an argument built from variables only (no value, no command substitution)
# Pipeline stages a value may flow into: they print to the log and write no file (hence no sort -o, no uniq A B).
FILTERS = {
    "cat", "head", "tail", "wc", "grep", "egrep", "fgrep", "tr", "cut", "nl", "column", "paste", "fold", "rev",
    "tac", "base64", "md5sum", "sha1sum", "sha256sum", "od", "hexdump", "true", ":",
}  # fmt: skip
# Constructs that send output or commands somewhere the checker cannot follow: their presence refuses every value.
REROUTING_NODES = {"process_substitution"}
REROUTING_COMMANDS = {"alias", "enable", "hash", "coproc", "mkfifo", "shopt"}


def rerouting_reason(node) -> str:
    if node.type == "process_substitution":
        return "<( ) or >( )"
    if node.type == "function_definition":
        return "command_not_found_handle"
    name = node.child_by_field_name("name")
    return "exec without a command" if name is not None and name.text.decode() == "exec" else name.text.decode()


@dataclass(frozen=True)
class Wrapper:
    """A command that runs another: its options (with or without a value) and operands before the command."""

    flags: frozenset[str] = frozenset()
    with_value: frozenset[str] = frozenset()
    operands: int = 0
    evaluates: frozenset[str] = frozenset()  # options whose value is code or a command line
    assignments: bool = False  # env NAME=value
    inert_values: frozenset[str] = frozenset()  # options whose value may be a student's (a count, a port)
    runs_script: bool = False  # what follows the options is a Python script, not a command (torchrun)
    durations: frozenset[str] = frozenset()  # options whose value is a duration (timeout -k)
    duration_operand: bool = False  # its first operand is a duration (timeout DURATION COMMAND)


def _w(
    flags="", with_value="", operands=0, evaluates="", assignments=False, inert="", script=False, durations=""
) -> Wrapper:
    return Wrapper(
        frozenset(flags.split()),
        frozenset(with_value.split()),
        operands,
        frozenset(evaluates.split()),
        assignments,
        frozenset(inert.split()),
        script,
        frozenset(durations.split()),
        duration_operand=bool(durations),
    )


SRUN_VALUES = (
    "-n -N -c -p -t -G -w -x -o -e -i -J -A -q -C -d -D -m -r -T -W -B -a --ntasks --nodes --cpus-per-task "
    "--partition --time --gpus --gres --nodelist --exclude --job-name --account --qos --constraint --mem"
)
TORCHRUN_INERT = (
    "--nnodes --nproc_per_node --nproc-per-node --node_rank --node-rank --max_restarts --max-restarts "
    "--rdzv_id --rdzv-id --master_port --master-port"
)
TORCHRUN_VALUES = (
    TORCHRUN_INERT + " --rdzv_backend --rdzv-backend --rdzv_endpoint --rdzv-endpoint --master_addr --master-addr "
    "--monitor_interval --start_method --log_dir --role -r -t --redirects --tee --local_addr --rdzv_conf"
)
# python -m MODULE runs these modules as the wrapper of the same name; any other module may evaluate arguments.
PYTHON_MODULES = {"torch.distributed.run": "torchrun"}
WRAPPERS = {
    "env": _w("-i - -0 --ignore-environment --null", "-u --unset -C --chdir", 0, "-S --split-string", True),
    "exec": _w("-c -l", "-a"),
    "command": _w("-p"),
    "builtin": _w(),
    "nohup": _w(),
    "time": _w("-p"),
    "timeout": _w(
        "--preserve-status --foreground -v --verbose", "-s --signal -k --kill-after", 1, durations="-k --kill-after"
    ),
    "nice": _w("", "-n --adjustment"),
    "ionice": _w("-t", "-c -n --class --classdata"),
    "stdbuf": _w("", "-i -o -e"),
    "setsid": _w("-f -w -c --fork --wait --ctty"),
    "taskset": _w("-a --all-tasks", "-c --cpu-list", 0),
    "numactl": _w("-l --localalloc", "-N -m -C -i -p --cpunodebind --membind --physcpubind --interleave"),
    "flock": _w("-s -x -n -o -e -u --shared --exclusive --nonblock --close", "-w -E --timeout", 1, "-c --command"),
    "xargs": _w("-0 -r -t -x --null --no-run-if-empty", "-n -P -L -d -s -E -a --max-args --max-procs", 0, "-I -i"),
    "srun": _w(
        "-l -u -K -X -Q -v -O -k -E -Z --label --unbuffered --exclusive --overlap --quiet --verbose",
        SRUN_VALUES,
        0,
        "--prolog --epilog --task-prolog --task-epilog --export --bcast --chdir -D --output -o --error -e --input -i",
        inert="-n -N -c -G -t --ntasks --nodes --cpus-per-task --gpus --time --ntasks-per-node --gpus-per-node",
    ),
    "torchrun": _w(
        "--standalone",
        TORCHRUN_VALUES,
        0,
        "--no_python --no-python --run_path --run-path -m --module",
        inert=TORCHRUN_INERT,
        script=True,
    ),
    "mpirun": _w("--oversubscribe --allow-run-as-root", "-n -np -c -N -H --host --map-by --bind-to --hostfile -ppn"),
    "mpiexec": _w("--oversubscribe --allow-run-as-root", "-n -np -c -N -H --host --map-by --bind-to --hostfile -ppn"),
}
# Interpreters run the first operand as a script; the option letters listed are harmless before it (-u, -e, …).
SHELL_FLAGS = frozenset("euxvn")
PYTHON_FLAGS = frozenset("uBOsSEIqbdv")
NO_FLAGS: frozenset[str] = frozenset()
INTERPRETERS = {
    **dict.fromkeys(["bash", "sh", "zsh", "dash", "ksh", "mksh", "fish", "csh", "tcsh", "busybox"], SHELL_FLAGS),
    **dict.fromkeys(["python", "python2", "python3", "pypy", "pypy3"], PYTHON_FLAGS),
    **dict.fromkeys(
        ["perl", "ruby", "node", "nodejs", "deno", "bun", "php", "lua", "luajit", "Rscript", "R"], NO_FLAGS
    ),
    **dict.fromkeys(
        ["R", "julia", "tclsh", "wish", "guile", "racket", "scala", "kotlin", "pwsh", "osascript"], NO_FLAGS
    ),
}


def judge_command(
    name: str, args: list[str | None], position: int, *, duration: bool = False
) -> tuple[str, str] | None:
    """(context, fix) when a value as args[position] of `name` would not stay an inert argument. `duration`: the
    value is a number that cannot be negative (or a choice of durations such as 30s), written as a word of its own
    with at most a unit after it; a wrapper that reads a duration there (timeout) may take it."""
    if re.fullmatch(r"python[0-9.]*", name):
        name = "python3"
    if name in EVALUATES:
        return f"an argument of {name}, which {EVALUATES[name]}", RUNS_CODE
    if name in DESTRUCTIVE:
        return (
            f"an argument of {name}, so a value would choose which files or jobs it deletes, overwrites or stops",
            f"give {name} fixed paths; a value may name files only as an argument of your own program",
        )
    if name in WRAPPERS:
        return _wrapped(name, WRAPPERS[name], args, position, duration)
    if name in INTERPRETERS:
        return _interpreted(name, INTERPRETERS[name], args, position)
    if name == "printf":
        first_operand = next((i for i, a in enumerate(args) if a is None or not a.startswith("-")), len(args))
        if "-v" in args or position <= first_operand:
            return "printf's format or -v variable, which printf interprets", "use printf '%s\\n' {env}"
    if name == "test" and {"-v", "-R"} & set(args):
        return "in a test -v, which evaluates a subscript in a variable name", "compare with = instead"
    return None


def _is_value(text: str | None) -> bool:
    return text is not None and VALUE in text


def _duration_refusal(name: str) -> tuple[str, str]:
    return (
        f"the duration {name} waits, which the checker accepts only from a number parameter that cannot be negative",
        "make it an int or float parameter with a minimum of 0 (or a choice of durations such as 30s, 5m)",
    )


def _wrapped(
    name: str, wrapper: Wrapper, args: list[str | None], position: int, duration: bool = False
) -> tuple[str, str] | None:
    """Skip the wrapper's own options and operands, then judge the command (or script) it runs."""
    refuse = (f"an option or operand of {name}", "pass values only to the command it runs, after a fixed name")
    unreadable = (f"after an argument of {name} the checker cannot read", "write the command it runs literally")
    i, operands = 0, 0
    while i < len(args):
        text = args[i]
        if text is None:
            return unreadable
        if _is_value(text):
            option = text.split("=", 1)[0]
            operand = not text.startswith("-") and operands < wrapper.operands
            if i == position and not ("=" in text and option in wrapper.inert_values):
                if not (operand and operands == 0 and wrapper.duration_operand):
                    return refuse
                if not duration:
                    return _duration_refusal(name)
            operands += operand  # a value is judged on its own; here it fills the slot it stands in
            i += 1
            continue
        if text == COMPUTED:
            if wrapper.runs_script:
                break
            return unreadable
        option = text.split("=", 1)[0]
        if option in wrapper.evaluates or (text.startswith("-") and text[:2] in wrapper.evaluates):
            return f"used with {name} {option}, which runs a command line", RUNS_CODE
        if text == "--":
            i += 1
            break
        if (text.startswith("--") and "=" in text) or text in wrapper.flags:
            i += 1
        elif text in wrapper.with_value:
            if i + 1 == position and text in wrapper.durations:
                if not duration:
                    return _duration_refusal(name)
            elif i + 1 == position and text not in wrapper.inert_values:
                return refuse
            if i + 1 < len(args) and args[i + 1] is None:
                return unreadable
            i += 2
        elif text.startswith("-") and len(text) > 2 and text[:2] in wrapper.with_value:
            i += 1
        elif text.startswith("-") and text != "-":
            return f"after {name} {text}, an option the checker does not know", "use --option=value forms it knows"
        elif wrapper.assignments and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", text):
            i += 1
        elif operands < wrapper.operands:
            operands, i = operands + 1, i + 1
        else:
            break
    if position < i:
        return None  # an inert option value (a count, a port)
    if position == i:
        return f"what {name} runs, so the value would choose what runs", "name the command or script literally"
    if wrapper.runs_script:
        return None  # an argument of the script
    inner = args[i]
    if inner is None or inner == COMPUTED or _is_value(inner):
        return f"an argument of a command {name} runs whose name is computed", "name the command literally"
    return judge_command(inner.rsplit("/", 1)[-1], args[i + 1 :], position - i - 1, duration=duration)


def _interpreted(name: str, flags: frozenset[str], args: list[str | None], position: int) -> tuple[str, str] | None:
    """Values may follow the script file: before it they would be options (-c, -e, -m run code) or the script."""
    for i, text in enumerate(args):
        if i == position or _is_value(text):
            return (
                f"what {name} runs (an option or the script), so the value could become code",
                f"name the script literally and put the value after it: {name} script --x {{env}}",
            )
        if text is None:
            return f"after an argument of {name} the checker cannot read", "name the script literally"
        if text == COMPUTED:
            return None  # a script path built from the admin's variables; the value comes after it
        if text == "--":
            continue
        module = args[i + 1] if i + 1 < len(args) else None
        if text == "-m" and flags is PYTHON_FLAGS and module in PYTHON_MODULES:
            launcher = PYTHON_MODULES[module]
            return _wrapped(launcher, WRAPPERS[launcher], args[i + 2 :], position - i - 2)
        if text.startswith("-"):
            if re.fullmatch(r"-[A-Za-z]+", text) and set(text[1:]) <= flags:
                continue
            return f"used with {name} {text}, which runs its argument as code or is not known", RUNS_CODE
        return None  # args[i] is the script; the value comes after it
    return None
