"""herd-compare over repeated runs: runs that share a label are repeats,
shown as a median with its spread, and each ratio marked within noise or
not (analysis/herd_compare_groups.py, herd_compare_page.py; docs/analysis.md,
"Repeats and the verdict").

The runs: 3 + 3 real herd runs (2 ranks, posix backend on a tmp dir) of one
job with a write phase and a meta phase (every step), labelled a and b
(--set label=...). a's write phase is paced (rate = 10 calls/s per client,
fixed arrivals, 8 calls: the schedule alone keeps it 0.7 s or longer), b's
is not: the two labels differ by design. Copies of a's files relabelled c
are repeats identical to a's: their ranges overlap a's by construction.

1. groups.csv: per phase (meta: per step) and label, n, median, min, max
   equal what is computed here from the files (herd_results: the phases'
   mib_per_s, the op_summary's items_per_s and step_s of each meta step's
   item call); ratio = median / the reference label's median; within_noise
   is "yes" exactly when the ranges overlap or a side has one run.
2. Known cases: c vs a within noise everywhere (identical runs); b vs a's
   write beyond noise (paced against unpaced); one run of a against b's
   three within noise (n=1). The terminal prints the same verdict.
3. Meta steps: meta.png exists and its bars are the meta steps' medians.
4. index.html in headless Chromium: every verdict line lies in the first
   screen, each link of the table of contents leads to its heading, every
   image loads (skips when chromium or selenium is missing).
5. A label holding <script> is escaped on the page and in groups.md.
6. Files of one name in two directories are two runs, named by their
   directories.

Tests assert counts and the mechanism, never elapsed time.
Run: /usr/bin/python3 -m pytest -q -rs tests/integration/test_analysis_compare.py
"""
import shutil
import subprocess
import sys

import h5py
import numpy as np
import pytest

from conftest import (REPO_DIR, browser_open, describe, headless_chromium, herd_run, read_csv,
                      write_job)

ANALYSIS = REPO_DIR / "analysis"
COMPARE = ANALYSIS / "herd-compare"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
META_STEPS = ["create", "stat", "rename", "unlink", "rmdir"]
HOSTILE = '<script>alert("x")</script> & b'
REPEATS = 3

sys.path.insert(0, str(ANALYSIS))
import herd_results  # noqa: E402


def tool(*args, timeout=120):
    return subprocess.run(["/usr/bin/python3", str(COMPARE)] + [str(a) for a in args],
                          capture_output=True, text=True, timeout=timeout)


def num(v):
    return float("nan") if v in ("", "nan", None) else float(v)


def job(path, target, paced):
    write = {"kind": "write", "file_size": "8K", "block_size": "1K"}
    if paced:
        write.update({"rate": "10", "arrivals": "fixed"})
    # (fsync = no: the unpaced write's time is CPU's, never a busy disk's)
    return write_job(path, {"target": target, "fsync": "no"},
                     [("write", write), ("meta", {"kind": "meta", "files": "20", "dirs": "2"})])


def relabel(src, dst, label):
    """A copy of results file src whose root attribute label is LABEL."""
    shutil.copyfile(src, dst)
    with h5py.File(dst, "r+") as f:
        f.attrs["label"] = label
    return dst


@pytest.fixture(scope="module")
def runs(herd_bin, tmp_path_factory):
    """{label: [results files]}: a and b made by herd, c copies of a."""
    work = tmp_path_factory.mktemp("compare")
    target = work / "target"
    target.mkdir()
    jobs = {"a": job(work / "a.ini", target, True), "b": job(work / "b.ini", target, False)}
    out = {"a": [], "b": []}
    for i in range(1, REPEATS + 1):
        for label in ("a", "b"):
            path = work / f"{label}{i}.h5"
            proc = herd_run(herd_bin, 2, jobs[label], path, "--set", f"label={label}",
                            quiet=True)
            assert proc.returncode == 0, describe(proc)
            out[label].append(path)
    out["c"] = [relabel(p, work / f"c{i}.h5", "c") for i, p in enumerate(out["a"], 1)]
    return out


