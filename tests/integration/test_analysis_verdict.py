"""The verdict on the first screen of herd-report (analysis/herd_verdict.py,
docs/analysis.md "The verdict"), on a results file herd writes during the
test against the embedded ganesha:

A ladder in clients past ganesha's connection cap: 2 ranks x 550 libnfs
clients and a monitor rank, `clients_active = 10,500,all`. ganesha takes
1021 connections (RPC_Max_Connections) and refuses the rest, so the
1100-client step counts ECONNREFUSED (op connect) and the steps before it
none.

1. The verdict is the page's first section: one line for the ladder that
   names the step where it stalls in clients on ranks with that step's
   figures (the knee, or the step before the first with errors, as
   herd_knee's table says; "latency knee" where MiB/s still grew and only
   the p99 bound ended the climb), the step the climb ended at, a cause with a
   monitor figure of that step, and the refused connections at 1,100
   clients with their count from the errors table.
2. In headless Chromium the verdict is inside the first screen (1400 x
   1000), the contents link to every section, a link opens a folded
   section, the load curve has one x position per step, and the page with
   its folded sections is a few screens, not the 14,000 px of before.
3. herd-compare names where each run's ladder stalls: the same line.
4. The verdict's causes on the step figures alone, one by one: each
   threshold (docs/analysis.md) on either side of its line; the CPU cause
   names the client ranks that shared the host.
5. A ladder that peaks past its latency knee and then falls 25 % or more:
   the peak, the fall and its cause; stuck calls without errors named so.

Needs root and nfs-ganesha (skips otherwise); the browser part also
chromium, chromium-driver and python3-selenium. Counts and relations only.

Run: HERD_BIN=build/herd /usr/bin/python3 -m pytest -q -rs tests/integration/test_analysis_verdict.py
"""
import re
import sys
import time
from pathlib import Path

import pytest

from conftest import REPO_DIR, browser_open, describe, headless_chromium, run_cmd, write_job

ANALYSIS = REPO_DIR / "analysis"
sys.path.insert(0, str(ANALYSIS))
import herd_knee  # noqa: E402
import herd_results  # noqa: E402
import herd_verdict  # noqa: E402

PER_RANK, RANKS = 550, 2  # 1100 clients: past ganesha's 1021 connections
STEPS = [10, 500, 1100]


@pytest.fixture(scope="module")
def capped(herd_bin: str, tmp_path_factory) -> tuple[Path, Path]:
    """(results, report directory) of the ladder past the connection cap."""
    from test_nfs import herd_run_on_ganesha
    work = tmp_path_factory.mktemp("capped")
    out = work / "c.h5"
    proc = herd_run_on_ganesha(herd_bin, work, RANKS + 1, lambda url: write_job(
        work / "c.ini", {"backend": "libnfs", "target": url, "clients_per_rank": PER_RANK,
                         "monitor_rank": "last", "monitor_interval": "200ms"},
        [("w", {"kind": "write", "file_size": "4K", "block_size": "4K",
                "clients_active": "10,500,all"})]), out, "--fs", "tmpfs")
    assert out.exists(), describe(proc)
    report = work / "report"
    proc = run_cmd(["/usr/bin/python3", str(ANALYSIS / "herd-report"), out, "-o", report],
                   timeout=300)
    assert proc.returncode == 0, describe(proc)
    return out, report


def verdict_lines(page: str) -> list[str]:
    """The verdict's lines as text, from index.html."""
    block = page[page.index('<h2 id="verdict">'):]
    block = block[:block.index("</ul>")]
    return [re.sub(r"<[^>]+>", "", li).replace("&#x27;", "'")
            for li in re.findall(r"<li[^>]*>(.*?)</li>", block)]


