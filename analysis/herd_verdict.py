"""herd_verdict — the first lines of a report: where each load curve stalls,
what it achieved there, and the likely cause, read from the same clock.

    ladder_verdict(run, steps, knee) -> Verdict   one ladder (herd_knee.knee)
    phase_verdict(run, row) -> Verdict            one phase outside any ladder
    verdicts(run, curves) -> [Verdict]            the page's first section
    causes(run, step) -> [str]                    the limits one step shows

A ladder stalls at its knee (herd_knee.knee: the last step that still paid
off); the cause is read at the step after it, the first that did not pay
off, where the saturation shows. A ladder still growing at its last step
did not stall: the verdict says so and names any limit its last step
shows. The causes, each with its evidence, in this order (docs/analysis.md,
"The verdict", defines each threshold once):

- connections refused or reset: failed calls with errno ECONNREFUSED,
  ECONNRESET, ECONNABORTED, EPIPE or ENOTCONN, or any failed `connect`,
  with the connections the server kept (the phase's `connections_open`)
  where herd noted them;
- errors: any other failed calls (the most frequent errno);
- herd itself: its lag p99 at least 1 ms and 10 % of the response p99
  (herd's own `herd_limited` rule, results-format.md "Offered load");
- disk wait: a server disk busy DISK_BUSY of the time over the step's samples
  (mean), or CPUs waiting on I/O for IOWAIT_SHARE of their time;
- server CPU: the sampled host's CPU busy CPU_BUSY of the time (mean);
- one server thread: the busiest thread of `monitor_processes` at
  THREAD_BUSY of a core;
- every nfsd thread busy: under WOKEN_LOW of the requests found an idle
  kernel nfsd thread (pool_stats' woken share).

A pure reader: it takes a herd_results.Run, and a ladder's steps as
Run.ladder_steps gives them; it writes nothing.
"""
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping, Protocol, Sequence

import herd_knee
import herd_results

if TYPE_CHECKING:  # a type only: this module reads tables through herd_results
    import pandas as pd

CONNECTION_ERRNOS = ("ECONNREFUSED", "ECONNRESET", "ECONNABORTED", "EPIPE", "ENOTCONN")
LAG_FLOOR_S, LAG_SHARE = 1e-3, 0.10  # herd_limited (src/results/summary.c)
DISK_BUSY = 0.80
IOWAIT_SHARE = 0.20
CPU_BUSY = 0.85
THREAD_BUSY = 0.90
WOKEN_LOW = 0.25
FAILURE_CAUSES = ("connections refused", "errors (")  # the causes that are failed calls
FALL_SHARE = 0.25  # a step this far below the ladder's best: the server collapses


class StepsTable(Protocol):
    """A ladder's steps as verdicts() reads them (herd-report's Table)."""

    @property
    def frame(self) -> "pd.DataFrame":
        ...


class Curve(Protocol):
    """One ladder as verdicts() reads it (herd-report's LoadCurve)."""

    @property
    def ladder(self) -> str:
        ...

    @property
    def table(self) -> StepsTable:
        ...

    @property
    def knee(self) -> Mapping[str, Any]:
        ...


@dataclass
class Verdict:
    """One line of the first screen: what (a ladder or phase), the
    sentence, and the causes named in it (for tests and herd-compare)."""

    subject: str
    text: str
    causes: list[str] = field(default_factory=list)
    stalled: bool = False


def _num(value: Any) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        return math.nan
    return v if math.isfinite(v) else math.nan


def _pct(share: float) -> str:
    return f"{100 * share:.0f}%"


def _errors(run: herd_results.Run, phase: str) -> tuple[int, int, str]:
    """(connection failures, other failures, the other failures' top errno)
    of a phase's errors table."""
    try:
        errs = run.errors(phase)
    except herd_results.ResultsError:
        return 0, 0, ""
    if errs.empty:
        return 0, 0, ""
    names = errs["errno_name"].astype(str)
    conn = names.isin(CONNECTION_ERRNOS) | (errs["op"].astype(str) == "connect")
    counts = errs["count"].astype(float)
    other = errs[~conn]
    top = ""
    if len(other):
        top = str(other.groupby(other["errno_name"].astype(str))["count"].sum().idxmax())
    return int(counts[conn].sum()), int(counts[~conn].sum()), top


