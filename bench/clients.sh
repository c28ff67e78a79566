#!/usr/bin/env bash
# clients.sh — what virtual clients (clients_per_rank) cost herd and what
# they show of a server, against the embedded servers:
#  cost   one rank, K = 1, 100, 1000 clients, the same work at every K:
#         1000 files of 256 KiB (files_per_rank = 1000 / K), 4000 WRITE
#         RPCs of 64 KiB (window 2, tmpfs ganesha): RSS, RSS per client
#         beyond K = 1, herd's CPU per WRITE RPC (the run's CPU less an
#         idle run's at the same K: connecting is not the phase's work)
#  forms  1 rank x 64 clients against 64 ranks x 1 client on the same job
#         (4 MiB per client), ROUNDS alternating rounds: medians of MiB/s,
#         RSS summed over ranks, start-up (MPI_Init to the first phase)
#  scale  2 ranks x K for K = SCALE_KS against ganesha (tmpfs) and the
#         kernel's nfsd (UML): start-up, established connections to port
#         2049 counted in the server's namespace during an idle phase,
#         a write (256 KiB per client), its MiB/s and p99, the server
#         process's CPU seconds over the run, herd's CPU and RSS, errors
#  records rank 0's cost of many clients' rows: 2 ranks x 2000 clients x
#         25 iterations of an idle phase (100 000 rows) through the real
#         gather, summary, HDF5 write and herd-report: gather_seconds,
#         write_seconds, rank 0's RSS, herd-report's wall time and RSS
# Output: tables on stdout (and OUT/clients.txt). Needs root; exits 0
# whatever the numbers, 2 when a tool is missing.
set -u -o pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
ROUNDS=${ROUNDS:-5}
SCALE_KS=${SCALE_KS:-10 100 500 1000 2000}
PARTS=${PARTS:-cost forms scale records}
OUT=${OUT:-./bench-results/clients}
HERD=${HERD:-$ROOT/build/herd}
SERVER=$ROOT/cluster-configs/local/nfs-server.sh
PY=/usr/bin/python3

BENCH=clients
# shellcheck source=bench/lib.sh
. "$HERE/lib.sh"

