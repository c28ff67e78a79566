"""herd_results — load a herd results file (HDF5) into pandas.

The one place Python reads results.h5: herd-report, herd-compare and user
notebooks go through it, the way PyDarshan gives Darshan's records.
Layout: docs/results-format.md; this API: docs/analysis.md.

    import herd_results
    with herd_results.load("results.h5") as run:
        run.status                      # complete | incomplete | interrupted | partial
        run.phases                      # one row per phase: times, MiB/s, errors, server CPU
                                        # (monitor_covered: the samples span it whole)
        run.clients_per_rank            # NFS clients per rank (1: the rank itself)
        run.ranks("write-unique-16M")   # one row per (rank, client, iteration)
        run.all_ranks()                 # every phase's rows, with a phase column
        run.client_times("write-unique-16M")  # one row per client: seconds, bytes, errors
        run.errors("write-unique-16M")  # one row per (rank, op, errno)
        run.samples()                   # server monitor samples (/monitor/samples)
        run.ladders()                   # load ladders: ["read", ...]
        run.ladder_steps("read")        # one row per step: ranks, MiB/s, p99, errors, CPU,
                                        # offered load; not-run steps (stop_when) too

Every failure to read (missing file, not HDF5, truncated, not herd's)
raises ResultsError with a one-line reason.
"""
import functools
import math
import os
from typing import Any, Callable, Mapping, Optional, Sequence, TypeVar, Union, cast

import h5py
import numpy as np
import pandas as pd

import herd_safe


class ResultsError(Exception):
    """The file is missing, unreadable, or not a herd results file."""


def _decode(df: pd.DataFrame) -> pd.DataFrame:
    """Fixed-length HDF5 strings arrive as bytes (object columns): decode."""
    for col in df.columns:
        if df[col].dtype.kind == "S" or (
            df[col].dtype == object and len(df) and isinstance(df[col].iloc[0], bytes)
        ):
            df[col] = df[col].str.decode("utf-8", errors="replace")
    return df


def _text(v: Any) -> Any:
    if isinstance(v, bytes):
        return v.decode("utf-8", errors="replace")
    if isinstance(v, np.ndarray) and v.shape == () and v.dtype.kind in "SO":
        return _text(v[()])
    return v


# A Run method, typed as it is: _reading keeps its signature.
Method = TypeVar("Method", bound=Callable[..., Any])


