#!/usr/bin/python3
"""rate_util.py — helpers for bench/rate_accuracy.sh and bench/rate_vs_fio.sh:
one sample of an open-loop run as a CSV row, and the tables of medians.

Subcommands:

  herd SUMMARY.json PHASE
      the phase's `pace` object of herd's --json summary (docs/
      results-format.md, "Offered load"), as the sample fields below, comma
      separated (exits 1 when the phase is missing, had errors or no pace).
  peer OUTPUT
      the KEY=VALUE line of bench/pace_peer.c, as the same fields.
  fio FIO.json
      fio's one job (--output-format=json, a read with rate_iops): its
      rate_iops as offered, read.iops as achieved, total_ios as calls,
      clat_ns percentiles 50 and 99 as service p50/p99 (the fields fio has
      no figure for are empty).
  accuracy RAW.csv OUT.csv
      rate_accuracy.sh's table: per config and tool, medians and min-max of
      achieved/offered, the share of the calls due sent, late calls, lag
      (p50, p99, max), service (p50, p99), herd_limited (runs of n), load
      average; verdicts on the rate (|achieved/offered - 1| within RATE_TOL,
      with Poisson arrivals within 2/sqrt(calls) if that is more: n Poisson
      arrivals are off by ~1/sqrt(n) by chance; and 1 - share within
      RATE_TOL) and the jitter (lag p99 < JITTER_US); herd's lag p99 over
      the peer's. Prints the table and writes OUT.csv.
  vsfio RAW.csv OUT.csv
      rate_vs_fio.sh's table: per config, herd's and fio's medians (min-max)
      of the achieved rate, achieved/offered and service p50/p99 (fio: clat),
      herd/fio of each; herd's lag and response p99 beside, and the timer
      probe's lag max beside each tool's runs.

Sample fields (times in microseconds): offered_per_s achieved_per_s
achieved_over_offered achieved_share calls due late lag_p50_us lag_p99_us
lag_max_us service_p50_us service_p99_us response_p50_us response_p99_us
herd_limited call_p50_us call_p99_us (herd: the latency of the phase's main
call alone, its `ops` entry's latency_s: the pread without herd's own
bookkeeping around it, which service includes).
"""
import csv
import json
import math
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_util import die, dispatch, fio_job  # noqa: E402

FIELDS = ["offered_per_s", "achieved_per_s", "achieved_over_offered", "achieved_share",
          "calls", "due", "late", "lag_p50_us", "lag_p99_us", "lag_max_us",
          "service_p50_us", "service_p99_us", "response_p50_us", "response_p99_us",
          "herd_limited", "call_p50_us", "call_p99_us"]


def fmt(v, digits=6):
    if v is None or v == "":
        return ""
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, int):
        return str(v)
    return ("%%.%dg" % digits) % v


def us(seconds):
    return None if seconds is None else seconds * 1e6


def emit(d):
    print(",".join(fmt(d.get(k)) for k in FIELDS))


def cmd_herd(path, phase):
    with open(path) as fh:
        doc = json.load(fh)
    ph = [p for p in doc.get("phases", []) if p.get("name") == phase]
    if not ph:
        die("%s: no phase %s" % (path, phase))
    ph = ph[0]
    if ph.get("errors"):
        die("%s: phase %s had %s errors" % (path, phase, ph["errors"]))
    pace = ph.get("pace")
    if not pace:
        die("%s: phase %s has no pace (no rate?)" % (path, phase))
    off, ach = pace["offered_per_s"], pace["achieved_per_s"]
    call = [o for o in ph.get("ops", []) if o.get("op") == ph.get("main_op")]
    lat = call[0].get("latency_s") or {} if call else {}
    emit({"call_p50_us": us(lat.get("p50")), "call_p99_us": us(lat.get("p99")),"offered_per_s": off, "achieved_per_s": ach,
          "achieved_over_offered": ach / off if off and ach is not None else None,
          "achieved_share": pace["achieved_share"], "calls": int(pace["calls"]),
          "due": int(pace["due"]), "late": int(pace["late"]),
          "lag_p50_us": us(pace["lag_p50_s"]), "lag_p99_us": us(pace["lag_p99_s"]),
          "lag_max_us": us(pace["lag_max_s"]),
          "service_p50_us": us(pace["service_p50_s"]), "service_p99_us": us(pace["service_p99_s"]),
          "response_p50_us": us(pace["response_p50_s"]),
          "response_p99_us": us(pace["response_p99_s"]),
          "herd_limited": bool(pace["herd_limited"])})


