"""A disk that takes time under the kernel nfsd's export:
cluster-configs/local/nfs-server.sh start --server knfsd --disk-latency SPEC
puts device-mapper's delay target between the export's file system and the
guest's disk (uml-init.c, disklatency.py); `disk-latency` changes it live.

1. Bad values: a spec that is not read=T,write=T,flush=T (a time without
   a unit, a fraction of a millisecond, an unknown or repeated key, more
   than 10 s, nothing) and any spec for ganesha are refused by start with
   one line on stderr and exit 2, before anything starts (the state
   directory stays empty); the live verb refuses the same values with
   exit 2, and a server started without --disk-latency (it has no delay
   device) with exit 1.
2. The delay is real and bounded below: a sync export, flush=8ms, one
   rank creating FILES empty files (every CREATE waits for xfs's log
   forces, each a flush of the disk). From the results: the guest disk's
   flushes while the phase ran (the monitor's /monitor/disks, scraped
   from the guest's node_exporter) and the phase's time. Every flush the
   disk counted first waited 8 ms in the delay target, and one client's
   creates wait for theirs one after another, so the phase takes at least
   flushes x 8 ms (each waits 10-20 ms: disklatency.py). After `disk-latency read=0ms` (every
   delay 0, live) the same phase has as many flushes and takes far less
   than that bound. status, env and exec's environment name the spec
   (HERD_SERVER_DISK), status also what the guest's table holds; the
   guest removes its delay device at stop (its console log says so) and
   nothing of the server is left on the host (KnfsdServer.assert_clean).
   The flush counts, times and bounds are printed (-s).

Needs root and what test_knfsd.py needs; skips otherwise. Run:
HERD_BIN=build/herd /usr/bin/python3 -m pytest -q -s tests/integration/test_knfsd_disk.py
"""

import os

import h5py
import pytest

from conftest import write_job
from test_knfsd import _WHY, URL3, METRICS_URL, KnfsdServer, herd_ok
from test_nfs_server import Server, server_factory

FILES = 200
FLUSH_MS = 8

BAD_SPECS = ["read=5", "read=2500us", "seek=5ms", "read=5ms,read=6ms", "flush=11s", "",
             "read=5ms,", "none,read=5ms"]

needs_knfsd = pytest.mark.skipif(_WHY is not None, reason=_WHY or "")
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="nfs-server.sh needs root")


@pytest.fixture
def guest(tmp_path):
    """Factory: guest(*start options) -> a started KnfsdServer; every one
    stopped and checked clean at teardown."""
    with server_factory(tmp_path, KnfsdServer, "knfsd") as make:
        yield make


def refused_with(proc, code, *words):
    """proc exited code with exactly one line on stderr holding words."""
    lines = proc.stderr.splitlines()
    assert proc.returncode == code and len(lines) == 1, \
        f"exit {proc.returncode}, stderr {proc.stderr!r}"
    for w in words:
        assert w in lines[0], (w, lines[0])
    return lines[0]


@needs_root
@pytest.mark.parametrize("server", ["knfsd", "ganesha"])
def test_disk_latency_bad_values_refused(tmp_path, server):
    s = Server(tmp_path / "state")
    for spec in BAD_SPECS:
        refused_with(s.cmd("start", "--state", s.state, "--server", server, "--fs", "xfs",
                           "--disk-latency", spec), 2, "--disk-latency")
        assert not s.state.exists() or not any(s.state.iterdir()), spec
    if server == "ganesha":
        line = refused_with(s.cmd("start", "--state", s.state, "--fs", "xfs",
                                  "--disk-latency", "flush=8ms"), 2, "--server knfsd")
        print(f"\nganesha: {line}")
        assert not s.state.exists() or not any(s.state.iterdir())


