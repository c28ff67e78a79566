"""herd-compare's outputs of the repeats (herd_compare_groups): groups.csv
and groups.md (one row per phase or meta step and label), groups.png (each
phase's main figure per label: the median as a bar, min to max as a
whisker), meta.png (the meta steps' items/s and seconds per step, the same
way) and index.html, the comparison's one page: the verdict first, one line
per ratio, then the details behind headings a short table of contents
links to. Every name from a file is escaped (herd_safe); every file goes
through herd_output.OutputDir.
"""
import math
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Collection, Sequence

import numpy as np

import herd_compare_groups as groups
import herd_safe

if TYPE_CHECKING:  # types only: matplotlib is imported when a plot is drawn
    from matplotlib.axes import Axes

    from herd_output import OutputDir

# Plots the page shows when written, in this order: (file prefix, alt text).
PLOTS = [
    ("groups.png", "each phase's main figure per label: median, min to max"),
    ("meta.png", "meta steps: items/s and seconds per step per label"),
    ("compare.png", "MiB/s per phase and run"),
    ("scaling.png", "time and MiB/s against the label"),
    ("sweep.png", "MiB/s against the swept key, one line per run"),
    ("ladder", "load ladders overlaid, one line per run"),
]

SECONDS_UNIT = "s per step"  # meta.png's second panel

STYLE = """
body { font-family: sans-serif; margin: 1.2em 2em; color: #222; }
h1 { margin: 0 0 0.3em 0; font-size: 1.5em; }
h2 { border-bottom: 1px solid #ccc; padding-bottom: 0.2em; margin-top: 1.6em; }
nav.toc { margin: 0.4em 0; font-size: 0.95em; }
nav.toc a { margin-right: 1.1em; }
ul.verdict { list-style: none; padding-left: 0; margin: 0.4em 0; }
ul.verdict li { padding: 0.25em 0.6em; margin: 0.2em 0; border-left: 4px solid #7bb67b;
                background: #f3f8f3; }
ul.verdict li.finding { border-left-color: #d9534f; background: #fdf1ef; font-weight: bold; }
ul.verdict li.none { border-left-color: #aaa; background: #f6f6f6; }
.note { color: #6b4e00; }
table { border-collapse: collapse; margin: 0.5em 0; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.45em; text-align: right; }
th { background: #f0f0f0; }
td { white-space: nowrap; }
td.text, th.text { text-align: left; white-space: normal; }
tr.flag td { background: #fdf1ef; }
img { max-width: 100%; border: 1px solid #ddd; margin: 0.5em 0; }
"""


# ---------------------------------------------------------------- tables


def _cell(v: Any) -> str:
    """A groups.csv cell: numbers at full precision, NaN empty."""
    if isinstance(v, float):
        return "" if v != v else repr(v)
    return herd_safe.csv_text(v) if isinstance(v, str) else str(v)


def write_tables(outdir: "OutputDir", rows: list[groups.Group]) -> list[str]:
    """groups.csv and groups.md into outdir; returns their names."""
    import csv

    records = [groups.group_record(g) for g in rows]
    with outdir.new_file("groups.csv") as f:
        w = csv.writer(f)
        w.writerow(groups.GROUP_COLUMNS)
        for r in records:
            w.writerow([_cell(r[c]) for c in groups.GROUP_COLUMNS])
    with outdir.new_file("groups.md") as f:
        f.write(f"| {' | '.join(groups.GROUP_COLUMNS)} |\n|{'---|' * len(groups.GROUP_COLUMNS)}\n")
        for r in records:
            f.write("| " + " | ".join(_md(r[c]) for c in groups.GROUP_COLUMNS) + " |\n")
    return ["groups.csv", "groups.md"]


def _md(v: Any) -> str:
    if isinstance(v, float):
        return "-" if v != v else f"{v:.4g}"
    return herd_safe.md_cell(v) if v != "" else "-"


# ---------------------------------------------------------------- plots


@dataclass
class Bars:
    """One panel: per x name (phase, or 'phase: step') and label, the
    median (the bar), min and max (the whisker) and n of one figure."""

    unit: str
    names: list[str]
    labels: list[str]
    median: np.ndarray  # [label, name]
    lo: np.ndarray
    hi: np.ndarray
    n: np.ndarray


