"""Clusters from YAML files, one per cluster, in the style of Open OnDemand's clusters.d.

    # /etc/gpulab/clusters.d/campus.yml  (the file name is the cluster's name)
    v2:
      metadata: {title: "Campus GPU cluster"}
      login: {host: login.example.edu, port: 22, host_key_file: /etc/gpulab/campus.pub}
      job: {adapter: slurm, partitions: [gpu], gpu_types: [a100], has_accounting: true}
      gpulab:
        lab_dir: ~/gpulab
        preamble: "module load cuda"
        run_as: sudo          # whose identity jobs have: the kind's own-user mode by default (sudo; rest-user on
                              # slurm-rest), or service (every student as shared_user), own-account
        shared_user: labshared  # only with run_as: service: the unprivileged user every student's jobs run as
        courses: [hpc-2026]
        service_account: {username: gpulab, private_key_file: /run/secrets/campus_key}

Secrets are referenced, never inline: private_key_file / private_key_env / password_file / password_env.
The host key may be given inline (it is public) or as host_key_file.

A Kubernetes cluster names a kubeconfig (the API server, its CA and the portal's credentials; by reference too) and,
optionally, the context to use from it; `emulated: true` marks a stand-in (make demo's emulator), which every page
naming the cluster then says:

    v2:
      metadata: {title: "Campus Kubernetes", emulated: false}
      job: {adapter: kubernetes, context: lab}
      gpulab:
        service_account: {username: gpulab-portal, kubeconfig_file: /run/secrets/campus_kubeconfig}

A cluster reached through slurmrestd names its URL and the account's token (a JWT, by reference too); its login
node is optional (logs and students' own cluster users need it):

    v2:
      login: {host: login.example.edu, host_key_file: /etc/gpulab/campus.pub}
      job: {adapter: slurm-rest, rest_url: https://slurm.example.edu:6820, partitions: [gpu]}
      gpulab:
        service_account: {username: gpulab, token_file: /run/secrets/campus_jwt}
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from django.core.exceptions import ValidationError
from django.db import transaction

from . import kinds, services
from .choices import POSIX_NAME, SCHEDULER_NAME, RunAs
from .models import AuthMethod, Cluster, ClusterAccount

NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,49}$")
INLINE_SECRETS = {"private_key", "password", "secret", "token", "kubeconfig", "api_token"}
TOKEN_REFS = ("token_file", "token_env")  # a slurmrestd token, beside (or instead of) the SSH credential
SECRET_REFS = {
    "private_key_file": AuthMethod.KEY,
    "private_key_env": AuthMethod.KEY,
    "password_file": AuthMethod.PASSWORD,
    "password_env": AuthMethod.PASSWORD,
    "kubeconfig_file": AuthMethod.KUBECONFIG,
    "kubeconfig_env": AuthMethod.KUBECONFIG,
}


# The Cluster fields a kind may ask for (Kind.missing_fields), as a cluster file names them.
FILE_KEYS = {"host": "login.host", "api_url": "job.rest_url"}


class ClusterFileError(ValueError):
    pass


@dataclass
class SyncResult:
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def _section(data: dict, key: str, where: str) -> dict:
    value = data.get(key) or {}
    if not isinstance(value, dict):
        raise ClusterFileError(f"{where}: `{key}` must be a mapping.")
    return value


def _read_secret(ref: dict, where: str) -> tuple[str, str] | None:
    inline = INLINE_SECRETS & set(ref)
    if inline:
        raise ClusterFileError(
            f"{where}: `{sorted(inline)[0]}` is inline. Reference secrets with private_key_file, private_key_env, "
            "password_file, password_env, kubeconfig_file, kubeconfig_env, token_file or token_env instead."
        )
    given = [key for key in SECRET_REFS if key in ref]
    if not given:
        return None
    if len(given) > 1:
        raise ClusterFileError(f"{where}: give one of {', '.join(given)}, not several.")
    key = given[0]
    if key.endswith("_file"):
        try:
            value = Path(ref[key]).read_text()
        except OSError as exc:
            raise ClusterFileError(f"{where}: cannot read {key} {ref[key]}: {exc.strerror}.") from None
    else:
        value = os.environ.get(str(ref[key]), "")
        if not value:
            raise ClusterFileError(f"{where}: the environment variable {ref[key]} named by {key} is not set.")
    return SECRET_REFS[key], value


def _read_token(ref: dict, where: str) -> str | None:
    given = [key for key in TOKEN_REFS if key in ref]
    if not given:
        return None
    if len(given) > 1:
        raise ClusterFileError(f"{where}: give token_file or token_env, not both.")
    key = given[0]
    if key == "token_file":
        try:
            return Path(ref[key]).read_text().strip()
        except OSError as exc:
            raise ClusterFileError(f"{where}: cannot read token_file {ref[key]}: {exc.strerror}.") from None
    value = os.environ.get(str(ref[key]), "").strip()
    if not value:
        raise ClusterFileError(f"{where}: the environment variable {ref[key]} named by token_env is not set.")
    return value


def _host_key(login: dict, where: str) -> str:
    if "host_key_file" in login:
        try:
            text = Path(login["host_key_file"]).read_text().strip()
        except OSError as exc:
            raise ClusterFileError(f"{where}: cannot read host_key_file: {exc.strerror}.") from None
    else:
        text = str(login.get("host_key") or "").strip()
    if not text:
        return ""
    words = text.split()
    if len(words) >= 3 and not words[0].startswith(("ssh-", "ecdsa-")):  # a known_hosts line: host type key
        words = words[1:]
    if len(words) < 2 or not words[0].startswith(("ssh-", "ecdsa-")):
        raise ClusterFileError(f"{where}: the host key must look like “ssh-ed25519 AAAA…”.")
    return f"{words[0]} {words[1]}"


def parse_file(path: Path) -> dict:
    where = path.name
    name = path.stem
    if not NAME.match(name):
        raise ClusterFileError(f"{where}: the file name must be the cluster's name (lower-case letters, digits, - _).")
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise ClusterFileError(f"{where}: not valid YAML ({exc}).") from None
    if not isinstance(data, dict) or not isinstance(data.get("v2"), dict):
        raise ClusterFileError(f"{where}: expected a top-level `v2:` mapping.")
    v2 = data["v2"]
    login, job, extra = _section(v2, "login", where), _section(v2, "job", where), _section(v2, "gpulab", where)
    kind = job.get("adapter", kinds.default())
    if kind not in kinds.names():
        raise ClusterFileError(f"{where}: job.adapter must be one of {', '.join(kinds.names())}.")
    rest_url = str(job.get("rest_url", ""))
    if rest_url and not rest_url.startswith(("http://", "https://")):
        raise ClusterFileError(f"{where}: job.rest_url must be an http:// or https:// address.")
    own = _kind_settings(kind, v2, where)
    # What the kind cannot work without, named by the file's keys.
    probe = Cluster(kind=kind, host=str(login.get("host", "")), api_url=rest_url, kind_settings=own)
    missing = kinds.kind_of(kind).missing_fields(probe)
    if missing:
        needed = "; ".join(f"{FILE_KEYS.get(name, name)} is required ({why})" for name, why in missing.items())
        raise ClusterFileError(f"{where}: {needed}.")
    port = login.get("port", 22)
    if not isinstance(port, int) or not 0 < port < 65536:
        raise ClusterFileError(f"{where}: login.port must be a port number.")
    lists = {}
    for key in ("partitions", "gpu_types"):
        value = job.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) and SCHEDULER_NAME.fullmatch(v) for v in value):
            raise ClusterFileError(f"{where}: job.{key} must be a list of names.")
        lists[key] = value
    account = _section(extra, "service_account", where)
    secret = _read_secret(account, f"{where} service_account")
    if secret:
        problem = kinds.kind_of(kind).credential_problem(probe, *secret)
        if problem:
            raise ClusterFileError(f"{where}: {problem}")
    token = _read_token(account, f"{where} service_account")
    if account and not account.get("username"):
        raise ClusterFileError(f"{where}: service_account.username is required.")
    run_as = str(extra.get("run_as", kinds.default_run_as(kind)))
    if run_as not in kinds.backend_class(kind).run_as_modes:
        offered = ", ".join(kinds.backend_class(kind).run_as_modes)
        raise ClusterFileError(f"{where}: gpulab.run_as must be one of {offered} for a {kind} cluster.")
    shared_user = _shared_user(extra, kind, run_as, account, where)
    courses = extra.get("courses", [])
    if not isinstance(courses, list):
        raise ClusterFileError(f"{where}: gpulab.courses must be a list of course slugs.")
    metadata = _section(v2, "metadata", where)
    if not isinstance(metadata.get("emulated", False), bool):
        raise ClusterFileError(f"{where}: metadata.emulated must be true or false.")
    return {
        "name": name,
        "fields": {
            "title": str(metadata.get("title", "")),
            "emulated": metadata.get("emulated", False),
            "kind": kind,
            "host": str(login.get("host", "")),
            "port": port,
            "partitions": lists["partitions"],
            "gpu_types": lists["gpu_types"],
            "lab_dir": str(extra.get("lab_dir", "~/gpulab")),
            "preamble": str(extra.get("preamble", "")),
            "run_as": run_as,
            "shared_user": shared_user,
            **({"api_url": rest_url} if rest_url else {}),
            "kind_settings": own,
        },
        "host_key": _host_key(login, where),
        "account": {"username": account.get("username"), "secret": secret, "token": token} if account else None,
        "courses": courses,
    }


def _kind_settings(kind: str, v2: dict, where: str) -> dict:
    """The settings the cluster's kind takes from a file (KindSettings.file_keys: "job.context" is `context` under
    `job:`), validated as the admin's form validates them; a setting the file leaves out keeps the kind's default."""
    owner = kinds.kind_of(kind).cluster_settings
    given = {}
    for key, name in owner.file_keys().items():
        section, _, entry = key.partition(".")
        values = _section(v2, section, where)
        if entry in values:
            given[name] = values[entry]
    try:
        return owner.clean(given)
    except ValidationError as exc:
        named = {name: key for key, name in owner.file_keys().items()}
        problems = "; ".join(f"{named[name]}: {' '.join(why)}" for name, why in exc.message_dict.items())
        raise ClusterFileError(f"{where}: {problems}") from None


def _shared_user(extra: dict, kind: str, run_as: str, account: dict, where: str) -> str:
    """gpulab.shared_user: required where jobs run as one shared user (never the service account), else ignored."""
    name = str(extra.get("shared_user", "")).strip()
    if run_as != RunAs.SERVICE or not kinds.kind_of(kind).shared_user_mode:
        return name
    if not POSIX_NAME.match(name):
        raise ClusterFileError(
            f"{where}: with run_as: service, gpulab.shared_user must name the unprivileged cluster user every "
            "student's jobs run as (e.g. labshared); jobs never run as the service account."
        )
    if account and name == account.get("username"):
        raise ClusterFileError(
            f"{where}: gpulab.shared_user cannot be the service account ({name}): it holds the portal's privileges."
        )
    return name


# Gives the cluster to the courses a file names (their slugs), or raises ClusterFileError: the courses app does it
# (courses/cluster_files.py), since courses stand above clusters.
LinkCourses = Callable[[Cluster, list[str]], None]


def sync_directory(directory: Path, *, link_courses: LinkCourses, actor=None) -> SyncResult:
    result = SyncResult()
    files = sorted([*directory.glob("*.yml"), *directory.glob("*.yaml")])
    if not files:
        result.errors.append(f"No *.yml files in {directory}.")
    for path in files:
        try:
            spec = parse_file(path)
            with transaction.atomic():
                created = _apply(spec, actor, link_courses)
        except ClusterFileError as exc:
            result.errors.append(str(exc))
            continue
        (result.created if created else result.updated).append(spec["name"])
    return result


def _apply(spec: dict, actor, link_courses: LinkCourses) -> bool:
    fields = dict(spec["fields"])
    given = fields.pop("kind_settings")
    cluster, created = Cluster.objects.update_or_create(name=spec["name"], defaults=fields)  # the row locked
    # The file's settings replace the typed ones; what Test connection detected stays unless the file says it.
    detected = kinds.kind_of(cluster.kind).cluster_settings.names(detected=True)
    kept = {name: value for name, value in cluster.kind_settings.items() if name in detected}
    cluster.kind_settings = {**kept, **given}
    cluster.save(update_fields=["kind_settings"])
    if spec["host_key"] and spec["host_key"] != cluster.host_key:
        services.pin_host_key(cluster, spec["host_key"], actor=actor)
    if spec["account"]:
        account = cluster.service_account() or ClusterAccount(cluster=cluster)
        account.username = spec["account"]["username"]
        secret = None
        if spec["account"]["secret"]:
            method, value = spec["account"]["secret"]
            account.auth_method = method
            secret = None if account.pk and account.secret() == value else value
        token = spec["account"]["token"]
        if token and account.pk and account.api_token() == token:
            token = None  # unchanged: no new audit event
        services.save_account(account, secret=secret, api_token=token, actor=actor)
    link_courses(cluster, spec["courses"])
    return created
