"""herd's command line, as an IOR or fio user meets it: help per command
(`herd COMMAND --help`, `-h`, `herd help COMMAND`, all the same text), the
overview (`herd --help`) made of the same sections, and the options the
parser accepts held to the help text: every option a command's help lists
is accepted by that command (before --help, which then prints the help and
exits 0), in both forms (`--set K=V`, `--set=K=V`), and every option of
another command is refused with one line naming the command's help. Sizes
in fio's forms (16MB, a power of 2) and decimals that give whole bytes
(1.5M); a refused size names the forms accepted. `herd check -` and
`herd run -` read the job from standard input. The end of a run: `--json -`
(the summary on standard output alone), `-q`, `herd help units`;
`herd version` is a command like the others.

Run: HERD_BIN=build/herd /usr/bin/python3 -m pytest -q tests/integration/test_cli.py
"""
import json
import os
import re
import shutil
import subprocess

import pytest

from conftest import (describe, herd_cmd, herd_run, load_results, mpi_env, mpirun_args,
                      run_cmd, tree)

COMMANDS = ["run", "check", "keys", "version", "help"]
OPTION_LINE = re.compile(r"^  (?:(-[a-zA-Z]), )?(--[a-z-]+)(?: ([A-Z][A-Z=]*))?  ")
VALUES = {"FILE": "x.out", "N": "2", "KEY=VALUE": "block_size=1M", "KINDS": "write,read",
          "TEXT": "nightly"}


def options_of(text):
    """[(alias, name, argument)] of a command's help text."""
    found = []
    for line in text.splitlines():
        m = OPTION_LINE.match(line)
        if m:
            found.append(m.groups())
    return found


def command_help(herd_bin, command):
    proc = herd_cmd(herd_bin, command, "--help")
    assert proc.returncode == 0 and proc.stderr == "", describe(proc)
    return proc.stdout


@pytest.mark.parametrize("command", COMMANDS)
def test_help_per_command(herd_bin, command):
    text = command_help(herd_bin, command)
    assert text.startswith(f"usage: herd {command}"), text
    assert ("--help", None) in [(n, a) for _, n, a in options_of(text)], text
    for form in ([command, "-h"], ["help", command]):
        proc = herd_cmd(herd_bin, *form)
        assert proc.returncode == 0, describe(proc)
        assert proc.stdout == text, (form, proc.stdout)
    for line in text.splitlines():
        if command != "run":
            assert len(line) <= 80, line


def test_overview_is_made_of_the_commands_help(herd_bin):
    """herd --help holds every command's help below its name (the same
    lines, from the same table), a usage line per command, exit codes."""
    overview = herd_cmd(herd_bin, "--help").stdout
    for command in COMMANDS:
        text = command_help(herd_bin, command)
        usage, *rest = text.rstrip("\n").splitlines()
        assert re.search(rf"^(usage:|      ) {re.escape(usage[len('usage: '):])}$", overview,
                         re.M), usage
        assert f"{command}:\n" + "\n".join(rest) + "\n" in overview, command
    assert "exit codes: 0 clean; 2 bad input" in overview and "4 an output" in overview
    assert "3 the run completed" in overview


@pytest.mark.parametrize("command", ["run", "check"])
def test_every_listed_option_is_accepted(herd_bin, command):
    listed = options_of(command_help(herd_bin, command))
    assert len(listed) >= 3, listed
    for alias, name, arg in listed:
        if name == "--help":
            continue
        words = [name] + ([VALUES[arg]] if arg else [])
        forms = [words] + ([[alias] + words[1:]] if alias else [])
        if arg:
            forms.append([f"{name}={VALUES[arg]}"])
        for form in forms:
            proc = herd_cmd(herd_bin, command, "job.ini", *form, "--help")
            assert proc.returncode == 0, (form, describe(proc))
            assert proc.stdout.startswith(f"usage: herd {command}"), form


