"""Atomic file output: a reader sees the old file or the whole new one, never half.

Every file specsim writes goes through :func:`atomic_write_bytes` (or :func:`atomic_write_many`): the data is
written to a temporary file in the destination folder, flushed to disk and moved over the destination with
``os.replace`` (atomic on POSIX and Windows).  A destination that is a device or a pipe (``/dev/null``,
``/dev/stdout``) is written in place, as a shell writes it: moving a file over it would replace the device.  Built-in
hardware profiles are refused as destinations.

Every failure to write is one :class:`OutputError` (a ``ValueError``, so the CLI prints it as one line and exits 2)
that names the path the user gave, never the staging file, with the reason in plain words and what to do:
``cannot write 'out/x.yaml': folder 'out' does not exist (create it first)``.  The staging file is removed on any
failure.  :func:`check_output` asks the same questions before a command's work, by creating and removing an empty
staging file, so that a long run is not lost to a folder that takes no files.
"""

from __future__ import annotations

import errno
import os
import stat
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from specsim.core.names import given_as

__all__ = [
    "atomic_write_bytes",
    "atomic_write_many",
    "atomic_write_text",
    "builtin_dir",
    "cannot_write",
    "check_folder",
    "check_output",
    "existing_file",
    "file_digest",
    "make_folder",
    "OutputError",
    "read_text",
    "refuse_builtin",
    "writing",
]


def read_text(path: str | Path, what: str) -> str:
    """A user's text file, or ValueError naming ``what`` it is and why it cannot be read (missing, not UTF-8).

    >>> read_text("/nonexistent/x.csv", "trace")
    Traceback (most recent call last):
    ValueError: trace '/nonexistent/x.csv' does not exist
    """
    from specsim.core.limits import _read_text, not_a_file

    p = Path(path)
    if not p.is_file():
        raise ValueError(f"{what} {str(path)!r} {not_a_file(p)}")
    return _read_text(p, what)  # within the size budget (limits.MAX_TEXT_BYTES)


def existing_file(text: str) -> Path | None:
    """``text`` as the path of a file that exists, else None (a name too long for a path, or with a NUL, is none).

    The readers that take a built-in name or a path ask this first, so that a file named like a built-in is never
    silently shadowed by it.

    >>> existing_file("/nonexistent/h100") is None
    True
    """
    try:
        path = Path(text).expanduser()
        return path if path.is_file() else None
    except (OSError, ValueError, RuntimeError):
        return None


def file_digest(path: str | Path) -> str:
    """The first 12 hex digits of the sha256 of the file at ``path``: which file an answer read, whatever it is named
    (a calibration file's, a measurements file's).

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     (Path(d) / "a.csv").write_text("x\\n1\\n")
    ...     file_digest(Path(d) / "a.csv")
    4
    'daff832f8020'
    """
    import hashlib  # not at import: every command imports this module, few read a file they name by its hash

    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:12]


def builtin_dir() -> Path:
    """Folder holding the built-in profiles.

    An installed wheel has them in ``specsim/_hardware``; a source checkout
    (tests, editable installs) reads the repository's ``hardware/`` folder.
    """
    package = Path(__file__).resolve().parent.parent  # specsim/
    packaged = package / "_hardware"
    if packaged.is_dir() and any(packaged.glob("*.yaml")):
        return packaged
    return package.parent / "hardware"


class OutputError(ValueError):
    """A file or folder that cannot be written: ``cannot write '<path>': <reason> (<what to do>)``.

    ``path`` is the path the user gave (never the staging file) and ``reason`` the plain reason without the advice.

    >>> str(OutputError("out/x.yaml", "file name too long", "choose a shorter name"))
    "cannot write 'out/x.yaml': file name too long (choose a shorter name)"
    """

    def __init__(self, path: str | Path, reason: str, advice: str) -> None:
        super().__init__(f"cannot write {str(path)!r}: {reason} ({advice})")
        self.path, self.reason, self.advice = Path(path), reason, advice


def _file_in_the_way(path: Path, folder: bool) -> Path | None:
    """The first of ``path``'s folders (``path`` too if it is to be a folder) that exists and is not a folder."""
    chain = [*reversed(path.parents), path] if folder else list(reversed(path.parents))
    for part in chain:
        try:
            if not stat.S_ISDIR(os.stat(part).st_mode):
                return part
        except OSError:  # missing (or unreadable): nothing further down can be a file in the way
            return None
    return None


def _nearest_existing(folder: Path) -> Path:
    """``folder`` or the nearest of its parents that exists."""
    for part in (folder, *folder.parents):
        if os.path.isdir(part):
            return part
    return folder


