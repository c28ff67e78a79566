"""herd_plots — the PNG plots of herd-report, drawn with matplotlib (Agg,
no display) from a herd_results.Run.

Each public function draws one figure into the file NAME of outdir (a
herd_output.OutputDir, which never writes through a link) and returns
True, or returns False without writing anything when the run has nothing
to show (no monitor samples, no errors, no NFS client counters):

    timeline(run, outdir, name)  per-rank bars on the common clock, stragglers
                                 marked; lanes with quantile bands when rows
                                 or ranks are many; with clients_per_rank > 1
                                 a bar per client (few), else a lane per rank
                                 with its clients' spread
    latency(run, outdir, name)   latency CDF per op, one line per phase
    server(run, outdir, name)    server CPU by mode and load; named processes; disks
    errors(run, outdir, name)    heatmap of failed calls by rank and errno
    retrans(run, outdir, name)   NFS client retransmissions per host and phase
    client_times(run, outdir, name, times=None)
                                 clients_per_rank > 1: histogram of the seconds
                                 per client, one panel per phase
    loadcurve(steps, knee, outdir, name, title)
                                 one load ladder: throughput and server CPU,
                                 and the main call's p99 latency (response
                                 time in offered load), against active
                                 ranks, active clients or achieved calls/s
                                 (herd_knee.ladder_kind); the knee and error
                                 steps marked, the rule as subtitle
    loadcurves(curves, outdir, name, title)
                                 herd-compare: several runs' curves of a
                                 ladder overlaid in the same units, one
                                 line per run, knee markers
    save(fig, outdir, name, tight=True)
                                 any figure as a PNG through outdir
                                 (herd-compare's plots)

Every time axis is seconds since the first phase's start on herd's common
clock, and each phase keeps one colour in every figure.
"""
import math
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    Iterable,
    Literal,
    Mapping,
    NamedTuple,
    Optional,
    Protocol,
    Sequence,
    Union,
    cast,
)

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import numpy.typing as npt  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.axis import Axis  # noqa: E402
from matplotlib.container import BarContainer  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.ticker import (
    FuncFormatter,
    Locator,
    LogLocator,
    MaxNLocator,  # noqa: E402
    NullFormatter,
)

import herd_knee  # noqa: E402
import herd_safe  # noqa: E402

if TYPE_CHECKING:  # types only: the callers hand these in
    from PIL import Image

    from herd_output import OutputDir
    from herd_results import Run

# Names from the file are drawn as they are: no mathtext, so a '$' in a host
# or phase name cannot make matplotlib fail; every such name goes through
# herd_safe.plot_text (one line, bad bytes escaped, cut short).
plt.rcParams["text.parse_math"] = False
safe = herd_safe.plot_text

DPI = 100
# zlib's level for every PNG: 3 writes the same pixels in two thirds of
# the time of PIL's default 6, into a file about a tenth larger.
PNG_COMPRESS_LEVEL = 3
STRAGGLER_RATIO = 1.5  # a row slower than this times the phase's median ...
STRAGGLER_MARGIN = 0.01  # ... and by more than this many seconds is a straggler
CPU_MODES = [  # (label, sample columns summed), bottom to top
    ("user", ["cpu_user", "cpu_nice"]),
    ("system", ["cpu_system"]),
    ("iowait", ["cpu_iowait"]),
    ("irq + softirq", ["cpu_irq", "cpu_softirq"]),
    ("steal", ["cpu_steal"]),
]
CPU_COLOURS = ["#4c72b0", "#dd8452", "#c44e52", "#8172b3", "#937860"]
MAX_ANNOTATED_CELLS = 400  # heatmaps with more cells than this go without numbers
MAX_HEATMAP_RANKS = 64  # above this, the heatmap shows only ranks with errors
MAX_ROW_BARS = 2000  # timeline: a bar per rank row up to this many rows ...
MAX_RANK_LANES = 64  # ... and ranks; beyond, a lane per rank, host or for all ranks
MAX_HOST_LANES = 64  # above this many hosts (or with one), lanes of rank groups:
MAX_GROUP_LANES = 30  # this many, of consecutive ranks
MAX_NAMED_STRAGGLERS = 12  # straggler ranks named on a lane timeline
MAX_CLIENT_BINS = 60  # client_times: histogram bins per phase at most
# A linear axis from 0 whose values stay under this shows no offset text
# (matplotlib's ScalarFormatter writes "1e6" above the axis from 10^6 up,
# its view reaching 5 % beyond the largest value).
NO_OFFSET_BELOW = 900_000


# ---------------------------------------------------------------- shared

# Okabe and Ito's colour-blind-safe palette (black last); with more phases
# than colours, the line style tells the rounds apart.
SAFE_COLOURS = [
    "#0072B2",
    "#E69F00",
    "#009E73",
    "#D55E00",
    "#CC79A7",
    "#56B4E9",
    "#F0E442",
    "#000000",
]
LINE_STYLES = ["-", "--", ":", "-."]
ERROR_COLOUR = "#d62728"


class PhaseRow(Protocol):
    """A row of run.phases.itertuples(), as phase_label reads it."""

    @property
    def phase(self) -> str:
        ...

    @property
    def status(self) -> str:
        ...


def phase_colours(names: Iterable[str]) -> dict[str, str]:
    """One colour per phase name, in job order, the same in every figure."""
    return {name: SAFE_COLOURS[i % len(SAFE_COLOURS)] for i, name in enumerate(names)}


