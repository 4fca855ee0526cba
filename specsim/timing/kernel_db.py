"""Where NVIDIA AIConfigurator's kernel database and specsim's table cache live.

The installed ``aiconfigurator-core`` package (its ``systems/data`` folder and
version), the database's folder for each hardware profile, the newest
measurement folder of a device and engine, its files read once per process
(:func:`read_frame`), and the cache folder of built tables with the clean-up
of staging files a killed writer left.  The tables
themselves are composed in :mod:`specsim.timing.kernels`.
"""

from __future__ import annotations

import functools
import importlib.util
import math
import os
import re
import statistics
import sys
from pathlib import Path
from typing import Callable

from specsim.describe.hardware import HardwareProfile

__all__ = [
    "AIC_DISTRIBUTION",
    "AIC_VERSION",
    "BACKENDS",
    "DEVICE_FOLDERS",
    "STALE_STAGING_S",
    "KernelDataError",
    "KernelEnvironmentError",
    "require_engine_data",
    "cache_dir",
    "cache_file",
    "clear_stale_staging",
    "database_root",
    "database_version",
    "device_folder",
    "gemm_grid",
    "holding",
    "releases_holding",
    "kin_devices",
    "read_frame",
    "sustained_matmul_flop_per_s",
    "sustained_matmul_source",
]

AIC_DISTRIBUTION = "aiconfigurator-core"
#: The database version specsim is validated against (pyproject pins it).
AIC_VERSION = "0.12.0"

#: The database's backends, its folder names under each device's kernel folders (aiconfigurator_core/sdk/common.py
#: BackendName of 0.12.0): whose kernels an engine preset reads (its ``kernel_engine``).
BACKENDS = ("vllm", "sglang", "trtllm")

#: specsim hardware profile -> device folder in the database.
DEVICE_FOLDERS = {
    "h100-sxm": "h100_sxm",
    "h100-pcie": "h100_pcie",
    "h200": "h200_sxm",
    "a100-sxm-80gb": "a100_sxm",
    "b200": "b200_sxm",
    "b300": "b300_sxm",
    "gb300": "gb300",
    "rtx-pro-6000": "rtx_pro_6000_server",
    "l40s": "l40s",
    "l4": "l4",
}


#: Tokens from which a 16-bit weight GEMM is compute-bound on every device the sustained timings cover: the rate a
#: device sustains is the median over its rows at m >= this (tile and wave effects make single sizes vary by 10%).
SUSTAINED_FROM_TOKENS = 1024


def sustained_matmul_flop_per_s(device: str) -> float | None:
    """The rate at which 16-bit weight GEMMs run, one after another as an engine runs them, on the database device
    ``device`` (a folder name: ``a100_sxm``), FLOP/s; None where no such timing is shipped.

    Read from ``specsim/timing/data/sustained_gemm.csv`` (written by ``scripts/sustained_gemm.py``): the four weight
    GEMMs of one layer of an 8B-class model, timed by microsoft/vidur (A100 80GB, H100; MIT License) and on this
    project's H200 (2026-11-30), the median rate over m >= :data:`SUSTAINED_FROM_TOKENS`.  The kernel database's own
    16-bit GEMMs run faster than that at those sizes (about 270 TFLOP/s at m = 2048 on the A100, 790 on the H100 and
    H200), so :mod:`specsim.timing.kernels` holds its GEMM line to this rate.

    >>> round(sustained_matmul_flop_per_s("a100_sxm") / 1e12), sustained_matmul_flop_per_s("b200_sxm")
    (225, None)
    """
    known = _sustained().get(device)
    return None if known is None else known[0]


def sustained_matmul_source(device: str) -> str | None:
    """Who timed the GEMMs behind :func:`sustained_matmul_flop_per_s` on ``device`` (None where nobody did).

    >>> sustained_matmul_source("h200_sxm")
    'specsim H200 measurement 2026-11-30 kbench.csv (torch 2.11.0+cu130)'
    """
    known = _sustained().get(device)
    return None if known is None else known[1]


@functools.cache
def _sustained() -> dict[str, tuple[float, str]]:
    """device -> (the median rate over m >= SUSTAINED_FROM_TOKENS, FLOP/s; its rows' source), read once."""
    import csv

    rates: dict[str, list[float]] = {}
    sources: dict[str, str] = {}
    with open(Path(__file__).with_name("data") / "sustained_gemm.csv", newline="") as fh:
        for row in csv.DictReader(fh):
            if int(row["m"]) >= SUSTAINED_FROM_TOKENS:
                rates.setdefault(row["device"], []).append(float(row["tflops"]) * 1e12)
                sources.setdefault(row["device"], row["source"])
    return {dev: (statistics.median(values), sources[dev]) for dev, values in rates.items()}