bench_require_root "the servers use namespaces."
bench_require mpirun:openmpi-bin ganesha.nfsd:nfs-ganesha ss:iproute2
[ -x "$HERD" ] || { warn "$HERD not built"; exit 2; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
work=$(mktemp -d /tmp/herd-bench-clients.XXXXXX)
cleanup() {
    for s in ganesha knfsd; do "$SERVER" stop --state "$work/$s" --purge >/dev/null 2>&1; done
    rm -rf "$work"
}
trap cleanup EXIT INT TERM

declare -A url pid
start() { # start NAME OPTIONS...
    local name=$1 lines
    shift
    "$SERVER" start --state "$work/$name" "$@" > "$work/$name.start" ||
        { warn "nfs-server.sh start $* failed"; exit 1; }
    lines=$(cat "$work/$name.start")
    url[$name]=$(sed -n 1p <<<"$lines")
    pid[$name]=$(sed -n 2p <<<"$lines")
}

job() { # job FILE URL K FILE_SIZE [IDLE_SECONDS [FILES_PER_CLIENT]]
    {
        printf '[global]\nbackend = libnfs\ntarget = %s\nclients_per_rank = %s\n' "$2" "$3"
        printf 'block_size = 64k\nnfs_inflight = 2\nop_timeout = 120s\n'
        [ -n "${5:-}" ] && printf '[hold]\nkind = idle\nduration = %s\n' "$5"
        [ "$4" != 0 ] && printf '[w]\nkind = write\nfile_size = %s\nfiles_per_rank = %s\n' \
            "$4" "${6:-1}"
    } > "$1"
}

run() { # run SERVER NAME RANKS: herd in the server's namespace
    "$SERVER" exec --state "$work/$1" -- mpirun --oversubscribe -n "$3" "$HERD" run \
        "$OUT/$2.ini" -o "$OUT/$2.h5" --force > "$OUT/$2.log" 2>&1 ||
        warn "$2: herd exited $? (see $OUT/$2.log)"
}

cpu_of() { # the process's utime + stime in clock ticks
    awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0
}

start ganesha --fs tmpfs --size 3G

if [[ " $PARTS " == *" cost "* ]]; then
    for i in $(seq "$ROUNDS"); do
        for k in 1 100 1000; do
            job "$OUT/cost$k-$i.ini" "${url[ganesha]}" "$k" 256k "" $((1000 / k))
            job "$OUT/idle$k-$i.ini" "${url[ganesha]}" "$k" 0 0.1s
            run ganesha "cost$k-$i" 1
            run ganesha "idle$k-$i" 1
        done
    done
fi
if [[ " $PARTS " == *" forms "* ]]; then
    for i in $(seq "$ROUNDS"); do
        job "$OUT/one$i.ini" "${url[ganesha]}" 64 4m
        job "$OUT/many$i.ini" "${url[ganesha]}" 1 4m
        if ((i % 2)); then
            run ganesha "one$i" 1
            run ganesha "many$i" 64
        else
            run ganesha "many$i" 64
            run ganesha "one$i" 1
        fi
    done
fi
if [[ " $PARTS " == *" scale "* ]]; then
    servers=(ganesha)
    if command -v linux.uml >/dev/null 2>&1; then
        start knfsd --server knfsd --fs xfs --size 3G --threads 8
        servers+=(knfsd)
    fi
    for s in "${servers[@]}"; do
        # the server's end of each connection: ganesha's port 2049 in the
        # namespace; knfsd's lives in its guest: herd's ends, to port 2049
        filter='( sport = :2049 )'
        [ "$s" = knfsd ] && filter='( dport = :2049 )'
        for k in $SCALE_KS; do
            name=scale-$s-$k
            job "$OUT/$name.ini" "${url[$s]}" "$k" 256k 8s
            before=$(cpu_of "${pid[$s]}")
            run "$s" "$name" 2 &
            herd_job=$!
            most=0
            for _ in $(seq 150); do
                n=$("$SERVER" exec --state "$work/$s" -- ss -Htn state established "$filter" |
                    wc -l)
                ((n > most)) && most=$n
                kill -0 "$herd_job" 2>/dev/null || break
                sleep 0.2
            done
            wait "$herd_job"
            echo "$most $(($(cpu_of "${pid[$s]}") - before))" > "$OUT/$name.server"
        done
    done
fi

if [[ " $PARTS " == *" records "* ]]; then
    job "$OUT/records.ini" "${url[ganesha]}" 2000 0 0.1s
    sed -i 's/^duration = 0.1s$/duration = 0.1s\niterations = 25/' "$OUT/records.ini"
    run ganesha records 2
    rm -rf "$OUT/records-report"
    /usr/bin/time -f "%e %M" -o "$OUT/records.report-time" "$ROOT/analysis/herd-report" \
        "$OUT/records.h5" -o "$OUT/records-report" > "$OUT/records-report.log" 2>&1 ||
        warn "herd-report failed (see $OUT/records-report.log)"
fi

"$PY" - "$OUT" "$ROUNDS" "$PARTS" "$SCALE_KS" <<'PY' | tee "$OUT/clients.txt"
import os, statistics, sys
import h5py

out, rounds, parts, ks = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(), sys.argv[4].split()
tick = os.sysconf("SC_CLK_TCK")

def facts(name):
    path = f"{out}/{name}.h5"
    if not os.path.exists(path):
        return None
    with h5py.File(path, "r") as f:
        u = f["usage"][()]
        x = {"rss": float(u["max_rss_bytes"].sum()),
             "cpu": float((u["user_seconds"] + u["system_seconds"]).sum()),
             "start": float(f.attrs["startup_seconds"]), "rpcs": 0, "mibs": float("nan"),
             "p99": float("nan"), "errors": 0}
        if "w" in f["phases"]:
            ph = f["phases/w"]
            ops = ph["ops"][()]
            x["rpcs"] = int(ops[ops["op"] == b"rpc_write"]["count"].sum())
            x["mibs"] = float(ph.attrs["summary_mib_per_s"])
            summary = ph["op_summary"][()]
            write = summary[summary["op"] == b"write"]
            x["p99"] = float(write["p99_s"][0]) if len(write) else float("nan")
        x["errors"] = sum(int(f["phases"][n].attrs.get("summary_errors", 0)) for n in f["phases"])
        return x

med = lambda xs, k: statistics.median(x[k] for x in xs)
if "cost" in parts:
    print(f"cost: one rank, 1000 files of 256 KiB, 4000 WRITE RPCs of 64 KiB (window 2), "
          f"every K; medians of {rounds} rounds")
    print(f"{'K':>5} {'RSS MiB':>8} {'RSS/client KiB':>15} {'CPU us/RPC':>11} {'start s':>8}"
          "  CPU us/RPC of each round")
    stats = {}
    for k in (1, 100, 1000):
        runs = [(facts(f"cost{k}-{i}"), facts(f"idle{k}-{i}")) for i in range(1, rounds + 1)]
        runs = [(x, idle) for x, idle in runs if x and idle and x["rpcs"]]
        if runs:
            cpu = [(x["cpu"] - idle["cpu"]) / x["rpcs"] * 1e6 for x, idle in runs]
            stats[k] = (statistics.median(x["rss"] for x, _ in runs), statistics.median(cpu),
                        statistics.median(x["start"] for x, _ in runs), cpu)
    for k, (rss, cpu, start, each) in stats.items():
        per = (rss - stats[1][0]) / 1024 / (k - 1) if k > 1 and 1 in stats else 0.0
        ratio = f"  ({cpu / stats[1][1]:.2f} x K=1)" if k > 1 and 1 in stats else ""
        rounds_text = " ".join(f"{c:.0f}" for c in each)
        print(f"{k:>5} {rss / 2**20:8.1f} {per:15.1f} {cpu:11.2f} {start:8.2f}  {rounds_text}{ratio}")
if "forms" in parts:
    one = [x for x in (facts(f"one{i}") for i in range(1, rounds + 1)) if x]
    many = [x for x in (facts(f"many{i}") for i in range(1, rounds + 1)) if x]
    if one and many:
        print(f"\nforms: {len(one)} alternating rounds, 64 clients x 4 MiB, medians")
        print(f"{'form':<13} {'MiB/s':>8} {'RSS MiB':>8} {'start s':>8}  MiB/s of each round")
        for label, xs in (("1 rank x 64", one), ("64 ranks x 1", many)):
            each = " ".join(f"{x['mibs']:.0f}" for x in xs)
            print(f"{label:<13} {med(xs, 'mibs'):8.1f} {med(xs, 'rss') / 2**20:8.1f} "
                  f"{med(xs, 'start'):8.2f}  {each}")
        print(f"ratio 1x64 / 64x1: MiB/s {med(one, 'mibs') / med(many, 'mibs'):.3f}, "
              f"RSS {med(one, 'rss') / med(many, 'rss'):.3f}, "
              f"start {med(one, 'start') / med(many, 'start'):.3f}")
if "scale" in parts:
    print("\nscale: 2 ranks x K clients, write 256 KiB per client (64 KiB, window 2)")
    print(f"{'server':<8} {'clients':>7} {'start s':>8} {'conns':>6} {'MiB/s':>8} "
          f"{'p99 ms':>8} {'srv CPU s':>9} {'herd CPU s':>10} {'RSS MiB':>8} {'errors':>6}")
    for s in ("ganesha", "knfsd"):
        for k in ks:
            x = facts(f"scale-{s}-{k}")
            if not x:
                continue
            with open(f"{out}/scale-{s}-{k}.server") as f:
                conns, ticks = (int(v) for v in f.read().split())
            print(f"{s:<8} {2 * int(k):>7} {x['start']:8.2f} {conns:>6} {x['mibs']:8.1f} "
                  f"{x['p99'] * 1e3:8.2f} {ticks / tick:9.2f} {x['cpu']:10.2f} "
                  f"{x['rss'] / 2**20:8.1f} {x['errors']:>6}")
if "records" in parts and os.path.exists(f"{out}/records.h5"):
    with h5py.File(f"{out}/records.h5", "r") as f:
        ph = f["phases/hold"]
        rows = len(ph["ranks"])
        u = f["usage"][()]
        rss0 = float(u["max_rss_bytes"][u["rank"] == 0][0])
        gather, write = float(ph.attrs["gather_seconds"]), float(ph.attrs["write_seconds"])
    with open(f"{out}/records.report-time") as f:
        wall, kib = f.read().split()[-2:]
    print(f"\nrecords: {rows} rows (2 ranks x 2000 clients x 25 iterations): gather "
          f"{gather:.3f} s, HDF5 write {write:.3f} s, rank 0 RSS {rss0 / 2**20:.1f} MiB; "
          f"herd-report {float(wall):.1f} s, {int(kib) / 1024:.1f} MiB")
PY
