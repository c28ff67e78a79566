"""The server monitor (monitor_rank / monitor_host, monitor_url) and the
/monitor tables of results.h5.

1. A monitor rank on this machine during a write phase and an idle phase:
   samples every monitor_interval (count within 1 of the sampled span /
   interval), CPU fractions summing to 1, times on the common clock inside
   the phases' span, phase marks, named processes (herd itself), notes for
   what this host lacks (no kernel nfsd), the summary's server CPU lines.
2. Against the embedded NFS server (root): ganesha.nfsd's CPU is above 0
   while a libnfs write phase runs (the monitor confined to the server's
   network namespace: one process), and the export's loop device shows the
   written bytes.
3. node_exporter (Debian's prometheus-node-exporter, started by the test on
   127.0.0.1 at a free port, reading this host's CPU, load and memory and a
   sample /proc/net/rpc/nfsd): rank 0 scrapes it; values present; the
   exporter is stopped in the middle of the run: the failure is noted once,
   every phase still ends ok and the exit code is 0. An exporter frozen
   (SIGSTOP) for longer than a scrape may take, with nfsd thread-pool
   counters (node_nfsd_pool_*_total, from its textfile directory, as the
   knfsd guest serves them) and a sample /proc/diskstats: the first scrape
   after the freeze covers the whole gap (its dt), so the pool counters'
   deltas add up exactly to what the counters grew, and so do the
   summary's pkts/s and woken share; every disk of the sample is a
   /monitor/disks row, flushes NaN-free only where the kernel counts them.
4. Bad monitor settings: one line, exit 2.
5. A run stopped by SIGTERM keeps the samples up to the stop.
6. monitor_scope: a decoy named ganesha.nfsd (a copy of sleep) outside the
   embedded server's network namespace is counted by the whole-host
   monitor and not by one confined to the namespace, nor with the key
   unset inside nfs-server.sh exec (the server's namespace by default;
   root); processes in a
   cgroup (v1 and v2 hierarchies, made by the test) and below it are
   counted, one outside is not (root); a scope that cannot be opened on the
   monitor host is a note, no process rows, and the run goes on. The scope
   is the scope attribute of /monitor/processes.
7. Coverage: every source's baseline reading is taken before the first
   phase starts and a last one after the last phase ends, so each phase's
   monitor_covered is true: a monitor rank's first reading precedes the
   first phase (write, idle, then a load ladder's steps, all covered);
   against the kernel nfsd's guest (root, user-mode-linux) the
   node_exporter rows meeting a first and only write phase count every
   byte herd wrote, in 3 runs. A monitor_url on a closed port, or one that
   holds its replies longer than the run waits (3 s), is said once on
   stderr and in /monitor/notes, the run completes and its first phase is
   not covered; the summary marks such phases "(part)".
8. Whose CPU srv cpu is: a monitor rank (or a node_exporter on 127.0.0.1)
   on the host of 2 I/O ranks: the legend says the host's CPU is shared
   with 2 client ranks, and so do --json and the results file
   (monitor_client_ranks).

Run: /usr/bin/python3 -m pytest -q -rs tests/integration/test_monitor.py
"""

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import h5py
import numpy as np
import pandas as pd
import pytest

from conftest import (MIB, REPO_DIR, describe, herd_background, herd_cmd, herd_run,
                      herd_run_interrupted, hold_ranks, mpirun_args, rank_pids, write_job)
from test_knfsd import knfsd  # noqa: F401 (the fixture: the kernel nfsd in a UML guest)

sys.path.insert(0, str(REPO_DIR / "analysis"))
import herd_results  # noqa: E402

CPU_MODES = ["cpu_user", "cpu_nice", "cpu_system", "cpu_idle", "cpu_iowait", "cpu_irq",
             "cpu_softirq", "cpu_steal"]
NODE_EXPORTER = shutil.which("prometheus-node-exporter") or "/usr/bin/prometheus-node-exporter"
NFSD_SAMPLE = REPO_DIR / "tests" / "data" / "nfsd-older-kernel.txt"
DISKSTATS_SAMPLE = REPO_DIR / "tests" / "data" / "procfs-diskstats.txt"


def text(v):
    return v.decode() if isinstance(v, bytes) else v


def monitor_tables(path):
    """Every /monitor table as a numpy structured array, plus the attrs."""
    with h5py.File(path, "r") as f:
        m = f["monitor"]
        tables = {name: m[name][()] for name in m}
        attrs = {k: text(v) for k, v in m.attrs.items()}
        status = text(f.attrs["status"])
    return tables, attrs, status


def process_rows(path, name):
    """The /monitor/processes rows of one name, and the table's scope
    attribute (through the loader)."""
    tables, _, _ = monitor_tables(path)
    procs = tables["processes"]
    with herd_results.load(path) as run:
        scope = run.process_scope
    return procs[[text(n) == name for n in procs["name"]]], scope


@contextlib.contextmanager
def sleepers(exe, n):
    """n processes of executable exe (a copy of sleep: its file name is
    their comm), stopped by PID when the block ends."""
    procs = []
    try:
        for _ in range(n):
            procs.append(subprocess.Popen([str(exe), "600"]))
        yield procs
    finally:
        for p in procs:
            p.kill()
            p.wait()


