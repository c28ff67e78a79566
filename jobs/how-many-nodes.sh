#!/usr/bin/env bash
# how-many-nodes.sh — "our server must serve N real nodes: where does it
# stall?", answered on this machine against the embedded servers: each
# herd client behaves like one real node (a mix and a rate: from two
# mountstats snapshots of a real node with MIX_FROM, or MIX and
# NODE_RATE), and a load ladder in clients adds nodes until a step breaks
# the stop rule (response p99 above P99_MAX, or fewer than 95 % of the
# calls due sent). One run per server in SERVERS: ganesha, and the
# kernel's nfsd in a User-Mode Linux guest with N threads (knfsd:N) on a
# disk that takes DISK_LATENCY; each with its monitor (ganesha's process
# CPU and busiest thread, the loop disk; the guest's node_exporter: CPU,
# nfsd threads, pool_stats). Then a table: per server, the last step
# that kept the rule and the step that broke it, with its offered and
# achieved calls/s, response p99, and what the monitor shows
# (docs/scale.md, "How many real nodes?").
#
#   jobs/how-many-nodes.sh
#   MIX_FROM=before.txt,after.txt LADDER=10,50,100,300 jobs/how-many-nodes.sh
#   SERVERS="knfsd:8 knfsd:32" DISK_LATENCY=flush=8ms jobs/how-many-nodes.sh
#
# Environment:
#   SERVERS      servers to try (default "ganesha knfsd:8 knfsd:32")
#   MIX_FROM     BEFORE,AFTER: two copies of a real node's /proc/self/mountstats
#                (herd mix-from prints the node's mix and rate); else:
#   MIX          the node's mix (default: a build node's, docs/job-file.md)
#   NODE_RATE    the node's calls/s (default 20)
#   FILES        data files each node keeps open (default 4)
#   RANKS        herd ranks (default 2); CLIENTS_PER_RANK (default 150):
#                RANKS x CLIENTS_PER_RANK nodes at most
#   LADDER       nodes per step (default 10,30,100,200,all)
#   STEP         each step's length (default 10s)
#   P99_MAX      the response time's bound (default 50ms)
#   DISK_LATENCY the guest's disk for knfsd (default read=2ms,write=2ms,flush=8ms)
#   OUT          output directory (default ${HERD_RESULTS:-<repo>/results}/how-many-nodes-<date>)
#   HERD, HERD_MPIRUN_ARGS, HERD_PYTHON: as herd-batch.sh
# Output in OUT: runs/ (herd-batch.sh's directories), SERVER.h5 links,
# nodes.ini (the job), nodes.csv and summary.txt (the table).
# Needs root (namespaces), nfs-ganesha, user-mode-linux and
# nfs-kernel-server (cluster-configs/local/install.sh), and a herd built
# with libnfs and libcurl. Exit code: 0 when every run exited 0 or 3,
# 1 otherwise, 2 for bad settings or missing prerequisites.
set -euo pipefail

ME=how-many-nodes.sh
log() { printf '%s: %s\n' "$ME" "$*" >&2; }
bad() { log "$*"; exit 2; }

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
HERD=${HERD:-$REPO/build/herd}
SERVER=$REPO/cluster-configs/local/nfs-server.sh
SERVERS=${SERVERS:-ganesha knfsd:8 knfsd:32}
RANKS=${RANKS:-2}
CLIENTS_PER_RANK=${CLIENTS_PER_RANK:-150}
LADDER=${LADDER:-10,30,100,200,all}
STEP=${STEP:-10s}
P99_MAX=${P99_MAX:-50ms}
NODE_RATE=${NODE_RATE:-20}
FILES=${FILES:-4}
MIX=${MIX:-getattr:40,lookup:15,read:20,write:10,readdir:5,create:4,unlink:3,rename:3}
DISK_LATENCY=${DISK_LATENCY:-read=2ms,write=2ms,flush=8ms}
MIX_FROM=${MIX_FROM:-}
image_mb=2048
tmp=${TMPDIR:-/tmp}
python=${HERD_PYTHON:-/usr/bin/python3}
JOB=""

[ "$(id -u)" -eq 0 ] || bad "needs root (network namespaces, the embedded servers)"
[ -x "$HERD" ] || bad "no herd at $HERD (build it: cmake -S . -B build && cmake --build build)"
[[ $RANKS =~ ^[1-9][0-9]*$ ]] || bad "RANKS=$RANKS: a number of ranks"
[[ $CLIENTS_PER_RANK =~ ^[1-9][0-9]*$ ]] || bad "CLIENTS_PER_RANK=$CLIENTS_PER_RANK: a number"
[[ $FILES =~ ^[1-9][0-9]*$ ]] || bad "FILES=$FILES: a number"
for s in $SERVERS; do
    [[ $s == ganesha || $s =~ ^knfsd:[1-9][0-9]*$ ]] || bad "SERVERS: '$s' is not ganesha or knfsd:THREADS"
done

# shellcheck source=jobs/lib-embedded.sh
. "$REPO/jobs/lib-embedded.sh"
embedded_begin how-many-nodes

