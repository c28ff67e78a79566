"""nfs-server.sh start --reach host: the embedded servers reachable from
the host's own network namespace (cluster-configs/local/reach.py), over a
veth pair of their own: herd-B-N (NET.5/30) on the host, reach0 (NET.6/30)
in the server's namespace, NET = 10.78.N; a kernel nfsd's guest at NET.2
behind the namespace, routed through it.

Everything here runs FROM THE HOST (never through `exec`):
1. ganesha: `herd check --probe` mounts, a 2-rank `herd run` over libnfs
   writes over NFSv3 and reads back with verify over NFSv3 and NFSv4,
   nfs-cp copies in and out, NLM locks are granted, `env` names the
   server and its file system; another user of the host is refused (the
   host's side must send from a port below 1024), and so is
   clients_per_rank > 1 (ordinary ports), by `herd check --probe` and by
   the run, each in one line naming the rule. After stop no link and
   no route of the pair is left (`ip -j link`, `ip -j route`).
2. The kernel nfsd (one guest): the same probe and runs.
3. Tear-down: the supervisor's own (SIGTERM) deletes the pair; after a
   SIGKILLed supervisor, stop does; a start that fails after the pair was
   made (mkfs of a too small image) leaves none.
4. The address blocks: two servers get two blocks, neither overlapping
   what the host routed before; a range whose every block the host
   already routes (NFS_SERVER_REACH_NET=127.0) is refused with one line;
   --reach with a bad value, and with --link on ganesha, is refused.

Needs root, the packages of test_nfs_server.py (and for 2 those of
test_knfsd.py), mpirun and herd built with libnfs. Run:
HERD_BIN=build/herd /usr/bin/python3 -m pytest -q -s tests/integration/test_reach.py
"""

import filecmp
import ipaddress
import json
import os
import re
import signal
import subprocess

import pytest

from conftest import describe, herd_run, load_results, other_user, phase_attr_order, run_cmd, \
    write_job
from test_knfsd import KnfsdServer, _why_skip_knfsd
from test_nfs import check_data_phases
from test_nfs_server import (CMD_TIMEOUT, MIB, SBIN_PATH, SCRIPT, Server, _why_skip, running, sh,
                             stopped_after, wait_until, write_random)

_WHY = _why_skip()
pytestmark = pytest.mark.skipif(_WHY is not None, reason=_WHY or "")

NRANKS = 2
REACH = ("--reach", "host")


def ip_json(*args):
    out = sh("ip", "-j", *args, check=True).stdout
    return json.loads(out) if out.strip() else []


def host_networks():
    """The IPv4 networks the host routes (any table) or has addresses in."""
    nets = set()
    for r in ip_json("-4", "route", "show", "table", "all"):
        if r.get("dst") not in (None, "default"):
            nets.add(ipaddress.ip_network(r["dst"], strict=False))
    for link in ip_json("-4", "addr", "show"):
        for a in link.get("addr_info", []):
            nets.add(ipaddress.ip_network(f"{a['local']}/{a['prefixlen']}", strict=False))
    return nets


def pair_left(dev, block):
    """What is left on the host of a veth pair: links named dev, routes
    through it or into its block."""
    links = [x["ifname"] for x in ip_json("link", "show") if x.get("ifname") == dev]
    routes = [r for r in ip_json("-4", "route", "show", "table", "all")
              if r.get("dev") == dev or (r.get("dst") not in (None, "default") and
                                         ipaddress.ip_network(r["dst"], strict=False)
                                         .overlaps(block))]
    return links + routes


class Reach:
    """What a --reach host server's status says about its pair, and the
    checks that it is gone."""

    def reach_start(self):
        rc, kv = self.status()
        assert kv.get("reach") == "host" and kv.get("reach_up") == "yes", kv
        self.dev, self.addr = kv["reach_dev"], kv["reach_addr"]
        self.block = ipaddress.ip_network(f"{self.addr}/29", strict=False)
        m = re.fullmatch(r"herd-(\d+)-(\d+)", self.dev)
        assert m and self.addr == f"10.{m[1]}.{m[2]}.6", kv
        assert kv["reach_host_addr"] == f"10.{m[1]}.{m[2]}.5", kv
        link = ip_json("addr", "show", "dev", self.dev)[0]
        assert [(a["local"], a["prefixlen"]) for a in link["addr_info"] if a["family"] == "inet"] \
            == [(kv["reach_host_addr"], 30)], link
        return kv

    dev = block = None

    def assert_clean(self):
        super().assert_clean()
        assert self.dev, "start did not get as far as the pair"
        left = pair_left(self.dev, self.block)
        assert not left, f"left on the host after stop: {left}"


