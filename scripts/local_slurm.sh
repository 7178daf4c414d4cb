#!/usr/bin/env bash
# A single-node SLURM cluster on this machine, reached through its own sshd on 127.0.0.1.
# Shared by `make demo` and `make test`; run as root.
#
#   scripts/local_slurm.sh install   apt packages (munge, slurm-wlm, slurmrestd + JWT, slurmdbd + MariaDB,
#                                    openssh-server, sysstat)
#   scripts/local_slurm.sh start     write configs, create the lab users and keys, start munged, MariaDB (its own
#                                    datadir, 127.0.0.1:$GPULAB_MARIADB_PORT), slurmdbd, slurmctld, slurmd, sshd and
#                                    slurmrestd (JWT) on 127.0.0.1:$GPULAB_SLURMREST_PORT; register the accounts
#   scripts/local_slurm.sh students  only the users students' jobs run as (the two test students, one per demo
#                                    login, the shared user), the lab directory and the service account's sudo rule
#                                    (part of `start`)
#   scripts/local_slurm.sh stop      stop the daemons (configs and keys stay)
#   scripts/local_slurm.sh status    sinfo as the lab user
#
# After `start`, $GPULAB_LOCAL_DIR/cluster.env describes how to reach the cluster (host, port, users, key paths,
# pinned host key). Nothing listens on anything but loopback.
set -euo pipefail

LOCAL_DIR=${GPULAB_LOCAL_DIR:-/var/lib/gpulab-local}
SSH_PORT=${GPULAB_SSH_PORT:-2222}
# The demo container (deploy/slurm) listens on its network and is reached by its service name; here, loopback.
SSH_LISTEN=${GPULAB_SSH_LISTEN:-127.0.0.1}
ADVERTISE_HOST=${GPULAB_ADVERTISE_HOST:-127.0.0.1}
SLURMCTLD_PORT=${GPULAB_SLURMCTLD_PORT:-6817}
SLURMD_PORT=${GPULAB_SLURMD_PORT:-6818}
SLURMREST_PORT=${GPULAB_SLURMREST_PORT:-6820}
SLURMDBD_PORT=${GPULAB_SLURMDBD_PORT:-6819}
MARIADB_PORT=${GPULAB_MARIADB_PORT:-3307}
# slurmrestd's API plugins: the dbv ones (sacct's figures over REST) load only with slurmdbd running, as here.
SLURMREST_PLUGINS=${GPULAB_SLURMREST_PLUGINS:-openapi/v0.0.36,openapi/v0.0.37,openapi/v0.0.38,openapi/dbv0.0.38}
SERVICE_USER=${GPULAB_SERVICE_USER:-labsvc}    # the cluster's service account
PERSONAL_USER=${GPULAB_PERSONAL_USER:-labstudent}  # a student's own cluster account
PERSONAL_PASSWORD=${GPULAB_PERSONAL_PASSWORD:-labstudent-pass}
REST_USER=${GPULAB_SLURMREST_USER:-labrest}  # the slurm-rest kind's service account: REST only, no SSH login
# Two students with their own UNIX users, whose jobs the service account runs as them (sudo rule, slurmrestd).
STUDENT_USERS=${GPULAB_STUDENT_USERS:-"labalice labbob"}
# One UNIX user per `make demo` login (manage.py demo_setup gives each portal user its cluster username: "lab" +
# the login), so the demo runs every job as its own user.
DEMO_USERS=${GPULAB_DEMO_USERS:-"labadmin labinstructor labstudent1 labstudent2"}
# The shared mode's one user: every student's jobs as it, reached through the sudo rule; no sudo rule of its own, no
# SLURM operator level, not the SlurmUser. The service account never runs students' code.
SHARED_USER=${GPULAB_SHARED_USER:-labshared}
STUDENT_GROUP=${GPULAB_STUDENT_GROUP:-gpulab-students}
SUDOERS_FILE=/etc/sudoers.d/gpulab-portal
# The too-broad rule the tests show Test connection flagging, in its own file, for a user nobody's jobs run as.
TEST_SUDOERS_FILE=/etc/sudoers.d/gpulab-test-too-broad
DECOY_USER=gpulab-decoy
# The demo's shared lab directory: the staged workloads (the service account's, readable by all), jobs/ and
# students/ and .gpulab-runtime/ (JupyterLab sessions' secrets) where each student's user makes its own 0700 folders
# (1733: anyone may make one, nobody lists them).
LAB_ROOT=${GPULAB_LAB_ROOT:-$LOCAL_DIR/lab}
NODE=$(hostname -s)
SLURM_ETC=/etc/slurm
HERE=$(cd "$(dirname "$0")" && pwd)
JWT_KEY=$LOCAL_DIR/slurmctld/jwt_hs256.key
SLURMREST_DIR=$LOCAL_DIR/slurmrest
MARIADB_DIR=$LOCAL_DIR/mariadb
ACCOUNT=${GPULAB_SLURM_ACCOUNT:-gpulab}  # the accounting account every lab user's jobs are charged to