def cannot_write(path: str | Path, err: OSError, *, folder: bool = False, parents: bool = False) -> OutputError:
    """The one line for ``err``, met writing ``path`` (a file, or with ``folder`` a folder, its missing parents made
    with ``parents``): the reason the OS gave in plain words, read again against what is on disk, and what to do.

    >>> import errno
    >>> str(cannot_write("/nonexistent-folder/x.csv", FileNotFoundError(errno.ENOENT, "No such file", "/x.tmp")))
    "cannot write '/nonexistent-folder/x.csv': folder '/nonexistent-folder' does not exist (create it first)"
    """
    path = Path(path)
    parent = path.parent if str(path.parent) else Path(".")
    number = err.errno
    if number == errno.ELOOP:
        return OutputError(path, "it is a symlink loop", "remove the link or choose another name")
    if number in (errno.ENOENT, errno.ENOTDIR, errno.EEXIST):
        blocker = _file_in_the_way(path, folder)
        if blocker == path:
            return OutputError(path, "it is a file, not a folder", "give a folder, or move the file")
        if blocker is not None:
            return OutputError(
                path, f"a file is in the way of folder {str(blocker)!r}", "move it or choose another path"
            )
        if number == errno.ENOENT:
            existing = _nearest_existing(parent)
            if existing != parent and not parents:
                return OutputError(path, f"folder {str(parent)!r} does not exist", "create it first")
            # /proc is one: the folder is there but takes no new entries
            return OutputError(path, f"folder {str(existing)!r} takes no new files", "choose another folder")
    if number == errno.EISDIR:
        return OutputError(path, "it is a folder", "give a file name")
    plain = {
        errno.ENAMETOOLONG: ("file name too long", "choose a shorter name"),
        errno.EROFS: ("read-only file system", "choose a writable folder"),
        errno.EACCES: ("permission denied", "choose a folder you can write to"),
        errno.EPERM: ("permission denied", "choose a folder you can write to"),
        errno.ENOSPC: ("no space left on the device", "free some space or choose another disk"),
        errno.EDQUOT: ("disk quota exceeded", "free some space or choose another disk"),
    }
    reason, advice = plain.get(number, ((err.strerror or type(err).__name__).lower(), "choose another path"))
    return OutputError(path, reason, advice)


@contextmanager
def writing(path: str | Path, *, folder: bool = False, parents: bool = False) -> Iterator[None]:
    """Turn an ``OSError`` raised inside into :func:`cannot_write`'s one line for ``path`` (the OS's own error names the
    staging file; this names the user's path)."""
    try:
        yield
    except OSError as err:
        raise cannot_write(path, err, folder=folder, parents=parents) from None


def refuse_builtin(path: str | Path) -> None:
    """Raise ValueError if ``path`` lies in the built-in profiles (datasheet or calibrated), or is a symlink loop.

    Nothing under the built-in folder is ever written by a command: to
    regenerate a calibrated profile, write it elsewhere and review the change
    before copying it in.
    """
    loop = cannot_write(path, OSError(errno.ELOOP, os.strerror(errno.ELOOP)))
    given = Path(path).expanduser()
    try:
        target = given.resolve()
    except RuntimeError:  # Python before 3.13 raises this for a symlink that leads back to itself
        raise loop from None
    try:  # Python 3.13 resolves a loop without complaint (and os.replace would then replace the link): ask the OS
        os.stat(given)
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise loop from None
    root = builtin_dir().resolve()
    if target == root or root in target.parents:
        raise ValueError(
            f"refusing to write {str(path)!r}: the built-in profiles in {root} are never overwritten; choose another "
            f"{given_as('path', '--out')}"  # the library's path (save_watch, atomic_write_bytes), a command's --out
        )


def check_output(path: str | Path, suffixes: tuple[str, ...] = (), flag: str | None = None) -> Path:
    """Check an output path before any work: allowed suffix, not built in, not a folder, and its folder takes a new
    file (an empty staging file is created there and removed).  ``flag`` names the path in a refusal (default: ``path``
    to a Python caller, ``--out`` on the command line, :func:`specsim.core.names.given_as`).

    >>> check_output("/nonexistent-folder/x.csv")
    Traceback (most recent call last):
    specsim.core.files.OutputError: cannot write '/nonexistent-folder/x.csv': folder '/nonexistent-folder' does not exist (create it first)
    """
    flag = given_as("path", "--out") if flag is None else flag
    if not str(path).strip():  # Path("") is ".": an empty --out would otherwise be read as the current folder
        raise ValueError(f"{flag} needs a file name, got an empty one")
    path = Path(path).expanduser()
    if suffixes and path.suffix not in suffixes:
        raise ValueError(f"{flag} must end in {' or '.join(suffixes)}, got {str(path)!r}")
    refuse_builtin(path)
    with writing(path):
        if path.is_dir():
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR))
        if _stream(path):  # written in place (a device or pipe): its folder need take no file
            return path
        fd, tmp = _open_staging(path)
        try:
            os.close(fd)
        finally:
            os.unlink(tmp)
    return path


