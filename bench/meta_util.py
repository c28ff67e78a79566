#!/usr/bin/python3
"""meta_util.py — helpers for bench/meta_vs_fio.sh and meta_vs_mdtest.sh
(subcommands in main's table). Rates are operations per second."""
import sys

import bench_util  # fio's JSON and the table, shared with core_vs_fio.sh (PYTHONPATH=bench/)
from bench_util import die, dispatch, text as s


# herd RESULTS.h5 NRANKS FILES PASSES: prints, for create stat rename
# unlink, "rate:seconds:in_op" where rate = count(op) / (max(t_end) - phase
# t_start) and in_op = mean seconds per rank spent inside the op's calls.
# stat is PASSES phases stat1..statN: their counts over the sum of their spans.
def cmd_herd(path, nranks, files, passes):
    import h5py
    nranks, files, passes = int(nranks), int(files), int(passes)
    want = [("create", "open", ["create"]),
            ("stat", "stat", ["stat%d" % i for i in range(1, passes + 1)]),
            ("rename", "rename", ["rename"]), ("unlink", "unlink", ["unlink"])]
    out = []
    with h5py.File(path, "r") as f:
        for step, op, phases in want:
            tot_count, tot_secs, tot_in = 0, 0.0, 0.0
            for phase in phases:
                c, sec, i = herd_phase(f, path, phase, op, nranks * files)
                tot_count, tot_secs, tot_in = tot_count + c, tot_secs + sec, tot_in + i
            out.append("%.1f:%.4f:%.4f" % (tot_count / tot_secs, tot_secs, tot_in / nranks))
    print(" ".join(out))


def herd_phase(f, path, phase, op, expected):
    """One phase: (count of op calls, max(t_end) - t_start, seconds in op calls)."""
    g = f.get("/phases/%s" % phase)
    if g is None:
        die("%s: no phase %s" % (path, phase))
    status = s(g.attrs.get("status", ""))
    rows = g["ranks"][()]
    errors = int(rows["errors"].sum())
    if status != "ok" or errors:
        die("%s: phase %s status %s, %d errors" % (path, phase, status, errors))
    t0 = float(g.attrs["t_start"])
    secs = float(rows["t_end"].max()) - t0
    ops = g["ops"][()]
    count, in_op = 0, 0.0
    per = {}
    for r in ops:
        name = s(r["op"])
        per.setdefault(name, [0, 0.0])
        per[name][0] += int(r["count"])
        per[name][1] += float(r["seconds"])
        if name == op:
            count += int(r["count"])
            in_op += float(r["seconds"])
    if count != expected:
        die("%s: phase %s: %d %s calls, expected %d" % (path, phase, count, op,
                                                      expected))
    if secs <= 0:
        die("%s: phase %s: non-positive duration" % (path, phase))
    sys.stderr.write("meta_util: %s: %.4f s (elapsed attr %.4f), %s\n" % (
        phase, secs, float(g.attrs["elapsed"]),
        ", ".join("%s %d calls %.4f s" % (k, v[0], v[1]) for k, v in per.items())))
    for x in rows:
        sys.stderr.write("meta_util:   rank %d start +%.4f end +%.4f ops %d\n" % (
            x["rank"], x["t_start"] - t0, x["t_end"] - t0, x["ops"]))
    return count, secs, in_op


# fio FIO.json DDIR EXPECTED NJOBS: "rate:seconds:in_op"; rate = total_ios /
# runtime (group_reporting: the slowest job's runtime, ms); in_op = mean
# seconds per job inside the engine's call (clat: the engine times each
# open/stat/unlink itself).
def cmd_fio(path, ddir, expected, njobs):
    job = bench_util.fio_job(path)
    side = job[ddir]
    ios, runtime_ms = int(side["total_ios"]), float(side["runtime"])
    if ios != int(expected):
        die("%s: fio did %d files, expected %s" % (path, ios, expected))
    if runtime_ms <= 0:
        die("%s: fio runtime is 0" % path)
    clat = side.get("clat_ns", {})
    in_op = float(clat.get("mean", 0.0)) * int(clat.get("N", 0)) / 1e9 / int(njobs)
    sys.stderr.write("meta_util: fio %s: %d files, runtime %d ms, iops %.1f, clat mean %.0f ns\n"
                     % (ddir, ios, runtime_ms, float(side["iops"]), float(clat.get("mean", 0))))
    print("%.1f:%.4f:%.4f" % (ios / (runtime_ms / 1000.0), runtime_ms / 1000.0, in_op))