@pytest.mark.parametrize("command", COMMANDS)
def test_other_commands_options_are_refused(herd_bin, command):
    mine = {n for _, n, _ in options_of(command_help(herd_bin, command))}
    others = {(n, a) for c in COMMANDS if c != command
              for _, n, a in options_of(command_help(herd_bin, c))}
    refused = [(n, a) for n, a in sorted(others, key=str) if n not in mine]
    if command in ("keys", "version", "help"):
        assert refused, "keys, version and help take no run or check option"
    for name, arg in refused + [("--frobnicate", None)]:
        words = [name] + ([VALUES[arg]] if arg else [])
        proc = herd_cmd(herd_bin, command, *words)
        assert proc.returncode == 2 and proc.stdout == "", (name, describe(proc))
        assert proc.stderr == f"herd: unknown option '{name}' (see herd {command} --help)\n", \
            describe(proc)


@pytest.mark.parametrize("args,line", [
    (["check", "job.ini", "--set"], "herd: '--set' needs a value (see herd check --help)"),
    (["run", "job.ini", "-o"], "herd: '-o' needs a value (see herd run --help)"),
    (["run", "job.ini", "--force=yes"], "herd: '--force=yes' takes no value (see herd run --help)"),
    (["check", "a.ini", "b.ini"], "herd: unexpected argument 'b.ini' (see herd check --help)"),
    (["help", "frob"],
     "herd: help: no command 'frob' (run, check, keys, tables, version, mix-from, help; "
     "or units)"),
    (["version", "x"], "herd: unexpected argument 'x' (see herd version --help)"),
    (["check", "job.ini", "-n", "0"], "herd: -n 0: expected a number of ranks (1-10000000)"),
    (["--version", "x"], "herd: unexpected argument 'x'"),
    (["keys", "extra"], "herd: unexpected argument 'extra' (see herd keys --help)"),
])
def test_refusals_are_one_line(herd_bin, args, line):
    proc = herd_cmd(herd_bin, *args)
    assert proc.returncode == 2 and proc.stdout == "", describe(proc)
    assert proc.stderr == line + "\n", describe(proc)


def test_set_joined_form_sets_the_key(herd_bin, tmp_path):
    """--set=KEY=VALUE is --set KEY=VALUE: the same resolved job."""
    job = tmp_path / "j.ini"
    job.write_text(f"[global]\ntarget = {tmp_path}\n[w]\nkind = write\n")
    two = herd_cmd(herd_bin, "check", job, "--set", "block_size=64K")
    one = herd_cmd(herd_bin, "check", job, "--set=block_size=64K")
    assert two.returncode == one.returncode == 0, describe(one)
    assert one.stdout == two.stdout and " 64K " in one.stdout, one.stdout


@pytest.mark.parametrize("given,same", [("16MB", "16M"), ("16MiB", "16M"), ("1.5M", "1536K"),
                                        ("0.5K", "512"), ("2.25G", "2304M")])
def test_size_forms(herd_bin, tmp_path, given, same):
    """fio's MB (a power of 2, as fio's kb_base = 1024) and decimals that
    give whole bytes resolve to the same job as the plain form."""
    job = tmp_path / "j.ini"
    job.write_text(f"[global]\ntarget = {tmp_path}\nblock_size = 512\n[w]\nkind = write\n")
    a = herd_cmd(herd_bin, "check", job, "--set", f"file_size={given}")
    b = herd_cmd(herd_bin, "check", job, "--set", f"file_size={same}")
    assert a.returncode == b.returncode == 0, describe(a)
    assert a.stdout == b.stdout, (a.stdout, b.stdout)


@pytest.mark.parametrize("bad", ["0.1K", "1.5", "16KBB", "1,5M", "-1M", "1e6"])
def test_size_refusal_lists_the_forms(herd_bin, tmp_path, bad):
    job = tmp_path / "j.ini"
    job.write_text(f"[global]\ntarget = {tmp_path}\n[w]\nkind = write\n")
    proc = herd_cmd(herd_bin, "check", job, "--set", f"file_size={bad}")
    assert proc.returncode == 2, describe(proc)
    assert proc.stderr.count("\n") == 1 and f"'{bad}' is not a size" in proc.stderr, describe(proc)
    for form in ("64K", "16MB", "16MiB", "1.5G", "K = 1024"):
        assert form in proc.stderr, describe(proc)


def job_text(target):
    return (f"[global]\ntarget = {target}\nfile_size = 256K\nblock_size = 64K\n"
            "[w]\nkind = write\n[r]\nkind = read\nverify = yes\n")


