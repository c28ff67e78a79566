"""The analysis tools never trust a results file (analysis/herd_safe.py).

herd writes a real results file (2 ranks, fault backend: an errors table),
and each test edits a copy with h5py:

1. Hostile strings: <script>, <img onerror>, newlines, '|', '$', '`' and
   invalid UTF-8 in host names (/hosts, /ranks), first_path and errno_name
   (every phase's errors), the root attributes target, job_text and run_id,
   and a phase name. herd-report and herd-compare -o must exit 0 and every
   file they write must show the strings inertly: index.html without any
   markup from the file, *.md without raw '<' or an extra cell, *.csv with
   one line per record and the header's number of fields, all valid UTF-8,
   and the PNGs written.
2. Hostile structures: wrong attribute types, /phases as a dataset, /hosts
   as floats, ranks tables with a missing, hostile extra or mistyped field,
   declared dimensions of 10^12 rows that store nothing, a compression bomb,
   negative and NaN counts, a phase without tables, soft and external links
   (one to a FIFO), an unknown status, a truncated file, zeros, text, a
   directory, a FIFO and an empty file. herd-report, herd-compare and the
   loader (herd_results.load, ResultsError) must each exit 2 with exactly
   one stderr line naming the problem and no traceback, within a time
   limit (the FIFO must not hang), under RLIMIT_AS = 2 GiB so that an
   attempt to allocate gigabytes fails the test instead of the machine.

Run: /usr/bin/python3 -m pytest -q tests/integration/test_analysis_hostile.py
"""
import csv
import io
import os
import re
import resource
import shutil
import subprocess

import h5py
import numpy as np
import pytest

from conftest import REPO_DIR, describe, herd_run, write_job

ANALYSIS = REPO_DIR / "analysis"
REPORT = ANALYSIS / "herd-report"
COMPARE = ANALYSIS / "herd-compare"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
MEMORY_LIMIT = 2 << 30
TOOL_TIMEOUT = 120

EVIL = b"<script>alert(1)</script><img src=x onerror=alert(2)>|a\nb\r\t`*_$\\alpha$ \xff\xfe end"
EVIL_PATH = b"/t/<img src=x onerror=alert(3)>|\n\xc3(" + b"x" * 20
EVIL_ERRNO = b"E<script>|\xff"
EVIL_PHASE = "w<img src=x onerror=alert(4)>|$x$`"
LONG_PHASE = "$\\frac{$" + "L" * 3000  # broken mathtext, and far too long for a label
MAX_PNG_SIDE = 5000  # pixels: a label drawn in full would make a figure far wider


def limit_memory():
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def tool(*args):
    """An analysis tool under the memory limit; a hang fails the test."""
    cmd = ["/usr/bin/python3"] + [str(a) for a in args]
    try:
        return subprocess.run(cmd, capture_output=True, timeout=TOOL_TIMEOUT,
                              preexec_fn=limit_memory)
    except subprocess.TimeoutExpired:
        pytest.fail(f"hung: {' '.join(cmd)}")


LOADER = """
import sys
sys.path.insert(0, sys.argv[1])
import herd_results
try:
    with herd_results.load(sys.argv[2]) as run:
        run.all_ranks(); run.all_errors(); run.samples()
        for name in run.phase_names:
            run.latency(name); run.ops(name); run.holds(name); run.stuck(name)
except herd_results.ResultsError as e:
    print(e, file=sys.stderr)
    sys.exit(2)
"""


@pytest.fixture(scope="module")
def base(herd_bin, tmp_path_factory):
    """A real results file with errors, monitor tables and two phases."""
    work = tmp_path_factory.mktemp("hostile")
    target = work / "target"
    target.mkdir()
    job = write_job(work / "job.ini", {"target": target, "backend": "fault"},
                    [("write", {"kind": "write", "file_size": "1M", "block_size": "256K",
                                "iterations": 3,  # no error at all: p ~ 1e-8, not 4%
                                "faults": "write=EIO@0.5,open=ENOSPC@0.2"}),
                     ("lock", {"kind": "lock", "count": "10"})])
    out = work / "base.h5"
    proc = herd_run(herd_bin, 2, job, out)
    assert proc.returncode == 3, describe(proc)
    with h5py.File(out, "r") as f:
        assert len(f["phases/write/errors"]) > 0, "the fault backend gave no errors"
    return out


