"""herd-compare's repeats and verdict: runs that share a label are repeats of
one configuration. Per phase (per step of a meta phase) and label this
module gives the main figure's median, lowest and highest value and the
number of runs, each label's ratio to the reference label (the first
file's: median over median), and whether that ratio is within noise (the
two labels' min-max ranges overlap, or a side has one run).

The main figure is the one herd-report's throughput plot and herd's
summary give a phase: MiB/s for write, read and md5; items/s per step for
meta (op_summary's items_per_s, the step's own time in step_s); grants/s
for lock; calls/s (every timed call) for the other kinds; none for idle.
docs/analysis.md ("herd-compare", "Repeats and the verdict") defines the
columns of groups.csv, which are GROUP_COLUMNS.
"""
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional

import numpy as np

import herd_knee
import herd_results

if TYPE_CHECKING:  # types only: this module takes its tables from herd_results
    import pandas as pd

NO_FIGURE_KINDS = ("idle",)
META_UNIT = "items/s"

GROUP_COLUMNS = [
    "phase",
    "step",
    "unit",
    "label",
    "n",
    "median",
    "min",
    "max",
    "ratio",
    "ratio_min",
    "ratio_max",
    "within_noise",
    "seconds_median",
    "seconds_min",
    "seconds_max",
    "time_ratio",
    "not_ok",
    "runs",
]


@dataclass(frozen=True)
class Figure:
    """One run's main figure of one phase (or meta step)."""

    phase: str
    step: str  # "" but for a meta step: create, stat, rename, unlink, rmdir
    unit: str  # MiB/s, items/s, grants/s, calls/s
    value: float  # NaN: none measured
    seconds: float  # last_done; a meta step's step_s
    ok: bool  # the phase's status was ok

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.phase, self.step, self.unit)


@dataclass
class Spread:
    """The finite values of one figure over the runs of one label."""

    values: list[float] = field(default_factory=list)

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def median(self) -> float:
        return float(np.median(self.values)) if self.values else math.nan

    @property
    def lo(self) -> float:
        return min(self.values) if self.values else math.nan

    @property
    def hi(self) -> float:
        return max(self.values) if self.values else math.nan


@dataclass
class Group:
    """One row of groups.csv: a figure of one phase (step) over one label's runs."""

    phase: str
    step: str
    unit: str
    label: str
    value: Spread
    seconds: Spread
    not_ok: int
    runs: list[str]
    ratio: float = math.nan
    ratio_min: float = math.nan
    ratio_max: float = math.nan
    within_noise: Optional[bool] = None
    time_ratio: float = math.nan

    @property
    def name(self) -> str:
        """The phase, and its step for a meta step: 'meta: create'."""
        return f"{self.phase}: {self.step}" if self.step else self.phase


def _finite(v: Any) -> float:
    try:
        v = float(v)
    except (TypeError, ValueError):
        return math.nan
    return v if math.isfinite(v) else math.nan


def meta_steps(run: herd_results.Run, phase: str) -> list[tuple[str, str]]:
    """[(step, op)] of a meta phase in the order it ran them; [] for a
    file of an older herd without meta_steps."""
    table = run.meta_steps(phase)
    if not len(table):
        return []
    return [
        (str(s), str(o)) for s, o in table[["step", "op"]].drop_duplicates().itertuples(index=False)
    ]


def _step_rate(
    run: herd_results.Run, phase: str, op: str, summary: "pd.DataFrame"
) -> tuple[float, float]:
    """(items_per_s, step_s) of a meta step's item call: op_summary's, or
    from meta_steps by the same rule when the op_summary lacks them."""
    if op in summary.index and "items_per_s" in summary.columns:
        row = summary.loc[op]
        return _finite(row["items_per_s"]), _finite(row["step_s"])
    steps = run.meta_steps(phase)
    rate = herd_results.meta_step_rate(steps[steps["op"] == op])
    return _finite(rate["items_per_s"]), _finite(rate["step_s"])


def _meta_figures(
    run: herd_results.Run, ph: "pd.Series", steps: list[tuple[str, str]]
) -> list[Figure]:
    summary = run.op_summary(ph["phase"]).set_index("op")
    out = []
    for step, op in steps:
        value, seconds = _step_rate(run, ph["phase"], op, summary)
        out.append(Figure(ph["phase"], step, META_UNIT, value, seconds, ph["status"] == "ok"))
    return out


def _phase_figure(ph: "pd.Series") -> Figure:
    last = _finite(ph["last_done"])
    if ph["kind"] in herd_knee.DATA_KINDS:  # the kinds whose figure is MiB/s
        unit, value = "MiB/s", _finite(ph["mib_per_s"])
    elif ph["kind"] == "lock":
        grants = _finite(ph["grants"])
        unit, value = "grants/s", grants / last if last > 0 else math.nan
    else:
        unit, value = "calls/s", _finite(ph["ops_per_s"])
    return Figure(ph["phase"], "", unit, value, last, ph["status"] == "ok")


def run_figures(run: herd_results.Run) -> list[Figure]:
    """Every main figure of one run, in phase order (Figure)."""
    out = []
    for _, ph in run.phases.iterrows():
        if ph["kind"] in NO_FIGURE_KINDS:
            continue
        steps = meta_steps(run, ph["phase"]) if ph["kind"] == "meta" else []
        out += _meta_figures(run, ph, steps) if steps else [_phase_figure(ph)]
    return out


def overlap(a: Spread, b: Spread) -> bool:
    """The two min-max ranges share at least one value (ends included)."""
    return a.n > 0 and b.n > 0 and a.lo <= b.hi and b.lo <= a.hi


