#!/usr/bin/env bash
# `make demo`: the whole lab on this machine. PostgreSQL, Redis, a one-node SLURM cluster behind sshd on
# 127.0.0.1, a Kubernetes cluster, the portal (uvicorn), a Celery worker with beat; then the URL and the demo logins.
# `make stop-demo` stops the portal processes and the emulated Kubernetes cluster (scripts/demo.sh stop).
#
# Kubernetes: GPULAB_DEMO_KUBECONFIG=/path/to/kubeconfig (or a file at $GPULAB_LOCAL_DIR/demo-kubeconfig) registers
# that cluster, with GPULAB_DEMO_KUBE_CONTEXT picking a context; without one, the Kubernetes API emulator the tests use
# runs on 127.0.0.1:$GPULAB_DEMO_K8S_PORT (6443) with one node that runs the bundled workloads' pods as local
# processes (tests/k8s_demo.py), and the cluster is named and labelled "emulated".
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
export GPULAB_LOCAL_DIR=${GPULAB_LOCAL_DIR:-/var/lib/gpulab-local}
RUN=$ROOT/var/demo
BIND=${GPULAB_DEMO_BIND:-127.0.0.1:8000}
LAB_VENV=${GPULAB_LAB_VENV:-/opt/gpulab-lab-venv}

log() { printf '[demo] %s\n' "$*"; }