log() { printf '[local-slurm] %s\n' "$*"; }

install_packages() {
  if command -v slurmctld >/dev/null && command -v munged >/dev/null && command -v sshd >/dev/null &&
    command -v iostat >/dev/null && command -v slurmrestd >/dev/null && command -v sudo >/dev/null &&
    command -v slurmdbd >/dev/null && command -v mariadbd >/dev/null && has_jwt_plugin && has_mysql_plugin; then
    return
  fi
  log "installing munge, slurm-wlm, slurmrestd (JWT), slurmdbd with MariaDB and openssh-server"
  apt-get update -q
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
    munge slurm-wlm slurmrestd slurm-wlm-jwt-plugin slurmdbd mariadb-server slurm-wlm-mysql-plugin \
    openssh-server openssh-client procps sysstat sudo
}

# The users students' jobs run as (each student's own, one per demo login, the shared user), all in the students'
# group, and the sudo rule docs/cluster-identity.md gives: the service account may run only the portal's SLURM
# commands, its two file operations, the SFTP server (the file browser) and srun into a running job (the terminal),
# only as a member of the students' group: never root, never itself, never anyone outside the group.
# shellcheck disable=SC2086  # the lists are words
job_users() { echo $STUDENT_USERS $DEMO_USERS "$SHARED_USER"; }

ensure_students() {
  getent group "$STUDENT_GROUP" >/dev/null || groupadd "$STUDENT_GROUP"
  local student
  for student in $(job_users); do
    ensure_user "$student"
    usermod -a -G "$STUDENT_GROUP" "$student"
    chmod 700 "$(getent passwd "$student" | cut -d: -f6)"
  done
  local rule
  rule=$(mktemp)
  cat >"$rule" <<EOF
# Written by scripts/local_slurm.sh (see docs/cluster-identity.md): the service account becomes only the users in
# $STUDENT_GROUP (the students' own users and the shared user $SHARED_USER), and runs only these as them.
Defaults:$SERVICE_USER !requiretty
$SERVICE_USER ALL=(%$STUDENT_GROUP) NOPASSWD: /usr/bin/sbatch, /usr/bin/scancel, /usr/bin/squeue, \\
    /usr/bin/scontrol show job *, /usr/bin/mkdir, /usr/bin/dd, /usr/lib/openssh/sftp-server, \\
    /usr/bin/srun --jobid=* --overlap --pty bash -l
EOF
  visudo -cq -f "$rule" && install -m 440 "$rule" "$SUDOERS_FILE"
  rm -f "$rule"
  ensure_test_rule
  ensure_lab_root
}

# For the tests only: $PERSONAL_USER may run every command (too broad, so Test connection flags it), but only as a
# decoy user that no job runs as and that cannot log in; never as a student.
ensure_test_rule() {
  id "$DECOY_USER" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$DECOY_USER"
  local rule
  rule=$(mktemp)
  cat >"$rule" <<EOF
# Written by scripts/local_slurm.sh for the tests: too broad on purpose (every command), for a decoy user only.
$PERSONAL_USER ALL=($DECOY_USER) NOPASSWD: ALL
EOF
  visudo -cq -f "$rule" && install -m 440 "$rule" "$TEST_SUDOERS_FILE"
  rm -f "$rule"
}