def check_samples(samples, interval, t0, t1):
    """Regular samples over [t0, t1]: count, spacing, CPU fractions."""
    assert len(samples) > 0
    t = samples["t"]
    assert np.all(np.diff(t) > 0), "sample times must increase"
    # The baseline reading (the first row's t - dt) is taken before the
    # first phase starts, the last one at the stop, after the last ends.
    base = t[0] - samples["dt"][0]
    assert base <= t0 and t1 <= t[-1] <= t1 + interval, (base, t[-1], t0, t1)
    # One sample per interval from the baseline, and the last one at the
    # stop, which comes up to one interval after t1 (rank 0 saves the file
    # first): so one regular sample more than (t1 - base) / interval at most.
    expected = (t1 - base) / interval
    assert expected - 1 <= len(samples) <= expected + 2, \
        f"{len(samples)} samples, {expected:.2f} expected"
    # Samples are due on a fixed schedule: a late wake-up on a busy host
    # lengthens one window and shortens the next, but the windows keep the
    # interval on the whole. The last one may end early, at the stop.
    full = samples[:-1]
    assert np.median(full["dt"]) == pytest.approx(interval, rel=0.1), full["dt"]
    assert np.all((full["dt"] > 0) & (full["dt"] < 2.5 * interval)), full["dt"]
    total = sum(samples[c] for c in CPU_MODES)
    assert np.allclose(total, 1.0), total
    busy = 1 - samples["cpu_idle"] - samples["cpu_iowait"]
    assert np.allclose(busy, samples["cpu_busy"])


def test_monitor_rank_samples(herd_bin, tmp_path):
    interval = 0.1
    # herd under a name of its own, so that the monitor counts this run's
    # ranks and no other herd on the machine.
    name = f"herd{os.getpid() % 100000}"
    shutil.copy(herd_bin, tmp_path / name)
    herd_bin = str(tmp_path / name)
    target = tmp_path / "target"
    target.mkdir()
    job = write_job(tmp_path / "job.ini",
                    {"target": target, "monitor_rank": "last",
                     "monitor_interval": f"{int(interval * 1000)}ms",
                     "monitor_processes": f"{name},no-such-process"},
                    [("write", {"kind": "write", "file_size": "64M", "iterations": "3"}),
                     ("idle", {"kind": "idle", "duration": "1s"})])
    out = tmp_path / "r.h5"
    proc = herd_run(herd_bin, 4, job, out)
    assert proc.returncode == 0, describe(proc)
    tables, attrs, _ = monitor_tables(out)
    assert attrs["rank"] == 3 and attrs["interval"] == pytest.approx(interval)
    marks = tables["marks"]
    assert [text(p) for p in marks["phase"]] == ["write", "idle"]
    assert np.all(marks["t_end"] > marks["t_start"])
    with h5py.File(out, "r") as f:  # I/O ranks only: the monitor rank wrote no rows
        assert f.attrs["nranks"] == 3
        assert sorted(set(f["phases/write/ranks"]["rank"])) == [0, 1, 2]
        for phase in ("write", "idle"):
            g = f["phases"][phase]
            i = [text(p) for p in marks["phase"]].index(phase)
            assert marks["t_start"][i] == g.attrs["t_start"]
            assert marks["t_end"][i] == g.attrs["t_end"]
    samples = tables["samples"]
    assert set(text(s) for s in samples["source"]) == {"proc"}
    check_samples(samples, interval, marks["t_start"][0], marks["t_end"][-1])
    assert np.all(samples["mem_total"] > 0) and np.all(samples["load1"] >= 0)
    assert np.all(samples["ncpus"] == os.cpu_count())
    # herd's own ranks as a named process: 4 processes, CPU used while writing.
    procs = tables["processes"]
    herd = procs[[text(n) == name for n in procs["name"]]]
    assert len(herd) == len(samples)
    assert np.all(herd["processes"] == 4), herd["processes"]
    assert np.all(herd["rss_bytes"] > 0)
    assert herd["cpu"].max() > 0.1
    # The busiest thread: never more than its processes in the same window,
    # never more than one core (plus one /proc tick, USER_HZ), and busy while
    # the ranks write.
    tick = 1.0 / os.sysconf("SC_CLK_TCK")
    assert np.all(herd["cpu_max_thread"] <= herd["cpu"] + 1e-9)
    assert np.all(herd["cpu_max_thread"] <= 1.0 + tick / herd["dt"] + 1e-9)
    writing = herd[herd["t"] <= marks["t_end"][0]]
    assert writing["cpu_max_thread"].max() > 0.05, writing
    notes = [text(n) for n in tables["notes"]["text"]]
    # The kernel NFS server's counters: a note saying they are missing
    # exactly when this host has none (checked on both kinds of host), and
    # counters in every sample when it has them.
    nfsd_notes = [n for n in notes if "/proc/net/rpc/nfsd" in n]
    if Path("/proc/net/rpc/nfsd").exists():
        assert nfsd_notes == [], notes
        assert np.all(~np.isnan(samples["nfsd_rpc_calls"])), samples["nfsd_rpc_calls"]
    else:
        assert len(nfsd_notes) == 1, notes
        assert nfsd_notes[0].startswith("no kernel NFS server counters (/proc/net/rpc/nfsd)"), \
            nfsd_notes
        assert np.all(np.isnan(samples["nfsd_rpc_calls"])), samples["nfsd_rpc_calls"]
        assert np.all(np.isnan(samples["nfsd_threads"])), samples["nfsd_threads"]
    assert sum("no-such-process" in n for n in notes) == 1, notes
    # The summary prints the server CPU per phase, equal to the samples' mean.
    lines = [l.split() for l in proc.stdout.splitlines()]
    cpu_lines = {l[0]: l for l in lines if len(l) == 8 and l[1].endswith("%")}
    assert set(cpu_lines) == {"write", "idle"}, proc.stdout
    i = 0
    inside = samples[(samples["t"] - samples["dt"] <= marks["t_end"][i]) &
                     (samples["t"] > marks["t_start"][i])]
    assert float(cpu_lines["write"][1][:-1]) == pytest.approx(100 * inside["cpu_busy"].mean(),
                                                              abs=0.051)
    assert float(cpu_lines["write"][2][:-1]) == pytest.approx(100 * inside["cpu_busy"].max(),
                                                              abs=0.051)