def figures(path):
    """{(phase, step): (main figure, seconds)} of one run, from the loader:
    MiB/s of the write phase, items/s and step_s of each meta step."""
    out = {}
    with herd_results.load(path) as run:
        for ph in run.phases.itertuples():
            if ph.kind == "meta":
                steps = run.meta_steps(ph.phase)[["step", "op"]].drop_duplicates()
                summary = run.op_summary(ph.phase).set_index("op")
                for step, op in steps.itertuples(index=False):
                    out[(ph.phase, step)] = (float(summary.loc[op, "items_per_s"]),
                                             float(summary.loc[op, "step_s"]))
            else:
                out[(ph.phase, "")] = (float(ph.mib_per_s), float(ph.last_done))
    return out


def spreads(runs, labels):
    """{(phase, step, label): (values, seconds)} computed from the files."""
    out = {}
    for label in labels:
        for path in runs[label]:
            for key, (v, s) in figures(path).items():
                values, seconds = out.setdefault(key + (label,), ([], []))
                values.append(v)
                seconds.append(s)
    return out


def expected_noise(a, b):
    """The rule: a side has one run, or the min-max ranges overlap."""
    return len(a) == 1 or len(b) == 1 or (min(a) <= max(b) and min(b) <= max(a))


def compare(runs, labels, out):
    files = [p for label in labels for p in runs[label]]
    proc = tool(*files, "-o", out)
    assert proc.returncode == 0, describe(proc)
    return {(r["phase"], r["step"], r["label"]): r for r in read_csv(out / "groups.csv")}, proc


@pytest.fixture(scope="module")
def abc(runs, tmp_path_factory):
    """herd-compare of a, b and c: (groups.csv rows by key, stdout, out dir)."""
    out = tmp_path_factory.mktemp("abc") / "cmp"
    rows, proc = compare(runs, ["a", "b", "c"], out)
    return rows, proc.stdout, out


def test_medians_and_spreads_match_the_files(runs, abc):
    rows, _, out = abc
    want = spreads(runs, ["a", "b", "c"])
    keys = {(p, s) for p, s, _ in want}
    assert keys == {("write", "")} | {("meta", s) for s in META_STEPS}, keys
    assert set(rows) == set(want), sorted(rows)
    for (phase, step, label), (values, seconds) in want.items():
        r = rows[(phase, step, label)]
        ref_values = want[(phase, step, "a")][0]
        what = f"{phase} {step} {label}"
        assert r["unit"] == ("items/s" if phase == "meta" else "MiB/s"), what
        assert int(r["n"]) == len(values) == REPEATS, what
        assert num(r["median"]) == pytest.approx(np.median(values), rel=1e-12), what
        assert num(r["min"]) == pytest.approx(min(values), rel=1e-12), what
        assert num(r["max"]) == pytest.approx(max(values), rel=1e-12), what
        assert num(r["seconds_median"]) == pytest.approx(np.median(seconds), rel=1e-12), what
        assert num(r["ratio"]) == pytest.approx(np.median(values) / np.median(ref_values),
                                                rel=1e-12), what
        assert num(r["ratio_min"]) == pytest.approx(min(values) / max(ref_values), rel=1e-12)
        assert num(r["ratio_max"]) == pytest.approx(max(values) / min(ref_values), rel=1e-12)
        assert r["runs"].split() == [p.stem for p in runs[label]], what
        assert int(r["not_ok"]) == 0, what
        if label == "a":
            assert r["within_noise"] == "", what  # the reference
        else:
            noise = expected_noise(ref_values, values)
            assert r["within_noise"] == ("yes" if noise else "no"), (what, values, ref_values)
    md = (out / "groups.md").read_text()
    assert md.count("\n| meta |") == len(META_STEPS) * 3, md


