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
  best RAW.csv CONFIG_REGEX TO_CONFIG
      of the peers of the configs whose name matches CONFIG_REGEX, the one
      with the highest median: its samples appended to RAW.csv again as
      config TO_CONFIG (same tool and rounds). The best setting by median,
      not each round's maximum of several (a maximum of noisy draws is
      biased upwards).
  all DIR [FLOOR [GOAL]]
      bench/all.sh's summary: reads DIR/status.tsv (one line per run:
      name, script, OUT, exit status, seconds, part, settings), DIR/env.txt
      and each run's raw samples; prints one table (path, row, herd and
      peer median (min-max), unit, herd/peer, verdict: "ok" >= GOAL
      (1.0), "within floor" >= FLOOR (0.95), "BELOW" under it; SKIP or
      FAILED with the reason for a run that did not measure) and writes
      DIR/summary.csv and DIR/summary.md. Exits 1 when a run failed.

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


def peer_samples(raw, value, seconds=None):
    """[(config, peer tool or None, herd samples, peer samples, herd
    seconds)] of RAW (columns config, tool and value: tool "herd" or the
    peer's name, one peer per config), configs in file order. Empty values
    (a failed run) are left out. seconds: a column of herd's times."""
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
    return [(key, peers.get(key), samples[key]["herd"], samples[key]["peer"],
             samples[key]["herd_s"]) for key in order]


def peer_table(raw, out, target, value="mib_s", unit="MiB/s", digits=1, seconds=None):
    """Medians per config of RAW's samples (peer_samples), the ratio
    herd/peer and PASS/FAIL against TARGET ("herd only" where a config has
    no peer); prints the table and writes OUT. seconds: a column of herd's
    times to report beside (its median)."""
    target = float(target)
    num = "%%.%df" % digits
    rows = []
    peers = {}
    for key, peer, h, p, hs in peer_samples(raw, value, seconds):
        if peer:
            peers[key] = peer
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


# ---- all: one table over bench/all.sh's runs ----------------------------------

# What each script measures on herd's side, for the path column.
ALL_PATHS = {"core_vs_fio": "posix", "nfs_vs_nfscp": "libnfs", "smb_vs_smbclient": "smb",
             "meta_vs_mdtest": "meta", "meta_vs_fio": "meta", "nfs_meta_vs_peer": "libnfs meta",
             "locks": "lock (libnfs)"}
ALL_FIELDS = ["path", "row", "unit", "herd_median", "herd_min", "herd_max", "herd_n",
              "peer", "peer_median", "peer_min", "peer_max", "peer_n", "ratio", "verdict",
              "floor", "goal", "script", "reason"]


class NoResults(Exception):
    """A run that exited 0 but left no samples to read."""


def cmd_best(raw, pattern, to_config):
    want = re.compile(pattern)
    with open(raw) as fh:
        rows = [r for r in csv.DictReader(fh)
                if want.fullmatch(r["config"]) and r["tool"] != "herd" and r["mib_s"]]
    by_tool = {}
    for r in rows:
        by_tool.setdefault(r["tool"], []).append(r)
    if not by_tool:
        die("%s: no peer samples in configs matching %s" % (raw, pattern))
    best = max(by_tool, key=lambda t: statistics.median(float(r["mib_s"]) for r in by_tool[t]))
    with open(raw, "a") as fh:
        for r in by_tool[best]:
            fh.write("%s,%s,%s,%s\n" % (to_config, best, r["round"], r["mib_s"]))


def raw_pairs(path, value):
    """(config, peer tool, herd samples, peer samples) of every config of a
    raw CSV that has a peer (peer_samples)."""
    if not os.path.exists(path):
        raise NoResults("no %s" % path)
    for config, peer, h, p, _ in peer_samples(path, value):
        if peer:
            yield config, peer, h, p


def all_core(out, part):
    for config, peer, h, p in raw_pairs(os.path.join(out, "raw.csv"), "mib_s"):
        yield "%s vs %s" % (config, peer), peer, h, p, "MiB/s"