ensure_lab_root() {
  mkdir -p "$LOCAL_DIR"
  install -d -m 755 -o "$SERVICE_USER" -g "$SERVICE_USER" "$LAB_ROOT"
  install -d -m 1733 -o root -g root "$LAB_ROOT/jobs" "$LAB_ROOT/students" "$LAB_ROOT/.gpulab-runtime"
  # Each student's Files space made now, theirs and 0700: in a 1733 folder another student could make it first (the
  # portal then refuses to use it, in words: sessions/files.py).
  local student
  for student in $STUDENT_USERS $DEMO_USERS; do
    if id "$student" >/dev/null 2>&1; then
      install -d -m 700 -o "$student" -g "$student" "$LAB_ROOT/students/$student"
    fi
  done
}

has_jwt_plugin() { ls /usr/lib/*/slurm-wlm/auth_jwt.so >/dev/null 2>&1; }
has_mysql_plugin() { ls /usr/lib/*/slurm-wlm/accounting_storage_mysql.so >/dev/null 2>&1; }

ensure_user() {
  local user=$1
  id "$user" >/dev/null 2>&1 || useradd --create-home --shell /bin/bash "$user"
  # A new account is locked ("!"), which sshd without PAM refuses even for keys; "*" means "no password".
  if [ "$(getent shadow "$user" | cut -d: -f2)" = "!" ]; then usermod -p '*' "$user"; fi
}

ensure_key() {
  local user=$1 key="$LOCAL_DIR/keys/$1"
  local home
  home=$(getent passwd "$user" | cut -d: -f6)
  mkdir -p "$LOCAL_DIR/keys"
  [ -f "$key" ] || ssh-keygen -q -t ed25519 -N '' -C "gpulab-$user" -f "$key"
  install -d -m 700 -o "$user" -g "$user" "$home/.ssh"
  install -m 600 -o "$user" -g "$user" "$key.pub" "$home/.ssh/authorized_keys"
}

write_slurm_conf() {
  mkdir -p "$SLURM_ETC" "$LOCAL_DIR"/{slurmctld,slurmd,log,gpu}
  # The key slurmctld signs and checks slurmrestd's tokens with (HS256); owned by SlurmUser (root), 0600.
  [ -s "$JWT_KEY" ] || (umask 077 && head -c 32 /dev/urandom >"$JWT_KEY")
  chmod 600 "$JWT_KEY"
  # Placeholder device files: slurmd counts GPUs from File=, not from Count= alone.
  for i in 0 1 2 3; do : >"$LOCAL_DIR/gpu/nvidia$i"; done
  cat >"$SLURM_ETC/slurm.conf" <<EOF
# Written by scripts/local_slurm.sh: a single-node teaching cluster on loopback.
ClusterName=gpulab
SlurmctldHost=$NODE(127.0.0.1)
SlurmctldPort=$SLURMCTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=root
AuthType=auth/munge
AuthAltTypes=auth/jwt
AuthAltParameters=jwt_key=$JWT_KEY
StateSaveLocation=$LOCAL_DIR/slurmctld
SlurmdSpoolDir=$LOCAL_DIR/slurmd
SlurmctldPidFile=$LOCAL_DIR/slurmctld.pid
SlurmdPidFile=$LOCAL_DIR/slurmd.pid
SlurmctldLogFile=$LOCAL_DIR/log/slurmctld.log
SlurmdLogFile=$LOCAL_DIR/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=5
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort=$SLURMDBD_PORT
AccountingStorageTRES=gres/gpu
AccountingStoreFlags=job_comment
JobCompType=jobcomp/none
SchedulerType=sched/backfill
# A student sees only their own jobs (squeue, scontrol show job, sprio); the service account, an operator, sees all.
PrivateData=jobs
# Backfill every 5 s, so pending jobs get a start estimate (squeue --start) within a poll cycle or two.
SchedulerParameters=bf_interval=5
# Multifactor priority, so sprio can say why a job is behind another: age, fair share (from accounting), size.
PriorityType=priority/multifactor
PriorityWeightAge=1000
PriorityWeightFairshare=10000
PriorityWeightJobSize=1000
PriorityWeightPartition=1000
PriorityMaxAge=1-0
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
MpiDefault=none
ReturnToService=2
SlurmdParameters=config_overrides
MinJobAge=600
MaxJobCount=20000
KillWait=2
InactiveLimit=0
Waittime=0
MessageTimeout=10
SlurmctldTimeout=30
SlurmdTimeout=60
NodeName=$NODE NodeAddr=$ADVERTISE_HOST CPUs=16 RealMemory=16000 Gres=gpu:demo:4 State=UNKNOWN
PartitionName=debug Nodes=$NODE Default=YES MaxTime=60 State=UP
PartitionName=gpu Nodes=$NODE MaxTime=120 State=UP
EOF
  cat >"$SLURM_ETC/gres.conf" <<EOF
NodeName=$NODE Name=gpu Type=demo File=$LOCAL_DIR/gpu/nvidia[0-3]
EOF
}

