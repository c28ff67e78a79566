"""herd_safe — the analysis tools never trust a results file.

Two halves:

1. Showing strings. Every string in a results file (host names, paths, the
   job text, errno names, phase names) may hold any byte: markup, newlines,
   '|', '$', invalid UTF-8 (h5py hands that over as lone surrogates). Every
   output goes through one of these, and none of them ever raises:

       text(v)        any value -> str without surrogates (bad bytes as \\xNN)
       line(v)        text() on one line: control characters as \\n, \\x1b, ...
       html(v)        line(), HTML-escaped (element text and attribute values)
       html_block(v)  text() keeping newlines and tabs, HTML-escaped (<pre>)
       md_cell(v)     line() for a Markdown table cell: | \\ ` * _ [ ] ~ escaped,
                      < > & as entities, so no renderer sees markup
       csv_text(v)    line() for a CSV cell (csv quoting does the rest); a
                      leading = + - @ gets a ' so spreadsheets see no formula
       csv_frame(df)  a copy of a DataFrame with every text cell and column
                      name through csv_text
       plot_text(v)   line(), cut to PLOT_TEXT_MAX characters, for matplotlib

2. Checking a file's structure. validate(h5file, path) compares the layout
   of docs/results-format.md with what the file declares, before any table
   or attribute value is read: link kinds (hard links only: no soft or
   external links, no external or virtual storage), object kinds (/phases
   a group, tables 1-D compound datasets), field types (per table, with the
   documented kind: int, unsigned, float, fixed-length string), attribute
   shapes and types, and sizes: a dataset may declare at most what its
   stored bytes could hold at COMPRESSION_RATIO (deflate cannot do better
   than about 1032:1), and all datasets together at most that much of the
   file's size, so a small file cannot make a reader allocate gigabytes.
   read_table(ds) reads one table after re-checking it and then checks the
   values that must not be negative. Every failure is FormatError (a
   ValueError) with a one-line reason; herd_results turns it into
   ResultsError.
"""
import json
import math
import os
import pathlib
import re
import stat
from typing import TYPE_CHECKING, Any, Collection, Optional

import h5py
import numpy as np

if TYPE_CHECKING:  # csv_frame's type only: this module does not import pandas
    import pandas as pd

# ---------------------------------------------------------------- showing

PLOT_TEXT_MAX = 60

# Lone surrogates: invalid UTF-8 that h5py/os decoded with surrogateescape
# (U+DC80..U+DCFF carry one byte), or any other unpaired surrogate.
_SURROGATE = re.compile("[\ud800-\udfff]")
# Characters that move the cursor, end a line, or reorder text on display.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_CONTROL_KEEP_LINES = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]"
)
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
# '_' inside a word (errno_name) is no emphasis in CommonMark: left as it is.
_MD_SPECIAL = re.compile(r"([\\|`*\[\]~]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9]))")
_CSV_FORMULA = ("=", "+", "-", "@")


def _surrogate(m: re.Match[str]) -> str:
    code = ord(m.group())
    if 0xDC80 <= code <= 0xDCFF:
        return f"\\x{code - 0xDC00:02x}"
    return f"\\u{code:04x}"


def _control(m: re.Match[str]) -> str:
    c = m.group()
    if c in _NAMED:
        return _NAMED[c]
    code = ord(c)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def text(value: Any) -> str:
    """Any value as a str that encodes as UTF-8: bytes decoded (invalid
    bytes as \\xNN), lone surrogates as \\xNN or \\uNNNN."""
    if isinstance(value, (bytes, bytearray, np.bytes_)):
        value = bytes(value).decode("utf-8", errors="backslashreplace")
    elif isinstance(value, np.ndarray) and value.shape == ():
        return text(value[()])
    elif not isinstance(value, str):
        try:
            value = str(value)
        except Exception:  # a hostile __str__ cannot stop a report
            value = f"<{type(value).__name__}>"
    return _SURROGATE.sub(_surrogate, value)