def cmd_peer(path):
    with open(path) as fh:
        lines = [l for l in fh.read().splitlines() if "offered_per_s=" in l]
    if not lines:
        die("%s: no pace_peer line" % path)
    kv = dict(x.split("=", 1) for x in lines[-1].split())
    off, ach = float(kv["offered_per_s"]), float(kv["achieved_per_s"])
    calls, due = int(kv["calls"]), int(kv["due"])
    emit({"offered_per_s": off, "achieved_per_s": ach, "achieved_over_offered": ach / off,
          "achieved_share": calls / due if due else None, "calls": calls, "due": due,
          "late": int(kv["late"]),
          "lag_p50_us": us(float(kv["lag_p50_s"])), "lag_p99_us": us(float(kv["lag_p99_s"])),
          "lag_max_us": us(float(kv["lag_max_s"])),
          "service_p50_us": us(float(kv["service_p50_s"])),
          "service_p99_us": us(float(kv["service_p99_s"]))})


def cmd_fio(path):
    job = fio_job(path)
    rd = job["read"]
    off = float(job.get("job options", {}).get("rate_iops", 0) or 0)
    ach = float(rd["iops"])
    pct = rd.get("clat_ns", {}).get("percentile", {})
    if "50.000000" not in pct or "99.000000" not in pct:
        die("%s: no clat percentiles" % path)
    emit({"offered_per_s": off or None, "achieved_per_s": ach,
          "achieved_over_offered": ach / off if off else None,
          "calls": int(rd["total_ios"]),
          "service_p50_us": pct["50.000000"] / 1000.0, "service_p99_us": pct["99.000000"] / 1000.0})


# ---- tables ------------------------------------------------------------------

def samples(raw):
    """{config: {tool: {field: [floats]}}} and the configs and tools in file order."""
    data, order, tools = {}, [], {}
    with open(raw) as fh:
        for r in csv.DictReader(fh):
            c, t = r["config"], r["tool"]
            if c not in data:
                data[c] = {}
                order.append(c)
                tools[c] = []
            if t not in data[c]:
                data[c][t] = {}
                tools[c].append(t)
            for k, v in r.items():
                if k in ("config", "tool", "round") or v in ("", None):
                    continue
                try:
                    data[c][t].setdefault(k, []).append(float(v))
                except ValueError:
                    pass
    return data, order, tools


def med(d, k):
    xs = d.get(k, [])
    return statistics.median(xs) if xs else None


def rng(d, k, spec):
    xs = d.get(k, [])
    return "" if not xs else (spec + "-" + spec) % (min(xs), max(xs))


def cell(d, k, spec):
    m = med(d, k)
    return "-" if m is None else (spec % m) + (" (%s)" % rng(d, k, spec) if len(d.get(k, [])) > 1 else "")


def ratio(a, b):
    return None if a is None or not b else a / b


def write_csv(out, rows):
    fields = []
    for r in rows:
        fields += [k for k in r if k not in fields]
    with open(out, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)


def flat(d, keys, spec="%.4g"):
    """median, min and max of each key as CSV columns."""
    row = {}
    for k in keys:
        xs = d.get(k, [])
        row[k + "_median"] = "" if not xs else spec % statistics.median(xs)
        row[k + "_min"] = "" if not xs else spec % min(xs)
        row[k + "_max"] = "" if not xs else spec % max(xs)
    return row