def bars(rows: list[groups.Group], units: Collection[str], seconds: bool = False) -> list[Bars]:
    """A Bars per unit in units (order of first appearance) from the
    Groups: their value, or with seconds their seconds (unit 's')."""
    out = []
    for unit in dict.fromkeys(g.unit for g in rows if g.unit in units):
        mine = [g for g in rows if g.unit == unit]
        names = list(dict.fromkeys(g.name for g in mine))
        labels = list(dict.fromkeys(g.label for g in mine))
        shape = (len(labels), len(names))
        med, lo, hi = (np.full(shape, np.nan) for _ in range(3))
        n = np.zeros(shape, int)
        for g in mine:
            s = g.seconds if seconds else g.value
            i, j = labels.index(g.label), names.index(g.name)
            med[i, j], lo[i, j], hi[i, j], n[i, j] = s.median, s.lo, s.hi, s.n
        out.append(Bars(SECONDS_UNIT if seconds else unit, names, labels, med, lo, hi, n))
    return out


def meta_bars(rows: list[groups.Group]) -> list[Bars]:
    """meta.png's panels: items/s per step, then seconds per step."""
    return bars(rows, {groups.META_UNIT}) + bars(rows, {groups.META_UNIT}, seconds=True)


def group_bars(rows: list[groups.Group]) -> list[Bars]:
    """groups.png's panels: one per unit of the phases that are not meta steps."""
    return bars(rows, {g.unit for g in rows if g.unit != groups.META_UNIT})


def _draw(ax: "Axes", panel: Bars) -> None:
    import herd_plots

    k = len(panel.labels)
    width = 0.8 / max(1, k)
    x = np.arange(len(panel.names))
    for i, label in enumerate(panel.labels):
        med = panel.median[i]
        err = np.vstack([np.nan_to_num(med - panel.lo[i]), np.nan_to_num(panel.hi[i] - med)])
        at = x + (i - (k - 1) / 2) * width
        ax.bar(
            at,
            np.nan_to_num(med),
            width,
            yerr=err,
            capsize=3,
            color=herd_plots.SAFE_COLOURS[i % len(herd_plots.SAFE_COLOURS)],
            label=herd_safe.plot_text(label),
            edgecolor="0.2",
            lw=0.5,
        )
        for xi, m, n in zip(at, med, panel.n[i]):
            if n:
                ax.annotate(
                    f"n={n}",
                    (xi, m if m == m and m > 0 else 0),
                    fontsize=6,
                    ha="center",
                    va="bottom",
                    xytext=(0, 2),
                    textcoords="offset points",
                )
    positive = panel.lo[(panel.lo > 0) & np.isfinite(panel.lo)]
    top = panel.hi[np.isfinite(panel.hi)]
    if len(positive) and len(top) and top.max() / positive.min() > 100:
        ticks = herd_plots.human_seconds if panel.unit == SECONDS_UNIT else herd_plots.human_count
        herd_plots.log_scale(ax, "y", ticks, (positive.min() / 2, top.max() * 2))
    ax.set_xticks(x)
    ax.set_xticklabels(
        [herd_safe.plot_text(n) for n in panel.names], rotation=30, ha="right", fontsize=8
    )
    ax.set_ylabel(panel.unit)
    ax.grid(alpha=0.3, axis="y")
    ax.legend(fontsize=7)


def plot(outdir: "OutputDir", name: str, panels: list[Bars], title: str) -> bool:
    """The panels, one above the other, as the PNG NAME; False when none."""
    if not panels:
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import herd_plots

    plt.rcParams["text.parse_math"] = False  # a '$' in a name is a dollar
    widest = max(len(p.names) * max(1, len(p.labels)) for p in panels)
    fig, axes = plt.subplots(
        len(panels), 1, figsize=(max(7.0, 0.35 * widest + 3), 3.4 * len(panels)), squeeze=False
    )
    for ax, panel in zip(axes.flat, panels):
        _draw(ax, panel)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    herd_plots.save(fig, outdir, name)
    return True