def _disk(run: herd_results.Run, t0: float, t1: float) -> tuple[str, float, float]:
    """(the busiest disk, its mean busy share, the CPUs' mean iowait share)
    over the monitor samples meeting [t0, t1]; NaN where not sampled."""
    device, busy = "", math.nan
    disks = run.disks()
    if len(disks):
        met = herd_results.meeting(disks, t0, t1)
        if len(met):
            means = met.assign(busy=met["busy"].clip(upper=1.0)).groupby("device")["busy"].mean()
            if means.notna().any():
                device, busy = str(means.idxmax()), float(means.max())
    samples = run.server_samples(t0, t1) if len(run.samples()) else None
    iowait = math.nan
    if samples is not None and "cpu_iowait" in samples and len(samples):
        iowait = _num(samples["cpu_iowait"].mean())
    return device, busy, iowait


def _shared_cpu(run: herd_results.Run) -> str:
    """What the server CPU figure also counts when client ranks of the run
    share the sampled host (the root attribute monitor_client_ranks > 0):
    '; the host's CPUs, shared with N client ranks of this run'; else ''."""
    ranks = herd_results.monitor_client_ranks(run.attrs)
    if ranks <= 0:
        return ""
    return f"; the host's CPUs, shared with {ranks:,} client rank{'' if ranks == 1 else 's'} of this run"


def causes(run: herd_results.Run, step: Mapping[str, Any]) -> list[str]:
    """The limits one step (a steps row, or phase_step of a phase) shows,
    each with its figure, in the module's order; [] when none."""
    out = []
    phase = str(step.get("phase") or "")
    conn, other, top = _errors(run, phase) if phase in run.phase_names else (0, 0, "")
    if conn:
        kept = run.phase_attrs(phase).get("connections_open")
        held = f"; the server kept about {int(kept):,} connections" if kept is not None else ""
        out.append(f"connections refused or reset ({conn:,} failed calls{held})")
    if other:
        out.append(f"errors ({other:,} failed calls, mostly {top})")
    lag, resp = _num(step.get("lag_p99_s")), _num(step.get("response_p99_s"))
    if lag >= LAG_FLOOR_S and lag >= LAG_SHARE * resp:
        out.append(
            f"herd itself (its lag p99 {herd_knee.human_seconds(lag)} of a response "
            f"p99 {herd_knee.human_seconds(resp)}: add ranks)"
        )
    t0, elapsed = _num(step.get("t_start")), _num(step.get("elapsed"))
    if not math.isnan(t0) and not math.isnan(elapsed):
        device, busy, iowait = _disk(run, t0, t0 + elapsed)
        if busy >= DISK_BUSY:
            out.append(f"disk wait ({device} busy {_pct(busy)})")
        elif iowait >= IOWAIT_SHARE:
            out.append(f"disk wait (CPUs {_pct(iowait)} in iowait)")
    cpu = _num(step.get("cpu_mean"))
    if cpu >= CPU_BUSY:
        out.append(
            f"server CPU saturated (mean {_pct(cpu)}, max {_pct(_num(step.get('cpu_max')))}"
            f"{_shared_cpu(run)})"
        )
    thread = _num(step.get("proc_thread_max"))
    if thread >= THREAD_BUSY:
        out.append(f"one server thread at {_pct(thread)} of a core")
    woken = _num(step.get("nfsd_woken_share"))
    if woken < WOKEN_LOW:
        threads = _num(step.get("nfsd_threads"))
        one = threads == 1
        pool = (
            "the one nfsd thread"
            if one
            else (f"all {threads:.0f} nfsd threads" if threads > 1 else "every nfsd thread")
        )
        idle = "it idle" if one else "one idle"
        share = (
            f"no request found {idle}"
            if woken == 0
            else f"only {_pct(woken)} of requests found {idle}"
        )
        out.append(f"{pool} busy ({share})")
    return out


def _seen(step: Mapping[str, Any]) -> str:
    """What the monitor did see at a step with no cause: its figures."""
    parts = []
    cpu = _num(step.get("cpu_mean"))
    if not math.isnan(cpu):
        parts.append(f"server CPU {_pct(cpu)}")
    woken = _num(step.get("nfsd_woken_share"))
    if not math.isnan(woken):
        parts.append(f"nfsd woken {_pct(woken)}")
    if not parts:
        return "unknown (no monitor sampled the server)"
    return "no limit in the monitor's figures (" + ", ".join(parts) + ")"