write_sshd_conf() {
  mkdir -p "$LOCAL_DIR/ssh" /run/sshd
  [ -f "$LOCAL_DIR/ssh/host_ed25519" ] || ssh-keygen -q -t ed25519 -N '' -f "$LOCAL_DIR/ssh/host_ed25519"
  cat >"$LOCAL_DIR/ssh/sshd_config" <<EOF
# Written by scripts/local_slurm.sh: the lab's login node, loopback only.
Port $SSH_PORT
ListenAddress $SSH_LISTEN
HostKey $LOCAL_DIR/ssh/host_ed25519
PidFile $LOCAL_DIR/ssh/sshd.pid
PermitRootLogin no
PubkeyAuthentication yes
PasswordAuthentication yes
KbdInteractiveAuthentication no
UsePAM no
AllowUsers $SERVICE_USER $PERSONAL_USER
MaxSessions 64
MaxStartups 64:30:128
LogLevel INFO
Subsystem sftp internal-sftp
EOF
}

install_gpu_fixture() {
  # No GPU on this machine: a stand-in nvidia-smi on the lab users' PATH so the GPU-check template runs.
  install -m 755 "$HERE/fixtures/nvidia-smi" /usr/local/bin/nvidia-smi
  install -D -m 644 "$HERE/fixtures/nvidia-smi-query.csv" /usr/local/share/gpulab/nvidia-smi-query.csv
  rm -f /run/gpulab-nvidia-smi-replays  # a test's GPU replays (the stand-in's header) do not outlive its run
}

write_env() {
  local host_key
  host_key=$(cut -d' ' -f1,2 "$LOCAL_DIR/ssh/host_ed25519.pub")
  # Root's alone: it holds a login's password and key paths, and students' jobs run on this machine.
  (umask 077 && : >"$LOCAL_DIR/cluster.env") && chmod 600 "$LOCAL_DIR/cluster.env"
  cat >"$LOCAL_DIR/cluster.env" <<EOF
GPULAB_SSH_HOST=$ADVERTISE_HOST
GPULAB_SSH_PORT=$SSH_PORT
GPULAB_SERVICE_USER=$SERVICE_USER
GPULAB_SERVICE_KEY=$LOCAL_DIR/keys/$SERVICE_USER
GPULAB_PERSONAL_USER=$PERSONAL_USER
GPULAB_PERSONAL_KEY=$LOCAL_DIR/keys/$PERSONAL_USER
GPULAB_PERSONAL_PASSWORD=$PERSONAL_PASSWORD
GPULAB_HOST_KEY="$host_key"
GPULAB_SLURM_LOG_DIR=$LOCAL_DIR/log
GPULAB_SLURMREST_URL=http://127.0.0.1:$SLURMREST_PORT
GPULAB_SLURMREST_TOKEN_FILE=$SLURMREST_DIR/token
GPULAB_SLURMREST_TOKEN_USER=root
GPULAB_SLURMREST_USER=$REST_USER
GPULAB_SLURMREST_JWT_KEY=$JWT_KEY
GPULAB_STUDENT_USERS="$STUDENT_USERS"
GPULAB_DEMO_USERS="$DEMO_USERS"
GPULAB_SHARED_USER=$SHARED_USER
GPULAB_LAB_ROOT=$LAB_ROOT
GPULAB_SLURM_ACCOUNTING=1
EOF
}