def _reading(method: Method) -> Method:
    """Turn HDF5 read failures inside a Run method into ResultsError."""

    @functools.wraps(method)
    def wrapper(self: "Run", *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except ResultsError:
            raise
        except herd_safe.READ_ERRORS as e:
            raise ResultsError(
                herd_safe.line(
                    f"{self.path}: cannot read {method.__name__}"
                    f"({', '.join(map(str, args))}): {e}"
                )
            ) from None

    return cast(Method, wrapper)


# Phase summary columns, in order (what herd prints at the end, and more).
PHASE_COLUMNS = [
    "phase",
    "index",
    "kind",
    "sharing",
    "file_size",
    "block_size",
    "status",
    "rows",
    "ranks",
    "t_start",
    "t_end",
    "elapsed",
    "start_skew",
    "t_min",
    "t_median",
    "t_max",
    "first_done",
    "last_done",
    "bytes",
    "ops",
    "mib_per_s",
    "ops_per_s",
    "errors",
    "verify_failures",
    "grants",
    "contended",
    "contention",
    "waited_grants",
    "wait_seconds",
    "violations",
    "stuck",
    "rate",
    "offered_per_s",
    "achieved_per_s",
    "units",
    "late",
    "due",
    "cpu_mean",
    "cpu_max",
    "nfsd_threads",
    "proc_cpu",
    "proc_thread_max",
    "nfsd_packets_per_s",
    "nfsd_woken_share",
    "monitor_covered",
]

# The phase statistics herd stores as summary_<name> attributes of each
# phase (src/results/summary.c; docs/results-format.md), read rather than recomputed.
SUMMARY_STATS = [
    "rows",
    "ranks",
    "t_min",
    "t_median",
    "t_max",
    "first_done",
    "last_done",
    "bytes",
    "ops",
    "mib_per_s",
    "ops_per_s",
    "errors",
    "verify_failures",
    "grants",
    "contended",
    "violations",
    "stuck",
]
# ... and those of the offered load (a phase with rate > 0; units and
# achieved also in a closed loop), absent in files of an older herd.
SUMMARY_LOAD = ["units", "late", "due", "offered_per_s", "achieved_per_s"]
# ... and those added when the run closes, when a monitor sampled.
SUMMARY_SERVER = [
    "cpu_mean",
    "cpu_max",
    "nfsd_threads",
    "proc_cpu",
    "proc_thread_max",
    "nfsd_packets_per_s",
    "nfsd_woken_share",
]
# /phases/<name>/op_summary, and the quantiles it holds.
OP_SUMMARY_COLUMNS = [
    "op",
    "calls",
    "seconds",
    "ops_per_s",
    "p50_s",
    "p90_s",
    "p99_s",
    "max_s",
    "items",
    "step_s",
    "items_per_s",
]
OP_QUANTILES = [("p50_s", 0.50), ("p90_s", 0.90), ("p99_s", 0.99), ("max_s", 1.0)]
# herd's ops in enum order (src/lib/ops.h): the row order of op_summary.
OP_ORDER = [
    "open",
    "read",
    "write",
    "fsync",
    "close",
    "md5",
    "mkdir",
    "unlink",
    "rmdir",
    "stat",
    "rename",
    "lock",
    # a mix phase's own calls
    "getattr",
    "setattr",
    "truncate",
    "access",
    "readdir",
    "lookup",
    "lookup_missing",
    "create",
    "read_file",
    "write_file",
    "append",
    "connect",
    "rpc_read",
    "rpc_write",
    # a paced call's times (rate > 0)
    "response",
    "service",
    "lag",
]
# Per-row counts of the offered load in /phases/<name>/ranks (0 in a file
# of an older herd, which has none).
RANK_LOAD = ("units", "late", "due")
# ... and each client's own p99 of its paced calls' response and service.
RANK_PACE = ("response_p99", "service_p99")

# Load ladders: each step is a phase with the attributes ladder (str), step
# (1-based), active_ranks and active_hosts (int64); Run.ladder_steps() gives
# one row per step with these columns.
# herd stores the same table as /phases/<ladder>/steps when the run closes;
# ladder_steps() reads it and builds it from the steps' phases only for a
# file without it (a run that never closed, a file of an older herd).
LADDER_COLUMNS = [
    "step",
    "phase",
    "kind",
    "status",
    "active_ranks",
    "active_hosts",
    "active_clients",
    "bytes",
    "ops",
    "mib_per_s",
    "ops_per_s",
    "main_op",
    "p50_s",
    "p99_s",
    "max_s",
    "errors",
    "top_errno",
    "stuck",
    "cpu_mean",
    "cpu_max",
    "nfsd_threads",
    "proc_cpu",
    "proc_thread_max",
    "nfsd_packets_per_s",
    "nfsd_woken_share",
    "start_skew",
    "verify_failures",
    "t_start",
    "elapsed",
    # the offered load (rate ladders: rate_steps, rate_curve)
    "rate",
    "offered_per_s",
    "achieved_per_s",
    "units",
    "late",
    "due",
    "response_p50_s",
    "response_p99_s",
    "service_p99_s",
    "lag_p99_s",
    "note",
]
LADDER_TEXT = ("phase", "kind", "status", "main_op", "top_errno", "note")
# What a steps table of an older herd lacks reads as: counts 0, a rate of 0
# (a closed loop), note "", every other figure NaN.
LADDER_DEFAULTS = {"units": 0, "late": 0, "due": 0, "rate": 0.0, "note": ""}
# The step columns taken from the op_summary rows of a paced call's
# histograms (rate > 0): response (its intended instant to its end),
# service (its send to its end), lag (herd's own delay before the send):
# (column, op, quantile column).
LADDER_PACED = (
    ("response_p50_s", "response", "p50_s"),
    ("response_p99_s", "response", "p99_s"),
    ("service_p99_s", "service", "p99_s"),
    ("lag_p99_s", "lag", "p99_s"),
)
# Step figures that are rates, times or latencies: never negative or infinite
# (NaN: none).
LADDER_FLOATS = (
    "mib_per_s",
    "ops_per_s",
    "p50_s",
    "p99_s",
    "max_s",
    "start_skew",
    "cpu_mean",
    "cpu_max",
    "nfsd_threads",
    "proc_cpu",
    "proc_thread_max",
    "nfsd_packets_per_s",
    "nfsd_woken_share",
    "elapsed",
    "rate",
    "offered_per_s",
    "achieved_per_s",
    "response_p50_s",
    "response_p99_s",
    "service_p99_s",
    "lag_p99_s",
)
# The call whose latency a step shows is herd's own choice, the phase's
# summary_main_op attribute (its kind's, src/results/summary.c: the p50/p99
# its summary prints); a phase written by a herd before it has none.
LADDER_COUNTS = ("step", "active_ranks", "active_hosts")

# Run.client_times(name): one row per client (rank, client) of a phase.
CLIENT_COLUMNS = [
    "rank",
    "client",
    "client_id",
    "host",
    "iterations",
    "seconds",
    "span",
    "bytes",
    "ops",
    "errors",
]
# Run.ranks(name) keeps the tables it read for the next call (herd-report
# reads each phase's rows three times: client times, ranks.csv, the
# timeline) while those kept hold at most this many rows in all (about 250
# bytes a row); a phase beyond that is read anew each time, so that the
# memory of a run of millions of rows stays that of one phase.
RANKS_CACHE_ROWS = 500_000
# Run.latency(name)'s value per op: (bucket_lower_ns, bucket_upper_ns, counts).
Histogram = tuple[np.ndarray, np.ndarray, np.ndarray]


class Run:
    """One herd run: root attributes, hosts, ranks, a phase summary, and
    per-phase and monitor tables as DataFrames."""

    def __init__(self, path: Union[str, os.PathLike[str]]) -> None:
        self.path = str(path)
        # The default name of a run: the file's name without .h5
        # (herd-compare makes it longer where two runs share it).
        self.label = os.path.splitext(os.path.basename(self.path))[0]
        try:  # a regular, non-empty file: a FIFO would hang h5py
            herd_safe.check_path(self.path)
        except herd_safe.FormatError as e:
            raise ResultsError(str(e)) from None
        try:
            self._f = h5py.File(self.path, "r")
        except Exception as e:  # noqa: BLE001 (h5py raises more than OSError)
            reason = str(e).split("(")[0].strip() or "unreadable"
            raise ResultsError(
                herd_safe.line(f"{self.path}: not a readable HDF5 file ({reason})")
            ) from None
        try:
            # The layout of docs/results-format.md, checked before any value
            # is read (herd_safe): types, shapes, and sizes the file can hold.
            if not herd_safe.validate(self._f, self.path):
                raise ResultsError(
                    f"{self.path}: not a herd results file (no tool=herd "
                    "attribute or /phases group)"
                )
            self._load()
        except ResultsError as e:
            self._f.close()
            raise ResultsError(herd_safe.line(e)) from None
        except herd_safe.READ_ERRORS as e:
            self._f.close()
            raise ResultsError(
                herd_safe.line(f"{self.path}: damaged herd results file ({e})")
            ) from None

    def _load(self) -> None:
        self.attrs = {k: _text(v) for k, v in self._f.attrs.items()}
        self.status = self.attrs.get("status", "partial")
        self.clients_per_rank = self._clients_per_rank()
        self.hosts = _table(self._f["hosts"])
        self.rank_info = _table(self._f["ranks"])
        # A phase group without a status attribute was cut off mid-write.
        # A load ladder's /phases/<ladder> group holds its steps table, not
        # a phase (and has no status).
        self.phase_names = [
            n
            for n in self._f["phases"]
            if "status" in self._f["phases"][n].attrs
            and _text(self._f["phases"][n].attrs.get("kind")) != herd_safe.LADDER_KIND
        ]
        self._samples = self._monitor_table("samples")
        self._processes: Optional[pd.DataFrame] = None
        self._ranks_kept: dict[
            str, pd.DataFrame
        ] = {}  # Run.ranks: phase -> its table, RANKS_CACHE_ROWS in all
        rows = [self._phase_row(n) for n in self.phase_names]
        # Per-op latency quantiles (<op>_p50_s ... <op>_max_s) for the ops
        # any phase called, in herd's op order, after the fixed columns.
        called = {
            k[: -len(suffix)]
            for r in rows
            for k in r
            for suffix in ("_p50_s",)
            if k.endswith(suffix)
        }
        latency = [
            f"{op}_{key}"
            for op in OP_ORDER + sorted(called - set(OP_ORDER))
            if op in called
            for key, _ in OP_QUANTILES
        ]
        self.phases = pd.DataFrame(rows, columns=PHASE_COLUMNS + latency)

    def _clients_per_rank(self) -> int:
        """The root attribute clients_per_rank: NFS clients per I/O rank
        (global client id = rank x clients_per_rank + client); 1 for a file
        of an older herd, which has none."""
        value = self.attrs.get("clients_per_rank", 1)
        number = np.asarray(value)
        if (
            number.shape != ()
            or number.dtype.kind not in "iu"
            or not 1 <= int(number) <= herd_safe.MAX_COUNT
        ):
            raise ResultsError(
                herd_safe.line(
                    f"{self.path}: root attribute 'clients_per_rank': "
                    f"{herd_safe.line(value)[:40]!r} is not a count (1 to {herd_safe.MAX_COUNT})"
                )
            )
        return int(number)

    def close(self) -> None:
        self._f.close()

    def __enter__(self) -> "Run":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def given_label(self) -> str:
        """The run's own name, the root attribute `label` (the job key
        label, `--set label=...`); "" when unset, and for a file of an older
        herd that has none."""
        return str(self.attrs.get("label") or "")

    def describe_status(self) -> str:
        """One line for reports: what the file holds and how the run ended."""
        n = len(self.phase_names)
        phases = f"{n} phase" + ("" if n == 1 else "s")
        if self.status == "complete":
            return f"complete: {phases}, exit code {self.attrs.get('exit_code')}"
        if self.status == "incomplete":
            return (
                f"incomplete (exit code {self.attrs.get('exit_code')}): the run ended but some "
                f"phases could not be written; holds {n}, the others are in "
                f"{os.path.basename(self.path)}.<phase>.lost.csv"
            )
        if self.status == "interrupted":
            return (
                f"interrupted (exit code {self.attrs.get('exit_code')}): holds the "
                f"{phases} that ran, the last one cut short"
            )
        return (
            f"partial: herd did not close the file (it died or is still running); holds "
            f"the {phases} finished before that"
        )

    # ---- per phase ----

    @_reading
    def phase_attrs(self, name: str) -> dict[str, Any]:
        return {k: _text(v) for k, v in self._f["phases"][name].attrs.items()}

    @_reading
    def ranks(self, name: str) -> pd.DataFrame:
        """/phases/NAME/ranks plus client_id = rank x clients_per_rank +
        client and seconds = t_end - t_start; client 0 in a file of an
        older herd (no client column: each rank one client), units, late,
        due 0 and response_p99, service_p99 NaN in one from before the
        offered load. Each call returns a table of its own (a copy of the
        one kept from an earlier call while RANKS_CACHE_ROWS allows)."""
        kept = self._ranks_kept.get(name)
        if kept is not None:
            return kept.copy()
        df = self._read_ranks(name)
        if len(df) + sum(len(t) for t in self._ranks_kept.values()) <= RANKS_CACHE_ROWS:
            self._ranks_kept[name] = df.copy()
        return df

    def _read_ranks(self, name: str) -> pd.DataFrame:
        """ranks(name) read from the file."""
        df = _with_client(_table(self._f["phases"][name]["ranks"]))
        df.insert(
            df.columns.get_loc("client") + 1,
            "client_id",
            df["rank"].astype(np.int64) * self.clients_per_rank + df["client"].astype(np.int64),
        )
        for col in RANK_LOAD:
            if col not in df.columns:
                df[col] = np.zeros(len(df), dtype=np.uint64)
        for col in RANK_PACE:  # NaN in a file from before the clients' own p99
            if col not in df.columns:
                df[col] = np.full(len(df), np.nan)
        df["seconds"] = df["t_end"] - df["t_start"]
        return df

    @_reading
    def errors(self, name: str) -> pd.DataFrame:
        """/phases/NAME/errors; client 0 in a file of an older herd."""
        return _with_client(_table(self._f["phases"][name]["errors"]))

    @_reading
    def client_times(self, name: str) -> pd.DataFrame:
        """One row per client that took part in a phase (CLIENT_COLUMNS),
        by rank then client: its host, iterations (rows), seconds (the sum
        over its rows of t_end - t_start), span (its first start to its
        last end), bytes, ops, and errors (its failed calls in the errors
        table, calls outside an iteration included). A client idle in a
        ladder step (not one of its active clients) has no row here: its
        rows in the ranks table are all zeros (no t_end, no call) and it
        has no error. One phase's rows are read at a time; the result has
        one row per client, not per iteration."""
        rows = self.ranks(name)
        if rows.empty:
            return pd.DataFrame(columns=CLIENT_COLUMNS)
        per = _per_client(rows)
        del rows
        per["span"] = per["last"] - per["first"]
        errs = self.errors(name)
        counts = (
            errs.groupby(["rank", "client"])["count"].sum()
            if len(errs)
            else pd.Series(dtype=np.int64)
        )
        per["errors"] = counts.reindex(per.index, fill_value=0).astype(np.int64).to_numpy()
        per = per[(per["last"] > 0) | (per["errors"] > 0)]
        return per.reset_index()[CLIENT_COLUMNS]

    @_reading
    def ops(self, name: str) -> pd.DataFrame:
        return _table(self._f["phases"][name]["ops"])

    @_reading
    def stuck(self, name: str) -> pd.DataFrame:
        return _table(self._f["phases"][name]["stuck"])

    @_reading
    def holds(self, name: str) -> pd.DataFrame:
        g = self._f["phases"][name]
        return _table(g["holds"]) if "holds" in g else pd.DataFrame()

    @_reading
    def meta_steps(self, name: str) -> pd.DataFrame:
        """/phases/NAME/meta_steps (a meta phase: each rank's time and items
        in each step); empty for other phases and older files."""
        g = self._f["phases"][name]
        return (
            _table(g["meta_steps"])
            if "meta_steps" in g
            else pd.DataFrame(columns=["rank", "step", "op", "t_start", "t_end", "items"])
        )

    @_reading
    def latency(self, name: str) -> dict[str, Histogram]:
        """{op: (bucket_lower_ns, bucket_upper_ns, counts)} of a phase."""
        g = self._f["phases"][name]["latency"]
        lower, upper = g["bucket_lower_ns"][()], g["bucket_upper_ns"][()]
        return {op: (lower, upper, g[op][()]) for op in g if not op.startswith("bucket_")}

    def all_ranks(self) -> pd.DataFrame:
        """Every phase's rank rows, with phase and kind columns."""
        return self._concat(self.ranks, extra=True)

    def all_errors(self) -> pd.DataFrame:
        """Every phase's error rows, with a phase column."""
        return self._concat(self.errors)

    def _concat(self, getter: Callable[[str], pd.DataFrame], extra: bool = False) -> pd.DataFrame:
        frames = []
        for name in self.phase_names:
            df = getter(name)
            df.insert(0, "phase", name)
            if extra:
                df.insert(1, "kind", self.phase_attrs(name).get("kind"))
            frames.append(df)
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    # ---- load ladders ----

    @_reading
    def ladders(self) -> list[str]:
        """The names of the run's load ladders, in job order (empty: none)."""
        names = []
        for name in self.phase_names:
            step = self._ladder_step(name)
            if step is not None and step[0] not in names:
                names.append(step[0])
        return names

    @_reading
    def ladder_steps(self, ladder: str) -> pd.DataFrame:
        """One row per step of a ladder, in step order (LADDER_COLUMNS):
        the step's phase, its active ranks and hosts, MiB/s and ops/s,
        p50/p99/max of its main call (main_op), errors and the most
        frequent errno, stuck calls, server CPU and nfsd threads (NaN
        without a monitor) and start skew. ResultsError for a ladder the
        file does not hold or whose steps are not herd's (a step number
        twice, counts out of range, latencies negative)."""
        stored = self._stored_steps(ladder)
        return stored if stored is not None else self._computed_steps(ladder)

    def _computed_steps(self, ladder: str) -> pd.DataFrame:
        """ladder_steps built from the steps' phases (their summary_*
        attributes, op_summary and errors tables), as src/results/summary.c does."""
        rows = []
        for name in self.phase_names:
            step = self._ladder_step(name)
            if step is None or step[0] != ladder:
                continue
            rows.append(self._step_row(name, *step[1:]))
        if not rows:
            raise ResultsError(herd_safe.line(f"{self.path}: no load ladder named {ladder!r}"))
        rows.sort(key=lambda r: r["step"])
        numbers = [r["step"] for r in rows]
        if len(set(numbers)) != len(numbers):
            raise ResultsError(
                herd_safe.line(
                    f"{self.path}: ladder {ladder!r}: a step number appears twice ({numbers})"
                )
            )
        return pd.DataFrame(rows, columns=LADDER_COLUMNS)

    def _stored_steps(self, ladder: str) -> Optional[pd.DataFrame]:
        """/phases/<ladder>/steps as LADDER_COLUMNS, checked (every step
        once, each naming a phase of the file, counts, latencies and rates
        that are ones); None when the file has no such table."""
        g = self._f["phases"].get(ladder) if isinstance(ladder, str) and "/" not in ladder else None
        if g is None or _text(g.attrs.get("kind")) != herd_safe.LADDER_KIND:
            return None
        where = f"{self.path}: /phases/{herd_safe.line(ladder)}/steps"
        df = _decode(pd.DataFrame(herd_safe.read_table(g["steps"], where)))
        missing = [c for c in LADDER_COLUMNS if c not in df.columns]
        for col in missing:  # optional fields a writer may lack (an older herd)
            default = LADDER_DEFAULTS.get(col, np.nan)
            df[col] = np.full(
                len(df),
                default,
                dtype=object
                if isinstance(default, str)
                else np.uint64
                if isinstance(default, int)
                else np.float64,
            )
        df = df[LADDER_COLUMNS].sort_values("step", kind="stable").reset_index(drop=True)
        numbers = list(df["step"])
        if len(set(numbers)) != len(numbers):
            raise ResultsError(
                herd_safe.line(f"{where}: a step number appears twice " f"({numbers[:20]})")
            )
        groups = set(self._f["phases"])
        for row in df.itertuples(index=False):
            if row.status not in herd_safe.STEP_STATUSES:
                raise ResultsError(
                    herd_safe.line(
                        f"{where}: step {row.step}: status {row.status!r} is not one of "
                        f"{', '.join(herd_safe.STEP_STATUSES)}"
                    )
                )
            if row.status == herd_safe.NOT_RUN:
                # A step the ladder's stop_when kept from running: it never
                # had a phase group.
                if row.phase in groups:
                    raise ResultsError(
                        herd_safe.line(
                            f"{where}: step {row.step} is {herd_safe.NOT_RUN} but names phase "
                            f"{row.phase!r}, which is in the file"
                        )
                    )
            elif row.phase not in self.phase_names:
                raise ResultsError(
                    herd_safe.line(
                        f"{where}: step {row.step} names phase {row.phase!r}, not in the file"
                    )
                )
            for key in ("step", "active_ranks"):
                if not 1 <= getattr(row, key) <= herd_safe.MAX_COUNT:
                    raise ResultsError(
                        herd_safe.line(f"{where}: {key} {getattr(row, key)} is not a count")
                    )
            for key in LADDER_FLOATS:
                value = float(getattr(row, key))
                if value < 0 or math.isinf(value):
                    raise ResultsError(
                        herd_safe.line(f"{where}: step {row.step}: {key} is {value}, not >= 0")
                    )
            if not isinstance(row.note, str):
                raise ResultsError(
                    herd_safe.line(f"{where}: step {row.step}: note is not a string")
                )
        for col in ("main_op", "top_errno"):  # "" in the file: none
            df[col] = df[col].where(df[col].astype(str) != "", None)
        return df

    def _ladder_step(self, name: str) -> Optional[tuple[str, int, int, int]]:
        """(ladder, step, active_ranks, active_hosts) of a phase that is a
        ladder step, None for any other; ResultsError when the attributes
        are not what herd writes (docs/results-format.md)."""
        a = self.phase_attrs(name)
        ladder = a.get("ladder")
        if ladder is None or (isinstance(ladder, str) and not ladder):
            return None
        where = f"{self.path}: phase {herd_safe.line(name)!r}"
        if not isinstance(ladder, str):
            raise ResultsError(herd_safe.line(f"{where}: attribute 'ladder' is not a string"))
        counts = []
        for key in LADDER_COUNTS:
            value = a.get(key)
            low = 1 if key != "active_hosts" else 0
            if (
                isinstance(value, (bool, np.bool_))
                or not isinstance(value, (int, np.integer))
                or not low <= int(value) <= herd_safe.MAX_COUNT
            ):
                raise ResultsError(
                    herd_safe.line(
                        f"{where}: ladder attribute {key!r} is {herd_safe.line(value)[:40]}, not a "
                        f"count ({low} to {herd_safe.MAX_COUNT})"
                    )
                )
            counts.append(int(value))
        step, active_ranks, active_hosts = counts  # LADDER_COUNTS
        return ladder, step, active_ranks, active_hosts

    def _step_row(
        self, name: str, step: int, active_ranks: int, active_hosts: int
    ) -> dict[str, Any]:
        """One row of ladder_steps from the phase's summary row, op_summary
        and errors table."""
        ph = self.phases[self.phases["phase"] == name].iloc[0]
        kind = ph["kind"]
        ops = self._op_summary(name, ph["last_done"])
        called = ops[ops["calls"] > 0].drop_duplicates("op").set_index("op")
        op = self.phase_attrs(name).get("summary_main_op")
        op = op if op in OP_ORDER else None
        clients = self.phase_attrs(name).get("active_clients")
        row = {
            "step": step,
            "phase": name,
            "kind": kind,
            "status": ph["status"],
            "active_ranks": active_ranks,
            "active_hosts": active_hosts,
            "active_clients": int(clients)
            if isinstance(clients, (int, np.integer)) and not isinstance(clients, (bool, np.bool_))
            else np.nan,
            "main_op": op,
        }
        for key in (
            "bytes",
            "ops",
            "mib_per_s",
            "ops_per_s",
            "errors",
            "stuck",
            "cpu_mean",
            "cpu_max",
            "nfsd_threads",
            "proc_cpu",
            "proc_thread_max",
            "nfsd_packets_per_s",
            "nfsd_woken_share",
            "start_skew",
            "verify_failures",
            "t_start",
            "elapsed",
            "rate",
            "offered_per_s",
            "achieved_per_s",
            "units",
            "late",
            "due",
        ):
            row[key] = ph[key]
        quantiles = [(key, op, key) for key in ("p50_s", "p99_s", "max_s")] + list(LADDER_PACED)
        for key, call, column in quantiles:
            value = float(called.at[call, column]) if call in called.index else np.nan
            if value < 0 or math.isinf(value):
                raise ResultsError(
                    herd_safe.line(
                        f"{self.path}: phase {name!r}: {call} {column} is {value}, not a latency"
                    )
                )
            row[key] = value
        row["note"] = ""  # a phase in the file ran: only a step not run has a note
        skew = row["start_skew"]
        if skew is None or not isinstance(skew, (int, float, np.number)) or skew != skew:
            row["start_skew"] = np.nan
        elif not 0 <= float(skew) < math.inf:
            raise ResultsError(
                herd_safe.line(
                    f"{self.path}: phase {name!r}: start_skew {skew} is not a time (>= 0)"
                )
            )
        errs = self.errors(name) if row["errors"] else pd.DataFrame()
        row["top_errno"] = (
            errs.groupby("errno_name", sort=False)["count"].sum().idxmax() if len(errs) else None
        )
        return row

    # ---- the monitor ----

    @property
    def monitor_attrs(self) -> dict[str, Any]:
        g = self._f.get("monitor")
        return {k: _text(v) for k, v in g.attrs.items()} if g is not None else {}

    @property
    def process_scope(self) -> str:
        """monitor_scope of /monitor/processes: which processes of each name
        its rows count ("host": all on the monitor host, as in files from
        before the key)."""
        g = self._f.get("monitor")
        ds = g.get("processes") if g is not None else None
        return _text(ds.attrs.get("scope", "host")) if ds is not None else "host"

    def _monitor_table(self, name: str) -> pd.DataFrame:
        g = self._f.get("monitor")
        if g is None or name not in g:
            return pd.DataFrame()
        return _table(g[name])

    @_reading
    def samples(self) -> pd.DataFrame:
        """Server samples: CPU fractions by mode, cpu_busy, load, memory, nfsd."""
        return self._samples.copy()

    @_reading
    def metrics(self) -> pd.DataFrame:
        return self._monitor_table("metrics")

    @_reading
    def processes(self) -> pd.DataFrame:
        return self._monitor_table("processes")

    @_reading
    def disks(self) -> pd.DataFrame:
        return self._monitor_table("disks")

    @_reading
    def notes(self) -> pd.DataFrame:
        return self._monitor_table("notes")

    @_reading
    def marks(self) -> pd.DataFrame:
        return self._monitor_table("marks")

    @_reading
    def clients(self) -> pd.DataFrame:
        return self._monitor_table("clients")

    @_reading
    def client_ops(self) -> pd.DataFrame:
        return self._monitor_table("client_ops")

    def server_samples(self, t0: float, t1: float) -> pd.DataFrame:
        """The server samples of one source that meet [t0, t1] (see
        meeting): a node_exporter's (monitor_url names the server) when
        they have CPU readings there, else a monitor rank's /proc samples."""
        met = meeting(self._samples, t0, t1)
        for source in ("node_exporter", "proc"):
            rows = met[met["source"] == source] if len(met) else met
            if len(rows) and rows["cpu_busy"].notna().any():
                return rows
        return met.iloc[0:0]

    def server_cpu(self, t0: float, t1: float) -> tuple[float, ...]:
        """(mean, max) of cpu_busy over server_samples(t0, t1), the last
        nfsd thread count among them, and of the named processes' rows
        meeting [t0, t1]: the cores they used (per name the mean, summed
        over names) and the busiest thread's share of a core (max); NaN
        where there are none (herd's summary uses the same rules); then
        kernel nfsd's pool: packets per second over the seconds the
        samples cover, and the share that woke an idle thread."""
        if self._processes is None:  # read once: the summary asks per phase
            self._processes = self._monitor_table("processes")
        procs = meeting(self._processes, t0, t1)
        means = procs.groupby("name")["cpu"].mean().dropna() if len(procs) else ()
        proc_cpu = means.sum() if len(means) else np.nan
        top = procs["cpu_max_thread"].max() if len(procs) else np.nan
        rows = self.server_samples(t0, t1)
        if rows.empty:
            return np.nan, np.nan, np.nan, proc_cpu, top, np.nan, np.nan
        busy = rows["cpu_busy"].dropna()
        threads = rows["nfsd_threads"].dropna()
        pool = (
            rows[rows["pool_packets"].notna() & rows["pool_threads_woken"].notna()]
            if "pool_packets" in rows
            else rows.iloc[0:0]
        )
        seconds, packets = pool["dt"].sum(), pool["pool_packets"].sum() if len(pool) else 0
        pps = packets / seconds if seconds > 0 else np.nan
        woken = (
            pool["pool_threads_woken"].sum() / packets if seconds > 0 and packets > 0 else np.nan
        )
        return (
            busy.mean(),
            busy.max(),
            threads.iloc[-1] if len(threads) else np.nan,
            proc_cpu,
            top,
            pps,
            woken,
        )

    def monitor_covered(self, t0: float, t1: float) -> Optional[bool]:
        """Whether the readings of every source the run sampled (/monitor's
        rank: a monitor rank's /proc; its url: a node_exporter) span [t0, t1]
        whole, by covering(); None when it sampled nothing. herd stores the
        same as each phase's monitor_covered when the run closes."""
        attrs = self.monitor_attrs
        sources = [
            s
            for s, used in (
                ("proc", int(attrs.get("rank", -1)) >= 0),
                ("node_exporter", bool(attrs.get("url"))),
            )
            if used
        ]
        if not sources:
            return None
        return all(covering(self._samples, s, t0, t1) for s in sources)

    # ---- the summary ----

    def _phase_row(self, name: str) -> dict[str, Any]:
        """One row of run.phases. herd's own summary_* attributes where the
        phase has them (one definition, src/results/summary.c); only what the file
        lacks (a file from an older herd, a phase cut off, a run that never
        closed) is recomputed from the tables, by the same rules."""
        a = self.phase_attrs(name)
        t0, t1 = a["t_start"], a["t_end"]
        stats = _stored(a, SUMMARY_STATS)
        if len(stats) < len(SUMMARY_STATS):
            stats = dict(self._recompute_stats(name, t0), **stats)
        load = _stored(a, SUMMARY_LOAD)
        if len(load) < len(SUMMARY_LOAD):
            load = dict(self._recompute_load(name, a, stats["ranks"]), **load)
        server = _stored(a, SUMMARY_SERVER)
        if len(server) < len(SUMMARY_SERVER):
            server = dict(zip(SUMMARY_SERVER, self.server_cpu(t0, t1)), **server)
        covered = a.get("monitor_covered")
        server["monitor_covered"] = (
            bool(covered) if isinstance(covered, (bool, np.bool_)) else self.monitor_covered(t0, t1)
        )
        grants, contended = stats["grants"], stats["contended"]
        row = {
            "phase": name,
            "index": a.get("index"),
            "kind": a.get("kind"),
            "sharing": a.get("sharing"),
            "file_size": a.get("file_size"),
            "block_size": a.get("block_size"),
            "status": a.get("status"),
            "t_start": t0,
            "t_end": t1,
            "elapsed": t1 - t0,
            "start_skew": a.get("start_skew"),
            # Refused tries share: non-blocking locks only (a blocking lock
            # is never refused: its waits are waited_grants, wait_seconds).
            "contention": contended / (grants + contended)
            if grants + contended and a.get("lock_wait") != "blocking"
            else np.nan,
            "waited_grants": a.get("waited_grants", np.nan),
            "wait_seconds": a.get("wait_seconds", np.nan),
            "rate": _rate(a),
        }
        row.update(stats)
        row.update(load)
        row.update(server)
        ops = self._op_summary(name, stats["last_done"])
        for op in ops.itertuples(index=False):
            for key, _ in OP_QUANTILES:
                row[f"{op.op}_{key}"] = float(getattr(op, key))
        return row

    def _recompute_stats(self, name: str, t0: float) -> dict[str, float]:
        """summary_compute (src/results/summary.c) over the raw tables, vectorised:
        times, first/last done, bytes, ops, verify failures and violations
        over the rows that did work (ops > 0); grants and contended over
        every row; ranks = runs of equal rank in row order (a ladder step:
        its active_ranks); rates 0 when no
        row did work or the last one ended at the phase start."""
        g = self._f["phases"][name]
        rows = herd_safe.read_table(g["ranks"])
        worked = rows[rows["ops"] > 0] if len(rows) else rows
        ranks = int(np.count_nonzero(np.diff(rows["rank"]))) + 1 if len(rows) else 0
        if "ladder" in g.attrs and "active_ranks" in g.attrs:  # a ladder step's own ranks
            ranks = int(g.attrs["active_ranks"])
        out = {
            "rows": len(rows),
            "ranks": ranks,
            "grants": _total(rows, "grants"),
            "contended": _total(rows, "contended"),
            "bytes": _total(worked, "bytes"),
            "ops": _total(worked, "ops"),
            "verify_failures": _total(worked, "verify_failures"),
            "violations": _total(worked, "violations"),
            "errors": _total(herd_safe.read_table(g["errors"]), "count") if "errors" in g else 0,
            "stuck": g["stuck"].shape[0] if "stuck" in g else 0,
            "mib_per_s": 0.0,
            "ops_per_s": 0.0,
        }
        for key in ("t_min", "t_median", "t_max", "first_done", "last_done"):
            out[key] = np.nan
        if len(worked) == 0:
            return out
        secs = worked["t_end"] - worked["t_start"]
        last = float(worked["t_end"].max() - t0)
        out.update(
            t_min=float(secs.min()),
            t_median=float(np.median(secs)),
            t_max=float(secs.max()),
            first_done=float(worked["t_end"].min() - t0),
            last_done=last,
        )
        if last > 0:
            out["mib_per_s"] = out["bytes"] / 1048576.0 / last
            out["ops_per_s"] = out["ops"] / last
        return out

    def _recompute_load(self, name: str, attrs: Mapping[str, Any], ranks: int) -> dict[str, float]:
        """The offered-load figures of a phase without its summary_units ...
        summary_achieved_per_s (src/results/summary.c, summary_compute):
        units, late and due over the rows that did work; achieved per
        client (rows of one rank and client in a run), its units over the
        sum of its rows' positive t_end - t_start (t_end at most the
        phase's t_start + deadline, when it has one), summed over the clients
        (NaN when no row did work); offered = rate x the clients doing I/O
        (NaN without a rate). A file of an older herd has no units in its
        ranks table: 0, 0, 0 and NaN, without reading the table."""
        rate = _rate(attrs)
        clients = attrs.get("active_clients")
        if not isinstance(clients, (int, np.integer)) or isinstance(clients, (bool, np.bool_)):
            clients = ranks * self.clients_per_rank
        out = {
            "units": 0,
            "late": 0,
            "due": 0,
            "achieved_per_s": np.nan,
            "offered_per_s": rate * float(clients) if rate > 0 else np.nan,
        }
        ds = self._f["phases"][name]["ranks"]
        if "units" not in (ds.dtype.names or ()):
            return out
        rows = herd_safe.read_table(ds)
        worked = rows[rows["ops"] > 0] if len(rows) else rows
        for key in RANK_LOAD:
            out[key] = _total(worked, key)
        if len(worked) == 0:
            return out
        client = (
            rows["client"].astype(np.int64)
            if "client" in rows.dtype.names
            else np.zeros(len(rows), dtype=np.int64)
        )
        rank = rows["rank"].astype(np.int64)
        # a new client starts where rank or client changes (rows come client by client)
        start = np.flatnonzero(np.r_[True, (np.diff(rank) != 0) | (np.diff(client) != 0)])
        # up to the phase's deadline, when it has one (the calls due are
        # counted up to it too)
        end = rows["t_end"].astype(np.float64)
        deadline = attrs.get("deadline")
        t0 = attrs.get("t_start")
        if (
            isinstance(deadline, (float, np.floating))
            and deadline > 0
            and isinstance(t0, (float, np.floating))
            and math.isfinite(t0)
        ):
            end = np.minimum(end, t0 + deadline)
        secs = end - rows["t_start"]
        secs = np.where(secs > 0, secs, 0.0)
        units = np.add.reduceat(rows["units"].astype(np.float64), start)
        seconds = np.add.reduceat(secs, start)
        per = np.divide(units, seconds, out=np.zeros_like(units), where=seconds > 0)
        out["achieved_per_s"] = float(per.sum())
        return out

    @_reading
    def op_summary(self, name: str) -> pd.DataFrame:
        """One row per op with calls: op, calls, seconds (summed over ranks),
        ops_per_s (calls / last_done), p50_s, p90_s, p99_s, max_s (upper
        bound of the merged histogram's bucket holding that quantile), and
        for a meta step's item call items, step_s, items_per_s.
        herd's /phases/NAME/op_summary where present, else recomputed from
        the ops table and the latency histograms by the same rules."""
        last = self.phases.loc[self.phases["phase"] == name, "last_done"]
        return self._op_summary(name, float(last.iloc[0]) if len(last) else np.nan)

    def _op_summary(self, name: str, last: float) -> pd.DataFrame:
        """op_summary for a phase whose last_done is known (no self.phases)."""
        g = self._f["phases"][name]
        if "op_summary" in g:
            return _table(g["op_summary"])
        ops = _table(g["ops"]) if "ops" in g else pd.DataFrame(columns=["op", "count", "seconds"])
        per_op = ops.groupby("op", sort=False)[["count", "seconds"]].sum()
        per_op = per_op[per_op["count"] > 0]
        known = {op: i for i, op in enumerate(OP_ORDER)}
        per_op = per_op.iloc[
            sorted(range(len(per_op)), key=lambda i: known.get(per_op.index[i], len(known)))
        ]
        hists = self.latency(name) if "latency" in g else {}
        steps = self.meta_steps(name)
        rows = []
        for op, (calls, secs) in per_op.iterrows():  # one row per op: a handful
            upper, counts = (hists[op][1], hists[op][2]) if op in hists else (None, None)
            row = {
                "op": op,
                "calls": int(calls),
                "seconds": float(secs),
                "ops_per_s": calls / last if last > 0 else np.nan,
            }
            for key, q in OP_QUANTILES:
                row[key] = (
                    hist_quantile(upper, counts, q)
                    if upper is not None and counts is not None
                    else np.nan
                )
            row.update(meta_step_rate(steps[steps["op"] == op]))
            rows.append(row)
        return pd.DataFrame(rows, columns=OP_SUMMARY_COLUMNS)


def meta_step_rate(rows: pd.DataFrame) -> dict[str, float]:
    """op_summary's items, step_s, items_per_s of an op from its meta_steps
    rows (src/results/summary.c, summary_op_step): the items of all ranks
    over the step's time, the first rank's start to the last rank's end;
    0, NaN, NaN for an op that is no step's item call."""
    if len(rows) == 0:
        return {"items": 0, "step_s": np.nan, "items_per_s": np.nan}
    items = int(rows["items"].sum())
    step_s = float(rows["t_end"].max() - rows["t_start"].min())
    return {
        "items": items,
        "step_s": step_s,
        "items_per_s": items / step_s if step_s > 0 else np.nan,
    }


def hist_quantile(upper_ns: np.ndarray, counts: np.ndarray, q: float) -> float:
    """src/lib/hist.c's hist_quantile in seconds: the upper bound of the bucket
    holding the sample of rank max(1, ceil(q * n)); NaN for no samples."""
    counts = np.asarray(counts, dtype=np.uint64)
    n = int(counts.sum())
    if n == 0:
        return np.nan
    rank = min(max(1, math.ceil(q * n)), n)
    return float(upper_ns[np.searchsorted(np.cumsum(counts), rank)]) * 1e-9


def _stored(attrs: Mapping[str, Any], keys: Sequence[str]) -> dict[str, Any]:
    """The summary_<key> attributes a phase has, as Python numbers."""
    out = {}
    for key in keys:
        value = attrs.get(f"summary_{key}")
        if value is None:
            continue
        value = np.asarray(value)
        if value.shape != () or value.dtype.kind not in "iuf":
            continue  # not herd's: recompute it instead
        out[key] = int(value) if value.dtype.kind in "iu" else float(value)
    return out


def _rate(attrs: Mapping[str, Any]) -> float:
    """A phase's job key rate (calls/s per client), 0.0 for a closed loop and
    for a file of an older herd, which has none."""
    value = attrs.get("rate")
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.number)):
        return 0.0
    return float(value)