# The job: the node's mix phase as herd mix-from prints it (or MIX and
# NODE_RATE), as a ladder in clients with the stop rule.
JOB=$out/nodes.ini
{
    echo "; how-many-nodes.sh: each client one node; a ladder in nodes with a stop rule"
    echo "[global]"
    echo "clients_per_rank = $CLIENTS_PER_RANK"
    if [ -n "$MIX_FROM" ]; then
        before=${MIX_FROM%%,*}
        after=${MIX_FROM#*,}
        "$HERD" mix-from "$before" "$after" --section nodes || bad "herd mix-from $before $after failed"
    else
        printf '[nodes]\nkind = mix\nmix = %s\nrate = %s\n' "$MIX" "$NODE_RATE"
    fi
    printf 'files = %s\nclients_active = %s\nduration = %s\n' "$FILES" "$LADDER" "$STEP"
    printf 'stop_when = p99 > %s or achieved < 95%%\n' "$P99_MAX"
} >"$JOB"
"$HERD" check "$JOB" -n "$RANKS" --set target=nfs://127.0.0.1/export >/dev/null ||
    bad "$JOB: herd check refused it"

for s in $SERVERS; do
    if [ "$s" = ganesha ]; then
        embedded_run ganesha "" || true
    else
        threads=${s#knfsd:}
        embedded_run "knfsd-t$threads" "--server knfsd --threads $threads --disk-latency $DISK_LATENCY" ||
            true
    fi
done

# The table: per server, each step of its ladder (nodes, offered and
# achieved calls/s, the share of the calls due sent, response p99, the
# server's CPU and threads), where it kept the rule and where it broke,
# and what the monitor shows at the step that broke it.
# shellcheck disable=SC2317,SC2154 # called by embedded_finish; out, links: lib-embedded.sh
nodes_table() {
    REPO=$REPO "$python" - "$out/nodes.csv" "${links[@]}" <<'PY'
import csv, math, os, sys
sys.path.insert(0, os.path.join(os.environ["REPO"], "analysis"))
import herd_results

def cause(s):
    """What the monitor shows at a step: the first bound it finds."""
    if s["lag_p99_s"] >= 0.1 * s["response_p99_s"] and s["lag_p99_s"] >= 1e-3:
        return "herd (its own lag: add ranks)"
    if s["cpu_max"] >= 0.9:
        return f"server CPU {100 * s['cpu_max']:.0f}% busy"
    if s["proc_thread_max"] >= 0.9:
        return f"one server thread at {100 * s['proc_thread_max']:.0f}% of a core"
    if s["nfsd_woken_share"] < 0.1:
        return f"nfsd threads all busy ({100 * s['nfsd_woken_share']:.0f}% of requests found one idle)"
    return "response time (the disk)"

rows = []
for path in sys.argv[2:]:
    server = os.path.basename(path)[:-3]
    with herd_results.load(path) as run:
        for _, s in run.ladder_steps("nodes").iterrows():
            rows.append({"server": server, "step": int(s["step"]), "nodes": int(s["active_clients"])
                         if "active_clients" in s else -1,
                         "status": s["status"], "offered_per_s": float(s["offered_per_s"]),
                         "achieved_per_s": float(s["achieved_per_s"]),
                         "sent_share": float(s["units"]) / float(s["due"]) if s["due"] else math.nan,
                         "response_p99_s": float(s["response_p99_s"]),
                         "service_p99_s": float(s["service_p99_s"]),
                         "lag_p99_s": float(s["lag_p99_s"]),
                         "cpu_max": float(s["cpu_max"]), "proc_cpu": float(s["proc_cpu"]),
                         "proc_thread_max": float(s["proc_thread_max"]),
                         "nfsd_threads": float(s["nfsd_threads"]),
                         "nfsd_woken_share": float(s["nfsd_woken_share"]), "note": s["note"]})
with open(sys.argv[1], "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=list(rows[0]))
    w.writeheader()
    w.writerows(rows)

def ms(v):
    return "-" if math.isnan(v) else f"{v * 1e3:.1f}"

print(f"{'server':<10} {'step':>4} {'nodes':>5} {'offered/s':>9} {'achieved/s':>10} {'sent':>6} "
      f"{'p99 ms':>7} {'svc p99':>7} {'cpu':>5} {'server':>6}  status")
for r in rows:
    sent = "-" if math.isnan(r["sent_share"]) else f"{100 * r['sent_share']:.1f}%"
    cpu = "-" if math.isnan(r["cpu_max"]) else f"{100 * r['cpu_max']:.0f}%"
    proc = "-" if math.isnan(r["proc_cpu"]) else f"{r['proc_cpu']:.2f}"
    print(f"{r['server']:<10} {r['step']:>4} {r['nodes']:>5} {r['offered_per_s']:>9.1f} "
          f"{r['achieved_per_s']:>10.1f} {sent:>6} {ms(r['response_p99_s']):>7} "
          f"{ms(r['service_p99_s']):>7} {cpu:>5} {proc:>6}  {r['status']}")
print("cpu: the server host's busiest sample (the guest's one CPU for knfsd); server: the "
      "cores ganesha.nfsd used (mean)")
print()
for server in dict.fromkeys(r["server"] for r in rows):
    ran = [r for r in rows if r["server"] == server and r["status"] != "not-run"]
    skipped = [r for r in rows if r["server"] == server and r["status"] == "not-run"]
    if skipped:
        broke = ran[-1]
        kept = ran[-2]["nodes"] if len(ran) > 1 else 0
        print(f"{server}: keeps the rule up to {kept} nodes; stops at {broke['nodes']} nodes "
              f"(offered {broke['offered_per_s']:.0f}/s, achieved {broke['achieved_per_s']:.0f}/s, "
              f"p99 {ms(broke['response_p99_s'])} ms): {cause(broke)}")
    else:
        print(f"{server}: kept the rule at every step, up to {ran[-1]['nodes']} nodes")
PY
}
embedded_finish "How many real nodes? Each herd client is one node; a ladder in nodes; stop: p99 > $P99_MAX or achieved < 95%" nodes_table
