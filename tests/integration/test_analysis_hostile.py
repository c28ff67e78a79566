"""The analysis tools never trust a results file (analysis/herd_safe.py).

herd writes a real results file (2 ranks, fault backend: an errors table),
and each test edits a copy with h5py:

1. Hostile strings: <script>, <img onerror>, newlines, '|', '$', '`' and
   invalid UTF-8 in host names (/hosts, /ranks), first_path and errno_name
   (every phase's errors), the root attributes target, job_text, run_id,
   label and server_fs, and a phase name. herd-report and herd-compare -o
   must exit 0 and every file they write must show the strings inertly:
   index.html without any markup from the file, *.md without raw '<' or an
   extra cell, *.csv with one line per record and the header's number of
   fields, all valid UTF-8, and the PNGs written; herd-compare names runs
   by their labels as inertly.
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
3. A hostile HERD_PYTHON: /bin/true, /bin/sh, a missing file, a file that
   is not executable, a name not on PATH, a name whose PATH entry is a
   Python without the modules (a venv without packages) and a Python
   without h5py. herd-report and herd-compare must each exit 2 with one
   stderr line naming HERD_PYTHON and the problem, print nothing and leave
   no output directory. HERD_PYTHON=python3 with Debian's first on PATH
   writes the outputs, and the Python it names starts twice: once for the
   test of its modules, once for the tool.
4. The search without HERD_PYTHON: a venv without packages first on PATH,
   the tools started by its python3 and directly both write their outputs
   (started again under /usr/bin/python3); with Debian's site directories
   hidden (mounts in a mount namespace of the test's own; needs root) one
   line naming each Python tried, exit 2, nothing written.

Run: /usr/bin/python3 -m pytest -q tests/integration/test_analysis_hostile.py
"""
import csv
import io
import os
import re
import resource
import shlex
import shutil
import subprocess
from pathlib import Path

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


def tool(*args, env=None):
    """An analysis tool under the memory limit; a hang fails the test."""
    cmd = ["/usr/bin/python3"] + [str(a) for a in args]
    try:
        return subprocess.run(cmd, capture_output=True, timeout=TOOL_TIMEOUT,
                              preexec_fn=limit_memory, env=env)
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
        f.attrs.create("label", b"<img src=x onerror=alert(8)>|\n\xff`*", dtype=vlen)
        f.attrs.create("server_fs", b"<script>alert(9)</script>\x1b", dtype=vlen)
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
    # Named by the runs' own (hostile) labels: herd-compare's default.
    twin = tmp_path / "twin.h5"
    shutil.copyfile(evil, twin)
    cmp_out = tmp_path / "compare-labels"
    proc = tool(COMPARE, evil, twin, "-o", cmp_out, "--label", "label,fstype")
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    proc = tool(COMPARE, evil, twin, "-o", cmp_out)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    stdout = proc.stdout.decode("utf-8")
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f]", stdout), "control characters on stdout"
    assert "onerror=alert(8)" in stdout and "\\xff" in stdout, stdout
    md = assert_utf8(cmp_out / "compare.md")
    assert_markdown_inert(md, cmp_out / "compare.md")
    assert "&lt;img src=x onerror=alert(8)&gt;" in md, md
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
    ("label-int", edit(lambda f: f.attrs.__setitem__("label", 3)), "'label'"),
    ("server-fs-float", edit(lambda f: f.attrs.__setitem__("server_fs", 1.5)), "'server_fs'"),
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


# ---------------------------------------------------------------- 3. HERD_PYTHON

DEBIAN_SITE = Path("/usr/lib/python3/dist-packages")


def executable(path, text):
    path.write_text(text)
    path.chmod(0o755)
    return path


def bare_venv(tmp_path):
    """A venv without packages: a real Python 3 that has none of the modules."""
    venv = tmp_path / "bare"
    proc = subprocess.run(["/usr/bin/python3", "-m", "venv", "--without-pip", str(venv)],
                          capture_output=True, text=True, timeout=TOOL_TIMEOUT)
    if proc.returncode != 0:
        pytest.skip(f"python3 -m venv is not available: {proc.stderr.strip()[:200]}")
    return venv / "bin"