def _total(rows: np.ndarray, field: str) -> int:
    """Sum of a count field of a table read as a numpy array; 0 where a file
    from an older herd lacks the field."""
    if rows.dtype.names is None or field not in rows.dtype.names or len(rows) == 0:
        return 0
    return int(rows[field].sum())


def meeting(frame: pd.DataFrame, t0: float, t1: float) -> pd.DataFrame:
    """Rows of a monitor table whose interval (t - dt, t] meets [t0, t1]:
    how samples are matched to a phase everywhere."""
    if frame.empty:
        return frame
    return frame[(frame["t"] - frame["dt"] <= t1) & (frame["t"] > t0)]


def covering(samples: pd.DataFrame, source: str, t0: float, t1: float) -> bool:
    """Whether source's rows of /monitor/samples span [t0, t1] whole (herd's
    rule, summary_covers in src/results/summary.c): its first row after t0
    counts from a reading at or before t0 (t - dt), each later one from the
    row before it (no gap), up to a row at or after t1."""
    if samples.empty:
        return False
    rows = samples[samples["source"] == source]
    reach = t0
    for t, dt in zip(rows["t"], rows["dt"]):
        if t <= reach:
            continue
        if t - dt > reach + 1e-9:
            return False
        reach = t
        if reach >= t1:
            return True
    return False


