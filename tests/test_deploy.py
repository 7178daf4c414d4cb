"""The compose file and the images' entrypoint scripts (no Docker engine runs here: `docker compose config`
checks the file, and the scripts run against stub programs that record how they were called)."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
ENTRYPOINT = ROOT / "deploy/entrypoint.sh"
SLURM_ENTRYPOINT = ROOT / "deploy/slurm/entrypoint.sh"


def compose_command() -> list[str]:
    docker = shutil.which("docker")
    if docker and subprocess.run([docker, "compose", "version"], capture_output=True).returncode == 0:
        return [docker, "compose"]
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    pytest.fail("neither `docker compose` nor `docker-compose` is installed; `make test` installs docker-compose")


@pytest.fixture(scope="module")
def compose() -> dict:
    result = subprocess.run(
        [*compose_command(), "-f", str(ROOT / "docker-compose.yml"), "config"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "COMPOSE_PROJECT_NAME": "gpulab"},
    )
    assert result.returncode == 0, result.stderr
    return yaml.safe_load(result.stdout)


def test_compose_runs_the_whole_lab(compose):
    services = compose["services"]
    assert set(services) == {"keys", "postgres", "redis", "slurm", "setup", "web", "worker", "beat", "collector"}
    assert services["web"]["command"] == ["web"] and services["beat"]["command"] == ["beat"]
    assert services["collector"]["command"] == ["collector"] and services["worker"]["command"] == ["worker"]
    assert any(
        str(p.get("published", p) if isinstance(p, dict) else p).startswith("8000") for p in services["web"]["ports"]
    )
    assert services["slurm"]["build"]["dockerfile"] == "deploy/slurm/Dockerfile"
    assert services["web"]["build"]["dockerfile"] == "deploy/Dockerfile"


def test_compose_starts_in_order_and_checks_health(compose):
    services = compose["services"]
    for name in ("postgres", "redis", "slurm", "web", "worker"):
        assert services[name]["healthcheck"]["test"], name
    for name in ("web", "worker", "beat", "collector"):
        needs = services[name]["depends_on"]
        assert needs["setup"]["condition"] == "service_completed_successfully"
        assert needs["postgres"]["condition"] == needs["redis"]["condition"] == "service_healthy"
    assert services["setup"]["depends_on"]["slurm"]["condition"] == "service_healthy"
    assert services["postgres"]["depends_on"]["keys"]["condition"] == "service_completed_successfully"
    assert services["web"]["healthcheck"]["test"][-1].endswith("/readyz")


def test_compose_keeps_state_in_named_volumes_and_secrets_in_files(compose):
    assert {"portal-secrets", "postgres-data", "redis-data", "slurm-state", "cluster-handoff"} <= set(
        compose["volumes"]
    )
    postgres = compose["services"]["postgres"]
    assert postgres["environment"]["POSTGRES_PASSWORD_FILE"].startswith("/run/gpulab-secrets/")
    assert "POSTGRES_PASSWORD" not in postgres["environment"]
    for name, service in compose["services"].items():
        for key in service.get("environment") or {}:
            assert key not in {"SECRET_KEY", "CREDENTIAL_KEYS", "DATABASE_URL", "METRICS_TOKEN"}, (name, key)
    for name in ("web", "worker", "beat", "collector"):
        mounts = [str(v) for v in compose["services"][name]["volumes"]]
        assert any("/run/gpulab-secrets" in m and (":ro" in m or "read_only" in m) for m in mounts), (name, mounts)


# -- the portal image's entrypoint ------------------------------------------------------------------------------
@pytest.fixture
def stubs(tmp_path):
    """uvicorn, celery and python that record their arguments and the secret variables they were given."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    record = tmp_path / "calls"
    secret_vars = "^(SECRET_KEY|CREDENTIAL_KEYS|DATABASE_URL|METRICS_TOKEN)(_FILE)?="
    script = f"""#!/usr/bin/env bash
{{ printf '%s' "$(basename "$0")"; printf ' %s' "$@"; echo; env | grep -E '{secret_vars}' | sort; }} >>{record}
if [ "$(basename "$0")" = python ] && [ "$2" = shell ] && [ -n "${{DB_DOWN:-}}" ]; then exit 1; fi
exit 0
"""
    for name in ("uvicorn", "celery", "python"):
        path = bin_dir / name
        path.write_text(script)
        path.chmod(0o755)
    return bin_dir, record


