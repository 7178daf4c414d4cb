#!/usr/bin/env bash
# The portal image's roles. Every secret may come from a file: SECRET_KEY_FILE, CREDENTIAL_KEYS_FILE,
# DATABASE_URL_FILE, METRICS_TOKEN_FILE (portal/env.py reads NAME_FILE for any NAME).
#
#   web        uvicorn: HTTP and WebSockets on :8000 ($WEB_CONCURRENCY processes)
#   worker     Celery worker ($WORKER_CONCURRENCY processes); run as many as you like
#   beat       Celery beat: exactly one per site
#   collector  live telemetry (manage.py collect_telemetry [$COLLECTOR_ARGS]); one per group of clusters
#   migrate    apply database migrations (the chart's pre-upgrade hook, compose's set-up)
#   keys       make the site's secrets in $SECRETS_DIR once (compose); existing files are never replaced
#   setup      compose's first start: migrate, demo course and logins, register and pin the demo cluster
#   manage ARGS  any manage.py command
set -euo pipefail
cd "${APP_DIR:-/app}"
PYTHON=${PYTHON:-python}

log() { printf '[entrypoint] %s\n' "$*" >&2; }

# Secrets the keys role made: used unless the site set the variable or its _FILE itself.
use_secret_files() {
  local name file_var file
  for name in SECRET_KEY CREDENTIAL_KEYS DATABASE_URL METRICS_TOKEN; do
    file_var="${name}_FILE"
    file="${SECRETS_DIR:-/run/gpulab-secrets}/$(echo "$name" | tr '[:upper:]' '[:lower:]')"
    if [ -z "${!name:-}" ] && [ -z "${!file_var:-}" ] && [ -r "$file" ]; then
      export "${name}_FILE=$file"
    fi
  done
}

# Wait for the database (up to $WAIT_SECONDS) so a role started before PostgreSQL does not crash-loop.
wait_for_database() {
  local deadline=$((SECONDS + ${WAIT_SECONDS:-60}))
  until "$PYTHON" manage.py shell -c 'from django.db import connection; connection.ensure_connection()' 2>/dev/null; do
    if [ "$SECONDS" -ge "$deadline" ]; then
      log "the database did not answer within ${WAIT_SECONDS:-60} s; check DATABASE_URL and that PostgreSQL runs"
      return 1
    fi
    sleep 2
  done
}

make_keys() {
  local dir=${SECRETS_DIR:-/run/gpulab-secrets}
  mkdir -p "$dir"
  umask 077
  new_secret() { [ -s "$dir/$1" ] && return 0; "$PYTHON" -c "$2" >"$dir/$1"; log "made $1"; }
  new_secret secret_key 'import secrets; print(secrets.token_urlsafe(50))'
  new_secret credential_keys 'from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())'
  new_secret postgres_password 'import secrets; print(secrets.token_urlsafe(24))'
  new_secret metrics_token 'import secrets; print(secrets.token_urlsafe(24))'
  if [ ! -s "$dir/database_url" ]; then
    printf 'postgres://%s:%s@%s:5432/%s\n' "${POSTGRES_USER:-gpulab}" "$(cat "$dir/postgres_password")" \
      "${POSTGRES_HOST:-postgres}" "${POSTGRES_DB:-gpulab}" >"$dir/database_url"
    log "made database_url"
  fi
}

# The demo SLURM service hands over its address, pinned host key and service key in $HANDOFF_DIR.
register_demo_cluster() {
  local handoff=${HANDOFF_DIR:-/handoff}
  local deadline=$((SECONDS + ${WAIT_SECONDS:-60}))
  until [ -r "$handoff/cluster.env" ]; do
    if [ "$SECONDS" -ge "$deadline" ]; then log "no $handoff/cluster.env from the slurm service"; return 1; fi
    sleep 2
  done
  set -a
  # shellcheck disable=SC1091
  . "$handoff/cluster.env"
  set +a
  bash scripts/demo_cluster.sh "${TMPDIR:-/tmp}/clusters.d"
  "$PYTHON" manage.py sync_clusters "${TMPDIR:-/tmp}/clusters.d"
  "$PYTHON" manage.py stage_lab_files local
}

role=${1:-web}
[ $# -gt 0 ] && shift
case "$role" in
  web | worker | beat | collector | migrate | setup | manage) use_secret_files ;;
esac
case "$role" in
  web)
    # X-Forwarded-For is believed only from TRUSTED_PROXIES (addresses or networks, comma-separated): the client
    # address that sign-in lockout and the token throttle count against (docs/operations.md).
    # No per-message deflate: a socket's compressor costs ~45 KiB and CPU for every frame it forwards, where a frame
    # is built once for all its sockets (bench/telemetry_fanout.py, docs/operations.md "Sizing").
    proxies=${TRUSTED_PROXIES-${FORWARDED_ALLOW_IPS-127.0.0.1}}
    exec uvicorn portal.asgi:application --host 0.0.0.0 --port "${PORT:-8000}" --workers "${WEB_CONCURRENCY:-2}" \
      --ws websockets-sansio --ws-per-message-deflate false --proxy-headers --forwarded-allow-ips "$proxies" \
      --no-access-log "$@"
    ;;
  worker)
    exec celery -A portal worker --concurrency "${WORKER_CONCURRENCY:-4}" --loglevel "${LOG_LEVEL:-INFO}" "$@"
    ;;
  beat)
    # The schedule lives in memory (settings.CELERY_BEAT_SCHEDULER): no schedule file to keep on a volume.
    exec celery -A portal beat --loglevel "${LOG_LEVEL:-INFO}" "$@"
    ;;
  collector)
    # shellcheck disable=SC2086  # COLLECTOR_ARGS is a list of words, e.g. "--cluster a --cluster b"
    exec "$PYTHON" manage.py collect_telemetry ${COLLECTOR_ARGS:-} "$@"
    ;;
  migrate)
    wait_for_database
    exec "$PYTHON" manage.py migrate --noinput "$@"
    ;;
  keys)
    make_keys
    ;;
  setup)
    wait_for_database
    "$PYTHON" manage.py migrate --noinput -v0
    "$PYTHON" manage.py demo_setup --logins "${SECRETS_DIR:-/run/gpulab-secrets}/logins.txt"
    register_demo_cluster
    "$PYTHON" manage.py load_templates --course demo
    printf '\n  GPU Lab Portal: http://localhost:%s/\n\n  Logins:\n' "${PUBLISHED_PORT:-8000}"
    sed 's/^/    /' "${SECRETS_DIR:-/run/gpulab-secrets}/logins.txt"
    ;;
  manage)
    exec "$PYTHON" manage.py "$@"
    ;;
  *)
    echo "unknown role '$role': use web, worker, beat, collector, migrate, keys, setup or manage" >&2
    exit 2
    ;;
esac