stop() {
  # Each process runs in a session of its own (setsid); stopping it signals the whole session.
  for name in "$@"; do
    [ -f "$RUN/$name.pid" ] || continue
    pid=$(cat "$RUN/$name.pid")
    if kill -0 "$pid" 2>/dev/null; then
      kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid"
      for _ in $(seq 1 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
      kill -KILL -- "-$pid" 2>/dev/null || true
      log "stopped $name"
    fi
    rm -f "$RUN/$name.pid"
  done
}

if [ "${1:-}" = "stop" ]; then stop web worker collector kube; exit 0; fi
if [ "$(id -u)" != 0 ]; then echo "make demo runs as root (it installs packages and starts daemons)." >&2; exit 1; fi

bash scripts/ensure_packages.sh
make -s venv
bash scripts/services.sh start
bash scripts/local_slurm.sh start

mkdir -p "$RUN"
chmod 700 "$RUN"  # its logs, secrets and the emulated cluster's keys: root's alone, as students' jobs run here
# The secrets live beside the demo's database, whose stored credentials CREDENTIAL_KEYS decrypts: every checkout
# on this machine shares that database, so they share its keys too.
SECRETS=$GPULAB_LOCAL_DIR/demo-portal.env
if [ ! -f "$SECRETS" ] && [ -f "$RUN/portal.env" ]; then
  install -m 600 "$RUN/portal.env" "$SECRETS"  # a demo started before the keys moved here
fi
if [ ! -f "$SECRETS" ]; then
  log "generating the portal's secrets in $SECRETS"
  .venv/bin/python - "$SECRETS" <<'PY'
import secrets, sys
from cryptography.fernet import Fernet
with open(sys.argv[1], "w") as fh:
    fh.write(f"SECRET_KEY={secrets.token_urlsafe(50)}\nCREDENTIAL_KEYS={Fernet.generate_key().decode()}\n")
PY
  chmod 600 "$SECRETS"
fi
set -a
# shellcheck disable=SC1091
. "$SECRETS"; . "$GPULAB_LOCAL_DIR/services.env"; . "$GPULAB_LOCAL_DIR/cluster.env"
set +a
export DEBUG=0 DJANGO_SETTINGS_MODULE=portal.settings ALLOWED_HOSTS=${ALLOWED_HOSTS:-localhost,127.0.0.1,${BIND%:*}}

# The lab's Python for the Tiny LM and JupyterLab templates (PyTorch on CPU, JupyterLab): scripts/lab_venv.sh, checked
# as a user jobs run as (never the service account, which runs no student's code).
if [ "${GPULAB_DEMO_TORCH:-1}" = 1 ]; then
  bash scripts/lab_venv.sh "$LAB_VENV" "${GPULAB_SHARED_USER:-labshared}" \
    || log "the lab's Python environment could not be made; the Tiny LM and JupyterLab templates fail until it is"
fi

.venv/bin/python manage.py migrate -v0
.venv/bin/python manage.py collectstatic --noinput -v0
# The gpulab command's wheels for the portal's /cli/ page (a lab without internet installs it from there).
bash scripts/cli_wheels.sh var/cli-wheels .venv/bin/python >/dev/null \
  || log "the gpulab command's wheels could not be made: /cli/ says so, and pip install ./cli still works"
# The demo logins, each with its own cluster user (lab<login>, made by scripts/local_slurm.sh): jobs run as them.
.venv/bin/python manage.py demo_setup --logins "$RUN/logins.txt"

# The Kubernetes cluster: the user's (a kubeconfig), or the emulated one, made afresh (it keeps objects in memory).
KUBECONFIG_GIVEN=${GPULAB_DEMO_KUBECONFIG:-}
if [ -z "$KUBECONFIG_GIVEN" ] && [ -f "$GPULAB_LOCAL_DIR/demo-kubeconfig" ]; then
  KUBECONFIG_GIVEN=$GPULAB_LOCAL_DIR/demo-kubeconfig
fi
stop kube
if [ -n "$KUBECONFIG_GIVEN" ]; then
  [ -r "$KUBECONFIG_GIVEN" ] || { echo "GPULAB_DEMO_KUBECONFIG: cannot read $KUBECONFIG_GIVEN" >&2; exit 1; }
  log "registering the Kubernetes cluster of $KUBECONFIG_GIVEN"
  export GPULAB_KUBECONFIG_FILE=$KUBECONFIG_GIVEN GPULAB_KUBE_EMULATED=false GPULAB_KUBE_CONTEXT=${GPULAB_DEMO_KUBE_CONTEXT:-}
else
  # The pods' Python: the trainer, the inference server and the load generator (workloads/.venv).
  make -s workloads-venv || log "the workloads' Python environment could not be made; pods fail until it is"
  KUBE_DIR=$RUN/kube
  rm -rf "$KUBE_DIR/kubeconfig"
  log "starting the emulated Kubernetes cluster on 127.0.0.1:${GPULAB_DEMO_K8S_PORT:-6443}"
  setsid .venv/bin/python -m tests.k8s_demo "$KUBE_DIR" --port "${GPULAB_DEMO_K8S_PORT:-6443}" \
    </dev/null >"$RUN/kube.log" 2>&1 &
  echo $! >"$RUN/kube.pid"
  for _ in $(seq 1 60); do grep -q '^listening ' "$RUN/kube.log" 2>/dev/null && break; sleep 1; done
  grep -q '^listening ' "$RUN/kube.log" || { echo "The Kubernetes emulator did not start; see $RUN/kube.log" >&2; exit 1; }
  export GPULAB_KUBECONFIG_FILE=$KUBE_DIR/kubeconfig GPULAB_KUBE_EMULATED=true GPULAB_KUBE_CONTEXT=emulated
fi
bash scripts/demo_cluster.sh "$RUN/clusters.d" "$LAB_VENV"
.venv/bin/python manage.py sync_clusters "$RUN/clusters.d"
.venv/bin/python manage.py load_templates --course demo
.venv/bin/python manage.py stage_lab_files local

stop web worker collector
log "starting the portal on http://$BIND (HTTP and WebSockets), a Celery worker with beat, the telemetry collector"
setsid .venv/bin/uvicorn portal.asgi:application --host "${BIND%:*}" --port "${BIND##*:}" --workers 2 \
  --ws websockets-sansio --ws-per-message-deflate false --forwarded-allow-ips "${TRUSTED_PROXIES:-}" \
  </dev/null >"$RUN/web.log" 2>&1 &
echo $! >"$RUN/web.pid"
setsid .venv/bin/python manage.py collect_telemetry </dev/null >"$RUN/collector.log" 2>&1 &
echo $! >"$RUN/collector.pid"
setsid .venv/bin/celery -A portal worker -B --concurrency 4 --loglevel INFO \
  </dev/null >"$RUN/worker.log" 2>&1 &
echo $! >"$RUN/worker.pid"
for _ in $(seq 1 60); do
  if curl -fsS -o /dev/null "http://$BIND/login/" 2>/dev/null; then
    break
  fi
  sleep 1
done

cat <<EOF2

  GPU Lab Portal is running: http://$BIND/

  Logins (also in var/demo/logins.txt):
$(sed 's/^/    /' "$RUN/logins.txt")

  Each login's jobs, files and terminals run as its own cluster user (lab<login>: labstudent1, …), so students
  cannot read or cancel each other's work; the service account labsvc never runs a student's code.

  Kubernetes: $(if [ -n "$KUBECONFIG_GIVEN" ]; then echo "the cluster of $KUBECONFIG_GIVEN"; else echo "emulated (pods \
run as local processes, no GPUs; var/demo/kube.log)"; fi). Day-2 lab: train with "Tiny LM training (Kubernetes
  Job)" (GPUs 0, a -cpu image), then deploy "Tiny LM inference server (Kubernetes)": Try it, Scale, Load test, Cancel.

  admin: /admin/ (clusters, accounts, templates, courses) · API: /api/v1/ (schema at /api/v1/schema/)
  Logs: var/demo/web.log, var/demo/worker.log, var/demo/collector.log · Stop: make stop-demo
EOF2
