"""herd_output — where herd-report and herd-compare write, and how: the one
rule for every file the analysis tools make (docs/analysis.md, "Where the
tools write"). Standard library only.

    with OutputDir(path, allow_foreign=False) as outdir:  # checked now
        with outdir.new_file("phases.csv") as f:   # text (UTF-8) or binary=True
            frame.to_csv(f, index=False)
        outdir.write_file("index.html", page)       # the same, for a str
        outdir.path("index.html")                   # as the user named it

The directory: one that exists must be a directory (not a symbolic link to
one, nor any other kind of file) owned by the caller (the effective uid),
unless allow_foreign; one that is missing is made (0755 under the umask,
missing parents as well, resolved as the user typed them) when the first
file is written. It is opened once (O_DIRECTORY | O_NOFOLLOW) and every
later call is relative to that descriptor, so a directory swapped for a
link after the check changes nothing.

A file: written whole under a fresh temporary name in the directory
(O_CREAT | O_EXCL | O_NOFOLLOW, a random suffix), flushed, then renamed
over NAME. Not fsynced: a report is made again from its results file in
seconds, and an fsync per file on a busy disk made a report of 25 files
take 20 s where 3 s of CPU did the work; a reader never sees a file half
written, though a power cut right after may leave one empty. The rename replaces NAME as a directory entry: a
link planted there, symbolic or hard, is replaced and never written
through; a regular file is replaced (a rerun); a directory or any other
kind of file at NAME is refused and left as it is. On a failure only the
temporary file is removed, and only while it is still the file this call
made.

Every refusal and failure is OutputError, with one line.
"""
import argparse
import contextlib
import os
import pwd
import secrets
import stat
from typing import IO, Any, Iterator, Optional, cast

DIR_MODE = 0o755
FILE_MODE = 0o666  # as open() makes files: the umask takes the rest
TEMP_TRIES = 100
FOREIGN_OPTION = "--allow-foreign-dir"

