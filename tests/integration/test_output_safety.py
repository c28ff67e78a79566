"""The analysis tools never write through a link (analysis/herd_output.py).

herd writes two small results files (2 I/O ranks and a monitor rank, the
fault backend for errors, two load ladders, read phases of two block
sizes; seed 1 and 2); NFS client tables are added to the first with h5py,
so that herd-report writes every file it can. Three commands are checked:
herd-report, herd-compare -o (numeric labels: scaling.png; ladders) and
herd-compare --x -o (a sweep). Each must list exactly its documented
output names (OUTPUTS), and:

1. A symbolic link planted at every output name, to a victim file outside
   the directory (or, in a second run, to a path that does not exist):
   exit 0, every victim unchanged (no dangling target created), every name
   now a regular file, nothing else left in the directory (no temporary).
2. A hard link to a victim at every output name: victims unchanged, their
   link count back to 1.
3. The output directory a symbolic link to another directory (named with
   and without a trailing slash): exit 2, one line, nothing written there.
4. A FIFO at an output name, and in a second run a directory: exit 2 with
   one line naming it, no hang, the entry left as it was. A file system
   that fills up (a small tmpfs, as root): exit 2 with one line naming the
   file, which keeps its previous content; no temporary file left.
5. As root, a directory owned by user nobody: refused (exit 2, one line)
   without --allow-foreign-dir, written with it.
6. As root, with everything planted by user nobody itself (setpriv) in a
   shared, world-writable directory without the sticky bit: links at every
   name of herd-report's default directory (to root's files in a directory
   nobody cannot enter), hard links at every name of a herd-compare
   directory (to root's world-writable files), a link as the output
   directory, nobody's own directory with and without
   --allow-foreign-dir: no victim changes, every name a root-owned
   regular file, refusals with one line.
7. No write in analysis/ bypasses herd_output: outside it no open(),
   os.open, os.makedirs, shutil..., and to_csv/savefig only into a file
   from OutputDir.new_file (a check of the code's syntax tree).

5 and 6 need root (another user's files); they skip otherwise.

Run: /usr/bin/python3 -m pytest -q -rs tests/integration/test_output_safety.py
"""
import ast
import os
import re
import shutil
import stat
import tempfile
from pathlib import Path

import h5py
import numpy as np
import pytest

from conftest import REPO_DIR, as_user, describe, herd_run, other_user, run_cmd, write_job

ANALYSIS = REPO_DIR / "analysis"
REPORT = ANALYSIS / "herd-report"
COMPARE = ANALYSIS / "herd-compare"
TOOL_TIMEOUT = 120  # seconds: a FIFO opened for writing would block for ever
NOBODY = "nobody"

REPORT_OUTPUTS = {f"{t}.{e}" for t in ("phases", "errors", "errors_by_rank", "ops", "server",
                                        "clients", "loadcurve_read", "loadcurve_wl")
                  for e in ("csv", "md")} | {
    "ranks.csv", "timeline.png", "throughput.png", "latency.png", "server.png", "errors.png",
    "retrans.png", "loadcurve_read.png", "loadcurve_wl.png", "index.html"}
COMPARE_OUTPUTS = {"compare.csv", "compare.md", "compare.png", "scaling.png",
                   "groups.csv", "groups.md", "groups.png", "index.html"}
OUTPUTS = {
    "report": REPORT_OUTPUTS,
    "compare": COMPARE_OUTPUTS | {"ladder.csv", "ladder.png", "ladder_wl.png"},
    "sweep": COMPARE_OUTPUTS | {"sweep.csv", "sweep.md", "sweep.png"},
}


def command(which, runs, out, *extra):
    a, b = runs
    args = {"report": [REPORT, a],
            "compare": [COMPARE, a, b, "--label", "seed"],
            "sweep": [COMPARE, a, b, "--label", "seed", "--x", "block_size"]}[which]
    if out is not None:
        args += ["-o", out]
    return ["/usr/bin/python3"] + [str(x) for x in args + list(extra)]


def run_tool(which, runs, out, *extra):
    return run_cmd(command(which, runs, out, *extra), timeout=TOOL_TIMEOUT)


def listed(proc, out):
    """The names a tool printed as written into out."""
    paths = [line.removeprefix("wrote ") for line in proc.stdout.splitlines()]
    return {os.path.basename(p) for p in paths if p.startswith(f"{out}/")}


def one_line(proc, *words):
    """Exit 2 and one stderr line holding every word, no traceback."""
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, describe(proc)
    assert "Traceback" not in proc.stderr, describe(proc)
    for word in words:
        assert word in lines[0], describe(proc)


