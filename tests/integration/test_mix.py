"""kind = mix: each client draws its calls from weighted file operations
on a tree of its own (src/workload/workload_mix.c), or with sharing =
shared on one set of data files for all, and herd mix-from / mix_from turn
a real client's mountstats into such a mix.

1. posix, 2 ranks, every op a local file system has: per-op counts within
   10 % of the weights, no error, every read verified clean, nothing left
   in the target. With sharing = shared (every op but truncate) the same,
   and a kept run shows one shared set of `files` data files and none in
   the clients' trees.
2. libnfs against the embedded ganesha, 2 ranks x 50 clients at 20 calls/s
   for 10 s, over NFSv3 and NFSv4: the same, each client its own rows,
   and the ops herd sends as one RPC each; 2 ranks x 10 clients on a
   shared set likewise.
3. herd mix-from on two snapshots of a known client: the weights are the
   ops' shares (failed LOOKUPs as lookup_missing), the rate their calls/s,
   the block the average READ; left-out ops are named; bad input is one
   line and exit 2. A job with mix_from runs that mix. --replay scales
   each weight by its share wanted / its share a replay sent.
4. Refusals: an op the backend lacks, lock over NFSv4, bad mix text,
   truncate on a shared set.

Counts and relations only, never elapsed times.
Run: /usr/bin/python3 -m pytest -q -rs tests/integration/test_mix.py
"""
import json
import re

import pytest

from conftest import TESTS_DIR, describe, herd_cmd, herd_run, write_job

WEIGHTS = {"getattr": 30, "lookup": 10, "lookup_missing": 3, "access": 5, "read": 15,
           "read_file": 2, "write": 8, "write_file": 1, "append": 2, "fsync": 2, "setattr": 2,
           "truncate": 2, "readdir": 4, "create": 4, "unlink": 3, "rename": 3, "mkdir": 1,
           "rmdir": 1, "lock": 2}
# A shared set's mix: truncate would cut the bytes other clients read.
SHARED_WEIGHTS = {op: w for op, w in WEIGHTS.items() if op != "truncate"}


def mix_text(weights):
    return ",".join(f"{k}:{v}" for k, v in weights.items())


def phase(summary, name):
    return next(p for p in summary["phases"] if p["name"] == name)


def check_shares(ph, weights):
    """Every op's count within 10 % of its weight's share of the calls,
    and no other call op; no error, no verify failure."""
    total = sum(weights.values())
    units = ph["units"]
    counts = {o["op"]: o["calls"] for o in ph["ops"]
              if o["op"] not in ("rpc_read", "rpc_write", "response", "service", "lag",
                                 "connect")}
    assert set(counts) == set(weights), counts
    for op, w in weights.items():
        want = units * w / total
        assert abs(counts[op] - want) <= 0.1 * want, (op, counts[op], want, counts)
    assert ph["errors"] == 0, ph["errors_by_kind"]
    assert ph["verify_failures"] == 0


def run_posix_mix(herd_bin, tmp_path, weights, count, **keys):
    """2 ranks, a verified mix phase `m` of count calls each into a fresh
    target (keys: more of the phase's, keep); its target and --json
    phase, whose shares follow the weights."""
    target = tmp_path / "t"
    target.mkdir()
    keep = keys.pop("keep", "no")
    job = write_job(tmp_path / "mix.ini", {"target": target, "keep": keep},
                    [("m", {"kind": "mix", "mix": mix_text(weights), "count": count,
                            "verify": "yes", "file_size_min": "4K", "file_size": "64K",
                            **keys})])
    js = tmp_path / "m.json"
    proc = herd_run(herd_bin, 2, job, tmp_path / "m.h5", "--json", js)
    assert proc.returncode == 0, describe(proc)
    ph = phase(json.loads(js.read_text()), "m")
    assert ph["units"] == 2 * count
    check_shares(ph, weights)
    return target, ph


def test_mix_posix_shares_and_cleanup(herd_bin, tmp_path):
    target, _ = run_posix_mix(herd_bin, tmp_path, WEIGHTS, 20000)
    assert list(target.iterdir()) == [], list(target.rglob("*"))


@pytest.mark.parametrize("keep", ["no", "yes"])
def test_mix_posix_shared(herd_bin, tmp_path, keep):
    """sharing = shared: both ranks work on one set of data files (kept, it
    is the only place data files are: none in the clients' trees), with
    every read verified; without keep nothing is left."""
    target, _ = run_posix_mix(herd_bin, tmp_path, SHARED_WEIGHTS, 5000, sharing="shared",
                              keep=keep)
    if keep == "no":
        assert list(target.iterdir()) == [], list(target.rglob("*"))
        return
    fileset = next(target.glob("herd-*")) / "shared-64K"  # the default: <sharing>-<file_size>
    assert sorted(d.name for d in fileset.iterdir()) == ["m-000000", "m-000001", "m-shared"]
    data = sorted(f.name for f in (fileset / "m-shared").iterdir())
    assert data == [f"f{i:06d}" for i in range(16)], data  # files = 16, the mix's default
    for client in ("m-000000", "m-000001"):
        own = sorted(e.name for e in (fileset / client).iterdir())
        assert own == ["d", "n"], (client, own)