def covers(samples, source, t0, t1):
    """The rule of monitor_covered for one source over raw /monitor/samples
    rows: herd_results.covering (the analysis side's reading of the rule,
    written apart from the C side that stores the attribute)."""
    frame = pd.DataFrame({"source": [s.decode() for s in samples["source"]],
                          "t": samples["t"], "dt": samples["dt"]})
    return herd_results.covering(frame, source, t0, t1)


def test_monitor_rank_baseline_before_first_phase(herd_bin, tmp_path):
    """The monitor rank's baseline reading is taken before the first phase
    starts (the run waits for it), and the readings go on past the last
    phase's end: every phase, the first, one after an idle phase and the
    steps of a load ladder that ends the run, is covered whole."""
    target = tmp_path / "target"
    target.mkdir()
    job = write_job(tmp_path / "job.ini",
                    {"target": target, "monitor_rank": "last", "monitor_interval": "100ms",
                     "file_size": "16M"},
                    [("w", {"kind": "write"}),
                     ("pause", {"kind": "idle", "duration": "300ms"}),
                     ("r", {"kind": "read", "ranks_step": 2})])
    out = tmp_path / "r.h5"
    summary = tmp_path / "summary.json"
    proc = herd_run(herd_bin, 3, job, out, "--json", summary)
    assert proc.returncode == 0, describe(proc)
    tables, attrs, _ = monitor_tables(out)
    assert attrs["rank"] == 2
    # The monitor rank samples the host its 2 I/O ranks run on: srv cpu is
    # that host's CPU, shared with them, and the summary, the JSON and the
    # results file say so.
    assert "shared with 2 client ranks" in proc.stdout, proc.stdout
    assert json.loads(summary.read_text())["monitor_client_ranks"] == 2
    with h5py.File(out, "r") as f:
        assert f.attrs["monitor_client_ranks"] == 2
    samples, marks = tables["samples"], tables["marks"]
    phases = [text(p) for p in marks["phase"]]
    assert phases == ["w", "pause", "r.1r", "r.2r"], phases
    base = samples["t"][0] - samples["dt"][0]
    print(f"\nbaseline {marks['t_start'][0] - base:.3f} s before the first phase's start, "
          f"last reading {samples['t'][-1] - marks['t_end'][-1]:.3f} s after the last's end")
    assert base <= marks["t_start"][0], \
        f"the first reading ({base}) follows the first phase's start ({marks['t_start'][0]})"
    assert samples["t"][-1] >= marks["t_end"][-1], (samples["t"][-1], marks["t_end"][-1])
    with h5py.File(out, "r") as f:
        covered = {p: f["phases"][p].attrs.get("monitor_covered") for p in phases}
    for i, p in enumerate(phases):
        assert covers(samples, "proc", marks["t_start"][i], marks["t_end"][i]), (p, samples)
        assert covered[p] is not None and bool(covered[p]), covered
    assert "(part)" not in proc.stdout, proc.stdout


def test_monitor_settings_refused(herd_bin, tmp_path):
    cases = [
        ({"monitor_rank": "5"}, 3, "monitor_rank 5: the run has only 3 ranks"),
        ({"monitor_host": "no-such-host.invalid"}, 2, "monitor_host 'no-such-host.invalid': "
                                                      "no rank of this run is on it"),
        ({"monitor_host": socket.gethostname()}, 2, "every rank is a monitor rank"),
    ]
    for keys, nranks, message in cases:
        job = write_job(tmp_path / "bad.ini", {"target": tmp_path, **keys},
                        [("w", {"kind": "write", "file_size": "1M"})])
        proc = herd_run(herd_bin, nranks, job, tmp_path / "bad.h5", quiet=True)
        assert proc.returncode == 2, describe(proc)
        errs = [l for l in proc.stderr.splitlines() if l.startswith("herd:")]
        assert len(errs) == 1 and message in errs[0], describe(proc)
        assert not (tmp_path / "bad.h5").exists()
    checks = [
        ({"monitor_rank": "first"}, "key 'monitor_rank': 'first' is not last or a rank number"),
        ({"monitor_rank": "1", "monitor_host": "x"}, "set monitor_host or monitor_rank"),
        ({"monitor_interval": "1ms"}, "key 'monitor_interval': must be at least 10ms"),
        ({"monitor_url": "ftp://x/metrics"}, "is not an http:// or https:// URL"),
        ({"monitor_scope": "pid:1"}, "key 'monitor_scope': 'pid:1' is not host, ns:PATH"),
        ({"monitor_scope": "ns:proc/1/ns/net"}, "the path after ns: must be absolute"),
        ({"monitor_scope": "cgroup:"}, "the path after cgroup: must be absolute"),
    ]
    for keys, message in checks:
        job = write_job(tmp_path / "bad.ini", {"target": tmp_path, **keys},
                        [("w", {"kind": "write", "file_size": "1M"})])
        proc = herd_cmd(herd_bin, "check", job)
        assert proc.returncode == 2 and message in proc.stderr, describe(proc)
        assert len(proc.stderr.strip().splitlines()) == 1, describe(proc)
    job = write_job(tmp_path / "bad.ini", {"target": tmp_path},
                    [("w", {"kind": "write", "monitor_rank": "last"})])
    proc = herd_cmd(herd_bin, "check", job)
    assert proc.returncode == 2 and "can only be set in [global]" in proc.stderr