# SLURM accounting: MariaDB on its own datadir and a loopback port (no systemd, no /etc/mysql), slurmdbd in front.
start_mariadb() {
  mkdir -p "$MARIADB_DIR"
  chown mysql:mysql "$MARIADB_DIR" && chmod 750 "$MARIADB_DIR"
  if [ ! -d "$MARIADB_DIR/data/mysql" ]; then
    log "creating the accounting database's datadir in $MARIADB_DIR/data"
    mariadb-install-db --no-defaults --user=mysql --datadir="$MARIADB_DIR/data" --skip-test-db \
      --auth-root-authentication-method=socket >>"$LOCAL_DIR/log/mariadb.log" 2>&1
  fi
  # A small buffer pool for a teaching cluster's few thousand jobs (slurmdbd logs that it would like more); the lock
  # wait slurmdbd asks for, so that a long purge or rollup does not fail.
  if ! is_running "$MARIADB_DIR/mariadb.pid"; then
    setsid mariadbd --no-defaults --user=mysql --datadir="$MARIADB_DIR/data" --socket="$MARIADB_DIR/mysqld.sock" \
      --port="$MARIADB_PORT" --bind-address=127.0.0.1 --skip-name-resolve --pid-file="$MARIADB_DIR/mariadb.pid" \
      --log-error="$LOCAL_DIR/log/mariadb.log" --innodb-buffer-pool-size=64M --innodb-lock-wait-timeout=900 \
      </dev/null >/dev/null 2>&1 &
  fi
  for _ in $(seq 1 100); do
    mariadb-admin --no-defaults --socket="$MARIADB_DIR/mysqld.sock" ping >/dev/null 2>&1 && break
    sleep 0.2
  done
  [ -s "$MARIADB_DIR/slurm.pass" ] || (umask 077 && head -c 18 /dev/urandom | base64 | tr -d '/+=' >"$MARIADB_DIR/slurm.pass")
  mariadb --no-defaults --socket="$MARIADB_DIR/mysqld.sock" -u root <<EOF
CREATE DATABASE IF NOT EXISTS slurm_acct_db;
CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY '$(cat "$MARIADB_DIR/slurm.pass")';
GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';
EOF
}

write_slurmdbd_conf() {
  (umask 077 && cat >"$SLURM_ETC/slurmdbd.conf.new") <<EOF
# Written by scripts/local_slurm.sh: SLURM accounting on loopback (sacct, sacctmgr, slurmrestd's dbv API).
AuthType=auth/munge
AuthAltTypes=auth/jwt
AuthAltParameters=jwt_key=$JWT_KEY
DbdHost=$NODE
DbdAddr=127.0.0.1
DbdPort=$SLURMDBD_PORT
SlurmUser=root
PidFile=$LOCAL_DIR/slurmdbd.pid
LogFile=$LOCAL_DIR/log/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$MARIADB_PORT
StorageUser=slurm
StoragePass=$(cat "$MARIADB_DIR/slurm.pass")
StorageLoc=slurm_acct_db
# sacct shows a student their own jobs only (slurm.conf's PrivateData covers squeue and scontrol, not slurmdbd).
PrivateData=jobs,usage
EOF
  if ! cmp -s "$SLURM_ETC/slurmdbd.conf.new" "$SLURM_ETC/slurmdbd.conf" && is_running "$LOCAL_DIR/slurmdbd.pid"; then
    log "restarting slurmdbd for its new configuration"
    kill "$(cat "$LOCAL_DIR/slurmdbd.pid")" || true
    for _ in $(seq 1 50); do is_running "$LOCAL_DIR/slurmdbd.pid" || break; sleep 0.2; done
  fi
  mv "$SLURM_ETC/slurmdbd.conf.new" "$SLURM_ETC/slurmdbd.conf"
}

start_slurmdbd() {
  is_running "$LOCAL_DIR/slurmdbd.pid" || slurmdbd
  for _ in $(seq 1 100); do
    sacctmgr -n list cluster format=cluster >/dev/null 2>&1 && return 0
    sleep 0.2
  done
  log "slurmdbd did not answer; last lines of its log:"
  tail -n 20 "$LOCAL_DIR/log/slurmdbd.log" >&2 || true
  return 1
}

