"""Where a student's value may stand in a bash script a template writes, decided with bash's own grammar: an sbatch
body on the SLURM family's clusters, a RayJob's entrypoint on Kubernetes. Kind-neutral: a kind hands it the text
and the parameters, says whether its scripts also get every value as $GPULAB_P_<name> and which comments a program
reads as directives, and the refusals name only what the kind's script has.

Invariant: `problems(body, …)` is empty only if every `{{ placeholder }}` and every `$GPULAB_P_name`
reference is, in BOTH the body as written and bash's own re-print of it (`declare -f` of the body imported
as a function, which parses without running anything), an argument word of a command that does not run,
source, evaluate or re-parse its arguments: not a command name, not in arithmetic, `[[ ]]`, `${…}` operators,
a redirection, a here-document, a command substitution, quotes (for placeholders), a pipeline into code, or
an option position a value could take over. The one wrapper operand it accepts is timeout's duration (and its -k),
and only from a parameter named in `durations` (a number that cannot be negative, or a choice of durations),
written as a word of its own with at most a unit (s, m, h, d) after it. Both texts are read with
tree-sitter-bash; anything it cannot parse, or that bash and tree-sitter could read differently (here-document
ends), refuses every value.
Unknown contexts are refused: a false refusal costs an instructor a rewrite, a false acceptance lets one
student run code as the account every student's jobs share.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass
from functools import cache, lru_cache

import tree_sitter_bash
from tree_sitter import Language, Node, Parser

from . import shell_rules as rules
from .params import BUILTIN_PLACEHOLDERS, Param
from .placeholders import PLACEHOLDER, not_a_parameter

ENV_PREFIX = "GPULAB_P_"
ENV_REF = re.compile(r"(?<![A-Za-z0-9_])GPULAB_P_[A-Za-z0-9_]*")
# Literal text allowed in the same word as a value: no glob, brace, tilde, quote or expansion characters.
WORD_TEXT = re.compile(r"[A-Za-z0-9_.,:/+=@%-]*")
WORD_PARTS = ("word", "string", "simple_expansion", "expansion", "number")
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
# $_ (the previous command's last word) and BASH_COMMAND/BASH_ARGV hand a value's text on to whatever reads them.
PREVIOUS_WORDS = re.compile(r"\$(\{[#!]?)?_(?![A-Za-z0-9_])|BASH_COMMAND|BASH_ARGV|BASH_ARGC")
TAG = re.compile(r"Zgvq*\d+Zgvq*")
BASH = "/bin/bash"
# Variables whose content programs load, run or search for code: a value may not be copied into them.
RISKY_VARIABLE = re.compile(
    r"PATH|PRELOAD|PLUGIN|INJECTION|LIB|OPT|ENV|EDITOR|PAGER|HOOK|CMD|COMMAND|EXEC|SHELL|HOME|IFS|PS\d|"
    r"^(LD|BASH|PYTHON|PERL|RUBY|NODE|GIT|SSH|LESS|MALLOC|GCONV|LOC|NLS|CUDA|TMP)"
)


@dataclass(frozen=True)
class Problem:
    line: int
    what: str  # "{{ steps }}" or "$GPULAB_P_steps"
    context: str  # "inside (( )) arithmetic, where a value would be evaluated"
    fix: str

    def __str__(self) -> str:
        return f"Line {self.line}: {self.what} is {self.context}; {self.fix}."


@dataclass(frozen=True)
class _Occurrence:
    tag: str  # unique text standing in for the value while parsing
    line: int
    name: str
    is_ref: bool  # a $GPULAB_P_name reference rather than a {{ placeholder }}

    @property
    def what(self) -> str:
        return f"${ENV_PREFIX}{self.name}" if self.is_ref else f"{{{{ {self.name} }}}}"

    @property
    def env(self) -> str:
        return f'"${ENV_PREFIX}{self.name}"'


class _Refused(Exception):
    """`fix` may name the exported variable ({env}); `plain`, where given, is the fix for a script that has no such
    variables (a RayJob's entrypoint)."""

    def __init__(self, context: str, fix: str, plain: str | None = None):
        super().__init__(context)
        self.context, self.fix, self.plain = context, fix, plain


@cache
def _parser() -> Parser:
    return Parser(Language(tree_sitter_bash.language()))


def problems(
    body: str,
    dash_prone: Mapping[str, bool],
    durations: Collection[str] = (),
    *,
    exported: bool = False,
    directives: Mapping[str, str] | None = None,
) -> list[Problem]:
    """Every value occurrence bash would not keep an inert argument. `dash_prone[name]`: may the value start
    with "-" (negative numbers, choices like "-O2")? `durations`: the parameters whose every value is a duration
    (a number that cannot be negative, or a choice like 30s). Flags ({{ x|flag:--y }}) are the instructor's text
    and are not checked here. `exported`: does the script get every value as GPULAB_P_<name> too (a batch script
    does; a RayJob's entrypoint does not), so that the fixes may suggest "$GPULAB_P_name"? `directives`: the
    comments a program reads before the script runs, by their first word ("SBATCH" for "#SBATCH --nodes=2"), each
    with the fix its refusal gives; a value in any other comment is read by nothing."""
    directives = directives or {}
    text, occurrences = _tagged(body)
    if not occurrences:
        return []
    canonical = _bash_reprint(text)
    found: list[Problem] = []
    for occ in occurrences:
        try:
            _judge(text, occ, dash_prone, durations, directives)
            if canonical is None:
                raise _Refused(
                    "in a script bash cannot read as one piece",
                    "fix the syntax error bash reports (see the preview)",
                )
            _judge(canonical, occ, dash_prone, durations, directives, reprint=True)
        except _Refused as refused:
            # The fix names only what the script has: the exported variable, or else the placeholder, which stands
            # as an argument word anywhere a fix puts the variable.
            fix = refused.fix if exported or refused.plain is None else refused.plain
            found.append(
                Problem(occ.line, occ.what, refused.context, fix.replace("{env}", occ.env if exported else occ.what))
            )
    return found


def _tagged(body: str) -> tuple[str, list[_Occurrence]]:
    """The body with each value replaced by a unique identifier-like tag, and the values found."""
    stem = "Zgv"
    while stem.lower() in body.lower():
        stem += "q"
    occurrences: list[_Occurrence] = []
    parts: list[str] = []
    pos = 0
    spans = [(m.start(), m.end(), m.group(1), bool(m.group(2)), False) for m in PLACEHOLDER.finditer(body)]
    spans += [(m.start(), m.end(), m.group(0)[len(ENV_PREFIX) :], False, True) for m in ENV_REF.finditer(body)]
    for start, end, name, is_flag, is_ref in sorted(spans):
        if start < pos:
            continue
        parts.append(body[pos:start])
        if is_flag:
            parts.append("gpulabflag")  # toggled instructor text: an ordinary word while parsing
        else:
            tag = f"{stem}{len(occurrences)}{stem}"
            occurrences.append(_Occurrence(tag, body.count("\n", 0, start) + 1, name, is_ref))
            parts.append(f"{ENV_PREFIX}{name}{tag}" if is_ref else tag)
        pos = end
    parts.append(body[pos:])
    return "".join(parts), occurrences


def _bash_reprint(text: str) -> str | None:
    """bash's own parse of the body, printed back: the body imported as a function from the environment,
    which bash parses without running (and refuses if anything follows the function), then `declare -f`."""
    env = {"BASH_FUNC_gpulab_body%%": "() {\n" + text + "\n}", "PATH": "/usr/bin:/bin", "LC_ALL": "C"}
    try:
        result = subprocess.run(
            [BASH, "--norc", "--noprofile", "-c", "declare -f gpulab_body"],
            env=env,
            cwd=os.path.dirname(BASH),
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return None
    lines = result.stdout.split("\n")
    if result.returncode != 0 or len(lines) < 3 or not lines[0].startswith("gpulab_body"):
        return None
    return "\n".join(lines[2:]).rstrip().removesuffix("}")


@lru_cache(maxsize=16)
def _parse(text: str) -> Node:
    return _parser().parse(text.encode()).root_node


def _text(node: Node) -> str:
    """A node's source text (every tree here is parsed from bytes, so each node has its text)."""
    return (node.text or b"").decode()


@lru_cache(maxsize=16)
def _script_refusal(text: str) -> _Refused | None:
    try:
        _whole_script_checks(_parse(text), text)
    except _Refused as refused:
        return refused
    return None


def _judge(
    text: str,
    occ: _Occurrence,
    dash_prone: Mapping[str, bool],
    durations: Collection[str],
    directives: Mapping[str, str],
    reprint: bool = False,
) -> None:
    root = _parse(text)
    refused = _script_refusal(text)
    if refused is not None:
        raise refused
    data = text.encode()
    start = data.find(occ.tag.encode())
    if start == -1:
        if reprint:
            return  # bash dropped it: it was in a comment, which nothing reads
        raise _Refused("somewhere the checker cannot find", "write it as a word on its own")
    leaf = root.descendant_for_byte_range(start, start + len(occ.tag))
    if leaf is None:
        raise _Refused("somewhere the checker cannot find", "write it as a word on its own")
    if leaf.type == "comment":
        comment = _text(leaf).lstrip("#").lstrip()
        for word, fix in directives.items():
            if comment.startswith(word):
                raise _Refused(f"in a #{word} directive line, which is read before the script runs", fix)
        return
    _enclosing_checks(leaf, occ)
    unit = _word_unit(leaf, occ)
    starts_word = unit.start_byte == start or (occ.is_ref and _text(unit).lstrip('"').startswith("$"))
    prone = dash_prone.get(occ.name, True) and starts_word
    _role_checks(unit, occ, prone, occ.name in durations and _duration_word(unit, occ))


def _whole_script_checks(root: Node, text: str) -> None:
    control = CONTROL.search(text)
    if control:
        raise _Refused(
            f"in a script with a control character (line {text.count(chr(10), 0, control.start()) + 1}) that bash "
            "and the checker could read differently",
            "remove it (tabs and line ends are fine)",
        )
    echo = PREVIOUS_WORDS.search(text)
    if echo:
        raise _Refused(
            f"in a script that reads earlier commands' words back ({echo.group(0)} on line "
            f"{text.count(chr(10), 0, echo.start()) + 1}), which the checker does not follow",
            "drop that; use {env} where the value is needed",
        )
    if root.has_error:
        bad = next(_walk(root, lambda n: n.is_error or n.is_missing), root)
        raise _Refused(
            f"in a script whose line {bad.start_point[0] + 1} the checker cannot parse",
            "simplify that line (one here-document per line, no unusual syntax) or fix it",
        )
    for node in _walk(root, lambda n: n.type == "heredoc_redirect"):
        if not _heredoc_agrees(node, text):
            raise _Refused(
                f"after a here-document (line {node.start_point[0] + 1}) whose end line bash may read differently",
                "end the here-document with its word alone on a line, no spaces around it",
            )
    for node in _walk(root, lambda n: n.type in rules.REROUTING_NODES or _reroutes(n)):
        raise _Refused(
            f"in a script that sends output or commands elsewhere (line {node.start_point[0] + 1}: "
            f"{rules.rerouting_reason(node)})",
            "drop that construct; the checker cannot follow a value through it",
        )
    for node in _walk(root, lambda n: n.type == "command" and _runs_built_text(n)):
        raise _Refused(
            f"in a script that runs text built while it runs (line {node.start_point[0] + 1}), which could read any "
            "value from the environment",
            "run fixed code only (eval, source, bash -c, … with literal text)",
        )


def _runs_built_text(command: Node) -> bool:
    """eval "$x", source "$f", bash -c "$code", python3 -c "$code" …: code that is not written in the script."""
    name = _static_name(command) or _default_literal(command)
    texts = [_static_text(a, trust=False) for a in _arguments(command)]
    if name in rules.ALWAYS_INDIRECT:
        return any(t in (None, rules.COMPUTED) for t in texts)
    if name in rules.INTERPRETERS or (name or "").startswith("python"):
        code_options = [i for i, t in enumerate(texts) if t is not None and re.fullmatch(r"-[A-Za-z]*[ce]", t)]
        return any(i + 1 < len(texts) and texts[i + 1] in (None, rules.COMPUTED) for i in code_options)
    return False


def _reroutes(node: Node) -> bool:
    if node.type == "function_definition":
        function = node.child_by_field_name("name")
        return function is not None and _text(function) == "command_not_found_handle"
    if node.type != "command":
        return False
    name = _static_name(node)
    if name in rules.REROUTING_COMMANDS:
        return True
    return name == "exec" and not _arguments(node)


def _heredoc_agrees(node: Node, text: str) -> bool:
    """tree-sitter and bash end the here-document on the same line: the first line after the start line
    that is exactly the delimiter (after leading tabs for <<-)."""
    start = next((c for c in node.children if c.type == "heredoc_start"), None)
    end = next((c for c in node.children if c.type == "heredoc_end"), None)
    if start is None or end is None:
        return False
    raw = _text(start)
    delimiter = raw.replace("'", "").replace('"', "").replace("\\", "")
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", delimiter):
        return False
    strip_tabs = any(c.type == "<<-" for c in node.children)
    lines = text.split("\n")
    first_row = start.start_point[0]
    if lines[first_row].rstrip().endswith("\\"):
        return False
    for row in range(first_row + 1, len(lines)):
        candidate = lines[row].lstrip("\t") if strip_tabs else lines[row]
        if candidate == delimiter:
            return row == end.start_point[0] and _text(end) == delimiter
    return False


def _walk(node: Node, predicate) -> Iterator[Node]:
    stack = [node]
    while stack:
        current = stack.pop()
        if predicate(current):
            yield current
        stack.extend(reversed(current.children))


def _ancestors(node: Node) -> Iterator[Node]:
    current = node.parent
    while current is not None:
        yield current
        current = current.parent


def _enclosing_checks(leaf: Node, occ: _Occurrence) -> None:
    """Constructs that refuse a value anywhere inside them."""
    own_expansion = leaf.parent if occ.is_ref else None
    for node in _ancestors(leaf):
        kind = node.type
        if kind in ("expansion", "simple_expansion") and node != own_expansion:
            raise _Refused(
                "inside a ${…} operator, where bash expands, matches or evaluates it",
                "use {env} as a whole argument and process it in a program",
            )
        first = node.children[0].type if node.children else ""
        if (kind == "compound_statement" and first == "((") or kind == "arithmetic_expansion":
            raise _Refused(
                "inside (( )) arithmetic, where a value would be evaluated",
                "compute with a plain command instead, e.g. [ {env} -gt 10 ] or seq 1 {env}",
            )
        if kind == "c_style_for_statement":
            raise _Refused(
                "in a for (( )) loop header, where a value would be evaluated", "loop with seq 1 {env} instead"
            )
        if kind == "test_command" and first == "[[":
            raise _Refused(
                "inside [[ ]], where comparisons evaluate array subscripts in a value",
                "use [ ] instead, e.g. [ {env} = yes ]",
            )
        if kind in ("heredoc_body", "heredoc_redirect", "heredoc_start"):
            raise _Refused(
                "inside a here-document, whose text is not quoted",
                "pass the value as an argument of a command instead, e.g. --name {env}",
            )
        if kind in ("file_redirect", "herestring_redirect"):
            raise _Refused(
                "a redirection target, where it would choose which file is written or read",
                "redirect to a fixed file name and pass the value as an argument",
            )
        if kind in ("command_substitution", "process_substitution"):
            raise _Refused(
                "inside $( ) or backquotes, whose output the shell passes on unquoted",
                "run that command on its own line and pass the value to it as an argument",
            )
        if kind == "subscript":
            raise _Refused("inside an array subscript, where it would be evaluated", "use an argument word instead")
        if kind in ("raw_string", "ansi_c_string", "translated_string"):
            raise _Refused(
                "inside single quotes, so it would not stay one quoted word",
                "write it outside the quotes; the portal quotes values itself",
            )


def _word_unit(leaf: Node, occ: _Occurrence) -> Node:
    """The whole argument word holding the value, after checking the value's own shape in it."""
    if occ.is_ref:
        expansion = leaf.parent if leaf.type == "variable_name" else None
        if expansion is None or expansion.type not in ("simple_expansion", "expansion"):
            raise _Refused(
                "written where bash does not expand it as a variable", 'write it as "$GPULAB_P_name" in an argument'
            )
        if expansion.type == "expansion" and [c.type for c in expansion.children] != ["${", "variable_name", "}"]:
            raise _Refused("inside a ${…} operator", "write {env} as a whole argument and process it in a program")
        unit = expansion
        if unit.parent is not None and unit.parent.type == "string":
            unit = unit.parent
        elif unit.parent is None or unit.parent.type != "variable_assignment":
            raise _Refused("outside double quotes, so bash would split and glob it", "write {env} in double quotes")
    else:
        if leaf.type == "string_content" or any(a.type == "string" for a in _ancestors(leaf)):
            raise _Refused(
                "inside double quotes, so it would not stay one quoted word",
                "write it outside the quotes (the portal quotes values itself), or use {env} inside them",
                "write it outside the quotes (the portal quotes values itself)",
            )
        if leaf.type in ("raw_string", "ansi_c_string"):
            raise _Refused(
                "inside single quotes, so it would not stay one quoted word",
                "write it outside the quotes; the portal quotes values itself",
            )
        if leaf.type != "word":
            raise _Refused(
                f"in a place bash reads as {leaf.type.replace('_', ' ')}", "use it as an argument word of a command"
            )
        literal = _text(leaf).replace(occ.tag, "")
        literal = TAG.sub("", literal)
        if not WORD_TEXT.fullmatch(literal):
            raise _Refused(
                "joined to text with shell-special characters (globs, braces, ~, $)",
                "make it a word of its own, or join it only to letters, digits and . _ - / : , + = @ %",
            )
        unit = leaf
    if unit.parent is not None and unit.parent.type == "concatenation":
        unit = unit.parent
        if any(part.type not in WORD_PARTS for part in unit.children):
            raise _Refused(
                "joined to a brace expansion or other shell construct", "make it a word of its own or joined to text"
            )
    return unit


def _duration_word(unit: Node, occ: _Occurrence) -> bool:
    """Is the word the value alone, or the value and a time unit: {{ x }}, {{ x }}m, "$GPULAB_P_x", "$GPULAB_P_x"s?"""
    value = re.escape(occ.tag)
    if occ.is_ref:
        value = rf'"\$(?:{ENV_PREFIX}{occ.name}{value}|\{{{ENV_PREFIX}{occ.name}{value}\}})"'
    return re.fullmatch(value + "[smhd]?", _text(unit)) is not None


def _role_checks(unit: Node, occ: _Occurrence, prone: bool, duration: bool = False) -> None:
    parent = unit.parent
    if parent is None:
        raise _Refused(
            "in a place the checker does not accept (top level)", "use it as an argument of a command, e.g. echo {env}"
        )
    kind = parent.type
    if kind == "command_name":
        raise _Refused(
            "the command name, so the value would choose what runs",
            "put a fixed command first and pass the value after it",
        )
    if kind == "variable_assignment":
        _assignment_checks(parent, occ)
        return
    if kind == "case_statement" and parent.child_by_field_name("value") == unit:
        return  # case only compares the word with the patterns
    test = next((a for a in _ancestors(unit) if a.type == "test_command"), None)
    if test is not None:
        _test_checks(test, unit, prone)
        return
    if kind != "command":
        raise _Refused(
            f"in a place the checker does not accept ({kind.replace('_', ' ')})",
            "use it as an argument of a command, e.g. echo {env}",
        )
    name = _static_name(parent) or _defaulted_name(parent)
    if name is None:
        raise _Refused(
            "an argument of a command whose name is computed, so the checker cannot tell what runs it",
            "call the program by a fixed name",
        )
    args = _arguments(parent)
    position = next((i for i, arg in enumerate(args) if arg.start_byte <= unit.start_byte < arg.end_byte), None)
    if position is None:
        raise _Refused("in a part of the command the checker does not accept", "use it as an argument word")
    if name in _function_names(_text(_root(parent))):
        raise _Refused(
            f"an argument of {name}, a function of this script the checker does not follow into",
            "pass the value to a program directly",
        )
    reason = rules.judge_command(name, [_static_text(a) for a in args], position, duration=duration)
    if reason:
        raise _Refused(reason[0], reason[1])
    if prone:
        raise _Refused(
            "at the start of an argument and may begin with '-', so a program could read it as an option",
            "join it to its option (--name={value}) or set a minimum of 0".replace("{value}", occ.what),
        )
    _statement_checks(parent, name)


@lru_cache(maxsize=16)
def _function_names(script: str) -> frozenset[str]:
    definitions = _walk(_parse(script), lambda n: n.type == "function_definition")
    return frozenset(_text(name) for f in definitions if (name := f.child_by_field_name("name")) is not None)


def _assignment_checks(assignment: Node, occ: _Occurrence) -> None:
    holder = assignment.parent
    if not occ.is_ref:
        raise _Refused(
            "a variable's value, which other commands may evaluate",
            "write NAME={env} (the portal exports every value as GPULAB_P_<name>)",
            "pass the value as an argument of a command instead",
        )
    variable = assignment.child_by_field_name("name")
    name = _text(variable) if variable is not None else ""
    script = _text(_root(assignment))
    if RISKY_VARIABLE.search(name.upper()):
        raise _Refused(
            f"copied into {name}, a variable programs may load or run code from",
            "pass the value as an argument, or copy it only into a variable like NCCL_DEBUG or MY_SETTING",
        )
    if (
        not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name)
        or len(re.findall(rf"(?<![A-Za-z0-9_]){name}(?![A-Za-z0-9_])", script)) != 1
        or _indirect(script)
    ):
        raise _Refused(
            "copied into a variable the script reads again, where the checker cannot follow it",
            "use {env} directly where the value is needed",
        )
    if holder is not None and holder.type == "declaration_command":
        keyword = holder.children[0].type
        options = [c for c in holder.children if c.type == "word" and _text(c).startswith(("-", "+"))]
        if keyword not in ("export", "local", "readonly", "declare", "typeset") or options:
            raise _Refused("assigned by declare with options (-i, -n, …), which evaluate it", "assign it plainly")


def _test_checks(test: Node, unit: Node, prone: bool) -> None:
    """[ … ] (the test builtin) compares strings and numbers without evaluating, except -v and -R."""
    if test.children[0].type != "[":
        raise _Refused("inside [[ ]], where comparisons evaluate array subscripts in a value", "use [ ] instead")
    operators = {_text(n) for n in _walk(test, lambda n: n.type in ("test_operator", "word"))}
    if operators & {"-v", "-R"}:
        raise _Refused("in a [ -v ] test, which evaluates a subscript in a variable name", "compare with = instead")
    if prone:
        raise _Refused("in [ ] and may begin with '-', where test would read it as an operator", "set a minimum of 0")
    if any(a.type in ("command_substitution", "process_substitution") for a in _ancestors(test)):
        raise _Refused("inside $( )", "run the test on its own line")


def _statement_checks(command: Node, name: str) -> None:
    """Output that holds a value must not reach code: an emitter's output goes to the log or stderr only, and
    every pipeline around the command ends in text filters that write nowhere but the log."""
    child = command
    for node in _ancestors(command):
        if node.type == "redirected_statement" and name in rules.EMITTERS and _writes_file(node):
            raise _Refused(
                f"printed by {name} into a file or descriptor, from where it could be run",
                "print it to the job log (or >&2), or have a program write the file",
            )
        if node.type == "pipeline":
            stages = [c for c in node.children if c.is_named]
            for stage in stages[stages.index(child) + 1 :]:
                inner = stage.children[0] if stage.type == "redirected_statement" else stage
                stage_name = _static_name(inner) if inner.type == "command" else None
                if stage_name not in rules.FILTERS:
                    raise _Refused(
                        f"piped into {stage_name or 'a command the checker does not know'}, which may run its input",
                        "pipe only into text filters (grep, head, tail, wc, …)",
                    )
                if stage.type == "redirected_statement" and _writes_file(stage):
                    raise _Refused(
                        f"piped into {stage_name}, whose output goes to a file from where it could be run",
                        "let the pipeline print to the job log",
                    )
        child = node


def _writes_file(statement: Node) -> bool:
    """Does a redirection send output anywhere but the job log (stdout/stderr)?"""
    return any(
        c.type == "file_redirect" and ">" in _text(c) and not re.fullmatch(r"[12]?>&[12]", _text(c).replace(" ", ""))
        for c in statement.children
    )


def _root(node: Node) -> Node:
    while node.parent is not None:
        node = node.parent
    return node


def _static_name(command: Node) -> str | None:
    name = command.child_by_field_name("name")
    if name is None or name.named_child_count != 1 or name.named_children[0].type != "word":
        return None
    text = _text(name)
    return text.rsplit("/", 1)[-1] if re.fullmatch(r"[A-Za-z0-9_./+:\[-]+", text) else None


@lru_cache(maxsize=16)
def _indirect(script: str) -> bool:
    """Could the script read or set a variable without naming it (eval, source, namerefs, ${!x}, read "$x")?"""
    root = _parse(script)
    if "${!" in script:
        return True
    for node in _walk(root, lambda n: n.type in ("command", "declaration_command")):
        if node.type == "declaration_command":
            args = [c for c in node.named_children if c.type not in ("variable_assignment", "variable_name")]
            if any(_static_text(a, trust=False) in (None, rules.COMPUTED) or "n" in _text(a) for a in args):
                return True
            continue
        name = _static_name(node) or _default_literal(node)
        if name is None or name in rules.ALWAYS_INDIRECT:
            return True
        texts = [_static_text(a, trust=False) for a in _arguments(node)]
        if name in rules.NAMING_COMMANDS and any(t in (None, rules.COMPUTED) for t in texts):
            return True
    return False


def _defaulted_name(command: Node) -> str | None:
    name = command.child_by_field_name("name")
    return _defaulted(name) if name is not None else None


def _defaulted(node: Node) -> str | None:
    """${NAME:-python3} counts as python3 when NAME can come only from the environment the admin sets (the
    preamble): the script never mentions NAME elsewhere and cannot set variables without naming them."""
    match = _default_match(node)
    if match is None or match.group(1).startswith(ENV_PREFIX):
        return None
    script = _text(_root(node))
    mentions = len(re.findall(rf"(?<![A-Za-z0-9_]){match.group(1)}(?![A-Za-z0-9_])", script))
    uses = script.count(match.group(0).strip('"'))
    if mentions != uses or _indirect(script):
        return None
    return match.group(2)


def _default_match(node: Node) -> re.Match | None:
    return re.fullmatch(r'"?\$\{([A-Z][A-Z0-9_]*):-([A-Za-z0-9_.+-]+)\}"?', _text(node))


def _default_literal(command: Node) -> str | None:
    name = command.child_by_field_name("name")
    match = _default_match(name) if name is not None else None
    return match.group(2) if match else None


def _arguments(command: Node) -> list[Node]:
    return command.children_by_field_name("argument")


def _static_text(node: Node, trust: bool = True) -> str | None:
    """An argument's literal text; rules.VALUE where it holds a value, rules.COMPUTED when it is built from
    variables only, None when the checker cannot read it (command substitution). `trust`: read ${NAME:-word}
    as word where _defaulted allows."""
    text = _text(node)
    if TAG.search(text):
        literal = re.sub(r"(GPULAB_P_[A-Za-z0-9_]*)?" + TAG.pattern, rules.VALUE, text)
        return literal if node.type == "word" else rules.VALUE
    if node.type in ("word", "number") and re.fullmatch(r"[A-Za-z0-9_./:=,+@%^-]+", text):
        return text
    if node.type == "raw_string":
        return text[1:-1]
    if trust and node.type in ("expansion", "string") and _defaulted(node):
        return _defaulted(node)
    if node.type == "string" and all(c.type in ('"', "string_content") for c in node.children):
        return text[1:-1]
    if not any(_walk(node, lambda n: n.type in ("command_substitution", "process_substitution"))):
        return rules.COMPUTED  # a path from variables, e.g. "$GPULAB_LAB_DIR"/train.py: no value in it
    return None


def _dash_prone(param: Param) -> bool:
    """May a value of this parameter start with "-", where a program could read it as an option?"""
    if param.type in ("int", "float"):
        return param.min is None or param.min < 0
    if param.type == "choice":
        return not param.choices or any(choice.startswith(("-", "+")) for choice in param.choices)
    return False  # bool renders true/false; strings may not start with - or + (params.SAFE_STRING)


DURATION = re.compile(r"[0-9]+(\.[0-9]+)?[smhd]?")


def _duration_like(param: Param) -> bool:
    """Is every value of this parameter a duration timeout reads (a number that cannot be negative, or a choice
    such as 30s or 5m), so it may stand as timeout's duration?"""
    if param.type in ("int", "float"):
        return not _dash_prone(param)
    return param.type == "choice" and bool(param.choices) and all(DURATION.fullmatch(c) for c in param.choices)


def unix_lines(body: str) -> str:
    """Browsers send a textarea's lines ending in CR LF; bash would keep each CR as part of the last word."""
    return body.replace("\r\n", "\n")


def placeholder_problems(
    body: str,
    schema: list[Param] | None = None,
    *,
    exported: bool = False,
    directives: Mapping[str, str] | None = None,
) -> list[str]:
    """Each placeholder or $GPULAB_P_ reference bash would not keep an inert argument, as a sentence (`exported`,
    `directives`: as `problems` reads them)."""
    body = unix_lines(body)
    names = {p.name: p for p in schema or ()}
    unknown = [
        m for m in PLACEHOLDER.finditer(body) if m.group(1) not in names and m.group(1) not in BUILTIN_PLACEHOLDERS
    ]
    if schema is not None and unknown:
        return [f"Line {body.count(chr(10), 0, m.start()) + 1}: {not_a_parameter(m.group(1))}" for m in unknown]
    dash_prone = {m.group(1): False for m in unknown}  # checked for context only; rendering refuses them
    dash_prone.update({name: _dash_prone(p) for name, p in names.items()})
    dash_prone.update(dict.fromkeys(BUILTIN_PLACEHOLDERS, False))
    durations = {name for name, p in names.items() if _duration_like(p)}
    found = problems(body, dash_prone, durations, exported=exported, directives=directives)
    return [str(problem) for problem in found]
