"""The placeholder grammar every template body shares, whatever a kind renders it into: `{{ name }}` and, for a bool,
`{{ name|flag:--fp16 }}`. How a value is written in place of a placeholder is the kind's (the SLURM family's batch
script quotes it for bash; Kubernetes writes it into objects as data)."""

from __future__ import annotations

import re

PLACEHOLDER = re.compile(r"\{\{\s*([a-z][a-z0-9_]*)\s*(?:\|\s*flag\s*:\s*(-{1,2}[A-Za-z0-9][A-Za-z0-9_=.+-]*)\s*)?\}\}")


def not_a_parameter(name: str) -> str:
    return f"{{{{ {name} }}}} is not a parameter of this template."


def stray_braces(text: str) -> str | None:
    """What to say of a "{{" left once every placeholder is replaced (scripts and Kubernetes YAML alike)."""
    at = text.find("{{")
    if at == -1:
        return None
    return f"Line {text.count(chr(10), 0, at) + 1}: “{{{{” does not start a placeholder the portal knows."