def copy(base, tmp_path, name="bad.h5"):
    path = tmp_path / name
    shutil.copyfile(base, path)
    return path


def set_field(ds, field, value):
    rows = ds[()]
    rows[field] = value
    ds[...] = rows


# ---------------------------------------------------------------- strings


def make_evil(base, path):
    shutil.copyfile(base, path)
    vlen = h5py.string_dtype("utf-8")
    with h5py.File(path, "r+") as f:
        set_field(f["hosts"], "hostname", EVIL)
        set_field(f["hosts"], "mount_source", EVIL_PATH)
        set_field(f["ranks"], "hostname", EVIL)
        for g in f["phases"].values():
            if len(g["errors"]):
                set_field(g["errors"], "first_path", EVIL_PATH)
                set_field(g["errors"], "errno_name", EVIL_ERRNO)
        f.attrs.create("target", b"/tmp/\xff\xfe<script>alert(5)</script>", dtype=vlen)
        f.attrs.create("job_text", b"[global]\n</pre><script>alert(6)</script>\n\xff\x1b[31m",
                       dtype=vlen)
        f.attrs.create("run_id", "<img src=x onerror=alert(7)>|\n", dtype=vlen)
        f.move("phases/write", f"phases/{EVIL_PHASE}")
        f.move("phases/lock", f"phases/{LONG_PHASE}")


def assert_utf8(path):
    data = path.read_bytes()
    data.decode("utf-8")  # raises on invalid UTF-8
    return data.decode("utf-8")


def assert_page_inert(page, pngs):
    """Only the report's own markup: no script, every img one of its PNGs."""
    assert "<script" not in page.lower(), "raw <script> from the file in index.html"
    assert not re.search(r"<[^>]*\bonerror", page, re.I), "an onerror attribute in index.html"
    for src in re.findall(r"<img\b[^>]*\bsrc=\"([^\"]*)\"", page):
        assert src in pngs, f"foreign <img src={src!r}> in index.html"
    assert len(re.findall(r"<img\b", page)) == len(pngs)
    assert "&lt;script&gt;alert(1)" in page, "the host name is not shown (escaped)"
    assert "\\xff" in page, "invalid UTF-8 not shown as an escape"


def assert_markdown_inert(text, path):
    lines = text.splitlines()
    assert "<" not in text and ">" not in text, f"{path.name}: raw markup"
    header = lines[0]
    ncells = len(re.findall(r"(?<!\\)\|", header))
    for line in lines:
        assert line.startswith("|") and line.endswith("|"), f"{path.name}: broken row {line!r}"
        assert len(re.findall(r"(?<!\\)\|", line)) == ncells, f"{path.name}: {line!r}"


def assert_csv_sound(text, path):
    rows = list(csv.reader(io.StringIO(text, newline="")))
    assert rows, path
    assert all(len(r) == len(rows[0]) for r in rows), f"{path.name}: ragged rows"
    assert len(rows) == len(text.splitlines()), f"{path.name}: a field spans lines"
    assert not any(c.startswith(("=", "@")) for r in rows for c in r)


def test_hostile_strings_are_shown_inertly(base, tmp_path):
    evil = tmp_path / "evil.h5"
    make_evil(base, evil)
    out = tmp_path / "report"
    proc = tool(REPORT, evil, "-o", out)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    names = {p.name for p in out.iterdir()}
    pngs = {n for n in names if n.endswith(".png")}
    assert {"index.html", "phases.md", "errors.md", "errors.csv", "ranks.csv",
            "timeline.png", "errors.png"} <= names, names
    for name in pngs:
        data = (out / name).read_bytes()
        assert data[:8] == PNG_MAGIC, name
        width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
        assert width < MAX_PNG_SIDE and height < MAX_PNG_SIDE, (name, width, height)
    assert_page_inert(assert_utf8(out / "index.html"), pngs)
    mds = [p for p in out.iterdir() if p.suffix == ".md"]
    assert any("&lt;script&gt;" in p.read_text() for p in mds), "the errno name is not shown"
    for p in mds:
        assert_markdown_inert(assert_utf8(p), p)
    csvs = [p for p in out.iterdir() if p.suffix == ".csv"]
    for p in csvs:
        assert_csv_sound(assert_utf8(p), p)
    errors = (out / "errors.csv").read_text()
    assert "<img src=x onerror=alert(3)>" in errors and "\\n" in errors  # shown, on one line
    # The terminal output of herd-compare and its files.
    cmp_out = tmp_path / "compare"
    proc = tool(COMPARE, base, evil, "-o", cmp_out, "--label", "run_id")
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    stdout = proc.stdout.decode("utf-8")
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f]", stdout), "control characters on stdout"
    assert (cmp_out / "compare.png").read_bytes()[:8] == PNG_MAGIC
    assert_markdown_inert(assert_utf8(cmp_out / "compare.md"), cmp_out / "compare.md")
    assert "&lt;img src=x onerror=alert(4)&gt;" in (cmp_out / "compare.md").read_text()
    assert_csv_sound(assert_utf8(cmp_out / "compare.csv"), cmp_out / "compare.csv")