def test_check_reads_the_job_from_stdin(herd_bin, tmp_path):
    """herd check - : the job from standard input, the same phases as the
    file; its messages name <stdin> and the line."""
    (tmp_path / "t").mkdir()
    text = job_text(tmp_path / "t")
    job = tmp_path / "j.ini"
    job.write_text(text)
    piped = subprocess.run([herd_bin, "check", "-", "-n", "4"], input=text,
                           capture_output=True, text=True, timeout=60)
    filed = herd_cmd(herd_bin, "check", job, "-n", "4")
    assert piped.returncode == filed.returncode == 0, describe(piped)
    assert piped.stdout.startswith("job <stdin>: 2 phases"), piped.stdout
    assert piped.stdout.splitlines()[1:] == filed.stdout.splitlines()[1:]
    bad = subprocess.run([herd_bin, "check", "-"], input=text.replace("kind = read", "kind = rd"),
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and bad.stderr.startswith("herd: <stdin>:8: key 'kind'"), \
        describe(bad)


def test_check_and_run_read_a_shell_pipe(herd_bin, tmp_path):
    """herd check <(...) and a singleton herd run <(...): the shell's pipe
    is read as the job file (the same phases as the file); a named FIFO is
    still refused without waiting for a writer; under mpirun the ranks do
    not hold mpirun's /dev/fd/N, and the one line says to pipe the job."""
    (tmp_path / "t").mkdir()
    job = tmp_path / "j.ini"
    job.write_text(job_text(tmp_path / "t"))
    filed = herd_cmd(herd_bin, "check", job, "-n", "4")
    piped = subprocess.run(["bash", "-c", 'exec "$1" check <(cat "$2") -n 4', "sh", herd_bin,
                            job], capture_output=True, text=True, timeout=60)
    assert piped.returncode == filed.returncode == 0, describe(piped)
    assert re.match(r"job /dev/fd/\d+: 2 phases", piped.stdout), piped.stdout
    assert piped.stdout.splitlines()[1:] == filed.stdout.splitlines()[1:]
    out = tmp_path / "pipe.h5"
    ran = subprocess.run(["bash", "-c", 'exec "$1" run <(cat "$2") -o "$3"', "sh", herd_bin,
                          job, out], capture_output=True, text=True, timeout=120, env=mpi_env())
    assert ran.returncode == 0, describe(ran)
    assert load_results(out).phase_names == ["w", "r"]
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    refused = herd_cmd(herd_bin, "check", fifo, timeout=10)
    assert refused.returncode == 2 and refused.stderr == \
        f"herd: {fifo}: cannot read job file: not a regular file\n", describe(refused)
    args = " ".join(f"'{a}'" for a in mpirun_args(herd_bin, 1, "run"))
    under = subprocess.run(["bash", "-c", f'exec {args} <(cat "$1") -o "$2"', "sh", job,
                            tmp_path / "mpi.h5"], capture_output=True, text=True, timeout=120,
                           env=mpi_env())
    assert under.returncode != 0, describe(under)
    assert "not open in this process (a `<(...)` given to mpirun stays with mpirun: " \
        "herd run - < FILE)" in under.stderr, describe(under)
    assert not (tmp_path / "mpi.h5").exists()


NOT_OPEN = "cannot read job file: not open in this process (a `<(...)` given to mpirun " \
    "stays with mpirun: herd run - < FILE)"
LAUNCHED = "cannot read job file: a rank that a launcher started reads no descriptor above 2 " \
    "(mpirun and srun pass on only 0-2 of your shell's: herd run - < FILE)"


def herd_lines(proc):
    """What herd itself printed on stderr (mpirun -q adds nothing else but
    its abort notice)."""
    return [line for line in proc.stderr.splitlines() if line.startswith("herd: ")]


def test_run_refuses_a_descriptor_the_rank_did_not_get(herd_bin, tmp_path):
    """A job file named /dev/fd/N that the rank did not get from its own
    shell is refused in one line, exit 2, before anything runs: under
    mpirun the user's `exec 7<job.ini` stays with mpirun (in the rank, 7
    is Open MPI's own pipe once MPI starts: a read of it waited for ever);
    a rank's descriptor above 2 is refused under a launcher even when open
    (here one the rank's own shell opened); a singleton refuses one its
    shell did not open (MPI_Init opens its pipes and sockets there) and
    reads one it did, as a shell pipe. The waits are bounded generously:
    the assertions are on the message, the exit code and the files."""
    (tmp_path / "t").mkdir()
    job = tmp_path / "j.ini"
    job.write_text(job_text(tmp_path / "t"))
    out = tmp_path / "r.h5"
    mpirun = " ".join(f"'{a}'" for a in mpirun_args(herd_bin, 1, "run", quiet=True))
    given = run_cmd(["bash", "-c", f'exec 7<"$1"; exec {mpirun} /dev/fd/7 -o "$2"', "sh", job,
                     out], timeout=60)
    assert given.returncode != 0, describe(given)
    assert herd_lines(given) == [f"herd: /dev/fd/7: {NOT_OPEN}"], describe(given)
    inside = run_cmd(mpirun_args(herd_bin, 1, quiet=True)[:-1] +
                     ["bash", "-c", 'exec 7<"$1"; exec "$2" run /dev/fd/7 -o "$3"', "sh", job,
                      herd_bin, out], timeout=60)
    assert inside.returncode != 0, describe(inside)
    assert herd_lines(inside) == [f"herd: /dev/fd/7: {LAUNCHED}"], describe(inside)
    for n in range(3, 15):
        alone = run_cmd([herd_bin, "run", f"/dev/fd/{n}", "-o", out], timeout=60)
        assert alone.returncode == 2, describe(alone)
        assert alone.stderr == f"herd: /dev/fd/{n}: {NOT_OPEN}\n", describe(alone)
    assert not out.exists() and tree(tmp_path / "t") == []
    ran = run_cmd(["bash", "-c", 'exec 7<"$1"; exec "$2" run /dev/fd/7 -o "$3"', "sh", job,
                   herd_bin, out], timeout=120)
    assert ran.returncode == 0, describe(ran)
    assert load_results(out).phase_names == ["w", "r"]


def test_run_reads_the_job_from_stdin(herd_bin, tmp_path):
    """mpirun ... herd run - : rank 0 reads the job from standard input (as
    mpirun forwards it) and sends it to every rank: the same phases and
    bytes as the job file gives, and the target left empty."""
    target = tmp_path / "t"
    target.mkdir()
    job = tmp_path / "j.ini"
    job.write_text(job_text(target))
    filed = herd_run(herd_bin, 2, job, tmp_path / "file.h5")
    assert filed.returncode == 0, describe(filed)
    args = mpirun_args(herd_bin, 2, "run", "-", "-o", tmp_path / "stdin.h5")
    piped = subprocess.run(args, input=job_text(target), capture_output=True, text=True,
                           timeout=120, env=mpi_env())
    assert piped.returncode == 0, describe(piped)
    a, b = load_results(tmp_path / "file.h5"), load_results(tmp_path / "stdin.h5")
    assert a.phase_names == b.phase_names == ["w", "r"]
    for name in a.phase_names:
        assert a.phases[name].attrs["summary_bytes"] == b.phases[name].attrs["summary_bytes"] \
            == 2 * 256 * 1024, name
    assert b.attrs["job_path"] == "<stdin>"
    assert tree(target) == []


def test_one_line_job_and_its_file(herd_bin, tmp_path):
    """--phase KINDS with --set instead of a job file (as fio's --rw and
    --bs): herd check --print-job prints the equivalent file, which checks
    to the same phases; herd run of the one-liner gives the phases, bytes
    and verify of the file's run."""
    target = tmp_path / "t"
    target.mkdir()
    line = ["--phase", "write,read,md5,read", "--set", f"target={target}",
            "--set", "file_size=256K", "--set=block_size=64K", "--set", "read.verify=yes"]
    printed = herd_cmd(herd_bin, "check", *line, "--print-job")
    assert printed.returncode == 0, describe(printed)
    job = tmp_path / "printed.ini"
    job.write_text(printed.stdout)
    one = herd_cmd(herd_bin, "check", *line, "-n", "2")
    filed = herd_cmd(herd_bin, "check", job, "-n", "2")
    assert one.returncode == filed.returncode == 0, describe(filed)
    assert one.stdout.startswith("job --phase: 4 phases"), one.stdout
    assert one.stdout.splitlines()[1:] == filed.stdout.splitlines()[1:]
    run = subprocess.run(mpirun_args(herd_bin, 2, "run", *line, "-o", tmp_path / "one.h5"),
                         capture_output=True, text=True, timeout=120, env=mpi_env())
    assert run.returncode == 0, describe(run)
    res = load_results(tmp_path / "one.h5")
    assert res.phase_names == ["write", "read", "md5", "read-2"]
    for name in res.phase_names:
        assert res.phases[name].attrs["summary_bytes"] == 2 * 256 * 1024, name
    assert res.phases["read"].attrs["verify"] in (1, True, b"yes", "yes")
    assert tree(target) == []


def test_label_and_server_fs_are_recorded(herd_bin, tmp_path):
    """--label TEXT (= --set label=TEXT), else the job's label, else
    HERD_LABEL, is the root attribute label, the --json summary's "label"
    and on the run's first line; HERD_SERVER_FS is the root attribute and
    JSON field server_fs. Unset, both are empty strings; a HERD_SERVER_FS
    that is no file system's name is left out with one warning."""
    target = tmp_path / "t"
    target.mkdir()
    base = ["--phase", "write", "--set", f"target={target}", "--set", "file_size=64K",
            "--set", "block_size=64K"]

    def run(name, *extra, **env):
        out, summary = tmp_path / f"{name}.h5", tmp_path / f"{name}.json"
        proc = run_cmd(mpirun_args(herd_bin, 2, "run", *base, *extra, "-o", out,
                                   "--json", summary), env=dict(mpi_env(), **env))
        assert proc.returncode == 0, describe(proc)
        attrs = load_results(out).attrs
        doc = json.loads(summary.read_text())
        assert (attrs["label"], attrs["server_fs"]) == (doc["label"], doc["server_fs"])
        return attrs["label"], attrs["server_fs"], proc.stderr

    label, fs, err = run("a", "--label", "xfs, sync — 3rd try", HERD_SERVER_FS="xfs",
                         HERD_LABEL="from the environment")
    assert (label, fs) == ("xfs, sync — 3rd try", "xfs")
    first = [ln for ln in err.splitlines() if ln.startswith("herd: run ")][0]
    assert first.endswith(", label xfs, sync — 3rd try"), err
    label, fs, err = run("b", "--set", "label=given", HERD_LABEL="from the environment")
    assert (label, fs) == ("given", "")
    label, fs, err = run("c", HERD_LABEL="from the environment", HERD_SERVER_FS="x fs")
    assert (label, fs) == ("from the environment", "")
    assert err.count("HERD_SERVER_FS: 'x fs' is not a file system's name") == 1, err
    env = {k: v for k, v in mpi_env().items() if k not in ("HERD_LABEL", "HERD_SERVER_FS")}
    proc = run_cmd(mpirun_args(herd_bin, 1, "run", *base, "-o", tmp_path / "d.h5"), env=env)
    assert proc.returncode == 0, describe(proc)
    attrs = load_results(tmp_path / "d.h5").attrs
    assert (attrs["label"], attrs["server_fs"]) == ("", "")
    assert ", label" not in proc.stderr
    check = herd_cmd(herd_bin, "check", *base, "--label", "nightly")
    assert check.stdout.splitlines()[0].endswith(", label nightly"), describe(check)


@pytest.mark.parametrize("args,words", [
    (["--label", "a\x01b"], "--set label: control byte 0x01 at byte 2 is not allowed"),
    (["--label", "a\u0085b"], "--set label: control character U+0085 at byte 2"),
    (["--label", "x" * 129], "--set label: longer than 128 characters"),
    (["--set", "write.label=x"], "describes the whole run: --set label=..., not per phase"),
])
def test_label_refusals(herd_bin, tmp_path, args, words):
    for command in ("check", "run"):
        proc = herd_cmd(herd_bin, command, "--phase", "write", "--set", f"target={tmp_path}",
                        *args)
        assert proc.returncode == 2 and proc.stdout == "", describe(proc)
        assert proc.stderr.count("\n") == 1 and words in proc.stderr, describe(proc)
    assert tree(tmp_path) == []


# What a terminal or CI log acts on instead of showing (reordering or
# breaking the line): herd-report's and herd-compare's list
# (analysis/herd_safe.py), one C1 control standing for its 32.
DISPLAY_CONTROLS = [0x85, 0x200e, 0x200f, 0x2028, 0x2029, *range(0x202a, 0x202f),
                    *range(0x2066, 0x206a)]


@pytest.mark.parametrize("code", DISPLAY_CONTROLS, ids=lambda c: f"U+{c:04X}")
def test_display_controls_never_printed_raw(herd_bin, tmp_path, code):
    """A label (job file, --label, HERD_LABEL) or any other value holding a
    display control is refused at parse in one line naming the key and the
    code point; a job file's path holding one is shown escaped (\\u202e,
    as herd-report shows it). herd never prints the character itself."""
    ch = chr(code)
    refused = f"control character U+{code:04X} at byte 2 is not allowed"
    job = tmp_path / "j.ini"
    job.write_text(f"[global]\ntarget = {tmp_path}\nlabel = a{ch}b\n[w]\nkind = write\n",
                   encoding="utf-8")
    for args, env, words in (([job], None, f"key 'label': {refused}"),
                             (["--phase", "write", "--set", f"target={tmp_path}",
                               "--label", f"a{ch}b"], None, f"--set label: {refused}"),
                             (["--phase", "write", "--set", f"target={tmp_path}{ch}"], None,
                              "--set target: control character"),
                             (["--phase", "write", "--set", f"target={tmp_path}"],
                              {"HERD_LABEL": f"a{ch}b"}, f"HERD_LABEL: {refused}: not used")):
        proc = subprocess.run([herd_bin, "check", *args], capture_output=True, text=True,
                              timeout=60, env=dict(os.environ, **(env or {})))
        assert ch not in proc.stdout + proc.stderr, describe(proc)
        assert words in proc.stderr and proc.stderr.count("\n") == 1, describe(proc)
        assert proc.returncode == (0 if env else 2), describe(proc)
    named = tmp_path / f"j{ch}.ini"
    named.write_text(f"[global]\ntarget = {tmp_path}\n[w]\nkind = write\n", encoding="utf-8")
    proc = herd_cmd(herd_bin, "check", named)
    assert proc.returncode == 0 and ch not in proc.stdout + proc.stderr, describe(proc)
    shown = f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
    assert proc.stdout.startswith(f"job {tmp_path}/j{shown}.ini: 1 phase"), describe(proc)


def test_run_line_escapes_display_controls(herd_bin, tmp_path):
    """The run's first line and its last name the results file (-o, not a
    job value) escaped: an RLO in its name reorders nothing."""
    target = tmp_path / "t"
    target.mkdir()
    out = tmp_path / "r\u202e.h5"
    proc = run_cmd(mpirun_args(herd_bin, 1, "run", "--phase", "write", "--set", f"target={target}",
                               "--set", "file_size=64K", "--set", "block_size=64K", "-o", out),
                   env=mpi_env())
    assert proc.returncode == 0, describe(proc)
    assert "\u202e" not in proc.stdout + proc.stderr, describe(proc)
    first = next(l for l in proc.stderr.splitlines() if l.startswith("herd: run "))
    assert f"results {tmp_path}/r\\u202e.h5" in first, first
    assert f"results: {tmp_path}/r\\u202e.h5 (status complete)" in proc.stdout, proc.stdout
    assert out.exists()

@pytest.mark.parametrize("args,words", [
    (["check", "--phase", "write,,read"], "expected kinds, comma separated"),
    (["check", "--phase", "Write"], "expected kinds"),
    (["check", "--phase", "write,wrte", "--set", "target=/x"], "--phase:4: key 'kind': 'wrte'"),
    (["check", "j.ini", "--phase", "write"], "a job file or --phase KINDS, not both"),
    (["check", "j.ini", "--print-job"], "--print-job goes with --phase"),
    (["check", "--phase", "write", "--set", "target=/x;y", "--print-job"], "--print-job: --set"),
])
def test_one_line_job_refusals(herd_bin, args, words):
    proc = herd_cmd(herd_bin, *args)
    assert proc.returncode == 2 and proc.stdout == "", describe(proc)
    assert proc.stderr.count("\n") == 1 and words in proc.stderr, describe(proc)


def probe(herd_bin, target, *extra, netns=False):
    """herd check --probe of a one-write job at target; in a network
    namespace of its own (lo only) when netns: a name lookup or connection
    there reaches nothing outside this test."""
    args = [herd_bin, "check", "--phase", "write", "--set", f"target={target}",
            "--set", "file_size=1M", *extra, "--probe"]
    if netns:
        args = ["unshare", "--net", "sh", "-c", 'ip link set lo up; exec "$@"', "sh",
                *map(str, args)]
    return subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=60)