def line(value: Any) -> str:
    """text() on one line: control and bidi characters escaped."""
    return _CONTROL.sub(_control, text(value))


def html(value: Any) -> str:
    """line(), escaped for HTML element text and quoted attribute values."""
    return (
        line(value)
        .replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&quot;")
        .replace("'", "&#x27;")
    )


def html_block(value: Any) -> str:
    """text() with its lines kept (for <pre>), other controls escaped, HTML-escaped."""
    shown = _CONTROL_KEEP_LINES.sub(_control, text(value))
    return (
        shown.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&quot;")
        .replace("'", "&#x27;")
    )


def md_cell(value: Any) -> str:
    """line() for one Markdown table cell: no markup, no cell break."""
    shown = _MD_SPECIAL.sub(r"\\\1", line(value))
    return shown.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def csv_text(value: Any) -> str:
    """line() for a CSV cell, with a leading formula character defused."""
    shown = line(value)
    if shown.startswith(_CSV_FORMULA) and not _is_number(shown):
        shown = "'" + shown
    return shown


def _is_number(s: str) -> bool:
    try:
        float(s)
        return True
    except ValueError:
        return False


def csv_frame(frame: "pd.DataFrame") -> "pd.DataFrame":
    """A copy of frame whose text cells and column names went through csv_text."""
    out = frame.copy()
    out.columns = [c if isinstance(c, (int, float)) else csv_text(c) for c in frame.columns]
    for i, col in enumerate(frame.columns):
        series = frame.iloc[:, i]
        if series.dtype == object:
            out.iloc[:, i] = [
                v if v is None or isinstance(v, (int, float, np.number)) else csv_text(v)
                for v in series
            ]
    return out


def plot_text(value: Any, limit: int = PLOT_TEXT_MAX) -> str:
    """line(), cut to limit characters: a label matplotlib draws as it is
    (herd's figures set text.parse_math off, so '$' is only a dollar)."""
    shown = line(value)
    return shown if len(shown) <= limit else shown[: limit - 1] + "…"


# ---------------------------------------------------------------- checking

COMPRESSION_RATIO = 1100  # declared bytes per stored byte a dataset may claim
SLACK_BYTES = 1 << 20  # any dataset may declare this much (fill values, tiny tables)
MAX_STRING_FIELD = 4096  # bytes in one fixed-length string field
MAX_ROW_BYTES = 1 << 16  # bytes in one table row
MAX_FIELDS = 256  # fields in one table
MAX_BUCKETS = 1 << 16  # latency histogram length
MAX_ATTR_TEXT = {"job_text": 4 << 20, "command_line": 1 << 20}
MAX_ATTR_TEXT_DEFAULT = 64 << 10
MAX_COUNT = 1 << 24  # nranks, nhosts, phase index

