"""The common start instant, checked against a known truth.

Every rank of these runs is on this host, so all of them read the same
CLOCK_MONOTONIC: the true offset between any two ranks is 0, unless the
test shifts one rank's clock with the test hook HERD_TEST_CLOCK_SHIFT
(src/lib/clock.c), launched MPMD so that only some ranks get it. The truth
is then known exactly: rank i's clock minus rank 0's is s_i - s_0.

What is checked, with no bound that is not in the results file (but one
that keeps the error bound tighter than the shifts, ERROR_MAX):
- /ranks clock_offset of every rank equals the injected truth within that
  rank's own clock_error (half the best ping-pong round trip: the reply
  was stamped somewhere inside the round trip, so this bound is rigorous);
- every rank's start of every phase (iteration 0's t_start), moved from
  the rank's corrected clock onto the true one with the known offset
  error, is not before the announced instant t_start minus its clock_error;
- the recorded start_skew is no larger than the latest start the ranks
  recorded (their achieved starts lie between t_start and iteration 0's
  start), and the true spread of the starts is within what the ranks
  recorded plus twice the largest clock_error.
With a wrong sign or a missing correction any of these is off by seconds.
"""

import pytest

from conftest import describe, run_cmd, write_job

import h5py

EPS = 1e-9  # float64 rounding of clock readings near 1e5..1e7 s
# The largest clock_error that still tells the injected shifts (2.5 s the
# smallest) from a wrong sign or a missing correction: a fifth of it. A
# busy machine widens the error (a slower best ping-pong); the checks
# below hold whatever it is, this one only keeps them from being vacuous.
ERROR_MAX = 2.5 / 5


def idle_job(path, target):
    phases = [(f"p{i}", {"kind": "idle", "duration": "150ms"}) for i in range(4)]
    return write_job(path, {"target": target}, phases)


def mpmd(herd_bin, groups, job, out):
    """mpirun with one app context per (nranks, shift) in groups."""
    args = ["mpirun", "--oversubscribe"]
    for i, (n, shift) in enumerate(groups):
        if i:
            args.append(":")
        args += ["-np", str(n)]
        if shift is not None:
            args += ["-x", f"HERD_TEST_CLOCK_SHIFT={shift}"]
        args += [herd_bin, "run", str(job), "-o", str(out)]
    return run_cmd(args)


def check_clock(out, shifts):
    """shifts[i]: the seconds rank i's clock was moved ahead."""
    with h5py.File(out, "r") as f:
        assert f.attrs["status"] == "complete"
        ranks = f["ranks"][()]
        offset = {int(r["rank"]): float(r["clock_offset"]) for r in ranks}
        error = {int(r["rank"]): float(r["clock_error"]) for r in ranks}
        assert sorted(offset) == list(range(len(shifts)))
        truth = {i: shifts[i] - shifts[0] for i in offset}
        # rank 0 defines the common clock: offset 0, error 0
        assert offset[0] == 0.0 and error[0] == 0.0
        for i in offset:
            assert 0 <= error[i] < ERROR_MAX, f"rank {i}: clock_error {error[i]}"
            assert abs(offset[i] - truth[i]) <= error[i] + EPS, \
                f"rank {i}: clock_offset {offset[i]:.9f}, injected {truth[i]:.9f}, " \
                f"error bound {error[i]:.3g}"
        max_err = max(error.values())
        report = []
        for name, ph in f["phases"].items():
            T = float(ph.attrs["t_start"])
            skew = float(ph.attrs["start_skew"])
            rows = ph["ranks"][()]
            own = {int(r["rank"]): float(r["t_start"]) for r in rows
                   if int(r["iteration"]) == 0}
            assert sorted(own) == sorted(offset), name
            # on the true clock (rank 0's, read without error)
            true = {i: own[i] + offset[i] - truth[i] for i in own}
            late = {i: own[i] - T for i in own}
            for i in own:
                assert late[i] >= -EPS, f"{name}: rank {i} started {late[i]} s before T"
                assert true[i] >= T - error[i] - EPS, \
                    f"{name}: rank {i} truly started {T - true[i]:.6f} s before T"
            assert 0 <= skew <= max(late.values()) + EPS, \
                f"{name}: start_skew {skew} but latest recorded start {max(late.values())}"
            spread = max(true.values()) - min(true.values())
            bound = max(late.values()) + 2 * max_err
            assert spread <= bound + EPS, \
                f"{name}: true start spread {spread:.6f} s > bound {bound:.6f} s"
            report.append((name, skew, spread, bound))
        return report


def test_start_instant_same_clock(herd_bin, tmp_path):
    """4 ranks, no shift: offsets 0 within the error, starts aligned."""
    target = tmp_path / "t"
    target.mkdir()
    job = idle_job(tmp_path / "idle.ini", target)
    out = tmp_path / "r.h5"
    proc = mpmd(herd_bin, [(4, None)], job, out)
    assert proc.returncode == 0, describe(proc)
    check_clock(out, [0.0] * 4)


@pytest.mark.parametrize("groups,shifts", [
    # rank 0 ahead by 5 s: every other rank's offset is -5 s
    ([(1, 5), (3, None)], [5.0, 0.0, 0.0, 0.0]),
    # a rank in the middle behind by 2.5 s
    ([(2, None), (1, -2.5), (1, None)], [0.0, 0.0, -2.5, 0.0]),
], ids=["rank0+5s", "rank2-2.5s"])
def test_start_instant_injected_offset(herd_bin, tmp_path, groups, shifts):
    target = tmp_path / "t"
    target.mkdir()
    job = idle_job(tmp_path / "idle.ini", target)
    out = tmp_path / "r.h5"
    proc = mpmd(herd_bin, groups, job, out)
    assert proc.returncode == 0, describe(proc)
    check_clock(out, shifts)