def phase_styles(names: Iterable[str]) -> dict[str, tuple[str, str]]:
    """(colour, line style) per phase, in job order: distinct for up to 32
    phases, every colour told apart without colour vision (Okabe-Ito)."""
    n = len(SAFE_COLOURS)
    return {
        name: (SAFE_COLOURS[i % n], LINE_STYLES[(i // n) % len(LINE_STYLES)])
        for i, name in enumerate(names)
    }


def clock_origin(run: "Run") -> float:
    """The first phase's start: time 0 of every plot."""
    return float(run.phases["t_start"].min()) if len(run.phases) else 0.0


def phase_label(row: PhaseRow) -> str:
    """A phase's legend entry: its name, and its status when not ok."""
    return safe(row.phase) if row.status == "ok" else f"{safe(row.phase)} ({safe(row.status)})"


def shade_phases(
    ax: plt.Axes, run: "Run", origin: float, colours: Mapping[str, str], numbered: bool = False
) -> None:
    """Light bands over each phase's [t_start, t_end]; numbered bands carry
    the phase's index at the top, for figures whose legend numbers them."""
    for row in run.phases.itertuples():
        left, right = row.t_start - origin, row.t_end - origin
        ax.axvspan(left, right, color=colours[row.phase], alpha=0.13, lw=0)
        if numbered:
            ax.text(
                (left + right) / 2,
                1.0,
                str(row.index),
                transform=ax.get_xaxis_transform(),
                ha="center",
                va="bottom",
                fontsize=8,
                color="0.25",
            )


def human_seconds(x: float, _pos: object = None) -> str:
    """Tick label for a duration in seconds: 100 ns, 20 us, 3 ms, 1.5 s."""
    for scale, unit in ((1, "s"), (1e-3, "ms"), (1e-6, "µs")):
        if x >= scale:
            return f"{x / scale:.3g} {unit}"
    return f"{x * 1e9:.3g} ns"


def human_count(x: float, _pos: object = None) -> str:
    """Tick label for a count or a rate: 0, 950, 1.5k, 10k, 2.5M."""
    for scale, unit in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= scale:
            return f"{x / scale:.3g}{unit}"
    return f"{x:.3g}"


def log_scale(
    ax: plt.Axes,
    which: str,
    label: Callable[[float, object], str],
    limits: Optional[tuple[float, float]] = None,
) -> None:
    """A log x or y axis (which) with its ticks labelled by label(value,
    pos), no minor labels: plain text, never matplotlib's own log labels
    (TeX, drawn raw with parse_math off). limits: set them, widened to
    whole decades, with ticks at 1, 2 and 5 x 10^k while they span 3
    decades at most; else (and beyond: matplotlib's locator gives no tick
    at all for 1, 2, 5 over more decades than fit) at powers of ten."""
    (ax.set_xscale if which == "x" else ax.set_yscale)("log")
    axis = ax.xaxis if which == "x" else ax.yaxis
    subs: tuple[float, ...] = (1.0,)
    if limits is not None:
        low, high = whole_decades(limits)
        (ax.set_xlim if which == "x" else ax.set_ylim)(low, high)
        subs = (1.0, 2.0, 5.0) if high / low <= 1e3 else (1.0,)
    axis.set_major_locator(InView(LogLocator(base=10, subs=subs)))
    axis.set_minor_locator(InView(axis.get_minor_locator()))
    axis.set_major_formatter(FuncFormatter(label))
    axis.set_minor_formatter(NullFormatter())


class InView(Locator):
    """Another locator's ticks less those outside the axis' view. A log
    locator gives a decade or two beyond the view on each side, and
    matplotlib makes a tick (lines, labels) for each before it draws only
    those in view: a third of a log axis' ticks, made for nothing, are the
    costliest part of a figure of log axes. Those kept are a margin wider
    than the ones matplotlib draws (it drops the rest): the same ticks."""

    def __init__(self, inner: Locator) -> None:
        self.inner = inner

    def set_axis(self, axis: Axis) -> None:
        super().set_axis(axis)
        self.inner.set_axis(axis)

    def __call__(self) -> np.ndarray:
        locs = np.asarray(self.inner())
        if self.axis is None or not len(locs):
            return locs
        low, high = sorted(self.axis.get_view_interval())
        margin = 1e-6 * (high - low)
        return locs[(locs >= low - margin) & (locs <= high + margin)]

    def tick_values(self, vmin: float, vmax: float) -> np.ndarray:
        return self.inner.tick_values(vmin, vmax)

    def nonsingular(self, v0: float, v1: float) -> tuple[float, float]:
        return self.inner.nonsingular(v0, v1)

    def view_limits(self, vmin: float, vmax: float) -> tuple[float, float]:
        return self.inner.view_limits(vmin, vmax)


def _inside_crop(fig: Figure) -> "Image.Image | None":
    """The figure drawn once, cropped to the pixels drawn, padded by
    savefig.pad_inches as savefig's tight crop is (a PIL image); None when
    a drawn pixel touches the canvas' edge (something may reach beyond it:
    the caller crops by the artists' box instead)."""
    from PIL import Image  # matplotlib's own PNG writer

    fig.set_dpi(DPI)
    fig.canvas.draw()
    pixels = np.asarray(fig.canvas.buffer_rgba())
    ink = (pixels != pixels[0, 0]).any(axis=2)
    if ink[0].any() or ink[-1].any() or ink[:, 0].any() or ink[:, -1].any():
        return None
    rows, cols = np.flatnonzero(ink.any(axis=1)), np.flatnonzero(ink.any(axis=0))
    if not len(rows):
        return None
    pad = int(round(plt.rcParams["savefig.pad_inches"] * DPI))
    top, bottom = max(0, rows[0] - pad), min(pixels.shape[0], rows[-1] + 1 + pad)
    left, right = max(0, cols[0] - pad), min(pixels.shape[1], cols[-1] + 1 + pad)
    return Image.fromarray(pixels[top:bottom, left:right].copy())


def save(
    fig: Figure, outdir: "OutputDir", name: str, tight: Union[bool, Literal["inside"]] = True
) -> None:
    """fig as the PNG file NAME of outdir (herd_output.OutputDir), then closed;
    tight: cropped to what is drawn. The crop is the box savefig's
    bbox_inches="tight" finds (the figure's tight box, padded by
    savefig.pad_inches), taken here and handed to savefig: the same pixels,
    without the whole extra layout pass savefig makes before it looks.
    tight="inside", for a figure whose every artist lies inside its canvas
    (legends inside their axes, tight_layout): drawn once and cropped to
    its drawn pixels, a layout pass less again (wrapped text wraps at the
    canvas); a figure that draws up to the edge is cropped as with True."""
    try:
        if tight == "inside":
            image = _inside_crop(fig)
            if image is not None:
                with outdir.new_file(name, binary=True) as f:
                    image.save(f, format="png", dpi=(DPI, DPI), compress_level=PNG_COMPRESS_LEVEL)
                return
        box = None
        if tight:
            fig.set_dpi(DPI)  # the renderer savefig's own look would use
            box = fig.get_tightbbox(fig.canvas.get_renderer()).padded(
                plt.rcParams["savefig.pad_inches"]
            )
        with outdir.new_file(name, binary=True) as f:
            fig.savefig(
                f,
                format="png",
                dpi=DPI,
                bbox_inches=box,
                pil_kwargs={"compress_level": PNG_COMPRESS_LEVEL},
            )
    finally:
        plt.close(fig)


class Margins(NamedTuple):
    """A grid of panels' margins and gaps, in inches: left, right, bottom
    and top of the figure, the gap between columns and between rows (each
    gap holds a panel's tick labels and axis label, and the next row's
    title)."""

    left: float
    right: float
    bottom: float
    top: float
    wgap: float
    hgap: float


def layout_inches(fig: Figure, nrows: int, ncols: int, m: Margins) -> None:
    """fig's nrows x ncols panels placed by fixed margins in inches
    instead of tight_layout, which measures every tick label (half of a
    figure of many log panels' time); for figures of a known layout, saved
    with tight="inside" (which crops what is left blank, and falls back to
    the artists' box if anything reaches the canvas' edge)."""
    width, height = fig.get_size_inches()
    panel_w = (width - m.left - m.right - (ncols - 1) * m.wgap) / ncols
    panel_h = (height - m.bottom - m.top - (nrows - 1) * m.hgap) / nrows
    fig.subplots_adjust(
        left=m.left / width,
        right=1 - m.right / width,
        bottom=m.bottom / height,
        top=1 - m.top / height,
        wspace=m.wgap / panel_w,
        hspace=m.hgap / panel_h,
    )


def title_fixed(ax: plt.Axes, text: str, **kwargs: Any) -> None:
    """ax's title at the top of the axes, where matplotlib's own placement
    puts it when nothing stands above the axes; that placement, at every
    draw, lays out the y axis' ticks once more to look for an offset text
    ("1e6") the title must clear: an eighth of a figure of many titled
    panels. Only for axes whose x ticks and label are at the bottom and
    whose y axis shows no offset text (a fixed range such as 0 to 1, or
    counts under NO_OFFSET_BELOW from 0): the same pixels."""
    ax.set_title(text, y=1.0, **kwargs)


# ---------------------------------------------------------------- timeline


def stragglers(rows: pd.DataFrame, medians: pd.Series) -> pd.DataFrame:
    """Rows that did work and took more than 1.5 x their phase's median time
    and more than the median + 10 ms."""
    median = rows["phase"].map(medians)
    return rows[
        (rows["ops"] > 0)
        & (rows["seconds"] > STRAGGLER_RATIO * median)
        & (rows["seconds"] > median + STRAGGLER_MARGIN)
    ]


def timeline(run: "Run", outdir: "OutputDir", name: str) -> bool:
    """A bar per rank row while there are few (MAX_ROW_BARS, MAX_RANK_LANES:
    with clients_per_rank > 1, a bar per client row while there are few
    rows and clients); beyond that, lanes with each phase's spread over
    ranks (timeline_lanes), so that 300 ranks x 1000 iterations, or 2 ranks
    x 1000 clients, stay readable and quick to draw."""
    if run.phases.empty or not run.phases["rows"].sum():
        return False
    lanes = run.phases["ranks"].max() * run.clients_per_rank
    if run.phases["rows"].sum() <= MAX_ROW_BARS and lanes <= MAX_RANK_LANES:
        return timeline_rows(run, outdir, name)
    return timeline_lanes(run, outdir, name)


def timeline_rows(run: "Run", outdir: "OutputDir", name: str) -> bool:
    """One bar per (rank, iteration), stragglers outlined in red; with
    clients_per_rank > 1 one per (rank, client, iteration), a lane per
    client (its global id, rank x clients_per_rank + client)."""
    rows = run.all_ranks()
    if rows.empty:
        return False
    lane, what = ("client_id", "client") if run.clients_per_rank > 1 else ("rank", "rank")
    rows["lane"] = rows[lane]
    origin = clock_origin(run)
    colours = phase_colours(list(run.phases["phase"]))
    nranks = rows["lane"].nunique()
    fig, ax = plt.subplots(figsize=(12, min(14, 2.2 + 0.28 * nranks)))
    shade_phases(ax, run, origin, colours)
    for phase in run.phases.itertuples():
        mine = rows[rows["phase"] == phase.phase]
        worked, idle = mine[mine["ops"] > 0], mine[mine["ops"] == 0]
        label: Optional[str] = phase_label(phase)
        # The edge keeps bars of a few milliseconds visible as a line.
        if len(worked):
            ax.barh(
                worked["lane"],
                worked["seconds"],
                left=worked["t_start"] - origin,
                height=0.6,
                color=colours[phase.phase],
                edgecolor=colours[phase.phase],
                linewidth=0.8,
                label=label,
            )
            label = None
        if len(idle):
            ax.barh(
                idle["lane"],
                idle["seconds"],
                left=idle["t_start"] - origin,
                height=0.12,
                color=colours[phase.phase],
                label=label,
            )
    slow = stragglers(rows, run.phases.set_index("phase")["t_median"])
    if len(slow):
        ax.barh(
            slow["lane"],
            slow["seconds"],
            left=slow["t_start"] - origin,
            height=0.6,
            fill=False,
            edgecolor="red",
            linewidth=1.6,
        )
        ax.plot(
            slow["t_end"] - origin,
            slow["lane"],
            linestyle="none",
            marker="<",
            color="red",
            markersize=7,
            label=f"straggler (> {STRAGGLER_RATIO:g} x phase median)",
        )
    ax.set_ylim(rows["lane"].max() + 0.7, rows["lane"].min() - 0.7)
    if nranks <= 32:
        ax.set_yticks(sorted(rows["lane"].unique()))
    else:
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlim(left=0)
    ax.set_xlabel("seconds since the first phase's start (common clock)")
    ax.set_ylabel("rank" if what == "rank" else f"client (rank x {run.clients_per_rank} + client)")
    ax.set_title(
        f"Per-{what} timeline: run {safe(run.attrs.get('run_id', run.label))}  "
        "(thin bars: no I/O)"
    )
    ax.grid(axis="x", alpha=0.3)
    handles, labels = ax.get_legend_handles_labels()
    if len(slow):  # matplotlib lists the straggler marker first: move it last
        handles, labels = handles[1:] + handles[:1], labels[1:] + labels[:1]
    ax.legend(
        handles, labels, loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=9, title="phase"
    )
    save(fig, outdir, name)
    return True


def rank_spans(rows: pd.DataFrame, median: float, clients: bool = False) -> pd.DataFrame:
    """One phase's rows reduced per rank: host, first start, last end, ops,
    and its stragglers (rows as stragglers() defines them): how many, the
    worst one's time over the median and its end. clients (the rows of a
    rank are many clients'): also the median of its clients' first starts
    and last ends (client_start50, client_end50) and when 90 % of its
    clients were done (client_end90). Vectorised: no loop over rows."""
    seconds = rows["t_end"] - rows["t_start"]
    slow = (
        (rows["ops"] > 0)
        & (seconds > STRAGGLER_RATIO * median)
        & (seconds > median + STRAGGLER_MARGIN)
    )
    spans = rows.groupby("rank", sort=True).agg(
        host=("host", "first"), start=("t_start", "min"), end=("t_end", "max"), ops=("ops", "sum")
    )
    worst = rows[slow].assign(ratio=seconds[slow] / median).sort_values("ratio", kind="stable")
    worst = worst.groupby("rank").tail(1).set_index("rank")
    spans["slow_rows"] = slow.groupby(rows["rank"]).sum().reindex(spans.index, fill_value=0)
    spans["slow_ratio"] = worst["ratio"].reindex(spans.index)
    spans["slow_end"] = worst["t_end"].reindex(spans.index)
    if clients:
        per_client = rows.groupby(["rank", "client"], sort=True).agg(
            start=("t_start", "min"), end=("t_end", "max")
        )
        by_rank = per_client.groupby(level="rank")
        spans["client_start50"] = by_rank["start"].median().reindex(spans.index)
        spans["client_end50"] = by_rank["end"].median().reindex(spans.index)
        spans["client_end90"] = by_rank["end"].quantile(0.9).reindex(spans.index)
    return spans


# A lane per rank: each rank's lane number from a table indexed by rank.
LaneOf = Callable[[pd.DataFrame], np.ndarray]


def timeline_lanes_of(run: "Run") -> tuple[LaneOf, Optional[list[str]], str]:
    """(lane per rank function, lane labels or None, y label): a lane per
    rank up to MAX_RANK_LANES ranks, else one per host when there are 2 to
    MAX_HOST_LANES hosts, else MAX_GROUP_LANES lanes of consecutive ranks."""
    nranks = int(run.phases["ranks"].max())
    nhosts = len(run.hosts)
    if nranks <= MAX_RANK_LANES:
        return (lambda spans: spans.index.to_numpy()), None, "rank"
    if 1 < nhosts <= MAX_HOST_LANES:
        names = [safe(h) for h in run.hosts.get("hostname", range(nhosts))]
        return (lambda spans: spans["host"].to_numpy()), names, "host"
    top = int(run.rank_info["rank"].max()) + 1 if len(run.rank_info) else nranks
    size = math.ceil(top / MAX_GROUP_LANES)
    names = [f"{lo}-{min(lo + size, top) - 1}" for lo in range(0, top, size)]
    return (lambda spans: spans.index.to_numpy() // size), names, f"ranks ({size} per lane)"


def timeline_lanes(run: "Run", outdir: "OutputDir", name: str) -> bool:
    """Each phase as bands per lane (rank, host or all ranks): from the
    first rank's start to the last rank's end (light), the median rank's
    start to its end (solid), a tick where 90 % of the lane's ranks were
    done; straggler ranks (a row > 1.5 x the phase median) marked in red
    and the slowest named by rank number. A lane per rank of many clients
    (clients_per_rank > 1) shows its clients so: the first client's start
    to the last client's end (light), the median client's (solid), a tick
    where 90 % of its clients were done."""
    origin = clock_origin(run)
    colours = phase_colours(list(run.phases["phase"]))
    lane_of, lane_names, ylabel = timeline_lanes_of(run)
    per_rank = lane_names is None
    clients = per_rank and run.clients_per_rank > 1
    spread = not per_rank or clients  # light bands and 90 % ticks
    middle: dict[str, tuple[str, Union[str, Callable[[pd.Series], float]]]] = (
        dict(
            start50=("client_start50", "median"),
            end50=("client_end50", "median"),
            end90=("client_end90", "max"),
        )
        if clients
        else dict(
            start50=("start", "median"),
            end50=("end", "median"),
            end90=("end", lambda e: e.quantile(0.9)),
        )
    )
    band_tables, slow_tables = [], []
    for phase in run.phases.itertuples():
        rows = run.ranks(phase.phase)
        if rows.empty:
            continue
        spans = rank_spans(rows, phase.t_median, clients)
        del rows  # one phase's rows at a time: memory stays that of the largest
        spans["lane"] = lane_of(spans)
        spans["phase"] = phase.phase
        band_tables.append(
            spans.groupby("lane")
            .agg(
                first=("start", "min"),
                last=("end", "max"),
                ops=("ops", "sum"),
                ranks=("start", "size"),
                **middle,
            )
            .assign(phase=phase.phase, label=phase_label(phase))
        )
        slow_tables.append(spans[spans["slow_rows"] > 0].reset_index())
    if not band_tables:
        return False
    bands = pd.concat(band_tables).reset_index()
    slow = pd.concat(slow_tables, ignore_index=True) if slow_tables else pd.DataFrame()
    lanes = np.sort(bands["lane"].unique())
    fig, ax = plt.subplots(figsize=(12, min(14, 2.6 + 0.28 * len(lanes))))
    shade_phases(ax, run, origin, colours)
    for phase, mine in bands.groupby("phase", sort=False):
        colour, label = colours[phase], mine["label"].iloc[0]
        worked, idle = mine[mine["ops"] > 0], mine[mine["ops"] == 0]
        if len(worked) and spread:
            ax.barh(
                worked["lane"],
                worked["last"] - worked["first"],
                left=worked["first"] - origin,
                height=0.7,
                color=colour,
                alpha=0.35,
                lw=0,
            )
        if len(worked):
            ax.barh(
                worked["lane"],
                worked["end50"] - worked["start50"],
                left=worked["start50"] - origin,
                height=0.4 if spread else 0.7,
                color=colour,
                edgecolor=colour,
                linewidth=0.8,
                label=label,
            )
            label = None
        if len(idle):
            ax.barh(
                idle["lane"],
                idle["last"] - idle["first"],
                left=idle["first"] - origin,
                height=0.12,
                color=colour,
                label=label,
            )
    if spread:
        worked = bands[bands["ops"] > 0]
        ax.plot(
            worked["end90"] - origin,
            worked["lane"],
            linestyle="none",
            marker="|",
            color="black",
            markersize=16,
            markeredgewidth=1.5,
            label="90 % of the rank's clients done" if clients else "90 % of the lane's ranks done",
        )
    named = draw_straggler_ranks(ax, slow, origin, lane_of, per_rank)
    ax.set_ylim(lanes.max() + 0.7, lanes.min() - 0.7)
    if per_rank and len(lanes) > 32:
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    else:
        ax.set_yticks(lanes)
        if lane_names is not None:  # (not per_rank)
            ax.set_yticklabels(
                [lane_names[int(i)] if 0 <= i < len(lane_names) else str(i) for i in lanes]
            )
    ax.set_xlim(left=0)
    ax.set_xlabel("seconds since the first phase's start (common clock)")
    ax.set_ylabel(ylabel)
    what = (
        f"per rank of {run.clients_per_rank} clients, light: its first client's start "
        "to last client's end; solid: its median client's start to end"
        if clients
        else "per rank, first start to last end of its rows"
        if per_rank
        else "light: first rank's start to last rank's end; solid: median start to median end"
    )
    ax.set_title(
        f"Timeline: run {safe(run.attrs.get('run_id', run.label))}, "
        f"{int(run.phases['rows'].sum()):,} rows\n({what}; thin bars: no I/O)",
        fontsize=10,
    )
    ax.grid(axis="x", alpha=0.3)
    handles, labels = ax.get_legend_handles_labels()
    phases = [i for i, h in enumerate(handles) if isinstance(h, BarContainer)]
    order = phases + [i for i in range(len(handles)) if i not in phases]  # phases first
    ax.legend(
        [handles[i] for i in order],
        [labels[i] for i in order],
        loc="upper left",
        bbox_to_anchor=(1.01, 1),
        fontsize=9,
        title="phase",
    )
    if named:  # under the plot: never over the bars or the legend
        ax.text(
            0.0,
            -0.8 / (0.75 * fig.get_figheight()),
            named,
            transform=ax.transAxes,
            va="top",
            ha="left",
            fontsize=8,
            family="monospace",
        )
    save(fig, outdir, name)
    return True


def draw_straggler_ranks(
    ax: plt.Axes, slow: pd.DataFrame, origin: float, lane_of: LaneOf, per_rank: bool
) -> str:
    """Red markers at each straggler rank's worst row's end; in shared lanes
    the MAX_NAMED_STRAGGLERS slowest carry their rank number. Returns the
    text listing them (rank, phase, worst time over the median)."""
    if slow.empty:
        return ""
    lanes = lane_of(slow.set_index("rank"))
    ax.plot(
        slow["slow_end"] - origin,
        lanes,
        linestyle="none",
        marker="<",
        color="red",
        markersize=7,
        label=f"straggler rank (a row > {STRAGGLER_RATIO:g} x phase median)",
    )
    order = np.argsort(-slow["slow_ratio"].to_numpy(), kind="stable")[:MAX_NAMED_STRAGGLERS]
    if not per_rank:
        for k, i in enumerate(order):
            ax.annotate(
                f"r{int(slow['rank'].iloc[i])}",
                (slow["slow_end"].iloc[i] - origin, lanes[i]),
                xytext=(4, -9 + 6 * (k % 4)),
                textcoords="offset points",
                fontsize=7,
                color="red",
            )
    named = [
        f"rank {int(slow['rank'].iloc[i])} ({safe(slow['phase'].iloc[i])[:20]}, "
        f"{slow['slow_ratio'].iloc[i]:.3g}x)"
        for i in order
    ]
    lines = [
        f"straggler ranks: {len(slow)} (rank, phase); the slowest, worst row over the "
        "phase median:"
    ]
    lines += ["  " + ", ".join(named[k : k + 4]) for k in range(0, len(named), 4)]
    return "\n".join(lines)


# ---------------------------------------------------------------- latency


def latency_histograms(
    run: "Run",
) -> dict[str, list[tuple[str, np.ndarray, np.ndarray, np.ndarray]]]:
    """{op: [(phase, lower_ns, upper_ns, counts)]} for the ops with samples."""
    per_op: dict[str, list[tuple[str, np.ndarray, np.ndarray, np.ndarray]]] = {}
    for name in run.phase_names:
        for op, (lower, upper, counts) in run.latency(name).items():
            if counts.sum() > 0:
                per_op.setdefault(op, []).append((name, lower, upper, counts))
    return per_op


def percentile_seconds(upper: np.ndarray, counts: np.ndarray, q: float) -> float:
    """Upper bound (s) of the bucket holding the q-quantile, as herd reports it."""
    cumulative = np.cumsum(counts)
    return upper[np.searchsorted(cumulative, q * cumulative[-1])] / 1e9


def cdf_points(
    lower: np.ndarray, upper: np.ndarray, counts: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """x (s) and cumulative fraction from the first to the last non-empty bucket."""
    used = np.flatnonzero(counts)
    first, last = used[0], used[-1]
    cumulative = np.cumsum(counts[first : last + 1]) / counts.sum()
    x = np.concatenate([[lower[first]], upper[first : last + 1]]) / 1e9
    return x, np.concatenate([[0.0], cumulative])


def whole_decades(limits: tuple[float, float]) -> tuple[float, float]:
    """Limits widened to powers of ten, so that a log axis has labelled ticks."""
    low, high = limits
    return 10 ** math.floor(math.log10(low)), 10 ** math.ceil(math.log10(high))


def latency(run: "Run", outdir: "OutputDir", name: str) -> bool:
    per_op = latency_histograms(run)
    if not per_op:
        return False
    styles = phase_styles(run.phase_names)
    ncols = min(3, len(per_op))
    nrows = math.ceil(len(per_op) / ncols)
    order = [p for p in run.phase_names if any(p == h[0] for hs in per_op.values() for h in hs)]
    legend_w = 0.9 + 0.075 * max([len(safe(p)) for p in order] + [len("phase")])
    fig, axes = plt.subplots(
        nrows, ncols, figsize=(4.6 * ncols + legend_w, 3.4 * nrows + 0.4), squeeze=False
    )
    layout_inches(
        fig,
        nrows,
        ncols,
        Margins(left=0.8, right=legend_w, bottom=0.55, top=0.7, wgap=0.85, hgap=0.9),
    )
    shown = {}
    for ax, (op, hists) in zip(axes.flat, per_op.items()):
        for phase, lower, upper, counts in hists:
            x, y = cdf_points(lower, upper, counts)
            colour, style = styles[phase]
            shown[phase] = ax.plot(x, y, color=colour, ls=style, lw=1.6)[0]
            if len(hists) > 1 and len(x):  # a direct label where the curve crosses 1/2
                at = min(int(np.searchsorted(y, 0.5)), len(x) - 1)
                ax.annotate(
                    safe(phase),
                    (x[at], y[at]),
                    fontsize=7,
                    color=colour,
                    xytext=(3, 0),
                    textcoords="offset points",
                    va="center",
                )
        total = cast(np.ndarray, sum(h[3] for h in hists))  # (hists: one at least)
        upper = hists[0][2]
        title_fixed(  # (y from 0 to 1.02: no offset text)
            ax,
            f"{safe(op)}: {int(total.sum()):,} calls, "
            f"p50 {human_seconds(percentile_seconds(upper, total, 0.5))}, "
            f"p99 {human_seconds(percentile_seconds(upper, total, 0.99))}",
            fontsize=10,
        )
        log_scale(ax, "x", human_seconds)
        ax.set_xlim(*whole_decades(ax.get_xlim()))
        ax.set_ylim(0, 1.02)
        ax.grid(alpha=0.3, which="both")
        ax.set_xlabel("call latency (log scale)")
        ax.set_ylabel("fraction of calls ≤ x")
    for ax in axes.flat[len(per_op) :]:
        ax.set_visible(False)
    right = 1 - (legend_w - 0.15) / fig.get_figwidth()  # the legend in its own column
    fig.legend(
        [shown[p] for p in order],
        [safe(p) for p in order],
        loc="upper left",
        bbox_to_anchor=(right, 1 - 0.7 / fig.get_figheight()),
        title="phase",
        fontsize=9,
    )
    fig.suptitle("Latency CDF per op (from the log-linear histograms, merged over ranks)")
    save(fig, outdir, name, tight="inside")
    return True


# One panel of the throughput figure: a bar per label, its value, whether
# its phase did not end ok (hatched), and the y axis' unit.
class Panel(NamedTuple):
    labels: list[str]
    values: np.ndarray
    bad: np.ndarray
    unit: str


def throughput_panels(run: "Run") -> list[Panel]:
    """The throughput figure's panels, each phase's result as its table row
    and the terminal's summary give it: MiB/s per phase of the kinds that
    move bytes (write, read, md5); calls/s per phase of lock (grants/s),
    storm and the other kinds; and for meta phases items/s per step (the
    files created, stat'ed, renamed, unlinked, directories removed, each
    over its step's own time: mdtest's rates, op_summary's items_per_s;
    not the calls/s that count every call of the phase; a meta phase of an
    older file, without meta_steps, by its calls/s)."""
    phases = run.phases
    if not len(phases):
        return []
    byte_kinds = phases["kind"].isin(["write", "read", "md5"])
    rows = phases[byte_kinds]
    panels = [
        Panel(
            [phase_label(r) for r in rows.itertuples()],
            rows["mib_per_s"].astype(float).fillna(0).to_numpy(),
            (rows["status"] != "ok").to_numpy(),
            "MiB/s",
        )
    ]
    steps = {
        r.phase: run.meta_steps(r.phase)[["step", "op"]].drop_duplicates()
        for r in phases[phases["kind"] == "meta"].itertuples()
    }
    steps = {name: table for name, table in steps.items() if len(table)}  # (older: none)
    rows = phases[~byte_kinds & (phases["kind"] != "idle") & ~phases["phase"].isin(steps)]
    values = rows["ops_per_s"].astype(float).fillna(0).to_numpy()
    lock = (rows["kind"] == "lock").to_numpy()
    last = rows["last_done"].astype(float).to_numpy()
    grants = rows["grants"].astype(float).to_numpy()
    values = np.where(lock & (last > 0), grants / np.where(last > 0, last, 1), values)
    panels.append(
        Panel(
            [phase_label(r) for r in rows.itertuples()],
            values,
            (rows["status"] != "ok").to_numpy(),
            "calls/s" + (" (lock: grants/s)" if lock.any() else ""),
        )
    )
    labels, values, bad = [], [], []
    for r in phases[phases["phase"].isin(steps)].itertuples():
        rates = run.op_summary(r.phase).set_index("op")["items_per_s"]
        for step, op in steps[r.phase].itertuples(index=False):
            labels.append(f"{phase_label(r)}: {safe(step)}")
            values.append(float(rates.get(op, np.nan)))
            bad.append(r.status != "ok")
    panels.append(
        Panel(
            labels,
            np.nan_to_num(np.asarray(values, dtype=float)),
            np.asarray(bad, dtype=bool),
            "items/s (meta: per step)",
        )
    )
    return [p for p in panels if len(p.labels)]


def throughput(run: "Run", outdir: "OutputDir", name: str) -> bool:
    """throughput_panels: a bar per phase (per meta step) in job order, a
    phase that did not end ok hatched and labelled with its status."""
    panels = throughput_panels(run)
    if not panels:
        return False
    bars_at_most = max(len(p.labels) for p in panels)
    fig, axes = plt.subplots(
        len(panels),
        1,
        figsize=(max(6.0, 0.55 * bars_at_most + 2), 3.2 * len(panels)),
        squeeze=False,
    )
    for ax, panel in zip(axes.flat, panels):
        values = panel.values
        bars = ax.bar(
            range(len(values)),
            values,
            edgecolor="0.2",
            lw=0.5,
            color=[ERROR_COLOUR if b else SAFE_COLOURS[0] for b in panel.bad],
        )
        for bar, b in zip(bars, panel.bad):
            if b:
                bar.set_hatch("//")
        ax.bar_label(
            bars, labels=[f"{v:,.1f}" if v < 100 else f"{v:,.0f}" for v in values], fontsize=7
        )
        ax.set_ylim(0, 1.15 * values.max() if values.max() > 0 else 1)
        ax.set_xticks(range(len(values)))
        ax.set_xticklabels(panel.labels, rotation=30, ha="right", fontsize=8)
        ax.set_ylabel(panel.unit)
        ax.grid(alpha=0.3, axis="y")
    fig.suptitle(
        "Each phase's result, as its table row: over the common start to the last "
        "rank done\n(meta: each step's items over the step's own time); hatched: the "
        "phase did not end ok",
        fontsize=10,
    )
    fig.tight_layout()
    save(fig, outdir, name)
    return True


# ---------------------------------------------------------------- server


def monitor_samples(run: "Run") -> pd.DataFrame:
    """The samples of one source: a monitor rank's /proc when it sampled,
    else a node_exporter's (the source Run.server_cpu prefers)."""
    samples = run.samples()
    if samples.empty:
        return samples
    proc = samples[samples["source"] == "proc"]
    return proc if len(proc) else samples[samples["source"] == "node_exporter"]


def step_series(frame: pd.DataFrame, values: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """x and y for a step line over the sample intervals (t - dt, t]."""
    x = np.concatenate([[frame["t"].iloc[0] - frame["dt"].iloc[0]], frame["t"]])
    y = np.asarray(values, dtype=float)
    return x, np.concatenate([[y[0]], y])


def draw_cpu(ax: plt.Axes, samples: pd.DataFrame, origin: float) -> None:
    stacks = [samples[cols].sum(axis=1, min_count=1) * 100 for _, cols in CPU_MODES]
    x, _ = step_series(samples, stacks[0])
    ys = [step_series(samples, s)[1] for s in stacks]
    ax.stackplot(
        x - origin,
        ys,
        labels=[label for label, _ in CPU_MODES],
        colors=CPU_COLOURS,
        step="pre",
        alpha=0.85,
    )
    ax.set_ylim(0, 100)
    ax.set_ylabel("server CPU %")
    load = ax.twinx()
    x, y = step_series(samples, samples["load1"])
    load.plot(x - origin, y, color="black", lw=1.3, drawstyle="steps-pre", label="load1")
    load.set_ylim(bottom=0)
    load.set_ylabel("load average (1 min)")
    handles, labels = ax.get_legend_handles_labels()
    more, more_labels = load.get_legend_handles_labels()
    ax.legend(
        handles + more, labels + more_labels, loc="upper left", bbox_to_anchor=(1.07, 1), fontsize=9
    )


def draw_processes(ax: plt.Axes, processes: pd.DataFrame, origin: float) -> None:
    for i, (name, rows) in enumerate(processes.groupby("name", sort=False)):
        colour = plt.get_cmap("tab10")(i % 10)
        x, y = step_series(rows, rows["cpu"])
        ax.plot(
            x - origin, y, color=colour, lw=1.5, drawstyle="steps-pre", label=f"{safe(name)}: all"
        )
        x, y = step_series(rows, rows["cpu_max_thread"])
        ax.plot(
            x - origin,
            y,
            color=colour,
            lw=1.2,
            ls="--",
            drawstyle="steps-pre",
            label=f"{safe(name)}: busiest thread",
        )
    ax.set_ylim(bottom=0)
    ax.set_ylabel("CPU (1.0 = one core)")
    ax.legend(loc="upper left", bbox_to_anchor=(1.07, 1), fontsize=9)


def draw_disks(ax: plt.Axes, disks: pd.DataFrame, origin: float) -> None:
    for i, (device, rows) in enumerate(disks.groupby("device", sort=False)):
        colour = plt.get_cmap("tab10")(i % 10)
        for column, style, what in (("write_bytes", "-", "write"), ("read_bytes", ":", "read")):
            x, y = step_series(rows, rows[column] / rows["dt"] / 2**20)
            ax.plot(
                x - origin,
                y,
                color=colour,
                ls=style,
                lw=1.5,
                drawstyle="steps-pre",
                label=f"{safe(device)} {what}",
            )
    ax.set_ylim(bottom=0)
    ax.set_ylabel("disk MiB/s")
    ax.legend(loc="upper left", bbox_to_anchor=(1.07, 1), fontsize=9)


def running_processes(run: "Run") -> pd.DataFrame:
    """Process rows of the names that ran at some point (others are flat zeros)."""
    processes = run.processes()
    if processes.empty:
        return processes
    ran = processes.groupby("name")["processes"].transform("max") > 0
    return processes[ran]


def server(run: "Run", outdir: "OutputDir", name: str) -> bool:
    samples = monitor_samples(run)
    if samples.empty:
        return False
    processes, disks = running_processes(run), run.disks()
    panels = (
        [draw_cpu]
        + ([draw_processes] if len(processes) else [])
        + ([draw_disks] if len(disks) else [])
    )
    tables = {draw_cpu: samples, draw_processes: processes, draw_disks: disks}
    fig, axes = plt.subplots(
        len(panels), 1, figsize=(12, 1.2 + 2.9 * len(panels)), sharex=True, squeeze=False
    )
    origin = clock_origin(run)
    colours = phase_colours(list(run.phases["phase"]))
    for i, (ax, draw) in enumerate(zip(axes[:, 0], panels)):
        shade_phases(ax, run, origin, colours, numbered=(i == 0))
        draw(ax, tables[draw], origin)
        ax.grid(alpha=0.3)
    axes[-1, 0].set_xlabel("seconds since the first phase's start (common clock)")
    axes[-1, 0].set_xlim(left=min(0.0, float((samples["t"] - samples["dt"]).min() - origin)))
    if len(run.phases):
        band_handles = [
            plt.Rectangle((0, 0), 1, 1, color=colours[r.phase], alpha=0.3)
            for r in run.phases.itertuples()
        ]
        band_labels = [f"{r.index}: {phase_label(r)}" for r in run.phases.itertuples()]
        fig.legend(
            band_handles,
            band_labels,
            loc="upper center",
            bbox_to_anchor=(0.5, 0.0),
            ncol=min(4, len(band_labels)),
            title="phases (band numbers)",
            fontsize=9,
        )
    host = samples["host"].iloc[0]
    fig.suptitle(
        f"Server {safe(host)} ({safe(samples['source'].iloc[0])}): " "CPU by mode and load"
    )
    fig.tight_layout()
    save(fig, outdir, name)
    return True


# ---------------------------------------------------------------- errors


def error_matrix(run: "Run") -> Optional[pd.DataFrame]:
    """Failed calls, rank x errno name, summed over phases and ops."""
    errors = run.all_errors()
    if errors.empty:
        return None
    matrix = errors.pivot_table(
        index="rank", columns="errno_name", values="count", aggfunc="sum", fill_value=0
    )
    io_ranks = sorted(set(run.rank_info["rank"]) | set(matrix.index))
    if len(io_ranks) <= MAX_HEATMAP_RANKS:
        matrix = matrix.reindex(io_ranks, fill_value=0)
    return matrix


def errors(run: "Run", outdir: "OutputDir", name: str) -> bool:
    matrix = error_matrix(run)
    if matrix is None:
        return False
    nrows, ncols = matrix.shape
    fig, ax = plt.subplots(figsize=(3.2 + 1.0 * ncols, min(14, 1.8 + 0.32 * nrows)))
    image = ax.imshow(matrix.values, aspect="auto", cmap="Reds", vmin=0, interpolation="nearest")
    ax.set_xticks(range(ncols))
    ax.set_xticklabels(
        [safe(c) for c in matrix.columns],
        rotation=30 if ncols > 4 else 0,
        ha="right" if ncols > 4 else "center",
    )
    if nrows <= 40:
        ax.set_yticks(range(nrows))
        ax.set_yticklabels(matrix.index)
    if nrows * ncols <= MAX_ANNOTATED_CELLS:
        annotate_counts(ax, matrix.values)
    ax.set_xlabel("errno")
    ax.set_ylabel("rank")
    ax.set_title("Failed calls by rank and errno\n(all phases and ops)")
    fig.colorbar(image, ax=ax, label="failed calls")
    save(fig, outdir, name)
    return True


def annotate_counts(ax: plt.Axes, values: np.ndarray) -> None:
    top = values.max()
    for (row, col), count in np.ndenumerate(values):
        if count:
            ax.text(
                col,
                row,
                f"{count:,}",
                ha="center",
                va="center",
                fontsize=8,
                color="white" if count > 0.6 * top else "black",
            )


# ---------------------------------------------------------------- retrans


def retrans(run: "Run", outdir: "OutputDir", name: str) -> bool:
    ops = run.client_ops()
    if ops.empty:
        return False
    names = dict(zip(run.hosts["host"], run.hosts["hostname"]))
    table = ops.pivot_table(
        index="phase", columns="host", values="retrans", aggfunc="sum", fill_value=0
    )
    table = table.reindex([p for p in run.phase_names if p in table.index])
    nphases, nhosts = table.shape
    fig, ax = plt.subplots(figsize=(max(7, 1.0 + nphases * (0.4 + 0.18 * nhosts)), 4.5))
    width = 0.8 / nhosts
    x = np.arange(nphases)
    for i, host in enumerate(table.columns):
        ax.bar(
            x - 0.4 + (i + 0.5) * width,
            table[host],
            width=width,
            label=safe(names.get(host, f"host {host}")),
        )
    ax.set_xticks(x)
    ax.set_xticklabels([safe(p) for p in table.index], rotation=30, ha="right")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel("retransmissions (trans - ops)")
    ax.set_title(
        "NFS client retransmissions per host and phase"
        + ("  (none)" if not table.values.any() else "")
    )
    ax.grid(axis="y", alpha=0.3)
    ax.legend(title="client host", loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=9)
    save(fig, outdir, name)
    return True


# ---------------------------------------------------------------- clients


def client_times(
    run: "Run", outdir: "OutputDir", name: str, times: Optional[Mapping[str, pd.DataFrame]] = None
) -> bool:
    """clients_per_rank > 1: per phase a histogram of the seconds each
    client spent in its iterations (Run.client_times: the sum of its rows'
    t_end - t_start), with the median, p99 and max marked; one panel per
    phase, a log count axis when a few slow clients would vanish beside
    the many. times: {phase: Run.client_times(phase)} already computed
    (herd-report), else read here a phase at a time. False for a run of one
    client per rank or without rows."""
    if run.clients_per_rank <= 1:
        return False
    frames = {}
    for phase in run.phase_names:
        frame = run.client_times(phase) if times is None else times.get(phase)
        if frame is not None and len(frame):
            frames[phase] = frame["seconds"].to_numpy(dtype=float)
    if not frames:
        return False
    colours = phase_colours(list(run.phases["phase"]))
    labels = {row.phase: phase_label(row) for row in run.phases.itertuples()}
    count = len(frames)
    ncols = 1 if count == 1 else 2 if count <= 8 else 3
    nrows = math.ceil(count / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(12, min(40, 1.4 + 2.6 * nrows)), squeeze=False)
    layout_inches(
        fig,
        nrows,
        ncols,
        Margins(left=0.8, right=0.25, bottom=0.55, top=0.75, wgap=0.85, hgap=0.85),
    )
    for ax, (phase, secs) in zip(axes.ravel(), frames.items()):
        secs = secs[np.isfinite(secs)]
        if not len(secs):
            ax.set_axis_off()
            continue
        # sqrt(n) bins, 10 to MAX_CLIENT_BINS: never a width from the data
        # ("auto"), which a tight bulk and one far straggler make billions.
        bins = min(MAX_CLIENT_BINS, max(10, math.isqrt(len(secs))))
        # one filled outline, not a patch per bin (most of a figure's time)
        counts, edges = np.histogram(secs, bins=bins)
        ax.stairs(counts, edges, fill=True, color=colours.get(phase, SAFE_COLOURS[0]))
        shown = counts[counts > 0]
        if len(shown) and shown.max() / shown.min() >= 100:
            log_scale(ax, "y", human_count)
        else:
            ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        for q, style, what in ((0.5, "-", "median"), (0.99, "--", "p99"), (1.0, ":", "max")):
            value = float(np.quantile(secs, q))
            ax.axvline(
                value,
                color="black" if q < 1 else ERROR_COLOUR,
                ls=style,
                lw=1.2,
                label=f"{what} {human_seconds(value)}",
            )
        ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: human_seconds(x) if x > 0 else "0"))
        title = f"{labels.get(phase, safe(phase))}: {len(secs):,} clients"
        if counts.max() < NO_OFFSET_BELOW:  # (a linear count axis from 0, or log)
            title_fixed(ax, title, fontsize=10)
        else:
            ax.set_title(title, fontsize=10)
        ax.set_xlabel("seconds per client (sum of its iterations)", fontsize=9)
        ax.set_ylabel("clients", fontsize=9)
        ax.grid(axis="x", alpha=0.3)
        ax.legend(fontsize=8, loc="upper right", framealpha=0.9)
    for ax in axes.ravel()[count:]:
        ax.set_axis_off()
    fig.suptitle(
        f"Time per client: run {safe(run.attrs.get('run_id', run.label))}, "
        f"{int(run.attrs.get('nranks', 0) or 0):,} ranks x "
        f"{run.clients_per_rank:,} clients"
    )
    save(fig, outdir, name, tight="inside")
    return True


# ---------------------------------------------------------------- load curve

KNEE_COLOUR = "#2ca02c"
# The steps column a ladder's curve is drawn against, per kind
# (herd_knee.ladder_kind), and its axis label: a ladder in ranks or in
# clients against its own load, one in offered load against what it
# achieved (vdbench's curve: response time against achieved throughput).
CURVE_X = {
    "ranks": ("active_ranks", "active ranks (clients doing I/O)"),
    "clients": ("active_clients", "active clients (of every rank)"),
    "rate": ("achieved_per_s", "achieved calls/s (every client's paced calls)"),
}
# The latency panel's lines per kind, (column, label, line style), the first
# the main one (marked; the only one of herd-compare's overlay): a ladder in
# offered load shows its calls' response time (from their intended instant).
CLOSED_LATENCY = (("p99_s", "p99", "-"), ("p50_s", "p50", ":"), ("max_s", "max", "--"))
CURVE_LATENCY = {
    "ranks": CLOSED_LATENCY,
    "clients": CLOSED_LATENCY,
    "rate": (
        ("response_p99_s", "response p99", "-"),
        ("response_p50_s", "response p50", ":"),
        ("p99_s", "main call p99", "--"),
    ),
}


def curve_x(steps: pd.DataFrame, kind: herd_knee.LadderKind) -> np.ndarray:
    """A ladder's x values in its kind's units (CURVE_X), NaN for the steps
    that did not run."""
    return ran_only(steps, steps[CURVE_X[kind][0]].astype(float).to_numpy())


def ran_only(steps: pd.DataFrame, values: np.ndarray) -> np.ndarray:
    """values of a ladder's steps with NaN (no point drawn) for the steps
    that did not run (status not-run: their 0 is no measurement)."""
    if "status" not in steps:
        return values
    return np.where((steps["status"] == "not-run").to_numpy(), np.nan, values)


def point_notes(
    ax: plt.Axes, steps: pd.DataFrame, kind: herd_knee.LadderKind, x: np.ndarray, y: np.ndarray
) -> None:
    """Each point's load in small text where x does not show it
    (herd_knee.step_load): the offered calls/s of a ladder in offered load,
    the active clients of a ladder in ranks of many clients per rank."""
    what: herd_knee.LadderKind
    if kind == "rate":
        what = "rate"
    elif kind == "ranks" and (steps["active_clients"] > steps["active_ranks"]).any():
        what = "clients"
    else:
        return
    for xi, yi, row in zip(x, y, steps.to_dict("records")):
        if np.isfinite(xi) and np.isfinite(yi):
            ax.annotate(
                safe(herd_knee.step_load(row, what)),
                (xi, yi),
                xytext=(4, -10),
                textcoords="offset points",
                fontsize=7,
                color="0.3",
            )


def count_axis(ax: plt.Axes, counts: Iterable[float], label: str) -> None:
    """Active ranks or clients on x: a log axis for ladders spanning a
    factor of 4 or more (1, 2, 4 ... or 10, 100, 1000 evenly spaced), a
    tick labelled with each step's count."""
    counts = sorted({int(c) for c in counts if np.isfinite(c)})
    if counts and counts[0] > 0 and counts[-1] / counts[0] >= 4:
        ax.set_xscale("log", base=2)
    ax.set_xticks(counts)
    ax.set_xticklabels([f"{c:,}" for c in counts], fontsize=8)
    ax.minorticks_off()
    ax.set_xlabel(label)


def curve_axis(
    ax: plt.Axes, kind: herd_knee.LadderKind, x: Union[Sequence[float], np.ndarray]
) -> None:
    """The load curve's x axis: the steps' counts (count_axis), or for a
    ladder in offered load the achieved calls/s (log from a decade up)."""
    if kind != "rate":
        count_axis(ax, x, CURVE_X[kind][1])
        return
    v = np.asarray(x, dtype=float)
    v = v[np.isfinite(v) & (v > 0)]
    if len(v) and v.max() / v.min() >= 10:
        log_scale(ax, "x", human_count, (v.min(), v.max()))
    else:
        ax.xaxis.set_major_formatter(FuncFormatter(human_count))
    ax.set_xlabel(CURVE_X[kind][1])


def latency_axis(ax: plt.Axes, values: npt.ArrayLike) -> None:
    """Seconds on y: a log axis when the values span a decade or more, else
    linear from 0 (a log axis inside one decade shows no labelled tick)."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v) & (v > 0)]
    if len(v) and v.max() / v.min() >= 10:
        log_scale(ax, "y", human_seconds, (v.min(), v.max()))
    else:
        ax.set_ylim(0, 1.15 * v.max() if len(v) else 1)
        ax.yaxis.set_major_formatter(FuncFormatter(lambda x, _: human_seconds(x) if x > 0 else "0"))


def loadcurve(
    steps: Optional[pd.DataFrame],
    knee: Mapping[str, Any],
    outdir: "OutputDir",
    name: str,
    title: str,
) -> bool:
    """One ladder (herd_results.Run.ladder_steps, herd_knee.knee) in its
    own units (herd_knee.ladder_kind): top, throughput against active ranks, active
    clients or achieved calls/s, with the server's CPU (when sampled) on a
    second axis; bottom, the main call's p50 / p99 / max latency, or for a
    ladder in offered load its response p50 / p99 and the main call's p99.
    The knee is a green star and line named in the ladder's units
    (herd_knee.knee_text), steps with errors or stuck calls a red cross;
    the rule is the subtitle. False for no steps."""
    if steps is None or len(steps) == 0:
        return False
    metric, unit = knee["metric"], knee["unit"]
    kind = herd_knee.ladder_kind(steps)
    x, lines = curve_x(steps, kind), CURVE_LATENCY[kind]
    y = ran_only(steps, steps[metric].astype(float).to_numpy())
    bad = ((steps["errors"] > 0) | (steps["stuck"] > 0)).to_numpy()
    fig, (ax, lat) = plt.subplots(
        2, 1, figsize=(9, 7.5), sharex=True, gridspec_kw={"height_ratios": [3, 2]}
    )
    ax.plot(x, y, marker="o", color="#1f77b4", lw=1.8, label=f"{unit} (all active ranks)")
    point_notes(ax, steps, kind, x, y)
    cpu = steps["cpu_mean"].astype(float)
    if cpu.notna().any():
        right = ax.twinx()
        right.plot(
            x, 100 * cpu, marker="s", ls="--", color="0.45", lw=1.2, label="server CPU mean %"
        )
        right.plot(
            x,
            100 * steps["cpu_max"].astype(float),
            marker="^",
            ls=":",
            color="0.45",
            lw=1.0,
            label="server CPU max %",
        )
        right.set_ylim(0, 105)
        right.set_ylabel("server CPU %")
        right.legend(loc="lower right", fontsize=8)
    for n, (key, label, style) in enumerate(lines):
        values = steps[key].astype(float)
        if values.notna().any():
            lat.plot(
                x,
                values,
                marker="o" if n == 0 else None,
                ls=style,
                lw=1.8 if n == 0 else 1.0,
                color="#ff7f0e",
                label=label,
            )
    if not math.isnan(knee.get("p99_bound", math.nan)):
        lat.axhline(
            knee["p99_bound"],
            color="0.5",
            lw=0.8,
            ls="-.",
            label=f"p99 bound ({knee['p99_factor']:g} x step 1)",
        )
    i = knee.get("saturation_index")
    if i is not None:
        for a in (ax, lat):
            a.axvline(x[i], color=KNEE_COLOUR, lw=1.2, ls="--")
        ax.plot(
            [x[i]],
            [y[i]],
            marker="*",
            markersize=18,
            color=KNEE_COLOUR,
            markeredgecolor="black",
            ls="none",
            label=safe(herd_knee.knee_text(knee, steps)),
        )
    if bad.any():
        ax.plot(
            x[bad],
            y[bad],
            marker="X",
            markersize=11,
            color=ERROR_COLOUR,
            ls="none",
            label="errors or stuck calls",
        )
        for a in (ax, lat):
            a.axvline(x[bad][0], color=ERROR_COLOUR, lw=1.0, ls=":")
    top = np.nanmax(y, initial=0)
    ax.set_ylim(0, 1.3 * top if top > 0 else 1)  # room for the legend above the curve
    ax.set_ylabel(unit)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", fontsize=8)
    latency_axis(
        lat,
        np.append(
            steps[[key for key, _, _ in lines]].to_numpy(dtype=float).ravel(),
            knee.get("p99_bound", math.nan),
        ),
    )
    if lat.lines:
        lat.legend(loc="upper left", fontsize=8)
    op = steps["main_op"].dropna()
    lat.set_ylabel(f"{safe(op.iloc[0]) if len(op) else 'main call'} latency")
    lat.grid(alpha=0.3, which="both")
    curve_axis(lat, kind, x)
    ax.set_title(safe(knee["rule"], limit=400), fontsize=8, wrap=True)
    fig.suptitle(safe(title, limit=120))
    fig.tight_layout()
    save(fig, outdir, name, tight="inside")
    return True


# herd-compare's curve of one run: (its label, its ladder_steps, herd_knee.knee of them).
RunCurve = tuple[str, pd.DataFrame, Mapping[str, Any]]


def loadcurves(curves: Iterable[RunCurve], outdir: "OutputDir", name: str, title: str) -> bool:
    """herd-compare: [(label, steps, knee)] of one ladder over several runs
    in the ladder's units (herd_knee.ladder_kind of every run's steps together):
    throughput (top) and the main latency line (bottom: p99, or response
    p99 for a ladder in offered load) against active ranks, active clients
    or achieved calls/s, one colour per run, its knee a star, error steps a
    red cross. False for no curves."""
    curves = [c for c in curves if len(c[1])]
    if not curves:
        return False
    kind = herd_knee.ladder_kind(pd.concat([c[1] for c in curves], ignore_index=True))
    key, label, _ = CURVE_LATENCY[kind][0]
    fig, (ax, lat) = plt.subplots(
        2, 1, figsize=(9, 7.5), sharex=True, gridspec_kw={"height_ratios": [3, 2]}
    )
    units, xs = set(), []
    for n, (run_label, steps, knee) in enumerate(curves):
        colour = plt.get_cmap("tab10")(n % 10)
        x = curve_x(steps, kind)
        y = ran_only(steps, steps[knee["metric"]].astype(float).to_numpy())
        xs += list(x)
        units.add(knee["unit"])
        ax.plot(x, y, marker="o", color=colour, lw=1.6, label=safe(run_label))
        point_notes(ax, steps, kind, x, y)
        lat.plot(x, steps[key].astype(float), marker="o", color=colour, lw=1.4)
        i = knee.get("saturation_index")
        if i is not None:
            ax.plot(
                [x[i]],
                [y[i]],
                marker="*",
                markersize=17,
                color=colour,
                markeredgecolor="black",
                ls="none",
            )
        bad = ((steps["errors"] > 0) | (steps["stuck"] > 0)).to_numpy()
        if bad.any():
            ax.plot(x[bad], y[bad], marker="X", markersize=10, color=ERROR_COLOUR, ls="none")
    ax.plot(
        [],
        [],
        marker="*",
        markersize=12,
        color="white",
        markeredgecolor="black",
        ls="none",
        label="knee",
    )
    if any(((c[1]["errors"] > 0) | (c[1]["stuck"] > 0)).any() for c in curves):
        ax.plot(
            [],
            [],
            marker="X",
            markersize=9,
            color=ERROR_COLOUR,
            ls="none",
            label="errors or stuck calls",
        )
    top = max(
        (np.nanmax(c[1][c[2]["metric"]].astype(float).to_numpy(), initial=0) for c in curves),
        default=0,
    )
    ax.set_ylim(0, 1.3 * top if top > 0 else 1)
    ax.set_ylabel(" / ".join(sorted(units)))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, title="run")
    latency_axis(lat, np.concatenate([c[1][key].astype(float).to_numpy() for c in curves]))
    lat.set_ylabel(f"main call {label}" if kind != "rate" else label)
    lat.grid(alpha=0.3, which="both")
    curve_axis(lat, kind, xs)
    ax.set_title(safe(curves[0][2]["rule_runs"], limit=400), fontsize=8, wrap=True)
    fig.suptitle(safe(title, limit=120))
    fig.tight_layout()
    save(fig, outdir, name)
    return True
