"""Fuzzed job files (tests/integration/fuzzjobs.py): `herd check` exits 0 or
2 only, one stderr line on 2, never a signal or a hang; a sample of the
accepted jobs runs under mpirun -np 2 and exits 0, 2 or 3 only."""

import os
import subprocess

import pytest

import fuzzjobs
from conftest import _kill_group, mpi_env, mpirun_args

SEED = 20240611
CASES = 1500
RUN_SAMPLE = 15
RUN_TIMEOUT = 90


def test_fuzz_check(herd_bin, tmp_path):
    counts, failures = fuzzjobs.check_many(herd_bin, SEED, CASES, tmp_path)
    assert not failures, "\n".join(
        f"case {i}: {problem}; file {path}; sets {sets!r}; stderr {err[:300]!r}"
        for i, problem, path, sets, err in failures[:10])
    assert sum(counts.values()) == CASES
    # The generator must make both kinds, or it tests nothing.
    assert counts[2] > CASES // 2, counts
    assert counts[0] > 20, counts
    assert not (tmp_path / "PWNED").exists(), "a job value reached a shell"


def test_fuzz_run_accepted(herd_bin, tmp_path):
    """~15 accepted, cheap cases run for real on 2 ranks."""
    target = tmp_path / "target"
    target.mkdir()
    sets = fuzzjobs.run_sets(target)
    ran = []
    for index, name, text, case_sets in fuzzjobs.cases(SEED + 1, 3000):
        if len(ran) == RUN_SAMPLE:
            break
        for caps in ([], fuzzjobs.RUN_CAPS):
            all_sets = case_sets + sets + caps
            if fuzzjobs.run_cost_ok(text, all_sets):
                break
        else:
            continue
        path = tmp_path / f"case{index:06d}.ini"
        path.write_bytes(text)
        rc, _, _ = fuzzjobs.run_check(herd_bin, path, all_sets, ranks=2, cwd=tmp_path)
        if rc != 0:
            path.unlink()
            continue
        args = mpirun_args(herd_bin, 2, "run", path, "-o", tmp_path / f"case{index}.h5",
                           quiet=True)
        args = [os.fsencode(str(a)) for a in args] + fuzzjobs.set_args(all_sets)
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=mpi_env(), cwd=tmp_path, start_new_session=True)
        try:
            out, err = proc.communicate(timeout=RUN_TIMEOUT)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            pytest.fail(f"case {index} ({name}, sets {case_sets!r}) hung past {RUN_TIMEOUT}s")
        finally:
            if proc.poll() is None:
                _kill_group(proc)
        assert proc.returncode in (0, 2, 3), (
            f"case {index} ({name}, sets {case_sets!r}): exit {proc.returncode}\n"
            f"{text[:2000]!r}\nstderr: {err[-2000:]!r}")
        ran.append((index, proc.returncode))
    assert len(ran) == RUN_SAMPLE, f"only {len(ran)} cheap accepted cases: {ran}"
    assert not (tmp_path / "PWNED").exists(), "a job value reached a shell"
