"""Atomic file output: a reader sees the old file or the whole new one, never half.

Every file specsim writes goes through :func:`atomic_write_bytes`: the data is
written to a temporary file in the destination folder, flushed to disk and
moved over the destination with ``os.replace`` (atomic on POSIX and Windows).
Built-in hardware profiles are refused as destinations.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

__all__ = ["atomic_write_bytes", "atomic_write_text", "refuse_builtin"]


def refuse_builtin(path: str | Path) -> None:
    """Raise ValueError if ``path`` would replace a built-in datasheet profile.

    The top of the built-in folder (``hardware/*.yaml``) is never written;
    its ``measurements/`` subfolder is where calibrated profiles are
    regenerated, on purpose, by ``specsim calibrate``.
    """
    from .hardware import builtin_dir

    target = Path(path).expanduser().resolve()
    root = builtin_dir().resolve()
    if target == root or target.parent == root:
        raise ValueError(f"refusing to write {str(path)!r}: built-in profiles in {root} are never overwritten; choose another --out")


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
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    # mkstemp creates the file private (0600); give the result the permissions a plain open() would.
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def atomic_write_text(path: str | Path, text: str) -> Path:
    """Write UTF-8 ``text`` to ``path`` atomically."""
    return atomic_write_bytes(path, text.encode("utf-8"))