def test_known_cases_of_noise(runs, abc, tmp_path):
    """c's runs are a's: within noise everywhere, ratio 1; b's unpaced write
    against a's paced one: beyond noise; one run of a against b's three:
    within noise (n=1), whatever the ranges."""
    rows, stdout, _ = abc
    for step in [""]:
        assert rows[("write", step, "c")]["within_noise"] == "yes"
    for step in META_STEPS:
        assert rows[("meta", step, "c")]["within_noise"] == "yes"
        assert num(rows[("meta", step, "c")]["ratio"]) == 1.0
    a = [v for v, _ in (figures(p)[("write", "")] for p in runs["a"])]
    b = [v for v, _ in (figures(p)[("write", "")] for p in runs["b"])]
    assert max(a) < min(b), f"the paced write ({a}) should be slower than the unpaced ({b})"
    assert rows[("write", "", "b")]["within_noise"] == "no"
    lines = [l.strip() for l in stdout.splitlines() if l.startswith("  ")]
    assert len(lines) == 2 * (1 + len(META_STEPS)), stdout
    assert [l for l in lines if "beyond noise" in l][0].startswith("write (MiB/s): b / a = ")
    assert sum("within noise" in l or "beyond noise" in l for l in lines) == len(lines)
    for label in ("b", "c"):
        for step in [("write", "")] + [("meta", s) for s in META_STEPS]:
            r = rows[step + (label,)]
            name = f"{step[0]}: {step[1]}" if step[1] else step[0]
            mine = [l for l in lines if l.startswith(f"{name} ({r['unit']}): {label} / a = ")]
            assert len(mine) == 1, (name, label, stdout)
            assert ("beyond noise" in mine[0]) == (r["within_noise"] == "no"), mine
    # one run of a: no spread to judge by
    one, proc = compare({"a": runs["a"][:1], "b": runs["b"]}, ["a", "b"], tmp_path / "one")
    assert one[("write", "", "b")]["within_noise"] == "yes"
    assert int(one[("write", "", "a")]["n"]) == 1
    assert "write (MiB/s): b / a = " in proc.stdout and "within noise (n=1)" in proc.stdout


def test_meta_bars(runs, abc):
    """meta.png is drawn, and its bars are each meta step's median items/s
    and seconds per label, min to max the whisker."""
    _, _, out = abc
    assert (out / "meta.png").read_bytes().startswith(PNG_MAGIC)
    assert (out / "groups.png").read_bytes().startswith(PNG_MAGIC)
    import herd_compare_groups
    import herd_compare_page
    paths = runs["a"] + runs["b"]
    loaded = [herd_results.load(p) for p in paths]
    try:
        rows = herd_compare_groups.group_rows(loaded, ["a"] * REPEATS + ["b"] * REPEATS)
    finally:
        for r in loaded:
            r.close()
    items, seconds = herd_compare_page.meta_bars(rows)
    want = spreads(runs, ["a", "b"])
    for panel, which in ((items, 0), (seconds, 1)):
        assert panel.names == [f"meta: {s}" for s in META_STEPS], panel.names
        assert panel.labels == ["a", "b"]
        for i, label in enumerate(panel.labels):
            for j, step in enumerate(META_STEPS):
                values = want[("meta", step, label)][which]
                assert panel.median[i, j] == pytest.approx(np.median(values), rel=1e-12)
                assert (panel.lo[i, j], panel.hi[i, j]) == (min(values), max(values))
                assert panel.n[i, j] == REPEATS
    assert items.unit == "items/s" and seconds.unit == "s per step"
    assert [p.unit for p in herd_compare_page.group_bars(rows)] == ["MiB/s"]


