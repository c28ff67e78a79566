"""fuzzjobs.py — hostile job files for `herd check` and `herd run`: the one
generator used by tests/integration/test_fuzz.py (about 1500 cases in CI)
and bench/fuzz_check.sh (as many as asked).

Every case starts from one of jobs/*.ini and applies 1-3 mutations: byte
flips, line drops and duplications, key/value swaps, values replaced by
hostile ones (sizes 0, -1, 1e30, 2^63, 2^64, nan, inf, 99999999999999T,
huge counts, long strings, non-UTF-8, control bytes, shell and HTML
text), sections dropped or renamed, and hostile --set options. The same
seed gives the same cases.

The contract checked: `herd check` exits 0 or 2, never by a signal, never
1, never hangs; on 2 stderr is exactly one line. Run as a program it prints
the count of cases per exit code:

    /usr/bin/python3 tests/integration/fuzzjobs.py --herd build/herd --cases 20000
"""

import argparse
import collections
import configparser
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO_DIR = Path(__file__).resolve().parent.parent.parent
JOBS_DIR = REPO_DIR / "jobs"

# Seconds one `herd check` may take before it counts as a hang.
CHECK_TIMEOUT = 20

HOSTILE_VALUES = [
    b"0", b"-1", b"1e30", b"9223372036854775807", b"9223372036854775808",
    b"18446744073709551615", b"18446744073709551616", b"nan", b"inf", b"-inf", b"NaN",
    b"99999999999999T", b"16777215T", b"16777216T", b"8388608T", b"1000000T", b"1T", b"1G",
    b"2147483647", b"2147483648", b"4294967296", b"1000000000000", b"100000000000",
    b"16000000", b"10000001", b"0x10", b"1.5", b"", b" ", b"yes", b"no", b"last",
    b"A" * 63, b"A" * 64, b"B" * 1023, b"C" * 1024, b"D" * 5000,
    b"\xff\xfe", b"caf\xc3\xa9", b"\xc0\xaf", b"\xed\xa0\x80", b"a\x01b", b"\x1b[31mred",
    b"a\x7fb", b"tab\there", b"cr\rhere",
    b"$(touch PWNED)", b"`touch PWNED`", b"<b>bold</b>", b"'; rm -rf / #", b"../../..",
    b".", b"..", b".hidden", b"-rf", b"a/b", b"%s%s%n", b"\\x00",
    b"compressible:101", b"compressible:-1", b"compressible:nan",
    b"write=EIO@nan", b"write=EIO@inf", b"write=EIO@-1", b"write=EIO@2", b"write=EIO@",
    b"write=EIO@0x1p-2", b"open=delay:99999999h", b"all=EIO@0.5", b"lock=noop",
    b"nfs://127.0.0.1/export", b"http://127.0.0.1:1/metrics",
    b"create,stat,rename,unlink,rmdir", b"create,,stat", b"99999999h", b"1e3s", b"1ms",
]

HOSTILE_SETS = [
    b"target=/tmp/a\nb", b"run_id=$(touch PWNED)", b"run_id=a\nb", b"fileset=<b>",
    b"iterations=16000000", b"iterations=100000000000", b"file_size=99999999999999T",
    b"file_size=8388608T", b"files=1000000000000", b"count=1000000000", b"deadline=nan",
    b"nosuch=1", b"=1", b"file_size", b"target=\xff", b"faults=write=EIO@nan",
    b"monitor_rank=99999999999999999999", b"seed=-1", b"block_size=0",
]

SECTION_NAMES = [b"global", b".hidden", b"-x", b"a/b", b"$(id)", b"<b>", b"caf\xc3\xa9",
                 b"\xff", b"x" * 70, b"", b"w.1", b"a b"]


def base_jobs():
    """(name, bytes) of every jobs/*.ini, sorted by name."""
    return [(p.name, p.read_bytes()) for p in sorted(JOBS_DIR.glob("*.ini"))]


def job_keys():
    """Every key name herd documents (from docs/job-file.md), or a fallback."""
    doc = REPO_DIR / "docs" / "job-file.md"
    keys = re.findall(r"^\| `([a-z_0-9]+)` \|", doc.read_text(), flags=re.M) if doc.exists() else []
    return sorted(set(keys)) or ["target", "kind", "file_size", "block_size", "iterations"]


def _kv_lines(lines):
    return [i for i, l in enumerate(lines) if b"=" in l and not l.lstrip().startswith((b";", b"#"))]


