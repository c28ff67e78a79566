"""herd_results — load a herd results file (HDF5) into pandas.

The one place Python reads results.h5: herd-report, herd-compare and user
notebooks go through it, the way PyDarshan gives Darshan's records.
Layout: docs/results-format.md; this API: docs/analysis.md.

    import herd_results
    with herd_results.load("results.h5") as run:
        run.status                      # complete | interrupted | partial
        run.phases                      # one row per phase: times, MiB/s, errors, server CPU
        run.ranks("write-unique-16M")   # one row per (rank, iteration)
        run.all_ranks()                 # every phase's rows, with a phase column
        run.errors("write-unique-16M")  # one row per (rank, op, errno)
        run.samples()                   # server monitor samples (/monitor/samples)

Every failure to read (missing file, not HDF5, truncated, not herd's)
raises ResultsError with a one-line reason.
"""
import functools
import os

import h5py
import numpy as np
import pandas as pd


class ResultsError(Exception):
    """The file is missing, unreadable, or not a herd results file."""


def _decode(df):
    """Fixed-length HDF5 strings arrive as bytes (object columns): decode."""
    for col in df.columns:
        if df[col].dtype.kind == "S" or (
                df[col].dtype == object and len(df) and isinstance(df[col].iloc[0], bytes)):
            df[col] = df[col].str.decode("utf-8", errors="replace")
    return df


def _text(v):
    if isinstance(v, bytes):
        return v.decode("utf-8", errors="replace")
    if isinstance(v, np.ndarray) and v.shape == () and v.dtype.kind in "SO":
        return _text(v[()])
    return v


def _reading(method):
    """Turn HDF5 read failures inside a Run method into ResultsError."""
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except ResultsError:
            raise
        except (OSError, KeyError, ValueError, RuntimeError) as e:
            raise ResultsError(f"{self.path}: cannot read {method.__name__}"
                               f"({', '.join(map(str, args))}): {e}") from None
    return wrapper


# Phase summary columns, in order (what herd prints at the end, and more).
PHASE_COLUMNS = [
    "phase", "index", "kind", "sharing", "file_size", "block_size", "status", "rows", "ranks",
    "t_start", "t_end", "elapsed", "start_skew", "t_min", "t_median", "t_max", "first_done",
    "last_done", "bytes", "ops", "mib_per_s", "ops_per_s", "errors", "verify_failures",
    "grants", "contended", "contention", "violations", "stuck", "cpu_mean", "cpu_max",
    "nfsd_threads",
]