class ReachServer(Reach, Server):
    URL_HOST = r"10\.78\.\d{1,3}\.6"

    def start(self, *opts):
        super().start(*REACH, *opts)
        self.kv = self.reach_start()
        assert self.url.startswith(f"nfs://{self.addr}/"), (self.url, self.kv)
        return self


class ReachKnfsd(Reach, KnfsdServer):
    URL = r"nfs://10\.78\.\d{1,3}\.2/export\?version=3"

    def start(self, *opts):
        super().start(*REACH, *opts)
        self.kv = self.reach_start()
        assert self.url == f"nfs://{self.addr[:-1]}2/export?version=3", (self.url, self.kv)
        assert self.kv["reach_route"] == f"{self.addr[:-1]}0/30 via {self.addr}", self.kv
        return self


@pytest.fixture
def made():
    """Servers a test starts (appended before start); each is stopped
    afterwards, also after a failed test, and checked clean."""
    with stopped_after([]) as servers:
        yield servers


def probe_from_host(herd_bin, tmp_path, url):
    job = write_job(tmp_path / "probe.ini", {"backend": "libnfs", "target": url,
                                             "file_size": "1M", "block_size": "1M"},
                    [("w", {"kind": "write"})])
    proc = run_cmd([herd_bin, "check", "--probe", job])
    assert proc.returncode == 0, describe(proc)
    host = url.split("/")[2]
    assert f"probe: {url}: ok (server {host} answers on port 2049; the export mounts from a " \
        "reserved port (below 1024), as the run's clients will)" in proc.stdout, describe(proc)


def write_read_from_host(herd_bin, tmp_path, base, run_id):
    """2 ranks from the host: unique and segmented files written over NFSv3
    and kept, read with verify over NFSv3, then over NFSv4; every byte
    counted, no verify failure."""
    order = phase_attr_order(herd_bin)
    gl = {"backend": "libnfs", "target": f"{base}?version=3", "file_size": "2M",
          "block_size": "512K", "run_id": run_id, "keep": "yes"}
    seg = {"sharing": "shared", "shared_mode": "segmented"}
    runs = [("v3", gl, [("w", {"kind": "write"}), ("ws", {"kind": "write", **seg}),
                        ("r", {"kind": "read", "verify": "yes"}),
                        ("rs", {"kind": "read", "verify": "yes", **seg})]),
            ("v4", {**gl, "target": f"{base}?version=4"},
             [("r", {"kind": "read", "verify": "yes"}),
              ("rs", {"kind": "read", "verify": "yes", **seg})])]
    for tag, g, phases in runs:
        job = write_job(tmp_path / f"{run_id}-{tag}.ini", g, phases)
        out = tmp_path / f"{run_id}-{tag}.h5"
        proc = herd_run(herd_bin, NRANKS, job, out)
        assert proc.returncode == 0, describe(proc)
        rates = check_data_phases(load_results(out), g, phases, NRANKS, 2 * MIB, order,
                                  f"{run_id} {tag}")
        print(f"\n{run_id} {tag} from the host: {rates}", end="")


def env_of(s):
    proc = s.cmd("env", "--state", s.state)
    assert proc.returncode == 0, proc.stderr
    return dict(line.split("=", 1) for line in proc.stdout.splitlines())


# ---------------------------------------------------------------- 1. ganesha