# ---------------------------------------------------------------- structures


def replace_table(f, where, drop=(), add=(), retype=None, rows_fn=None):
    """Rewrite table `where` without fields `drop`, with extra (name, dtype)
    fields `add`, or with fields retyped ({name: dtype})."""
    old = f[where][()]
    fields = [(n, (retype or {}).get(n, old.dtype.fields[n][0])) for n in old.dtype.names
              if n not in drop] + list(add)
    new = np.zeros(len(old), dtype=fields)
    for n in new.dtype.names:
        if n in old.dtype.names:
            new[n] = old[n]
    if rows_fn:
        rows_fn(new)
    del f[where]
    f.create_dataset(where, data=new, maxshape=(None,), chunks=True, compression="gzip")


def edit(fn):
    def make(base, path):
        shutil.copyfile(base, path)
        with h5py.File(path, "r+") as f:
            fn(f)
    return make


def raw(data):
    def make(base, path):
        path.write_bytes(data(base) if callable(data) else data)
    return make


def huge_dims(f):
    dt = f["phases/write/errors"].dtype
    del f["phases/write/errors"]
    f.create_dataset("phases/write/errors", shape=(10**12,), maxshape=(None,),
                     chunks=(1024,), dtype=dt, compression="gzip")


def bomb(f):
    """One chunk of 2^20 zero rows (compresses ~1000:1) in a 10^8-row table."""
    dt = f["phases/write/ranks"].dtype
    del f["phases/write/ranks"]
    ds = f.create_dataset("phases/write/ranks", shape=(10**8,), maxshape=(None,),
                          chunks=(1 << 20,), dtype=dt, compression="gzip", shuffle=True)
    ds[0:1 << 20] = np.zeros(1 << 20, dtype=dt)


def nan_count(f):
    lat = f["phases/write/latency"]
    op = next(n for n in lat if not n.startswith("bucket_"))
    lat[op].attrs["count"] = np.nan


def negative_rank(f):
    set_field(f["ranks"], "rank", -5)
    set_field(f["phases/write/ranks"], "rank", -5)


def no_tables(f):
    del f["phases/write/ranks"]
    del f["phases/write/errors"]


def phases_dataset(f):
    del f["phases"]
    f["phases"] = np.arange(10)


def hosts_floats(f):
    del f["hosts"]
    f["hosts"] = np.linspace(0, 1, 7)


def external_fifo(f):
    fifo = os.path.join(os.path.dirname(f.filename), "link.fifo")
    os.mkfifo(fifo)
    f["phases/write/latency/extra"] = h5py.ExternalLink(fifo, "/x")


def soft_loop(f):
    del f["phases/lock/errors"]
    f["phases/lock/errors"] = h5py.SoftLink("/phases/lock/errors")


def fifo(base, path):
    os.mkfifo(path)


def directory(base, path):
    path.mkdir()