ROOT_TEXT = (
    "tool",
    "version",
    "run_id",
    "status",
    "start_utc",
    "end_utc",
    "command_line",
    "job_path",
    "job_text",
    "target",
    "mpi_version",
    "hdf5_version",
    "label",
    "server_fs",
    "server_disk",
)
ROOT_NUMBER = {
    "epoch_unix": "f",
    "nranks": "i",
    "nhosts": "i",
    "clock_sync_seconds": "f",
    "exit_code": "i",
    "startup_seconds": "f",
    "monitor_client_ranks": "i",
}
STATUSES = ("partial", "complete", "incomplete", "interrupted")
PHASE_STATUSES = ("ok", "errors", "verify", "interrupted", "deadline")
# A row of a ladder's steps table may also be a step that never ran (an
# earlier step broke the ladder's stop_when): no phase group, no figures.
NOT_RUN = "not-run"
STEP_STATUSES = PHASE_STATUSES + (NOT_RUN,)
LADDER_KIND = "ladder"  # the kind of a /phases/<ladder> group: a steps table, not a phase
PHASE_NUMBER = {
    "index": "i",
    "t_start": "f",
    "t_end": "f",
    "elapsed": "f",
    "start_skew": "f",
    "gather_seconds": "f",
    "write_seconds": "f",
    "rate": "f",
}  # the job key rate: calls/s per client, 0 = a closed loop
# Job keys of the offered load stored as phase attributes: strings.
PHASE_TEXT = ("kind", "status", "arrivals", "rate_steps", "rate_curve", "stop_when")
# herd's stored phase summary (src/results/summary.c): counts are integers, never
# negative; times and rates are floats, never negative (times NaN when no
# row did work), rates finite. summary_offered_per_s is NaN in a closed
# loop, summary_achieved_per_s when no row did work; late <= units (a late
# call is one of the calls sent).
SUMMARY_COUNTS = (
    "rows",
    "ranks",
    "bytes",
    "ops",
    "errors",
    "verify_failures",
    "grants",
    "contended",
    "violations",
    "stuck",
    "units",
    "late",
    "due",
)
SUMMARY_FLOATS = (
    "t_min",
    "t_median",
    "t_max",
    "first_done",
    "last_done",
    "mib_per_s",
    "ops_per_s",
    "cpu_mean",
    "cpu_max",
    "nfsd_threads",
    "proc_cpu",
    "proc_thread_max",
    "nfsd_packets_per_s",
    "nfsd_woken_share",
    "offered_per_s",
    "achieved_per_s",
)
SUMMARY_RATES = ("mib_per_s", "ops_per_s")
LOAD_RATES = ("offered_per_s", "achieved_per_s")  # rates that may be NaN
PHASE_NUMBER.update({f"summary_{k}": "i" for k in SUMMARY_COUNTS})
PHASE_NUMBER.update({f"summary_{k}": "f" for k in SUMMARY_FLOATS})
PHASE_NUMBER["monitor_covered"] = "b"  # the monitor's samples span the phase whole
# Pairs of count fields (of a table row, or of the summary) where the first
# can never exceed the second: (late, units).
AT_MOST = (("late", "units"),)

# Table fields: name -> kind ("i" signed, "u" unsigned, "f" float, "S"
# fixed-length string), for every table herd writes: herd_tables.json beside
# this module, which is `herd tables`' output (the tables are declared once,
# in src/results/results_tables.c; tests/integration/test_results_tables.py
# keeps the file in step). Required fields are the ones the tools read
# without a fallback; the others, when present, must have their kind.
# Fields the format does not name must be plain numbers or strings (the
# format lets later versions add fields).
_KINDS = {"int32": "i", "uint64": "u", "float64": "f"}
# A table's spec: {field: kind} and the required fields.
TableSpec = tuple[dict[str, str], tuple[str, ...]]


def _load_tables() -> dict[str, dict[str, str]]:
    path = pathlib.Path(__file__).resolve().with_name("herd_tables.json")
    tables = json.loads(path.read_text(encoding="utf-8"))["tables"]
    return {t["path"]: {name: _KINDS.get(kind, "S") for name, kind in t["columns"]} for t in tables}


COLUMNS = _load_tables()
PHASE = "/phases/<name>/"
REQUIRED = {
    "/hosts": ("host", "hostname"),
    "/ranks": ("rank", "host"),
    PHASE + "ranks": ("rank", "host", "t_start", "t_end", "bytes", "ops"),
    PHASE + "errors": ("rank", "op", "errno", "errno_name", "count", "first_path", "first_time"),
    PHASE + "op_summary": ("op", "calls"),
    "/monitor/samples": ("t", "dt", "source", "cpu_busy", "nfsd_threads"),
    "/monitor/processes": ("t", "dt", "name", "processes", "cpu", "cpu_max_thread"),
    "/monitor/disks": ("t", "dt", "device", "write_bytes", "read_bytes", "busy"),
    "/monitor/clients": ("phase", "host", "connects"),
    "/monitor/client_ops": ("phase", "host", "op", "ops", "retrans", "timeouts", "rtt_ms"),
    "/phases/<ladder>/steps": (
        "step",
        "phase",
        "status",
        "active_ranks",
        "active_hosts",
        "mib_per_s",
        "ops_per_s",
        "main_op",
        "p50_s",
        "p99_s",
        "max_s",
        "errors",
        "top_errno",
        "stuck",
    ),
}


