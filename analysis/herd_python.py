"""herd_python — which Python runs the analysis tools, and a one-line
answer when none can (never a traceback).

The tools start with the python3 their first line names (/usr/bin/python3
in a checkout; the python3 on PATH once installed, `#!/usr/bin/env
python3`), which on a cluster is often a site's or a user's Python without
numpy (a pyenv, a conda env). Which one runs them:

1. HERD_PYTHON, when set: a path, or a name looked up on PATH. Before the
   tool starts itself again under it, one run of it with `-c` code (PROBE)
   must show that it is a Python 3 with every module in NEEDED; anything
   else (not found, not executable, not a Python, a Python without a
   module) gets one line on stderr naming HERD_PYTHON and the problem, and
   exit code 2. Nothing else is tried.
2. Otherwise the Python running the tool, when it has every module.
3. Otherwise the first of these that the same test shows fit: the Python
   recorded when herd was installed (the file RECORDED next to this
   module: CMake's HERD_ANALYSIS_PYTHON; a checkout has none), the
   python3 on PATH, /usr/bin/python3 (Debian's, which
   cluster-configs/local/install.sh provisions). The tool starts itself
   again under it, with FOUND in the environment so that it searches only
   once. When none is fit: one line on stderr naming each Python tried and
   what it lacks, and exit code 2.

Run as a script, `PYTHON herd_python.py` exits 0 when PYTHON has every
module in NEEDED, else 1 (CMake's test of the Python it records).

Standard library only: this runs before anything else is imported.
"""
import importlib.util
import os
import pathlib
import shutil
import subprocess
import sys

# typing's names, not list[str] or X | None: this module runs under whatever
# python3 started the tool, before any other Python is picked (3.6 parses it).
from typing import List, NoReturn, Optional, Tuple

# Both tools import all four: numpy and pandas themselves, h5py through
# herd_results and herd_safe, matplotlib through herd_plots (herd-compare
# when it draws).
NEEDED = ("numpy", "pandas", "h5py", "matplotlib")
DEBIAN = "python3-numpy python3-pandas python3-h5py python3-matplotlib"
# The test run under a candidate Python: its first line is a marker that
# only Python prints (the code holds it in two pieces, so a program that
# echoes its arguments does not), with the major version; its second line
# the modules of argv that it cannot find, as missing_here judges them.
# Python 2 parses it too.
PROBE = (
    "import sys\n"
    "sys.stdout.write('herd-python' + '-probe %d\\n' % sys.version_info[0])\n"
    "import importlib.util\n"
    "def lacks(m):\n"
    "    s = importlib.util.find_spec(m)\n"
    "    return s is None or s.origin in (None, 'namespace')\n"
    "print(' '.join(m for m in sys.argv[1:] if lacks(m)))\n"
)
PROBE_MARKER = "herd-python-probe"
PROBE_TIMEOUT = 60  # seconds: a Python on a slow shared file system starts in far less
# The search (step 3): the file that names the Python recorded at install
# (one line, its absolute path), the variable that marks the tool started
# again under the Python found, and the last place looked.
RECORDED = "herd_python.path"
FOUND = "HERD_PYTHON_FOUND"
DEBIAN_PYTHON = "/usr/bin/python3"


class Refusal(Exception):
    """Why a Python cannot run the tool, as the rest of one line."""


def shown(text: str) -> str:
    """text on one line: characters that are not printable escaped."""
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in text)


def lacking(missing: List[str]) -> str:
    """The end of the line about a Python without the modules in missing."""
    return (
        f"no module {', '.join(missing)}: install {'it' if len(missing) == 1 else 'them'} "
        f"for that Python (Debian: {DEBIAN}), or name one that has them"
    )


def lacks(module: str) -> bool:
    """True when the running Python cannot import module: not found, or
    only a directory of that name (a namespace package: Debian's
    /usr/lib/python3.X/dist-packages/numpy holds only numpy's compiled
    core, for its python3 whatever its other paths hold)."""
    spec = importlib.util.find_spec(module)
    return spec is None or spec.origin in (None, "namespace")


def missing_here() -> List[str]:
    """The modules in NEEDED that the running Python cannot import."""
    return [m for m in NEEDED if lacks(m)]


def locate(want: str) -> str:
    """The program of want: want itself when it holds a '/', else the first
    executable of that name on PATH."""
    path: Optional[str]
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