def cmd_accuracy(raw, out):
    tol = float(os.environ.get("RATE_TOL", "0.02"))
    jit = float(os.environ.get("JITTER_US", "1000"))
    data, order, tools = samples(raw)
    keys = ["offered_per_s", "achieved_per_s", "achieved_over_offered", "achieved_share", "calls",
            "due", "late", "lag_p50_us", "lag_p99_us", "lag_max_us", "service_p50_us",
            "service_p99_us", "response_p99_us", "herd_limited", "server_cores",
            "probe_lag_p99_us", "probe_lag_max_us", "load1"]
    rows = []
    line = "%-26s %-5s %-24s %-24s %-16s %-12s %-20s %-22s %-20s %-14s %-4s %-5s %-5s %-8s %s"
    print(line % (
        "config", "tool", "achieved/offered", "share of calls due", "late", "lag p50 us",
        "lag p99 us", "lag max us", "service p99 us", "probe p99/max", "lim", "srv", "load",
        "rate", "jitter (lag p99 herd/peer)"))
    print("-" * 210)
    for c in order:
        peer_p99 = None
        for t in tools[c]:
            if t != "herd":
                peer_p99 = med(data[c][t], "lag_p99_us")
        for t in tools[c]:
            d = data[c][t]
            n = len(d.get("achieved_per_s", []))
            ao, sh = med(d, "achieved_over_offered"), med(d, "achieved_share")
            lag99 = med(d, "lag_p99_us")
            # Poisson arrivals: n calls are off by ~1/sqrt(n) by chance; allow 2 sigma
            calls = med(d, "calls")
            tol_ao = tol
            if "poisson" in c and calls:
                tol_ao = max(tol, 2 / math.sqrt(calls))
            rate_ok = None if ao is None or sh is None else (abs(ao - 1) <= tol_ao and 1 - sh <= tol)
            jit_ok = None if lag99 is None else lag99 < jit
            lim = d.get("herd_limited", [])
            lim_s = "%d/%d" % (sum(1 for x in lim if x), len(lim)) if t == "herd" and lim else "-"
            r = ratio(lag99, peer_p99) if t == "herd" else None
            row = {"config": c, "tool": t, "n": n}
            row.update(flat(d, keys))
            row["herd_limited_runs"] = lim_s
            row["rate_verdict"] = "" if rate_ok is None else ("ok" if rate_ok else "OFF")
            row["jitter_verdict"] = "" if jit_ok is None else ("ok" if jit_ok else "OVER")
            row["lag_p99_herd_over_peer"] = "" if r is None else "%.3f" % r
            rows.append(row)
            srv = med(d, "server_cores")
            print(line % (
                c, t, cell(d, "achieved_over_offered", "%.4f"), cell(d, "achieved_share", "%.4f"),
                cell(d, "late", "%.0f"), cell(d, "lag_p50_us", "%.0f"), cell(d, "lag_p99_us", "%.0f"),
                cell(d, "lag_max_us", "%.0f"), cell(d, "service_p99_us", "%.0f"),
                "%s/%s" % tuple("-" if med(d, k) is None else "%.0f" % med(d, k)
                                for k in ("probe_lag_p99_us", "probe_lag_max_us")), lim_s,
                "-" if srv is None else "%.2f" % srv,
                "-" if med(d, "load1") is None else "%.2f" % med(d, "load1"),
                (row["rate_verdict"] or "-") + " n=%d" % n,
                (row["jitter_verdict"] or "-") + ("" if r is None else " x%.2f" % r)))
    write_csv(out, rows)
    print("")
    print("probe p99/max: the timer probe's lag beside the run (us); lim: runs herd flagged"
          " herd_limited; srv: ganesha's CPU (cores) over the herd run")
    print("rate ok: |achieved/offered - 1| <= %.0f%% (poisson: or 2/sqrt(calls), the arrivals'"
          " own spread)" % (tol * 100))
    print("         and the share of the calls due >= %.0f%%; jitter ok: lag p99 < %.0f us"
          % ((1 - tol) * 100, jit))


