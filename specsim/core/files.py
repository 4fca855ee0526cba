"""Atomic file output: a reader sees the old file or the whole new one, never half.

Every file specsim writes goes through :func:`atomic_write_bytes`: the data is
written to a temporary file in the destination folder, flushed to disk and
moved over the destination with ``os.replace`` (atomic on POSIX and Windows).
Built-in hardware profiles are refused as destinations.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

__all__ = [
    "atomic_write_bytes",
    "atomic_write_many",
    "atomic_write_text",
    "builtin_dir",
    "check_output",
    "existing_file",
    "read_text",
    "refuse_builtin",
]


def read_text(path: str | Path, what: str) -> str:
    """A user's text file, or ValueError naming ``what`` it is and why it cannot be read (missing, not UTF-8).

    >>> read_text("/nonexistent/x.csv", "trace")
    Traceback (most recent call last):
    ValueError: trace '/nonexistent/x.csv' does not exist
    """
    from specsim.core.limits import _read_text

    p = Path(path)
    if not p.is_file():
        raise ValueError(f"{what} {str(path)!r} does not exist")
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


def refuse_builtin(path: str | Path) -> None:
    """Raise ValueError if ``path`` lies in the built-in profiles (datasheet or calibrated).

    Nothing under the built-in folder is ever written by a command: to
    regenerate a calibrated profile, write it elsewhere and review the change
    before copying it in.
    """
    loop = ValueError(f"cannot write {str(path)!r}: it is a symlink loop")
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
            f"refusing to write {str(path)!r}: the built-in profiles in {root} are never overwritten; choose another --out"
        )


def check_output(path: str | Path, suffixes: tuple[str, ...] = (), flag: str = "--out") -> Path:
    """Check an output path before any work: allowed suffix, not built in, folder exists and is writable.

    >>> check_output("/nonexistent-folder/x.csv")
    Traceback (most recent call last):
    ValueError: cannot write '/nonexistent-folder/x.csv': folder '/nonexistent-folder' does not exist
    """
    if not str(path).strip():  # Path("") is ".": an empty --out would otherwise be read as the current folder
        raise ValueError(f"{flag} needs a file name, got an empty one")
    path = Path(path).expanduser()
    if suffixes and path.suffix not in suffixes:
        raise ValueError(f"{flag} must end in {' or '.join(suffixes)}, got {str(path)!r}")
    refuse_builtin(path)
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise ValueError(f"cannot write {str(path)!r}: folder {str(folder)!r} does not exist")
    if path.is_dir():
        raise ValueError(f"cannot write {str(path)!r}: it is a folder")
    if not os.access(folder, os.W_OK):
        raise ValueError(f"cannot write {str(path)!r}: folder {str(folder)!r} is not writable")
    return path


def atomic_write_bytes(path: str | Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically and return the path.

    >>> import tempfile, pathlib
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "x.txt"
    >>> atomic_write_bytes(out, b"hello").read_bytes()
    b'hello'
    """
    path = Path(path).expanduser()
    refuse_builtin(path)
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise ValueError(f"cannot write {str(path)!r}: folder {str(folder)!r} does not exist")
    tmp = _stage(path, data)
    try:
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def _stage(path: Path, data: bytes) -> str:
    """Write ``data`` in full to a temporary file beside ``path`` (synced to disk) and return its name."""
    import tempfile  # here, not at import: it brings random and shutil, which a command that writes nothing never needs

    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent if str(path.parent) else ".")
    # mkstemp creates the file private (0600); give the result the permissions a plain open() would.
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return tmp


def atomic_write_many(files: list[tuple[str | Path, bytes]]) -> list[Path]:
    """Write several files all-or-nothing: every one is staged in full before any is moved into place.

    A failure while staging (disk full, permissions) leaves every destination as it was.
    """
    staged: list[tuple[str, Path]] = []
    try:
        for path, data in files:
            path = Path(path).expanduser()
            check_output(path)
            staged.append((_stage(path, data), path))
    except BaseException:
        for tmp, _ in staged:
            Path(tmp).unlink(missing_ok=True)
        raise
    for tmp, path in staged:
        os.replace(tmp, path)
    return [path for _, path in staged]


def atomic_write_text(path: str | Path, text: str) -> Path:
    """Write UTF-8 ``text`` to ``path`` atomically."""
    return atomic_write_bytes(path, text.encode("utf-8"))
