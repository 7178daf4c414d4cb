"""The custom resources the portal knows beyond Kubernetes itself, as their projects publish them (crds/*.yaml):
Kueue's queues and workloads, and the operators' workload kinds. Objects of these kinds are checked against the
published schema before they are sent, as kubernetes-validate checks the built-in kinds; the test API server
registers and checks the same documents."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import jsonschema
import yaml

HERE = Path(__file__).resolve().parent / "crds"


class SchemaInvalid(ValueError):
    """The object does not match its kind's published schema; the message names the field."""


@cache
def definitions() -> dict[tuple[str, str], dict]:
    """(apiVersion, kind) → the CRD document and its version's openAPIV3Schema."""
    found = {}
    for path in sorted(HERE.glob("*.yaml")):
        for crd in yaml.safe_load_all(path.read_text()):
            spec = crd["spec"]
            for version in spec["versions"]:
                api_version = f"{spec['group']}/{version['name']}"
                found[(api_version, spec["names"]["kind"])] = {"crd": crd, "schema": _openapi(version)}
    return found


def _openapi(version: dict) -> dict:
    """The openAPIV3Schema as JSON Schema: Kubernetes' int-or-string marker becomes the anyOf it stands for."""

    def convert(node):
        if isinstance(node, dict):
            return {k: convert(v) for k, v in node.items() if not k.startswith("x-kubernetes-")}
        if isinstance(node, list):
            return [convert(v) for v in node]
        return node

    return convert(version["schema"]["openAPIV3Schema"])


def validate(obj: dict) -> None:
    """Raise SchemaInvalid unless `obj` matches its kind's published schema."""
    entry = definitions().get((obj.get("apiVersion", ""), obj.get("kind", "")))
    if entry is None:
        raise SchemaInvalid(f"no published schema for {obj.get('apiVersion')}/{obj.get('kind')}")
    error = jsonschema.exceptions.best_match(jsonschema.Draft7Validator(entry["schema"]).iter_errors(obj))
    if error is not None:
        path = ".".join(str(p) for p in error.absolute_path) or "(the object)"
        raise SchemaInvalid(f"{path}: {error.message}")


def resources() -> list[tuple[str, str, bool]]:
    """Every (group/version, plural, namespaced) the documents define: what a test API server registers."""
    return [
        (api_version, entry["crd"]["spec"]["names"]["plural"], entry["crd"]["spec"]["scope"] == "Namespaced")
        for (api_version, _), entry in definitions().items()
    ]