# The cluster, one account and every lab user in it. `sacctmgr -i` adding what exists already changes nothing.
register_accounting() {
  sacctmgr -i -Q add cluster gpulab >/dev/null 2>&1 || true
  sacctmgr -i -Q add account "$ACCOUNT" cluster=gpulab description="GPU teaching lab" organization=gpulab \
    >/dev/null 2>&1 || true
  local user
  for user in root "$SERVICE_USER" "$PERSONAL_USER" "$REST_USER" $(job_users); do
    sacctmgr -i -Q add user "$user" account="$ACCOUNT" cluster=gpulab >/dev/null 2>&1 || true
  done
  # The service account makes lab sessions' reservations (scontrol create reservation): a SLURM operator. It never
  # runs students' code; the users that do are never operators.
  sacctmgr -i -Q modify user "$SERVICE_USER" set adminlevel=operator >/dev/null 2>&1 || true
  for user in $(job_users); do
    sacctmgr -i -Q modify user "$user" set adminlevel=none >/dev/null 2>&1 || true
  done
}

# slurmctld reads AuthAltTypes, AccountingStorageType and PriorityType only at start: a controller started before the
# JWT, accounting or priority lines were written is restarted once (jobs survive in StateSaveLocation; clients retry for
# MessageTimeout), slurmd with it (its job accounting gatherer), and never again after that.
restart_slurm_for_new_config() {
  is_running "$LOCAL_DIR/slurmctld.pid" || return 0
  local config # read whole first: grep -q closing the pipe early would fail it under pipefail
  config=$(scontrol show config 2>/dev/null || true)
  grep -Eq '^AuthAltTypes +=.*auth/jwt' <<<"$config" &&
    grep -Eq '^AccountingStorageType += accounting_storage/slurmdbd' <<<"$config" &&
    grep -Eq '^PriorityType += priority/multifactor' <<<"$config" &&
    grep -Eq '^SchedulerParameters += .*bf_interval=' <<<"$config" && return 0
  log "restarting slurmctld and slurmd once to load the JWT key, SLURM accounting (slurmdbd) and multifactor priority"
  local pidfile pid
  for pidfile in "$LOCAL_DIR/slurmctld.pid" "$LOCAL_DIR/slurmd.pid"; do
    is_running "$pidfile" || continue
    pid=$(cat "$pidfile")
    kill "$pid"
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  done
  slurmctld
  slurmd
}

# PrivateData is read again on `scontrol reconfigure`: a controller started before it was written needs no restart.
reconfigure_for_private_jobs() {
  is_running "$LOCAL_DIR/slurmctld.pid" || return 0
  local config
  config=$(scontrol show config 2>/dev/null || true)
  grep -Eq '^PrivateData += .*jobs' <<<"$config" && return 0
  log "reconfiguring slurmctld so that students see only their own jobs (PrivateData=jobs)"
  scontrol reconfigure
}

# slurmrestd refuses to run as root and needs SLURM_JWT=daemon to check tokens itself; loopback only.
start_slurmrestd() {
  mkdir -p "$SLURMREST_DIR"
  # One started with other plugins (before accounting existed) is restarted with these.
  if is_running "$SLURMREST_DIR/slurmrestd.pid" && [ "$(cat "$SLURMREST_DIR/plugins" 2>/dev/null)" != "$SLURMREST_PLUGINS" ]; then
    local pid
    pid=$(cat "$SLURMREST_DIR/slurmrestd.pid")
    kill "$pid"
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  fi
  if ! is_running "$SLURMREST_DIR/slurmrestd.pid"; then
    echo "$SLURMREST_PLUGINS" >"$SLURMREST_DIR/plugins"
    # Started from /: slurmrestd asks for its working directory on each submit, and a checkout it was started from
    # may be removed while it runs (then every submit fails with "getcwd failed").
    (
      cd /
      SLURM_JWT=daemon setsid slurmrestd -u nobody -g nogroup -a rest_auth/jwt -s "$SLURMREST_PLUGINS" \
        "127.0.0.1:$SLURMREST_PORT" >>"$LOCAL_DIR/log/slurmrestd.log" 2>&1 </dev/null &
      echo $! >"$SLURMREST_DIR/slurmrestd.pid"
    )
  fi
  # A token of the SlurmUser for the demo and the tests: it may submit as any lab user (X-SLURM-USER-NAME).
  (umask 077 && scontrol token username=root lifespan=$((30 * 86400)) | sed -n 's/^SLURM_JWT=//p' \
    >"$SLURMREST_DIR/token.new") && mv "$SLURMREST_DIR/token.new" "$SLURMREST_DIR/token"
}

