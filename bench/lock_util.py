#!/usr/bin/python3
"""lock_util.py — helpers for bench/locks.sh (subcommands in main's table):
herd's lock phases' rates, the server's CPU during one, the local table and
the NFS table (herd's lock/unlock pairs against the plain libnfs peer)."""
import csv
import statistics
import sys

from bench_util import die, dispatch, text as s  # shared with the other benches (PYTHONPATH=bench/)


# herd RESULTS.h5 PHASE NRANKS COUNT: prints
#   grants_s attempts_s contention seconds hold_us lock_us
# grants_s = sum(grants) / (max(t_end) - phase t_start); contention =
# refused / attempts; hold_us = mean of the holds table's released -
# granted; lock_us = mean seconds per lock/unlock call (ops table).
def cmd_herd(path, phase, nranks, count):
    import h5py
    nranks, count = int(nranks), int(count)
    with h5py.File(path, "r") as f:
        g = f.get("/phases/%s" % phase)
        if g is None:
            die("%s: no phase %s" % (path, phase))
        status = s(g.attrs.get("status", ""))
        rows = g["ranks"][()]
        errors, viol = int(rows["errors"].sum()), int(rows["violations"].sum())
        if status != "ok" or errors or viol:
            die("%s: %s: status %s, %d errors, %d violations" % (path, phase, status, errors,
                                                                 viol))
        if len(rows) != nranks:
            die("%s: %s: %d rows, expected %d" % (path, phase, len(rows), nranks))
        t0 = float(g.attrs["t_start"])
        secs = float(rows["t_end"].max()) - t0
        grants = int(rows["grants"].sum())
        contended = int(rows["contended"].sum())
        attempts = grants + contended
        if count and attempts != nranks * count:
            die("%s: %s: %d attempts, expected %d" % (path, phase, attempts, nranks * count))
        if secs <= 0 or grants == 0:
            die("%s: %s: no grants or non-positive duration" % (path, phase))
        holds = g["holds"][()]
        hold = float((holds["released"] - holds["granted"]).mean()) if len(holds) else 0.0
        lk_n, lk_s = 0, 0.0
        for r in g["ops"][()]:
            if s(r["op"]) == "lock":
                lk_n += int(r["count"])
                lk_s += float(r["seconds"])
        ends = sorted(float(x) - t0 for x in rows["t_end"])
        sys.stderr.write("lock_util: %s: %d grants, %d refused, %.4f s; rank ends +%.4f .. +%.4f"
                         " (median %.4f); mean hold %.1f us; %d lock calls, mean %.1f us;"
                         " max_holders %s\n" % (
                             phase, grants, contended, secs, ends[0], ends[-1],
                             statistics.median(ends), hold * 1e6, lk_n,
                             lk_s / lk_n * 1e6 if lk_n else 0, g.attrs.get("max_holders", "?")))
        print("%.1f %.1f %.4f %.4f %.1f %.1f" % (
            grants / secs, attempts / secs, contended / attempts, secs, hold * 1e6,
            lk_s / lk_n * 1e6 if lk_n else 0.0))


# cpu RESULTS.h5 PHASE: the phase's summary_cpu_mean (the monitored
# host's busy fraction, herd's own ranks included on one machine) and the
# mean CPU of ganesha.nfsd in cores over the monitor's samples inside the
# phase (/monitor/processes); nan when missing.
def cmd_cpu(path, phase):
    import h5py
    with h5py.File(path, "r") as f:
        g = f["/phases/%s" % phase]
        t0, t1 = float(g.attrs["t_start"]), float(g["ranks"][()]["t_end"].max())
        host = float(g.attrs.get("summary_cpu_mean", float("nan")))
        cores = [float(r["cpu"]) for r in (f["/monitor/processes"][()] if
                                          "/monitor/processes" in f else [])
                 if s(r["name"]) == "ganesha.nfsd" and t0 <= float(r["t"]) <= t1]
        print("%.3f %.3f" % (host, sum(cores) / len(cores) if cores else float("nan")))


def med(xs):
    return statistics.median(xs) if xs else None


