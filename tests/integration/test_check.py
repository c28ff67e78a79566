"""`herd check`, `herd keys`, --help, --version and a bad command: no MPI;
and the input `herd check` and `herd run` must refuse (one line, exit 2),
`herd run` under mpirun for the rank-count dependent scale rule."""

import os
import re
import shutil
import subprocess
import zlib

import pytest

from conftest import (REPO_DIR, describe, format_size, herd_cmd, herd_run, load_results, mpi_env, mpirun_args, parse_size, run_cmd, write_job)

UNITS = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"]

# (name, keys, expected sharing column, shared_mode column, fileset)
PHASES = [
    ("write_unique", {"kind": "write", "file_size": "3M", "block_size": "512K",
                      "iterations": 2}, "unique", "-", "unique-3M"),
    ("read_seg", {"kind": "read", "sharing": "shared", "shared_mode": "segmented",
                  "file_size": "512K", "block_size": "128K", "iterations": 3},
     "shared", "segmented", "shared-512K"),
    ("md5_same", {"kind": "md5", "sharing": "shared", "fileset": "mine"},
     "shared", "same-content", "mine"),  # file_size 16M and 1 iteration by default
]
DEFAULT_FILE, DEFAULT_BLOCK = 16 << 20, 1 << 20


def human(nbytes):
    """herd's units_format_human, for the expected text."""
    if nbytes < 1024:
        return f"{nbytes:.0f} B"
    v, i = float(nbytes), 0
    while True:
        v /= 1024.0
        i += 1
        if not (i < len(UNITS) - 1 and round(v * 10.0) / 10.0 >= 1024.0):
            break
    return f"{v:.1f} {UNITS[i]}"


def from_human(text):
    value, unit = text.split()
    return float(value) * 1024 ** UNITS.index(unit)


def phase_bytes(keys):
    return parse_size(keys.get("file_size", DEFAULT_FILE)) * int(keys.get("iterations", 1))


@pytest.fixture
def job(tmp_path):
    return write_job(tmp_path / "check.ini", {"target": tmp_path},
                     [(name, keys) for name, keys, *_ in PHASES])


@pytest.mark.parametrize("nranks", [20, 1, 7])
def test_check_prints_phases_and_bytes(herd_bin, tmp_path, job, nranks):
    args = ["check", job] + (["-n", str(nranks)] if nranks != 1 else [])
    proc = herd_cmd(herd_bin, *args)
    assert proc.returncode == 0, describe(proc)
    # the job reads filesets it never writes: warnings only
    assert all(": warning: " in ln for ln in proc.stderr.splitlines()), describe(proc)
    lines = proc.stdout.splitlines()

    assert lines[0] == (f"job {job}: {len(PHASES)} phases, target {tmp_path} "
                        f"(backend posix)"), lines[0]
    rows = [l for l in lines if re.match(r"\d+\s", l)]
    assert len(rows) == len(PHASES), proc.stdout

    total = 0
    for i, (row, (name, keys, sharing, mode, fileset)) in enumerate(zip(rows, PHASES)):
        t = row.split()
        per_rank = phase_bytes(keys)
        total += per_rank * nranks
        assert t[:9] == [str(i + 1), name, keys["kind"], sharing, mode, fileset,
                         format_size(parse_size(keys.get("file_size", DEFAULT_FILE))),
                         format_size(parse_size(keys.get("block_size", DEFAULT_BLOCK))),
                         str(keys.get("iterations", 1))], row
        per_text, all_text = " ".join(t[9:11]), " ".join(t[11:13])
        assert len(t) == 13, row
        assert per_text == human(per_rank), row
        assert all_text == human(per_rank * nranks), row
        # the sizes are chosen so that one decimal is exact
        assert from_human(per_text) == per_rank, row
        assert from_human(all_text) == per_rank * nranks, row

    want_total = nranks * sum(phase_bytes(keys) for _, keys, *_ in PHASES)
    assert total == want_total
    m = re.fullmatch(r"total for (\d+) ranks?: (.+)", lines[-1])
    assert m, lines[-1]
    assert int(m.group(1)) == nranks
    assert from_human(m.group(2)) == want_total, lines[-1]
    assert m.group(2) == human(want_total)


def test_check_total_twenty_ranks_exact(herd_bin, job):
    """-n 20: per rank 3M*2 + 512K*3 + 16M = 23.5 MiB, all 470.0 MiB."""
    proc = herd_cmd(herd_bin, "check", job, "-n", "20")
    assert proc.returncode == 0, describe(proc)
    assert proc.stdout.splitlines()[-1] == "total for 20 ranks: 470.0 MiB"


def test_check_set_overrides_global(herd_bin, tmp_path):
    job = write_job(tmp_path / "s.ini", {"target": tmp_path, "file_size": "1M"},
                    [("w", {"kind": "write", "block_size": "256K"})])
    proc = herd_cmd(herd_bin, "check", job, "-n", "4", "--set", "file_size=2M",
                    "--set", "iterations=3")
    assert proc.returncode == 0, describe(proc)
    assert proc.stdout.splitlines()[-1] == f"total for 4 ranks: {human(4 * 3 * (2 << 20))}"


