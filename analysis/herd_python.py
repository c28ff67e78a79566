"""herd_python — which Python runs the analysis tools, and a one-line
answer when it cannot (never a traceback).

The tools start with the python3 their first line names (/usr/bin/python3
in a checkout; the python3 on PATH once installed, `#!/usr/bin/env
python3`), which on a cluster is often a site's or a user's Python without
numpy. HERD_PYTHON names the one to use, as a path or as a name looked up
on PATH. Before the tool starts itself again under it, one run of it with
`-c` code must show that it is a Python 3 with every module in NEEDED;
anything else (not found, not executable, not a Python, a Python without a
module) gets one line on stderr naming HERD_PYTHON and the problem, and
exit code 2. So does the running Python when it lacks a module.

Standard library only: this runs before anything else is imported.
"""
import importlib.util
import os
import shutil
import subprocess
import sys

# Both tools import all four: numpy and pandas themselves, h5py through
# herd_results and herd_safe, matplotlib through herd_plots (herd-compare
# when it draws).
NEEDED = ("numpy", "pandas", "h5py", "matplotlib")
DEBIAN = "python3-numpy python3-pandas python3-h5py python3-matplotlib"
# The test run under HERD_PYTHON: its first line is a marker that only
# Python prints (the code holds it in two pieces, so a program that echoes
# its arguments does not), with the major version; its second line the
# modules of argv that it cannot find. Python 2 parses it too.
PROBE = ("import sys\n"
         "sys.stdout.write('herd-python' + '-probe %d\\n' % sys.version_info[0])\n"
         "import importlib.util\n"
         "print(' '.join(m for m in sys.argv[1:] if importlib.util.find_spec(m) is None))\n")
PROBE_MARKER = "herd-python-probe"
PROBE_TIMEOUT = 60  # seconds: a Python on a slow shared file system starts in far less


class Refusal(Exception):
    """Why HERD_PYTHON cannot run the tool, as the rest of one line."""


def shown(text):
    """text on one line: characters that are not printable escaped."""
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in text)


def lacking(missing):
    """The end of the line about a Python without the modules in missing."""
    return (f"no module {', '.join(missing)}: install {'it' if len(missing) == 1 else 'them'} "
            f"for that Python (Debian: {DEBIAN}), or name one that has them")


def locate(want):
    """HERD_PYTHON's program: want itself when it holds a '/', else the
    first executable of that name on PATH."""
    if "/" in want:
        path = want
        if not os.path.lexists(path):
            raise Refusal("cannot start it: not found")
    else:
        path = shutil.which(want)
        if path is None:
            raise Refusal("cannot start it: not found on PATH")
    if os.path.isdir(path):
        raise Refusal(f"cannot start it: {shown(path)} is a directory")
    if not os.access(path, os.X_OK):
        raise Refusal(f"cannot start it: {shown(path)} is not executable")
    return path


def probe(path):
    """Run PROBE under path once; refuse unless it answers as a Python 3
    with every module in NEEDED."""
    try:
        proc = subprocess.run([path, "-c", PROBE, *NEEDED], stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                              timeout=PROBE_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise Refusal(f"not a Python: no answer to a Python test in {PROBE_TIMEOUT} s")
    except OSError as e:
        raise Refusal(f"cannot start it: {e.strerror}")
    lines = proc.stdout.decode("utf-8", "replace").splitlines()
    head = lines[0].split() if lines else []
    if len(head) != 2 or head[0] != PROBE_MARKER:
        raise Refusal(f"not a Python: {shown(path)} did not answer a Python test "
                      f"(exit status {proc.returncode})")
    if head[1] != "3":
        raise Refusal(f"{shown(path)} is Python {shown(head[1])}, not Python 3")
    if proc.returncode != 0 or len(lines) != 2:
        raise Refusal(f"{shown(path)} failed a Python 3 test (exit status {proc.returncode})")
    missing = lines[1].split()
    if missing:
        raise Refusal(f"{shown(path)} is a Python with {lacking(missing)}")


def start_under(tool, want):
    """Exec the tool under HERD_PYTHON once it is shown to be fit; exit 2
    with one line otherwise."""
    try:
        path = locate(want)
        probe(path)
        os.environ["HERD_PYTHON_STARTED"] = want  # (once: no loop)
        os.execv(path, [path, sys.argv[0], *sys.argv[1:]])
    except Refusal as e:
        problem = str(e)
    except OSError as e:
        problem = f"cannot start it: {e.strerror}"
    print(f"{tool}: HERD_PYTHON={shown(want)}: {problem}", file=sys.stderr)
    sys.exit(2)


def ensure(tool):
    """Re-exec under HERD_PYTHON when it names another Python; then exit 2
    with one line if a module in NEEDED is missing."""
    want = os.environ.get("HERD_PYTHON", "")
    if want and os.environ.get("HERD_PYTHON_STARTED") != want:
        start_under(tool, want)
    missing = [m for m in NEEDED if importlib.util.find_spec(m) is None]
    if missing:
        print(f"{tool}: the Python running it ({sys.executable}) has {lacking(missing)}: "
              f"HERD_PYTHON=/usr/bin/python3 {tool} ...", file=sys.stderr)
        sys.exit(2)


def summary(doc):
    """A tool's docstring's first paragraph as one line: its --help's
    description, whole (a first line alone ends mid-sentence)."""
    return " ".join(doc.strip().split("\n\n")[0].split())