def run_entrypoint(stubs, tmp_path, *args: str, **env: str) -> subprocess.CompletedProcess:
    bin_dir, _ = stubs
    base = {
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "APP_DIR": str(ROOT),
        "PYTHON": str(bin_dir / "python"),
        "SECRETS_DIR": str(tmp_path / "secrets"),
        "HANDOFF_DIR": str(tmp_path / "handoff"),
        "TMPDIR": str(tmp_path),
    }
    return subprocess.run(
        ["bash", str(ENTRYPOINT), *args], env={**base, **env}, capture_output=True, text=True, timeout=60
    )


def calls(stubs) -> list[str]:
    return stubs[1].read_text().splitlines() if stubs[1].exists() else []


def test_web_role_serves_http_and_websockets_on_every_interface(stubs, tmp_path):
    assert run_entrypoint(stubs, tmp_path, "web", WEB_CONCURRENCY="3").returncode == 0
    argv = calls(stubs)[0].split()
    assert argv[:2] == ["uvicorn", "portal.asgi:application"]
    assert argv[argv.index("--host") + 1] == "0.0.0.0"  # noqa: S104  inside its container, behind its Service
    assert argv[argv.index("--port") + 1] == "8000"
    assert argv[argv.index("--workers") + 1] == "3" and "--proxy-headers" in argv and "websockets-sansio" in argv


@pytest.mark.parametrize(
    ("role", "expected"),
    [
        ("worker", "celery -A portal worker --concurrency 4 --loglevel INFO"),
        ("beat", "celery -A portal beat --loglevel INFO"),
        ("collector", "python manage.py collect_telemetry --cluster a --cluster b"),
        ("manage", "python manage.py rotate_credentials"),
    ],
)
def test_process_roles(stubs, tmp_path, role, expected):
    extra = ["rotate_credentials"] if role == "manage" else []
    result = run_entrypoint(stubs, tmp_path, role, *extra, COLLECTOR_ARGS="--cluster a --cluster b")
    assert result.returncode == 0, result.stderr
    assert calls(stubs)[0] == expected


def test_unknown_role_says_which_exist(stubs, tmp_path):
    result = run_entrypoint(stubs, tmp_path, "serve")
    assert result.returncode == 2 and "use web, worker, beat" in result.stderr and not calls(stubs)


def test_keys_are_made_once_private_and_valid(stubs, tmp_path):
    env = {"PYTHON": sys.executable}
    assert run_entrypoint(stubs, tmp_path, "keys", **env).returncode == 0
    secrets_dir = tmp_path / "secrets"
    made = {p.name: p.read_text().strip() for p in secrets_dir.iterdir()}
    assert set(made) == {"secret_key", "credential_keys", "postgres_password", "metrics_token", "database_url"}
    for path in secrets_dir.iterdir():
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path.name
    assert len(made["secret_key"]) >= 50
    assert made["database_url"] == f"postgres://gpulab:{made['postgres_password']}@postgres:5432/gpulab"
    from cryptography.fernet import Fernet

    Fernet(made["credential_keys"])  # a usable key
    assert run_entrypoint(stubs, tmp_path, "keys", **env).returncode == 0
    assert {p.name: p.read_text().strip() for p in secrets_dir.iterdir()} == made  # never replaced


def test_roles_read_the_made_secrets_through_file_variables_unless_the_site_set_its_own(stubs, tmp_path):
    secrets_dir = tmp_path / "secrets"
    secrets_dir.mkdir()
    for name in ("secret_key", "credential_keys", "database_url"):
        (secrets_dir / name).write_text("value\n")
    run_entrypoint(stubs, tmp_path, "beat", CREDENTIAL_KEYS_FILE="/run/secrets/site_keys")
    seen = calls(stubs)
    assert (
        f"SECRET_KEY_FILE={secrets_dir}/secret_key" in seen and f"DATABASE_URL_FILE={secrets_dir}/database_url" in seen
    )
    assert "CREDENTIAL_KEYS_FILE=/run/secrets/site_keys" in seen  # the site's own file wins
    assert not any(line.startswith("METRICS_TOKEN") for line in seen)  # no file, nothing set
    assert not any("=value" in line for line in seen)  # values stay in files, never in the environment


def test_migrate_waits_for_the_database_and_gives_up_with_a_clear_message(stubs, tmp_path):
    result = run_entrypoint(stubs, tmp_path, "migrate", DB_DOWN="1", WAIT_SECONDS="1")
    assert result.returncode == 1 and "the database did not answer within 1 s" in result.stderr
    assert not any("migrate" in line for line in calls(stubs))
    stubs[1].unlink()
    assert run_entrypoint(stubs, tmp_path, "migrate").returncode == 0
    assert calls(stubs)[-1] == "python manage.py migrate --noinput"