_KINDS = (
    (stat.S_ISREG, "a regular file"),
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISLNK, "a symbolic link"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


class OutputError(Exception):
    """An output the tools refuse to write, or could not write: one line."""


def add_foreign_option(parser: argparse.ArgumentParser) -> None:
    """The command-line flag that lets a tool write into another user's
    directory (argparse: args.allow_foreign_dir)."""
    parser.add_argument(
        FOREIGN_OPTION,
        action="store_true",
        help="write into an existing output directory owned by another user "
        "(refused by default: its owner could change what is written)",
    )


def file_kind(mode: int) -> str:
    """'a directory', 'a FIFO', ... for a stat mode."""
    return next((words for test, words in _KINDS if test(mode)), "a special file")


def user_name(uid: int) -> str:
    try:
        return f"user {pwd.getpwuid(uid).pw_name} (uid {uid})"
    except KeyError:
        return f"uid {uid}"


class OutputDir:
    """One output directory, opened once; see the module's text."""

    def __init__(self, path: str, allow_foreign: bool = False) -> None:
        self.name = path  # as typed: the listing's paths start with it
        # 'link/' would make the kernel follow the link: no trailing slash.
        self._path = path.rstrip("/") or "/"
        self._allow_foreign = allow_foreign
        self._fd: Optional[int] = None
        with contextlib.suppress(FileNotFoundError):  # missing: made at the first file
            self._open()

    def __enter__(self) -> "OutputDir":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def path(self, name: str) -> str:
        return os.path.join(self.name, name)

    def _open(self) -> None:
        flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            fd = os.open(self._path, flags)
        except FileNotFoundError:
            raise
        except OSError as e:
            raise OutputError(self._refusal(e)) from None
        try:
            owner = os.fstat(fd).st_uid
            if owner != os.geteuid() and not self._allow_foreign:
                raise OutputError(
                    f"{self.name}: the output directory belongs to "
                    f"{user_name(owner)}, not to you: refused "
                    f"({FOREIGN_OPTION} writes there anyway)"
                )
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd

    def _refusal(self, error: OSError) -> str:
        """Why the directory could not be opened, in words."""
        try:
            mode = os.lstat(self._path).st_mode
        except OSError:
            mode = None
        if mode is not None and stat.S_ISLNK(mode):
            return (
                f"{self.name}: the output directory is a symbolic link: refused "
                "(name the directory itself)"
            )
        if mode is not None and not stat.S_ISDIR(mode):
            return f"{self.name}: exists and is {file_kind(mode)}, not a directory"
        return f"{self.name}: cannot open the output directory ({error.strerror})"

    def _made(self) -> int:
        """The directory's descriptor, making the directory if it is missing."""
        if self._fd is not None:
            return self._fd
        parent = os.path.dirname(self._path)
        try:
            if parent:
                os.makedirs(parent, exist_ok=True)
            with contextlib.suppress(FileExistsError):  # made meanwhile: checked below
                os.mkdir(self._path, DIR_MODE)
            self._open()
        except OutputError:
            raise
        except OSError as e:
            raise OutputError(
                f"{self.name}: cannot make the output directory " f"({e.strerror})"
            ) from None
        assert self._fd is not None  # _open() set it, or raised
        return self._fd

    def _check_entry(self, dirfd: int, name: str) -> None:
        """Refuse a name held by anything but a regular file or a link."""
        try:
            mode = os.lstat(name, dir_fd=dirfd).st_mode
        except FileNotFoundError:
            return
        except OSError as e:
            raise OutputError(f"{self.path(name)}: cannot look at it ({e.strerror})") from None
        if not (stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
            raise OutputError(
                f"{self.path(name)}: exists and is {file_kind(mode)}: refused "
                "(only a regular file or a link there is replaced)"
            )

    def _create_temp(self, dirfd: int, name: str) -> tuple[int, str]:
        """(descriptor, name) of a fresh file beside NAME."""
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        for _ in range(TEMP_TRIES):
            temp = f".{name}.{secrets.token_hex(6)}.tmp"
            try:
                return os.open(temp, flags, FILE_MODE, dir_fd=dirfd), temp
            except FileExistsError:
                continue
            except OSError as e:
                raise OutputError(
                    f"{self.path(name)}: cannot create a file in " f"{self.name} ({e.strerror})"
                ) from None
        raise OutputError(f"{self.path(name)}: no free temporary name in {TEMP_TRIES} tries")

    @contextlib.contextmanager
    def new_file(self, name: str, binary: bool = False) -> Iterator[IO[Any]]:
        """A file object to write NAME into; NAME is replaced when the block
        ends without an exception, and left as it was otherwise."""
        dirfd = self._made()
        self._check_entry(dirfd, name)
        fd, temp = self._create_temp(dirfd, name)
        made = os.fstat(fd)
        try:
            # (one IO type for the caller, binary or text)
            with cast(
                IO[Any], open(fd, "wb") if binary else open(fd, "w", encoding="utf-8", newline="")
            ) as f:
                yield f
                f.flush()
            os.replace(temp, name, src_dir_fd=dirfd, dst_dir_fd=dirfd)
        except BaseException as e:
            self._remove_temp(dirfd, temp, made)
            if isinstance(e, OSError):
                raise OutputError(
                    f"{self.path(name)}: cannot write it " f"({e.strerror or e})"
                ) from None
            raise

    def write_file(self, name: str, text: str) -> str:
        """NAME holding text (UTF-8); returns its path."""
        with self.new_file(name) as f:
            f.write(text)
        return self.path(name)

    @staticmethod
    def _remove_temp(dirfd: int, temp: str, made: os.stat_result) -> None:
        """Unlink temp if it is still the inode this call created."""
        with contextlib.suppress(OSError):
            now = os.lstat(temp, dir_fd=dirfd)
            if (now.st_dev, now.st_ino) == (made.st_dev, made.st_ino):
                os.unlink(temp, dir_fd=dirfd)