def assert_written(proc, out, which, owner=None):
    """Exit 0, the documented listing, and out holds exactly those names,
    each a regular file (of owner, when given)."""
    assert proc.returncode == 0, describe(proc)
    assert listed(proc, out) == OUTPUTS[which], describe(proc)
    assert set(os.listdir(out)) == OUTPUTS[which], sorted(os.listdir(out))
    for name in OUTPUTS[which]:
        st = os.lstat(Path(out) / name)
        assert stat.S_ISREG(st.st_mode) and st.st_size > 0, name
        assert owner is None or st.st_uid == owner, (name, st.st_uid)


def make_victims(where, names, mode=0o600):
    """A file per name in where, holding its own name; returns {name: path}."""
    where.mkdir(exist_ok=True)
    victims = {}
    for name in names:
        victims[name] = where / name
        victims[name].write_bytes(f"victim of {name}\n".encode())
        victims[name].chmod(mode)
    return victims


def assert_untouched(victims):
    for name, path in victims.items():
        assert path.read_bytes() == f"victim of {name}\n".encode(), f"{path} was written"
        assert os.lstat(path).st_nlink == 1, f"{path} still has a second name"


def add_client_tables(path):
    """Rows in herd's empty /monitor/clients and /monitor/client_ops (as it
    fills them on a kernel NFS mount) for every phase, so that the report
    has its clients table and retrans.png."""
    with h5py.File(path, "r+") as f:
        phases = [n.encode() for n in f["phases"] if "ranks" in f["phases"][n]]
        values = {"clients": {"mount_point": b"/mnt", "proto": b"tcp", "connects": 1},
                  "client_ops": {"op": b"READ", "ops": 10, "trans": 12, "retrans": 2,
                                 "rtt_ms": 5.0}}
        for table, fields in values.items():
            ds = f["monitor"][table]
            rows = np.zeros(len(phases), dtype=ds.dtype)
            rows["phase"] = phases
            for field, value in fields.items():
                rows[field] = value
            ds.resize((len(phases),))
            ds[...] = rows


@pytest.fixture(scope="module")
def runs(herd_bin, tmp_path_factory):
    """(a.h5, b.h5): herd's results of one job with seed 1 and 2."""
    work = tmp_path_factory.mktemp("outputs")
    target = work / "target"
    target.mkdir()
    paths = []
    for seed in (1, 2):
        job = write_job(work / f"job{seed}.ini",
                        {"target": target, "backend": "fault", "monitor_rank": "last",
                         "monitor_interval": "100ms", "file_size": "1M", "block_size": "256K",
                         "seed": seed},
                        [("write", {"kind": "write", "iterations": 2,
                                    "faults": "write=EIO@0.6"}),
                         ("read", {"kind": "read", "ranks_step": 2}),
                         ("small", {"kind": "read", "block_size": "64K"}),
                         ("wl", {"kind": "write", "fileset": "wl", "ranks_active": "1,2"})])
        out = work / f"run{seed}.h5"
        proc = herd_run(herd_bin, 3, job, out)
        assert proc.returncode in (0, 3), describe(proc)
        paths.append(out)
    add_client_tables(paths[0])
    return tuple(paths)


# ---------------------------------------------------------------- links


@pytest.mark.parametrize("dangling", [False, True], ids=["to-a-file", "dangling"])
@pytest.mark.parametrize("which", sorted(OUTPUTS))
def test_symlink_at_every_output_is_replaced(runs, tmp_path, which, dangling):
    out = tmp_path / "out"
    out.mkdir()
    victims = make_victims(tmp_path / "victims", OUTPUTS[which])
    for name, victim in victims.items():
        if dangling:
            victim.unlink()
        (out / name).symlink_to(victim)
    proc = run_tool(which, runs, out)
    if dangling:
        made = [str(v) for v in victims.values() if os.path.lexists(v)]
        assert not made, f"created through dangling links: {made}"
    else:
        assert_untouched(victims)
    assert_written(proc, out, which)


@pytest.mark.parametrize("which", sorted(OUTPUTS))
def test_hard_link_at_every_output_is_replaced(runs, tmp_path, which):
    out = tmp_path / "out"
    out.mkdir()
    victims = make_victims(tmp_path / "victims", OUTPUTS[which])
    for name, victim in victims.items():
        os.link(victim, out / name)
    proc = run_tool(which, runs, out)
    assert_untouched(victims)
    assert_written(proc, out, which)