def test_mix_posix_with_rate(herd_bin, tmp_path):
    """A mix offers its calls on the schedule like every kind."""
    job = write_job(tmp_path / "mix.ini", {"target": tmp_path},
                    [("m", {"kind": "mix", "mix": "getattr:50,read:50", "count": 200,
                            "rate": 400})])
    js = tmp_path / "m.json"
    proc = herd_run(herd_bin, 2, job, tmp_path / "m.h5", "--json", js)
    assert proc.returncode == 0, describe(proc)
    pace = phase(json.loads(js.read_text()), "m")["pace"]
    assert pace["calls"] == 400 and pace["offered_per_s"] == 800


# ---------------------------------------------------------------- over NFS


@pytest.fixture
def ganesha(tmp_path):
    from test_nfs_server import Server, _why_skip
    why = _why_skip()
    if why:
        pytest.skip(why)
    s = Server(tmp_path / "nfs")
    try:
        s.start("--fs", "dir")
        yield s
    finally:
        s.stop(check=False)
    s.assert_clean()


def run_nfs_mix(herd_bin, tmp_path, ganesha, version, weights, clients, duration, **keys):
    """2 ranks x clients over libnfs at 20 calls/s each, a verified mix
    phase `m` for duration: its --json phase, one row per client, shares
    that follow the weights; the run's tree gone from the export (--fs
    dir: seen from here too)."""
    from test_nfs import herd_run_nfs
    job = write_job(tmp_path / "mix.ini",
                    {"target": ganesha.url, "clients_per_rank": clients, "nfs_version": version},
                    [("m", {"kind": "mix", "mix": mix_text(weights), "duration": duration,
                            "rate": 20, "verify": "yes", **keys})])
    js = tmp_path / "m.json"
    proc = herd_run_nfs(ganesha, herd_bin, 2, job, tmp_path / "m.h5", "--json", js)
    assert proc.returncode == 0, describe(proc)
    ph = phase(json.loads(js.read_text()), "m")
    assert ph["rows"] == 2 * clients and ph["pace"]["offered_per_s"] == 2 * clients * 20
    check_shares(ph, weights)
    export = ganesha.state / "export"
    assert list(export.iterdir()) == [], list(export.rglob("*"))
    return ph


@pytest.mark.parametrize("version", [3, 4])
def test_mix_libnfs_clients(herd_bin, tmp_path, ganesha, version):
    weights = dict(WEIGHTS)
    if version == 4:
        del weights["lock"]  # refused over NFSv4 (test_refusals)
    run_nfs_mix(herd_bin, tmp_path, ganesha, version, weights, 50, "10s")


@pytest.mark.parametrize("version", [3, 4])
def test_mix_libnfs_shared(herd_bin, tmp_path, ganesha, version):
    """20 clients on one shared set over NFS, each with its own connection:
    locks contend, writes and appends of the same bytes keep the pattern.
    Every op an eighteenth of the calls (over NFSv4 getattr two, lock
    being refused there: test_refusals), about 100 of 1900: WEIGHTS' rarest
    would be 20 calls, too few to be within 10 % of their share."""
    weights = dict.fromkeys(SHARED_WEIGHTS, 1)
    if version == 4:
        del weights["lock"]
        weights["getattr"] = 2
    ph = run_nfs_mix(herd_bin, tmp_path, ganesha, version, weights, 10, "5s", sharing="shared")
    assert ph["bytes"] > 0


# ---------------------------------------------------------------- mix-from

MOUNTSTATS = TESTS_DIR.parent / "data" / "mountstats-nfs3.txt"
GROWTH = {"GETATTR": 2400, "LOOKUP": 900, "READ": 1200, "WRITE": 600, "READDIRPLUS": 300,
          "CREATE": 240, "REMOVE": 180, "RENAME": 180, "FSSTAT": 12}


def later_snapshot(text, growth, failed_lookups, seconds, read_bytes):
    """text with each op's count grown (ops and transmissions), LOOKUP's
    errors column grown, the age and the server-read bytes moved on."""
    def bump(m):
        nums = [int(x) for x in m.group(3).split()]
        inc = growth.get(m.group(2), 0)
        nums[0] += inc
        nums[1] += inc
        if m.group(2) == "LOOKUP":
            nums[8] += failed_lookups
        return f"{m.group(1)}{m.group(2)}: " + " ".join(map(str, nums))
    out = re.sub(r"^(\s*)([A-Z_]+): ([0-9 ]+)$", bump, text, flags=re.M)
    out = re.sub(r"age:\t(\d+)", lambda m: f"age:\t{int(m.group(1)) + seconds}", out)

    def move_bytes(m):
        nums = [int(x) for x in m.group(1).split()]
        nums[4] += read_bytes
        return "bytes:\t" + " ".join(map(str, nums))
    return re.sub(r"bytes:\t([0-9 ]+)", move_bytes, out)