def test_probe_finds_each_bad_target(herd_bin, tmp_path):
    """check --probe: one line per finding and exit 2 for a missing target,
    a file, one without write permission for the user, too little room, a
    refused port and a name that does not resolve (named as such); a good
    target is ok, exit 0."""
    good = tmp_path / "good"
    good.mkdir()
    ok = probe(herd_bin, good)
    assert ok.returncode == 0 and f"probe: {good}: ok (a writable directory" in ok.stdout, \
        describe(ok)
    (tmp_path / "file").write_text("x")
    cases = [(tmp_path / "missing", [], "does not exist"),
             (tmp_path / "file", [], "is not a directory"),
             (good, ["--set", "file_size=1000T"], "MiB free, the job writes up to")]
    for target, extra, words in cases:
        proc = probe(herd_bin, target, *extra)
        assert proc.returncode == 2, describe(proc)
        line = next(l for l in proc.stdout.splitlines() if l.startswith(f"probe: {target}: "))
        assert words in line, describe(proc)
        assert proc.stderr == "herd: --probe: 1 problem with the target\n", describe(proc)
    if os.geteuid() != 0:
        pytest.skip("the permission, port and name cases need root (setpriv, unshare --net)")
    import tempfile
    base = tempfile.mkdtemp(prefix="herd-probe-", dir="/tmp")  # (0700 parents above tmp_path)
    try:
        os.chmod(base, 0o755)
        locked = os.path.join(base, "locked")
        os.mkdir(locked, 0o755)  # root's: others may look, not write
        proc = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                               herd_bin, "check", "--phase", "write", "--set", f"target={locked}",
                               "--set", "file_size=1M", "--probe"],
                              capture_output=True, text=True, timeout=60)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    assert proc.returncode == 2 and "not writable by this user (uid 65534)" in proc.stdout, \
        describe(proc)
    nfs = ["--set", "backend=libnfs"]
    proc = probe(herd_bin, "nfs://127.0.0.1:1/export", *nfs, netns=True)
    assert proc.returncode == 2, describe(proc)
    assert "server 127.0.0.1 port 1: Connection refused" in proc.stdout, describe(proc)
    proc = probe(herd_bin, "nfs://herd-no-such-host/export", *nfs, netns=True)
    assert proc.returncode == 2, describe(proc)
    assert "server name 'herd-no-such-host' does not resolve" in proc.stdout, describe(proc)