def python_without_h5py(tmp_path):
    """Debian's Python without its site directory, on a copy (links) of
    Debian's packages that leaves out h5py."""
    site = tmp_path / "site-no-h5py"
    site.mkdir()
    for entry in DEBIAN_SITE.iterdir():
        if not entry.name.startswith("h5py"):
            (site / entry.name).symlink_to(entry)
    return executable(tmp_path / "python3-no-h5py",
                      f'#!/bin/sh\nPYTHONPATH={site} exec /usr/bin/python3 -S "$@"\n')


def not_executable(tmp_path):
    path = tmp_path / "python3-plain-file"
    path.write_text("#!/usr/bin/python3\n")
    path.chmod(0o644)
    return path


# (id, make(tmp_path) -> (HERD_PYTHON, PATH or None to keep it), words in the line)
BAD_PYTHON = [
    ("true", lambda t: ("/bin/true", None), "not a Python"),
    ("sh", lambda t: ("/bin/sh", None), "not a Python"),
    ("missing", lambda t: (str(t / "none"), None), "not found"),
    ("not-executable", lambda t: (str(not_executable(t)), None), "is not executable"),
    ("name-not-on-path", lambda t: ("herd-no-such-python", "/usr/bin:/bin"),
     "not found on PATH"),
    ("name-without-modules", lambda t: ("python3", f"{bare_venv(t)}:/usr/bin:/bin"),
     "no module numpy"),
    ("without-h5py", lambda t: (str(python_without_h5py(t)), None), "no module h5py"),
]


def with_python(value, path=None):
    env = dict(os.environ, HERD_PYTHON=value)
    env.pop("HERD_PYTHON_STARTED", None)
    if path is not None:
        env["PATH"] = path
    return env


@pytest.mark.parametrize("name,make,words", BAD_PYTHON, ids=[b[0] for b in BAD_PYTHON])
def test_bad_herd_python_gives_one_line_and_exit_2(base, tmp_path, name, make, words):
    """Whatever HERD_PYTHON names must be a Python 3 with the modules
    before the tool runs under it: anything else is refused in one line
    naming HERD_PYTHON and the problem, with nothing written."""
    value, path = make(tmp_path)
    env = with_python(value, path)
    runs = {"herd-report": (tool(REPORT, base, "-o", tmp_path / "report", env=env),
                            tmp_path / "report"),
            "herd-compare": (tool(COMPARE, base, base, "-o", tmp_path / "compare", env=env),
                             tmp_path / "compare")}
    for who, (proc, outdir) in runs.items():
        err = proc.stderr.decode("utf-8", errors="replace")
        what = (f"{who} with HERD_PYTHON={value} ({name}): exit {proc.returncode}\n"
                f"stdout:\n{proc.stdout.decode(errors='replace')}\nstderr:\n{err}")
        assert proc.returncode == 2, what
        assert proc.stdout == b"" and "Traceback" not in err, what
        lines = err.splitlines()
        assert len(lines) == 1, what
        assert lines[0].startswith(f"{who}: HERD_PYTHON={value}: "), what
        assert words in lines[0], what
        assert not outdir.exists(), what


def test_herd_python_name_found_on_path(base, tmp_path):
    """HERD_PYTHON=python3 is looked up on PATH: with Debian's first there,
    both tools write their outputs."""
    env = with_python("python3", "/usr/bin:/bin")
    proc = tool(REPORT, base, "-o", tmp_path / "report", env=env)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    assert (tmp_path / "report" / "index.html").stat().st_size > 0
    proc = tool(COMPARE, base, base, "-o", tmp_path / "compare", env=env)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    assert (tmp_path / "compare" / "compare.csv").stat().st_size > 0