def probe(path: str) -> List[str]:
    """Run PROBE under path once: the modules in NEEDED it lacks; refuse
    unless it answers as a Python 3."""
    try:
        proc = subprocess.run(
            [path, "-c", PROBE, *NEEDED],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            timeout=PROBE_TIMEOUT,
        )
    except subprocess.TimeoutExpired:
        raise Refusal(f"not a Python: no answer to a Python test in {PROBE_TIMEOUT} s")
    except OSError as e:
        raise Refusal(f"cannot start it: {e.strerror}")
    lines = proc.stdout.decode("utf-8", "replace").splitlines()
    head = lines[0].split() if lines else []
    if len(head) != 2 or head[0] != PROBE_MARKER:
        raise Refusal(
            f"not a Python: {shown(path)} did not answer a Python test "
            f"(exit status {proc.returncode})"
        )
    if head[1] != "3":
        raise Refusal(f"{shown(path)} is Python {shown(head[1])}, not Python 3")
    if proc.returncode != 0 or len(lines) != 2:
        raise Refusal(f"{shown(path)} failed a Python 3 test (exit status {proc.returncode})")
    return lines[1].split()


def restart(path: str, mark: str, value: str) -> NoReturn:
    """Start the tool again under path, with mark=value in its environment."""
    os.environ[mark] = value
    os.execv(path, [path, sys.argv[0], *sys.argv[1:]])


def start_under(tool: str, want: str) -> NoReturn:
    """Exec the tool under HERD_PYTHON once it is shown to be fit; exit 2
    with one line otherwise."""
    try:
        path = locate(want)
        missing = probe(path)
        if missing:
            raise Refusal(f"{shown(path)} is a Python with {lacking(missing)}")
        restart(path, "HERD_PYTHON_STARTED", want)  # (once: no loop)
    except Refusal as e:
        problem = str(e)
    except OSError as e:
        problem = f"cannot start it: {e.strerror}"
    print(f"{tool}: HERD_PYTHON={shown(want)}: {problem}", file=sys.stderr)
    sys.exit(2)


def recorded() -> Optional[str]:
    """The Python recorded at install (RECORDED next to this module), or
    None (a checkout, or an install that found none)."""
    try:
        text = (
            pathlib.Path(__file__)
            .resolve()
            .with_name(RECORDED)
            .read_text(encoding="utf-8", errors="surrogateescape")
        )
    except OSError:
        return None
    first = text.splitlines()[0].strip() if text.strip() else ""
    return first or None


def candidates() -> List[Tuple[str, str]]:
    """(program, what it is) in the order the search tries them."""
    found = [(recorded(), "recorded at install"), ("python3", "on PATH"), (DEBIAN_PYTHON, "")]
    return [(program, what) for program, what in found if program]


def search(tool: str, missing: List[str]) -> NoReturn:
    """Exec the tool under the first candidate with every module in NEEDED;
    exit 2 with one line naming each one tried when there is none."""
    running = os.path.abspath(sys.executable) if sys.executable else ""
    tried = [(running or "?", "running it", f"no module {', '.join(missing)}")]
    seen = {running}
    for program, what in candidates():
        path = program
        try:
            path = os.path.abspath(locate(program))
            if path in seen:
                continue
            seen.add(path)
            missing = probe(path)
            if not missing:
                restart(path, FOUND, path)
            problem = f"no module {', '.join(missing)}"
        except Refusal as e:
            problem = str(e)
        except OSError as e:
            problem = f"cannot start it: {e.strerror}"
        tried.append((path, what, problem))
    give_up(tool, tried)


def give_up(tool: str, tried: List[Tuple[str, str, str]]) -> NoReturn:
    """One line naming each (Python, what it is, its problem) tried; exit 2."""
    names = "; ".join(
        f"{shown(path)}{f' ({what})' if what else ''}: {problem}" for path, what, problem in tried
    )
    print(
        f"{tool}: no Python with {', '.join(NEEDED)}: {names}. Install them for one "
        f"(Debian: {DEBIAN}), or name one that has them: HERD_PYTHON=/path/to/python3 "
        f"{tool} ...",
        file=sys.stderr,
    )
    sys.exit(2)


def ensure(tool: str) -> None:
    """Re-exec under HERD_PYTHON when it names another Python; else keep the
    running Python when it has every module in NEEDED, else re-exec under
    the first candidate that has them; exit 2 with one line when none does."""
    want = os.environ.get("HERD_PYTHON", "")
    if want and os.environ.get("HERD_PYTHON_STARTED") != want:
        start_under(tool, want)
    searched = os.environ.pop(FOUND, None)  # (once: no loop; not passed on)
    missing = missing_here()
    if not missing:
        return
    if want or searched:
        running = os.path.abspath(sys.executable) if sys.executable else "?"
        give_up(tool, [(running, "running it", f"no module {', '.join(missing)}")])
    search(tool, missing)


def summary(doc: Optional[str]) -> str:
    """A tool's docstring's first paragraph as one line: its --help's
    description, whole (a first line alone ends mid-sentence)."""
    return " ".join((doc or "").strip().split("\n\n")[0].split())


if __name__ == "__main__":
    sys.exit(1 if missing_here() else 0)