def test_setup_registers_and_pins_the_demo_cluster_from_the_handoff(stubs, tmp_path):
    handoff = tmp_path / "handoff"
    handoff.mkdir()
    (handoff / "cluster.env").write_text(
        "GPULAB_SSH_HOST=slurm\nGPULAB_SSH_PORT=22\nGPULAB_SERVICE_USER=labsvc\n"
        'GPULAB_HOST_KEY="ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFUyPxOxlifVJuEXVku8ddeoEV5njdQM03K0ni682Zkm"\n'
        f"GPULAB_SERVICE_KEY={handoff}/labsvc.key\n"
    )
    (tmp_path / "secrets").mkdir()
    (tmp_path / "secrets/logins.txt").write_text("admin pw1\nstudent1 pw2\n")
    result = run_entrypoint(stubs, tmp_path, "setup")
    assert result.returncode == 0, result.stderr
    manage = [line.split(" ", 2)[2] for line in calls(stubs) if line.startswith("python manage.py")]
    assert [m.split()[0] for m in manage] == [
        "shell", "migrate", "demo_setup", "sync_clusters", "stage_lab_files", "load_templates"
    ]  # fmt: skip
    entry = yaml.safe_load((tmp_path / "clusters.d/local.yml").read_text())["v2"]
    assert entry["login"] == {"host": "slurm", "port": 22, "host_key": entry["login"]["host_key"]}
    assert entry["login"]["host_key"].startswith("ssh-ed25519 AAAA")
    assert entry["gpulab"]["service_account"]["private_key_file"] == f"{handoff}/labsvc.key"
    assert (entry["gpulab"]["run_as"], entry["gpulab"]["shared_user"]) == ("sudo", "labshared")  # each student apart
    assert "http://localhost:8000/" in result.stdout and "student1 pw2" in result.stdout


# -- the demo SLURM image's entrypoint ----------------------------------------------------------------------------
def test_slurm_handoff_passes_only_what_the_portal_needs(tmp_path):
    local = tmp_path / "local"
    (local / "keys").mkdir(parents=True)
    (local / "keys/labsvc").write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nkey\n")
    (local / "cluster.env").write_text(
        "GPULAB_SSH_HOST=slurm\nGPULAB_SSH_PORT=22\nGPULAB_SERVICE_USER=labsvc\n"
        "GPULAB_SERVICE_KEY=/var/lib/gpulab-local/keys/labsvc\nGPULAB_PERSONAL_USER=labstudent\n"
        'GPULAB_PERSONAL_PASSWORD=labstudent-pass\nGPULAB_HOST_KEY="ssh-ed25519 AAAA"\n'
        "GPULAB_SHARED_USER=labshared\nGPULAB_LAB_ROOT=/var/lib/gpulab-local/lab\nGPULAB_STUDENT_USERS=labalice\n"
    )
    handoff = tmp_path / "handoff"
    env = {"PATH": os.environ["PATH"], "GPULAB_LOCAL_DIR": str(local), "HANDOFF_DIR": str(handoff)}
    env["PORTAL_UID"] = str(os.getuid())
    result = subprocess.run(["bash", str(SLURM_ENTRYPOINT), "handoff"], env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert (handoff / "cluster.env").read_text().splitlines() == [
        "GPULAB_SSH_HOST=slurm",
        "GPULAB_SSH_PORT=22",
        "GPULAB_SERVICE_USER=labsvc",
        'GPULAB_HOST_KEY="ssh-ed25519 AAAA"',
        "GPULAB_SHARED_USER=labshared",
        "GPULAB_LAB_ROOT=/var/lib/gpulab-local/lab",
        f"GPULAB_SERVICE_KEY={handoff}/labsvc.key",
    ]
    key = handoff / "labsvc.key"
    assert stat.S_IMODE(key.stat().st_mode) == 0o400 and key.stat().st_uid == os.getuid()
    bad = subprocess.run(["bash", str(SLURM_ENTRYPOINT), "serve"], env=env, capture_output=True, text=True)
    assert bad.returncode == 2 and "usage" in bad.stderr


def test_local_slurm_listens_and_advertises_where_it_is_told(tmp_path):
    """The container sets GPULAB_SSH_LISTEN/GPULAB_ADVERTISE_HOST; on a machine both stay on loopback."""
    text = (ROOT / "scripts/local_slurm.sh").read_text()
    assert "ListenAddress $SSH_LISTEN" in text and "NodeAddr=$ADVERTISE_HOST" in text
    assert (
        "SSH_LISTEN=${GPULAB_SSH_LISTEN:-127.0.0.1}" in text
        and "ADVERTISE_HOST=${GPULAB_ADVERTISE_HOST:-127.0.0.1}" in text
    )