BAD = [  # (name, maker, words the one stderr line must hold)
    ("status-int", edit(lambda f: f.attrs.__setitem__("status", 3)), "'status'"),
    ("t_start-string", edit(lambda f: f["phases/write"].attrs.create(
        "t_start", "soon", dtype=h5py.string_dtype())), "'t_start'"),
    ("phases-dataset", edit(phases_dataset), "/phases: is a dataset"),
    ("hosts-floats", edit(hosts_floats), "/hosts: is float64, not a table"),
    ("ranks-missing-field", edit(lambda f: replace_table(f, "phases/write/ranks",
                                                         drop=("t_end",))), "no field 't_end'"),
    ("ranks-extra-vlen-field", edit(lambda f: replace_table(
        f, "ranks", add=[("blob", h5py.string_dtype())],
        rows_fn=lambda r: r.__setitem__("blob", "x" * 10))), "'blob'"),
    ("ranks-extra-array-field", edit(lambda f: replace_table(
        f, "phases/write/ranks", add=[("blob", "u1", (100,))])), "'blob'"),
    ("ranks-bytes-float", edit(lambda f: replace_table(
        f, "phases/write/ranks", retype={"bytes": "f8"},
        rows_fn=lambda r: r.__setitem__("bytes", np.nan))), "'bytes'"),
    ("ranks-rank-string", edit(lambda f: replace_table(f, "ranks", retype={"rank": "S8"})),
     "'rank'"),
    ("errors-count-negative", edit(lambda f: replace_table(
        f, "phases/write/errors", retype={"count": "i8"},
        rows_fn=lambda r: r.__setitem__("count", -7))), "'count'"),
    ("huge-dims", edit(huge_dims), "declares"),
    ("compression-bomb", edit(bomb), "declares"),
    ("nranks-negative", edit(lambda f: f.attrs.__setitem__("nranks", np.int32(-3))),
     "'nranks'"),
    ("latency-count-nan", edit(nan_count), "'count'"),
    ("rank-negative", edit(negative_rank), "negative"),
    ("summary-bytes-negative", edit(lambda f: f["phases/write"].attrs.__setitem__(
        "summary_bytes", np.int64(-5))), "'summary_bytes'"),
    ("summary-rate-nan", edit(lambda f: f["phases/write"].attrs.__setitem__(
        "summary_mib_per_s", np.nan)), "'summary_mib_per_s'"),
    ("process-scope-int", edit(lambda f: f["monitor/processes"].attrs.__setitem__("scope", 3)),
     "'scope'"),
    ("op-summary-calls-float", edit(lambda f: replace_table(
        f, "phases/write/op_summary", retype={"calls": "f8"})), "'calls'"),
    ("phase-without-tables", edit(no_tables), "no 'ranks' table"),
    ("status-unknown", edit(lambda f: f.attrs.create("status", "<script>",
                                                     dtype=h5py.string_dtype())), "'status'"),
    ("attr-array", edit(lambda f: f.attrs.create("job_text", np.zeros(50000, "u1"))),
     "'job_text'"),
    ("external-link-to-fifo", edit(external_fifo), "ExternalLink"),
    ("soft-link", edit(soft_loop), "SoftLink"),
    ("truncated", raw(lambda b: b.read_bytes()[:len(b.read_bytes()) // 2]), "HDF5"),
    ("zeros", raw(bytes(200_000)), "not a readable HDF5 file"),
    ("text", raw(b"status = complete\n" * 100), "not a readable HDF5 file"),
    ("empty", raw(b""), "empty file"),
    ("directory", directory, "is a directory"),
    ("fifo", fifo, "not a regular file"),
]


@pytest.mark.parametrize("name,make,words", BAD, ids=[b[0] for b in BAD])
def test_hostile_file_gives_one_line_and_exit_2(base, tmp_path, name, make, words):
    bad = tmp_path / f"{name}.h5"
    make(base, bad)
    runs = {"herd-report": tool(REPORT, bad, "-o", tmp_path / "report"),
            "herd-compare": tool(COMPARE, base, bad, "-o", tmp_path / "compare"),
            "loader": tool("-c", LOADER, ANALYSIS, bad)}
    for who, proc in runs.items():
        err = proc.stderr.decode("utf-8", errors="replace")
        what = f"{who} on {name}: exit {proc.returncode}\nstderr:\n{err}"
        assert proc.returncode == 2, what
        assert "Traceback" not in err, what
        lines = err.splitlines()
        assert len(lines) == 1, what
        assert words in lines[0] and str(bad) in lines[0], what
        assert "MemoryError" not in err and "allocate" not in err, what
    assert not (tmp_path / "report" / "index.html").exists()


def test_plain_extra_field_is_accepted(base, tmp_path):
    """The format lets later versions add fields: a plain number is fine, and
    the check that refuses the hostile ones above is not refusing everything."""
    ok = tmp_path / "extra.h5"
    edit(lambda f: replace_table(f, "phases/write/ranks", add=[("later", "f8")]))(base, ok)
    proc = tool(REPORT, ok, "-o", tmp_path / "report")
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    assert (tmp_path / "report" / "index.html").stat().st_size > 0