def _table_key(path: str) -> str:
    """TABLES' key of a table: its dataset name ("phase/ranks" for a
    phase's ranks, beside the root's)."""
    return "phase/ranks" if path == PHASE + "ranks" else path.rsplit("/", 1)[1]


TABLES: dict[str, TableSpec] = {
    _table_key(path): (kinds, REQUIRED.get(path, ())) for path, kinds in COLUMNS.items()
}
# Integer fields that are indexes or counts: never negative.
NON_NEGATIVE = (
    "rank",
    "host",
    "iteration",
    "errno",
    "index",
    "exclusive",
    "completed",
    "step",
    "active_ranks",
    "active_hosts",
)
PHASE_TABLES = tuple(p[len(PHASE) :] for p in COLUMNS if p.startswith(PHASE))
REQUIRED_PHASE_TABLES = ("ranks", "errors")
NUMBER_KINDS = "iufb"
# Attribute kinds accepted for a documented kind (a wider reader is harmless;
# negative counts are checked on the value).
_ATTR_KINDS = {"i": "iu", "u": "iu", "f": "fiu", "b": "b"}


class FormatError(ValueError):
    """The file does not have the documented layout, or declares more than it holds."""


def check_path(path: str) -> int:
    """A results path must be a non-empty regular file (a FIFO or a device
    would hang or never end; a directory is not a file)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise FormatError(f"{line(path)}: no such file") from None
    except OSError as e:
        raise FormatError(f"{line(path)}: cannot read ({e.strerror})") from None
    if stat.S_ISDIR(st.st_mode):
        raise FormatError(f"{line(path)}: is a directory, not a results file")
    if not stat.S_ISREG(st.st_mode):
        raise FormatError(f"{line(path)}: not a regular file (a FIFO, socket or device)")
    if st.st_size == 0:
        raise FormatError(f"{line(path)}: empty file, not a readable HDF5 file")
    return st.st_size


class _Budget:
    """Bytes the whole file may make a reader allocate."""

    def __init__(self, file_size: int) -> None:
        self.file_size = file_size
        self.left = COMPRESSION_RATIO * file_size + 16 * SLACK_BYTES

    def take(self, nbytes: int, where: str) -> None:
        self.left -= nbytes
        if self.left < 0:
            raise FormatError(
                f"{where}: the datasets declare more data than a "
                f"{self.file_size}-byte file can hold"
            )


def _child(group: h5py.Group, name: str, where: str) -> Optional[h5py.HLObject]:
    """group[name] through a hard link only (no soft or external links)."""
    link = group.get(name, getlink=True)
    if link is None:
        return None
    if not isinstance(link, h5py.HardLink):
        raise FormatError(f"{where}: is a {type(link).__name__}, not an object in this file")
    return group[name]


def _names(group: h5py.Group, where: str, limit: int = 1 << 20) -> list[str]:
    try:
        names = list(group.keys())
    except (OSError, RuntimeError, ValueError, UnicodeError) as e:
        raise FormatError(f"{where}: cannot list members ({line(e)})") from None
    if len(names) > limit:
        raise FormatError(f"{where}: {len(names)} members, more than {limit}")
    return names


def _group(
    parent: h5py.Group, name: str, where: str, required: bool = True
) -> Optional[h5py.Group]:
    obj = _child(parent, name, where)
    if obj is None:
        if required:
            raise FormatError(f"{where}: missing")
        return None
    if not isinstance(obj, h5py.Group):
        raise FormatError(f"{where}: is a {_kind(obj)}, not a group")
    return obj


def _kind(obj: object) -> str:
    return (
        "dataset"
        if isinstance(obj, h5py.Dataset)
        else "group"
        if isinstance(obj, h5py.Group)
        else type(obj).__name__
    )


def _dataset(ds: h5py.Dataset, where: str, budget: _Budget) -> int:
    """Storage and size checks of one dataset; returns the declared bytes."""
    if not isinstance(ds, h5py.Dataset):
        raise FormatError(f"{where}: is a {_kind(ds)}, not a dataset")
    dcpl = ds.id.get_create_plist()
    if dcpl.get_external_count() > 0:
        raise FormatError(f"{where}: stored in external files")
    if dcpl.get_layout() not in (h5py.h5d.COMPACT, h5py.h5d.CONTIGUOUS, h5py.h5d.CHUNKED):
        raise FormatError(f"{where}: unsupported storage layout (virtual?)")
    shape = ds.shape
    if shape is None or any(d < 0 for d in shape):
        raise FormatError(f"{where}: no dataspace")
    elements = math.prod(shape)
    itemsize = ds.dtype.itemsize
    declared = elements * itemsize
    stored = min(ds.id.get_storage_size(), budget.file_size)
    ratio = COMPRESSION_RATIO if dcpl.get_nfilters() else 1
    if declared > SLACK_BYTES + ratio * stored:
        raise FormatError(
            f"{where}: declares {shape} x {itemsize} bytes "
            f"({declared} bytes) but stores {stored} bytes"
        )
    budget.take(declared, where)
    return declared


def _table(ds: h5py.Dataset, where: str, spec: TableSpec, budget: _Budget) -> None:
    """A 1-D compound dataset with the documented field kinds."""
    kinds, required = spec
    _dataset(ds, where, budget)
    if ds.ndim != 1:
        raise FormatError(f"{where}: has {ds.ndim} dimensions, a table has 1")
    dt = ds.dtype
    if dt.names is None:
        raise FormatError(f"{where}: is {dt}, not a table (compound type)")
    if len(dt.names) > MAX_FIELDS or dt.itemsize > MAX_ROW_BYTES:
        raise FormatError(
            f"{where}: rows of {len(dt.names)} fields, {dt.itemsize} bytes: " "too large"
        )
    for name in required:
        if name not in dt.names:
            raise FormatError(f"{where}: no field {line(name)!r}")
    for name in dt.names:
        field = dt.fields[name][0]
        if field.subdtype is not None or field.names is not None:
            raise FormatError(f"{where}: field {line(name)!r} is {field}, not a plain value")
        want = kinds.get(name)
        got = field.kind
        if got == "S" and field.itemsize > MAX_STRING_FIELD:
            raise FormatError(f"{where}: string field {line(name)!r} of {field.itemsize} bytes")
        if want is None:
            ok = got in NUMBER_KINDS + "S"
            want_text = "a number or fixed-length string"
        else:
            ok = got == want or (want == "i" and got == "b") or (want == "u" and got == "b")
            want_text = {
                "i": "an integer",
                "u": "an unsigned integer",
                "f": "a float",
                "S": "a fixed-length string",
            }[want]
        if not ok:
            raise FormatError(f"{where}: field {line(name)!r} is {field}, not {want_text}")


def _attrs(
    obj: h5py.HLObject,
    where: str,
    text_names: Collection[str] = (),
    numbers: Optional[dict[str, str]] = None,
) -> dict[str, Any]:
    """Every attribute scalar (or one element) of a plain type, checked
    before its value is read; returns {name: value} of the strings and of
    the documented numbers (those whose values are checked)."""
    numbers = numbers or {}
    out = {}
    try:
        names = list(obj.attrs.keys())
    except (OSError, RuntimeError, ValueError, UnicodeError) as e:
        raise FormatError(f"{where}: cannot list attributes ({line(e)})") from None
    if len(names) > 4096:
        raise FormatError(f"{where}: {len(names)} attributes")
    for name in names:
        at = f"{where} attribute {line(name)!r}"
        try:
            aid = obj.attrs.get_id(name)
            shape, dt = aid.shape, aid.dtype
        except (OSError, RuntimeError, ValueError, KeyError, TypeError) as e:
            raise FormatError(f"{at}: unreadable ({line(e)})") from None
        if shape is None or math.prod(shape) != 1:
            raise FormatError(f"{at}: has shape {shape}, not one value")
        is_text = dt.kind == "S" or h5py.check_string_dtype(dt) is not None
        if not is_text and dt.kind not in NUMBER_KINDS:
            raise FormatError(f"{at}: is {dt}, not a number or a string")
        if dt.kind == "S" and dt.itemsize > MAX_ATTR_TEXT_DEFAULT:
            raise FormatError(f"{at}: a string of {dt.itemsize} bytes")
        if name in text_names and not is_text:
            raise FormatError(f"{at}: is {dt}, not a string")
        want = numbers.get(name)
        if want and (is_text or dt.kind not in _ATTR_KINDS[want]):
            wanted = {"f": "a float", "b": "a bool"}.get(want, "an integer")
            raise FormatError(f"{at}: is {'a string' if is_text else dt}, not {wanted}")
        if not is_text and not want:
            continue  # a plain number of a checked type: its value is not needed here
        try:
            value = obj.attrs[name]
        except (OSError, RuntimeError, ValueError, KeyError, TypeError) as e:
            raise FormatError(f"{at}: unreadable ({line(e)})") from None
        if isinstance(value, np.ndarray):
            value = value.reshape(-1)[0]
        if is_text:
            cap = MAX_ATTR_TEXT.get(name, MAX_ATTR_TEXT_DEFAULT)
            if len(value) > cap:
                raise FormatError(f"{at}: {len(value)} characters, more than {cap}")
        out[name] = value
    return out


def _str(value: Any) -> Any:
    return value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else value


def _finite(attrs: dict[str, Any], name: str, where: str) -> None:
    if name in attrs and not math.isfinite(float(attrs[name])):
        raise FormatError(f"{where} attribute {name!r}: {attrs[name]} is not a finite number")


def _count(attrs: dict[str, Any], name: str, where: str) -> None:
    if name in attrs and not 0 <= int(attrs[name]) <= MAX_COUNT:
        raise FormatError(
            f"{where} attribute {name!r}: {attrs[name]} is not a count " f"(0 to {MAX_COUNT})"
        )


def _root(f: h5py.File) -> bool:
    a = _attrs(f, "/", ROOT_TEXT, ROOT_NUMBER)
    if _str(a.get("tool")) != "herd":
        return False
    status = _str(a.get("status", "partial"))
    if status not in STATUSES:
        raise FormatError(
            f"/ attribute 'status': {line(status)!r} is not one of " f"{', '.join(STATUSES)}"
        )
    for name in ("nranks", "nhosts"):
        _count(a, name, "/")
    for name in ("epoch_unix",):
        _finite(a, name, "/")
    return True


def _phase(g: h5py.Group, where: str, budget: _Budget) -> None:
    a = _attrs(g, where, PHASE_TEXT, PHASE_NUMBER)
    if _str(a.get("kind")) == LADDER_KIND:
        _ladder(g, where, budget)
        return
    if "status" not in a:
        return  # cut off while being written: the tools skip it
    status = _str(a["status"])
    if status not in PHASE_STATUSES:
        raise FormatError(
            f"{where} attribute 'status': {line(status)!r} is not one of "
            f"{', '.join(PHASE_STATUSES)}"
        )
    for name in ("kind", "t_start", "t_end"):
        if name not in a:
            raise FormatError(f"{where}: no {name!r} attribute")
    for name in ("t_start", "t_end", "elapsed", "rate"):
        _finite(a, name, where)
    if "rate" in a and float(a["rate"]) < 0:
        raise FormatError(f"{where} attribute 'rate': {a['rate']} is not a rate (>= 0)")
    _count(a, "index", where)
    _summary(a, where)
    names = _names(g, where)
    for table in REQUIRED_PHASE_TABLES:
        if table not in names:
            raise FormatError(f"{where}: no {table!r} table")
    for table in PHASE_TABLES:
        ds = _child(g, table, f"{where}/{table}")
        if ds is not None:
            spec = TABLES["phase/ranks" if table == "ranks" else table]
            _table(ds, f"{where}/{table}", spec, budget)
    _latency(_group(g, "latency", f"{where}/latency"), f"{where}/latency", budget)
    for name in names:  # members a later format added (op_summary): sizes and plain fields
        if name in PHASE_TABLES or name == "latency":
            continue
        at = f"{where}/{line(name)}"
        obj = _child(g, name, at)
        if isinstance(obj, h5py.Dataset):
            if obj.dtype.names is not None:
                _table(obj, at, ({}, ()), budget)
            else:
                _dataset(obj, at, budget)


def _ladder(g: h5py.Group, where: str, budget: _Budget) -> None:
    """A load ladder's group: attributes ladder and steps, one steps table."""
    a = _attrs(g, where, ("ladder",), {"steps": "i"})
    if "ladder" not in a:
        raise FormatError(f"{where}: a ladder group without a 'ladder' attribute")
    _count(a, "steps", where)
    ds = _child(g, "steps", f"{where}/steps")
    if ds is None:
        raise FormatError(f"{where}: a ladder group without a 'steps' table")
    _table(ds, f"{where}/steps", TABLES["steps"], budget)


