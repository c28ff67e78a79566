#!/usr/bin/python3
"""bench_util.py — helpers for bench/core_vs_fio.sh, and what the other
benches' helpers (lock_util.py, meta_util.py) share: die, text, fio_job and
peer_table.

Subcommands (every rate printed is MiB/s, 1 MiB = 1048576 bytes):

  herd RESULTS.h5 PHASE [EXPECTED_BYTES]
      herd's aggregate throughput of one phase:
      sum(bytes) / (max(t_end) - phase attribute t_start).
  herd-start RESULTS.h5 PHASE
      the Unix time at which the phase started (epoch_unix + t_start).
  fio FIO.json read|write [EXPECTED_BYTES]
      fio's group throughput: io_bytes / runtime (group_reporting: the
      runtime of the slowest job, in ms).
  openssl SPEED.txt [ALGO]
      `openssl speed -evp md5` output: the largest-block column of the
      ALGO row (default md5); openssl's 'k' is 1000 bytes.
  table RAW.csv OUT.csv TARGET
      medians per config of the raw samples, ratio herd/peer, PASS/FAIL
      against TARGET; prints the table and writes OUT.csv.

A measurement that cannot be trusted (errors, short byte count, bad JSON)
makes the subcommand exit 1 with a message on stderr.
"""
import csv
import json
import os
import re
import statistics
import sys

MIB = 1048576.0


def die(msg):
    """One line on stderr, named by the program that runs (bench_util,
    lock_util, meta_util), and exit 1."""
    prog = os.path.splitext(os.path.basename(sys.argv[0]))[0] or "bench_util"
    sys.stderr.write("%s: %s\n" % (prog, msg))
    sys.exit(1)


def text(v):
    """An HDF5 string attribute or field as str."""
    return v.decode() if isinstance(v, bytes) else str(v)


def cmd_herd(path, phase, expected=None):
    try:
        import h5py
    except ImportError:
        die("h5py is missing (apt install python3-h5py)")
    with h5py.File(path, "r") as f:
        grp = f.get("/phases/%s" % phase)
        if grp is None:
            die("%s: no phase %s" % (path, phase))
        status = grp.attrs.get("status", b"")
        if isinstance(status, bytes):
            status = status.decode()
        rows = grp["ranks"][()]
        t_start = float(grp.attrs["t_start"])
    total = int(rows["bytes"].sum())
    errors = int(rows["errors"].sum())
    if status != "ok" or errors:
        die("%s: phase %s status %s, %d errors" % (path, phase, status, errors))
    if expected is not None and total != int(expected):
        die("%s: phase %s moved %d bytes, expected %s" % (path, phase, total, expected))
    secs = float(rows["t_end"].max()) - t_start
    if secs <= 0:
        die("%s: phase %s: non-positive duration" % (path, phase))
    # Where the time went, per row, on stderr (the caller's log).
    for x in rows:
        sys.stderr.write(
            "bench_util: %s rank %d it %d: start +%.4f s end +%.4f s open %.5f io %.4f"
            " fsync %.5f close %.5f md5 %.4f bytes %d\n"
            % (phase, x["rank"], x["iteration"], x["t_start"] - t_start, x["t_end"] - t_start,
               x["t_open"], x["t_io"], x["t_fsync"], x["t_close"], x["t_md5"], x["bytes"]))
    print("%.1f" % (total / secs / MIB))


def cmd_herd_start(path, phase):
    try:
        import h5py
    except ImportError:
        die("h5py is missing (apt install python3-h5py)")
    with h5py.File(path, "r") as f:
        grp = f.get("/phases/%s" % phase)
        if grp is None:
            die("%s: no phase %s" % (path, phase))
        print("%.6f" % (float(f.attrs["epoch_unix"]) + float(grp.attrs["t_start"])))


def fio_job(path):
    """The one grouped job of a fio --output-format=json file (exits 1 on
    anything else). Shared with bench/meta_vs_fio.sh's helper."""
    with open(path) as fh:
        text = fh.read()
    # fio may print notes before the JSON document.
    start = text.find("{")
    if start < 0:
        die("%s: no JSON in fio output" % path)
    try:
        doc = json.loads(text[start:])
    except ValueError as e:
        die("%s: bad JSON: %s" % (path, e))
    jobs = doc.get("jobs", [])
    if len(jobs) != 1:
        die("%s: expected one (grouped) job, got %d" % (path, len(jobs)))
    job = jobs[0]
    if job.get("error", 0):
        die("%s: fio job error %s" % (path, job["error"]))
    return job


def cmd_fio(path, rw, expected=None):
    job = fio_job(path)
    side = job[rw]
    total, runtime_ms = int(side["io_bytes"]), float(side["runtime"])
    if expected is not None and total != int(expected):
        die("%s: fio moved %d bytes, expected %s" % (path, total, expected))
    if runtime_ms <= 0:
        die("%s: fio runtime is 0" % path)
    print("%.1f" % (total / (runtime_ms / 1000.0) / MIB))