@pytest.mark.parametrize("which", [REPORT, COMPARE], ids=["herd-report", "herd-compare"])
def test_herd_python_starts_once_for_its_test(tmp_path, which):
    """The Python HERD_PYTHON names starts twice: one `-c` test of its
    modules, then the tool itself (a wrapper on PATH logs each start)."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    log = tmp_path / "starts.log"
    executable(bindir / "python3",
               f'#!/bin/sh\nprintf "%s\\n" "$1" >> {log}\nexec /usr/bin/python3 "$@"\n')
    proc = tool(which, "--help", env=with_python("python3", f"{bindir}:/usr/bin:/bin"))
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    assert proc.stdout.decode().startswith(f"usage: {which.name}"), proc.stdout
    assert log.read_text().splitlines() == ["-c", str(which)]


# ---------------------------------------------------------------- 4. the search

def without_herd_python(path):
    """The environment with path as PATH and no HERD_PYTHON (nor its marks)."""
    env = dict(os.environ, PATH=path)
    for name in ("HERD_PYTHON", "HERD_PYTHON_STARTED", "HERD_PYTHON_FOUND"):
        env.pop(name, None)
    return env


def tool_runs(which, bare, *args):
    """{how: command} for a tool started by the bare venv's python3 found
    on PATH (`env PATH=BARE:$PATH python3 TOOL`), and by itself (its first
    line: /usr/bin/python3)."""
    return {"python3 on PATH": ["env", f"PATH={bare}:{os.environ['PATH']}", "python3",
                                str(which), *map(str, args)],
            "directly": [str(which), *map(str, args)]}


@pytest.mark.parametrize("which", [REPORT, COMPARE], ids=["herd-report", "herd-compare"])
def test_search_passes_over_a_python_without_the_modules(base, tmp_path, which):
    """Without HERD_PYTHON, a tool started by a python3 that lacks the
    modules (a venv without site packages first on PATH, as a pyenv or a
    conda env) starts itself again under /usr/bin/python3, which has them,
    and writes its outputs; started directly, it runs as it is."""
    bare = bare_venv(tmp_path)
    env = without_herd_python(f"{bare}:{os.environ['PATH']}")
    for how, cmd in tool_runs(which, bare, base, *([base] if which == COMPARE else []),
                              "-o", tmp_path / "out").items():
        out = tmp_path / "out"
        shutil.rmtree(out, ignore_errors=True)
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env,
                              timeout=TOOL_TIMEOUT)
        assert proc.returncode == 0, f"{how}: {describe(proc)}"
        made = "index.html" if which == REPORT else "compare.csv"
        assert (out / made).stat().st_size > 0, f"{how}: {describe(proc)}"


def site_directories():
    """Debian's python3's site directories: where numpy, h5py, pandas and
    matplotlib are."""
    proc = subprocess.run(["/usr/bin/python3", "-c",
                           "import site; print('\\n'.join(site.getsitepackages()))"],
                          capture_output=True, text=True, timeout=TOOL_TIMEOUT)
    return [d for d in proc.stdout.split() if os.path.isdir(d)]


@pytest.mark.parametrize("which", [REPORT, COMPARE], ids=["herd-report", "herd-compare"])
def test_search_without_any_fit_python_gives_one_line(base, tmp_path, which):
    """With Debian's site directories hidden (an empty directory mounted
    over each, in a mount namespace of the test's own), no Python has the
    modules: one line naming each Python tried and what it lacks, and
    HERD_PYTHON, exit 2, nothing written."""
    if os.geteuid() != 0 or not shutil.which("unshare"):
        pytest.skip("needs root and unshare (util-linux) to hide the site directories")
    bare = bare_venv(tmp_path)
    empty = tmp_path / "empty"
    empty.mkdir()
    hide = " && ".join(f"mount --bind {shlex.quote(str(empty))} {shlex.quote(d)}"
                       for d in site_directories())
    env = without_herd_python(f"{bare}:{os.environ['PATH']}")
    out = tmp_path / "out"
    for how, cmd in tool_runs(which, bare, base, "-o", out).items():
        proc = subprocess.run(["unshare", "--mount", "sh", "-c", f'{hide} && exec "$@"', "sh",
                               *cmd], capture_output=True, text=True, env=env,
                              timeout=TOOL_TIMEOUT)
        what = f"{how}: {describe(proc)}"
        assert proc.returncode == 2 and proc.stdout == "", what
        lines = proc.stderr.splitlines()
        assert len(lines) == 1 and "Traceback" not in proc.stderr, what
        assert lines[0].startswith(f"{which.name}: no Python with numpy, pandas, h5py, "
                                   "matplotlib: "), what
        for python in (f"{bare}/python3", "/usr/bin/python3"):
            assert f"{python}" in lines[0], what
        assert lines[0].count("no module numpy, pandas, h5py, matplotlib") == 2, what
        assert "HERD_PYTHON=" in lines[0], what
        assert not out.exists(), what