def check_folder(path: str | Path) -> Path:
    """A folder that must exist already (a command writes its files into it; :func:`check_output` checks each).

    >>> check_folder("/nonexistent-folder")
    Traceback (most recent call last):
    specsim.core.files.OutputError: cannot write '/nonexistent-folder': no such folder (create it first)
    """
    path = Path(path).expanduser()
    refuse_builtin(path)
    with writing(path, folder=True):  # a name too long
        if not path.is_dir():
            if _file_in_the_way(path, folder=True) is not None:
                raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR))
            raise OutputError(path, "no such folder", "create it first")
    return path


@contextmanager
def make_folder(path: str | Path, *, parents: bool = False) -> Iterator[Path]:
    """Create the folder ``path`` (with ``parents`` its missing parents too; one that exists is kept) for the files
    written inside the ``with`` block; if the block fails, the folders this made are removed again (when empty).

    >>> with make_folder("/nonexistent-folder/figures"):
    ...     pass
    Traceback (most recent call last):
    specsim.core.files.OutputError: cannot write '/nonexistent-folder/figures': folder '/nonexistent-folder' does not exist (create it first)
    """
    import itertools

    path = Path(path).expanduser()
    refuse_builtin(path)
    made = list(itertools.takewhile(lambda p: not os.path.isdir(p), (path, *path.parents)))  # deepest first
    with writing(path, folder=True, parents=parents):
        path.mkdir(parents=parents, exist_ok=True)
    try:
        yield path
    except BaseException:
        for folder in made:
            try:
                folder.rmdir()
            except OSError:  # not empty (written by someone else meanwhile): kept
                break
        raise


def atomic_write_bytes(path: str | Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically and return the path.

    >>> import tempfile, pathlib
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "x.txt"
    >>> atomic_write_bytes(out, b"hello").read_bytes()
    b'hello'
    """
    path = Path(path).expanduser()
    refuse_builtin(path)
    with writing(path):
        if _stream(path):
            _write_stream(path, data)
            return path
        tmp = _stage(path, data)
        try:
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    return path


def _stream(path: Path) -> bool:
    """Whether ``path`` exists and is a device, pipe or socket (``/dev/null``, ``/dev/stdout``, a FIFO): written in
    place, as a shell's redirection writes it, never staged and moved over, which would put a regular file where the
    device was (run as root, ``--out /dev/null`` would have replaced the null device for every program on the machine).

    >>> _stream(Path("/dev/null")), _stream(Path("/nonexistent/x.csv"))
    (True, False)
    """
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def _write_stream(path: Path, data: bytes) -> None:
    """Write ``data`` to the device or pipe ``path`` (:func:`_stream`) as it is: nothing to stage, nothing to move."""
    with open(path, "wb") as handle:
        handle.write(data)


#: The most bytes of the destination's name a staging file's name repeats: ``.NAME.<8 random>.tmp`` must itself be a
#: legal name (255 bytes on Linux and macOS) whenever NAME is one.
_STAGING_NAME_BYTES = 200


def _open_staging(path: Path) -> tuple[int, str]:
    """A new, empty staging file beside ``path``: its descriptor and name."""
    import tempfile  # here, not at import: it brings random and shutil, which a command that writes nothing never needs

    name = path.name
    while len(os.fsencode(name)) > _STAGING_NAME_BYTES:
        name = name[:-1]
    return tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=path.parent if str(path.parent) else ".")


def _stage(path: Path, data: bytes) -> str:
    """Write ``data`` in full to a temporary file beside ``path`` (synced to disk) and return its name."""
    fd, tmp = _open_staging(path)
    try:
        with os.fdopen(fd, "wb") as handle:
            # mkstemp creates the file private (0600); give the result the permissions a plain open() would.
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return tmp


def atomic_write_many(files: list[tuple[str | Path, bytes]]) -> list[Path]:
    """Write several files all-or-nothing: every one is staged in full before any is moved into place.

    A failure while staging (disk full, permissions) leaves every destination as it was, and no staging file.
    """
    staged: list[tuple[str, Path]] = []
    try:
        for path, data in files:
            path = check_output(path)
            with writing(path):
                staged.append((None if _stream(path) else _stage(path, data), path, data))
        for tmp, path, data in staged:
            with writing(path):
                if tmp is None:
                    _write_stream(path, data)
                else:
                    os.replace(tmp, path)
    except BaseException:
        for tmp, _, _ in staged:  # those already moved into place are gone under this name
            if tmp is not None:
                Path(tmp).unlink(missing_ok=True)
        raise
    return [path for _, path, _ in staged]


def atomic_write_text(path: str | Path, text: str) -> Path:
    """Write UTF-8 ``text`` to ``path`` atomically."""
    return atomic_write_bytes(path, text.encode("utf-8"))