def cmd_openssl(path, algo="md5"):
    with open(path) as fh:
        lines = fh.read().splitlines()
    header = [l for l in lines if l.startswith("type")]
    row = [l for l in lines if l.split() and l.split()[0] == algo]
    if not header or not row:
        die("%s: no '%s' row in openssl speed output" % (path, algo))
    # type  16 bytes  64 bytes ... 16384 bytes  ->  sizes; row: md5 123.45k ...
    sizes = [int(s) for s in re.findall(r"(\d+) bytes", header[-1])]
    vals = row[-1].split()[1:]
    if not sizes or len(vals) != len(sizes):
        die("%s: cannot parse openssl speed table" % path)
    best = max(range(len(sizes)), key=lambda i: sizes[i])
    v = vals[best]
    if not v.endswith("k"):
        die("%s: unexpected openssl unit in '%s'" % (path, v))
    print("%.1f" % (float(v[:-1]) * 1000.0 / MIB))


def peer_table(raw, out, target, value="mib_s", unit="MiB/s", digits=1, seconds=None):
    """Medians per config of RAW's samples (columns config, tool and value:
    tool "herd" or the peer's name), the ratio herd/peer and PASS/FAIL
    against TARGET ("herd only" where a config has no peer); prints the
    table and writes OUT. seconds: a column of herd's times to report
    beside (its median)."""
    target = float(target)
    order, samples, peers = [], {}, {}
    with open(raw) as fh:
        for r in csv.DictReader(fh):
            key = r["config"]
            if key not in samples:
                order.append(key)
                samples[key] = {"herd": [], "peer": [], "herd_s": []}
            side = "herd" if r["tool"] == "herd" else "peer"
            if side == "peer":
                peers[key] = r["tool"]
            if r[value]:
                samples[key][side].append(float(r[value]))
                if seconds and side == "herd":
                    samples[key]["herd_s"].append(float(r[seconds]))
    num = "%%.%df" % digits
    rows = []
    for key in order:
        h, p = samples[key]["herd"], samples[key]["peer"]
        hm = statistics.median(h) if h else None
        pm = statistics.median(p) if p else None
        ratio = hm / pm if hm is not None and pm else None
        if key not in peers:
            verdict = "herd only"
        else:
            verdict = "n/a" if ratio is None else ("PASS" if ratio >= target else "FAIL")
        row = {
            "config": key,
            "peer": peers.get(key, "-"),
            "herd_median_" + value: "" if hm is None else num % hm,
            "peer_median_" + value: "" if pm is None else num % pm,
            "ratio": "" if ratio is None else "%.3f" % ratio,
            "target": ">= %.2f" % target if key in peers else "",
            "verdict": verdict,
            "herd_n": len(h), "peer_n": len(p),
            "herd_min_max": "" if not h else "%.0f-%.0f" % (min(h), max(h)),
            "peer_min_max": "" if not p else "%.0f-%.0f" % (min(p), max(p)),
        }
        if seconds:
            hs = samples[key]["herd_s"]
            row["herd_median_seconds"] = "" if not hs else "%.3f" % statistics.median(hs)
        rows.append(row)
    fields = list(rows[0].keys()) if rows else ["config"]
    with open(out, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)
    fmt = "%-22s %-14s %12s %12s %7s %8s %-9s  %s"
    print(fmt % ("config", "peer", "herd " + unit, "peer " + unit, "ratio", "target",
                 "result", "herd range / peer range (n)" + (", herd s" if seconds else "")))
    print("-" * 120)
    for r in rows:
        extra = ", %s s" % (r["herd_median_seconds"] or "-") if seconds else ""
        print(fmt % (r["config"], r["peer"], r["herd_median_" + value] or "-",
                     r["peer_median_" + value] or "-", r["ratio"] or "-", r["target"] or "-",
                     r["verdict"], "%s / %s (%d/%d)%s" % (r["herd_min_max"], r["peer_min_max"] or "-",
                                                         r["herd_n"], r["peer_n"], extra)))
    return rows


def dispatch(cmds, usage, argv):
    """Run argv[1] from cmds ({name: (function, number of arguments)}); a
    wrong command or count is the usage line, a failure one line: exit 1."""
    if len(argv) < 2 or argv[1] not in cmds or len(argv) - 2 != cmds[argv[1]][1]:
        die("usage: " + usage)
    try:
        cmds[argv[1]][0](*argv[2:])
    except (KeyError, OSError, ValueError) as e:
        die("%s: %s" % (argv[1], e))


def cmd_table(raw, out, target):
    return peer_table(raw, out, target)


def main(argv):
    if len(argv) < 2:
        die(__doc__)
    cmd, args = argv[1], argv[2:]
    table = {"herd": (cmd_herd, 2, 3), "herd-start": (cmd_herd_start, 2, 2),
             "fio": (cmd_fio, 2, 3),
             "openssl": (cmd_openssl, 1, 2), "table": (cmd_table, 3, 3)}
    if cmd not in table:
        die("unknown subcommand %s" % cmd)
    fn, lo, hi = table[cmd]
    if not lo <= len(args) <= hi:
        die("%s: wrong number of arguments" % cmd)
    fn(*args)


if __name__ == "__main__":
    main(sys.argv)