def test_verdict_names_the_stall_and_the_refused_connections(capped):
    out, report = capped
    page = (report / "index.html").read_text()
    # The verdict comes first: before the contents and every other section.
    assert page.index('id="verdict"') < page.index('<nav class="toc">') < page.index("<details")
    with herd_results.load(str(out)) as run:
        steps = run.ladder_steps("w")
        assert steps["active_clients"].tolist() == STEPS
        errs = [run.errors(f"w.{n}c") for n in STEPS]
        knee = herd_knee.knee(steps)
        # the connections ganesha kept when it refused more (the phase's
        # note, connections_open): in the verdict's cause
        kept = [run.phase_attrs(f"w.{n}c").get("connections_open") for n in STEPS]
    # The clients ganesha refused: ECONNREFUSED in the last step, and in
    # an earlier one only if one of its active clients was among them (the
    # clients connect at once: which ones get in is the server's race). A
    # client refused at the start counts it on connect; one whose
    # connection was refused when it reconnected for a phase, on that
    # phase's first call (open).
    refused = [int(t["count"].sum()) for t in errs]
    assert refused[-1] > 0, refused
    for t in errs:
        assert set(t["errno_name"].astype(str)) <= {"ECONNREFUSED"}
        assert set(t["op"].astype(str)) <= {"connect", "open"}
    e = knee["first_error_index"]
    assert e == min(n for n, r in enumerate(refused) if r > 0)
    lines = verdict_lines(page)
    print(lines)
    assert len(lines) == 1 and re.match(r"ladder w: (stalls|latency knee) at ", lines[0]), lines
    line = lines[0]
    # The stall: the knee, or the step before the first with errors
    # (herd_verdict._end_of_climb).
    before_errors = knee["stopped_index"] is None or e <= knee["stopped_index"]
    i = max(e - 1, 0) if before_errors else knee["saturation_index"]
    j = e if before_errors else knee["stopped_index"]
    k = steps.iloc[i]
    # a knee in latency alone where MiB/s still grew past the rule's 10 %
    # at the next step without errors, else a stall
    grew = not before_errors and steps.iloc[j]["mib_per_s"] > 1.1 * k["mib_per_s"]
    why = (line, refused, knee["stopped"])
    assert f"{'latency knee' if grew else 'stalls'} at {STEPS[i]:,} clients on {RANKS} ranks " \
           f"(step {i + 1} of 3): {k['mib_per_s']:,.1f} MiB/s, p99 " \
           f"{herd_knee.human_seconds(k['p99_s'])}" in line, why
    # (every client connects at the start, those a step leaves idle too)
    assert kept[e] is not None and 0 < int(kept[e]) < PER_RANK * RANKS, (kept, refused)
    failed = (f"connections refused or reset ({refused[e]:,} failed calls; the server kept "
              f"about {int(kept[e]):,} connections)")
    errors = f"{refused[e]:,} error{'s' if refused[e] != 1 else ''}, 0 stuck"
    if before_errors:
        assert errors in line and failed in line, why
        if i != j:
            assert f"beyond it, at {STEPS[j]:,} clients on {RANKS} ranks: {errors}" in line, why
    else:
        assert f"beyond it, at {STEPS[j]:,} clients on {RANKS} ranks: " in line, why
        assert f"First errors at {STEPS[e]:,} clients on {RANKS} ranks: {failed}" in line, why
    # The cause read at the step the climb ended: a monitor figure of it.
    cause = line.split("Likely cause: ")[1]
    cpu = steps.iloc[j]["cpu_mean"]  # (NaN: no sample met a step of milliseconds)
    if cpu >= herd_verdict.CPU_BUSY:
        assert f"server CPU saturated (mean {100 * cpu:.0f}%" in cause, (cause, cpu)
    else:
        assert "server CPU saturated" not in cause, (cause, cpu)


def test_verdict_first_screen_in_chromium(capped, tmp_path):
    _, report = capped
    browser = headless_chromium()
    try:
        browser_open(browser, report / "index.html")
        view = browser.execute_script("return window.innerHeight")
        box = browser.execute_script(
            "var r = document.querySelector('ul.verdict').getBoundingClientRect();"
            "return [r.top, r.bottom];")
        assert 0 < box[0] and box[1] <= view, (box, view)
        seen = browser.find_element("css selector", "ul.verdict").text
        assert re.search(r"(stalls|latency knee) at", seen) and \
            "connections refused or reset" in seen, seen
        links = browser.execute_script(
            "return Array.from(document.querySelectorAll('nav.toc a'))"
            ".map(a => a.getAttribute('href'));")
        ids = browser.execute_script(
            "return Array.from(document.querySelectorAll('details > div')).map(d => '#' + d.id);")
        assert links == ids and "#load-curve" in links and "#server" in links, (links, ids)
        folded = browser.execute_script("return document.getElementById('server').parentElement.open")
        assert folded is False
        # A few screens with the details folded (the load curve open).
        height = browser.execute_script("return document.body.scrollHeight")
        print(f"page {height} px in a {view} px window")
        assert height < 5 * view, height
        browser.find_element("css selector", "nav.toc a[href='#server']").click()
        deadline = time.monotonic() + 10
        while not browser.execute_script("return document.getElementById('server').parentElement.open"):
            assert time.monotonic() < deadline, "the link did not open its section"
            time.sleep(0.05)
        # The load curve: drawn, one x per step (its table: a row per step).
        img = browser.execute_script(
            "var i = document.querySelector('#load-curve img');"
            "return i && [i.complete, i.naturalWidth];")
        assert img and img[0] and img[1] > 0, img
        rows = browser.execute_script(
            "return document.querySelectorAll('#load-curve table tr').length;")
        assert rows == 1 + len(STEPS), rows
        assert browser.save_screenshot(str(tmp_path / "first-screen.png"))
    finally:
        browser.quit()


