#!/usr/bin/env bash
# Write the demo SLURM cluster's clusters.d entry from the GPULAB_* variables of its cluster.env.
#   scripts/demo_cluster.sh OUT_DIR [LAB_VENV]
# Used by `make demo` (sshd on 127.0.0.1) and by the compose stack's setup (the `slurm` service).
# With GPULAB_KUBECONFIG_FILE set (make demo sets it: the user's kubeconfig, or its emulated cluster's), it writes the
# Kubernetes cluster's entry too (k8s.yml); GPULAB_KUBE_EMULATED=true marks it emulated, GPULAB_KUBE_CONTEXT picks a
# context of the kubeconfig.
#
# Every demo job runs as its student's own cluster user (run_as: sudo; rest-user through slurmrestd), whose
# username manage.py demo_setup gave each login; the shared user is named for an admin who switches a cluster to the
# shared mode. The lab directory is shared: the service account stages the workloads there, and each student's
# user makes its own private folders under jobs/ and students/ (scripts/local_slurm.sh, ensure_lab_root).
set -euo pipefail
out=$1
lab_venv=${2:-/opt/gpulab-lab-venv}
: "${GPULAB_SSH_HOST:?} ${GPULAB_SSH_PORT:?} ${GPULAB_HOST_KEY:?} ${GPULAB_SERVICE_USER:?} ${GPULAB_SERVICE_KEY:?}"
lab_root=${GPULAB_LAB_ROOT:-/var/lib/gpulab-local/lab}
shared_user=${GPULAB_SHARED_USER:-labshared}
mkdir -p "$out"
cat >"$out/local.yml" <<EOF
# The demo's single-node SLURM cluster (written by scripts/demo_cluster.sh); its host key is pinned here.
v2:
  metadata: {title: "Local SLURM (demo)"}
  login: {host: $GPULAB_SSH_HOST, port: $GPULAB_SSH_PORT, host_key: "$GPULAB_HOST_KEY"}
  job: {adapter: slurm, partitions: [debug, gpu], gpu_types: [demo]}
  gpulab:
    run_as: sudo
    shared_user: $shared_user
    lab_dir: $lab_root
    preamble: |
      if [ -x $lab_venv/bin/python ]; then export PYTHON=$lab_venv/bin/python; fi
    courses: [demo]
    service_account: {username: $GPULAB_SERVICE_USER, private_key_file: $GPULAB_SERVICE_KEY}
EOF
# The same cluster through slurmrestd (the slurm-rest kind), where scripts/local_slurm.sh started it: its service
# account logs in over SSH too, so job pages show logs and the staged lab files are there.
if [ -n "${GPULAB_SLURMREST_URL:-}" ] && [ -r "${GPULAB_SLURMREST_TOKEN_FILE:-}" ]; then
  cat >"$out/local-rest.yml" <<EOF2
# The demo's SLURM cluster again, reached through slurmrestd with the SlurmUser's token (scripts/demo_cluster.sh).
v2:
  metadata: {title: "Local SLURM via slurmrestd (demo)"}
  login: {host: $GPULAB_SSH_HOST, port: $GPULAB_SSH_PORT, host_key: "$GPULAB_HOST_KEY"}
  job: {adapter: slurm-rest, rest_url: "$GPULAB_SLURMREST_URL", partitions: [debug, gpu], gpu_types: [demo]}
  gpulab:
    run_as: rest-user
    shared_user: $shared_user
    lab_dir: $lab_root
    preamble: |
      if [ -x $lab_venv/bin/python ]; then export PYTHON=$lab_venv/bin/python; fi
    courses: [demo]
    service_account:
      username: $GPULAB_SERVICE_USER
      private_key_file: $GPULAB_SERVICE_KEY
      token_file: $GPULAB_SLURMREST_TOKEN_FILE
EOF2
fi
# The Kubernetes cluster: the portal reads the kubeconfig (server, CA, credentials) once, at sync_clusters, and keeps
# it encrypted; its jobs go through the official kubernetes client with it.
if [ -n "${GPULAB_KUBECONFIG_FILE:-}" ]; then
  emulated=${GPULAB_KUBE_EMULATED:-false}
  title="Kubernetes (demo)"
  [ "$emulated" = true ] && title="Emulated Kubernetes (demo)"
  cat >"$out/k8s.yml" <<EOF3
# The demo's Kubernetes cluster (written by scripts/demo_cluster.sh).
v2:
  metadata: {title: "$title", emulated: $emulated}
  job: {adapter: kubernetes${GPULAB_KUBE_CONTEXT:+, context: "$GPULAB_KUBE_CONTEXT"}}
  gpulab:
    courses: [demo]
    service_account: {username: gpulab-portal, kubeconfig_file: $GPULAB_KUBECONFIG_FILE}
EOF3
else
  rm -f "$out/k8s.yml"
fi