def _summary(a: dict[str, Any], where: str) -> None:
    for key in SUMMARY_COUNTS:
        name = f"summary_{key}"
        if name in a and int(a[name]) < 0:
            raise FormatError(f"{where} attribute {name!r}: {a[name]} is negative")
    for key in SUMMARY_FLOATS:
        name = f"summary_{key}"
        if name not in a:
            continue
        value = float(a[name])
        if value < 0 or math.isinf(value) or (key in SUMMARY_RATES and math.isnan(value)):
            raise FormatError(
                f"{where} attribute {name!r}: {value} is not a "
                f"{'rate' if key in SUMMARY_RATES + LOAD_RATES else 'time'} (>= 0)"
            )
    for small, big in AT_MOST:
        low, high = f"summary_{small}", f"summary_{big}"
        if low in a and high in a and int(a[low]) > int(a[high]):
            raise FormatError(
                f"{where} attribute {low!r}: {a[low]} is more than " f"{high} ({a[high]})"
            )


def _latency(g: h5py.Group, where: str, budget: _Budget) -> None:
    _attrs(g, where)
    length = None
    for name in _names(g, where, limit=4096):
        at = f"{where}/{line(name)}"
        ds = _child(g, name, at)
        _dataset(ds, at, budget)
        assert ds is not None  # _dataset refused anything but a dataset
        if ds.ndim != 1 or ds.dtype.kind not in "iu" or ds.shape[0] > MAX_BUCKETS:
            raise FormatError(
                f"{at}: is {ds.dtype}{list(ds.shape)}, not a histogram of "
                f"at most {MAX_BUCKETS} integer buckets"
            )
        if length is not None and ds.shape[0] != length:
            raise FormatError(f"{at}: {ds.shape[0]} buckets, the others have {length}")
        length = ds.shape[0]
        if not name.startswith("bucket_"):
            a = _attrs(
                ds,
                at,
                (),
                {"count": "u", "p50_ns": "u", "p99_ns": "u", "max_ns": "u", "mean_ns": "f"},
            )
            for key in ("count", "p50_ns", "p99_ns", "max_ns"):
                if key in a and int(a[key]) < 0:
                    raise FormatError(f"{at} attribute {key!r}: {a[key]} is negative")
    if length is not None:
        for name in ("bucket_lower_ns", "bucket_upper_ns"):
            if name not in g:
                raise FormatError(f"{where}: no {name!r}")