@pytest.mark.parametrize("bad", ["0", "-3", "x", "20x"])
def test_check_bad_rank_count(herd_bin, job, bad):
    proc = herd_cmd(herd_bin, "check", job, "-n", bad)
    assert proc.returncode == 2, describe(proc)
    assert proc.stdout == ""
    assert len(proc.stderr.splitlines()) == 1, describe(proc)


def test_version(herd_bin):
    """herd version, --version and -V say the same: herd's version, the
    backends built in, and each library linked with the version it
    reports at run time (zlib's is the one this Python runs with: the
    same system library), or for libinih and libnfs, which cannot say,
    the one herd was built with, marked so."""
    cmake = (REPO_DIR / "CMakeLists.txt").read_text()
    version = re.search(r"project\(herd\s+VERSION\s+([0-9.]+)", cmake).group(1)
    outputs = set()
    for args in (["version"], ["--version"], ["-V"]):
        proc = herd_cmd(herd_bin, *args)
        assert proc.returncode == 0 and proc.stderr == "", describe(proc)
        outputs.add(proc.stdout)
    assert len(outputs) == 1, outputs
    lines = outputs.pop().splitlines()
    assert lines[0] == f"herd {version}", lines
    backends = lines[1].removeprefix("backends: ").split(", ")
    assert lines[1].startswith("backends: ") and backends[:2] == ["posix", "fault"], lines
    assert lines[2] == "libraries:", lines
    libs = dict(re.fullmatch(r"  (\S+) +(.+)", l).groups() for l in lines[3:])
    for name in ("MPI", "HDF5", "zlib", "OpenSSL", "libinih"):
        assert re.search(r"\d", libs.get(name, "")), (name, libs)
    assert libs["zlib"] == zlib.ZLIB_RUNTIME_VERSION, libs
    assert re.fullmatch(r"\d+\.\d+\.\d+", libs["HDF5"]), libs
    assert libs["OpenSSL"].startswith("OpenSSL "), libs
    at_build = " (as herd was built: it reports none at run time)"
    assert libs["libinih"].endswith(at_build), libs
    assert ("libnfs" in backends) == ("libnfs" in libs), (backends, libs)
    assert ("smb" in backends) == ("libsmbclient" in libs), (backends, libs)
    if "libnfs" in libs:
        assert libs["libnfs"].endswith(at_build), libs
    pkg = shutil.which("pkg-config")
    for name, module in (("libinih", "inih"), ("libnfs", "libnfs")):
        built = subprocess.run([pkg, "--modversion", module], capture_output=True,
                               text=True).stdout.strip() if pkg and name in libs else ""
        if built:
            assert libs[name] == built + at_build, (name, libs[name], built)


def test_help(herd_bin):
    for flag in ("--help", "-h", "help"):
        proc = herd_cmd(herd_bin, flag)
        assert proc.returncode == 0, describe(proc)
        assert proc.stdout.startswith("usage: herd run JOB.ini"), proc.stdout
        for word in ("check", "keys", "--force", "--set", "exit codes"):
            assert word in proc.stdout
        assert proc.stderr == ""


def test_keys_lists_every_key(herd_bin):
    """`herd keys` and the job-file reference (docs/job-file.md) name the
    same keys: a key added to the program must be documented, and back."""
    proc = herd_cmd(herd_bin, "keys")
    assert proc.returncode == 0, describe(proc)
    names = [l.split()[0] for l in proc.stdout.splitlines()[1:] if l.strip()]
    doc = (REPO_DIR / "docs" / "job-file.md").read_text().split("## Phase kinds")[0]
    documented = re.findall(r"^\| `([a-z_0-9]+)` \|", doc, flags=re.M)
    assert len(names) == len(set(names)), names
    assert sorted(names) == sorted(set(documented)), (
        f"only in herd keys: {sorted(set(names) - set(documented))}; "
        f"only in docs: {sorted(set(documented) - set(names))}")
    for key in ("target", "kind", "sharing", "file_size", "lock_mode", "meta_ops", "nfs_rsize"):
        assert key in names


def test_keys_columns_line_up(herd_bin):
    """`herd keys`: the default and meaning columns start at the same place on
    every line, whatever the key's length; an empty default says (unset)."""
    lines = herd_cmd(herd_bin, "keys").stdout.splitlines()
    head = lines[0]
    at_default, at_meaning = head.index("default"), head.index("meaning")
    for line in lines[1:]:
        name = line.split()[0]
        assert line[len(name):at_default].strip() == "", line
        assert line[at_default - 1] == " " and line[at_meaning - 1] == " ", line
        assert line[at_default:at_meaning].strip() != "", line
    assert "(derived)" not in "\n".join(lines)
    assert any(l.split()[:2] == ["fileset", "(unset)"] for l in lines)


