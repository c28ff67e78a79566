#!/usr/bin/env bash
# vc-slurm.sh — a real Slurm on the virtual cluster (vcluster.sh up --slurm):
# munged and slurmctld on the head host, a slurmd on every client host and
# on the server host, and one slurm.conf (STATE/slurm/slurm.conf) naming
# them by their cluster addresses. `vcluster.sh exec` sets SLURM_CONF, so
# sbatch, srun, squeue and scancel on the head host work as on a real
# cluster, srun --mpi=pmix included (MpiDefault=pmix). Sourced by
# vcluster.sh: functions only; they use its STATE, NET, SERVER_NAME, die
# and procinfo. Every daemon is recorded as NAME PID START in
# STATE/daemons and stopped by slurm_down by PID and start time.
#
# Node sizes come from the slot counts, not from the machine (SlurmdParameters
# = config_overrides): a client has --slots CPUs, the server host 1, so
#   sbatch --nodes=5 --ntasks=21 --nodelist=srv ...   (4 clients x 5 slots)
# puts 5 ranks on each client and the last rank, the monitor, on srv.

SLURM_TOOLS=(munged mungekey slurmctld slurmd sbatch srun squeue scancel sinfo)

slurm_dir() { printf '%s/slurm\n' "$STATE"; }

slurm_check_tools() {
    tools_need "up --slurm" "apt-get install slurmctld slurmd slurm-client munge" "${SLURM_TOOLS[@]}"
}

# slurm_in HOST COMMAND...: COMMAND in HOST's network and UTS namespaces,
# with this cluster's slurm.conf.
slurm_in() {
    local pid
    pid=$(host_field "$1" 2)
    shift
    SLURM_CONF=$(slurm_dir)/slurm.conf nsenter -t "$pid" --net --uts -- "$@"
}

# slurm_fail WHAT LOG: stop with the log's last lines (the state directory
# and its logs go with the failed cluster).
slurm_fail() {
    [ -r "$2" ] && tail -n 5 "$2" | sed 's/^/  /' >&2
    die "up --slurm: $1"
}

# slurm_record NAME PIDFILE LOG: wait for a daemon's PID file, then note it.
slurm_record() {
    local name=$1 file=$2 log=$3 pid="" start="" i
    for ((i = 0; i < 250; i++)); do
        if [ -s "$file" ]; then
            pid=$(tr -dc 0-9 <"$file")
            [ -n "$pid" ] && start=$(proc_start "$pid") && break
        fi
        sleep 0.02
    done
    [ -n "$start" ] || slurm_fail "$name did not start" "$log"
    printf '%s %s %s\n' "$name" "$pid" "$start" >>"$STATE/daemons"
}

# KillWait: the seconds between scancel's SIGTERM and its SIGKILL. After a
# signal herd-batch.sh still writes the report; on a busy 2-CPU machine
# running the whole cluster, a scancelled job's output once ended at the
# line before the report (killed while drawing it, after Slurm's default
# 30 s), without the run directory the tests read from its last line.
slurm_write_conf() {
    local clients=$1 slots=$2 dir i
    dir=$(slurm_dir)
    {
        cat <<EOF
# slurm.conf of the virtual cluster in $STATE (vcluster.sh up --slurm)
ClusterName=herdvc
SlurmctldHost=head($NET.1)
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$dir/ctld
SlurmdSpoolDir=$dir/spool/%n
TmpFS=$dir/tmp/%n
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd-%n.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
MpiDefault=pmix
ReturnToService=2
KillWait=120
EOF
        # TmpFS per node: PMIx makes its directories there, and all the
        # hosts share this machine's /tmp.
        for ((i = 1; i <= clients; i++)); do
            printf 'NodeName=c%02d NodeAddr=%s.%d CPUs=%d State=UNKNOWN\n' "$i" "$NET" \
                $((10 + i)) "$slots"
        done
        printf 'NodeName=%s NodeAddr=%s.2 CPUs=1 State=UNKNOWN\n' "$SERVER_NAME" "$NET"
        printf 'PartitionName=vc Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n'
    } >"$dir/slurm.conf"
}

