"""herd_results — load a herd results file (HDF5) into pandas.

The one place Python reads results.h5: the report and compare tools and
user notebooks go through it. Layout: docs/results-format.md.

    import herd_results
    run = herd_results.load("results.h5")
    run.attrs["status"], run.phases        # one row per phase
    run.ranks("write-unique-16M")          # one row per (rank, iteration)
    run.errors("write-unique-16M")         # one row per (rank, op, errno)
"""
import os

import h5py
import numpy as np
import pandas as pd


class ResultsError(Exception):
    """The file is missing, unreadable, or not a herd results file."""


def _decode(df):
    for col in df.columns:
        if df[col].dtype.kind == "S":
            df[col] = df[col].str.decode("utf-8", errors="replace")
    return df


def _table(dataset):
    return _decode(pd.DataFrame(dataset[()]))


class Run:
    """One herd run: root attributes, a phase summary, per-phase tables."""

    def __init__(self, path):
        self.path = path
        if not os.path.exists(path):
            raise ResultsError(f"{path}: no such file")
        try:
            self._f = h5py.File(path, "r")
        except OSError as e:
            raise ResultsError(f"{path}: not a readable HDF5 file ({e})") from None
        if self._f.attrs.get("tool") != "herd" or "phases" not in self._f:
            self._f.close()
            raise ResultsError(f"{path}: not a herd results file")
        self.attrs = dict(self._f.attrs)
        self.hosts = _table(self._f["hosts"])
        self.rank_info = _table(self._f["ranks"])
        self.phase_names = [n for n in self._f["phases"] if "status" in self._f["phases"][n].attrs]
        self.phases = pd.DataFrame([self._phase_row(n) for n in self.phase_names])

    def close(self):
        self._f.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def phase_attrs(self, name):
        return dict(self._f["phases"][name].attrs)

    def ranks(self, name):
        df = _table(self._f["phases"][name]["ranks"])
        df["seconds"] = df["t_end"] - df["t_start"]
        return df

    def errors(self, name):
        return _table(self._f["phases"][name]["errors"])

    def latency(self, name):
        """{op: (bucket_lower_ns, bucket_upper_ns, counts)} of a phase."""
        g = self._f["phases"][name]["latency"]
        lower, upper = g["bucket_lower_ns"][()], g["bucket_upper_ns"][()]
        return {op: (lower, upper, g[op][()]) for op in g if not op.startswith("bucket_")}

    def _phase_row(self, name):
        a = self.phase_attrs(name)
        rows = self.ranks(name)
        worked = rows[rows["ops"] > 0]
        errors = self.errors(name)
        last = rows["t_end"].max() - a["t_start"] if len(rows) else np.nan
        total = int(rows["bytes"].sum())
        return {
            "phase": name,
            "kind": a.get("kind"),
            "sharing": a.get("sharing"),
            "file_size": a.get("file_size"),
            "status": a.get("status"),
            "rows": len(rows),
            "t_min": worked["seconds"].min() if len(worked) else np.nan,
            "t_median": worked["seconds"].median() if len(worked) else np.nan,
            "t_max": worked["seconds"].max() if len(worked) else np.nan,
            "last_done": last,
            "bytes": total,
            "mib_per_s": total / 2**20 / last if last and last > 0 else np.nan,
            "errors": int(errors["count"].sum()) if len(errors) else 0,
            "verify_failures": int(rows["verify_failures"].sum()),
            "start_skew": a.get("start_skew"),
        }


def load(path):
    """Open a results file; raises ResultsError with a one-line reason."""
    return Run(path)
