"""herd_knee — where a load ladder stops scaling: the knee of its load curve.

A pure module (no file, no plot, no pandas needed): it takes a ladder's
step table, one row per step in step order, as Run.ladder_steps() returns
it (a DataFrame, or any sequence of mappings), and states the answer:

    knee(steps, growth=0.10, p99_factor=4.0, kept=0.95) -> {
        "saturation": step number of the knee (None for no steps),
        "first_error": first step with errors or stuck calls (None: none),
        "not_run": the steps not run (status not-run: an earlier step broke
                   the ladder's stop_when), "not_run_note": the first one's note,
        "rule": one line stating the rule with its numbers, ...}
    describe(result, steps) -> one line naming the knee with its numbers
    ladder_kind(steps)      -> "ranks", "clients" or "rate": what the steps change
    knee_text(result, steps) -> "knee: step 3 (500 clients on 2 ranks, 50.2 MiB/s)"
    step_load(row, kind)    -> one step's load in its ladder's units: "500 clients"
    throughput_metric(kind) -> "mib_per_s" or "ops_per_s"
    file_slug(name, taken)  -> a ladder name made safe for a file name

The rule (docs/analysis.md, "Load curves"): starting from step 1, a step
extends the climb when its throughput grew by more than `growth` (a
fraction) over the previous step's while its main call's p99 stayed under
`p99_factor` x step 1's p99. The knee is the last step of that climb: the
last step that still paid off before the first one that did not. So a
curve that never stops growing has its knee at its last step (the server
was not saturated: add ranks), one flat from the start at step 1, and a
p99 that blows up ends the climb even while throughput still grows.
Throughput is MiB/s for kinds that move data (write, read, md5) and calls/s
for the others (lock, storm, meta), as throughput_metric says. A ladder in
offered load (rate_steps, rate_curve) climbs by SPECstorage's rule: while
each step sent at least `kept` (95%) of the calls due with a response p99
under p99_factor x step 1's; the knee is the last offered load so met. Steps with
status `not-run` (rows of the steps table that an earlier step's broken
`stop_when` kept from running: no figures) take no part in the climb; the
result names them.
"""
import math
import re
from typing import Any, Literal, Mapping, Optional

DATA_KINDS = ("write", "read", "md5")
NOT_RUN = "not-run"  # a steps-table row of a step that did not run
UNITS = {"mib_per_s": "MiB/s", "ops_per_s": "calls/s"}
# What a ladder's steps change (ladder_kind): ranks (ranks_active,
# ranks_step), clients (clients_active) or the offered load (rate_steps,
# rate_curve); and the steps column that holds each one's load.
LadderKind = Literal["ranks", "clients", "rate"]
Steps = Any  # a ladder's steps: a DataFrame or any sequence of mappings (_rows)
LOAD_COLUMNS = {"ranks": "active_ranks", "clients": "active_clients", "rate": "offered_per_s"}


def file_slug(name: Any, taken: set[str]) -> str:
    """A ladder name from a results file (untrusted: any bytes) as a safe,
    unique file-name part: only letters, digits, '.', '_' and '-', no
    leading dot, at most 60 characters; a name already in taken (a set,
    updated) gets -2, -3 ..."""
    if isinstance(name, (bytes, bytearray)):
        name = bytes(name).decode("utf-8", errors="replace")
    slug = re.sub(r"[^A-Za-z0-9._-]", "_", str(name))[:60].lstrip(".") or "ladder"
    unique, n = slug, 1
    while unique in taken:
        n += 1
        unique = f"{slug}-{n}"
    taken.add(unique)
    return unique


def throughput_metric(kind: Optional[str]) -> str:
    """The step column a kind's load curve plots: MiB/s when it moves data."""
    return "mib_per_s" if kind in DATA_KINDS else "ops_per_s"


def step_rows(steps: Steps) -> list[dict[str, Any]]:
    """Steps as a list of dicts, whatever the container."""
    if hasattr(steps, "to_dict"):
        return steps.to_dict("records")
    return [dict(r) for r in steps]