@pytest.mark.parametrize("slash", ["", "/"], ids=["plain", "trailing-slash"])
@pytest.mark.parametrize("which", ["report", "compare"])
def test_output_directory_that_is_a_link_is_refused(runs, tmp_path, which, slash):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    link = tmp_path / "out"
    link.symlink_to(elsewhere)
    proc = run_tool(which, runs, f"{link}{slash}")
    one_line(proc, "symbolic link")
    assert os.listdir(elsewhere) == [], "written through the directory link"
    assert link.is_symlink()


@pytest.mark.parametrize("which, fifo, directory", [
    ("report", "phases.csv", "index.html"), ("compare", "compare.csv", "compare.png")])
def test_fifo_or_directory_at_an_output_is_refused(runs, tmp_path, which, fifo, directory):
    out = tmp_path / "out"
    out.mkdir()
    os.mkfifo(out / fifo)
    proc = run_tool(which, runs, out)
    one_line(proc, f"{out}/{fifo}", "FIFO")
    assert stat.S_ISFIFO(os.lstat(out / fifo).st_mode)
    (out / fifo).unlink()
    (out / directory).mkdir()
    (out / directory / "kept").write_text("kept\n")
    proc = run_tool(which, runs, out)
    one_line(proc, f"{out}/{directory}", "directory")
    assert (out / directory / "kept").read_text() == "kept\n"
    assert not [n for n in os.listdir(out) if n.startswith(".")], os.listdir(out)


def test_full_file_system_keeps_the_previous_file(runs, mount_fs):
    fs = mount_fs("tmpfs", size="160k")  # the report needs over 400 KB
    out = fs.path / "out"
    out.mkdir()
    for name in OUTPUTS["report"]:
        (out / name).write_text(f"previous {name}\n")
    proc = run_tool("report", runs, out)
    one_line(proc, "No space left on device")
    failed = re.search(rf"{re.escape(str(out))}/([^:/]+): cannot", proc.stderr)
    assert failed, describe(proc)
    name = failed.group(1)
    assert (out / name).read_text() == f"previous {name}\n", f"{name} was cut short"
    assert set(os.listdir(out)) == OUTPUTS["report"], sorted(os.listdir(out))


# ---------------------------------------------------------------- other users


def nobody_ids():
    user = other_user(NOBODY, f"to make files of another user ({NOBODY})")
    return user.pw_uid, user.pw_gid


@pytest.mark.parametrize("which", ["report", "compare"])
def test_foreign_directory_needs_the_flag(runs, tmp_path, which):
    uid, gid = nobody_ids()
    out = tmp_path / "out"
    out.mkdir()
    os.chown(out, uid, gid)
    proc = run_tool(which, runs, out)
    one_line(proc, str(out), f"user {NOBODY}", "--allow-foreign-dir")
    assert os.listdir(out) == []
    proc = run_tool(which, runs, out, "--allow-foreign-dir")
    assert_written(proc, out, which, owner=0)


PLANT = """
import os, sys
kind, source, into = sys.argv[1:4]
for name in sys.argv[4:]:
    (os.symlink if kind == "symlink" else os.link)(os.path.join(source, name),
                                                   os.path.join(into, name))
"""


def as_nobody(uid, gid, *args):
    """args run as uid:gid (setpriv); must succeed."""
    proc = as_user(uid, gid, args, env={"PATH": "/usr/bin:/bin"}, cwd="/", timeout=60)
    assert proc.returncode == 0, describe(proc)


def test_links_planted_by_another_user(runs):
    uid, gid = nobody_ids()
    if not shutil.which("setpriv"):
        pytest.skip("setpriv (util-linux) is missing")
    base = Path(tempfile.mkdtemp(prefix="herd-outputs-", dir="/tmp"))
    try:
        base.chmod(0o755)  # nobody may enter; pytest's own directories are 0700
        secret = base / "secret"  # root's files, in a directory nobody cannot enter
        secret.mkdir(mode=0o700)
        root_files = make_victims(secret, REPORT_OUTPUTS)
        # Root's world-writable files: fs.protected_hardlinks lets nobody link those.
        public = make_victims(base / "public", OUTPUTS["compare"], mode=0o666)
        shared = base / "shared"
        shared.mkdir()
        shared.chmod(0o777)  # world-writable, no sticky bit
        shutil.copyfile(runs[0], shared / "run.h5")
        report, cmp = shared / "run-report", shared / "cmp"
        for d in (report, cmp):
            d.mkdir()
            d.chmod(0o777)  # made by an earlier run with umask 0

        python = "/usr/bin/python3"
        as_nobody(uid, gid, python, "-c", PLANT, "symlink", secret, report, *REPORT_OUTPUTS)
        as_nobody(uid, gid, python, "-c", PLANT, "link", base / "public", cmp,
                  *OUTPUTS["compare"])
        as_nobody(uid, gid, "ln", "-s", secret, shared / "cmpdir")
        as_nobody(uid, gid, "mkdir", shared / "mine")
        as_nobody(uid, gid, python, "-c", PLANT, "symlink", secret, shared / "mine",
                  *REPORT_OUTPUTS)

        # herd-report's default directory: RESULTS without .h5, plus -report
        proc = run_tool("report", (shared / "run.h5", None), None)
        assert_written(proc, report, "report", owner=0)
        proc = run_tool("compare", runs, cmp)
        assert_written(proc, cmp, "compare", owner=0)
        proc = run_tool("compare", runs, shared / "cmpdir")
        one_line(proc, "symbolic link")
        proc = run_tool("report", runs, shared / "mine")
        one_line(proc, f"user {NOBODY}")
        assert all(os.path.islink(shared / "mine" / n) for n in REPORT_OUTPUTS)
        proc = run_tool("report", runs, shared / "mine", "--allow-foreign-dir")
        assert_written(proc, shared / "mine", "report", owner=0)
        assert_untouched(root_files)
        assert_untouched(public)
        assert sorted(os.listdir(secret)) == sorted(REPORT_OUTPUTS)
    finally:
        shutil.rmtree(base)