def _mutate_once(rng, lines, keys, sets):
    """Apply one mutation to lines (a list of bytes lines, no newlines) or sets."""
    kv = _kv_lines(lines)
    op = rng.randrange(12)
    if op == 0 and lines:  # flip bits of one byte
        i = rng.randrange(len(lines))
        if lines[i]:
            b = bytearray(lines[i])
            j = rng.randrange(len(b))
            b[j] ^= 1 << rng.randrange(8)
            lines[i] = bytes(b).replace(b"\0", b"0").replace(b"\n", b" ")
    elif op == 1 and lines:  # drop a line
        del lines[rng.randrange(len(lines))]
    elif op == 2 and lines:  # duplicate a line
        i = rng.randrange(len(lines))
        lines.insert(rng.randrange(len(lines) + 1), lines[i])
    elif op == 3 and kv:  # swap key and value
        i = rng.choice(kv)
        k, v = lines[i].split(b"=", 1)
        lines[i] = v.strip() + b" = " + k.strip()
    elif op in (4, 5, 6) and kv:  # a hostile value for an existing key
        i = rng.choice(kv)
        k = lines[i].split(b"=", 1)[0]
        lines[i] = k.strip() + b" = " + rng.choice(HOSTILE_VALUES)
    elif op == 7 and lines:  # a hostile value for any key, anywhere
        key = rng.choice(keys).encode()
        lines.insert(rng.randrange(len(lines) + 1), key + b" = " + rng.choice(HOSTILE_VALUES))
    elif op == 8:  # drop or rename a section header
        heads = [i for i, l in enumerate(lines) if l.lstrip().startswith(b"[")]
        if heads:
            i = rng.choice(heads)
            if rng.random() < 0.5:
                del lines[i]
            else:
                lines[i] = b"[" + rng.choice(SECTION_NAMES) + b"]"
    elif op == 9:  # a hostile --set
        sets.append(rng.choice(HOSTILE_SETS))
    elif op == 10:  # a --set of any key to a hostile value
        sets.append(rng.choice(keys).encode() + b"=" + rng.choice(HOSTILE_VALUES))
    elif op == 11:  # a new phase of any kind with hostile keys
        kind = rng.choice([b"write", b"read", b"md5", b"idle", b"lock", b"storm", b"meta"])
        new = [b"[fz%d]" % rng.randrange(1000), b"kind = " + kind]
        for _ in range(rng.randrange(1, 4)):
            new.append(rng.choice(keys).encode() + b" = " + rng.choice(HOSTILE_VALUES))
        lines.extend(new)


def cases(seed, n):
    """Yield n cases (index, base job name, file bytes, list of --set bytes)."""
    rng = random.Random(seed)
    bases = base_jobs()
    keys = job_keys()
    for index in range(n):
        name, text = bases[index % len(bases)]
        lines = text.split(b"\n")
        sets = []
        for _ in range(rng.randrange(1, 4)):
            _mutate_once(rng, lines, keys, sets)
        # argv cannot hold NUL bytes
        sets = [s.replace(b"\0", b"0") for s in sets]
        yield index, name, b"\n".join(lines), sets


def set_args(sets):
    args = []
    for s in sets:
        args += [b"--set", s]
    return args


def run_check(herd, path, sets, ranks=None, timeout=CHECK_TIMEOUT, cwd=None):
    """herd check PATH [-n RANKS] --set...: (returncode or 'timeout', stdout, stderr)."""
    args = [os.fsencode(os.path.abspath(herd)), b"check", os.fsencode(path)]
    if ranks:
        args += [b"-n", str(ranks).encode()]
    args += set_args(sets)
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        return "timeout", out, err
    return proc.returncode, out, err


def check_verdict(rc, out, err):
    """None if the result keeps the contract, else what is wrong."""
    if rc == "timeout":
        return "hung (timeout)"
    if rc < 0:
        return f"killed by signal {-rc}"
    if rc not in (0, 2):
        return f"exit code {rc}"
    if rc == 2:
        lines = err.split(b"\n")
        if len(lines) != 2 or lines[1] != b"" or not lines[0].startswith(b"herd: "):
            return f"exit 2 without exactly one line on stderr: {err[:400]!r}"
        if any(c < 0x20 or c == 0x7f for c in lines[0]):
            return f"control byte in the message: {lines[0][:400]!r}"
        try:
            lines[0].decode("utf-8")
        except UnicodeDecodeError:
            return f"message is not UTF-8: {lines[0][:400]!r}"
    return None


def check_case(herd, workdir, case):
    """Write one case and check it: (index, rc, problem or None, file path)."""
    index, name, text, sets = case
    path = Path(workdir) / f"case{index:06d}-{name}"
    path.write_bytes(text)
    rc, out, err = run_check(herd, path, sets, ranks=1 + index % 5, cwd=workdir)
    problem = check_verdict(rc, out, err)
    if problem is None:
        path.unlink()
    return index, rc, problem, path, sets, err