# What HDF5 and h5py raise on a damaged file (and numpy on absurd values).
READ_ERRORS = (
    OSError,
    RuntimeError,
    KeyError,
    TypeError,
    IndexError,
    OverflowError,
    AttributeError,
    MemoryError,
    ValueError,
)


def validate(f: h5py.File, path: str) -> bool:
    """Check an open h5py.File against docs/results-format.md before any
    value is read. Returns False for an HDF5 file that is not herd's (no
    tool = herd), True when the layout is herd's; raises FormatError (one
    line) for anything else, whatever h5py raised underneath."""
    try:
        return _validate(f, path)
    except FormatError:
        raise
    except READ_ERRORS as e:
        raise FormatError(
            f"damaged herd results file ({type(e).__name__}: " f"{line(e)[:300]})"
        ) from None


def _validate(f: h5py.File, path: str) -> bool:
    size = os.path.getsize(path)
    budget = _Budget(size)
    if not _root(f):
        return False
    phases = _group(f, "phases", "/phases")
    for name in ("hosts", "ranks"):
        ds = _child(f, name, f"/{name}")
        if ds is None:
            raise FormatError(f"/{name}: missing")
        _table(ds, f"/{name}", TABLES[name], budget)
    usage = _child(f, "usage", "/usage")
    if usage is not None:
        _table(usage, "/usage", TABLES["usage"], budget)
    cleanup = _group(f, "cleanup", "/cleanup", required=False)
    if cleanup is not None and "errors" in cleanup:
        _table(
            _child(cleanup, "errors", "/cleanup/errors"),
            "/cleanup/errors",
            TABLES["errors"],
            budget,
        )
    for name in _names(phases, "/phases"):
        where = f"/phases/{line(name)}"
        _phase(_group(phases, name, where), where, budget)
    monitor = _group(f, "monitor", "/monitor", required=False)
    if monitor is not None:
        _attrs(monitor, "/monitor", ("host", "url"), {"rank": "i", "interval": "f"})
        for name in _names(monitor, "/monitor"):
            where = f"/monitor/{line(name)}"
            if name not in TABLES:
                continue  # a later version's table: never read
            ds = _child(monitor, name, where)
            if name == "processes":
                _attrs(ds, where, ("scope",))  # the monitor_scope its rows count
            _table(ds, where, TABLES[name], budget)
    return True


