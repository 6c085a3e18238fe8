#!/usr/bin/env bash
# A one-node Slurm cluster on localhost for tests: munged, a private MariaDB, slurmdbd, slurmctld
# and slurmd with generated configs (2 CPUs, no GPUs, accounting so that `sacct` shows each array
# task's state and exit code). Everything lives in its state dir; /etc is not touched. Run as root.
#   scripts/slurm-local.sh start|stop|status    (state dir: FABENCH_SLURM_DIR, /tmp/fa-bench-slurm)
#   export SLURM_CONF=/tmp/fa-bench-slurm/etc/slurm.conf   # then sbatch, squeue, sacct, scancel
set -euo pipefail
dir=${FABENCH_SLURM_DIR:-/tmp/fa-bench-slurm}
port=${FABENCH_SLURM_PORT:-6817}  # slurmctld's; slurmd and slurmdbd listen on the next two
conf=$dir/etc/slurm.conf
node=$(hostname -s)
export SLURM_CONF=$conf
export MYSQL_UNIX_PORT=$dir/run/mysql.sock  # where slurmdbd's client library finds the database

say() { printf 'slurm-local: %s\n' "$*" >&2; }

alive() {  # daemon name: 0 if its pid file names a live process
  local pid
  pid=$(cat "$dir/run/$1.pid" 2>/dev/null) || return 1
  [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null
}
dead() { ! kill -0 "$1" 2>/dev/null; }
no_jobs() { [[ -z "$(timeout 5 squeue -h -o %i)" ]]; }
node_idle() { [[ "$(timeout 5 sinfo -h -n "$node" -o %T)" == idle ]]; }

wait_for() {  # seconds, what, command...: poll every 0.5 s until the command succeeds
  local limit=$1 what=$2 end=$((SECONDS + $1))
  shift 2
  until "$@" >/dev/null 2>&1; do
    if ((SECONDS >= end)); then
      say "timed out after ${limit}s waiting for $what"
      return 1
    fi
    sleep 0.5
  done
}

write_confs() {
  # Accounting goes through slurmdbd. Slurm 22.05's lighter store, jobcomp/filetxt read by
  # `sacct -c`, names array tasks by raw job id only (its reader reports "Unknown type
  # ArrayJobId"), so `sacct -j ARRAYJOB` would find none of them.
  cat >"$dir/etc/slurmdbd.conf" <<EOF
AuthType=auth/munge
AuthInfo=socket=$dir/run/munge.socket
DbdHost=$node
DbdAddr=127.0.0.1
DbdPort=$((port + 2))
SlurmUser=root
PidFile=$dir/run/slurmdbd.pid
LogFile=$dir/log/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=localhost
StorageUser=root
StorageLoc=slurm_acct_db
EOF
  chmod 600 "$dir/etc/slurmdbd.conf"  # slurmdbd refuses a config others can read
  # proctrack/linuxproc and task/none: no cgroups, so it runs in a container too. CR_CPU: memory is
  # not a consumable, so jobs need no --mem. KillWait=5: scancel's SIGKILL follows 5 s after TERM.
  cat >"$conf" <<EOF
ClusterName=fabench-local
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/run/munge.socket
StateSaveLocation=$dir/spool/ctld
SlurmdSpoolDir=$dir/spool/d
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort=$((port + 2))
AccountingStoragePass=$dir/run/munge.socket
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
MpiDefault=none
ReturnToService=2
KillWait=5
MinJobAge=600
NodeName=$node NodeAddr=127.0.0.1 CPUs=2 State=UNKNOWN
PartitionName=local Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
}

stop() {
  if alive slurmctld; then  # jobs first, so that no slurmstepd outlives its slurmd
    scancel --full --quiet --user="$(id -un)" 2>/dev/null || true
    wait_for 20 "jobs to end" no_jobs || true
  fi
  local d pid
  for d in slurmd slurmctld slurmdbd mariadbd munged; do
    pid=$(cat "$dir/run/$d.pid" 2>/dev/null) || continue
    if alive "$d"; then
      kill "$pid" 2>/dev/null || true
      wait_for 15 "$d ($pid) to exit" dead "$pid" || kill -9 "$pid" 2>/dev/null || true
    fi
    rm -f "$dir/run/$d.pid"
  done
  say "stopped (state dir $dir)"
}

start() {
  [[ $(id -u) -eq 0 ]] || { say "run me as root"; exit 2; }
  local tool
  for tool in munged mungekey mariadb-install-db mariadbd slurmdbd slurmctld slurmd sinfo sacct; do
    command -v "$tool" >/dev/null || { say "$tool not found: run scripts/setup.sh --slurm"; exit 2; }
  done
  stop 2>/dev/null  # a clean state every time: whatever an earlier run left goes
  rm -rf "$dir"
  mkdir -p "$dir"/{etc,run,log,spool/ctld,spool/d,munge,db}
  chmod 700 "$dir" "$dir/run" "$dir/munge"
  write_confs
  mungekey --create --keyfile="$dir/munge/munge.key"
  # --force: munged refuses to run as root without it.
  munged --force --socket="$dir/run/munge.socket" --key-file="$dir/munge/munge.key" \
    --pid-file="$dir/run/munged.pid" --log-file="$dir/log/munged.log" --seed-file="$dir/munge/seed"
  wait_for 10 munged test -S "$dir/run/munge.socket"
  # The database: no network, root comes in through the socket (unix_socket auth). ~5 s.
  mariadb-install-db --no-defaults --datadir="$dir/db" --user=root --skip-test-db \
    --auth-root-authentication-method=socket >"$dir/log/mariadb-install.log" 2>&1
  mariadbd --no-defaults --datadir="$dir/db" --socket="$MYSQL_UNIX_PORT" --skip-networking \
    --user=root --pid-file="$dir/run/mariadbd.pid" --log-error="$dir/log/mariadb.log" \
    --innodb-buffer-pool-size=32M >/dev/null 2>&1 &
  wait_for 30 mariadbd test -S "$MYSQL_UNIX_PORT"
  slurmdbd
  wait_for 30 slurmdbd timeout 5 sacctmgr -n list cluster
  slurmctld -c -f "$conf"  # it adds its cluster to the database when it first registers
  wait_for 30 slurmctld timeout 5 scontrol ping
  slurmd -f "$conf"
  if ! wait_for 30 "node $node to come up idle" node_idle; then
    tail -n 20 "$dir"/log/*.log >&2
    exit 1
  fi
  say "up: node $node, 2 CPUs, partition local; export SLURM_CONF=$conf"
}

status() {
  local d rc=0
  for d in munged mariadbd slurmdbd slurmctld slurmd; do
    if alive "$d"; then say "$d running (pid $(cat "$dir/run/$d.pid"))"; else say "$d not running"; rc=1; fi
  done
  if alive slurmctld; then
    sinfo
    squeue
  fi
  return $rc
}

case ${1:-} in
  start) start ;;
  stop) stop ;;
  status) status ;;
  *) say "usage: $0 start|stop|status"; exit 2 ;;
esac