def test_mix_from_prints_the_client(herd_bin, tmp_path):
    before = tmp_path / "before"
    after = tmp_path / "after"
    before.write_text(MOUNTSTATS.read_text())
    after.write_text(later_snapshot(MOUNTSTATS.read_text(), GROWTH, 90, 60, 1200 * 131072))
    proc = herd_cmd(herd_bin, "mix-from", before, after, "--section", "node")
    assert proc.returncode == 0, describe(proc)
    out = proc.stdout
    keys = dict(line.split(" = ", 1) for line in out.splitlines() if " = " in line)
    mix = dict(item.split(":") for item in keys["mix"].split(","))
    reproduced = sum(GROWTH.values()) - GROWTH["FSSTAT"]
    want = {"getattr": 2400, "lookup": 810, "lookup_missing": 90, "read": 1200, "write": 600,
            "readdir": 300, "create": 240, "unlink": 180, "rename": 180}
    assert set(mix) == set(want), mix
    for op, n in want.items():
        assert float(mix[op]) == pytest.approx(100 * n / reproduced, abs=1e-4), (op, mix)
    assert float(keys["rate"]) == pytest.approx(reproduced / 60, rel=1e-3)
    assert keys["block_size"] == "128K"  # 1200 READs of 128 KiB
    assert "[node]" in out and keys["kind"] == "mix"
    assert "not reproduced: FSSTAT 0.2/s" in out
    # the printed lines are a job herd takes
    job = tmp_path / "node.ini"
    job.write_text(f"[global]\ntarget = {tmp_path}\n" + out)
    assert herd_cmd(herd_bin, "check", job).returncode == 0


def test_mix_from_key_runs_that_mix(herd_bin, tmp_path):
    (tmp_path / "b.txt").write_text(MOUNTSTATS.read_text())
    (tmp_path / "a.txt").write_text(
        later_snapshot(MOUNTSTATS.read_text(), {"GETATTR": 600, "READ": 400}, 0, 10, 400 * 4096))
    target = tmp_path / "t"
    target.mkdir()
    job = write_job(tmp_path / "like.ini", {"target": target},
                    [("like", {"kind": "mix", "mix_from": "b.txt,a.txt", "count": 5000,
                               "rate": 0})])
    js = tmp_path / "l.json"
    proc = herd_run(herd_bin, 1, job, tmp_path / "l.h5", "--json", js)
    assert proc.returncode == 0, describe(proc)
    ph = phase(json.loads(js.read_text()), "like")
    assert ph["params"]["block_size"] == 4096
    check_shares(ph, {"getattr": 60, "read": 40})