def test_ganesha_reached_from_the_host(made, herd_bin, tmp_path):
    s = ReachServer(tmp_path / "nfs")
    made.append(s)
    s.start("--fs", "xfs", "--size", "1G")
    probe_from_host(herd_bin, tmp_path, s.url)
    write_read_from_host(herd_bin, tmp_path, s.base, "reach-ganesha")

    src = write_random(tmp_path / "src.bin", 3 * MIB + 17)
    assert sh("nfs-cp", src, f"{s.base}/cp?version=3").returncode == 0
    assert sh("nfs-cp", f"{s.base}/cp?version=4", tmp_path / "back").returncode == 0
    assert filecmp.cmp(src, tmp_path / "back", shallow=False)

    # NLM (rpcbind, statd and ganesha's NLM port behind the pair)
    count = 10
    job = write_job(tmp_path / "locks.ini",
                    {"backend": "libnfs", "target": s.url, "op_timeout": 10, "sharing": "shared",
                     "fileset": "locks", "file_size": "64K", "block_size": "4K"},
                    [("excl", {"kind": "lock", "count": count, "lock_hold": "1ms"})])
    proc = herd_run(herd_bin, NRANKS, job, tmp_path / "locks.h5")
    assert proc.returncode == 0, describe(proc)
    ph = load_results(tmp_path / "locks.h5").phases["excl"]
    assert ph.attrs["status"] == "ok" and len(ph.errors) == 0, ph.error_rows()
    assert ph.ranks["grants"].tolist() == [count] * NRANKS
    assert ph.ranks["violations"].tolist() == [0] * NRANKS

    env = env_of(s)
    assert (env["HERD_SERVER"], env["HERD_SERVER_FS"], env["HERD_SERVER_URL"]) == \
        ("ganesha", "xfs", s.url), env
    # Another user of the host: no port below 1024, refused by the export.
    nobody = other_user("nobody", "to be another user")
    proc = sh("setpriv", f"--reuid={nobody.pw_uid}", f"--regid={nobody.pw_gid}",
              "--clear-groups", "--", "nfs-ls", s.url, timeout=60)
    assert proc.returncode != 0, f"another user listed the export:\n{proc.stdout}"
    assert sh("nfs-ls", s.url).returncode == 0
    s.stop()
    s.assert_clean()


RESERVED_RULE = ("Permission denied from ports above 1023: the export serves this host only "
                 "from a reserved port (below 1024), and with clients_per_rank = {k} herd's "
                 "clients connect from ordinary ones")


def test_many_clients_from_the_host_refused_by_name(made, herd_bin, tmp_path):
    """clients_per_rank > 1 connects from ordinary ports, which the export
    refuses the host's side: herd check --probe mounts as the run will and
    says so in one line (the reserved-port rule, clients_per_rank, where
    to run), exit 2, as the run's own refusal does; with one client a
    rank (a reserved port) and inside the namespace (ordinary ports
    served) the probe mounts."""
    s = ReachServer(tmp_path / "nfs")
    made.append(s)
    s.start("--fs", "tmpfs")
    k4 = write_job(tmp_path / "k4.ini", {"backend": "libnfs", "target": s.url,
                                         "clients_per_rank": 4, "file_size": "64K",
                                         "block_size": "64K"}, [("w", {"kind": "write"})])
    proc = run_cmd([herd_bin, "check", "--probe", k4])
    assert proc.returncode == 2, describe(proc)
    lines = [x for x in proc.stdout.splitlines() if x.startswith("probe: ")]
    assert len(lines) == 1 and lines[0].startswith(f"probe: {s.url}: " +
                                                   RESERVED_RULE.format(k=4)), describe(proc)
    for words in ("nfs-server.sh exec", "insecure"):
        assert words in lines[0], describe(proc)
    assert proc.stderr == "herd: --probe: 1 problem with the target\n", describe(proc)

    proc = herd_run(herd_bin, 1, k4, tmp_path / "k4.h5")
    assert proc.returncode == 2, describe(proc)
    said = [x for x in proc.stderr.splitlines() if x.startswith("herd: ")]
    assert said == [f"herd: target '{s.url}': {lines[0].split(': ', 2)[2]} (rank 0)"], \
        describe(proc)
    assert not (tmp_path / "k4.h5").exists()

    probe_from_host(herd_bin, tmp_path, s.url)  # one client a rank: a reserved port
    proc = s.cmd("exec", "--state", s.state, "--", herd_bin, "check", "--probe", k4)
    assert proc.returncode == 0, describe(proc)
    host = s.url.split("/")[2]
    assert f"probe: {s.url}: ok (server {host} answers on port 2049; the export mounts from an " \
        "ordinary port (above 1023), as the run's clients will)" in proc.stdout, describe(proc)
    s.stop()
    s.assert_clean()


# ---------------------------------------------------------------- 2. knfsd


@pytest.mark.skipif(_why_skip_knfsd() is not None, reason=_why_skip_knfsd() or "")
def test_knfsd_reached_from_the_host(made, herd_bin, tmp_path):
    s = ReachKnfsd(tmp_path / "knfsd")
    made.append(s)
    s.start()
    print(f"\nknfsd --reach host: start {s.start_seconds:.1f} s")
    probe_from_host(herd_bin, tmp_path, s.url)
    write_read_from_host(herd_bin, tmp_path, s.base, "reach-knfsd")
    env = env_of(s)
    assert (env["HERD_SERVER"], env["HERD_SERVER_FS"]) == ("knfsd", "xfs"), env
    s.stop()
    s.assert_clean()