def cmd_table(raw, out):
    order, data = [], {}
    with open(raw) as fh:
        for r in csv.DictReader(fh):
            n = int(r["ranks"])
            if n not in data:
                order.append(n)
                data[n] = {}
            for k, v in r.items():
                if k in ("ranks", "round", "count") or v == "":
                    continue
                try:
                    data[n].setdefault(k, []).append(float(v))
                except ValueError:
                    pass
            data[n]["count"] = r["count"]
    base = None
    rows = []
    for n in order:
        d = data[n]
        g = med(d.get("blk_grants_s", []))
        if base is None and g:
            base = (n, g)
        row = {
            "ranks": n,
            "count_per_rank": d.get("count", ""),
            "blocking_grants_s": "" if g is None else "%.0f" % g,
            "scaling_vs_np%d" % order[0]: "" if not (g and base) else "%.2f" % (g / base[1]),
            "blocking_seconds": "%.3f" % med(d["blk_seconds"]) if d.get("blk_seconds") else "",
            "blocking_hold_us": "%.1f" % med(d["blk_hold_us"]) if d.get("blk_hold_us") else "",
            "blocking_range": "" if not d.get("blk_grants_s") else "%.0f-%.0f" % (
                min(d["blk_grants_s"]), max(d["blk_grants_s"])),
            "nonblocking_grants_s": "%.0f" % med(d["nb_grants_s"]) if d.get("nb_grants_s") else "",
            "nonblocking_attempts_s": "%.0f" % med(d["nb_attempts_s"])
            if d.get("nb_attempts_s") else "",
            "contention_ratio": "%.3f" % med(d["nb_contention"]) if d.get("nb_contention") else "",
            "nonblocking_seconds": "%.3f" % med(d["nb_seconds"]) if d.get("nb_seconds") else "",
            "nonblocking_hold_us": "%.1f" % med(d["nb_hold_us"]) if d.get("nb_hold_us") else "",
            "n": len(d.get("blk_grants_s", [])),
        }
        rows.append(row)
    fields = list(rows[0].keys()) if rows else ["ranks"]
    with open(out, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)
    sc = "scaling_vs_np%d" % order[0] if order else ""
    fmt = "%5s %7s | %10s %7s %6s %8s %13s | %10s %11s %10s %8s %6s | %s"
    print(fmt % ("ranks", "count", "grants/s", "x np%s" % (order[0] if order else ""),
                 "secs", "hold us", "range", "nb grant/s", "nb tries/s", "contention",
                 "nb hold us", "nb s", "n"))
    print("-" * 120)
    for r in rows:
        print(fmt % (r["ranks"], r["count_per_rank"], r["blocking_grants_s"] or "-",
                     r[sc] or "-", r["blocking_seconds"] or "-", r["blocking_hold_us"] or "-",
                     r["blocking_range"] or "-", r["nonblocking_grants_s"] or "-",
                     r["nonblocking_attempts_s"] or "-", r["contention_ratio"] or "-",
                     r["nonblocking_hold_us"] or "-", r["nonblocking_seconds"] or "-", r["n"]))


def cmd_nfs_table(raw, out, target):
    """locks.sh NFS=yes: pairs/s per protocol and lock ranks, the peer's, ratio."""
    target = float(target)
    d = {}
    for r in csv.DictReader(open(raw)):
        for k in ("herd_pairs_s", "host_busy", "ganesha_cores", "lock_us", "peer_pairs_s"):
            if r[k] not in ("", "nan"):
                d.setdefault((r["proto"], r["lock_ranks"], k), []).append(float(r[k]))
    med = lambda p, n, k: statistics.median(d[(p, n, k)]) if (p, n, k) in d else None
    rows, ok = [], True
    print("%-5s %10s | %12s %9s %7s %9s %13s %8s | %s" % ("proto", "lock ranks", "pairs/s",
          "lock us", "ganesha", "host busy", "(range)", "herd/peer", "n"))
    print("-" * 90)
    for proto, label in (("v3", "NLM"), ("v4", "NFSv4")):
        peer = med(proto, "peer", "peer_pairs_s")
        print("%-5s %10s | %12s %9s %7s %9s %13s %8s | %d" % (
            proto, "peer (1)", "-" if peer is None else "%.0f" % peer, "-", "-", "-", "-", "-",
            len(d.get((proto, "peer", "peer_pairs_s"), []))))
        anchored = d.get((proto, "peer-anchor", "peer_pairs_s"), [])
        if anchored:  # the peer holding one more lock: the server's monitor out of the pairs
            print("%-5s %10s | %12.0f %9s %7s %9s %13s %8s | %d" % (
                proto, "peer+held", statistics.median(anchored), "-", "-", "-",
                "%.0f-%.0f" % (min(anchored), max(anchored)), "-", len(anchored)))
        ns = sorted({k[1] for k in d if k[0] == proto and k[1].isdigit()}, key=int)
        alone = (proto, "alone", "herd_pairs_s") in d  # the ratio row: one process, as the peer
        for n in (["alone"] if alone else []) + ns:
            g, cpu, gan, lk = (med(proto, n, k) for k in ("herd_pairs_s", "host_busy", "ganesha_cores",
                                                          "lock_us"))
            xs = d.get((proto, n, "herd_pairs_s"), [])
            ratio = g / peer if g and peer and n in ("1", "alone") else None
            if n == ("alone" if alone else "1"):
                ok = ok and ratio is not None and ratio >= target
            rows.append({"proto": proto, "lock_ranks": n, "herd_pairs_s": "%.0f" % g if g else "",
                         "lock_us": "%.0f" % lk if lk else "",
                         "host_busy": "%.3f" % cpu if cpu is not None else "",
                         "ganesha_cores": "%.3f" % gan if gan is not None else "",
                         "peer_pairs_s": "%.0f" % peer if peer else "",
                         "herd_over_peer": "%.2f" % ratio if ratio else "", "n": len(xs)})
            print("%-5s %10s | %12s %9s %7s %9s %13s %8s | %d" % (
                proto, n, "%.0f" % g if g else "-", "%.0f" % lk if lk else "-",
                "%.2f" % gan if gan is not None else "-", "%.2f" % cpu if cpu is not None else "-",
                "%.0f-%.0f" % (min(xs), max(xs)) if xs else "-",
                "%.2f" % ratio if ratio else "-", len(xs)))
    with open(out, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]) if rows else ["proto"])
        w.writeheader()
        w.writerows(rows)
    print("herd/peer at 1 lock rank (alone: no monitor rank) %s target %.2f: %s" % (
        ">=" if ok else "below", target, "PASS" if ok else "FAIL"))


def main(argv):
    cmds = {"herd": (cmd_herd, 4), "table": (cmd_table, 2), "cpu": (cmd_cpu, 2),
            "nfs-table": (cmd_nfs_table, 3)}
    dispatch(cmds, "herd H5 PHASE NRANKS COUNT | table RAW OUT | cpu H5 PHASE |"
             " nfs-table RAW OUT TARGET", argv)


if __name__ == "__main__":
    main(sys.argv)