def test_plurals_of_one(herd_bin, tmp_path):
    """One rank on one host, one phase: no '1 ranks', '1 hosts', '1 phases'."""
    target = tmp_path / "t"
    target.mkdir()
    job = write_job(tmp_path / "one.ini", {"target": target, "file_size": "64K", "block_size": "64K"},
                    [("w", {"kind": "write"})])
    check = herd_cmd(herd_bin, "check", job, "-n", "1")
    assert check.returncode == 0, describe(check)
    run = herd_run(herd_bin, 1, job, tmp_path / "one.h5")
    assert run.returncode == 0, describe(run)
    said = check.stdout + check.stderr + run.stdout + run.stderr
    for wrong in ("1 ranks", "1 hosts", "1 phases"):
        assert wrong not in said, said
    assert "1 rank on 1 host" in run.stderr and "herd: w: 1 rank done" in run.stderr, run.stderr


@pytest.mark.parametrize("args", [["frobnicate"], ["frobnicate", "job.ini"], ["--frob"]])
def test_unknown_command(herd_bin, args):
    proc = herd_cmd(herd_bin, *args)
    assert proc.returncode == 2, describe(proc)
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, describe(proc)
    assert args[0] in lines[0]


def test_no_arguments(herd_bin):
    proc = herd_cmd(herd_bin)
    assert proc.returncode == 2, describe(proc)
    assert "usage:" in proc.stderr


@pytest.mark.parametrize("command", ["check", "run"])
def test_command_without_job(herd_bin, command):
    proc = herd_cmd(herd_bin, command)
    assert proc.returncode == 2, describe(proc)
    assert proc.stderr == (f"herd: {command} needs a job file or --phase KINDS "
                           f"(see herd {command} --help)\n")


# ------------------------------------------------------- hostile input

RECORD_BYTES = 184  # sizeof(struct rank_record), record.h


def one_line_refusal(proc, *expect):
    assert proc.returncode == 2, describe(proc)
    assert proc.stdout == "", describe(proc)
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, describe(proc)
    for text in expect:
        assert text in lines[0], describe(proc)
    return lines[0]


def test_check_scale_depends_on_ranks(herd_bin, tmp_path):
    """1000000 iterations of records fit 11 ranks on rank 0, not 12
    (INT_MAX bytes: MPI's count)."""
    job = write_job(tmp_path / "scale.ini", {"target": tmp_path},
                    [("w", {"kind": "write", "file_size": "4K", "block_size": "4K",
                            "iterations": 1000000})])
    fit = (2**31 - 1) // (1000000 * RECORD_BYTES)
    assert fit == 11
    assert herd_cmd(herd_bin, "check", job, "-n", str(fit)).returncode == 0
    one_line_refusal(herd_cmd(herd_bin, "check", job, "-n", str(fit + 1)),
                     f"{job}:", f": key 'iterations': 1000000 iterations x {fit + 1} ranks need "
                     f"{(fit + 1) * 1000000 * RECORD_BYTES} bytes",
                     "more than MPI's int count")


@pytest.mark.parametrize("keys,key,words", [
    ({"kind": "write", "iterations": 16000000}, "iterations",
     "16000000 iterations need, even for one rank,"),
    ({"kind": "write", "iterations": 100000000000}, "iterations", "100000000000 iterations"),
    ({"kind": "meta", "files": 1000000000000}, "files", "1000000000000 is more than"),
    ({"kind": "write", "file_size": "1000000T", "iterations": 100}, "iterations",
     "more than 2^64"),
    ({"kind": "write", "file_size": "9000000T"}, "file_size", "largest file offset"),
    ({"kind": "lock", "count": 1000000000}, "count", "1000000000 locks"),
])
def test_check_refuses_absurd_scale(herd_bin, tmp_path, keys, key, words):
    job = write_job(tmp_path / "big.ini", {"target": tmp_path}, [("p", keys)])
    proc = herd_cmd(herd_bin, "check", job, timeout=20)
    one_line_refusal(proc, f"key '{key}'", words)


def test_check_scale_message_names_no_rank_count_it_does_not_know(herd_bin, tmp_path):
    """Too many iterations for even one rank: the message says so under
    -n 2 too, instead of "x 1 rank"."""
    job = write_job(tmp_path / "big.ini", {"target": tmp_path},
                    [("w", {"kind": "write", "iterations": 16000000})])
    line = one_line_refusal(herd_cmd(herd_bin, "check", job, "-n", "2", timeout=20),
                            "key 'iterations'", "even for one rank")
    assert "x 1 rank" not in line, line


def test_check_small_verdicts(herd_bin, tmp_path):
    """`all` right after a step that already has every rank is that step;
    rwmix_read = -1 is the documented spelling of none."""
    job = write_job(tmp_path / "all.ini", {"target": tmp_path},
                    [("r", {"kind": "write", "ranks_active": "1,2,4,all"})])
    proc = herd_cmd(herd_bin, "check", job, "-n", "4")
    assert proc.returncode == 0, describe(proc)
    assert [l.split()[1] for l in proc.stdout.splitlines() if l[:1].isdigit()] == \
        ["r.1r", "r.2r", "r.4r"], proc.stdout
    proc = herd_cmd(herd_bin, "check", job, "-n", "5")
    assert proc.returncode == 0 and "r.5r" in proc.stdout, describe(proc)
    job = write_job(tmp_path / "mix.ini", {"target": tmp_path},
                    [("r", {"kind": "read", "rwmix_read": "-1"})])
    assert herd_cmd(herd_bin, "check", job).returncode == 0


