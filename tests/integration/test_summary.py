"""The end-of-run summary: --json against the HDF5 file, the printed table's
legend, meta items/s, top errno, no rate for a phase whose every call
failed, and the live progress of all ranks in a batch log.

1. A clean run (write with 3 iterations, read, meta, storm) and a faulty
   one (fault backend: write=ENOSPC@0.5, and a storm on a missing file)
   both with --json: every number of the JSON equals the results file's
   (summary_* attributes, op_summary, errors table, ranks rows).
2. The table: units and legend; meta items/s per step equal the items of
   the ranks' step records over that step's time (meta_steps); the errors column names the top
   errno; the all-failed storm prints '-' for MiB/s and calls/s.
   Every figure of a table row is the stored one (summary_* attributes,
   printed rounding), '-' where the file holds NaN: an idle phase, whose
   ranks did no work, has no times.
3. --json to a bad path: one line, exit 2, nothing written to the target.
4. Progress on stderr (not a terminal): one closing line per phase with all
   ranks' bytes, equal to the phase's bytes in the file.
"""
import json
import math
import re

import h5py
import pytest

from conftest import REPO_DIR, describe, herd_cmd, herd_run, write_job

NRANKS = 2


def text(v):
    return v.decode() if isinstance(v, bytes) else str(v)


def same(a, b, what):
    """JSON null is NaN; numbers must be equal (doubles round-trip)."""
    if a is None:
        assert b is None or math.isnan(float(b)), f"{what}: json null, h5 {b}"
    else:
        assert float(a) == pytest.approx(float(b), rel=1e-12, abs=0), f"{what}: {a} != {b}"