# ---------------------------------------------------------------- 3. tear-down


def test_supervisor_sigterm_deletes_the_pair(made, tmp_path):
    s = ReachServer(tmp_path / "nfs")
    made.append(s)
    s.start("--fs", "tmpfs")
    sup = s.procs["supervisor"]
    os.kill(sup[0], signal.SIGTERM)
    assert wait_until(lambda: not running(*sup), CMD_TIMEOUT), "the supervisor did not stop"
    assert wait_until(lambda: not pair_left(s.dev, s.block), 5), pair_left(s.dev, s.block)
    assert "supervisor: stopped" in (s.state / "log" / "supervisor.log").read_text()
    s.stop()
    s.assert_clean()


def test_stop_after_killed_supervisor_deletes_the_pair(made, tmp_path):
    s = ReachServer(tmp_path / "nfs")
    made.append(s)
    s.start("--fs", "xfs", "--size", "512M")
    os.kill(s.procs["supervisor"][0], signal.SIGKILL)
    assert wait_until(lambda: not running(*s.procs["supervisor"]), CMD_TIMEOUT)
    # (ganesha still holds the namespace, and with it the pair)
    assert pair_left(s.dev, s.block), "the pair went with the supervisor alone"
    s.stop()
    s.assert_clean()


def test_failed_start_leaves_no_pair(tmp_path):
    before = {x["ifname"] for x in ip_json("link", "show")}
    proc = sh("bash", SCRIPT, "start", "--state", tmp_path / "s", "--fs", "xfs", "--size", "64M",
              *REACH)
    assert proc.returncode == 1 and proc.stdout == "", proc
    made = re.search(r"--reach host: (herd-\d+-\d+) (\S+) <-> reach0", proc.stderr)
    assert made, f"the pair was not made before the start failed:\n{proc.stderr}"
    assert "mkfs.xfs failed" in proc.stderr, proc.stderr
    block = ipaddress.ip_network(f"{made[2]}/29", strict=False)
    assert not pair_left(made[1], block), pair_left(made[1], block)
    assert {x["ifname"] for x in ip_json("link", "show")} <= before


# ---------------------------------------------------------------- 4. blocks


def test_two_servers_two_free_blocks(made, tmp_path):
    taken = host_networks()
    a, b = ReachServer(tmp_path / "a"), ReachServer(tmp_path / "b")
    made += [a, b]
    a.start("--fs", "tmpfs")
    b.start("--fs", "tmpfs")
    assert a.dev != b.dev and not a.block.overlaps(b.block), (a.kv, b.kv)
    for s in (a, b):
        clash = [t for t in taken if t.overlaps(s.block)]
        assert not clash, f"{s.dev} took {s.block}, which overlaps the host's {clash}"
        assert sh("nfs-ls", s.url).returncode == 0, s.url
    a.stop()
    a.assert_clean()
    assert sh("nfs-ls", b.url).returncode == 0, "the other server lost its pair"


def test_reach_refusals(tmp_path):
    env = dict(os.environ, PATH=SBIN_PATH, NFS_SERVER_REACH_NET="127.0")
    before = {x["ifname"] for x in ip_json("link", "show")}
    state = tmp_path / "s"
    proc = subprocess.run(["bash", str(SCRIPT), "start", "--state", str(state), "--fs", "tmpfs",
                           *REACH], capture_output=True, text=True, env=env, timeout=CMD_TIMEOUT)
    assert proc.returncode == 1 and proc.stdout == "", proc
    lines = [x for x in proc.stderr.splitlines() if "--reach host" in x]
    assert len(lines) == 1 and "every block 127.0.N.0/29" in lines[0], proc.stderr
    assert {x["ifname"] for x in ip_json("link", "show")} <= before
    assert sh("bash", SCRIPT, "status", "--state", state).returncode == 3
    for opts, why in ((["--reach", "lan"], "--reach must be none or host"),
                      ([*REACH, "--link", "delay=1ms"], "--link and --reach host")):
        r = sh("bash", SCRIPT, "start", "--state", tmp_path / "r", "--fs", "tmpfs", *opts)
        assert r.returncode == 1 and why in r.stderr, (opts, r.stderr)
        assert not (tmp_path / "r").exists()