def test_check_overflow_for_ranks_not_wrapped(herd_bin, tmp_path):
    """Per rank fits 64 bits, 2 ranks do not: refused, not printed wrapped."""
    job = write_job(tmp_path / "wrap.ini", {"target": tmp_path},
                    [("w", {"kind": "write", "file_size": "1000000T", "iterations": 10})])
    assert herd_cmd(herd_bin, "check", job).returncode == 0
    one_line_refusal(herd_cmd(herd_bin, "check", job, "-n", "2"),
                     "key 'iterations'", "x 2 ranks", "more than 2^64")


def test_run_refuses_scale_on_every_rank(herd_bin, tmp_path):
    """herd run applies the rule with the real rank count: 8000000
    iterations fit 1 rank, not 2; every rank exits 2, one line."""
    job = write_job(tmp_path / "run.ini", {"target": tmp_path},
                    [("w", {"kind": "write", "file_size": "4K", "block_size": "4K",
                            "iterations": 8000000})])
    assert herd_cmd(herd_bin, "check", job).returncode == 0
    proc = herd_run(herd_bin, 2, job, tmp_path / "out.h5", quiet=True, timeout=60)
    assert proc.returncode == 2, describe(proc)
    lines = [l for l in proc.stderr.splitlines() if l.startswith("herd:")]
    assert len(lines) == 1, describe(proc)
    assert "key 'iterations': 8000000 iterations x 2 ranks need" in lines[0]
    assert not (tmp_path / "out.h5").exists()
    assert not any(p.name.startswith("herd-") for p in tmp_path.iterdir())


def test_check_not_a_job_file(herd_bin, tmp_path):
    one_line_refusal(herd_cmd(herd_bin, "check", tmp_path), "is a directory")
    one_line_refusal(herd_cmd(herd_bin, "check", "/dev/zero", timeout=10),
                     "/dev/zero: cannot read job file: not a regular file")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    one_line_refusal(herd_cmd(herd_bin, "check", fifo, timeout=10), "not a regular file")
    big = tmp_path / "big.ini"
    big.write_bytes(b"[global]\ntarget = /tmp\n[w]\nkind = write\n" + b";" * (1 << 20))
    one_line_refusal(herd_cmd(herd_bin, "check", big), "larger than 1 MiB: not a job file")


@pytest.mark.parametrize("p", ["nan", "inf", "-0.5", "0", "1.5", "", "0x1p-2"])
def test_check_fault_probability(herd_bin, tmp_path, p):
    job = write_job(tmp_path / "f.ini", {"target": tmp_path, "backend": "fault",
                                         "faults": f"write=EIO@{p}"},
                    [("w", {"kind": "write"})])
    one_line_refusal(herd_cmd(herd_bin, "check", job), "key 'faults'", "probability")


@pytest.mark.parametrize("target,words", [
    ("nfs://h:99999/x", "port 99999 is not 1 to 65535"),
    ("nfs://h:65536/x", "port 65536 is not 1 to 65535"),
    ("nfs://h:-5/x", "port '-5' is not a number"),
    ("nfs://h:2049x/x", "port '2049x' is not a number"),
    ("nfs://h/x?version=9", "option version=9 must be 3 or 4"),
    ("nfs://h/x?vers=4", "unknown option 'vers'"),
    ("nfs://h:2050/x?nfsport=2049", "the port is given twice"),
    ("nfs://::1/x", "an IPv6 address goes in brackets"),
])
def test_check_refuses_bad_nfs_urls(herd_bin, target, words):
    """An nfs:// target libnfs would misread or ignore is refused in one
    line before --probe looks at it (it probed port 99999, or 2049 for a
    port that was not a number)."""
    line = one_line_refusal(herd_cmd(herd_bin, "check", "--phase", "write", "--set",
                                     "backend=libnfs", "--set", f"target={target}", "--probe"),
                            "--set target: ", words)
    assert line.startswith(f"herd: --phase: --set target: '{target}': "), line


def test_check_refuses_bad_smb_ports(herd_bin):
    """smb:// targets get the same server and port rule (its port went to
    atoi: 99999 was probed and connected to)."""
    keys = herd_cmd(herd_bin, "keys")
    if "smb_user" not in keys.stdout:
        pytest.skip("this herd was built without the smb backend (libsmbclient)")
    for target, words in [("smb://h:99999/s", "port 99999 is not 1 to 65535"),
                          ("smb://h:0/s", "port 0 is not 1 to 65535"),
                          ("smb://h:445x/s", "port '445x' is not a number")]:
        one_line_refusal(herd_cmd(herd_bin, "check", "--phase", "read", "--set", "backend=smb",
                                  "--set", "smb_guest=yes", "--set", f"target={target}"),
                         f"--set target: '{target}': {words}")