def check_many(herd, seed, n, workdir, workers=2):
    """Check n cases; returns (Counter of exit codes, list of failures)."""
    counts = collections.Counter()
    failures = []
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for index, rc, problem, path, sets, err in pool.map(
                lambda c: check_case(herd, workdir, c), cases(seed, n)):
            counts[rc] += 1
            if problem:
                failures.append((index, problem, str(path), sets, err))
    return counts, failures


# ------------------------------------------------ run candidates

# Resolved values above these make a run too long for a test.
RUN_LIMITS = {"iterations": 3, "count": 200, "files": 200, "dirs": 20}
RUN_SECONDS = {"duration": 3.0, "lock_hold": 0.05, "lock_timeout": 5.0, "deadline": 5.0,
               "stuck_after": 1e9, "op_timeout": 1e9, "monitor_interval": 1e9}
RUN_BYTES = {"file_size": 32 << 20}
# [global] caps tried when a job is too long as it is (phases may still
# override them; run_cost_ok judges the result).
RUN_CAPS = [b"file_size=64K", b"block_size=16K", b"iterations=1", b"count=20", b"files=100",
            b"dirs=10", b"duration=1s", b"lock_hold=1ms"]
UNITS = {"": 1, "s": 1, "ms": 1e-3, "us": 1e-6, "ns": 1e-9, "m": 60, "h": 3600}
SIZES = {"": 1, "B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def _seconds(v):
    m = re.fullmatch(r"([0-9]*\.?[0-9]*)(ns|us|ms|s|m|h)?", v)
    return float(m.group(1)) * UNITS[m.group(2) or ""] if m and m.group(1) not in ("", ".") else None


def _bytes(v):
    m = re.fullmatch(r"([0-9]+)([KMGTkmgt]?)(iB|B)?", v)
    return int(m.group(1)) * SIZES[m.group(2).upper()] if m else None


def run_cost_ok(text, sets):
    """Whether a job that `herd check` accepted (with sets) runs in seconds
    on 2 ranks: every resolved duration, count and size under the limits
    above, no fault delays. Jobs that do not parse here are skipped."""
    cp = configparser.ConfigParser(interpolation=None, strict=False,
                                   inline_comment_prefixes=(";", "#"))
    try:
        cp.read_string(text.decode("utf-8"))
    except Exception:
        return False
    glob = dict(cp["global"]) if cp.has_section("global") else {}
    for s in sets:
        k, _, v = s.decode("utf-8", "replace").partition("=")
        glob[k] = v
    for section in cp.sections():
        if section == "global":
            continue
        keys = dict(glob)
        keys.update(cp[section])
        if "delay" in keys.get("faults", ""):
            return False
        for k, limit in RUN_LIMITS.items():
            if k in keys and not (keys[k].isdigit() and int(keys[k]) <= limit):
                return False
        for k, limit in RUN_SECONDS.items():
            if k in keys and (_seconds(keys[k]) is None or _seconds(keys[k]) > limit):
                return False
        for k, limit in RUN_BYTES.items():
            if k in keys and (_bytes(keys[k]) is None or _bytes(keys[k]) > limit):
                return False
    return True


def run_sets(target):
    """--set values that point a run at a private directory, on posix, no
    monitor, every phase bounded by a deadline."""
    return [b"target=" + os.fsencode(target), b"backend=posix", b"deadline=2s",
            b"monitor_host=", b"monitor_rank=", b"monitor_url="]


def main():
    ap = argparse.ArgumentParser(description="herd check on fuzzed job files")
    ap.add_argument("--herd", default=str(REPO_DIR / "build" / "herd"))
    ap.add_argument("--cases", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--workers", type=int, default=2)
    a = ap.parse_args()
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="herd-fuzz-") as work:
        counts, failures = check_many(a.herd, a.seed, a.cases, work, a.workers)
        pwned = (Path(work) / "PWNED").exists()
        for index, problem, path, sets, err in failures[:20]:
            print(f"case {index}: {problem}; sets {sets!r}; stderr {err[:200]!r}")
    secs = time.monotonic() - t0
    print(f"{a.cases} cases, seed {a.seed}, {secs:.1f} s")
    for rc in sorted(counts, key=str):
        print(f"exit {rc}: {counts[rc]}")
    print(f"contract broken: {len(failures)}" + ("; a value reached a shell (PWNED)" if pwned else ""))
    return 1 if failures or pwned else 0


if __name__ == "__main__":
    sys.exit(main())