def all_nfs(out, part):
    for config, peer, h, p in raw_pairs(os.path.join(out, "nfs_vs_nfscp_raw.csv"), "mib_s"):
        m = re.match(r"(write|read)-(\d+M)(?:-(.*))?$", config)
        if not m:
            continue  # posix-*: herd's POSIX backend alone
        rw, size, what = m.groups()
        if what is None:
            label = "%s %s vs %s" % (rw, size, peer)
        elif what.startswith("if"):
            label = "%s %s in flight %s vs the async loop" % (rw, size, what[2:])
        elif what == "default-vs-loop-best":
            label = "%s %s default vs the loop's best window" % (rw, size)
        elif what == "mpirun-vs-singleton":
            label = "%s %s under mpirun vs a singleton start" % (rw, size)
        elif what in ("v4-vs-v3", "v4-if16-vs-v3-if16"):
            label = "%s %s NFSv4 vs NFSv3%s" % (rw, size, " in flight 16" if "if16" in what else "")
        else:
            continue
        yield label, peer, h, p, "MiB/s"


def all_smb(out, part):
    files = [("raw-smbclient.csv", "smbclient"),
             ("raw-smbclient-file.csv", "smbclient into a tmpfs file"),
             ("raw-loop.csv", "libsmbclient loop"),
             ("raw-runtime.csv", "herd as a singleton start"),
             ("raw-bound.csv", "herd bound to a core (mpirun's default)")]
    if part == "loop":  # the second block size: smbclient's rows belong to the first
        files = files[2:]
    elif part == "pinned":  # the same, every client on one CPU (CLIENT_CPUS)
        files = [("raw-loop.csv", "libsmbclient loop, both on one CPU")]
    for name, who in files:
        for config, peer, h, p in raw_pairs(os.path.join(out, name), "mib_s"):
            m = re.match(r"(write|read)-(\d+M)-(.+)$", config)
            rw, size, bs = m.groups() if m else (config, "", "?")
            yield "%s %s bs %s vs %s" % (rw, size, bs, who), peer, h, p, "MiB/s"


def all_meta(out, part):
    for config, peer, h, p in raw_pairs(os.path.join(out, "raw.csv"), "ops_s"):
        yield "%s vs %s" % (config, peer), peer, h, p, "op/s"


def all_locks(out, part):
    path = os.path.join(out, "nfs-raw.csv")
    if not os.path.exists(path):
        raise NoResults("no %s" % path)
    # lock_ranks "alone": 1 lock rank and no monitor rank, one process as
    # the peer is; "1": the same with the monitor rank on the same CPUs.
    runs = {}
    with open(path) as fh:
        for r in csv.DictReader(fh):
            col = "peer_pairs_s" if r["lock_ranks"] == "peer" else "herd_pairs_s"
            if r["lock_ranks"] in ("peer", "alone", "1") and r[col] not in ("", "nan"):
                runs.setdefault((r["proto"], r["lock_ranks"]), []).append(float(r[col]))
    for proto, label in (("v3", "NLM (v3)"), ("v4", "NFSv4")):
        get = lambda who: runs.get((proto, who), [])
        if get("alone") or get("peer"):
            yield ("%s, 1 lock rank, vs nfs_lock_peer" % label, "nfs_lock_peer",
                   get("alone"), get("peer"), "pairs/s")
        if get("1") and get("alone"):
            yield ("%s, 1 lock rank + a monitor rank vs alone" % label, "herd alone",
                   get("1"), get("alone"), "pairs/s")


ALL_COLLECT = {"core_vs_fio": all_core, "nfs_vs_nfscp": all_nfs, "smb_vs_smbclient": all_smb,
               "meta_vs_mdtest": all_meta, "meta_vs_fio": all_meta, "nfs_meta_vs_peer": all_meta,
               "locks": all_locks}