NFS, SMB = "nfs://127.0.0.1/export", "smb://127.0.0.1/share"


def built_backends(herd_bin):
    """The backends this herd was built with, by their own keys."""
    keys = herd_cmd(herd_bin, "keys").stdout
    return {"posix", "fault"} | {name for name, key in (("libnfs", "nfs_version"),
                                                        ("smb", "smb_user")) if key in keys}


@pytest.mark.parametrize("target,backend,expect", [
    (NFS, None, "libnfs"), (SMB, None, "smb"), ("PATH", None, "posix"),
    (NFS, "libnfs", "libnfs"), ("PATH", "fault", "fault"),
    (NFS, "posix", "backend = posix works on a directory path, not on target "
                   f"'{NFS}' (nfs:// is libnfs's: leave backend out; or mount it"),
    (SMB, "fault", "backend = fault works on a directory path, not on target "
                   f"'{SMB}' (smb:// is smb's: leave backend out; or mount it"),
    ("PATH", "libnfs", "backend = libnfs needs target = nfs://..., not 'PATH' (a path is "
                       "posix's: leave backend out)"),
    ("PATH", "smb", "backend = smb needs target = smb://..., not 'PATH'"),
    (NFS, "smb", f"backend = smb needs target = smb://..., not '{NFS}' (nfs:// is libnfs's"),
    (SMB, "libnfs", f"backend = libnfs needs target = nfs://..., not '{SMB}' (smb:// is smb's"),
    ("foo://x", None, "target 'foo://x': no backend of this herd takes foo://"),
])
def test_backend_follows_the_target(herd_bin, tmp_path, target, backend, expect):
    """Without a backend key the target's form picks it (nfs:// libnfs,
    smb:// smb, a path posix); a backend that contradicts the target is
    one line naming both, exit 2, for check and run alike, at the line
    that names it."""
    needed = {backend, expect} | {"libnfs" if target == NFS else "smb" if target == SMB else None}
    missing = needed & {"libnfs", "smb"} - built_backends(herd_bin)
    if missing:  # (test_job.c checks what such a build says)
        pytest.skip(f"this herd was built without the {' and '.join(missing)} backend")
    target = target.replace("PATH", str(tmp_path))
    expect = expect.replace("PATH", str(tmp_path))
    lines = [f"target = {target}", "fsync = no"] + ([f"backend = {backend}"] if backend else [])
    if expect == "smb":
        lines.append("smb_guest = yes")
    job = tmp_path / "j.ini"
    job.write_text("[global]\n" + "\n".join(lines) + "\n[w]\nkind = write\n")
    check = herd_cmd(herd_bin, "check", job)
    if " " not in expect:
        assert check.returncode == 0, describe(check)
        assert f"target {target} (backend {expect})" in check.stdout.splitlines()[0]
        return
    key, line = ("backend", 4) if backend else ("target", 2)
    one_line_refusal(check, f"herd: {job}:{line}: key '{key}': {expect}")
    run = herd_cmd(herd_bin, "run", job, "-o", tmp_path / "r.h5")
    one_line_refusal(run, f"herd: {job}:{line}: key '{key}': {expect}")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["j.ini"]


# The directories below the target each kind's calls name: herd-<id>, then
# the fileset's (data, lock, storm), a mix's tree (FILESET/NAME-rN/n) or a
# meta tree (FILESET/rN/a/dN); idle: the run directory alone.
DIRS_BELOW = {"write": 2, "lock": 2, "storm": 2, "mix": 4, "meta": 5, "idle": 1}
V4_DEEPEST = 47  # 50 operations (Linux 6.1's nfsd's cap) less PUTROOTFH, GETATTR, GETFH


def deep_url(components, version):
    return "nfs://127.0.0.1/" + "/".join(["d"] * components) + f"?version={version}"


@pytest.mark.parametrize("kind", sorted(DIRS_BELOW))
def test_check_refuses_nfsv4_targets_too_deep(herd_bin, tmp_path, kind):
    """Over NFSv4 herd (and libnfs 4.0's mount) walks a directory in one
    COMPOUND: PUTROOTFH, a LOOKUP per component from the server's root,
    GETATTR, GETFH; Linux 6.1's nfsd refuses more than 50 operations,
    ganesha 4.3 more than 100 (NFS4ERR_RESOURCE), so a phase's deepest
    directory may be 47 components deep. A target at that depth for the kind is taken; one
    component more is refused in one line naming the limit and NFSv3;
    over NFSv3 (a LOOKUP per call) it is taken."""
    if "libnfs" not in built_backends(herd_bin):
        pytest.skip("this herd was built without libnfs")
    below = DIRS_BELOW[kind]
    phase = {"kind": kind, **({"duration": "1s"} if kind == "idle" else {})}

    def check(components, version):
        job = write_job(tmp_path / "deep.ini", {"target": deep_url(components, version),
                                                "file_size": "64K", "block_size": "64K"},
                        [("p", phase)])
        return run_cmd([herd_bin, "check", job])

    fits = check(V4_DEEPEST - below, 4)
    assert fits.returncode == 0, describe(fits)
    line = one_line_refusal(check(V4_DEEPEST - below + 1, 4), "key 'target': over NFSv4",
                            f"deepest directory is {V4_DEEPEST + 1} components below the "
                            "server's root", f"herd's {below}", "(51 operations)",
                            f"at most {V4_DEEPEST} components",
                            f"a target at most {V4_DEEPEST - below} deep", "use NFSv3")
    assert "Linux 6.1's nfsd at 50 operations, ganesha 4.3 at 100" in line, line
    assert check(V4_DEEPEST - below + 1, 3).returncode == 0