@pytest.fixture(scope="module")
def runs(herd_bin, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("summary")
    target = tmp / "target"
    target.mkdir()
    clean = write_job(tmp / "clean.ini", {"target": target, "fsync": "no"}, [
        ("w", {"kind": "write", "file_size": "4M", "block_size": "256K", "iterations": "3"}),
        ("r", {"kind": "read", "file_size": "4M", "block_size": "256K"}),
        ("m", {"kind": "meta", "files": "120", "dirs": "3", "file_size": "0"}),
        ("sw", {"kind": "write", "sharing": "shared", "file_size": "1M", "fileset": "one"}),
        ("s", {"kind": "storm", "sharing": "shared", "fileset": "one", "count": "40"}),
    ])
    faulty = write_job(tmp / "faulty.ini",
                       {"target": target, "fsync": "no", "backend": "fault"}, [
        ("bad", {"kind": "write", "faults": "write=ENOSPC@0.5", "file_size": "4M",
                 "block_size": "64K", "iterations": "4"}),
        ("gone", {"kind": "storm", "fileset": "nothere", "count": "30"}),
    ])
    out = {}
    for name, job, want in (("clean", clean, 0), ("faulty", faulty, 3)):
        h5, js = tmp / f"{name}.h5", tmp / f"{name} \u00e9.json"
        proc = herd_run(herd_bin, NRANKS, job, h5, "--json", js)
        assert proc.returncode == want, describe(proc)
        assert not (tmp / f"{name} \u00e9.json.tmp").exists()
        out[name] = (h5, json.loads(js.read_text()), proc)
    return out


def check_json_against_h5(h5, doc):
    with h5py.File(h5, "r") as f:
        assert doc["schema_version"] == 1
        assert doc["run_id"] == text(f.attrs["run_id"])
        assert doc["status"] == text(f.attrs["status"])
        assert doc["exit_code"] == int(f.attrs["exit_code"])
        assert doc["herd_version"] == text(f.attrs["version"])
        shared = int(f.attrs["monitor_client_ranks"])  # -1: no monitor, or its host not known
        assert doc["monitor_client_ranks"] == (shared if shared >= 0 else None)
        names = sorted(f["phases"], key=lambda n: int(f["phases"][n].attrs["index"]))
        assert [p["name"] for p in doc["phases"]] == names
        for p in doc["phases"]:
            g = f["phases"][p["name"]]
            a = g.attrs
            assert p["kind"] == text(a["kind"]) and p["status"] == text(a["status"])
            for key, attr in (("rows", "summary_rows"), ("ranks", "summary_ranks"),
                              ("bytes", "summary_bytes"), ("calls", "summary_ops"),
                              ("errors", "summary_errors"),
                              ("verify_failures", "summary_verify_failures"),
                              ("violations", "summary_violations"),
                              ("grants", "summary_grants"), ("contended", "summary_contended"),
                              ("stuck", "summary_stuck")):
                assert p[key] == int(a[attr]), (p["name"], key)
            for key, attr in (("min", "summary_t_min"), ("median", "summary_t_median"),
                              ("max", "summary_t_max"), ("first_done", "summary_first_done"),
                              ("last_done", "summary_last_done")):
                same(p["seconds"][key], a[attr], f"{p['name']} {key}")
            if p["all_calls_failed"]:
                assert p["mib_per_s"] is None and p["ops_per_s"] is None
            else:
                same(p["mib_per_s"], a["summary_mib_per_s"], "mib_per_s")
                same(p["ops_per_s"], a["summary_ops_per_s"], "ops_per_s")
            for key in ("block_size", "file_size", "iterations"):
                want = int(a[key])
                got = p["params"][key] if key in p["params"] else p[key]
                assert got == want, (p["name"], key)
            assert p["params"]["backend"] == text(a["backend"])
            # main/s: the main call's own rate, beside ops_per_s (every call)
            main = [o for o in p["ops"] if o["op"] == p["main_op"]]
            if p["all_calls_failed"] or not main:
                assert p["main_ops_per_s"] is None, p["name"]
            else:
                same(p["main_ops_per_s"], main[0]["ops_per_s"], "main_ops_per_s")
            # Per op: op_summary's row, and calls/errors from the raw tables.
            table = {text(r["op"]): r for r in g["op_summary"][()]}
            assert {o["op"] for o in p["ops"]} == set(table), p["name"]
            errs = g["errors"][()] if "errors" in g else []
            for o in p["ops"]:
                r = table[o["op"]]
                assert o["calls"] == int(r["calls"])
                same(o["seconds"], r["seconds"], "seconds")
                same(o["ops_per_s"], r["ops_per_s"], "ops_per_s")
                for q in ("p50", "p90", "p99", "max"):
                    same(o["latency_s"][q], r[f"{q}_s"], f"{o['op']} {q}")
                raw = sum(int(c) for op, c in
                          zip(g["ops"]["op"], g["ops"]["count"]) if text(op) == o["op"])
                assert o["calls"] == raw
                assert o["errors"] == sum(int(e["count"]) for e in errs
                                          if text(e["op"]) == o["op"])
            # Errors by (op, errno, status), summed over ranks.
            want = {}
            for e in errs:
                k = (text(e["op"]), int(e["errno"]), text(e["status"]) if "status" in
                     e.dtype.names else "")
                want[k] = want.get(k, 0) + int(e["count"])
            got = {(e["op"], e["errno"], e["status"]): e["count"] for e in p["errors_by_kind"]}
            assert got == want, p["name"]
            counts = [e["count"] for e in p["errors_by_kind"]]
            assert counts == sorted(counts, reverse=True)
            # IOR-style per-iteration bandwidth from the ranks rows.
            rows = g["ranks"][()]
            iters = int(a["iterations"])
            if iters > 1:
                bws = []
                for i in range(iters):
                    it = rows[(rows["iteration"] == i) & (rows["ops"] > 0)]
                    if len(it):
                        span = it["t_end"].max() - it["t_start"].min()
                        bws.append(it["bytes"].sum() / 1048576.0 / span)
                mean = sum(bws) / len(bws)
                sd = math.sqrt(sum((b - mean) ** 2 for b in bws) / len(bws))
                assert p["iterations_mib_per_s"]["mean"] == pytest.approx(mean, rel=1e-9)
                assert p["iterations_mib_per_s"]["stddev"] == pytest.approx(sd, rel=1e-6,
                                                                             abs=1e-6)
            else:
                assert p["iterations_mib_per_s"] is None


def test_json_matches_h5_clean(runs):
    h5, doc, _ = runs["clean"]
    assert [p["kind"] for p in doc["phases"]] == ["write", "read", "meta", "write", "storm"]
    assert doc["phases"][0]["iterations_mib_per_s"] is not None
    check_json_against_h5(h5, doc)


def test_json_matches_h5_errors(runs):
    h5, doc, _ = runs["faulty"]
    bad = doc["phases"][0]
    assert bad["errors_by_kind"][0]["errno_name"] == "ENOSPC", bad["errors_by_kind"]
    assert bad["errors"] > 0 and not bad["all_calls_failed"]
    gone = doc["phases"][1]
    assert gone["all_calls_failed"] and gone["mib_per_s"] is None
    check_json_against_h5(h5, doc)


def table_rows(stdout):
    """{phase: (first line's fields, second line)} of the printed table."""
    lines = stdout.splitlines()
    head = next(i for i, l in enumerate(lines) if l.split()[:2] == ["phase", "kind"])
    out = {}
    i = head + 1
    while i + 1 < len(lines) and lines[i].strip():
        out[lines[i].split()[0]] = (lines[i].split(), lines[i + 1])
        i += 2
    return out


def test_table_has_units_and_legend(runs, herd_bin):
    _, _, proc = runs["clean"]
    assert "MiB = 2^20 bytes" in proc.stdout
    assert "calls/s = every timed call" in proc.stdout and "not files/s" in proc.stdout
    assert "calls/s" in proc.stdout.splitlines()[
        next(i for i, l in enumerate(proc.stdout.splitlines()) if l.startswith("phase "))]
    rows = table_rows(proc.stdout)
    assert set(rows) == {"w", "r", "m", "sw", "s"}, proc.stdout
    second = rows["w"][1]
    assert "bs 256K" in second and "fsync no" in second and "backend posix" in second
    assert "3 iterations: mean" in second and "stddev" in second
    assert "p50/p99 of write" in second
    assert "--json FILE" in herd_cmd(herd_bin, "--help").stdout
    assert "MiB = 2^20 bytes" in herd_cmd(herd_bin, "help", "units").stdout


def test_params_echo_the_kind_s_keys(runs, herd_bin, tmp_path):
    """The second line and the JSON params give the keys that apply to the
    phase's kind (the key table's kinds): fsync for a write only; a lock
    phase's lock_* keys; a meta phase names its main call as the JSON
    does (open), with the step it times (create)."""
    _, doc, proc = runs["clean"]
    rows = table_rows(proc.stdout)
    params = {p["name"]: p["params"] for p in doc["phases"]}
    assert "fsync no" in rows["w"][1] and params["w"]["fsync"] is False
    for name in ("r", "m", "s"):
        assert "fsync" not in rows[name][1] and "fsync" not in params[name], name
    assert "p50/p99 of open (create)" in rows["m"][1], rows["m"][1]
    assert next(p for p in doc["phases"] if p["name"] == "m")["main_op"] == "open"
    assert params["m"]["files"] == 120 and "count" not in params["m"]
    assert params["s"]["count"] == 40 and "files" not in params["s"]
    target = tmp_path / "t"
    target.mkdir()
    job = write_job(tmp_path / "lock.ini", {"target": target, "sharing": "shared",
                                            "fileset": "l", "file_size": "64K"},
                    [("l", {"kind": "lock", "count": 3, "lock_hold": "1ms"})])
    js = tmp_path / "lock.json"
    run = herd_run(herd_bin, NRANKS, job, tmp_path / "lock.h5", "--json", js)
    assert run.returncode == 0, describe(run)
    lock = json.loads(js.read_text())["phases"][0]
    assert lock["params"]["lock_mode"] == "exclusive" and lock["params"]["lock_wait"] == "blocking"
    assert lock["params"]["lock_hold"] == pytest.approx(0.001) and lock["params"]["count"] == 3
    assert "fsync" not in lock["params"] and "verify" not in lock["params"]
    assert lock["waited_grants"] >= 0 and lock["wait_seconds"] >= 0
    second = table_rows(run.stdout)["l"][1]
    assert "fsync" not in second and "count 3" in second and "grants/s" in second, second


def test_legend_is_the_documented_one(runs, herd_bin):
    """The legend under the table and `herd help units` are
    docs/results-format.md's "The printed legend" block, line for line: one
    statement of each definition, kept in step."""
    doc = (REPO_DIR / "docs" / "results-format.md").read_text()
    block = doc.split("## The printed legend")[1].split("```")[1].strip("\n").splitlines()
    _, _, proc = runs["clean"]
    lines = proc.stdout.splitlines()
    start = lines.index(block[0])
    assert lines[start:start + len(block)] == block, lines[start:start + len(block)]
    assert herd_cmd(herd_bin, "help", "units").stdout.splitlines() == block


def test_meta_items_per_second(runs):
    """mdtest's rate per step, recomputed from the ranks' step records
    (meta_steps: items of all ranks over the first start to the last end of
    the step), equals op_summary's items_per_s, the JSON's and the printed
    one; each step has its own time, none is the whole phase's."""
    h5, doc, proc = runs["clean"]
    second = table_rows(proc.stdout)["m"][1]
    printed = second.split("items/s")[1].split(";")[0].split()
    printed = dict(zip(printed[::2], (float(v) for v in printed[1::2])))
    assert set(printed) == {"create", "stat", "rename", "unlink", "rmdir"}, second
    json_ops = {o["label"]: o for o in next(p for p in doc["phases"] if p["name"] == "m")["ops"]}
    with h5py.File(h5, "r") as f:
        g = f["phases"]["m"]
        last = float(g.attrs["summary_last_done"])
        steps = g["meta_steps"][()]
        assert len(steps) == NRANKS * 5
        stored = {text(r["op"]): r for r in g["op_summary"][()]}
        for label, op, items in (("create", "open", 120), ("stat", "stat", 120),
                                 ("rename", "rename", 120), ("unlink", "unlink", 120),
                                 ("rmdir", "rmdir", 2 * 3 + 3)):
            mine = steps[[text(x) == op for x in steps["op"]]]
            assert len(mine) == NRANKS and set(mine["rank"]) == set(range(NRANKS)), label
            assert int(mine["items"].sum()) == NRANKS * items, label
            t = float(mine["t_end"].max() - mine["t_start"].min())
            assert 0 < t < last, label
            rate = NRANKS * items / t
            assert float(stored[op]["items_per_s"]) == pytest.approx(rate, rel=1e-12), label
            assert float(stored[op]["step_s"]) == pytest.approx(t, rel=1e-12), label
            assert json_ops[label]["items_per_s"] == pytest.approx(rate, rel=1e-12), label
            assert printed[label] == pytest.approx(rate, abs=0.51), label
        # the steps follow each other: each starts after the one before ends
        order = [text(x) for x in steps["step"][steps["rank"] == 0]]
        assert order == ["create", "stat", "rename", "unlink", "rmdir"]
        ends = {s: steps["t_end"][[text(x) == s for x in steps["step"]]].max() for s in order}
        starts = {s: steps["t_start"][[text(x) == s for x in steps["step"]]].min() for s in order}
        for before, after in zip(order, order[1:]):
            assert starts[after] >= ends[before], (before, after)


def test_errors_name_top_errno_and_failed_phase_has_no_rate(runs):
    _, doc, proc = runs["faulty"]
    rows = table_rows(proc.stdout)
    first, second = rows["bad"]
    total = doc["phases"][0]["errors"]
    assert first[-2:] == [str(total), "ENOSPC"], proc.stdout
    assert "ENOSPC write" in second
    first, _ = rows["gone"]
    assert first[7:10] == ["-", "-", "-"], proc.stdout  # MiB/s, calls/s, main/s
    assert first[-1] == "ENOENT" and first[-3] == "errors"


def check_row_is_stored_figures(row, attrs, op_rows, where):
    """One printed table row against the phase's summary_* attributes: rows,
    min/median/max/last s (3 decimals, '-' for NaN), MiB/s (1 decimal),
    calls/s (0 decimals), main/s (the main op's op_summary rate, 0
    decimals), verify, viol, errors."""
    def shown(v, places):
        return "-" if math.isnan(float(v)) else f"{float(v):.{places}f}"
    a = {k: attrs[k] for k in attrs if k.startswith("summary_")}
    assert int(row[2]) == int(a["summary_rows"]), where
    for col, key in ((3, "t_min"), (4, "t_median"), (5, "t_max"), (6, "last_done")):
        assert row[col] == shown(a[f"summary_{key}"], 3), (where, key, row)
    if row[7] != "-":  # '-': every call failed (the faulty run's own test)
        assert row[7] == shown(a["summary_mib_per_s"], 1), (where, row)
        assert row[8] == shown(a["summary_ops_per_s"], 0), (where, row)
    main = text(a["summary_main_op"])
    rate = {text(r["op"]): float(r["ops_per_s"]) for r in op_rows}.get(main, float("nan"))
    assert row[9] == (shown(rate, 0) if row[7] != "-" else "-"), (where, main, row)
    assert int(row[12]) == int(a["summary_verify_failures"]), where
    assert int(row[13]) == int(a["summary_violations"]), where
    errors = row[-2] if not row[-1].isdigit() else row[-1]
    assert int(errors) == int(a["summary_errors"]), (where, row)


def test_table_prints_the_stored_figures(runs, herd_bin, tmp_path):
    target = tmp_path / "target"
    target.mkdir()
    job = write_job(tmp_path / "idle.ini", {"target": target, "fsync": "no"},
                    [("w", {"kind": "write", "file_size": "1M"}),
                     ("i", {"kind": "idle", "duration": "0.1"})])
    proc = herd_run(herd_bin, NRANKS, job, tmp_path / "idle.h5")
    assert proc.returncode == 0, describe(proc)
    checked = 0
    for h5, stdout in [(h5, p.stdout) for h5, _, p in runs.values()] + \
            [(tmp_path / "idle.h5", proc.stdout)]:
        rows = table_rows(stdout)
        with h5py.File(h5, "r") as f:
            for name, (first, _) in rows.items():
                g = f["phases"][name]
                ops = g["op_summary"][()] if "op_summary" in g else []
                check_row_is_stored_figures(first, g.attrs, ops, f"{h5.name} {name}")
                checked += 1
    assert checked == 5 + 2 + 2
    idle = table_rows(proc.stdout)["i"][0]
    assert idle[3:7] == ["-", "-", "-", "-"], proc.stdout


def test_json_bad_path_refused_before_io(herd_bin, tmp_path):
    target = tmp_path / "target"
    target.mkdir()
    job = write_job(tmp_path / "j.ini", {"target": target},
                    [("w", {"kind": "write", "file_size": "1M"})])
    for bad in (tmp_path / "no" / "such" / "s.json", tmp_path):
        proc = herd_run(herd_bin, NRANKS, job, tmp_path / "r.h5", "--json", bad, quiet=True)
        assert proc.returncode == 2, describe(proc)
        said = [l for l in proc.stderr.splitlines() if l.startswith("herd:")]
        assert len(said) == 1 and "--json" in said[0], proc.stderr
        assert list(target.iterdir()) == [], "I/O happened before the refusal"
        assert not (tmp_path / "r.h5").exists()


def test_progress_lines_in_batch_log(runs):
    h5, _, proc = runs["clean"]
    with h5py.File(h5, "r") as f:
        for name in ("w", "r", "sw"):
            lines = [l for l in proc.stderr.splitlines()
                     if l.startswith(f"herd: {name}: {NRANKS} ranks done")]
            assert len(lines) == 1, proc.stderr
            assert "100%" in lines[0], lines[0]
            nbytes = int(f["phases"][name].attrs["summary_bytes"])
            assert f"({nbytes >> 20}.0 MiB)" in lines[0], (lines[0], nbytes)
            assert "MiB/s" not in lines[0] and lines[0].endswith("s wall"), lines[0]
        for name in ("m", "s"):
            lines = [l for l in proc.stderr.splitlines()
                     if l.startswith(f"herd: {name}: {NRANKS} ranks done")]
            assert len(lines) == 1, proc.stderr
            calls = sum(int(c) for c in f["phases"][name]["ops"]["count"])
            assert f"({calls} calls)" in lines[0], (lines[0], calls)
            assert "calls/s" not in lines[0], lines[0]


def test_phase_line_gives_the_table_figure(runs):
    """The phase line's rate and time are the table's (one definition of a
    phase's result): MiB/s for a kind that moves bytes, calls/s otherwise,
    last s; no rate where every call failed."""
    for run in ("clean", "faulty"):
        h5, _, proc = runs[run]
        rows = table_rows(proc.stdout)
        said = {l.split(":")[1].split()[1]: l for l in proc.stderr.splitlines()
                if l.startswith("herd: phase ")}
        assert set(said) == set(rows), (said, rows)
        with h5py.File(h5, "r") as f:
            for name, (first, _) in rows.items():
                line = said[name]
                kind = text(f["phases"][name].attrs["kind"])
                status = text(f["phases"][name].attrs["status"])
                assert line.startswith(f"herd: phase {name}: {status}: "), line
                if first[7] == "-":
                    assert "no rate: every call failed" in line, line
                    continue
                rate, unit = line.split(f"{status}: ")[1].split(",")[0].split()
                if kind in ("write", "read", "md5"):
                    assert (unit, rate) == ("MiB/s", first[7]), (line, first)
                else:
                    assert (unit, rate) == ("calls/s", first[8]), (line, first)
                assert f"last rank done after {first[6]} s" in line, (line, first)


def test_start_skew_in_milliseconds(runs):
    """The phase line gives the start skew in milliseconds to 3 significant
    digits, never in exponent form: the stored start_skew, rounded."""
    for run in ("clean", "faulty"):
        h5, _, proc = runs[run]
        said = {l.split(":")[1].split()[1]: l for l in proc.stderr.splitlines()
                if l.startswith("herd: phase ")}
        with h5py.File(h5, "r") as f:
            for name, line in said.items():
                m = re.search(r", start skew ([0-9]+(?:\.[0-9]+)?) ms\)$", line)
                assert m, line
                skew_ms = float(f["phases"][name].attrs["start_skew"]) * 1e3
                assert float(m.group(1)) == float(f"{skew_ms:.3g}"), (line, skew_ms)


def test_main_rate_counts_the_main_call_only(runs):
    """calls/s counts every timed call (opens, closes...); main/s (JSON
    main_ops_per_s) only the main call's, the rate an IOR user reads as
    IOPS: for a write of 4M in 256K blocks, 3 iterations on 2 ranks, 96
    write calls over last s. Table and legend say which is which."""
    _, doc, proc = runs["clean"]
    w = next(p for p in doc["phases"] if p["name"] == "w")
    assert w["main_op"] == "write"
    last = w["seconds"]["last_done"]
    assert w["main_ops_per_s"] * last == pytest.approx(16 * 3 * NRANKS, rel=1e-9)
    assert w["ops_per_s"] * last == pytest.approx(w["calls"], rel=1e-9)
    assert w["calls"] > 16 * 3 * NRANKS  # opens and closes too
    head = next(l for l in proc.stdout.splitlines() if l.startswith("phase "))
    assert head.split()[12:14] == ["calls/s", "main/s"], head
    first = table_rows(proc.stdout)["w"][0]
    assert first[9] == f"{w['main_ops_per_s']:.0f}", first
    assert "main/s = the calls of the phase's" in proc.stdout
    storm = next(p for p in doc["phases"] if p["name"] == "s")
    opens = next(o for o in storm["ops"] if o["op"] == "open")
    assert storm["main_op"] == "open" and storm["main_ops_per_s"] == opens["ops_per_s"]
