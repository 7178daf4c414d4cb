#!/usr/bin/env bash
# PostgreSQL and Redis for the portal on this machine, loopback only. Shared by `make demo` and `make test`.
#
#   scripts/services.sh install   apt packages (postgresql, redis-server)
#   scripts/services.sh start     start a private PostgreSQL cluster and redis-server; write services.env
#   scripts/services.sh stop
#   scripts/services.sh restart-redis   stop and start redis-server (its data is not kept), as an outage would
#
# services.env (root's alone) holds DATABASE_URL and REDIS_URL, with their passwords, for whoever sources it.
set -euo pipefail

LOCAL_DIR=${GPULAB_LOCAL_DIR:-/var/lib/gpulab-local}
PG_PORT=${GPULAB_PG_PORT:-5433}
REDIS_PORT=${GPULAB_REDIS_PORT:-6390}
PG_DIR=$LOCAL_DIR/postgres
REDIS_DIR=$LOCAL_DIR/redis
DB_NAME=gpulab
DB_USER=gpulab
DB_PASSWORD=${GPULAB_DB_PASSWORD:-gpulab-local}

log() { printf '[services] %s\n' "$*"; }

pg_bin() {
  local bin
  bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
  [ -n "$bin" ] || { echo "PostgreSQL is not installed: run $0 install" >&2; exit 1; }
  echo "$bin"
}

install_packages() {
  if ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && command -v redis-server >/dev/null; then
    return
  fi
  log "installing postgresql and redis-server"
  apt-get update -q
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends postgresql redis-server
}

start_postgres() {
  local bin
  bin=$(pg_bin)
  mkdir -p "$PG_DIR" && chown postgres:postgres "$PG_DIR"
  if [ ! -f "$PG_DIR/data/PG_VERSION" ]; then
    (umask 077 && echo "$DB_PASSWORD" >"$PG_DIR/pwfile") && chown postgres "$PG_DIR/pwfile"
    runuser -u postgres -- "$bin/initdb" -D "$PG_DIR/data" -A scram-sha-256 --pwfile="$PG_DIR/pwfile" -U postgres >/dev/null
  fi
  if ! runuser -u postgres -- "$bin/pg_ctl" -D "$PG_DIR/data" status >/dev/null 2>&1; then
    runuser -u postgres -- "$bin/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/postgres.log" -w \
      -o "-p $PG_PORT -k $PG_DIR -c listen_addresses=127.0.0.1 -c max_connections=200 -c fsync=off" start >/dev/null
  fi
  export PGPASSWORD=$DB_PASSWORD
  local psql=("$bin/psql" -h 127.0.0.1 -p "$PG_PORT" -U postgres -v ON_ERROR_STOP=1 -qtA)
  if [ -z "$("${psql[@]}" -c "select 1 from pg_roles where rolname='$DB_USER'")" ]; then
    "${psql[@]}" -c "create role $DB_USER login createdb password '$DB_PASSWORD'"
  fi
  if [ -z "$("${psql[@]}" -c "select 1 from pg_database where datname='$DB_NAME'")" ]; then
    "${psql[@]}" -c "create database $DB_NAME owner $DB_USER"
  fi
}

redis_password() {
  # Made once, root's alone: the students' jobs run on this machine and reach its loopback, so the Redis that holds
  # the portal's sessions, cache and broker answers only to the portal (redis_probe in tests/integration/test_isolation.py).
  if [ ! -s "$REDIS_DIR/password" ]; then
    mkdir -p "$REDIS_DIR" && chmod 700 "$REDIS_DIR"
    (umask 077 && od -An -N24 -tx1 /dev/urandom | tr -d ' \n' >"$REDIS_DIR/password")
  fi
  cat "$REDIS_DIR/password"
}

# The password goes by environment (REDISCLI_AUTH) and config file, never on a command line that `ps` shows.
rcli() { REDISCLI_AUTH=$(redis_password) redis-cli --no-auth-warning -h 127.0.0.1 -p "$REDIS_PORT" "$@"; }

start_redis() {
  # Asked first without the password: a Redis without one answers either way.
  if [ "$(redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping 2>/dev/null)" = PONG ]; then
    log "restarting redis on 127.0.0.1:$REDIS_PORT with a password (it answered without one)"
    redis-cli -h 127.0.0.1 -p "$REDIS_PORT" shutdown nosave >/dev/null 2>&1 || true
    wait_redis_gone
  elif [ "$(rcli ping 2>/dev/null)" = PONG ]; then
    return
  fi
  (umask 077 && cat >"$REDIS_DIR/redis.conf" <<EOF2
bind 127.0.0.1
port $REDIS_PORT
requirepass $(redis_password)
daemonize yes
save ""
appendonly no
dir $REDIS_DIR
logfile $REDIS_DIR/redis.log
pidfile $REDIS_DIR/redis.pid
EOF2
  )
  redis-server "$REDIS_DIR/redis.conf"
  for _ in $(seq 1 50); do [ "$(rcli ping 2>/dev/null)" = PONG ] && break; sleep 0.1; done
}

wait_redis_gone() {
  for _ in $(seq 1 50); do redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping >/dev/null 2>&1 || break; sleep 0.1; done
}

start() {
  install_packages
  start_postgres
  start_redis
  # Root's alone: it holds the database password, and the cluster's users (students' jobs) share this machine.
  (umask 077 && : >"$LOCAL_DIR/services.env") && chmod 600 "$LOCAL_DIR/services.env"
  cat >"$LOCAL_DIR/services.env" <<EOF2
DATABASE_URL=postgres://$DB_USER:$DB_PASSWORD@127.0.0.1:$PG_PORT/$DB_NAME
REDIS_URL=redis://:$(redis_password)@127.0.0.1:$REDIS_PORT/0
EOF2
  log "postgres on 127.0.0.1:$PG_PORT, redis on 127.0.0.1:$REDIS_PORT"
}

stop() {
  local bin
  bin=$(pg_bin)
  runuser -u postgres -- "$bin/pg_ctl" -D "$PG_DIR/data" -m fast stop >/dev/null 2>&1 || true
  rcli shutdown nosave >/dev/null 2>&1 || true
  log "stopped"
}

restart_redis() {
  rcli shutdown nosave >/dev/null 2>&1 || true
  wait_redis_gone
  start_redis
  log "redis restarted on 127.0.0.1:$REDIS_PORT"
}

case "${1:-}" in
  install) install_packages ;;
  start) start ;;
  stop) stop ;;
  restart-redis) restart_redis ;;
  *) echo "usage: $0 install|start|stop|restart-redis" >&2; exit 2 ;;
esac
