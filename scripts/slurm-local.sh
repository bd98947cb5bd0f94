#!/usr/bin/env bash
# A single-node SLURM cluster with accounting on this machine, for testing sweeps end to end.
#
#   scripts/slurm-local.sh start  [DIR]   # DIR defaults to .slurm-local/ in the repository
#   scripts/slurm-local.sh status [DIR]
#   scripts/slurm-local.sh stop   [DIR]
#
# Everything it writes (configs, munge key, MariaDB data, spool/state, logs, PID files) lies under DIR;
# it touches nothing in /etc, /run or /var. Clients find the cluster with
#   export SLURM_CONF=DIR/etc/slurm.conf
# (printed by `start`). It installs nothing: `make slurm-deps` installs the Debian packages it needs.
#
# Why accounting (slurmdbd + MariaDB): submitit learns a job's state from `sacct`; without it a job that is
# cancelled, killed or timed out never reports and the sweep waits forever.
#
# Daemons run as root in the foreground (-D / -F) under setsid, one PID file each under DIR/pids: `stop`
# kills exactly those processes. Root because DIR may lie in a root-only directory (pytest's tmp), where
# the munge and mysql users could not reach their files; this is a throwaway test cluster.
#
# Environment: SLURM_LOCAL_PORT_BASE (default 16810: slurmctld +7, slurmd +8, slurmdbd +9, MariaDB +6) so
# it does not clash with a real installation; SLURM_LOCAL_TIMEOUT (seconds to wait for readiness, 60).
set -euo pipefail

ACTION=${1:-}
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DIR=$(realpath -m "${2:-$REPO/.slurm-local}") # absolute: it goes into configs
PORT_BASE=${SLURM_LOCAL_PORT_BASE:-16810}
TIMEOUT=${SLURM_LOCAL_TIMEOUT:-60}
CLUSTER=multimsd
PACKAGES=(slurmctld slurmd slurm-client munge slurmdbd mariadb-server)
# Start order; `stop` goes the other way round.
DAEMONS=(munged mariadbd slurmdbd slurmctld slurmd)

usage() {
  echo "usage: $0 start|stop|status [DIR]" >&2
  exit 2
}

log() { echo "slurm-local: $*"; }
die() {
  echo "slurm-local: error: $*" >&2
  exit 1
}

missing_packages() {
  local p missing=()
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
  done
  echo "${missing[@]:-}"
}

pidfile() { echo "$DIR/pids/$1.pid"; }

# The PID in the daemon's PID file if that process is still alive and is that daemon (a recycled PID
# belonging to something else must never be killed).
live_pid() {
  local f pid comm
  f=$(pidfile "$1")
  [[ -s $f ]] || return 1
  pid=$(<"$f")
  comm=$(cat "/proc/$pid/comm" 2>/dev/null) || return 1
  [[ $comm == "$1"* ]] || return 1
  echo "$pid"
}

# Wait (bounded) until a command succeeds; the command's output is discarded.
wait_for() {
  local what=$1 deadline=$((SECONDS + TIMEOUT))
  shift
  until "$@" >/dev/null 2>&1; do
    ((SECONDS < deadline)) || die "$what not ready after ${TIMEOUT}s (logs in $DIR/log)"
    sleep 0.5
  done
}

# Start one daemon in the foreground of a new session, output to its log, PID to its PID file.
spawn() {
  local name=$1 pid
  shift
  if pid=$(live_pid "$name"); then
    log "$name already running (pid $pid)"
    return
  fi
  setsid "$@" >>"$DIR/log/$name.out" 2>&1 </dev/null &
  echo $! >"$(pidfile "$name")"
  sleep 0.2
  live_pid "$name" >/dev/null || die "$name exited at once: see $DIR/log/$name.out"
  log "$name started (pid $!)"
}