def _figures(step: Mapping[str, Any], kind: herd_knee.LadderKind, metric: str) -> str:
    """'71.0 MiB/s, p99 12 ms' or, offered load, 'achieved 780/s (97.5% of
    the calls due sent), response p99 4 ms'."""
    if kind == "rate":
        units, due = _num(step.get("units")), _num(step.get("due"))
        sent = f" ({100 * units / due:.1f}% of the calls due sent)" if due > 0 else ""
        return (
            f"achieved {herd_knee.rate_text(step.get('achieved_per_s'))}/s{sent}, response p99 "
            f"{herd_knee.human_seconds(_num(step.get('response_p99_s')))}"
        )
    unit = herd_knee.UNITS.get(metric, metric)
    return (
        f"{_num(step.get(metric)):,.1f} {unit}, p99 "
        f"{herd_knee.human_seconds(_num(step.get('p99_s')))}"
    )


def _where(step: Mapping[str, Any], kind: herd_knee.LadderKind) -> str:
    load = herd_knee.step_load(step, kind)
    if kind == "clients":
        return f"{load} on {herd_knee.plural(step.get('active_ranks'), 'rank')}"
    return load


def _end_of_climb(rows: list[dict[str, Any]], knee: Mapping[str, Any]) -> tuple[Any, Any, str]:
    """(the stall step's row position, the position where the climb ended,
    why it ended): the knee and the step after it, or when an earlier
    step (or that one) had errors or stuck calls, the step before the
    first such step and that step. (i, None, "") for no stall."""
    i, j = knee.get("saturation_index"), knee.get("stopped_index")
    why = str(knee.get("stopped") or "").split(": ", 1)[-1]
    e = knee.get("first_error_index")
    if e is not None and (j is None or e <= j):
        before = [n for n, r in enumerate(rows[:e]) if r.get("status") != herd_knee.NOT_RUN]
        i, j = (before[-1] if before else e), e
        why = (
            f"{herd_knee.plural(rows[e].get('errors'), 'error')}, "
            f"{herd_knee.step_int(rows[e].get('stuck'))} stuck"
        )
    return i, j, why


def _collapse(
    run: herd_results.Run,
    rows: list[dict[str, Any]],
    said: set[int],
    kind: herd_knee.LadderKind,
    metric: str,
) -> str:
    """' Throughput peaks at P: figures, then falls N% by Q: cause' when a
    step after the ladder's best one falls FALL_SHARE or more below it (a
    server that collapses under more load, past a knee in latency), read
    at the first such step Q; '' when none does, for a ladder in offered
    load (its knee already says what was missed), or when Q is a step the
    verdict named already (said)."""
    if kind == "rate":
        return ""
    ran = [
        n
        for n, r in enumerate(rows)
        if r.get("status") != herd_knee.NOT_RUN and not math.isnan(_num(r.get(metric)))
    ]
    if not ran:
        return ""
    peak = max(ran, key=lambda n: _num(rows[n].get(metric)))
    best = _num(rows[peak].get(metric))
    fell = [n for n in ran if n > peak and _num(rows[n].get(metric)) <= (1 - FALL_SHARE) * best]
    if not fell or fell[0] in said or not best > 0:
        return ""
    q = fell[0]
    drop = 100 * (1 - _num(rows[q].get(metric)) / best)
    found = causes(run, rows[q])
    return (
        f" Throughput peaks at {_where(rows[peak], kind)}: {_figures(rows[peak], kind, metric)}, "
        f"then falls {drop:.0f}% by {_where(rows[q], kind)}: "
        + ("; ".join(found) if found else _seen(rows[q]))
        + "."
    )