class KernelDataError(ValueError):
    """The database cannot compose this model on this device and engine."""


class KernelEnvironmentError(KernelDataError):
    """The installation cannot be read (a package or folder missing): unlike what the database holds, it may change
    between runs, so it is never cached."""


def database_root() -> Path:
    """Folder of the installed database (``aiconfigurator_core/systems/data``)."""
    spec = importlib.util.find_spec("aiconfigurator_core")
    if spec is None or not spec.submodule_search_locations:
        raise KernelEnvironmentError(
            f"the kernel source needs {AIC_DISTRIBUTION}=={AIC_VERSION} (pip install '{AIC_DISTRIBUTION}=={AIC_VERSION}')"
        )
    root = Path(list(spec.submodule_search_locations)[0]) / "systems" / "data"
    if not root.is_dir():
        raise KernelEnvironmentError(f"{AIC_DISTRIBUTION} is installed but has no kernel data folder at {root}")
    return root


def database_version() -> str:
    """Installed version of ``aiconfigurator-core``: the ``Version:`` line of its dist-info METADATA, read directly
    where the distribution sits on ``sys.path`` (``importlib.metadata`` costs a fifth of a cold run's imports), once per
    ``sys.path`` in a process (listing site-packages took 6 ms of every kernel source's 7 ms, made at each deployment
    built); where no dist-info gives it, importlib.metadata's, asked each time."""
    key = tuple(sys.path)
    if key not in _FOUND_VERSIONS:
        found = _dist_info_version()
        if found is None:
            return _metadata_version()
        _FOUND_VERSIONS[key] = found
    return _FOUND_VERSIONS[key]


#: sys.path -> the version its dist-info folders gave (database_version)
_FOUND_VERSIONS: dict = {}


def _dist_info_version() -> str | None:
    """The ``Version:`` of the first ``aiconfigurator_core-*.dist-info`` on ``sys.path``, None where none gives it."""
    prefix = AIC_DISTRIBUTION.replace("-", "_") + "-"
    for entry in sys.path:
        folder = Path(entry or ".")
        try:  # names, not Path objects: site-packages holds hundreds of entries
            infos = [folder / n for n in os.listdir(folder) if n.startswith(prefix) and n.endswith(".dist-info")]
        except OSError:
            continue
        for info in infos:
            try:
                for line in (info / "METADATA").read_text(encoding="utf-8").splitlines():
                    if line.startswith("Version:"):
                        return line.split(":", 1)[1].strip()
                    if not line:
                        break
            except OSError:
                continue
    return None


