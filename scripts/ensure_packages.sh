#!/usr/bin/env bash
# Install the Debian packages the lab needs, only those missing. Shared by `make demo` and `make test`.
#   scripts/ensure_packages.sh            PostgreSQL, Redis, SLURM + munge, sshd, python3-venv
#   scripts/ensure_packages.sh --test     the same, and what the tests use: Chromium, jq, docker-compose
set -euo pipefail
need=()
command -v slurmctld >/dev/null || need+=(slurm-wlm munge)
command -v slurmrestd >/dev/null || need+=(slurmrestd)  # the slurm-rest kind (tests, demo)
ls /usr/lib/*/slurm-wlm/auth_jwt.so >/dev/null 2>&1 || need+=(slurm-wlm-jwt-plugin)
command -v sshd >/dev/null || need+=(openssh-server openssh-client)
command -v iostat >/dev/null || need+=(sysstat)  # the telemetry collector's disk and CPU samples
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need+=(postgresql)
command -v redis-server >/dev/null || need+=(redis-server)
command -v curl >/dev/null || need+=(curl)
# python-ldap (LDAP sign-in, requirements.txt) ships no wheel: the venv builds it against libldap and libsasl.
[ -f /usr/include/ldap.h ] || need+=(libldap2-dev)
[ -f /usr/include/sasl/sasl.h ] || need+=(libsasl2-dev)
command -v gcc >/dev/null || need+=(gcc)
python3 -c 'import venv, ensurepip' 2>/dev/null || need+=(python3-venv)
/usr/bin/python3 -c 'import venv, ensurepip' 2>/dev/null || need+=(python3-venv)  # the lab's venv (make demo)
if [ "${1:-}" = "--test" ]; then
  command -v chromium >/dev/null || need+=(chromium)
  command -v jq >/dev/null || need+=(jq)
  # `docker compose config` checks docker-compose.yml; Debian's docker-compose is the client without an engine.
  { docker compose version >/dev/null 2>&1 || command -v docker-compose >/dev/null; } || need+=(docker-compose)
fi
if [ ${#need[@]} -gt 0 ]; then
  echo "[packages] installing ${need[*]}"
  apt-get update -q
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${need[@]}" procps
fi
