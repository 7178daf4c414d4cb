#!/usr/bin/env bash
# `make test`: install what the tests need, start the real services on 127.0.0.1, run lint, checks and tests.
set -euo pipefail
cd "$(dirname "$0")/.."
export GPULAB_LOCAL_DIR=${GPULAB_LOCAL_DIR:-/var/lib/gpulab-local}

if [ "$(id -u)" != 0 ]; then echo "make test runs as root (it installs packages and starts daemons)." >&2; exit 1; fi

echo "[test] $(date +%T) packages, environments and services"
bash scripts/ensure_packages.sh --test
bash scripts/sign_on.sh install  # slapd and oidc-provider: the sign-on tests start their own

cleanup() {
  [ -n "${venvs_pid:-}" ] && kill "$venvs_pid" 2>/dev/null
  [ -n "${mypy_pid:-}" ] && kill "$mypy_pid" 2>/dev/null
  [ -n "${workloads_pid:-}" ] && kill "$workloads_pid" 2>/dev/null
  bash scripts/local_slurm.sh stop || true
  bash scripts/services.sh stop || true
}
trap cleanup EXIT

# The two Python environments are built side by side while the daemons start, which need neither.
make -s -j2 venv workloads-venv &
venvs_pid=$!
bash scripts/services.sh start
bash scripts/local_slurm.sh start
bash scripts/lab_venv.sh  # the jobs' Python (PyTorch, JupyterLab) in /opt/gpulab-lab-venv, as make demo
wait "$venvs_pid"
venvs_pid=

set -a
# shellcheck disable=SC1091
. "$GPULAB_LOCAL_DIR/services.env"
# shellcheck disable=SC1091
. "$GPULAB_LOCAL_DIR/cluster.env"
set +a
# Database 1 of Redis and up: a demo running on this machine (database 0) must not take the tests' task messages;
# each parallel test process moves to a database of its own (tests/settings.py).
export REDIS_URL="${REDIS_URL%/*}/1"
export GPULAB_REQUIRE_SERVICES=1 DJANGO_SETTINGS_MODULE=tests.settings

echo "[test] $(date +%T) lint and checks"
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/lint-imports  # the floor plan: contracts in pyproject.toml [tool.importlinter]
.venv/bin/python manage.py check
.venv/bin/python manage.py makemigrations --check --dry-run
# The type checker (every app, with Django's and DRF's stubs: pyproject.toml [tool.mypy]) and the workloads' own tests
# (trainer, inference server, load generator, manifests; CPU, their own environment) run beside the portal's tests and
# take the CPU the portal's leave: the portal's SLURM lanes are the critical path, and once the other tests are done
# they mostly wait on the node's jobs. So the type checker yields the CPU (nice), and the workloads' tests, which wait
# on servers they start and must not be starved, begin once the CPU is half idle. Their verdicts are read after the
# portal's.
cpu_idle_percent() {  # the CPU's idle share over the next $1 seconds, from /proc/stat
  local -a before after
  local total=0 i
  read -r -a before </proc/stat
  sleep "$1"
  read -r -a after </proc/stat
  for i in 1 2 3 4 5 6 7 8; do total=$((total + after[i] - before[i])); done
  echo $((total ? 100 * (after[4] - before[4] + after[5] - before[5]) / total : 100))
}
mypy_log=$(mktemp) workloads_log=$(mktemp)
nice -n 10 .venv/bin/mypy >"$mypy_log" 2>&1 &
mypy_pid=$!
# (PYTEST_ADDOPTS is the portal run's: a --junitxml in it must not be overwritten by this run's report.)
(
  sleep 120 # the portal's tests have the CPU busy by then
  until [ "$(cpu_idle_percent 15)" -ge 50 ]; do :; done
  cd workloads && PYTEST_ADDOPTS='' exec .venv/bin/pytest
) >"$workloads_log" 2>&1 &
workloads_pid=$!

echo "[test] $(date +%T) portal: unit and integration tests, in parallel (pytest-xdist; the SLURM node's tests in one group)"
# Six processes: one for each of the four SLURM lanes (tests/integration/conftest.py), two for everything else. (Five
# lanes on seven were slower: the node's jobs then slow each other down more than the lanes gain.)
.venv/bin/pytest -n "${GPULAB_TEST_PROCESSES:-6}" --dist loadgroup --durations=25 "$@"

echo "[test] $(date +%T) type checker (mypy)"
status=0
wait "$mypy_pid" || status=$?
mypy_pid=
cat "$mypy_log"
[ "$status" = 0 ] || exit "$status"

echo "[test] $(date +%T) workloads: trainer, inference server, load generator, manifests (CPU)"
status=0
wait "$workloads_pid" || status=$?
workloads_pid=
cat "$workloads_log"
[ "$status" = 0 ] || exit "$status"
echo "[test] $(date +%T) done"