def _metadata_version() -> str:
    """importlib.metadata's version of ``aiconfigurator-core`` (an install without a dist-info folder on sys.path)."""
    import importlib.metadata

    try:
        return importlib.metadata.version(AIC_DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        raise KernelEnvironmentError(
            f"the kernel source needs {AIC_DISTRIBUTION}=={AIC_VERSION} (pip install '{AIC_DISTRIBUTION}=={AIC_VERSION}')"
        ) from None


def device_folder(hardware: HardwareProfile) -> str:
    """The database's folder for a profile (calibrated ``*-vllm`` profiles map to their device)."""
    name = hardware.kernel_device
    if name not in DEVICE_FOLDERS:
        # the device looked up, and the profile where its name is another (a calibration's a30-vllm-fitted reads a30)
        of = f" (profile {hardware.name})" if name != hardware.name else ""
        raise KernelDataError(f"the kernel database has no device {name!r}{of}; it has {', '.join(DEVICE_FOLDERS)}")
    return DEVICE_FOLDERS[name]


def kin_devices(hardware: HardwareProfile) -> list[str]:
    """The database's devices whose kernels may stand in for a profile's, in a ratio only, nearest first: those of the
    same CUDA compute capability (the same architecture: the engines build the same kernels for it) other than its
    own, the closest in peak FLOP per byte first; none where none shares it (another vendor, a consumer Ampere card, a
    profile that names no compute capability).  The caller takes the first with measurements for its engine (some
    folders ship empty: :func:`require_engine_data`).

    What it is for: the default source takes the cost of a verification pass relative to a decode step from
    measured kernels (:mod:`specsim.timing.hybrid`); that ratio is a property of the kernels' shapes and of the
    GPU's balance of compute to bandwidth, which a kin device shares, while the absolute times are not (the
    ``kernels`` source never borrows).

    >>> from specsim.describe.hardware import load_hardware
    >>> [kin_devices(load_hardware(n)) for n in ("a30", "rtx-5090", "rtx-3090", "mi300x", "h100-pcie", "l4")]
    [['a100-sxm-80gb'], ['rtx-pro-6000'], [], [], ['h100-sxm', 'h200'], ['l40s']]
    """
    from specsim.describe.hardware import load_hardware

    if hardware.compute_capability is None:  # (only a CUDA profile names one)
        return []
    kin = [load_hardware(n) for n in DEVICE_FOLDERS if n != hardware.kernel_device]
    kin = [k for k in kin if k.compute_capability == hardware.compute_capability]
    ridge = hardware.peak_ridge_flop_per_byte
    return [k.name for k in sorted(kin, key=lambda k: (abs(math.log(k.peak_ridge_flop_per_byte / ridge)), k.name))]


def cache_dir() -> Path:
    """Where built tables are cached: ``$SPECSIM_CACHE_DIR``, else ``$XDG_CACHE_HOME/specsim`` or ``~/.cache/specsim``."""
    try:
        if os.environ.get("SPECSIM_CACHE_DIR"):
            return Path(os.environ["SPECSIM_CACHE_DIR"]).expanduser()
        base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        return Path(base).expanduser() / "specsim"
    except RuntimeError as err:  # "~nosuchuser/..." or no home directory: tables are built in memory, uncached
        raise OSError(f"no kernel cache folder ({err})") from None


def cache_file(key: str) -> Path:
    """The cache file of the table whose metadata serialises to ``key`` (sorted-key JSON): ``kernels-<crc>.json``.

    The name is the key's CRC-32 (zlib, imported with numpy already; a cryptographic hash would load OpenSSL on every
    cold command).  It only spreads tables over files: a file is trusted only when the metadata stored inside it equals
    the key's (:meth:`specsim.timing.kernels.KernelTable.load`), so a stale table or two keys sharing a name (odds about
    n^2 / 2^33 for n tables) is rebuilt, never read.

    >>> cache_file('{"device": "h100_sxm"}').name
    'kernels-15b1d7b5.json'
    """
    import zlib

    return cache_dir() / f"kernels-{zlib.crc32(key.encode()):08x}.json"


#: Age past which a kernel-cache staging file belongs to no live writer: a table is written in well under a second,
#: so an hour-old staging file was left by a writer that was killed.
STALE_STAGING_S = 3600.0


def clear_stale_staging(folder: Path, now: float | None = None) -> int:
    """Remove the kernel-cache staging files in ``folder`` older than :data:`STALE_STAGING_S`; how many went.

    Only names a cache write stages (``.kernels-*.json.*.tmp``, :func:`specsim.core.files.atomic_write_bytes`) are
    touched; anything that cannot be listed or removed is left alone.
    """
    import time

    now = time.time() if now is None else now
    removed = 0
    try:  # names matched as the glob .kernels-*.json.*.tmp would, without compiling it into a regex on every command
        staged = [
            folder / n
            for n in os.listdir(folder)
            if n.startswith(".kernels-") and n.endswith(".tmp") and ".json." in n[len(".kernels-") : -len(".tmp")]
        ]
    except OSError:
        return 0
    for tmp in staged:
        try:
            if tmp.is_file() and not tmp.is_symlink() and now - tmp.stat().st_mtime > STALE_STAGING_S:
                tmp.unlink()
                removed += 1
        except OSError:
            continue
    return removed


#: Database files (and what is derived from them) kept read in a process (:func:`read_frame`): a table built reads
#: three to five, the largest about 5 MB in the columns it reads (h100_sxm gemm/sglang 0.5.14: 101,010 rows).
FRAMES_KEPT = 64


def read_frame(path: Path, columns: tuple[str, ...] | None = None, derive: Callable | None = None, *args):
    """The parquet table at ``path``: its ``columns`` where given (those of them it has), all of them otherwise; with
    ``derive``, ``derive(frame, *args)`` (hashable ``args``) instead of the frame.

    Read (and derived) once per process while the file is unchanged (its size and modification time; at most
    :data:`FRAMES_KEPT` answers kept): every table built on a device and engine reads the same GEMM and attention
    files, and a process builds several (a target and its draft, a sweep over models, the hybrid's kin device); what
    is returned is shared and must not be modified.  The columns a table reads are a third of the file, and the
    others are strings that cost pandas most of its time: h100_sxm's vLLM gemm_perf.parquet reads in 7 ms in its five
    columns, 73 ms whole."""
    try:
        stat = path.stat()
    except OSError:  # read as before, which says what is wrong
        frame = _read_frame(path, columns)
        return frame if derive is None else derive(frame, *args)
    return _kept(str(path), columns, derive, args, stat.st_size, stat.st_mtime_ns)


@functools.lru_cache(maxsize=FRAMES_KEPT)
def _kept(path: str, columns: tuple[str, ...] | None, derive: Callable | None, args: tuple, size: int, mtime_ns: int):
    """read_frame's answer for an unchanged file (``size`` and ``mtime_ns`` only tell a rewritten file from its past)."""
    if derive is None:
        return _read_frame(Path(path), columns)
    return derive(read_frame(Path(path), columns), *args)


def gemm_grid(frame, dtype: str | None = None) -> tuple[tuple, object] | None:
    """(axes (m, n, k), seconds on that grid, NaN where nothing was measured) of a GEMM table's rows, those of
    ``gemm_dtype`` ``dtype`` where given; each cell the mean of its rows' latencies.  None where no row is left."""
    import numpy as np

    if dtype is not None:
        frame = frame[frame["gemm_dtype"] == dtype]
    if frame.empty:
        return None
    gemm = frame.groupby(["m", "n", "k"], as_index=False)["latency"].mean()
    axes = tuple(np.array(sorted(gemm[c].unique()), dtype=float) for c in ("m", "n", "k"))
    grid = np.full(tuple(a.size for a in axes), np.nan)
    index = tuple(np.searchsorted(a, gemm[c].to_numpy(float)) for a, c in zip(axes, ("m", "n", "k")))
    grid[index] = gemm["latency"].to_numpy(float) * 1e-3
    return axes, grid


def _read_frame(path: Path, columns: tuple[str, ...] | None):
    import pandas as pd

    try:
        if columns is None:
            return pd.read_parquet(path)
        import pyarrow.parquet

        has = set(pyarrow.parquet.ParquetFile(path).schema_arrow.names)
        return pd.read_parquet(path, columns=[c for c in columns if c in has])
    except ImportError as exc:  # pandas without pyarrow
        raise KernelEnvironmentError(
            f"reading {path.name} needs pyarrow, which {AIC_DISTRIBUTION} installs: {exc}"
        ) from None
    except FileNotFoundError:  # a release folder that ships some tables and not this one (gb300's trtllm 1.3.0rc23)
        parts = path.parts
        where = "/".join(parts[-4:-1]) if len(parts) >= 4 else str(path.parent)
        raise KernelDataError(
            f"{AIC_DISTRIBUTION} has no {path.name} in {where} (the folder holds "
            f"{', '.join(sorted(p.name for p in path.parent.glob('*'))) or 'nothing'}): no measured kernels "
            "for this device under this engine"
        ) from None


def _version_key(text: str) -> tuple:
    return tuple(int(x) for x in re.findall(r"\d+", text))


def require_engine_data(device: str, engine: str, version: str) -> None:
    """KernelDataError where the installed database holds no ``engine`` GEMM or attention measurements on ``device``:
    some device folders ship empty (aiconfigurator-core 0.12.0's a100_pcie, h100_pcie and l4), and a source over them
    would be the roofline under the kernel database's name."""
    root = database_root()
    for kind, table in (("gemm", "gemm_perf.parquet"), ("attention", "generation_attention_perf.parquet")):
        try:
            holding(root / device / kind / engine, table)
        except KernelDataError:
            raise KernelDataError(
                f"the kernel database ({AIC_DISTRIBUTION} {version}) has no {engine} {kind} measurements on {device}"
            ) from None


def releases_holding(folder: Path, table: str) -> list[Path]:
    """The release folders under ``folder`` (``<device>/<kind>/<engine>``) that hold ``table``, oldest first."""
    return sorted((p.parent for p in folder.glob(f"*/{table}")), key=lambda d: (_version_key(d.name), d.name))


def holding(folder: Path, table: str) -> Path:
    """The newest release folder under ``folder`` (``<device>/<kind>/<engine>``) that holds ``table``: a release that
    ships some tables and not this one falls back to the newest that measured it, as the database's own ``reuse.yaml``
    declares (aiconfigurator-core 0.12.0, b200_sxm gemm/trtllm/1.3.0rc23: gemm_perf from 1.3.0rc20)."""
    files = releases_holding(folder, table)
    if not files:
        newest = _newest(folder)  # says "no measurements" where the engine has none at all
        raise KernelDataError(
            f"{AIC_DISTRIBUTION} has no {table} in any release of {'/'.join(folder.parts[-3:])} (the newest, "
            f"{newest.name}, holds {', '.join(sorted(p.name for p in newest.glob('*'))) or 'nothing'}): no measured "
            "kernels for this device under this engine"
        )
    return files[-1]


def _newest(folder: Path) -> Path:
    versions = [p for p in folder.iterdir() if p.is_dir()] if folder.is_dir() else []
    if not versions:
        raise KernelDataError(f"no measurements in {folder}")
    return max(versions, key=lambda p: (_version_key(p.name), p.name))