@pytest.mark.parametrize("tool", ["herd-report", "herd-compare"])
def test_tools_help_describes_in_whole_sentences(tool):
    """The analysis tools' --help: the description is the docstring's whole
    first paragraph (it used to stop at the first line, mid-sentence)."""
    from conftest import REPO_DIR
    proc = subprocess.run(["/usr/bin/python3", str(REPO_DIR / "analysis" / tool), "--help"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, describe(proc)
    description = proc.stdout.split("\n\n")[1]
    assert description.startswith(f"{tool} — ") and description.rstrip().endswith("."), \
        description


# ---------------------------------------------------------------- the end of a run


def quick_run(herd_bin, tmp_path, name, *extra, faults=""):
    """2 ranks in tmp_path: a write and a read of 256K in 64K blocks (faults:
    the fault backend's rules on the write), with herd's own options."""
    target = tmp_path / "t"
    target.mkdir(exist_ok=True)
    sets = ["--set", f"target={target}", "--set", "file_size=256K", "--set", "block_size=64K"]
    if faults:
        sets += ["--set", "backend=fault", "--set", f"write.faults={faults}"]
    return run_cmd(mpirun_args(herd_bin, 2, "run", "--phase", "write,read", *sets,
                               "-o", tmp_path / f"{name}.h5", *extra, quiet=True), cwd=tmp_path)


@pytest.mark.parametrize("faults,code", [("", 0), ("write=EIO@0.5", 3)])
def test_json_to_standard_output(herd_bin, tmp_path, faults, code):
    """--json -: standard output holds the JSON summary alone (it parses as
    a whole), the table and the results line go to stderr, the exit code is
    the run's; with -q the table is dropped too. A path that names standard
    output by a link is still refused, and the refusal points at --json -."""
    proc = quick_run(herd_bin, tmp_path, "j", "--json", "-", faults=faults)
    assert proc.returncode == code, describe(proc)
    doc = json.loads(proc.stdout)
    assert doc["exit_code"] == code and [p["name"] for p in doc["phases"]] == ["write", "read"]
    assert re.search(r"^phase +kind +rows", proc.stderr, re.M), proc.stderr
    assert f"results: {tmp_path / 'j.h5'} (status complete)" in proc.stderr
    assert "units: MiB" in proc.stderr and "summary:" not in proc.stderr
    assert not (tmp_path / "-").exists()
    quiet = quick_run(herd_bin, tmp_path, "q", "--json", "-", "-q", faults=faults)
    assert quiet.returncode == code, describe(quiet)
    assert json.loads(quiet.stdout)["exit_code"] == code
    assert not re.search(r"^phase +kind", quiet.stderr, re.M), quiet.stderr
    assert "herd: phase write: " in quiet.stderr and "units:" not in quiet.stderr
    refused = quick_run(herd_bin, tmp_path, "r", "--json", "/dev/stdout")
    assert refused.returncode == 2 and refused.stdout == "", describe(refused)
    lines = refused.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("herd: --json /dev/stdout: ") and \
        lines[0].endswith(" (for standard output: --json -)"), describe(refused)


def test_quiet_keeps_the_phase_lines_and_the_table(herd_bin, tmp_path):
    """-q: no progress lines and no legend; the run line, the phase lines,
    the table and the results line stay. Without it both are there."""
    loud = quick_run(herd_bin, tmp_path, "loud")
    quiet = quick_run(herd_bin, tmp_path, "quiet", "-q")
    for proc in (loud, quiet):
        assert proc.returncode == 0, describe(proc)
        assert proc.stderr.startswith("herd: run ") and "herd: phase read: ok: " in proc.stderr
        assert re.search(r"^phase +kind +rows", proc.stdout, re.M), proc.stdout
        assert re.search(r"^read +read +2 ", proc.stdout, re.M), proc.stdout
        assert "results: " in proc.stdout
    progress = re.compile(r"^herd: (write|read): 2 ranks ", re.M)
    assert len(progress.findall(loud.stderr)) == 2 and "units: MiB" in loud.stdout, describe(loud)
    assert not progress.search(quiet.stderr) and "units:" not in quiet.stdout, describe(quiet)
    said = quiet.stderr.splitlines()
    assert len(said) == 3 and said[0].startswith("herd: run ") and \
        said[1].startswith("herd: phase write: ok: ") and \
        said[2].startswith("herd: phase read: ok: "), describe(quiet)


def test_help_units_is_the_legend(herd_bin):
    """herd help units prints the table's legend; the overview names the
    topic and no longer carries the legend, nor does run's help."""
    units = herd_cmd(herd_bin, "help", "units")
    assert units.returncode == 0 and units.stdout.startswith("units: MiB = 2^20 bytes"), \
        describe(units)
    assert "main/s = " in units.stdout and "calls/s = " in units.stdout
    overview = herd_cmd(herd_bin, "help").stdout
    assert "herd help units" in overview and "help [COMMAND|units]" in overview
    for text in (overview, herd_cmd(herd_bin, "run", "--help").stdout):
        assert "units: MiB" not in text