def ladder_verdict(
    run: herd_results.Run, name: str, steps: herd_knee.Steps, knee: Mapping[str, Any]
) -> Verdict:
    """A ladder's line: where it stalls in the ladder's units (the knee, or
    the step before the first one with errors), what it achieved there,
    and the likely cause read where the climb ended (_end_of_climb)."""
    rows = herd_knee.step_rows(steps)
    if knee.get("saturation_index") is None:
        return Verdict(name, f"ladder {name}: no step ran")
    kind = herd_knee.ladder_kind(steps)
    metric = knee["metric"]
    ran = [n for n, r in enumerate(rows) if r.get("status") != herd_knee.NOT_RUN]
    i, j, why = _end_of_climb(rows, knee)
    at = f"{_where(rows[i], kind)} (step {rows[i].get('step', i + 1)} of {len(rows)})"
    if j is None:
        found = causes(run, rows[ran[-1]])
        if len(ran) == 1:
            text = f"ladder {name}: one step, {at}: {_figures(rows[i], kind, metric)}"
        else:
            text = f"ladder {name}: no stall up to {at}: {_figures(rows[i], kind, metric)}"
        if found:
            text += (
                "; limits seen: " if len(ran) == 1 else "; limits seen at the last step: "
            ) + "; ".join(found)
        elif len(ran) > 1:
            text += "; the server kept up, so add load to find its limit"
        return Verdict(name, text, found)
    found = causes(run, rows[j])
    beyond = f" ({why})" if j == i else f"; beyond it, at {_where(rows[j], kind)}: {why}"
    # Throughput still paying off where only the p99 bound ended the climb:
    # a knee in latency (the hockey stick's), not a stall.
    grew = (
        kind != "rate"
        and j != i
        and _num(rows[j].get(metric)) > (1 + knee.get("growth", 0.10)) * _num(rows[i].get(metric))
        and not _num(rows[j].get("errors")) > 0
    )
    text = (
        f"ladder {name}: {'latency knee' if grew else 'stalls'} at {at}: "
        f"{_figures(rows[i], kind, metric)}{beyond}. "
        "Likely cause: " + ("; ".join(found) if found else _seen(rows[j]))
    )
    e = knee.get("first_error_index")
    if e is not None and e > j:  # errors further up the ladder: their own cause
        failed = [c for c in causes(run, rows[e]) if c.startswith(FAILURE_CAUSES)]
        head = "First errors" if _num(rows[e].get("errors")) > 0 else "First stuck calls"
        text += f". {head} at {_where(rows[e], kind)}: " + (
            "; ".join(failed)
            or f"{herd_knee.plural(rows[e].get('errors'), 'error')}, "
            f"{herd_knee.step_int(rows[e].get('stuck'))} stuck"
        )
        found += [c for c in failed if c not in found]
    collapse = _collapse(run, rows, {i, j}, kind, metric)
    if collapse:
        text += "." + collapse
    return Verdict(name, text, found, stalled=True)


def phase_step(run: herd_results.Run, row: Mapping[str, Any]) -> dict[str, Any]:
    """A run.phases row as the step figures causes() and _figures read:
    the main call's p99 under p99_s, the paced call's under response_p99_s
    and lag_p99_s."""
    step = dict(row)
    main = str(run.phase_attrs(str(row["phase"])).get("summary_main_op") or "")
    step["p99_s"] = row.get(f"{main}_p99_s", math.nan) if main else math.nan
    step["response_p99_s"] = row.get("response_p99_s", math.nan)
    step["lag_p99_s"] = row.get("lag_p99_s", math.nan)
    return step


def phase_verdict(run: herd_results.Run, row: Mapping[str, Any]) -> Verdict:
    """A phase outside any ladder: its main figure, p99, errors and the
    limits its step shows."""
    step = phase_step(run, row)
    name = str(row["phase"])
    metric = herd_knee.throughput_metric(row.get("kind"))
    kind: herd_knee.LadderKind = "rate" if _num(row.get("rate")) > 0 else "ranks"
    text = f"phase {name}: {_figures(step, kind, metric)}"
    errors = _num(row.get("errors"))
    text += f", {errors:,.0f} errors" if errors > 0 else ", no errors"
    found = causes(run, step)
    if found:
        text += "; limits seen: " + "; ".join(found)
    return Verdict(name, text, found)


def verdicts(run: herd_results.Run, curves: Sequence[Curve]) -> list[Verdict]:
    """The first section: one line per ladder (curves: herd-report's
    LoadCurve, with ladder, table.frame and knee), then one per phase
    outside every ladder."""
    out = [ladder_verdict(run, c.ladder, c.table.frame, c.knee) for c in curves]
    in_ladders: set[str] = set()

    for c in curves:
        in_ladders.update(str(p) for p in c.table.frame["phase"])
    for row in run.phases.to_dict("records"):
        if str(row["phase"]) not in in_ladders:
            out.append(phase_verdict(run, row))
    return out