def create_phase(s, herd_bin, tmp_path, tag, disk):
    """One rank creates FILES empty files (sync export: each CREATE waits
    for the disk), then idles 1 s, so that the monitor's sample that ends
    after the phase holds no other work's flushes. (phase seconds, the
    guest disk's flushes that the monitor saw while it ran). The results
    say which disk: server_disk, as exec's HERD_SERVER_DISK (disk)."""
    job = write_job(tmp_path / f"{tag}.ini",
                    {"backend": "libnfs", "target": URL3, "fileset": f"create-{tag}",
                     "monitor_url": METRICS_URL, "monitor_interval": "200ms"},
                    [("create", {"kind": "meta", "meta_ops": "create", "dirs": 4, "files": FILES,
                                 "file_size": 0, "block_size": "4K"}),
                     ("after", {"kind": "idle", "duration": "1s"})])
    out = tmp_path / f"{tag}.h5"
    res = herd_ok(s, herd_bin, job, out, nranks=1, timeout=300)
    ph = res.phases["create"]
    assert ph.attrs["status"] == "ok" and len(ph.errors) == 0, (tag, ph.error_rows())
    t0, t1 = float(ph.attrs["t_start"]), float(ph.attrs["t_end"])
    with h5py.File(out, "r") as f:
        disks = f["monitor/disks"][()]
        recorded = f.attrs["server_disk"]
    assert (recorded.decode() if isinstance(recorded, bytes) else recorded) == disk, recorded
    devices = {d.decode() for d in disks["device"]}
    assert devices == {"ubda"}, f"{tag}: the monitor's disks {devices} (the guest's disk only)"
    meets = (disks["t"] - disks["dt"] <= t1) & (disks["t"] > t0)
    assert meets.any(), f"{tag}: no disk sample while the phase ran"
    return t1 - t0, int(disks["flushes"][meets].sum())


def env_of(s):
    proc = s.cmd("env", "--state", s.state)
    assert proc.returncode == 0, proc.stderr
    return dict(line.split("=", 1) for line in proc.stdout.splitlines())


@needs_knfsd
def test_disk_latency_flush_delay_bounds_a_sync_phase(guest, herd_bin, tmp_path):
    s = guest("--sync", "--disk-latency", f"flush={FLUSH_MS}ms")
    spec = f"read=0ms,write=0ms,flush={FLUSH_MS}ms"
    kv = s.status()[1]
    assert (kv.get("disk_latency"), kv.get("disk_latency_applied")) == (spec, spec), kv
    assert env_of(s)["HERD_SERVER_DISK"] == spec
    proc = s.exec("sh", "-c", "echo $HERD_SERVER_DISK")
    assert proc.stdout.strip() == spec, proc.stdout
    delayed_s, delayed_flushes = create_phase(s, herd_bin, tmp_path, "delayed", spec)

    refused_with(s.cmd("disk-latency", "--state", s.state, "none"), 2, "disk-latency")
    refused_with(s.cmd("disk-latency", "--state", s.state, "read=1.5ms"), 2, "milliseconds")
    proc = s.guest("disk-delay", "5", "5")
    assert proc.returncode == 1 and "disk-delay [READ WRITE FLUSH]" in proc.stderr, proc.stderr
    proc = s.cmd("disk-latency", "--state", s.state, "read=0ms")
    assert proc.returncode == 0, proc.stderr
    zero = "read=0ms,write=0ms,flush=0ms"
    kv = s.status()[1]
    assert (kv.get("disk_latency"), kv.get("disk_latency_applied")) == (zero, zero), kv
    assert env_of(s)["HERD_SERVER_DISK"] == zero
    plain_s, plain_flushes = create_phase(s, herd_bin, tmp_path, "plain", zero)

    bound = lambda flushes: flushes * FLUSH_MS / 1000  # noqa: E731
    print(f"\nflush={FLUSH_MS}ms: {FILES} creates in {delayed_s:.2f} s, {delayed_flushes} flushes"
          f" of ubda, bound {bound(delayed_flushes):.2f} s; no delay: {plain_s:.2f} s,"
          f" {plain_flushes} flushes, bound {bound(plain_flushes):.2f} s")
    for flushes in (delayed_flushes, plain_flushes):
        assert flushes >= FILES, f"a sync export flushes at least once per create: {flushes}"
    assert delayed_s >= bound(delayed_flushes), (delayed_s, delayed_flushes)
    assert plain_s < bound(plain_flushes), (plain_s, plain_flushes)

    s.stop()
    console = (s.state / "log" / "guest-console.log").read_text(errors="replace")
    assert "dm-delay over ubda" in console and "device-mapper: herd-export removed" in console, \
        console[-2000:]


@needs_knfsd
def test_disk_latency_live_needs_the_delay_device(guest):
    s = guest()
    assert s.status()[1].get("disk_latency") == "none"
    assert env_of(s)["HERD_SERVER_DISK"] == "none"
    refused_with(s.cmd("disk-latency", "--state", s.state, "read=5ms"), 1, "--disk-latency")
    proc = s.guest("disk-delay")
    assert proc.returncode == 1 and "no delay device" in proc.stderr, proc.stderr
