"""The results file's tables are declared once (src/results/results_tables.c)
and everything else follows that declaration:

1. analysis/herd_tables.json, which the analysis tools check every file
   against (herd_safe.py), is exactly what `herd tables` prints;
2. docs/results-format.md documents every table in a section of its own,
   every column of it and no other, with the declared type;
3. a run writes each table with exactly the declared columns, in order and
   with the declared types (a lock, a meta and a ladder phase and a monitor
   rank: every table but the kernel NFS client's two, which
   test_kclient.py reads); test_trust.py checks that a lost phase's CSV
   has the ranks table's columns.

Run: /usr/bin/python3 -m pytest -q -rs tests/integration/test_results_tables.py
"""
import json
import re
import sys

import h5py
import pytest

from conftest import REPO_DIR, describe, herd_cmd, herd_run, run_cmd, write_job

JSON = REPO_DIR / "analysis" / "herd_tables.json"
DOCS = REPO_DIR / "docs" / "results-format.md"
NUMPY = {"int32": "<i4", "uint64": "<u8", "float64": "<f8"}
# Tables a single-host posix run may not have: the kernel NFS client's two,
# metrics (nfsd op counts and node_exporter series: only where a kernel NFS
# server runs or an exporter answers) and disks (only where /proc/diskstats
# lists devices).
MAY_LACK = {"/monitor/clients", "/monitor/client_ops", "/monitor/metrics", "/monitor/disks"}


@pytest.fixture(scope="module")
def declared(herd_bin):
    proc = herd_cmd(herd_bin, "tables")
    assert proc.returncode == 0, describe(proc)
    return proc.stdout


def tables_of(text):
    """{path: [(column, type), ...]} in declaration order."""
    return {t["path"]: [tuple(c) for c in t["columns"]] for t in json.loads(text)["tables"]}


def test_analysis_reads_what_herd_declares(declared):
    assert JSON.read_text() == declared, (
        f"{JSON} is not `herd tables`' output: run `build/herd tables > {JSON.relative_to(REPO_DIR)}`")
    # the tools' checker, as they import it: its tables are these, and
    # the columns it requires are declared ones
    proc = run_cmd([sys.executable, "-c", "import json, sys; sys.path.insert(0, sys.argv[1]); "
                    "import herd_safe; print(json.dumps(herd_safe.TABLES))",
                    str(REPO_DIR / "analysis")])
    assert proc.returncode == 0, describe(proc)
    checked = json.loads(proc.stdout)
    for path, columns in tables_of(declared).items():
        key = "phase/ranks" if path == "/phases/<name>/ranks" else path.rsplit("/", 1)[1]
        kinds, required = checked.pop(key)
        assert list(kinds) == [c for c, _ in columns], path
        assert set(required) <= set(kinds), (path, set(required) - set(kinds))
    assert not checked, f"herd_safe checks tables herd does not declare: {sorted(checked)}"


def doc_sections(text):
    """{table path: [(names, type), ...]}: the rows of the field table in
    each section whose heading names a table (one path in backquotes)."""
    sections, path = {}, None
    for line in text.splitlines():
        if line.startswith("#"):
            named = re.findall(r"`(/[^`]+)`", line)
            path = named[0] if len(named) == 1 else None
            if path is not None:
                assert path not in sections, f"two sections for {path}"
                sections[path] = []
        elif path is not None and line.startswith("| `"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            sections[path].append((cells[0], cells[1]))
    return sections


def documented_names(cell, order):
    """The columns one row's first cell names: `a`, `b` or a range
    `a` ... `b` (in declaration order)."""
    names = re.findall(r"`([a-z0-9_]+)`", cell)
    if "..." in cell:
        assert len(names) == 2, cell
        first, last = order.index(names[0]), order.index(names[1])
        return order[first:last + 1]
    return names


def test_docs_describe_every_declared_column(declared):
    docs = doc_sections(DOCS.read_text())
    problems = []
    for path, columns in tables_of(declared).items():
        if path not in docs:
            problems.append(f"{path}: no section")
            continue
        types = dict(columns)
        order = [c for c, _ in columns]
        seen = []
        for cell, typ in docs[path]:
            for name in documented_names(cell, order):
                seen.append(name)
                if name not in types:
                    problems.append(f"{path}: documents {name}, which herd does not write")
                elif typ and typ != types[name]:
                    problems.append(f"{path}: {name} is {types[name]}, the docs say {typ}")
        missing = [c for c in order if c not in seen]
        if missing:
            problems.append(f"{path}: undocumented {missing}")
        if len(seen) != len(set(seen)):
            problems.append(f"{path}: a column documented twice")
    assert not problems, "\n".join(problems)


def test_a_run_writes_the_declared_tables(herd_bin, tmp_path, declared):
    target = tmp_path / "target"
    target.mkdir()
    job = write_job(tmp_path / "job.ini",
                    {"target": target, "file_size": "256K", "block_size": "64K",
                     "monitor_rank": "last", "monitor_interval": "100ms",
                     "monitor_processes": "no-such-process"},
                    [("write", {"kind": "write"}),
                     ("read", {"kind": "read", "ranks_active": "1,2", "verify": "yes"}),
                     ("meta", {"kind": "meta", "files": 10, "file_size": "0"}),
                     ("lock", {"kind": "lock", "count": 5, "lock_hold": "1ms"})])
    out = tmp_path / "r.h5"
    proc = herd_run(herd_bin, 3, job, out)
    assert proc.returncode == 0, describe(proc)
    tables = tables_of(declared)
    found = set()
    with h5py.File(out, "r") as f:
        def visit(name, obj):
            if not isinstance(obj, h5py.Dataset) or obj.dtype.names is None:
                return
            parts = name.split("/")
            if parts[0] == "phases":
                parts[1] = "<ladder>" if parts[2] == "steps" else "<name>"
            if parts[0] == "cleanup":
                return
            path = "/" + "/".join(parts)
            assert path in tables, f"/{name}: a table herd does not declare"
            found.add(path)
            want = [(c, NUMPY.get(t, "|" + t)) for c, t in tables[path]]
            got = [(c, obj.dtype.fields[c][0].str) for c in obj.dtype.names]
            assert got == want, f"/{name}"
        f.visititems(visit)
    assert set(tables) - MAY_LACK <= found, sorted(set(tables) - MAY_LACK - found)