# slurm_up CLIENTS SLOTS: start munge and Slurm, wait until every node is idle.
slurm_up() {
    local clients=$1 slots=$2 dir i name nodes=()
    dir=$(slurm_dir)
    # munged refuses a key others can read; it wants a socket directory that
    # everyone can reach, which a state directory under a private one (a
    # test's) is not: --force makes that a warning. Only root uses it.
    mkdir -p "$dir/key" "$dir/munge" "$dir/ctld"
    chmod 755 "$dir" "$dir/munge"
    chmod 700 "$dir/key"
    mungekey --create --keyfile="$dir/key/munge.key" >/dev/null 2>&1 ||
        die "up --slurm: mungekey failed"
    : >"$STATE/daemons"
    slurm_in head munged --force --origin="$NET.1" --socket="$dir/munge/munge.socket" \
        --key-file="$dir/key/munge.key" --log-file="$dir/munged.log" \
        --pid-file="$dir/munge/munged.pid" --seed-file="$dir/munge/munged.seed" \
        </dev/null >>"$dir/daemons.out" 2>&1 || slurm_fail "munged failed" "$dir/munged.log"
    slurm_record munged "$dir/munge/munged.pid" "$dir/munged.log"

    for ((i = 1; i <= clients; i++)); do nodes+=("$(printf 'c%02d' "$i")"); done
    nodes+=("$SERVER_NAME")
    for name in "${nodes[@]}"; do mkdir -p "$dir/spool/$name" "$dir/tmp/$name"; done
    slurm_write_conf "$clients" "$slots"
    slurm_in head slurmctld </dev/null >>"$dir/daemons.out" 2>&1 ||
        slurm_fail "slurmctld failed" "$dir/slurmctld.log"
    slurm_record slurmctld "$dir/slurmctld.pid" "$dir/slurmctld.log"
    for name in "${nodes[@]}"; do
        slurm_in "$name" slurmd </dev/null >>"$dir/daemons.out" 2>&1 ||
            slurm_fail "slurmd on $name failed" "$dir/slurmd-$name.log"
        slurm_record "slurmd-$name" "$dir/slurmd-$name.pid" "$dir/slurmd-$name.log"
    done

    local idle=0
    for ((i = 0; i < 150; i++)); do
        idle=$(slurm_in head sinfo -h -N -t idle -o '%N' 2>/dev/null | sort -u | grep -c . || true)
        ((idle >= ${#nodes[@]})) && return 0
        sleep 0.2
    done
    slurm_in head sinfo -N >&2 || true
    slurm_fail "$idle of ${#nodes[@]} nodes idle after 30 s" "$dir/slurmctld.log"
}

# slurm_down: cancel the cluster's jobs while the controller runs, then stop
# the daemons, newest first. Returns non-zero if one of them still runs.
slurm_down() {
    [ -f "$STATE/daemons" ] || return 0
    local ctld_pid ctld_start jobs i name pid start problems=0
    read -r ctld_pid ctld_start < <(awk '$1 == "slurmctld" { print $2, $3 }' "$STATE/daemons") || true
    if [ -n "${ctld_pid:-}" ] && alive_pid "$ctld_pid" "$ctld_start"; then
        jobs=$(slurm_in head squeue -h -o %A 2>/dev/null || true)
        if [ -n "$jobs" ]; then
            # shellcheck disable=SC2086 # one argument per job
            slurm_in head scancel $jobs 2>/dev/null || true
            for ((i = 0; i < 100; i++)); do
                [ -z "$(slurm_in head squeue -h -o %A 2>/dev/null)" ] && break
                sleep 0.2
            done
        fi
    fi
    while read -r name pid start; do
        procinfo stop "$pid" "$start" 5 >/dev/null || { log "down: $name ($pid) still runs"; problems=1; }
    done < <(tac "$STATE/daemons")
    return $problems
}
