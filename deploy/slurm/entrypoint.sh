#!/usr/bin/env bash
# The demo SLURM container.
#   run      start munge, slurmctld, slurmd and sshd (scripts/local_slurm.sh), hand over, then stay up
#   handoff  write $HANDOFF_DIR/cluster.env and the service key for the portal's set-up (readable by PORTAL_UID)
#   health   healthy once SLURM answers and the handoff is written
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
LOCAL_DIR=${GPULAB_LOCAL_DIR:-/var/lib/gpulab-local}
HANDOFF_DIR=${HANDOFF_DIR:-/handoff}
PORTAL_UID=${PORTAL_UID:-10001}
SLURM_SCRIPT=${SLURM_SCRIPT:-$HERE/scripts/local_slurm.sh}

# Only what the portal needs to reach and pin the login node; the key path is rewritten to the handoff copy.
handoff() {
  mkdir -p "$HANDOFF_DIR"
  local service_user key
  service_user=$(sed -n 's/^GPULAB_SERVICE_USER=//p' "$LOCAL_DIR/cluster.env")
  key="$HANDOFF_DIR/$service_user.key"
  install -m 400 -o "$PORTAL_UID" "$LOCAL_DIR/keys/$service_user" "$key"
  grep -E '^GPULAB_(SSH_HOST|SSH_PORT|SERVICE_USER|HOST_KEY|SHARED_USER|LAB_ROOT)=' "$LOCAL_DIR/cluster.env" \
    >"$HANDOFF_DIR/cluster.env.new"
  echo "GPULAB_SERVICE_KEY=$key" >>"$HANDOFF_DIR/cluster.env.new"
  chmod 444 "$HANDOFF_DIR/cluster.env.new"
  mv "$HANDOFF_DIR/cluster.env.new" "$HANDOFF_DIR/cluster.env"  # whole or absent: the portal waits for it
}

case "${1:-run}" in
  run)
    bash "$SLURM_SCRIPT" start
    handoff
    trap 'bash "$SLURM_SCRIPT" stop; exit 0' TERM INT
    # Stay up while the daemons do; a daemon that dies makes the container exit and compose restart it.
    while pgrep -x slurmctld >/dev/null && pgrep -x slurmd >/dev/null && pgrep -x sshd >/dev/null; do
      sleep 5 &
      wait $!
    done
    echo "[slurm] a daemon stopped; logs in $LOCAL_DIR/log" >&2
    exit 1
    ;;
  handoff) handoff ;;
  health) sinfo --noheader >/dev/null && test -s "$HANDOFF_DIR/cluster.env" ;;
  *)
    echo "usage: $0 run|handoff|health" >&2
    exit 2
    ;;
esac
