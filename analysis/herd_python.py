"""herd_python — which Python runs the analysis tools, and a one-line
answer when it lacks what they need (never a traceback).

The tools start with the python3 their first line names (/usr/bin/python3
in a checkout; the python3 on PATH once installed, `#!/usr/bin/env
python3`), which on a cluster is often a site's or a user's Python without
numpy. HERD_PYTHON=/path/to/python3 names the one to use: the tool starts
itself again under it. A Python without one of the modules the tools need
gets one line on stderr, naming that Python, the modules and both ways
out, and exit code 2.

Standard library only: this runs before anything else is imported.
"""
import importlib.util
import os
import sys

NEEDED = ("numpy", "pandas", "h5py", "matplotlib")
DEBIAN = "python3-numpy python3-pandas python3-h5py python3-matplotlib"


def ensure(tool):
    """Re-exec under HERD_PYTHON when it names another Python; then exit 2
    with one line if a module in NEEDED is missing."""
    want = os.environ.get("HERD_PYTHON", "")
    if want and os.environ.get("HERD_PYTHON_STARTED") != want:
        os.environ["HERD_PYTHON_STARTED"] = want  # (once: no loop)
        try:
            os.execv(want, [want, sys.argv[0], *sys.argv[1:]])
        except OSError as e:
            print(f"{tool}: HERD_PYTHON={want}: cannot start it: {e.strerror}", file=sys.stderr)
            sys.exit(2)
    missing = [m for m in NEEDED if importlib.util.find_spec(m) is None]
    if missing:
        print(f"{tool}: the Python running it ({sys.executable}) has no module "
              f"{', '.join(missing)}: install {'it' if len(missing) == 1 else 'them'} for that "
              f"Python (Debian: {DEBIAN}), or name one that has them: "
              f"HERD_PYTHON=/usr/bin/python3 {tool} ...", file=sys.stderr)
        sys.exit(2)


def summary(doc):
    """A tool's docstring's first paragraph as one line: its --help's
    description, whole (a first line alone ends mid-sentence)."""
    return " ".join(doc.strip().split("\n\n")[0].split())