def _group_sums(values: np.ndarray, starts: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Each group's sum of float values (a group: sizes[g] rows from
    starts[g], in row order) as pandas' groupby sum gives it, to the last
    bit: Kahan-compensated, in row order, NaN skipped, 0 for none; a step
    per row of the largest group, all groups at once."""
    total = np.zeros(len(starts))
    compensation = np.zeros(len(starts))
    for k in range(int(sizes.max()) if len(sizes) else 0):
        groups = np.flatnonzero(sizes > k)
        value = values[starts[groups] + k]
        seen = ~np.isnan(value)
        groups, value = groups[seen], value[seen]
        y = value - compensation[groups]
        t = total[groups] + y
        compensation[groups] = t - total[groups] - y
        total[groups] = t
    return total


def _per_client(rows: pd.DataFrame) -> pd.DataFrame:
    """A ranks table's rows per (rank, client), indexed by them in order:
    client_id and host (its first row's), iterations (its rows), seconds
    (their sum), first (the least t_start), last (the largest t_end),
    bytes and ops (sums), as rows.groupby(["rank", "client"]).agg(...)
    gives them; in numpy (_grouped_per_client, a sixth of the time) for
    the column types herd writes, whose results are pandas' to the bit."""
    if all(rows[c].dtype == np.float64 for c in ("seconds", "t_start", "t_end")) and all(
        rows[c].dtype in (np.uint64, np.int64) for c in ("bytes", "ops")
    ):
        return _grouped_per_client(rows)
    return rows.groupby(["rank", "client"], sort=True).agg(
        client_id=("client_id", "first"),
        host=("host", "first"),
        iterations=("seconds", "size"),
        seconds=("seconds", "sum"),
        first=("t_start", "min"),
        last=("t_end", "max"),
        bytes=("bytes", "sum"),
        ops=("ops", "sum"),
    )


def _grouped_per_client(rows: pd.DataFrame) -> pd.DataFrame:
    """_per_client in numpy: float64 times, 64-bit integer counts."""
    rank, client = rows["rank"].to_numpy(), rows["client"].to_numpy()
    order = np.lexsort((client, rank))  # stable: a client's rows in file order
    rank, client = rank[order], client[order]
    new = np.ones(len(order), dtype=bool)
    new[1:] = (rank[1:] != rank[:-1]) | (client[1:] != client[:-1])
    starts = np.flatnonzero(new)
    sizes = np.diff(np.append(starts, len(order)))

    def column(name: str) -> np.ndarray:
        return rows[name].to_numpy()[order]

    per = {
        "client_id": column("client_id")[starts],
        "host": column("host")[starts],
        "iterations": sizes.astype(np.int64),
        "seconds": _group_sums(column("seconds"), starts, sizes),
        "first": np.fmin.reduceat(column("t_start"), starts),
        "last": np.fmax.reduceat(column("t_end"), starts),
        "bytes": np.add.reduceat(column("bytes"), starts),
        "ops": np.add.reduceat(column("ops"), starts),
    }
    index = pd.MultiIndex.from_arrays([rank[starts], client[starts]], names=["rank", "client"])
    return pd.DataFrame(per, index=index)


def _with_client(df: pd.DataFrame) -> pd.DataFrame:
    """A ranks or errors table with its client column: a file of an older
    herd (one client per rank) has none, and gets client 0."""
    if "client" not in df.columns:
        df.insert(1 if "rank" in df.columns else 0, "client", np.zeros(len(df), dtype=np.int32))
    return df


def _table(dataset: h5py.Dataset) -> pd.DataFrame:
    """A table as a DataFrame: read through herd_safe.read_table (size and
    value checks), strings decoded. Built column by column (twice as quick
    as from the record array, the same frame) when every field is a scalar."""
    rows = herd_safe.read_table(dataset)
    names = rows.dtype.names or ()
    if names and all(rows.dtype.fields[n][0].shape == () for n in names):
        return _decode(pd.DataFrame({n: rows[n] for n in names}, columns=list(names)))
    return _decode(pd.DataFrame(rows))


def monitor_client_ranks(attrs: Mapping[str, Any]) -> int:
    """The run's client ranks on the host its monitor sampled (the root
    attribute monitor_client_ranks: whose CPU "srv cpu" also counts); -1
    when not known (no monitor, an older herd, a value that is no count)."""
    value = attrs.get("monitor_client_ranks", -1)
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        return -1
    return int(value)


def distinct_names(paths: Sequence[str]) -> list[str]:
    """Each results file's name without .h5, with as many of its parent
    directories as tell it apart from the others' ('demo-1/xfs' and
    'demo-2/xfs' for two xfs.h5); the path as given where even that does
    not (the same file twice)."""
    parts = [os.path.normpath(os.path.splitext(p)[0]).split(os.sep) for p in paths]
    names = []
    for mine in parts:
        for depth in range(1, len(mine) + 1):
            tail = mine[-depth:]
            if sum(other[-depth:] == tail for other in parts) == 1:
                names.append("/".join(tail))
                break
        else:
            names.append("/".join(mine))
    return names


def load(path: Union[str, os.PathLike[str]]) -> Run:
    """Open a results file; raises ResultsError with a one-line reason."""
    return Run(path)