def _number(value: Any) -> float:
    """A float, NaN for anything that is not a finite number."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        return math.nan
    return v if math.isfinite(v) else math.nan


def _count(value: Any) -> float:
    v = _number(value)
    return 0 if math.isnan(v) else v


def human_seconds(seconds: float) -> str:
    """3 ms, 250 us, 1.5 s: the p99 bound as the rule line shows it."""
    if math.isnan(seconds):
        return "-"
    for scale, unit in ((1, "s"), (1e-3, "ms"), (1e-6, "us")):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds * 1e9:.3g} ns"


def knee(
    steps: Steps,
    growth: float = 0.10,
    p99_factor: float = 4.0,
    metric: Optional[str] = None,
    kept: float = 0.95,
) -> dict[str, Any]:
    """The knee and the first error step of a ladder (see the module text).

    steps: rows with step, active_ranks, the metric column (mib_per_s or
    ops_per_s; by default throughput_metric of the rows' kind), p99_s,
    errors and stuck, in step order. Returns a dict: saturation and
    first_error (step numbers or None), saturation_index and
    first_error_index (row positions or None), metric, unit, p99_bound (s;
    NaN when step 1 has no p99), stopped (why the climb ended, or None
    when it reached the last step) and stopped_index (that step's row
    position, or None), and rule (one line).

    A ladder in offered load (ladder_kind 'rate') climbs by SPECstorage's
    rule instead: a step extends the climb while it sent at least `kept`
    of the calls due (units / due) and its response p99 stayed under
    p99_factor x step 1's; metric stays the throughput its plots draw."""
    if not growth >= 0 or not p99_factor > 0 or not 0 < kept <= 1:
        raise ValueError(
            f"knee: growth {growth} must be >= 0, p99_factor {p99_factor} > 0 "
            f"and kept {kept} in (0, 1]"
        )
    every = step_rows(steps)
    # Row positions of the steps that ran: the climb is over these alone,
    # and the indexes returned are positions in steps.
    ran = [i for i, r in enumerate(every) if r.get("status") != NOT_RUN]
    rows = [every[i] for i in ran]
    not_run = [every[i] for i in range(len(every)) if every[i].get("status") == NOT_RUN]
    if metric is None:
        metric = throughput_metric((rows or every)[0].get("kind") if every else None)
    unit = UNITS.get(metric, metric)
    rated = ladder_kind(every) == "rate" if every else False
    p99_key = "response_p99_s" if rated else "p99_s"
    base_p99 = _number(rows[0].get(p99_key)) if rows else math.nan
    bound = p99_factor * base_p99
    out = {
        "saturation": None,
        "saturation_index": None,
        "first_error": None,
        "first_error_index": None,
        "metric": metric,
        "unit": unit,
        "p99_bound": bound,
        "stopped": None,
        "stopped_index": None,
        "growth": growth,
        "p99_factor": p99_factor,
        "not_run": [r.get("step") for r in not_run],
        "not_run_note": str(not_run[0].get("note") or "") if not_run else "",
    }
    what = "response p99" if rated else "p99"
    p99_text = (
        f"{what} < {p99_factor:g} x step 1's ({human_seconds(bound)})"
        if not math.isnan(bound)
        else f"{what} not bounded (step 1 has none)"
    )
    if rated:
        rule = (
            "knee = last step of the climb from step 1 in which each step sent "
            f">= {100 * kept:g}% of the calls due with {{p99}}; "
            "first error = first step with errors or stuck calls"
        )
    else:
        rule = (
            "knee = last step of the climb from step 1 in which each step's {unit} grew "
            "> {growth:g}% over the previous step with {p99}; "
            "first error = first step with errors or stuck calls"
        )
    out["rule"] = rule.format(unit=unit, growth=100 * growth, p99=p99_text)
    # Over several runs, each with its own step 1: one bound per run
    # (describe gives it), the rule without a number.
    out["rule_runs"] = rule.format(
        unit=unit, growth=100 * growth, p99=f"{what} < {p99_factor:g} x the run's own step 1 {what}"
    )
    if not rows:
        return out
    climb, first = 0, 0 if rated else 1
    for i in range(first, len(rows)):
        p99 = _number(rows[i].get(p99_key))
        bounded = math.isnan(bound) or p99 < bound
        if rated:
            share = (
                _number(rows[i].get("units")) / _number(rows[i].get("due"))
                if _number(rows[i].get("due")) > 0
                else math.nan
            )
            paid = not share < kept  # NaN (nothing due): no evidence against it
            gain = f"sent {100 * share:.1f}% of the calls due"
        else:
            before, now = _number(rows[i - 1].get(metric)), _number(rows[i].get(metric))
            paid = now > (1.0 + growth) * before if not math.isnan(before) else False
            gain = (
                unit
                + " "
                + (
                    f"{round(100 * (now / before - 1)) + 0:+d}%"
                    if before > 0 and not math.isnan(now)
                    else f"{now:.4g}"
                )
            )
        if not (paid and bounded):
            out["stopped_index"] = ran[i]
            over = f", {what} {human_seconds(p99)} over {p99_factor:g} x step 1's"
            out["stopped"] = f"step {rows[i].get('step', i + 1)}: {gain}" + (
                "" if bounded else over
            )
            break
        climb = i
    out["saturation_index"] = ran[climb]
    out["saturation"] = rows[climb].get("step", ran[climb] + 1)
    for i, r in zip(ran, rows):
        if _count(r.get("errors")) > 0 or _count(r.get("stuck")) > 0:
            out["first_error_index"] = i
            out["first_error"] = r.get("step", i + 1)
            break
    return out


def ladder_kind(steps: Steps) -> LadderKind:
    """What a ladder's steps change, read from its steps table alone (not
    its names): 'rate' when a step offers a rate (rate > 0), 'clients' when
    the active clients per active rank differ between steps, else 'ranks'
    (a ladder in ranks keeps every active rank's clients)."""
    rows = step_rows(steps)
    if any(_number(r.get("rate")) > 0 for r in rows):
        return "rate"
    pairs = [(_number(r.get("active_clients")), _number(r.get("active_ranks"))) for r in rows]
    per_rank = {clients / ranks for clients, ranks in pairs if ranks > 0 and clients >= 0}
    return "clients" if len(per_rank) > 1 else "ranks"


def step_load(row: Mapping[str, Any], kind: LadderKind) -> str:
    """One step's load in its ladder's units, for the knee line, the first
    error and the plots' point labels: '4 ranks', '500 clients', 'offered
    2,000/s' (calls/s of every client)."""
    if kind == "rate":
        return f"offered {rate_text(row.get('offered_per_s'))}/s"
    return plural(row.get(LOAD_COLUMNS[kind]), "client" if kind == "clients" else "rank")


def knee_text(result: Mapping[str, Any], steps: Steps) -> str:
    """The knee step named in its ladder's units, for describe and the
    plots' legends: 'knee: step 3 (4 ranks on 2 hosts, 812.0 MiB/s)', '(500
    clients on 2 ranks, 50.2 MiB/s)', '(offered 2,000/s, achieved
    1,987/s)'; '' when no step ran."""
    if result["saturation_index"] is None:
        return ""
    kind = ladder_kind(steps)
    k = step_rows(steps)[result["saturation_index"]]
    if kind == "rate":
        where = f"{step_load(k, kind)}, achieved {rate_text(k.get('achieved_per_s'))}/s"
    else:
        wider = ("active_ranks", "rank") if kind == "clients" else ("active_hosts", "host")
        where = (
            f"{step_load(k, kind)} on {plural(k.get(wider[0]), wider[1])}, "
            f"{_number(k.get(result['metric'])):,.1f} {result['unit']}"
        )
    return f"knee: step {result['saturation']} ({where})"


def describe(result: Mapping[str, Any], steps: Steps) -> str:
    """One line naming the knee (and the first error step) with their
    numbers in the ladder's units (knee_text, step_load), for reports:
    'knee: step 3 (4 ranks on 2 hosts, 812 MiB/s); first error: none'."""
    rows = step_rows(steps)
    not_run = result.get("not_run") or []
    if result["saturation_index"] is None:
        return "no steps" if not not_run else "no step ran" + _not_run_text(result)
    text = knee_text(result, steps)
    if result["stopped"]:
        text += f"; the climb stopped at {result['stopped']}"
    elif not_run:
        text += "; still growing at the last step run"
    else:
        text += "; still growing at the last step: not saturated"
    text += _not_run_text(result)
    if result["first_error_index"] is None:
        return text + "; first error: none"
    e = rows[result["first_error_index"]]
    return (
        text + f"; first error: step {result['first_error']} "
        f"({step_load(e, ladder_kind(steps))}, {plural(e.get('errors'), 'error')}, "
        f"{step_int(e.get('stuck'))} stuck)"
    )


def _not_run_text(result: Mapping[str, Any]) -> str:
    """'; not run: step 3 (step rl.200ps broke stop_when (...))', or ''."""
    steps = result.get("not_run") or []
    if not steps:
        return ""
    names = (
        f"step {step_int(steps[0])}"
        if len(steps) == 1
        else f"steps {step_int(steps[0])} to {step_int(steps[-1])}"
    )
    note = str(result.get("not_run_note") or "")
    if note.startswith("not run: "):
        note = note[len("not run: ") :]
    return f"; not run: {names}" + (f" ({note})" if note else "")


def step_int(value: Any) -> str:
    v = _number(value)
    return "-" if math.isnan(v) else f"{int(v):,}"


def rate_text(value: Any) -> str:
    """Calls/s as the knee line shows them: '2,000', '40', '2.5', '-'."""
    v = _number(value)
    return "-" if math.isnan(v) else f"{v:,.0f}" if v >= 100 else f"{v:.3g}"


def plural(value: Any, noun: str) -> str:
    """'1 rank', '4 ranks', '- ranks' (unknown)."""
    return f"{step_int(value)} {noun}{'' if _number(value) == 1 else 's'}"