write_configs() {
  local host cpus mem
  host=$(hostname -s)
  cpus=$(nproc)
  # Leave the OS some memory: slurmd refuses a node that declares more than it has.
  mem=$(free -m | awk '/^Mem:/ {print int($2 * 0.9)}')
  mkdir -p "$DIR"/{etc,pids,log,munge,mysql,state/ctld,state/d}
  chmod 700 "$DIR/munge"
  # munged rejects a key readable by others.
  [[ -s $DIR/munge/munge.key ]] || {
    head -c 1024 /dev/urandom >"$DIR/munge/munge.key"
    chmod 400 "$DIR/munge/munge.key"
  }
  [[ -s $DIR/etc/db.pass ]] || { head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$DIR/etc/db.pass"; }

  cat >"$DIR/etc/slurm.conf" <<EOF
# Written by scripts/slurm-local.sh; rewritten on every start.
ClusterName=$CLUSTER
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$((PORT_BASE + 7))
SlurmdPort=$((PORT_BASE + 8))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$DIR/munge/munge.socket
CredType=cred/munge
StateSaveLocation=$DIR/state/ctld
SlurmdSpoolDir=$DIR/state/d
SlurmctldPidFile=$DIR/state/slurmctld.pid
SlurmdPidFile=$DIR/state/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
# No cgroups here (containers, no systemd): track processes by /proc, bind nothing.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=512
# The declared topology, not what slurmd detects, so the node is the same on any machine.
SlurmdParameters=config_overrides
MailProg=/bin/true
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort=$((PORT_BASE + 9))
# Connections to slurmdbd take their munge socket from here, not from AuthInfo.
AccountingStoragePass=$DIR/munge/munge.socket
# Quick turnaround for tests: cancelled / timed-out jobs die 2 s after SIGTERM, the node comes back by itself.
KillWait=2
OverTimeLimit=0
ReturnToService=2
InactiveLimit=0
MinJobAge=600
NodeName=$host NodeAddr=127.0.0.1 Sockets=1 CoresPerSocket=$cpus ThreadsPerCore=1 RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF

  cat >"$DIR/etc/slurmdbd.conf" <<EOF
# Written by scripts/slurm-local.sh; rewritten on every start.
AuthType=auth/munge
AuthInfo=socket=$DIR/munge/munge.socket
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort=$((PORT_BASE + 9))
SlurmUser=root
LogFile=$DIR/log/slurmdbd.log
PidFile=$DIR/state/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$((PORT_BASE + 6))
StorageUser=slurm
StoragePass=$(<"$DIR/etc/db.pass")
StorageLoc=slurm_acct_db
EOF
  # slurmdbd refuses a config (it holds the DB password) that others can read.
  chmod 600 "$DIR/etc/slurmdbd.conf"
}

mysql_client() { mariadb --no-defaults --socket="$DIR/mysql/mysqld.sock" -u root "$@"; }

start_mariadb() {
  if [[ ! -d $DIR/mysql/data/mysql ]]; then
    log "initialising MariaDB in $DIR/mysql/data"
    mariadb-install-db --no-defaults --user=root --datadir="$DIR/mysql/data" \
      --auth-root-authentication-method=socket >"$DIR/log/mariadb-install.log" 2>&1 ||
      die "mariadb-install-db failed: see $DIR/log/mariadb-install.log"
  fi
  # TCP on 127.0.0.1 only (slurmdbd connects over TCP, hence the user 'slurm'@'127.0.0.1'); the socket
  # is for the set-up below.
  spawn mariadbd mariadbd --no-defaults --user=root --datadir="$DIR/mysql/data" \
    --socket="$DIR/mysql/mysqld.sock" --pid-file="$DIR/mysql/mysqld.pid" \
    --port=$((PORT_BASE + 6)) --bind-address=127.0.0.1 --skip-log-bin \
    --log-error="$DIR/log/mariadb.log" --innodb-buffer-pool-size=32M
  wait_for MariaDB mysql_client -e "SELECT 1"
  mysql_client -e "CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY '$(<"$DIR/etc/db.pass")';
    GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';"
}

cmd_start() {
  local missing
  missing=$(missing_packages)
  [[ -z $missing ]] || die "missing Debian packages: $missing (install them with: make slurm-deps)"
  [[ $(id -u) == 0 ]] || die "needs root (the daemons run as root)"
  write_configs
  export SLURM_CONF=$DIR/etc/slurm.conf
  local t0=$SECONDS

  spawn munged munged -F --force --key-file="$DIR/munge/munge.key" --socket="$DIR/munge/munge.socket" \
    --pid-file="$DIR/munge/munged.pid" --log-file="$DIR/log/munged.log" --seed-file="$DIR/munge/munged.seed"
  wait_for munged munge -S "$DIR/munge/munge.socket" -n

  start_mariadb

  # slurmdbd has no -f: it reads slurmdbd.conf next to $SLURM_CONF.
  spawn slurmdbd slurmdbd -D
  wait_for slurmdbd sacctmgr -n list cluster
  # Register the cluster once, so that slurmctld's accounting records land somewhere.
  if ! sacctmgr -n -P list cluster format=cluster | grep -qx "$CLUSTER"; then
    sacctmgr -i add cluster "$CLUSTER" >/dev/null
  fi

  spawn slurmctld slurmctld -D -f "$SLURM_CONF"
  wait_for slurmctld scontrol ping
  spawn slurmd slurmd -D -f "$SLURM_CONF"

  local host deadline=$((SECONDS + TIMEOUT)) state=""
  host=$(hostname -s)
  until [[ $state == idle ]]; do
    if ((SECONDS >= deadline)); then
      die "node $host is '$state', not idle, after ${TIMEOUT}s (logs in $DIR/log)"
    fi
    sleep 0.5
    state=$(sinfo -h -n "$host" -o %T 2>/dev/null || true)
  done
  log "node $host idle after $((SECONDS - t0))s"
  echo "export SLURM_CONF=$SLURM_CONF"
}

# SIGTERM, then wait (bounded) for the process to go; SIGKILL if it does not.
stop_daemon() {
  local name=$1 pid i
  if ! pid=$(live_pid "$name"); then
    rm -f "$(pidfile "$name")"
    return
  fi
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < 100; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    log "$name (pid $pid) ignored SIGTERM for 10s: SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
    while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
  fi
  rm -f "$(pidfile "$name")"
  log "$name stopped (pid $pid)"
}

cmd_stop() {
  [[ -d $DIR ]] || {
    log "nothing to stop in $DIR"
    return
  }
  export SLURM_CONF=$DIR/etc/slurm.conf
  # Jobs' processes (slurmstepd and below) are not children of slurmd: cancel the jobs first and wait for
  # them to leave, or they would outlive the cluster.
  if live_pid slurmctld >/dev/null; then
    scancel --quiet --full --user=root 2>/dev/null || true
    local i
    for ((i = 0; i < 40; i++)); do
      [[ -z $(squeue -h -o %i 2>/dev/null) ]] && break
      sleep 0.5
    done
  fi
  local k
  for ((k = ${#DAEMONS[@]} - 1; k >= 0; k--)); do
    stop_daemon "${DAEMONS[k]}"
  done
}

cmd_status() {
  local name pid up=0
  for name in "${DAEMONS[@]}"; do
    if pid=$(live_pid "$name"); then
      printf '%-10s running (pid %s)\n' "$name" "$pid"
      up=$((up + 1))
    else
      printf '%-10s stopped\n' "$name"
    fi
  done
  if live_pid slurmctld >/dev/null; then
    SLURM_CONF=$DIR/etc/slurm.conf sinfo || true
    echo "export SLURM_CONF=$DIR/etc/slurm.conf"
  fi
  local missing
  missing=$(missing_packages)
  [[ -z $missing ]] || echo "missing Debian packages: $missing (make slurm-deps)"
  # Exit status: 0 all running, 3 none or some (as init scripts do).
  ((up == ${#DAEMONS[@]})) || return 3
}

case $ACTION in
start) cmd_start ;;
stop) cmd_stop ;;
status) cmd_status ;;
*) usage ;;
esac