# prelookup MNT NRANKS FILES: stat every name herd's create phase will
# make (they do not exist yet), so that the kernel caches the misses as
# negative dentries, as fio's job setup does for its names before its clock
# starts (fio stats each file to learn its type).
def cmd_prelookup(mnt, nranks, files):
    import os
    found = 0
    for r in range(int(nranks)):
        d = "%s/herd-bench/m/r%06d/a/d0000/" % (mnt, r)
        for i in range(int(files)):
            try:
                os.stat("%sf%06d" % (d, i))
                found += 1
            except FileNotFoundError:
                pass
    if found:
        die("prelookup: %d of the names already exist" % found)


# steps RESULTS.h5 PHASE EXPECTED: herd's items/s of the create, stat and
# unlink steps of one meta phase (op_summary's items_per_s of open, stat,
# unlink), each step EXPECTED items, the phase without errors.
def cmd_steps(path, phase, expected):
    import h5py
    with h5py.File(path, "r") as f:
        g = f.get("/phases/%s" % phase)
        if g is None or "op_summary" not in g:
            die("%s: no phase %s with an op_summary" % (path, phase))
        if s(g.attrs.get("status", "")) != "ok":
            die("%s: phase %s status %s" % (path, phase, s(g.attrs.get("status", ""))))
        ops = {s(r["op"]): r for r in g["op_summary"][()]}
        out = []
        for op in ("open", "stat", "unlink"):
            if op not in ops or int(ops[op]["items"]) != int(expected):
                die("%s: %s step: %s items, expected %s" % (
                    path, op, ops[op]["items"] if op in ops else "no", expected))
            out.append("%.1f" % float(ops[op]["items_per_s"]))
    print(" ".join(out))


# mdtest LOG: its SUMMARY rate table's Mean of File creation, File stat,
# File removal (items per second).
def cmd_mdtest(path):
    want = {"File creation": None, "File stat": None, "File removal": None}
    with open(path) as fh:
        for line in fh:
            for name in want:
                if line.strip().startswith(name + " "):
                    cols = line.split()
                    want[name] = float(cols[-2])  # Max Min Mean StdDev: the mean
    if None in want.values():
        die("%s: no SUMMARY rate line for %s" % (
            path, ", ".join(k for k, v in want.items() if v is None)))
    print(" ".join("%.1f" % want[k] for k in ("File creation", "File stat", "File removal")))


def cmd_table(raw, out, target):
    with open(raw) as fh:  # meta_vs_fio's samples carry herd's seconds, mdtest's do not
        timed = "seconds" in fh.readline().strip().split(",")
    return bench_util.peer_table(raw, out, target, value="ops_s", unit="op/s", digits=0,
                                 seconds="seconds" if timed else None)


def main(argv):
    cmds = {"herd": (cmd_herd, 4), "fio": (cmd_fio, 4), "table": (cmd_table, 3),
            "prelookup": (cmd_prelookup, 3), "steps": (cmd_steps, 3), "mdtest": (cmd_mdtest, 1)}
    dispatch(cmds, "herd H5 NRANKS FILES PASSES | fio JSON DDIR EXPECTED NJOBS |"
             " table RAW OUT TARGET | prelookup MNT NRANKS FILES | steps H5 PHASE EXPECTED |"
             " mdtest LOG", argv)


if __name__ == "__main__":
    main(sys.argv)