def run_outcome(script, rc, log):
    """(status, reason) of one run from its exit status and its output:
    SKIP when it said SKIP (not root) or exited 2 (a tool missing, or a
    setting it refused), FAILED on any other non-zero exit."""
    try:
        with open(log, errors="replace") as fh:
            lines = [l.rstrip("\n") for l in fh]
    except OSError:
        lines = []
    msgs = [l[len(script) + 2:].strip() for l in lines if l.startswith(script + ": ")]
    skips = [l[5:].strip() for l in lines if l.startswith("SKIP:")]
    if rc == 0 and skips:
        return "SKIP", skips[0]
    if rc == 2:
        missing = [m[2:] for m in msgs if m.startswith("- ")]
        if missing:
            return "SKIP", "missing " + ", ".join(missing)
        return "SKIP", msgs[-1] if msgs else "exit 2 (see %s)" % log
    if rc != 0:
        last = msgs[-1] if msgs else next((l for l in reversed(lines) if l.strip()), "")
        return "FAILED", "exit %d: %s (see %s)" % (rc, last or "no output", log)
    return "ok", msgs[-1] if msgs else ""


def fmt_num(x):
    return "%.0f" % x if x >= 100 else ("%.1f" % x if x >= 10 else "%.2f" % x)


def fmt_side(xs):
    if not xs:
        return "-"
    return "%s (%s-%s)" % (fmt_num(statistics.median(xs)), fmt_num(min(xs)), fmt_num(max(xs)))


def all_row(path, label, peer, h, p, unit, floor, goal, script):
    hm = statistics.median(h) if h else None
    pm = statistics.median(p) if p else None
    row = {"path": path, "row": label, "unit": unit, "herd_n": len(h), "peer_n": len(p),
           "floor": floor, "goal": goal, "script": script, "reason": "", "peer": peer}
    for side, xs, m in (("herd", h, hm), ("peer", p, pm)):
        row[side + "_median"] = "" if m is None else "%.1f" % m
        row[side + "_min"] = "" if not xs else "%.1f" % min(xs)
        row[side + "_max"] = "" if not xs else "%.1f" % max(xs)
    row["herd_cell"], row["peer_cell"] = fmt_side(h), fmt_side(p)
    if hm is None or not pm:
        row["ratio"], row["verdict"] = "", "FAILED"
        row["reason"] = "no %s samples (see the script's logs)" % ("herd" if hm is None else "peer")
    else:
        ratio = hm / pm
        row["ratio"] = "%.3f" % ratio
        row["verdict"] = "ok" if ratio >= goal else ("within floor" if ratio >= floor else "BELOW")
    return row