is_running() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

start() {
  install_packages
  ensure_user "$SERVICE_USER"
  ensure_user "$PERSONAL_USER"
  ensure_user "$REST_USER"
  ensure_students
  echo "$PERSONAL_USER:$PERSONAL_PASSWORD" | chpasswd
  ensure_key "$SERVICE_USER"
  ensure_key "$PERSONAL_USER"
  write_slurm_conf
  write_sshd_conf
  install_gpu_fixture

  mkdir -p /run/munge /var/log/munge /var/lib/munge
  chown munge:munge /run/munge /var/log/munge /var/lib/munge
  [ -s /etc/munge/munge.key ] || mungekey --create --keyfile /etc/munge/munge.key
  chown munge:munge /etc/munge/munge.key && chmod 400 /etc/munge/munge.key
  pgrep -x munged >/dev/null || runuser -u munge -- /usr/sbin/munged

  start_mariadb
  write_slurmdbd_conf
  start_slurmdbd
  register_accounting
  restart_slurm_for_new_config
  reconfigure_for_private_jobs
  is_running "$LOCAL_DIR/slurmctld.pid" || slurmctld
  is_running "$LOCAL_DIR/slurmd.pid" || slurmd
  is_running "$LOCAL_DIR/ssh/sshd.pid" || /usr/sbin/sshd -f "$LOCAL_DIR/ssh/sshd_config" -E "$LOCAL_DIR/log/sshd.log"

  write_env
  wait_ready
  start_slurmrestd
  wait_slurmrestd
  log "ready: ssh -p $SSH_PORT -i $LOCAL_DIR/keys/$SERVICE_USER $SERVICE_USER@$ADVERTISE_HOST"
}

wait_ready() {
  for _ in $(seq 1 60); do
    if sinfo --noheader --states=idle,mixed,allocated --format=%n 2>/dev/null | grep -q .; then
      return 0
    fi
    scontrol update nodename="$NODE" state=resume >/dev/null 2>&1 || true
    sleep 1
  done
  log "the node did not come up; last lines of the logs:"
  tail -n 20 "$LOCAL_DIR"/log/slurm*.log >&2 || true
  return 1
}

wait_slurmrestd() {
  for _ in $(seq 1 50); do
    curl -sf -o /dev/null -H "X-SLURM-USER-NAME: root" -H "X-SLURM-USER-TOKEN: $(cat "$SLURMREST_DIR/token")" \
      "http://127.0.0.1:$SLURMREST_PORT/slurm/v0.0.38/ping" && return 0
    sleep 0.2
  done
  log "slurmrestd did not answer on 127.0.0.1:$SLURMREST_PORT; last lines of its log:"
  tail -n 20 "$LOCAL_DIR/log/slurmrestd.log" >&2 || true
  return 1
}

stop() {
  for pidfile in "$SLURMREST_DIR/slurmrestd.pid" "$LOCAL_DIR/ssh/sshd.pid" "$LOCAL_DIR/slurmd.pid" \
    "$LOCAL_DIR/slurmctld.pid" "$LOCAL_DIR/slurmdbd.pid" "$MARIADB_DIR/mariadb.pid"; do
    if is_running "$pidfile"; then kill "$(cat "$pidfile")" || true; fi
  done
  log "stopped slurmrestd, sshd, slurmd, slurmctld, slurmdbd and MariaDB (munged left running)"
}

case "${1:-}" in
  install) install_packages ;;
  start) start ;;
  students) ensure_students && if is_running "$LOCAL_DIR/slurmdbd.pid"; then register_accounting; fi ;;
  stop) stop ;;
  status) runuser -u "$SERVICE_USER" -- sinfo ;;
  *) echo "usage: $0 install|start|stop|status" >&2; exit 2 ;;
esac