def write_plots(outdir: "OutputDir", rows: list[groups.Group]) -> list[str]:
    """groups.png and meta.png, each when it has a bar; returns the names written."""
    written = []
    if plot(
        outdir,
        "groups.png",
        group_bars(rows),
        "Each phase's main figure per label: bar = median of the label's runs, "
        "whisker = min to max, n = runs",
    ):
        written.append("groups.png")
    if plot(
        outdir,
        "meta.png",
        meta_bars(rows),
        "Meta steps per label: items/s (each step's items over the step's own time) and "
        "seconds per step; bar = median, whisker = min to max, n = runs",
    ):
        written.append("meta.png")
    return written


# ---------------------------------------------------------------- the page


def _h(v: Any) -> str:
    return herd_safe.html(v)


def _num(v: Any) -> str:
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else groups.number(v)


def verdict_html(rows: list[groups.Group]) -> list[str]:
    """The verdict: one <li> per ratio (class finding beyond noise, noise
    within it, none without a value)."""
    pairs = groups.verdict_pairs(rows)
    if not pairs:
        labels = list(dict.fromkeys(g.label for g in rows))
        return [
            f"<p>One label ({_h(labels[0]) if labels else 'none'}): no ratio to give; "
            "the spreads of its runs are below.</p>"
        ]
    out = ['<ul class="verdict">']
    for g, ref in pairs:
        cls = {None: "none", True: "noise", False: "finding"}[g.within_noise]
        out.append(f'<li class="{cls}">{_h(groups.verdict_line(g, ref))}</li>')
    return out + ["</ul>"]


GROUP_HEAD = [
    "phase",
    "step",
    "label",
    "unit",
    "n",
    "median",
    "min",
    "max",
    "ratio",
    "run pairs",
    "within noise",
    "s median",
    "s min",
    "s max",
    "time ratio",
    "not ok",
]


def groups_html(rows: list[groups.Group]) -> list[str]:
    """The per-label table of every figure (groups.csv's columns, shown)."""
    out = ["<table><tr>" + "".join(f"<th>{h}</th>" for h in GROUP_HEAD) + "</tr>"]
    for g in rows:
        pairs = (
            "-"
            if g.ratio_min != g.ratio_min
            else f"{groups.times(g.ratio_min)} to {groups.times(g.ratio_max)}"
        )
        noise = {None: "-", True: "yes", False: "no"}[g.within_noise]
        cells = [g.phase, g.step or "-", g.label, g.unit]
        nums = [
            str(g.value.n),
            _num(g.value.median),
            _num(g.value.lo),
            _num(g.value.hi),
            groups.times(g.ratio),
            pairs,
            noise,
            _num(g.seconds.median),
            _num(g.seconds.lo),
            _num(g.seconds.hi),
            groups.times(g.time_ratio),
            str(g.not_ok),
        ]
        flag = ' class="flag"' if g.within_noise is False else ""
        out.append(
            f"<tr{flag}>"
            + "".join(f'<td class="text">{_h(c)}</td>' for c in cells)
            + "".join(f"<td>{_h(c)}</td>" for c in nums)
            + "</tr>"
        )
    return out + ["</table>"]


