#!/bin/bash
# bench/clients.sh — what virtual clients (clients_per_rank) cost herd:
# one rank's RSS and CPU per WRITE RPC at K = 1, 100, 1000 against the
# embedded ganesha, then 1 rank x 64 clients against 64 ranks x 1 client
# (server-side MiB/s, herd's RSS summed over ranks, start-up time),
# alternating, ROUNDS rounds; medians and ratios on stdout.
# Usage: HERD=build/herd [ROUNDS=5] [OUT=DIR] bash bench/clients.sh
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
herd=$(realpath "${HERD:-$here/build/herd}")
rounds=${ROUNDS:-5}
out=${OUT:-$(mktemp -d /tmp/herd-clients-bench.XXXXXX)}
mkdir -p "$out"
state="$out/server"
server="$here/cluster-configs/local/nfs-server.sh"
"$server" start --state "$state" --fs tmpfs --size 3G > "$out/start.out"
url=$(head -1 "$out/start.out")
trap '"$server" stop --state "$state" >/dev/null 2>&1 || true' EXIT

job() { # job NAME K FILE_SIZE
    cat > "$out/$1.ini" <<JOB
[global]
backend = libnfs
target = $url
clients_per_rank = $2
file_size = $3
block_size = 64k
nfs_inflight = 2
[w]
kind = write
JOB
}
run() { # run NAME RANKS
    "$server" exec --state "$state" -- mpirun --allow-run-as-root --oversubscribe -n "$2" \
        "$herd" run "$out/$1.ini" -o "$out/$1.h5" --force > "$out/$1.log" 2>&1
}
for k in 1 100 1000; do
    job "k$k" "$k" $((256 * 1024 * 1000 / k)) # 4000 WRITE RPCs in all at every K
    run "k$k" 1
done
for i in $(seq "$rounds"); do
    job "one$i" 64 4m
    run "one$i" 1
    job "many$i" 1 4m
    run "many$i" 64
done
/usr/bin/python3 - "$out" "$rounds" <<'PY'
import statistics, sys
import h5py
out, rounds = sys.argv[1], int(sys.argv[2])
def facts(name):
    with h5py.File(f"{out}/{name}.h5", "r") as f:
        u = f["usage"][()]
        ops = f["phases/w/ops"][()]
        rpcs = int(ops[ops["op"] == b"rpc_write"]["count"].sum())
        ph = f["phases/w"].attrs
        return {"rss": float(u["max_rss_bytes"].sum()), "cpu": float((u["user_seconds"] + u["system_seconds"]).sum()),
                "rpcs": rpcs, "mibs": float(ph["summary_mib_per_s"]), "start": float(f.attrs["startup_seconds"]),
                "clients": int(f.attrs["nranks"]) * int(f.attrs["clients_per_rank"])}
print("K     RSS MiB  RSS/client KiB  CPU us/RPC   RPCs")
base = facts("k1")
for k in (1, 100, 1000):
    x = facts(f"k{k}")
    per = (x["rss"] - base["rss"]) / 1024 / (k - 1) if k > 1 else 0
    print(f"{k:<5} {x['rss']/2**20:8.1f} {per:15.1f} {1e6*x['cpu']/x['rpcs']:11.2f} {x['rpcs']:6d}")
one = [facts(f"one{i}") for i in range(1, rounds + 1)]
many = [facts(f"many{i}") for i in range(1, rounds + 1)]
med = lambda xs, k: statistics.median(x[k] for x in xs)
print("\nform          MiB/s (median)  RSS MiB (all ranks)  start s")
for name, xs in (("1 rank x 64", one), ("64 ranks x 1", many)):
    print(f"{name:<13} {med(xs,'mibs'):14.1f} {med(xs,'rss')/2**20:20.1f} {med(xs,'start'):8.2f}")
print(f"\nratios 1x64 / 64x1: MiB/s {med(one,'mibs')/med(many,'mibs'):.3f}, "
      f"RSS {med(one,'rss')/med(many,'rss'):.3f}, start {med(one,'start')/med(many,'start'):.3f}")
PY