def read_table(ds: h5py.Dataset, where: Optional[str] = None) -> np.ndarray:
    """Read one table (validated before) as a numpy array, re-checking its
    size against the file, and checking that index and count fields are
    not negative."""
    where = where or line(ds.name)
    dt = ds.dtype
    if dt.names is None or ds.ndim != 1:
        raise FormatError(f"{where}: not a table")
    declared = ds.shape[0] * dt.itemsize
    stored = ds.id.get_storage_size()
    if declared > SLACK_BYTES + COMPRESSION_RATIO * stored:
        raise FormatError(f"{where}: declares {declared} bytes but stores {stored}")
    rows = ds[()]
    for name in NON_NEGATIVE:
        if (
            name in dt.names
            and dt.fields[name][0].kind == "i"
            and len(rows)
            and rows[name].min() < 0
        ):
            raise FormatError(
                f"{where}: field {name!r} has a negative value " f"({rows[name].min()})"
            )
    for small, big in AT_MOST:
        if (
            small in dt.names
            and big in dt.names
            and len(rows)
            and dt.fields[small][0].kind in "iu"
            and dt.fields[big][0].kind in "iu"
        ):
            over = np.flatnonzero(rows[small] > rows[big])
            if len(over):
                i = int(over[0])
                raise FormatError(
                    f"{where}: row {i}: {small} {rows[small][i]} is more than "
                    f"{big} {rows[big][i]}"
                )
    return rows