def test_mix_from_replay_corrects_the_weights(herd_bin, tmp_path):
    """--replay: a replay of the printed mix whose client sent twice the
    GETATTRs, half the LOOKUPs and no RENAME (its caches' doing): each
    weight becomes its printed share x wanted / replayed (then all as
    percents), RENAME keeps its weight (never sent: no evidence), and the
    job lines name both shares. A second correction names the mix the
    replay ran (--replay-mix). The same replay as the node's changes
    nothing."""
    text = MOUNTSTATS.read_text()
    (tmp_path / "b").write_text(text)
    (tmp_path / "a").write_text(later_snapshot(text, GROWTH, 90, 60, 1200 * 131072))
    grown = dict(GROWTH, GETATTR=2 * GROWTH["GETATTR"], LOOKUP=GROWTH["LOOKUP"] // 2, RENAME=0)
    (tmp_path / "ra").write_text(later_snapshot(text, grown, 45, 60, 1200 * 131072))

    def mix_of(*extra):
        proc = herd_cmd(herd_bin, "mix-from", tmp_path / "b", tmp_path / "a", *extra)
        assert proc.returncode == 0, describe(proc)
        keys = dict(line.split(" = ", 1) for line in proc.stdout.splitlines() if " = " in line)
        return proc.stdout, {k: float(v) for k, v in
                             (i.split(":") for i in keys["mix"].split(","))}

    _, printed = mix_of()
    out, fixed = mix_of("--replay", f"{tmp_path / 'b'},{tmp_path / 'ra'}")
    node = {"getattr": 2400, "lookup": 810, "lookup_missing": 90, "read": 1200, "write": 600,
            "readdir": 300, "create": 240, "unlink": 180, "rename": 180}
    replay = dict(node, getattr=4800, lookup=405, lookup_missing=45, rename=0)
    share = lambda d: {k: v / sum(d.values()) for k, v in d.items()}  # noqa: E731
    want, got = share(node), share(replay)
    w = {op: printed[op] / 100 * (want[op] / got[op] if got[op] else 1) for op in node}
    assert set(fixed) == set(node), fixed
    for op, v in share(w).items():
        assert fixed[op] == pytest.approx(100 * v, abs=2e-4), (op, fixed, v)
    assert "; corrected by a replay of mix = " in out and "getattr 61.8% (40.0%), " in out
    assert "rename 0.0% (3.0%)" in out, out
    # the replay as the node's: the weights as printed
    _, same = mix_of("--replay", f"{tmp_path / 'b'},{tmp_path / 'a'}")
    assert same == printed
    # a second round: the corrected mix was replayed and sent the node's shares
    _, again = mix_of("--replay", f"{tmp_path / 'b'},{tmp_path / 'a'}", "--replay-mix",
                      ",".join(f"{k}:{v}" for k, v in fixed.items()))
    assert again == pytest.approx(fixed, abs=2e-4)
    # bad input: one line, exit 2
    for extra, words in ((["--replay", str(tmp_path / "b")], "is not BEFORE,AFTER"),
                         (["--replay", f"{tmp_path / 'b'},{tmp_path / 'a'}", "--replay-mix",
                           "nope:1"], "--replay-mix 'nope:1'"),
                         (["--replay", f"{tmp_path / 'b'},{tmp_path / 'b'}"],
                          "the snapshots are 0 s apart")):
        proc = herd_cmd(herd_bin, "mix-from", tmp_path / "b", tmp_path / "a", *extra)
        assert proc.returncode == 2, describe(proc)
        assert words in proc.stderr and len(proc.stderr.splitlines()) == 1, proc.stderr


@pytest.mark.parametrize("args, words", [
    (["one"], "mix-from needs two mountstats snapshots"),
    (["SNAP", "SNAP", "--seconds", "60", "--replay-mix", "read:1"],
     "--replay-mix needs --replay BEFORE,AFTER"),

    (["/etc/hostname", "/etc/hostname"], "no NFS mount in it"),
    (["SNAP", "SNAP"], "the snapshots are 0 s apart"),
    (["SNAP", "SNAP", "--seconds", "60"], "no call herd reproduces"),
    (["SNAP", "SNAP", "--mount", "/nope"], "no NFS mount on /nope in it"),
    (["SNAP", "SNAP", "--seconds", "0"], "--seconds '0' is not a duration above 0"),
    (["SNAP", "/nonexistent"], "/nonexistent: cannot read it"),
])
def test_mix_from_refusals(herd_bin, args, words):
    args = [str(MOUNTSTATS) if a == "SNAP" else a for a in args]
    proc = herd_cmd(herd_bin, "mix-from", *args)
    assert proc.returncode == 2, describe(proc)
    assert words in proc.stderr and len(proc.stderr.splitlines()) == 1, proc.stderr


@pytest.mark.parametrize("glob, keys, words", [
    ({}, {"mix": "getattr:1,open:2"}, "'open' is not a mix operation"),
    ({}, {"mix": "read:1,read:2"}, "read appears twice"),
    ({}, {"mix": "read:0"}, "the weight must be a number above 0"),
    ({}, {"file_size_min": "1M", "file_size": "64K"}, "key 'file_size_min': is larger"),
    ({"backend": "smb", "target": "smb://127.0.0.1/share", "smb_guest": "yes"},
     {"mix": "getattr:1"},
     "getattr is not supported by the smb backend"),
    ({"target": "nfs://127.0.0.1/export", "nfs_version": 4}, {"mix": "read:5,lock:1"},
     "lock in a mix needs NFSv3"),
    ({"target": "nfs://127.0.0.1/export", "nfs_version": 4}, {"mix": "getattr:5"},
     "keep the client's lease only through"),
    ({}, {"sharing": "shared", "mix": "read:5,truncate:1"},
     "key 'mix': truncate needs sharing = unique"),
])
def test_refusals(herd_bin, tmp_path, glob, keys, words):
    g = {"target": tmp_path, **glob}
    job = write_job(tmp_path / "bad.ini", g, [("m", {"kind": "mix", **keys})])
    proc = herd_cmd(herd_bin, "check", job)
    if "smb" in str(g["target"]) and "smb backend" not in proc.stderr \
            and "not a backend this herd was built with" in proc.stderr:
        pytest.skip("herd built without the smb backend")
    assert proc.returncode == 2, describe(proc)
    assert words in proc.stderr and len(proc.stderr.splitlines()) == 1, proc.stderr