class Run:
    """One herd run: root attributes, hosts, ranks, a phase summary, and
    per-phase and monitor tables as DataFrames."""

    def __init__(self, path):
        self.path = str(path)
        if not os.path.exists(self.path):
            raise ResultsError(f"{self.path}: no such file")
        try:
            self._f = h5py.File(self.path, "r")
        except OSError as e:
            reason = str(e).split("(")[0].strip() or "unreadable"
            raise ResultsError(f"{self.path}: not a readable HDF5 file ({reason})") from None
        try:
            if _text(self._f.attrs.get("tool")) != "herd" or "phases" not in self._f:
                raise ResultsError(f"{self.path}: not a herd results file (no tool=herd "
                                   "attribute or /phases group)")
            self._load()
        except ResultsError:
            self._f.close()
            raise
        except (OSError, KeyError, ValueError, RuntimeError) as e:
            self._f.close()
            raise ResultsError(f"{self.path}: damaged herd results file ({e})") from None

    def _load(self):
        self.attrs = {k: _text(v) for k, v in self._f.attrs.items()}
        self.status = self.attrs.get("status", "partial")
        self.hosts = _table(self._f["hosts"])
        self.rank_info = _table(self._f["ranks"])
        # A phase group without a status attribute was cut off mid-write.
        self.phase_names = [n for n in self._f["phases"]
                            if "status" in self._f["phases"][n].attrs]
        self._samples = self._monitor_table("samples")
        rows = [self._phase_row(n) for n in self.phase_names]
        self.phases = pd.DataFrame(rows, columns=PHASE_COLUMNS)

    def close(self):
        self._f.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    @property
    def label(self):
        """The file's name without .h5: the default name of a run."""
        return os.path.splitext(os.path.basename(self.path))[0]

    def describe_status(self):
        """One line for reports: what the file holds and how the run ended."""
        n = len(self.phase_names)
        if self.status == "complete":
            return f"complete: {n} phases, exit code {self.attrs.get('exit_code')}"
        if self.status == "interrupted":
            return (f"interrupted (exit code {self.attrs.get('exit_code')}): holds the {n} "
                    f"phases that ran, the last one cut short")
        return (f"partial: herd did not close the file (it died or is still running); holds "
                f"the {n} phases finished before that")

    # ---- per phase ----

    @_reading
    def phase_attrs(self, name):
        return {k: _text(v) for k, v in self._f["phases"][name].attrs.items()}

    @_reading
    def ranks(self, name):
        """/phases/NAME/ranks plus seconds = t_end - t_start."""
        df = _table(self._f["phases"][name]["ranks"])
        df["seconds"] = df["t_end"] - df["t_start"]
        return df

    @_reading
    def errors(self, name):
        return _table(self._f["phases"][name]["errors"])

    @_reading
    def ops(self, name):
        return _table(self._f["phases"][name]["ops"])

    @_reading
    def stuck(self, name):
        return _table(self._f["phases"][name]["stuck"])

    @_reading
    def holds(self, name):
        g = self._f["phases"][name]
        return _table(g["holds"]) if "holds" in g else pd.DataFrame()

    @_reading
    def latency(self, name):
        """{op: (bucket_lower_ns, bucket_upper_ns, counts)} of a phase."""
        g = self._f["phases"][name]["latency"]
        lower, upper = g["bucket_lower_ns"][()], g["bucket_upper_ns"][()]
        return {op: (lower, upper, g[op][()]) for op in g if not op.startswith("bucket_")}

    def all_ranks(self):
        """Every phase's rank rows, with phase and kind columns."""
        return self._concat(self.ranks, extra=True)

    def all_errors(self):
        """Every phase's error rows, with a phase column."""
        return self._concat(self.errors)

    def _concat(self, getter, extra=False):
        frames = []
        for name in self.phase_names:
            df = getter(name)
            df.insert(0, "phase", name)
            if extra:
                df.insert(1, "kind", self.phase_attrs(name).get("kind"))
            frames.append(df)
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    # ---- the monitor ----

    @property
    def monitor_attrs(self):
        g = self._f.get("monitor")
        return {k: _text(v) for k, v in g.attrs.items()} if g is not None else {}

    def _monitor_table(self, name):
        g = self._f.get("monitor")
        if g is None or name not in g:
            return pd.DataFrame()
        return _table(g[name])

    @_reading
    def samples(self):
        """Server samples: CPU fractions by mode, cpu_busy, load, memory, nfsd."""
        return self._samples.copy()

    @_reading
    def metrics(self):
        return self._monitor_table("metrics")

    @_reading
    def processes(self):
        return self._monitor_table("processes")

    @_reading
    def disks(self):
        return self._monitor_table("disks")

    @_reading
    def notes(self):
        return self._monitor_table("notes")

    @_reading
    def marks(self):
        return self._monitor_table("marks")

    @_reading
    def clients(self):
        return self._monitor_table("clients")

    @_reading
    def client_ops(self):
        return self._monitor_table("client_ops")

    def server_samples(self, t0, t1):
        """The server samples of one source that meet [t0, t1] (see
        meeting): a monitor rank's /proc samples when they have CPU
        readings there, else a node_exporter's."""
        met = meeting(self._samples, t0, t1)
        for source in ("proc", "node_exporter"):
            rows = met[met["source"] == source] if len(met) else met
            if len(rows) and rows["cpu_busy"].notna().any():
                return rows
        return met.iloc[0:0]

    def server_cpu(self, t0, t1):
        """(mean, max) of cpu_busy over server_samples(t0, t1), and the last
        nfsd thread count among them; NaN where there are none (herd's
        summary uses the same rule)."""
        rows = self.server_samples(t0, t1)
        if rows.empty:
            return np.nan, np.nan, np.nan
        busy = rows["cpu_busy"].dropna()
        threads = rows["nfsd_threads"].dropna()
        return busy.mean(), busy.max(), threads.iloc[-1] if len(threads) else np.nan

    # ---- the summary ----

    def _phase_row(self, name):
        a = self.phase_attrs(name)
        rows = self.ranks(name)
        worked = rows[rows["ops"] > 0]
        errors = self.errors(name)
        t0 = a["t_start"]
        first = worked["t_end"].min() - t0 if len(worked) else np.nan
        last = worked["t_end"].max() - t0 if len(worked) else np.nan
        total, ops = int(rows["bytes"].sum()), int(rows["ops"].sum())
        grants, contended = _sum(rows, "grants"), _sum(rows, "contended")
        cpu_mean, cpu_max, threads = self.server_cpu(t0, a["t_end"])
        rate = last if last == last and last > 0 else np.nan
        return {
            "phase": name,
            "index": a.get("index"),
            "kind": a.get("kind"),
            "sharing": a.get("sharing"),
            "file_size": a.get("file_size"),
            "block_size": a.get("block_size"),
            "status": a.get("status"),
            "rows": len(rows),
            "ranks": rows["rank"].nunique(),
            "t_start": t0,
            "t_end": a["t_end"],
            "elapsed": a["t_end"] - t0,
            "start_skew": a.get("start_skew"),
            "t_min": worked["seconds"].min() if len(worked) else np.nan,
            "t_median": worked["seconds"].median() if len(worked) else np.nan,
            "t_max": worked["seconds"].max() if len(worked) else np.nan,
            "first_done": first,
            "last_done": last,
            "bytes": total,
            "ops": ops,
            "mib_per_s": total / 2**20 / rate if total else 0.0,
            "ops_per_s": ops / rate if ops else 0.0,
            "errors": int(errors["count"].sum()) if len(errors) else 0,
            "verify_failures": _sum(rows, "verify_failures"),
            "grants": grants,
            "contended": contended,
            "contention": contended / (grants + contended) if grants + contended else np.nan,
            "violations": _sum(rows, "violations"),
            "stuck": len(self.stuck(name)) if "stuck" in self._f["phases"][name] else 0,
            "cpu_mean": cpu_mean,
            "cpu_max": cpu_max,
            "nfsd_threads": threads,
        }


def meeting(frame, t0, t1):
    """Rows of a monitor table whose interval (t - dt, t] meets [t0, t1]:
    how samples are matched to a phase everywhere."""
    if frame.empty:
        return frame
    return frame[(frame["t"] - frame["dt"] <= t1) & (frame["t"] > t0)]


def _sum(df, col):
    """Sum of a count column; 0 where a file from an older herd lacks it."""
    return int(df[col].sum()) if col in df else 0


def _table(dataset):
    return _decode(pd.DataFrame(dataset[()]))


def load(path):
    """Open a results file; raises ResultsError with a one-line reason."""
    return Run(path)