def test_page_verdict_first_and_links(abc):
    rows, _, out = abc
    page = (out / "index.html").read_text()
    assert page.lstrip().lower().startswith("<!doctype html")
    assert "http://" not in page and "https://" not in page and "<script" not in page
    browser = headless_chromium()
    try:
        browser_open(browser, out / "index.html")
        height = browser.execute_script("return window.innerHeight")
        verdict = browser.execute_script(
            "return Array.from(document.querySelectorAll('ul.verdict li')).map(e => "
            "[e.getBoundingClientRect().top, e.getBoundingClientRect().bottom, e.className, "
            "e.innerText]);")
        assert len(verdict) == 2 * (1 + len(META_STEPS)), verdict
        assert all(0 <= top and bottom <= height for top, bottom, _, _ in verdict), \
            (height, verdict)
        for _, _, cls, text in verdict:
            name = text.split(" (")[0]
            label = text.split("): ")[1].split(" / ")[0]
            phase, _, step = name.partition(": ")
            noise = rows[(phase, step, label)]["within_noise"]
            assert cls == {"yes": "noise", "no": "finding"}[noise], (cls, text)
            assert ("beyond noise" in text) == (noise == "no"), text
        images = browser.execute_script(
            "return Array.from(document.images).map(i => "
            "[i.getAttribute('src'), i.complete, i.naturalWidth]);")
        assert {"meta.png", "groups.png", "compare.png"} <= {i[0] for i in images}, images
        assert all(i[1] and i[2] > 0 for i in images), images
        links = browser.execute_script(
            "return Array.from(document.querySelectorAll('nav.toc a')).map(a => "
            "a.getAttribute('href'));")
        assert links[:2] == ["#verdict", "#labels"] and "#meta" in links, links
        for href in links:
            browser.execute_script("window.scrollTo(0, 0);")
            browser.find_element("css selector", f'nav.toc a[href="{href}"]').click()
            at = browser.execute_script(
                "const e = document.getElementById(arguments[0]); if (!e) return null;"
                "return [e.tagName, e.getBoundingClientRect().top, window.scrollY,"
                " document.documentElement.scrollHeight - window.innerHeight];", href[1:])
            assert at is not None, f"no element with id {href[1:]}"
            tag, top, scrolled, most = at
            assert tag == "H2", at
            # the heading at the top of the window, or the page scrolled to its end
            assert abs(top) <= 2 or (scrolled >= most - 2 and 0 <= top < height), (href, at)
            assert browser.execute_script("return location.hash") == href
    finally:
        browser.quit()


def test_hostile_label_is_escaped(runs, tmp_path):
    evil = relabel(runs["b"][0], tmp_path / "evil.h5", HOSTILE)
    out = tmp_path / "cmp"
    proc = tool(runs["a"][0], runs["a"][1], evil, "-o", out)
    assert proc.returncode == 0, describe(proc)
    page = (out / "index.html").read_text()
    assert "<script" not in page.lower(), page[:2000]
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; b" in page
    verdict = page.split('<ul class="verdict">')[1].split("</ul>")[0]
    assert "&lt;script&gt;" in verdict and verdict.count("<li") == 1 + len(META_STEPS)
    md = (out / "groups.md").read_text()
    assert "<script" not in md and "&lt;script&gt;" in md
    rows = read_csv(out / "groups.csv")
    assert {r["label"] for r in rows} == {"a", HOSTILE}


def test_files_of_one_name_are_told_apart(runs, tmp_path):
    """Two results files of one name in two directories (each demo run
    writes xfs.h5): named by their directories, two runs, not one name
    twice."""
    for where, src in (("one", runs["a"][0]), ("two", runs["b"][0])):
        (tmp_path / where).mkdir()
        shutil.copyfile(src, tmp_path / where / "x.h5")
    out = tmp_path / "cmp"
    proc = tool(tmp_path / "one" / "x.h5", tmp_path / "two" / "x.h5", "--label", "file",
                "-o", out)
    assert proc.returncode == 0, describe(proc)
    assert {r["label"] for r in read_csv(out / "groups.csv")} == {"one/x", "two/x"}, proc.stdout