def cmd_vsfio(raw, out):
    data, order, tools = samples(raw)
    rows = []
    hdr = ("%-22s %-24s %-24s %-6s %-18s %-18s %-6s %-20s %-20s %-6s %-14s %-18s %-20s"
           " %-14s %s")
    print(hdr % ("config", "herd achieved/s", "fio achieved/s", "h/f", "herd service p50",
                 "fio clat p50", "h/f", "herd service p99", "fio clat p99", "h/f",
                 "herd call p50/p99", "herd lag p99", "herd response p99", "probe max h, f",
                 "achieved/offered herd, fio; load"))
    print("-" * 230)
    for c in order:
        h, f = data[c].get("herd", {}), data[c].get("fio", {})
        row = {"config": c, "herd_n": len(h.get("achieved_per_s", [])),
               "fio_n": len(f.get("achieved_per_s", []))}
        out_cells = [c]
        for k in ("achieved_per_s", "service_p50_us", "service_p99_us"):
            spec = "%.1f" if k == "achieved_per_s" else "%.2f"
            hm, fm = med(h, k), med(f, k)
            r = ratio(hm, fm)
            row["herd_" + k] = "" if hm is None else spec % hm
            row["herd_" + k + "_min_max"] = rng(h, k, spec)
            row["fio_" + k] = "" if fm is None else spec % fm
            row["fio_" + k + "_min_max"] = rng(f, k, spec)
            row["ratio_" + k] = "" if r is None else "%.3f" % r
            out_cells += [cell(h, k, spec), cell(f, k, spec), "-" if r is None else "%.3f" % r]
        for k in ("achieved_over_offered", "achieved_share", "late", "lag_p50_us", "lag_p99_us",
                  "lag_max_us", "response_p50_us", "response_p99_us", "call_p50_us",
                  "call_p99_us", "load1"):
            hm = med(h, k)
            row["herd_" + k] = "" if hm is None else "%.4g" % hm
            row["herd_" + k + "_min_max"] = rng(h, k, "%.4g")
        for k in ("probe_lag_p99_us", "probe_lag_max_us"):
            for side, d in (("herd", h), ("fio", f)):
                m = med(d, k)
                row[side + "_" + k] = "" if m is None else "%.4g" % m
                row[side + "_" + k + "_min_max"] = rng(d, k, "%.4g")
        fm = med(f, "achieved_over_offered")
        row["fio_achieved_over_offered"] = "" if fm is None else "%.4f" % fm
        row["fio_achieved_over_offered_min_max"] = rng(f, "achieved_over_offered", "%.4f")
        fl = med(f, "load1")
        row["fio_load1"] = "" if fl is None else "%.2f" % fl
        rows.append(row)
        ho = med(h, "achieved_over_offered")
        loads = (h.get("load1", []) + f.get("load1", []))
        pm = ["-" if med(d, "probe_lag_max_us") is None else "%.0f" % med(d, "probe_lag_max_us")
              for d in (h, f)]
        print(hdr % tuple(out_cells + [
            "%s/%s" % tuple("-" if med(h, k) is None else "%.1f" % med(h, k)
                            for k in ("call_p50_us", "call_p99_us")),
            cell(h, "lag_p99_us", "%.0f"), cell(h, "response_p99_us", "%.0f"),
            "%s, %s" % tuple(pm),
            "%s, %s; %s" % ("-" if ho is None else "%.4f" % ho, "-" if fm is None else "%.4f" % fm,
                            "-" if not loads else "%.2f" % statistics.median(loads))]))
    write_csv(out, rows)


def main(argv):
    cmds = {"herd": (cmd_herd, 2), "peer": (cmd_peer, 1), "fio": (cmd_fio, 1),
            "accuracy": (cmd_accuracy, 2), "vsfio": (cmd_vsfio, 2)}
    dispatch(cmds, "herd JSON PHASE | peer OUTPUT | fio JSON | accuracy RAW OUT | vsfio RAW OUT",
             argv)


if __name__ == "__main__":
    main(sys.argv)