def test_check_duration_reaches_its_kinds(herd_bin, tmp_path):
    """duration is a key of idle, lock and storm phases like any other:
    --set (or [global]) gives it to those phases and leaves the others
    alone; a write phase's own duration is refused, with the hint."""
    ok = herd_cmd(herd_bin, "check", "--phase", "idle,write", "--set", f"target={tmp_path}",
                  "--set", "duration=1s")
    assert ok.returncode == 0, describe(ok)
    assert [line.split()[1] for line in ok.stdout.splitlines()[2:4]] == ["idle", "write"]
    job = write_job(tmp_path / "d.ini", {"target": tmp_path, "duration": "1s"},
                    [("i", {"kind": "idle"}), ("w", {"kind": "write"}),
                     ("s", {"kind": "storm", "sharing": "shared"})])
    assert herd_cmd(herd_bin, "check", job).returncode == 0
    one_line_refusal(herd_cmd(herd_bin, "check", "--phase", "idle,write", "--set",
                              f"target={tmp_path}", "--set", "duration=1s", "--set",
                              "write.duration=2s"),
                     "--set duration: applies to idle, lock, storm and mix phases only, not to "
                     "write (use deadline to bound others)")


def test_global_key_reaches_the_phases_it_fits(herd_bin, tmp_path):
    """Every [global] key is a default for the phases it fits: iterations =
    2 gives a write phase 2 iterations, while the meta phase, whose kind
    runs its steps once, keeps 1; herd check and herd run (2 ranks) say so
    in one note, once, and exit 0, and the results record what each phase
    ran. The meta phase's own iterations = 2 is refused as ever."""
    target = tmp_path / "t"
    target.mkdir()
    note = ("herd: note: [global] iterations = 2 does not apply to meta phase [tree] (meta "
            "phases run their steps once; use several phases): that phase keeps 1")
    meta = {"kind": "meta", "dirs": 2, "files": 4}
    job = write_job(tmp_path / "g.ini", {"target": target, "iterations": 2},
                    [("w", {"kind": "write", "file_size": "64K", "block_size": "16K"}),
                     ("tree", meta)])
    check = herd_cmd(herd_bin, "check", job, "-n", 2)
    assert check.returncode == 0, describe(check)
    assert check.stderr.splitlines() == [note], describe(check)
    rows = {ln.split()[1]: ln.split() for ln in check.stdout.splitlines()[2:4]}
    assert rows["w"][8] == "2" and rows["tree"][8] == "1", check.stdout
    proc = herd_run(herd_bin, 2, job, tmp_path / "g.h5", quiet=True)
    assert proc.returncode == 0, describe(proc)
    assert proc.stderr.splitlines().count(note) == 1, describe(proc)
    assert sum("note:" in ln for ln in proc.stderr.splitlines()) == 1, describe(proc)
    res = load_results(tmp_path / "g.h5")
    w, tree = res.phases["w"], res.phases["tree"]
    assert w.attrs["iterations"] == 2 and tree.attrs["iterations"] == 1
    assert sorted(zip(w.ranks["rank"].tolist(), w.ranks["iteration"].tolist())) == \
        [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert sorted(tree.ranks["rank"].tolist()) == [0, 1]
    assert tree.attrs["status"] == "ok" and len(tree.errors) == 0, tree.attrs
    own = write_job(tmp_path / "own.ini", {"target": target},
                    [("w", {"kind": "write"}), ("tree", dict(meta, iterations=2))])
    one_line_refusal(herd_cmd(herd_bin, "check", own, "-n", 2),
                     f"{own}:11: key 'iterations': meta phases run their steps once; use "
                     "several phases")


@pytest.mark.parametrize("value", ["+5", " 5", "5 ", "-0", "5 5", "0x5"])
def test_check_integers_are_plain_digits(herd_bin, tmp_path, value):
    """An integer is decimal digits, as a size or a duration is: no sign,
    no space around it in a --set (a job file's values come trimmed)."""
    one_line_refusal(herd_cmd(herd_bin, "check", "--phase", "write", "--set",
                              f"target={tmp_path}", "--set", f"iterations={value}"),
                     f"--set iterations: '{value}' is not a non-negative integer")
    job = tmp_path / "i.ini"
    job.write_text(f"[global]\ntarget = {tmp_path}\n[w]\nkind = write\niterations =  5  \n")
    ok = herd_cmd(herd_bin, "check", job)
    assert ok.returncode == 0 and ok.stdout.splitlines()[2].split()[8] == "5", describe(ok)


@pytest.mark.parametrize("key,value", [
    ("fileset", "$(touch PWNED)"), ("fileset", "<b>"), ("fileset", ".x"), ("fileset", "a b"),
    ("run_id", "`id`"), ("run_id", "-x"), ("target", "/tmp/a\nb"), ("target", "/tmp/\x1b[31m"),
    ("monitor_host", "h\x7f"),
])
def test_check_refuses_names_and_control_bytes(herd_bin, tmp_path, key, value):
    job = write_job(tmp_path / "n.ini", {"target": tmp_path}, [("w", {"kind": "write"})])
    line = one_line_refusal(herd_cmd(herd_bin, "check", job, "--set", f"{key}={value}"),
                            f"--set {key}:")
    assert not re.search(r"[\x00-\x1f\x7f]", line), line
    assert not (tmp_path / "PWNED").exists()


def test_check_refuses_invalid_utf8_and_bad_sections(herd_bin, tmp_path):
    job = tmp_path / "u.ini"
    job.write_bytes(b"[global]\ntarget = /tmp/\xff\xfe\n[w]\nkind = write\n")
    proc = subprocess.run([herd_bin, "check", str(job)], capture_output=True, timeout=20)
    assert proc.returncode == 2
    err = proc.stderr.decode("utf-8")  # the message itself is valid UTF-8
    assert err.count("\n") == 1 and ":2: key 'target': byte 0xff" in err, err
    for name in (".w", "-w", "<b>", "$(id)"):
        job.write_text(f"[global]\ntarget = /tmp\n[{name}]\nkind = write\n")
        one_line_refusal(herd_cmd(herd_bin, "check", job), ":3: section name")


def test_check_odd_target_is_stored_as_given(herd_bin, tmp_path):
    odd = f"{tmp_path}/$(touch PWNED)/`id`/<b>/café"
    job = write_job(tmp_path / "t.ini", {"target": odd}, [("w", {"kind": "write"})])
    proc = herd_cmd(herd_bin, "check", job)
    assert proc.returncode == 0, describe(proc)
    assert f"target {odd} (backend posix)" in proc.stdout.splitlines()[0]
    assert not (tmp_path / "PWNED").exists()


# ---------------------------------------------------------------- job files that do what they say


def test_check_warns_and_strict_refuses(herd_bin, tmp_path):
    """A meta phase given a big file_size by a plain --set and a read of a
    fileset no phase writes: warnings naming file, line (or --set) and
    key; --strict refuses; a monitor rank is counted on top of -n."""
    job = tmp_path / "lint.ini"
    job.write_text("[global]\ntarget = /tmp\nfile_size = 64M\nmonitor_rank = last\n"
                   "[m]\nkind = meta\nfiles = 100\n[r]\nkind = read\nsharing = shared\n")
    proc = herd_cmd(herd_bin, "check", job, "-n", "4", "--set", "file_size=64M")
    assert proc.returncode == 0, describe(proc)
    warns = [ln for ln in proc.stderr.splitlines() if "warning:" in ln]
    assert len(warns) == 2, proc.stderr
    assert (f"{job}: --set file_size: warning: meta phase [m] writes 25.0 GiB: 100 files x 4 "
            "ranks of file_size 64M from the command line") in warns[0], warns[0]
    assert "--set m.file_size=0: empty files" in warns[0]
    assert "read phase [r] reads fileset 'shared-64M'" in warns[1]
    assert "run it with 5 ranks (4 doing I/O, 1 monitoring)" in proc.stdout
    proc = herd_cmd(herd_bin, "check", job, "-n", "4", "--strict", "--set", "file_size=64M")
    assert proc.returncode == 2 and "2 warnings: refused (--strict)" in proc.stderr, describe(proc)
    # [global]'s file_size does not reach the meta phase: its files are empty
    proc = herd_cmd(herd_bin, "check", job, "-n", "4")
    assert proc.returncode == 0 and "meta phase" not in proc.stderr, describe(proc)
    assert re.search(r"^1 +m +meta +unique +- +unique-0 +0 ", proc.stdout, re.M), proc.stdout
    proc = herd_cmd(herd_bin, "check", job, "-n", "4", "--strict", "--set", "m.file_size=0",
                    "--set", "r.sharing=unique", "--set", "r.fileset=unique-64M")
    assert proc.returncode == 2, describe(proc)  # still no write phase for the read
    job.write_text("[global]\ntarget = /tmp\n[w]\nkind = write\n[r]\nkind = read\n")
    proc = herd_cmd(herd_bin, "check", job, "--strict")
    assert proc.returncode == 0 and "warning:" not in proc.stderr, describe(proc)


def test_run_prints_checks_warnings_first(herd_bin, tmp_path):
    """herd run prints herd check's warnings (for its I/O ranks) on rank
    0's stderr once, before the run's first line; its exit code is the
    run's own (here 3: every open of the unwritten fileset failed)."""
    target = tmp_path / "t"
    target.mkdir()
    job = write_job(tmp_path / "lint.ini", {"target": target, "file_size": "64K",
                                            "block_size": "64K"},
                    [("w", {"kind": "write", "fileset": "a"}),
                     ("r", {"kind": "read", "fileset": "b"})])
    check = herd_cmd(herd_bin, "check", job, "-n", "2")
    assert check.returncode == 0, describe(check)
    warned = [ln for ln in check.stderr.splitlines() if "warning:" in ln]
    assert len(warned) == 1 and "read phase [r] reads fileset 'b'" in warned[0], check.stderr
    proc = herd_run(herd_bin, 2, job, tmp_path / "r.h5", quiet=True)
    assert proc.returncode == 3, describe(proc)
    lines = proc.stderr.splitlines()
    assert lines.count(warned[0]) == 1, describe(proc)
    first = next(i for i, ln in enumerate(lines) if ln.startswith("herd: run "))
    assert lines.index(warned[0]) < first, describe(proc)
    assert sum("warning:" in ln for ln in lines) == 1, describe(proc)
    clean = write_job(tmp_path / "clean.ini", {"target": target, "file_size": "64K",
                                               "block_size": "64K"},
                      [("w", {"kind": "write"}), ("r", {"kind": "read"})])
    proc = herd_run(herd_bin, 2, clean, tmp_path / "c.h5", quiet=True)
    assert proc.returncode == 0 and "warning:" not in proc.stderr, describe(proc)


def test_run_with_include_vars_and_set(herd_bin, tmp_path):
    """Under mpirun: ${VAR} and include are read on rank 0 and the text is
    broadcast (every rank runs the same job), # ends a value, --set beats
    the file in every phase and PHASE.KEY in one."""
    target = tmp_path / "t"
    target.mkdir()
    (tmp_path / "site.ini").write_text("[global]\ntarget = ${HERD_TEST_TARGET}  # the scratch\n"
                                       "file_size = 8M\n")
    job = tmp_path / "job.ini"
    job.write_text("include site.ini\n[w]\nkind = write\nfile_size = 4M\n"
                   "[r]\nkind = read\nfile_size = 4M\n")
    out = tmp_path / "r.h5"
    env = dict(mpi_env(), HERD_TEST_TARGET=str(target))
    proc = subprocess.run(mpirun_args(herd_bin, 2, "run", job, "-o", out, "--set", "block_size=64K",
                                      "--set", "r.iterations=2"),
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, describe(proc)
    res = load_results(out)
    for name in ("w", "r"):
        ph = res.phases[name]
        assert ph.attrs["target"] == str(target) and ph.attrs["block_size"] == 64 * 1024
        assert ph.attrs["file_size"] == 4 << 20
    assert res.phases["r"].attrs["iterations"] == 2 and res.phases["w"].attrs["iterations"] == 1
    # an unset variable: one line naming file and line, exit 2, no results
    env.pop("HERD_TEST_TARGET")
    proc = subprocess.run(mpirun_args(herd_bin, 2, "run", job, "-o", tmp_path / "x.h5"),
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 2, describe(proc)
    assert f"{tmp_path / 'site.ini'}:2: ${{HERD_TEST_TARGET}} is not set" in proc.stderr
    assert not (tmp_path / "x.h5").exists()


@pytest.mark.parametrize("value", ["{t}\n[evil]\nkind = write\nfile_size = 8M",
                                   "{t}\nkeep = yes\nrun_id = victim", "{t}\r", "{t}\x1b[31m"])
def test_variable_is_one_value(herd_bin, tmp_path, value):
    """A ${VAR} whose value holds a section or keys on lines of their own
    adds no phase and sets no key: `herd check` and `herd run` refuse the
    job with one line naming the variable and its line, exit 2, and the
    run makes no run directory (no herd-victim kept)."""
    job = tmp_path / "v.ini"
    job.write_text("[global]\ntarget = ${HERD_TEST_TARGET}\n[w]\nkind = write\n")
    env = dict(mpi_env(), HERD_TEST_TARGET=value.format(t=tmp_path))
    expect = (f"{job}:2: ${{HERD_TEST_TARGET}}: control byte", "(a value is one line of text)")
    line = one_line_refusal(run_cmd([herd_bin, "check", str(job)], env=env), *expect)
    assert not re.search(r"[\x00-\x1f\x7f]", line), line
    proc = run_cmd(mpirun_args(herd_bin, 2, "run", job, "-o", tmp_path / "out.h5", quiet=True),
                   env=env, timeout=60)
    assert proc.returncode == 2, describe(proc)
    lines = [l for l in proc.stderr.splitlines() if l.startswith("herd:")]
    assert len(lines) == 1 and all(text in lines[0] for text in expect), describe(proc)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["v.ini"]