def noise(ref: Spread, other: Spread) -> Optional[bool]:
    """Within noise: a side has one run (no spread to judge by) or the
    ranges overlap; None when a side has no value."""
    if ref.n == 0 or other.n == 0:
        return None
    return ref.n == 1 or other.n == 1 or overlap(ref, other)


def _div(a: float, b: float) -> float:
    return a / b if b == b and b > 0 and a == a else math.nan


def _compare(group: Group, ref: Group) -> None:
    """Fill group's ratios to the reference label's group of the same figure."""
    a, b = ref.value, group.value
    group.ratio = _div(b.median, a.median)
    group.ratio_min = _div(b.lo, a.hi)
    group.ratio_max = _div(b.hi, a.lo)
    group.time_ratio = _div(group.seconds.median, ref.seconds.median)
    if group is not ref:
        group.within_noise = noise(a, b)


def label_order(labels: list[str]) -> list[str]:
    """The distinct labels in the order of their first file: the first is the reference."""
    return list(dict.fromkeys(labels))


def group_rows(runs: list[herd_results.Run], labels: list[str]) -> list[Group]:
    """Group per (phase, step, unit) and label, figures in phase order of
    first appearance, labels in label_order; runs[i] is named labels[i]."""
    figures = [{f.key: f for f in run_figures(r)} for r in runs]
    keys = list(dict.fromkeys(k for per_run in figures for k in per_run))
    rows: list[Group] = []
    for key in keys:
        by_label: dict[str, Group] = {}
        for label in label_order(labels):
            mine = [
                (r, f[key]) for r, f, l in zip(runs, figures, labels) if l == label and key in f
            ]
            by_label[label] = Group(
                key[0],
                key[1],
                key[2],
                label,
                Spread([x.value for _, x in mine if x.value == x.value]),
                Spread([x.seconds for _, x in mine if x.seconds == x.seconds]),
                sum(1 for _, x in mine if not x.ok),
                [r.label for r, _ in mine],
            )
        ref = next(iter(by_label.values()))
        for group in by_label.values():
            _compare(group, ref)
        rows += by_label.values()
    return rows


# ---------------------------------------------------------------- text


def number(v: float) -> str:
    """A figure as the verdict prints it: 1,234 / 56.7 / 0.0123; '-' for none."""
    if v != v:
        return "-"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    return f"{v:.1f}" if abs(v) >= 10 else f"{v:.3g}"


def times(v: float) -> str:
    """A ratio: 0.52x, 31.4x, 0.00123x; '-' for none."""
    if v != v:
        return "-"
    return f"{v:.2f}x" if 0.01 <= v < 100 else f"{v:.3g}x"


def spread_text(label: str, s: Spread) -> str:
    """'b 50.1 (48.0 to 52.3, n=3)': a label's median, range and runs."""
    if s.n == 0:
        return f"{label}: no value"
    if s.n == 1:
        return f"{label} {number(s.median)} (n=1)"
    return f"{label} {number(s.median)} ({number(s.lo)} to {number(s.hi)}, n={s.n})"


def noise_text(group: Group, ref: Group) -> str:
    """'within noise' (the ranges overlap), 'within noise (n=1)' (a side has
    one run), 'beyond noise', or 'no value' (a side has none)."""
    if group.within_noise is None:
        return "no value"
    if not group.within_noise:
        return "beyond noise"
    if ref.value.n == 1 or group.value.n == 1:
        return "within noise (n=1)"
    return "within noise"


def verdict_pairs(rows: list[Group]) -> list[tuple[Group, Group]]:
    """[(group, reference group)] of every label but the reference, in row order."""
    ref: dict[tuple[str, str, str], Group] = {}
    out = []
    for g in rows:
        key = (g.phase, g.step, g.unit)
        if key not in ref:
            ref[key] = g
        else:
            out.append((g, ref[key]))
    return out


def verdict_line(group: Group, ref: Group) -> str:
    """One verdict line: the figure, the ratio of medians, both spreads, the
    run pairs' range of ratios and the noise mark. Names as they are: pass
    the line through herd_safe.line or .html to show it."""
    name, a, b = group.name, ref.label, group.label
    pairs = (
        ""
        if group.value.n < 2 and ref.value.n < 2
        else f"; run pairs {times(group.ratio_min)} to {times(group.ratio_max)}"
    )
    return (
        f"{name} ({group.unit}): {b} / {a} = {times(group.ratio)}, "
        f"{noise_text(group, ref)} "
        f"[{spread_text(b, group.value)} vs {spread_text(a, ref.value)}{pairs}]"
    )


def group_record(g: Group) -> dict[str, Any]:
    """groups.csv's row of one Group (GROUP_COLUMNS)."""
    noise_cell = "" if g.within_noise is None else ("yes" if g.within_noise else "no")
    return {
        "phase": g.phase,
        "step": g.step,
        "unit": g.unit,
        "label": g.label,
        "n": g.value.n,
        "median": g.value.median,
        "min": g.value.lo,
        "max": g.value.hi,
        "ratio": g.ratio,
        "ratio_min": g.ratio_min,
        "ratio_max": g.ratio_max,
        "within_noise": noise_cell,
        "seconds_median": g.seconds.median,
        "seconds_min": g.seconds.lo,
        "seconds_max": g.seconds.hi,
        "time_ratio": g.time_ratio,
        "not_ok": g.not_ok,
        "runs": " ".join(g.runs),
    }