def runs_html(compare_rows: list[dict[str, Any]], columns: list[str]) -> list[str]:
    """Every run's row per phase (compare.csv), as the terminal prints it."""
    shown = [c for c in columns if c not in ("monitor_covered",)]
    out = ["<table><tr>" + "".join(f"<th>{_h(c)}</th>" for c in shown) + "</tr>"]
    for r in compare_rows:
        cells = []
        for c in shown:
            v = r.get(c)
            text = _num(v) if isinstance(v, float) else ("-" if v is None else str(v))
            cls = ' class="text"' if c in ("phase", "run", "status") else ""
            cells.append(f"<td{cls}>{_h(text)}</td>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    return out + ["</table>"]


def _images(files: list[str]) -> list[str]:
    out = []
    for prefix, alt in PLOTS:
        for f in files:
            if f == prefix or (
                prefix == "ladder" and f.startswith("ladder") and f.endswith(".png")
            ):
                out.append(f'<p><img src="{_h(f)}" alt="{_h(alt)}"></p>')
    return out


def title(runs_per_label: dict[str, int]) -> str:
    """'herd-compare: a (3 runs) vs b (3 runs)'."""
    parts = [f"{l} ({n} run{'s' if n != 1 else ''})" for l, n in runs_per_label.items()]
    return "herd-compare: " + " vs ".join(parts)


def page(
    rows: list[groups.Group],
    runs_per_label: dict[str, int],
    notes: list[str],
    compare_rows: list[dict[str, Any]],
    columns: list[str],
    files: list[str],
    ladder_lines: Sequence[str] = (),
) -> str:
    """index.html: the verdict (the ratios, then where each run's ladder
    stalls: ladder_lines), a table of contents, then per label, meta
    steps, plots, each run and the files."""
    head = title(runs_per_label)
    sections = [("verdict", "Verdict"), ("labels", "Per label")]
    meta = [g for g in rows if g.unit == groups.META_UNIT]
    if meta:
        sections.append(("meta", "Meta steps"))
    sections += [("plots", "Plots"), ("runs", "Each run"), ("files", "Files")]
    ref = next(iter(runs_per_label), "-")
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{_h(head)}</title><style>{STYLE}</style></head><body>",
        f"<h1>{_h(head)}</h1>",
        '<nav class="toc">' + "".join(f'<a href="#{i}">{t}</a>' for i, t in sections) + "</nav>",
        '<h2 id="verdict">Verdict</h2>',
        f"<p>Per phase (meta: per step) the median of each label's runs over the median of "
        f"the reference label's ({_h(ref)}); in brackets each label's median, lowest to "
        "highest and runs (n), and the lowest to highest ratio of a run to a reference "
        "run. Within noise: the two ranges overlap, or a side has one run.</p>",
    ]
    parts += verdict_html(rows)
    if ladder_lines:
        parts += [
            "<p>Where each run's ladder stalls, and the likely cause (as herd-report's "
            "verdict):</p>",
            '<ul class="verdict ladders">',
            *[f"<li>{_h(line)}</li>" for line in ladder_lines],
            "</ul>",
        ]
    parts += [f'<p class="note">{_h(n)}</p>' for n in notes]
    parts += [
        '<h2 id="labels">Per label</h2>',
        "<p>groups.csv: each figure over each label's runs; seconds: the time until the "
        "last rank finished (meta: the step's own time).</p>",
    ]
    others = [g for g in rows if g.unit != groups.META_UNIT]
    parts += groups_html(others) if others else ["<p>no phase but meta steps</p>"]
    if meta:
        parts += [
            '<h2 id="meta">Meta steps</h2>',
            "<p>items/s: the step's items (files created, stat'ed, renamed, unlinked, "
            "directories removed) over the step's own time, the first rank's start to "
            "the last rank's end (op_summary's items_per_s, mdtest's rate); "
            "seconds: that time (step_s).</p>",
        ]
        parts += groups_html(meta)
        if "meta.png" in files:
            parts.append('<p><img src="meta.png" alt="meta steps per label"></p>')
    parts += ['<h2 id="plots">Plots</h2>']
    parts += [p for p in _images(files) if 'src="meta.png"' not in p]
    parts += [
        '<h2 id="runs">Each run</h2>',
        "<p>compare.csv: each run's phases; ratio and t ratio to the first file.</p>",
    ]
    parts += runs_html(compare_rows, columns)
    parts += ['<h2 id="files">Files</h2>', "<ul>"]
    parts += [f'<li><a href="{_h(f)}">{_h(f)}</a></li>' for f in files if not f.endswith(".png")]
    parts += ["</ul>", "</body></html>"]
    return "\n".join(parts) + "\n"


def write_page(
    outdir: "OutputDir",
    rows: list[groups.Group],
    labels: list[str],
    notes: list[str],
    compare_rows: list[dict[str, Any]],
    columns: list[str],
    written: list[str],
    ladder_lines: Sequence[str] = (),
) -> str:
    """index.html into outdir; written: the paths written before it."""
    runs_per_label = {l: labels.count(l) for l in groups.label_order(labels)}
    files = [os.path.basename(p) for p in written]
    return outdir.write_file(
        "index.html", page(rows, runs_per_label, notes, compare_rows, columns, files, ladder_lines)
    )