# ---------------------------------------------------------------- the code


WRITE_CALLS = {"open", "io.open", "os.open", "os.fdopen", "os.makedirs", "os.mkdir",
               "os.replace", "os.rename", "os.renames", "os.link", "os.symlink", "os.unlink",
               "os.remove", "os.rmdir", "os.truncate", "os.chmod", "os.chown", "np.save",
               "np.savez", "np.savetxt", "plt.imsave", "plt.savefig"}
WRITE_MODULES = ("shutil.", "tempfile.", "pathlib.")
# ... but for the calls of those modules that only look (a pathlib.Path
# itself writes nothing: its writing methods are PATH_METHODS)
READ_ONLY_CALLS = {"shutil.which", "shutil.disk_usage", "shutil.get_terminal_size",
                   "pathlib.Path"}
PATH_METHODS = {"write_text", "write_bytes", "touch", "mkdir", "symlink_to", "hardlink_to"}
# Methods that write to their first argument (or keyword) when it is given.
FILE_METHODS = {"to_csv", "to_json", "to_html", "to_excel", "to_markdown", "to_latex",
                "to_string", "to_parquet", "to_pickle", "to_hdf", "to_feather", "to_xml",
                "savefig", "imsave"}
FILE_KEYWORDS = {"path_or_buf", "buf", "fname", "path", "excel_writer"}


def dotted(node):
    """'os.open' for os.open, 'open' for open, None for anything else."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = dotted(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


def bypassing_writes(tree):
    """(line, text) of every call that writes without OutputDir.new_file."""
    new_files = {item.optional_vars.id for node in ast.walk(tree) if isinstance(node, ast.With)
                 for item in node.items
                 if isinstance(item.context_expr, ast.Call)
                 and isinstance(item.context_expr.func, ast.Attribute)
                 and item.context_expr.func.attr == "new_file"
                 and isinstance(item.optional_vars, ast.Name)}
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = dotted(node.func) or ""
        method = node.func.attr if isinstance(node.func, ast.Attribute) else None
        bad = name in WRITE_CALLS or (name.startswith(WRITE_MODULES) and
                                      name not in READ_ONLY_CALLS) or method in PATH_METHODS
        if method in FILE_METHODS:
            dest = node.args[0] if node.args else next(
                (k.value for k in node.keywords if k.arg in FILE_KEYWORDS), None)
            bad = dest is not None and not (isinstance(dest, ast.Name) and dest.id in new_files)
        if name == "h5py.File":
            mode = node.args[1] if len(node.args) > 1 else next(
                (k.value for k in node.keywords if k.arg == "mode"), None)
            bad = not (isinstance(mode, ast.Constant) and mode.value == "r")
        if bad:
            found.append((node.lineno, ast.unparse(node)[:100]))
    return found


def test_every_write_goes_through_herd_output():
    sources = [p for p in sorted(ANALYSIS.iterdir()) if p.is_file() and (
        p.suffix == ".py" or p.read_bytes().startswith(b"#!/usr/bin/python3"))]
    assert {p.name for p in sources} >= {"herd-report", "herd-compare", "herd_plots.py",
                                         "herd_output.py"}, sources
    found = []
    for path in sources:
        if path.name == "herd_output.py":
            continue
        found += [f"analysis/{path.name}:{line}: {text}"
                  for line, text in bypassing_writes(ast.parse(path.read_text()))]
    assert not found, "writes that bypass herd_output:\n" + "\n".join(found)