def cmd_all(alldir, floor="0.95", goal="1.0"):
    floor, goal = float(floor), float(goal)
    env = {}
    if os.path.exists(os.path.join(alldir, "env.txt")):
        with open(os.path.join(alldir, "env.txt")) as fh:
            for line in fh:
                k, _, v = line.partition(":")
                env[k.strip()] = v.strip()
    runs = []
    with open(os.path.join(alldir, "status.tsv")) as fh:
        for f in csv.reader(fh, delimiter="\t"):
            if f:
                runs.append(dict(zip(("name", "script", "out", "rc", "seconds", "part",
                                      "settings"), f + [""] * 7)))
    rows, failed, notes = [], False, []
    for run in runs:
        script, rc = run["script"], int(run["rc"])
        path = ALL_PATHS.get(script, script)
        status, reason = run_outcome(script, rc, os.path.join(run["out"], "run.log"))
        got = []
        if status == "ok":
            try:
                got = [all_row(path, label, peer, h, p, unit, floor, goal, script)
                       for label, peer, h, p, unit in ALL_COLLECT[script](run["out"], run["part"])]
                if not got:
                    status, reason = "FAILED", "no herd-vs-peer rows in its results"
            except (NoResults, OSError, KeyError, ValueError) as e:
                status, reason = "FAILED", "exit 0 but %s (%s; see %s/run.log)" % (
                    e, reason or "no message", run["out"])
        if status != "ok":
            label = "%s.sh" % script + (" (%s)" % run["name"].split("/", 1)[1]
                                         if "/" in run["name"] else "")
            got = [{"path": path, "row": label, "unit": "", "herd_cell": "-",
                    "peer_cell": "-", "ratio": "", "verdict": status, "reason": reason,
                    "script": script, "floor": floor, "goal": goal}]
        failed = failed or any(r["verdict"] == "FAILED" for r in got)
        rows += got
        notes.append("%s %s s (%s)" % (run["name"], run["seconds"], run["settings"] or "defaults"))

    cols = [("path", "path"), ("row", "row"), ("herd_cell", "herd median (min-max)"),
            ("peer_cell", "peer median (min-max)"), ("unit", "unit"), ("ratio", "herd/peer"),
            ("verdict", "verdict")]

    def cell(r, k):
        v = r.get(k, "")
        if k == "verdict" and r.get("reason") and v in ("SKIP", "FAILED"):
            v = "%s: %s" % (v, r["reason"])
        return str(v) if v != "" else "-"

    head = ["date (UTC) %s" % env.get("date", "?"), "kernel %s" % env.get("kernel", "?"),
            "%s CPUs (%s)" % (env.get("nproc", "?"), env.get("cpu", "?")),
            "herd %s" % env.get("git", "?"),
            "QUICK=%s, floor %.2f, goal %.2f" % (env.get("quick", "?"), floor, goal)]
    widths = [max([len(t)] + [len(cell(r, k)) for r in rows]) for k, t in cols[:-1]]
    fmt = "  ".join("%%-%ds" % w for w in widths) + "  %s"
    print("herd vs plain peers (bench/all.sh): " + "; ".join(head))
    print(fmt % tuple(t for _, t in cols))
    print("-" * (sum(widths) + 2 * len(widths) + 12))
    for r in rows:
        print(fmt % tuple(cell(r, k) for k, _ in cols))
    print("runs: " + "; ".join(notes))

    with open(os.path.join(alldir, "summary.csv"), "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=ALL_FIELDS, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    with open(os.path.join(alldir, "summary.md"), "w") as fh:
        fh.write("### herd vs plain peers: bench/all.sh, %s\n\n" % env.get("date", "?"))
        fh.write("- date (UTC): %s\n- kernel (`uname -r`): %s\n- CPUs: %s x %s\n"
                 "- herd (`git describe --always --dirty`): %s\n"
                 "- QUICK=%s; floor %.2f, goal %.2f: \"ok\" >= goal, \"within floor\" >= floor,"
                 " \"BELOW\" under it\n\n" % (
                     env.get("date", "?"), env.get("kernel", "?"), env.get("nproc", "?"),
                     env.get("cpu", "?"), env.get("git", "?"), env.get("quick", "?"), floor, goal))
        fh.write("| %s |\n|%s\n" % (" | ".join(t for _, t in cols), "---|" * len(cols)))
        for r in rows:
            fh.write("| %s |\n" % " | ".join(cell(r, k).replace("|", "\\|") for k, _ in cols))
        fh.write("\nRuns (seconds, settings): %s.\n" % "; ".join(notes).replace("|", "\\|"))
    print("summary: %s/summary.csv, %s/summary.md" % (alldir, alldir))
    sys.exit(1 if failed else 0)


def main(argv):
    if len(argv) < 2:
        die(__doc__)
    cmd, args = argv[1], argv[2:]
    table = {"herd": (cmd_herd, 2, 3), "herd-start": (cmd_herd_start, 2, 2),
             "fio": (cmd_fio, 2, 3),
             "openssl": (cmd_openssl, 1, 2), "table": (cmd_table, 3, 3),
             "best": (cmd_best, 3, 3),
             "all": (cmd_all, 1, 3)}
    if cmd not in table:
        die("unknown subcommand %s" % cmd)
    fn, lo, hi = table[cmd]
    if not lo <= len(args) <= hi:
        die("%s: wrong number of arguments" % cmd)
    fn(*args)


if __name__ == "__main__":
    main(sys.argv)