def test_monitor_sigterm_keeps_samples(herd_bin, tmp_path):
    job = write_job(tmp_path / "job.ini",
                    {"target": tmp_path, "monitor_rank": "last", "monitor_interval": "100ms"},
                    [("w", {"kind": "write", "file_size": "8M"}),
                     ("long", {"kind": "idle", "duration": "60s"}),
                     ("never", {"kind": "write", "file_size": "8M"})])
    out = tmp_path / "r.h5"
    herd_run_interrupted(herd_bin, 3, job, out, "w", 1.0)
    tables, _, status = monitor_tables(out)
    assert status == "interrupted"
    marks = tables["marks"]
    assert [text(x) for x in marks["phase"]] == ["w", "long"]
    samples = tables["samples"]
    # about a second of idle at 0.1 s: the samples reach the stop
    assert samples["t"][-1] >= marks["t_end"][-1] - 0.15, (samples["t"][-1], marks["t_end"])
    assert len(samples) >= 8


# ---------------------------------------------------------------- node_exporter


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class NodeExporter:
    """prometheus-node-exporter on 127.0.0.1:<free port>, its procfs a
    directory with this host's stat, loadavg and meminfo and a sample
    /proc/net/rpc/nfsd (this machine runs no kernel NFS server)."""

    def __init__(self, workdir, extra=()):
        self.procfs = workdir / "procfs"
        (self.procfs / "net" / "rpc").mkdir(parents=True)
        for name in ("stat", "loadavg", "meminfo"):
            (self.procfs / name).symlink_to(f"/proc/{name}")
        shutil.copy(NFSD_SAMPLE, self.procfs / "net" / "rpc" / "nfsd")
        shutil.copy(DISKSTATS_SAMPLE, self.procfs / "diskstats")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/metrics"
        self.log = open(workdir / "node_exporter.log", "w")
        self.proc = subprocess.Popen(
            [NODE_EXPORTER, f"--web.listen-address=127.0.0.1:{self.port}",
             f"--path.procfs={self.procfs}", "--collector.disable-defaults", "--collector.cpu",
             "--collector.loadavg", "--collector.meminfo", "--collector.nfsd", *extra],
            stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return
            except OSError:
                if self.proc.poll() is not None:
                    break
                time.sleep(0.1)
        self.stop()
        pytest.fail(f"node_exporter did not start: {(workdir / 'node_exporter.log').read_text()}")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


@pytest.fixture
def node_exporter(tmp_path):
    if not os.access(NODE_EXPORTER, os.X_OK):
        pytest.skip("prometheus-node-exporter is not installed")
    ne = NodeExporter(tmp_path)
    try:
        yield ne
    finally:
        ne.stop()
    assert ne.proc.poll() is not None


def write_pool(textfile_dir, packets, woken):
    """node_nfsd_pool_*_total for two pools (a knfsd guest's pool.prom),
    replaced in one rename: a scrape never reads half of it."""
    lines = ["# TYPE node_nfsd_pool_packets_arrived_total counter",
             "# TYPE node_nfsd_pool_threads_woken_total counter"]
    for pool in (0, 1):
        lines.append(f'node_nfsd_pool_packets_arrived_total{{pool="{pool}"}} {packets[pool]}')
        lines.append(f'node_nfsd_pool_threads_woken_total{{pool="{pool}"}} {woken[pool]}')
    tmp = textfile_dir / "pool.prom.tmp"
    tmp.write_text("\n".join(lines) + "\n")
    os.replace(tmp, textfile_dir / "pool.prom")


def test_node_exporter_gap_pool_and_disks(herd_bin, tmp_path):
    if not os.access(NODE_EXPORTER, os.X_OK):
        pytest.skip("prometheus-node-exporter is not installed")
    textfiles = tmp_path / "textfiles"
    textfiles.mkdir()
    write_pool(textfiles, (1000, 500), (800, 400))
    ne = NodeExporter(tmp_path, ("--collector.diskstats", "--collector.textfile",
                                 f"--collector.textfile.directory={textfiles}"))
    try:
        job = write_job(tmp_path / "job.ini",
                        {"target": tmp_path, "monitor_url": ne.url, "monitor_interval": "200ms"},
                        [("quiet", {"kind": "idle", "duration": "7s"})])
        out = tmp_path / "r.h5"
        with herd_background(herd_bin, 2, "run", job, "-o", out) as run:
            run.wait_line("phase quiet: started|quiet:", timeout=60)
            time.sleep(1.0)
            write_pool(textfiles, (1600, 700), (1100, 450))
            time.sleep(0.6)
            os.kill(ne.proc.pid, signal.SIGSTOP)   # longer than a scrape's 2 s
            time.sleep(3.0)
            write_pool(textfiles, (2600, 900), (1300, 500))
            os.kill(ne.proc.pid, signal.SIGCONT)
            done, _ = run.wait(timeout=120)
    finally:
        os.kill(ne.proc.pid, signal.SIGCONT)
        ne.stop()
    assert done.returncode == 0, describe(done)
    tables, _, _ = monitor_tables(out)
    samples = tables["samples"]
    notes = [text(n) for n in tables["notes"]["text"]]
    assert any("timed out" in n.lower() for n in notes), notes
    assert any("answering again" in n for n in notes), notes
    # The scrape after the failed one (2 s timeout) covers the gap: one row
    # of 2 s and more.
    assert samples["dt"].max() >= 2.0, samples["dt"]
    # Nothing lost: the deltas add up to what the counters grew since the
    # first scrape (the baseline, taken before the first rewrite).
    assert np.nansum(samples["pool_packets"]) == (2600 + 900) - (1000 + 500)
    assert np.nansum(samples["pool_threads_woken"]) == (1300 + 500) - (800 + 400)
    # The summary: pkts/s over the seconds the samples cover, woken share.
    with h5py.File(out, "r") as f:
        a = dict(f["phases"]["quiet"].attrs)
        marks = tables["marks"]
        inside = samples[(samples["t"] - samples["dt"] <= marks["t_end"][0]) &
                         (samples["t"] > marks["t_start"][0])]
        assert a["summary_nfsd_packets_per_s"] == pytest.approx(
            np.nansum(inside["pool_packets"]) / inside["dt"].sum(), rel=1e-9)
        assert a["summary_nfsd_woken_share"] == pytest.approx(
            np.nansum(inside["pool_threads_woken"]) / np.nansum(inside["pool_packets"]),
            rel=1e-9)
    share = 100 * a["summary_nfsd_woken_share"]
    row = [l.split() for l in done.stdout.splitlines() if l.startswith("quiet ")][-1]
    assert row[-1] == f"{share:.0f}%", done.stdout
    # Every disk of the sample /proc/diskstats, unchanged: zero deltas;
    # flushes where the line has the flush columns (vda, 20 columns).
    disks = tables["disks"]
    devices = {text(d) for d in disks["device"]}
    assert {"vda", "sda", "sdb"} <= devices, devices
    vda = disks[disks["device"] == b"vda"]
    assert np.all(vda["writes"] == 0) and np.all(vda["flushes"] == 0), vda
    sda = disks[disks["device"] == b"sda"]
    assert np.all(np.isnan(sda["flushes"])), sda


class HeldExporter:
    """A node_exporter stand-in on 127.0.0.1:<free port> that holds every
    reply until `hold` seconds after the first request came, then answers
    each at once with a small Prometheus page (CPU seconds that grow)."""

    def __init__(self, hold):
        import http.server
        import threading
        exporter = self
        self.first = None
        self.hold = hold
        self.requests = 0

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                now = time.monotonic()
                exporter.requests += 1
                if exporter.first is None:
                    exporter.first = now
                time.sleep(max(0.0, exporter.first + exporter.hold - now))
                body = (f'node_cpu_seconds_total{{cpu="0",mode="idle"}} {time.monotonic():.3f}\n'
                        f'node_cpu_seconds_total{{cpu="0",mode="user"}} 1\n'
                        f"node_load1 0.5\n").encode()
                with contextlib.suppress(OSError):  # herd gave up on this one: closed
                    self.send_response(200)
                    self.send_header("Content-Type", "text/plain; version=0.0.4")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/metrics"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)


@pytest.mark.parametrize("exporter", ["closed", "slow"])
def test_node_exporter_baseline_late(herd_bin, tmp_path, exporter):
    """A monitor_url that does not answer (a closed port) or answers only
    after longer than the run waits for the baseline (3 s at 200 ms): the
    run goes on after the bounded wait and completes, says so once on
    stderr and once in /monitor/notes, and its first phase is not covered.
    A slow one's later readings still cover a phase that starts after its
    first answer."""
    held = HeldExporter(5.0) if exporter == "slow" else None
    url = held.url if held else f"http://127.0.0.1:{free_port()}/metrics"
    job = write_job(tmp_path / "job.ini",
                    {"target": tmp_path, "monitor_url": url, "monitor_interval": "200ms"},
                    [("first", {"kind": "idle", "duration": "4s"}),
                     ("second", {"kind": "idle", "duration": "1s"})])
    out = tmp_path / "r.h5"
    try:
        proc = herd_run(herd_bin, 2, job, out)
    finally:
        if held:
            held.stop()
    assert proc.returncode == 0, describe(proc)
    said = [l for l in proc.stderr.splitlines() if "no baseline reading" in l]
    assert len(said) == 1, describe(proc)
    assert said[0].startswith("herd: monitor node_exporter on 127.0.0.1:"), said
    assert "phase first started without one" in said[0], said
    tables, _, status = monitor_tables(out)
    assert status == "complete"
    notes = [text(n) for n in tables["notes"]["text"]]
    assert sum("no baseline reading within 3 s" in n for n in notes) == 1, notes
    with h5py.File(out, "r") as f:
        covered = {n: f["phases"][n].attrs.get("monitor_covered") for n in f["phases"]}
    assert covered["first"] is not None and not covered["first"], covered
    samples = tables.get("samples")
    marks = tables["marks"]
    if exporter == "closed":
        assert samples is None or len(samples) == 0, samples
        assert not covered["second"], covered
    else:
        # Its first answer is the baseline: after the first phase started.
        base = samples["t"][0] - samples["dt"][0]
        assert base > marks["t_start"][0], (base, marks["t_start"][0])
        assert held.requests >= 3, held.requests
        want = covers(samples, "node_exporter", marks["t_start"][1], marks["t_end"][1])
        print(f"\nslow exporter: baseline {base - marks['t_start'][0]:.2f} s after the first "
              f"phase's start, {held.requests} requests; second phase covered: "
              f"{covered['second']}")
        assert bool(covered["second"]) == want, (covered, samples["t"], samples["dt"])


def meeting_phase(rows, t0, t1):
    """The sample rows whose interval (t - dt, t] meets the phase [t0, t1]
    (herd's summary takes the same ones)."""
    return rows[(rows["t"] - rows["dt"] <= t1) & (rows["t"] > t0)]


def test_knfsd_monitor_covers_a_first_write_phase(knfsd, herd_bin, tmp_path):  # noqa: F811
    """Against the kernel nfsd's guest (test_knfsd.py's fixture), its
    node_exporter scraped every 200 ms: the baseline scrape is in before
    the first phase starts, and a last one follows its end. With the write
    as the job's first and only phase (no idle phase around it), the rows
    meeting it count every byte herd wrote and no more than nfsd's io
    counter grew, in each of 3 runs, and the phase is marked covered. A
    busy guest answers a scrape in 0.4-0.6 s: a baseline taken at the start
    instant missed what nfsd wrote meanwhile."""
    import test_knfsd as k
    if k._WHY:
        pytest.skip(k._WHY)
    s = knfsd()
    runs, failed = [], []
    for i in range(3):
        job = write_job(tmp_path / f"first{i}.ini",
                        {"backend": "libnfs", "target": k.URL3, "file_size": "16M",
                         "block_size": "1M", "run_id": f"knfsd-first{i}",
                         "monitor_url": k.METRICS_URL, "monitor_interval": "200ms"},
                        [("w", {"kind": "write"})])
        out = tmp_path / f"first{i}.h5"
        io0 = s.nfsd_io()[1]
        res = k.herd_ok(s, herd_bin, job, out)
        io_grew = s.nfsd_io()[1] - io0
        ph = res.phases["w"]
        wrote = int(ph.ranks["bytes"].sum())
        assert wrote == k.NRANKS * 16 * MIB, wrote
        rows, notes, _ = k.samples_of(out)
        assert rows is not None and len(rows) > 0, f"run {i}: no samples; notes {notes}"
        t0, t1 = ph.attrs["t_start"], ph.attrs["t_end"]
        counted = float(np.nansum(meeting_phase(rows, t0, t1)["nfsd_write_bytes"]))
        covered = ph.attrs.get("monitor_covered")
        runs.append(f"run {i}: {counted / MIB:.2f} MiB counted of {wrote / MIB:.0f} MiB "
                    f"(nfsd io +{io_grew / MIB:.2f} MiB), baseline "
                    f"{t0 - (rows['t'][0] - rows['dt'][0]):+.3f} s before the start, last "
                    f"reading {rows['t'][-1] - t1:+.3f} s after the end, monitor_covered "
                    f"{covered}")
        if not (wrote <= counted <= io_grew and covered is not None and bool(covered)):
            failed.append(runs[-1] + f"; notes {notes}")
    print("\n" + "\n".join(runs))
    assert not failed, "\n".join(failed)


def test_node_exporter_scrape(herd_bin, tmp_path, node_exporter):
    job = write_job(tmp_path / "job.ini",
                    {"target": tmp_path, "monitor_url": node_exporter.url,
                     "monitor_interval": "200ms"},
                    [("first", {"kind": "idle", "duration": "1500ms"}),
                     ("write", {"kind": "write", "file_size": "16M"}),
                     ("after", {"kind": "idle", "duration": "1s"})])
    out = tmp_path / "r.h5"
    pids = {}
    with herd_background(herd_bin, 2, "run", job, "-o", out) as run:
        try:
            run.wait_line("phase first:")
            # The ranks are held while the exporter stops, however slowly
            # this test gets there: no scrape after the stop is a success,
            # and the phases after the first have no reading.
            pids = rank_pids(run.pid, 2)
            hold_ranks(pids, True)
            node_exporter.stop()
            stopped_unix = time.time()
        finally:
            hold_ranks(pids, False)
        done, _ = run.wait(timeout=120)
    stderr, stdout = done.stderr, done.stdout
    assert done.returncode == 0, stderr
    with h5py.File(out, "r") as f:
        assert [text(f["phases"][n].attrs["status"]) for n in f["phases"]] == ["ok"] * 3
    tables, attrs, status = monitor_tables(out)
    assert status == "complete" and attrs["url"] == node_exporter.url
    assert attrs["rank"] == -1  # no monitor rank: rank 0 scraped
    samples = tables["samples"]
    assert set(text(s) for s in samples["source"]) == {"node_exporter"}
    host = f"127.0.0.1:{node_exporter.port}"
    assert set(text(h) for h in samples["host"]) == {host}
    marks = tables["marks"]
    # Samples only while the exporter answered: the first phase and up to
    # the stop (a scrape may fall between its end and the hold).
    with h5py.File(out, "r") as f:
        stopped = stopped_unix - float(f.attrs["epoch_unix"])
    assert np.all(samples["t"] <= stopped), (samples["t"], stopped)
    assert np.sum(samples["t"] <= marks["t_end"][0]) >= 4, samples["t"]
    assert np.allclose(sum(samples[c] for c in CPU_MODES), 1.0)
    assert np.all(samples["ncpus"] == os.cpu_count())
    assert np.all(samples["mem_total"] > 0) and np.all(samples["mem_used"] > 0)
    assert np.all(~np.isnan(samples["load1"]))
    assert np.all(samples["nfsd_threads"] == 8)  # the sample nfsd file's th line
    assert np.all(samples["nfsd_rpc_calls"] == 0)  # a static file: no change
    metrics = tables["metrics"]
    names = {text(n) for n in metrics["name"]}
    assert "node_nfsd_server_threads" in names
    notes = [(text(n["source"]), text(n["text"])) for n in tables["notes"]]
    failures = [t for s, t in notes if s == "node_exporter" and node_exporter.url in t]
    assert len(failures) == 1, notes
    assert "refused" in failures[0].lower() or "connect" in failures[0].lower(), failures
    # The summary: server CPU and nfsd threads for the phase the exporter
    # answered in, none for the phases after it stopped. The first is
    # covered whole when a scrape fell between its end and the stop, the
    # two after it are not (no reading reaches their end); a row not
    # covered whole carries the mark, as its monitor_covered says.
    first_whole = bool(np.any((samples["t"] >= marks["t_end"][0])
                              & (samples["t"] <= stopped)))
    table = [l.split() for l in stdout.splitlines()]
    rows = {l[0]: l for l in table if len(l) in (8, 9) and l[0] in ("first", "write", "after")}
    assert rows["first"][3] == "8" and rows["first"][1].endswith("%"), stdout
    assert rows["after"][1:] == ["-"] * 7 + ["(part)"], stdout
    assert [rows[p][-1] == "(part)" for p in ("first", "write", "after")] == \
        [not first_whole, True, True], stdout
    assert "(part) = the monitor's readings do not span the phase whole" in stdout, stdout
    # An exporter on 127.0.0.1 is on rank 0's host, with both I/O ranks.
    assert "shared with 2 client ranks" in stdout, stdout
    with h5py.File(out, "r") as f:
        assert [bool(f["phases"][n].attrs["monitor_covered"]) for n in f["phases"]] == \
            [first_whole, False, False]


# ---------------------------------------------------------------- NFS server


def test_monitor_ganesha_cpu(herd_bin, tmp_path):
    from test_nfs import _WHY, ns_args, ns_env
    from test_nfs_server import Server
    if _WHY:
        pytest.skip(_WHY)
    server = Server(tmp_path / "nfs")
    try:
        server.start("--fs", "xfs", "--size", "1G")
        loop = subprocess.run(["losetup", "-j", str(server.state / "image.img")],
                              capture_output=True, text=True).stdout.split(":")[0]
        # Confined to the server's network namespace: another ganesha.nfsd
        # on this machine (another test's server) is not counted with ours.
        scope = f"ns:/proc/{server.pid}/ns/net"
        job = write_job(tmp_path / "job.ini",
                        {"target": server.url, "backend": "libnfs", "monitor_rank": "last",
                         "monitor_interval": "100ms", "monitor_disks": Path(loop).name,
                         "monitor_scope": scope},
                        [("write", {"kind": "write", "file_size": "128M", "iterations": "2"})])
        out = tmp_path / "r.h5"
        args = ns_args(server, *mpirun_args(herd_bin, 4, "run", job, "-o", out))
        proc = subprocess.run(args, capture_output=True, text=True, env=ns_env(), timeout=180)
        assert proc.returncode == 0, describe(proc)
    finally:
        server.stop(check=False)
    server.assert_clean()
    tables, _, _ = monitor_tables(out)
    marks = tables["marks"]
    ganesha, recorded_scope = process_rows(out, "ganesha.nfsd")
    assert recorded_scope == scope
    during = ganesha[(ganesha["t"] > marks["t_start"][0]) &
                     (ganesha["t"] - ganesha["dt"] < marks["t_end"][0])]
    assert len(during) > 0 and np.all(during["processes"] == 1)
    assert during["cpu"].max() > 0.05, during["cpu"]
    assert np.all(during["threads"] > 1) and np.all(during["rss_bytes"] > 0)
    disks = tables["disks"]
    assert {text(d) for d in disks["device"]} == {Path(loop).name}
    # 3 ranks x 2 x 128 MiB went to the export; most reach the disk in the run.
    assert disks["write_bytes"].sum() >= 0.5 * 3 * 2 * 128 * 2**20, disks["write_bytes"].sum()
    assert disks["busy"].max() > 0


# ---------------------------------------------------------------- monitor_scope


def scope_job(path, target, name, scope=None, backend="posix"):
    """A short idle run sampled every 100 ms by the last rank, counting
    processes named name within scope (None: the key unset)."""
    keys = {"target": target, "backend": backend, "monitor_rank": "last",
            "monitor_interval": "100ms", "monitor_processes": name}
    if scope is not None:
        keys["monitor_scope"] = scope
    return write_job(path, keys, [("idle", {"kind": "idle", "duration": "500ms"})])


def test_monitor_scope_leaves_out_a_decoy(herd_bin, tmp_path):
    from test_nfs import _WHY, ns_args, ns_env
    from test_nfs_server import Server
    if _WHY:
        pytest.skip(_WHY)
    # comm is the executable's file name: a sleep that the host lists as ganesha.nfsd
    (tmp_path / "decoy").mkdir()
    decoy = tmp_path / "decoy" / "ganesha.nfsd"
    shutil.copy("/bin/sleep", decoy)
    server = Server(tmp_path / "nfs")
    rows = {}
    try:
        server.start("--fs", "tmpfs", "--size", "256M", "--no-nlm")
        # The decoy runs in this test's network namespace, not the server's.
        with sleepers(decoy, 1):
            for label, scope in (("host", "host"), ("unset", None),
                                 ("ns", f"ns:/proc/{server.pid}/ns/net")):
                job = scope_job(tmp_path / f"{label}.ini", server.url, "ganesha.nfsd", scope,
                                backend="libnfs")
                out = tmp_path / f"{label}.h5"
                args = ns_args(server, *mpirun_args(herd_bin, 2, "run", job, "-o", out))
                proc = subprocess.run(args, capture_output=True, text=True, env=ns_env(),
                                      timeout=180)
                assert proc.returncode == 0, describe(proc)
                rows[label] = process_rows(out, "ganesha.nfsd")
    finally:
        server.stop(check=False)
    server.assert_clean()
    host, host_scope = rows["host"]
    assert host_scope == "host"
    # The whole host: our server and the decoy (and any other ganesha here).
    assert len(host) > 0 and np.all(host["processes"] >= 2), host["processes"]
    # The key unset inside nfs-server.sh exec: the namespace herd runs in,
    # the server's, and the file says so.
    unset, unset_scope = rows["unset"]
    assert unset_scope == "ns:/proc/self/ns/net"
    ns, ns_scope = rows["ns"]
    assert ns_scope == f"ns:/proc/{server.pid}/ns/net"
    # The server's namespace: its one ganesha (many threads), not the decoy (one).
    for counted in (unset, ns):
        assert len(counted) > 0 and np.all(counted["processes"] == 1), counted["processes"]
        assert np.all(counted["threads"] > 1) and np.all(counted["rss_bytes"] > 0)


def cgroup_hierarchy(version):
    """Mount point of this host's cgroup v1 pids hierarchy or of cgroup2,
    or a pytest skip saying why the test cannot make a cgroup."""
    if os.geteuid() != 0:
        pytest.skip("needs root to make a cgroup and move processes into it")
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            after = fields[fields.index("-") + 1:]
            if version == "v2" and after[0] == "cgroup2":
                return Path(fields[4])
            if version == "v1" and after[0] == "cgroup" and "pids" in after[2].split(","):
                return Path(fields[4])
    pytest.skip(f"no cgroup {version} hierarchy mounted here"
                f"{' with the pids controller' if version == 'v1' else ''}")


def cgroup_remove(path):
    """rmdir a cgroup whose processes have been reaped (the kernel may take
    a moment to let go of it)."""
    deadline = time.monotonic() + 30
    while path.exists():
        try:
            path.rmdir()
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_monitor_cgroup_scope(herd_bin, tmp_path, version):
    root = cgroup_hierarchy(version)
    name = f"herdcg{os.getpid() % 100000}"  # a comm of this test's own
    exe = tmp_path / name
    shutil.copy("/bin/sleep", exe)
    group = root / f"herd-test-{os.getpid()}-{version}"
    below = group / "below"
    try:
        try:
            below.mkdir(parents=True)
        except OSError as e:
            pytest.skip(f"cannot make a cgroup under {root}: {e}")
        with sleepers(exe, 3) as procs:
            # Two in the scope (in the cgroup, and in one below it), one outside.
            (group / "cgroup.procs").write_text(f"{procs[0].pid}\n")
            (below / "cgroup.procs").write_text(f"{procs[1].pid}\n")
            counts = {}
            for label, scope in (("host", None), ("cgroup", f"cgroup:{group}")):
                out = tmp_path / f"{label}.h5"
                proc = herd_run(herd_bin, 2, scope_job(tmp_path / "job.ini", tmp_path, name,
                                                        scope), out)
                assert proc.returncode == 0, describe(proc)
                rows, recorded = process_rows(out, name)
                assert recorded == (scope or "host")
                assert len(rows) > 0
                counts[label] = set(rows["processes"])
    finally:
        for path in (below, group):
            cgroup_remove(path)
    assert counts == {"host": {3}, "cgroup": {2}}, counts


def test_monitor_scope_not_found_is_noted(herd_bin, tmp_path):
    name = f"herd{os.getpid() % 100000}"
    shutil.copy(herd_bin, tmp_path / name)
    scope = f"ns:{tmp_path}/no-such-namespace"
    out = tmp_path / "r.h5"
    proc = herd_run(str(tmp_path / name), 2, scope_job(tmp_path / "job.ini", tmp_path, name,
                                                       scope), out)
    assert proc.returncode == 0, describe(proc)
    tables, _, status = monitor_tables(out)
    assert status == "complete"
    assert len(tables["samples"]) > 0  # the host is sampled all the same
    rows, recorded = process_rows(out, name)
    assert len(rows) == 0 and recorded == scope  # none: the whole host would mislead
    notes = [text(n) for n in tables["notes"]["text"]]
    want = f"monitor_scope '{scope}': No such file or directory; no process is sampled"
    assert notes.count(want) == 1, notes
    assert f"herd: monitor proc on {socket.gethostname()}: {want}" in proc.stderr, describe(proc)