def test_compare_names_where_each_run_stalls(capped, tmp_path):
    """herd-compare's page and output carry each run's ladder verdict,
    the same line as its own report's."""
    out, report = capped
    copy = tmp_path / "again.h5"
    copy.write_bytes(out.read_bytes())
    proc = run_cmd(["/usr/bin/python3", str(ANALYSIS / "herd-compare"), out, copy, "-o",
                    tmp_path / "cmp"], timeout=300)
    assert proc.returncode == 0, describe(proc)
    line = verdict_lines((report / "index.html").read_text())[0]
    page = (tmp_path / "cmp" / "index.html").read_text()
    block = page[page.index('<ul class="verdict ladders">'):]
    shown = [re.sub(r"<[^>]+>", "", li).replace("&#x27;", "'")
             for li in re.findall(r"<li[^>]*>(.*?)</li>", block[:block.index("</ul>")])]
    assert shown == [f"c: {line}", f"again: {line}"], shown
    assert f"  c: {line}" in proc.stdout and f"  again: {line}" in proc.stdout


# ---------------------------------------------------------------- 3. causes by threshold


class NoMonitor:
    """A run with no errors, no phases and no monitor tables: causes() on
    step figures alone."""
    phase_names: list[str] = []
    attrs: dict = {}

    @staticmethod
    def disks():
        import pandas as pd
        return pd.DataFrame()

    @staticmethod
    def samples():
        import pandas as pd
        return pd.DataFrame()


def test_each_cause_on_its_threshold():
    def named(**figures):
        return herd_verdict.causes(NoMonitor(), {"phase": "x", **figures})

    assert named() == []
    assert named(cpu_mean=0.84, cpu_max=1.0) == []
    assert named(cpu_mean=0.85, cpu_max=0.9) == ["server CPU saturated (mean 85%, max 90%)"]
    # client ranks of the run on the sampled host: their load is in the figure
    shared = NoMonitor()
    shared.attrs = {"monitor_client_ranks": 2}
    assert herd_verdict.causes(shared, {"phase": "x", "cpu_mean": 1.0, "cpu_max": 1.0}) == \
        ["server CPU saturated (mean 100%, max 100%; the host's CPUs, shared with 2 client "
         "ranks of this run)"]
    assert named(proc_thread_max=0.89) == []
    assert named(proc_thread_max=0.9) == ["one server thread at 90% of a core"]
    assert named(nfsd_woken_share=0.25) == []
    assert named(nfsd_woken_share=0.06, nfsd_threads=8) == \
        ["all 8 nfsd threads busy (only 6% of requests found one idle)"]
    assert named(nfsd_woken_share=0.0, nfsd_threads=1) == \
        ["the one nfsd thread busy (no request found it idle)"]
    # herd's own lag: at least 1 ms and 10 % of the response p99.
    assert named(lag_p99_s=0.9e-3, response_p99_s=2e-3) == []
    assert named(lag_p99_s=2e-3, response_p99_s=30e-3) == []
    assert named(lag_p99_s=3e-3, response_p99_s=30e-3)[0].startswith("herd itself (its lag p99 3")
    # In the module's order, several at once.
    both = named(cpu_mean=0.95, cpu_max=1.0, nfsd_woken_share=0.01, nfsd_threads=8)
    assert [c.split(" (")[0] for c in both] == ["server CPU saturated", "all 8 nfsd threads busy"]


def test_collapse_past_the_peak_is_named():
    """A ladder whose throughput peaks past a knee in latency and then
    falls (the figures of a kernel nfsd under 2 x 500 clients): the
    verdict names the peak, the fall and the cause read where it fell;
    stuck calls without errors are named as such. No fall: no such
    sentence."""
    import pandas as pd
    steps = pd.DataFrame({
        "step": [1, 2, 3, 4], "active_ranks": [2] * 4, "active_clients": [10, 100, 500, 1000],
        "mib_per_s": [25.2, 43.8, 13.1, 11.6], "p99_s": [0.0121, 0.109, 0.403, 0.520],
        "errors": [0] * 4, "stuck": [0, 0, 0, 778], "status": ["ok"] * 4,
        "cpu_mean": [0.69, 0.63, 0.99, 0.99], "cpu_max": [0.8, 0.8, 1.0, 1.0]})
    text = herd_verdict.ladder_verdict(NoMonitor(), "write", steps,
                                       herd_knee.knee(steps, metric="mib_per_s")).text
    assert "latency knee at 10 clients on 2 ranks" in text, text
    assert "First stuck calls at 1,000 clients on 2 ranks: 0 errors, 778 stuck" in text, text
    assert "Throughput peaks at 100 clients on 2 ranks: 43.8 MiB/s, p99 109 ms, then falls " \
        "70% by 500 clients on 2 ranks: server CPU saturated (mean 99%, max 100%)." in text, text
    steps["mib_per_s"] = [25.2, 43.8, 40.0, 39.0]  # under 25 % below the peak
    text = herd_verdict.ladder_verdict(NoMonitor(), "write", steps,
                                       herd_knee.knee(steps, metric="mib_per_s")).text
    assert "Throughput peaks" not in text, text
