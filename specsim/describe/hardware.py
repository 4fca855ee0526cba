"""Hardware profiles: the numbers a roofline needs, and where they come from.

A decode step of a transformer is bound either by how fast the device streams
bytes from its memory or by how fast it does arithmetic.  A profile therefore
holds the datasheet peaks (dense 16-bit tensor FLOP/s, memory bandwidth,
memory capacity) and three numbers that turn peaks into achieved rates:

    achieved FLOP/s  = compute_eff   * peak_flop_per_s
    achieved bytes/s = bandwidth_eff * peak_bytes_per_s
    overhead per forward pass = overhead_s + per_layer_overhead_s * n_layers

The ridge point, the arithmetic intensity (FLOP per byte) at which the two
limits meet, is ``achieved FLOP/s / achieved bytes/s``.  With the article's
preset on an H100 SXM (0.6 * 989e12) / (0.8 * 3.35e12) = 221.4 FLOP/byte; for
16-bit weights, where one token costs 2 FLOP per parameter and each parameter
is 2 bytes, that is also the number of tokens per pass at which a step stops
being memory-bound.

Built-in profiles are the YAML files in the repository's ``hardware/`` folder
(shipped in the wheel as ``specsim._hardware``).  Every number is converted
explicitly: PyYAML 1.1 reads ``3.35e12`` as a *string* (only ``3.35e+12`` is a
float), so a bare ``float(value)`` with a clear error is the only safe path.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from specsim.core.files import builtin_dir
from specsim.core.limits import UnknownName, as_name_or_path

__all__ = [
    "ALIASES",
    "ARTICLE_BANDWIDTH_EFF",
    "ARTICLE_COMPUTE_EFF",
    "ARTICLE_OVERHEAD_S",
    "DEQUANT_FLOP_PER_WEIGHT",
    "DEQUANT_TILE_TOKENS",
    "FOUR_BIT_DTYPES",
    "FP8_MATMUL_SPEEDUP",
    "W4A16_COMPUTE_FRACTION",
    "WEIGHT_ONLY_DTYPES",
    "HardwareProfile",
    "builtin_dir",
    "builtin_names",
    "load_hardware",
    "profile_from_mapping",
    "profile_to_mapping",
]

# The article's guessed efficiencies and fixed per-pass overhead
# (shared/design/article-model.md).  Built-in profiles carry them until a
# calibration against measurements replaces them.
ARTICLE_BANDWIDTH_EFF = 0.8
ARTICLE_COMPUTE_EFF = 0.6
ARTICLE_OVERHEAD_S = 0.5e-3

#: 4-bit weight formats, dequantised to 16-bit inside the GEMM on every profile specsim ships.
FOUR_BIT_DTYPES = ("int4", "mxfp4", "nvfp4")
#: Compute-bound FP8 GEMMs run this many times faster than BF16 ones of the same shape, not the datasheet's 2x:
#: the median over aiconfigurator-core 0.12.0's GEMM tables (H100, H200, B200; vLLM, SGLang, TensorRT-LLM; all
#: shapes with m >= 1024 and n, k >= 4096), whose per-table medians range from 1.22 to 1.60.  On the public TPOT
#: rows (benchmarks/validate_steptimes.py) the default source's held-out error is 8.8% with it and 12.4% with the
#: datasheet's 2x.
FP8_MATMUL_SPEEDUP = 1.5
#: Share of the 16-bit matmul rate a dequantising 4-bit GEMM reaches when compute-bound.  An assumption, printed
#: wherever it applies: the kernel database has no dense 4-bit GEMM of the Marlin kernels vLLM and SGLang run.
#: Marlin's authors report W4A16 kernels close to, but below, FP16 throughput at batch 64-128 (Frantar et al. 2024,
#: arXiv:2408.11743, Fig. 1).  vLLM 0.24's Marlin W4A16 fused-MoE on H100 (hidden 7168, 384 experts) runs at
#: 0.69-1.12 (median 0.92) of the BF16 rate at 4,096-16,384 tokens if its FP8 block kernels run at 1.5x BF16: 0.8
#: sits inside.  TensorRT-LLM 1.0.0's own weight-only int4 kernels on the A100 (the database's one dense table,
#: int4_wo against bfloat16, m >= 1024 and n, k >= 4096) run at 0.97 (10th-90th percentile 0.89-1.01); measured on
#: 2026-12-03 and not taken: the A100 vLLM 0.24 AWQ study's plain steps (awq_marlin) cost more than 0.8 gives, not
#: less (docs/targets.md, "Measured errors"), and 0.97 moved them further off.
W4A16_COMPUTE_FRACTION = 0.8
#: Dequantising (weight-only) GEMMs unpack each weight once per tile of tokens: the m = 16 rows of the tensor-core
#: MMA they issue (mma.sync m16n8k16; Marlin, arXiv:2408.11743, dequantises in registers per such tile), so a pass of
#: m tokens does the dequantisation work of ceil(m / 16) tiles whatever fraction of the last tile it fills.
DEQUANT_TILE_TOKENS = 16
#: That work per weight per tile, in FLOP at the 16-bit tensor rate: what makes a full tile run at
#: W4A16_COMPUTE_FRACTION of the 16-bit rate, 2 T (1 / f - 1) = 8.  With it, a W4A16 GEMM stops being memory-bound
#: at a few tens of tokens (the whole-pass roofline: 55 on an H100 for 4-bit weights, against 222 for BF16).
DEQUANT_FLOP_PER_WEIGHT = 2 * DEQUANT_TILE_TOKENS * (1 / W4A16_COMPUTE_FRACTION - 1)
#: Weight storage that is dequantised to 16 bits inside the GEMM (activations stay 16-bit): 4-bit formats and W8A16.
WEIGHT_ONLY_DTYPES = FOUR_BIT_DTYPES + ("w8a16",)

_REQUIRED = ("name", "peak_flop_per_s", "peak_bytes_per_s", "memory_bytes")
_NUMERIC = (
    "peak_flop_per_s",
    "peak_fp8_flop_per_s",
    "peak_bytes_per_s",
    "memory_bytes",
    "bandwidth_eff",
    "compute_eff",
    "overhead_s",
    "per_layer_overhead_s",
    "interconnect_bytes_per_s",
    "interconnect_latency_s",
    "max_devices",
)
_TEXT = ("name", "description", "notes", "device", "platform", "compute_capability")
_MAPPINGS = ("sources", "calibration")
#: The software stacks a profile may name.
PLATFORMS = ("cuda", "rocm", "cpu")


_PLAUSIBLE = (
    ("peak_flop_per_s", 1e9, 1e18, "FLOP/s"),
    ("peak_fp8_flop_per_s", 1e9, 1e18, "FLOP/s"),
    ("peak_bytes_per_s", 1e8, 1e15, "bytes/s"),
    ("memory_bytes", 1e8, 1e14, "bytes"),
    ("interconnect_bytes_per_s", 1e8, 1e14, "bytes/s"),
)


@dataclass(frozen=True)
class HardwareProfile:
    """One accelerator as the roofline sees it.

    Parameters
    ----------
    name : str
        Registry name, e.g. ``"h100-sxm"``.
    peak_flop_per_s : float
        Dense (no sparsity) 16-bit tensor-core peak, FLOP/s.
    peak_bytes_per_s : float
        Peak memory (HBM or GDDR) bandwidth, bytes/s.
    memory_bytes : float
        Device memory capacity, bytes.
    bandwidth_eff, compute_eff : float
        Fractions of the peaks that a decode step achieves, in (0, 1].
    overhead_s : float
        Fixed time per forward pass (kernel launches, scheduling), seconds.
    per_layer_overhead_s : float
        Extra fixed time per transformer layer per forward pass, seconds
        (per-kernel launch floors; 0 in the article's model).
    peak_fp8_flop_per_s : float or None
        Dense 8-bit floating-point peak where the device has FP8 tensor cores.
    sources : mapping
        Field name -> URL of the datasheet it came from.
    calibration : mapping or None
        Provenance of a fitted profile (source file, hash, residuals).
    interconnect_bytes_per_s : float or None
        Peak device-to-device bandwidth per GPU, one direction, bytes/s
        (NVLink, Infinity Fabric or PCIe); tensor parallelism needs it.
    interconnect_latency_s : float
        Fixed time of one small collective (an all-reduce of a few hundred
        bytes), seconds.
    max_devices : int
        Devices one tensor-parallel group may span (one node's).
    compute_capability : str or None
        An NVIDIA GPU's CUDA compute capability, ``"8.9"``: which kernels and attention backends an engine runs there
        (:attr:`sm`); None where the profile does not say.

    Examples
    --------
    >>> hw = HardwareProfile("demo", peak_flop_per_s=989e12,
    ...                      peak_bytes_per_s=3.35e12, memory_bytes=80e9)
    >>> round(hw.ridge_flop_per_byte, 1)
    221.4
    """

    def __repr__(self) -> str:  # a notebook's echo: the device's peaks (the fields in full: dataclasses.fields)
        return (
            f"HardwareProfile({self.name}: {self.peak_flop_per_s / 1e12:,.0f} TFLOP/s, "
            f"{self.peak_bytes_per_s / 1e12:.2f} TB/s, {self.memory_bytes / 1e9:,.0f} GB)"
        )

    name: str
    peak_flop_per_s: float
    peak_bytes_per_s: float
    memory_bytes: float
    bandwidth_eff: float = ARTICLE_BANDWIDTH_EFF
    compute_eff: float = ARTICLE_COMPUTE_EFF
    overhead_s: float = ARTICLE_OVERHEAD_S
    per_layer_overhead_s: float = 0.0
    peak_fp8_flop_per_s: float | None = None
    description: str = ""
    notes: str = ""
    sources: Mapping[str, str] = field(default_factory=dict)
    calibration: Mapping[str, Any] | None = None
    interconnect_bytes_per_s: float | None = None
    interconnect_latency_s: float = 0.0
    max_devices: int = 1
    #: The device of the kernel database this profile describes, where its name does not say it (a profile fitted
    #: by calibrate-engine keeps its base's: ``h100-sxm``).
    device: str | None = None
    #: The software stack its engines run on: ``cuda`` (NVIDIA), ``rocm`` (AMD Instinct, where vLLM's ROCm build has
    #: its own round costs, :func:`specsim.engines.vllm.on_platform`, and SGLang's its own time per collective on a
    #: large MoE target, :func:`specsim.engines.sglang.on_platform`) or ``cpu``.
    platform: str = "cuda"
    #: The CUDA compute capability, ``"major.minor"`` (https://developer.nvidia.com/cuda-gpus): engines pick their
    #: attention backends by it (:meth:`specsim.engines.engine.Engine.serial_rounds`).  None: not given.
    compute_capability: str | None = None

    def __post_init__(self) -> None:
        where = f"hardware profile {self.name!r}"
        if self.platform not in PLATFORMS:
            raise ValueError(f"{where}: platform must be one of {', '.join(PLATFORMS)}, got {self.platform!r}")
        cc = self.compute_capability
        if cc is not None and (not isinstance(cc, str) or not re.fullmatch(r"[1-9][0-9]?\.[0-9]", cc)):
            raise ValueError(
                f'{where}: compute_capability must be major.minor as NVIDIA lists it, e.g. "8.9", got {cc!r}'
            )
        if cc is not None and self.platform != "cuda":
            raise ValueError(
                f"{where}: compute_capability is an NVIDIA GPU's; this profile's platform is {self.platform}"
            )
        if not isinstance(self.name, str) or not self.name.strip():
            raise ValueError(f"{where}: name must be a non-empty string")
        for key in ("peak_flop_per_s", "peak_bytes_per_s", "memory_bytes"):
            _check_positive(where, key, getattr(self, key))
        if self.peak_fp8_flop_per_s is not None:
            _check_positive(where, "peak_fp8_flop_per_s", self.peak_fp8_flop_per_s)
            if self.peak_fp8_flop_per_s < self.peak_flop_per_s:  # a typo (1e12 for 1979e12) gave 30 s steps, unsaid
                raise ValueError(
                    f"{where}: peak_fp8_flop_per_s ({self.peak_fp8_flop_per_s:g}) is below peak_flop_per_s "
                    f"({self.peak_flop_per_s:g}): a GPU's 8-bit tensor peak is at least its 16-bit one"
                )
        # Plausible ranges: from a laptop CPU to beyond any announced accelerator; outside them a typo
        # (a missing e+12) would give meaningless or non-finite step times.
        for key, low, high, unit in _PLAUSIBLE:
            value = getattr(self, key)
            if value is not None and not low <= value <= high:
                raise ValueError(f"{where}: {key} must be in [{low:g}, {high:g}] {unit}, got {value!r}")
        for key in ("bandwidth_eff", "compute_eff"):
            value = getattr(self, key)
            _check_finite(where, key, value)
            if not 0.0 < value <= 1.0:
                raise ValueError(f"{where}: {key} must be in (0, 1], got {value!r}")
        if self.interconnect_bytes_per_s is not None:
            _check_positive(where, "interconnect_bytes_per_s", self.interconnect_bytes_per_s)
        md = self.max_devices
        if isinstance(md, bool) or not isinstance(md, (int, float)) or md != int(md) or not 1 <= md <= 1024:
            raise ValueError(f"{where}: max_devices must be a whole number in [1, 1024], got {md!r}")
        object.__setattr__(self, "max_devices", int(md))
        for key in ("overhead_s", "per_layer_overhead_s", "interconnect_latency_s"):
            value = getattr(self, key)
            _check_finite(where, key, value)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{where}: {key} must be in [0, 1] seconds, got {value!r}")

    @property
    def sm(self) -> tuple[int, int] | None:
        """The compute capability as (major, minor), None where the profile does not give it.

        >>> HardwareProfile("demo", 1e15, 1e12, 80e9, compute_capability="8.9").sm
        (8, 9)
        """
        if self.compute_capability is None:
            return None
        major, minor = self.compute_capability.split(".")
        return int(major), int(minor)

    @property
    def flop_per_s(self) -> float:
        """Achieved arithmetic rate, FLOP/s (``compute_eff * peak``)."""
        return self.compute_eff * self.peak_flop_per_s

    @property
    def bytes_per_s(self) -> float:
        """Achieved memory bandwidth, bytes/s (``bandwidth_eff * peak``)."""
        return self.bandwidth_eff * self.peak_bytes_per_s

    @property
    def ridge_flop_per_byte(self) -> float:
        """Arithmetic intensity where compute time equals memory time, FLOP/byte."""
        return self.flop_per_s / self.bytes_per_s

    def ridge_for(self, weight_dtype: str) -> float:
        """The ridge of the weight matmuls for weights stored as ``weight_dtype`` (:meth:`flop_per_s_for`: FP8 and INT8
        run faster, 4-bit weights slower), FLOP/byte: what a pass's bound is read against.

        >>> hw = HardwareProfile("demo", 989e12, 3.35e12, 80e9, peak_fp8_flop_per_s=1979e12)
        >>> round(hw.ridge_for("fp8") / hw.ridge_for("bf16"), 2)
        1.5
        """
        return self.flop_per_s_for(weight_dtype) / self.bytes_per_s

    @property
    def peak_ridge_flop_per_byte(self) -> float:
        """Ridge of the bare datasheet peaks (efficiencies of 1), FLOP/byte."""
        return self.peak_flop_per_s / self.peak_bytes_per_s

    def flop_per_s_for(self, weight_dtype: str) -> float:
        """Achieved rate of the weight matmuls for weights stored as ``weight_dtype``, FLOP/s.

        FP8 and INT8 weights multiply FP8/INT8 activations (W8A8, as vLLM and
        TensorRT-LLM run them on Hopper and Blackwell) on the 8-bit tensor
        cores: :data:`FP8_MATMUL_SPEEDUP` times the 16-bit rate (measured),
        never above ``compute_eff`` of the profile's 8-bit peak.  A profile
        without an 8-bit peak (A100) dequantises to 16-bit.  4-bit weights
        (INT4 AWQ/GPTQ, MXFP4, NVFP4) are dequantised in the GEMM and run at
        :data:`W4A16_COMPUTE_FRACTION` of the 16-bit rate.

        >>> hw = HardwareProfile("demo", 989e12, 3.35e12, 80e9, peak_fp8_flop_per_s=1979e12)
        >>> hw.flop_per_s_for("fp8") / hw.flop_per_s_for("bf16")
        1.5
        """
        if weight_dtype in ("fp8", "int8") and self.peak_fp8_flop_per_s is not None:
            return min(self.flop_per_s * FP8_MATMUL_SPEEDUP, self.compute_eff * self.peak_fp8_flop_per_s)
        if weight_dtype in WEIGHT_ONLY_DTYPES:
            return self.flop_per_s * W4A16_COMPUTE_FRACTION
        return self.flop_per_s

    def dequant_time_s(self, weights: object, tokens_per_weight: object) -> np.ndarray:
        """Dequantisation a pass of ``tokens_per_weight`` tokens adds to ``weights`` weight-only weights beyond
        :meth:`flop_per_s_for`'s full-tile rate: the unfilled share of its last tile of :data:`DEQUANT_TILE_TOKENS`,
        DEQUANT_FLOP_PER_WEIGHT (ceil(m / T) - m / T) per weight at the 16-bit rate, seconds.

        >>> hw = HardwareProfile("demo", 1e15, 1e12, 80e9, compute_eff=1.0)
        >>> [round(float(hw.dequant_time_s(1e9, m)) * 1e6, 2) for m in (1, 8, 16, 17)]
        [7.5, 4.0, 0.0, 7.5]
        """
        m = np.asarray(tokens_per_weight, dtype=float)
        tiles = np.ceil(m / DEQUANT_TILE_TOKENS - 1e-9)  # a full tile's float division may land a hair above it
        unfilled = np.maximum(tiles - m / DEQUANT_TILE_TOKENS, 0.0)
        return DEQUANT_FLOP_PER_WEIGHT * np.asarray(weights, dtype=float) * unfilled / self.flop_per_s

    @property
    def kernel_device(self) -> str:
        """The kernel database's device this profile reads: :attr:`device` where given, else the name (a calibrated
        ``*-vllm`` profile reads its base's).

        >>> HardwareProfile("h100-sxm-vllm", 989e12, 3.35e12, 80e9).kernel_device
        'h100-sxm'
        """
        return self.device or re.sub(r"-vllm$", "", self.name)

    def overhead_for(self, n_layers: int) -> float:
        """Fixed time of one forward pass of an ``n_layers`` model, seconds."""
        return self.overhead_s + self.per_layer_overhead_s * n_layers


def _check_finite(where: str, key: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{where}: {key} must be a finite number, got {value!r}")


def _check_positive(where: str, key: str, value: Any) -> None:
    _check_finite(where, key, value)
    if value <= 0:
        raise ValueError(f"{where}: {key} must be > 0, got {value!r}")


def _to_float(where: str, key: str, value: Any) -> float:
    """Convert a YAML scalar to float, rejecting what does not convert.

    >>> _to_float("f.yaml", "peak_bytes_per_s", "3.35e12")   # PyYAML's string
    3350000000000.0
    """
    if isinstance(value, bool) or value is None:
        raise ValueError(f"{where}: {key} must be a number, got {value!r}")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{where}: {key} must be a number, got {value!r}") from None
    except OverflowError:  # an integer of hundreds of digits does not fit a float
        raise ValueError(f"{where}: {key} must be a finite number, got a {len(str(value))}-digit number") from None
    if not math.isfinite(number):
        raise ValueError(f"{where}: {key} must be a finite number, got {value!r}")
    return number


def profile_from_mapping(data: Any, where: str = "hardware profile") -> HardwareProfile:
    """Build and validate a profile from a parsed YAML mapping.

    Unknown keys are rejected so that a misspelt ``bandwith_eff`` cannot
    silently fall back to a default.
    """
    if not isinstance(data, dict):
        raise ValueError(f"{where}: expected a mapping of keys to values, got {type(data).__name__}")
    allowed = set(_NUMERIC) | set(_TEXT) | set(_MAPPINGS)
    unknown = sorted(set(map(str, data)) - allowed)
    if unknown:
        raise ValueError(f"{where}: unknown key(s) {', '.join(unknown)}; allowed: {', '.join(sorted(allowed))}")
    missing = [key for key in _REQUIRED if key not in data or data[key] is None]
    if missing:
        raise ValueError(f"{where}: missing required key(s) {', '.join(missing)}")
    kwargs: dict[str, Any] = {}
    for key in _NUMERIC:
        if key in data and data[key] is not None:
            kwargs[key] = _to_float(where, key, data[key])
    cc = data.get("compute_capability")
    if isinstance(cc, (int, float)) and not isinstance(cc, bool):
        data = {**data, "compute_capability": repr(float(cc))}  # YAML reads 8.9 unquoted as a number
    for key in _TEXT:
        if key in data and data[key] is not None:
            if not isinstance(data[key], str):
                raise ValueError(f"{where}: {key} must be text, got {data[key]!r}")
            bad = [c for c in data[key] if ord(c) < 32 and c not in "\n\t" or ord(c) == 127]
            if bad or (key == "name" and ("\n" in data[key] or "\t" in data[key])):
                raise ValueError(
                    f"{where}: {key} holds a control character ({(bad or [chr(10)])[0]!r}); "
                    "printable text only (it is printed to a terminal)"
                )
            kwargs[key] = data[key].strip()
    for key in _MAPPINGS:
        if key in data and data[key] is not None:
            if not isinstance(data[key], dict):
                raise ValueError(f"{where}: {key} must be a mapping, got {data[key]!r}")
            kwargs[key] = dict(data[key])
    try:
        return HardwareProfile(**kwargs)
    except ValueError as err:
        # The dataclass names the profile; add the file it came from.
        raise ValueError(f"{where}: {err}") from None


def profile_to_mapping(profile: HardwareProfile) -> dict[str, Any]:
    """The YAML-ready mapping of a profile (inverse of :func:`profile_from_mapping`)."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(profile):
        value = getattr(profile, f.name)
        if value is None or value == "" or (isinstance(value, Mapping) and not value):
            continue
        out[f.name] = dict(value) if isinstance(value, Mapping) else value
    return out


def _builtin_files() -> dict[str, Path]:
    files = {path.stem: path for path in builtin_dir().glob("*.yaml")}
    measured = builtin_dir() / "measurements"
    if measured.is_dir():
        files.update({path.stem: path for path in measured.glob("*.yaml")})
    return files


#: Names people type for a device -> the built-in profile (the SXM boards where a name leaves the form open: they are
#: what serving clusters run; the PCIe H100 keeps its own name).
ALIASES = {
    "h100": "h100-sxm",
    "h100-sxm5": "h100-sxm",
    "h100-80gb": "h100-sxm",
    "a100": "a100-sxm-80gb",
    "a100-80gb": "a100-sxm-80gb",
    "a100-sxm": "a100-sxm-80gb",
    "h200-sxm": "h200",
    "b200-sxm": "b200",
    "b300-sxm": "b300",
    "rtx-pro-6000-blackwell": "rtx-pro-6000",
    "rtx-pro-6000-server": "rtx-pro-6000",
}


def builtin_names() -> list[str]:
    """Names of the built-in profiles, datasheet and calibrated, sorted."""
    return sorted(_builtin_files())


def _refuse_shadowed(given: str, builtin: Path) -> None:
    """ValueError when ``given`` names a built-in profile and is also the path of a file: neither is picked silently."""
    from specsim.core.files import existing_file

    local = existing_file(given)
    if local is not None and local.resolve() != builtin.resolve():
        raise ValueError(
            f"hardware {given!r} names both the file {str(local)!r} and the built-in profile {builtin.stem}: "
            f"give ./{given} for the file, or {builtin.stem if builtin.stem != given else builtin} for the built-in"
        )


@functools.lru_cache(maxsize=64)
def _shipped_profile(path: Path, stamp: tuple) -> HardwareProfile:
    """A built-in profile's file read, once per version of it (``stamp``: its mtime and size) in a process: parsing and
    checking it took 5 ms of every deployment built.  A profile is frozen: the same object serves every caller."""
    from specsim.core.limits import load_yaml

    return profile_from_mapping(load_yaml(path, "hardware file", shipped=True), where=f"hardware file {path.name!r}")


def load_hardware(name_or_path: str | Path) -> HardwareProfile:
    """Load a built-in profile by name, or a user's YAML file by path.

    Raises
    ------
    KeyError
        Unknown name (the message lists the known ones).
    ValueError
        A file that is not valid YAML or fails validation.
    """
    given = as_name_or_path("hardware", name_or_path, "a built-in profile's name or a YAML file's path")
    files = _builtin_files()
    text = ALIASES.get(given.lower(), given) if given.lower() in ALIASES else given
    if text not in files and text.lower() in files:
        text = text.lower()  # built-in names match in any case, as aliases and engines do
    shipped = text in files
    if shipped:
        path = files[text]
        _refuse_shadowed(given, path)
    else:
        path = Path(text).expanduser()
        looks_like_path = path.suffix in (".yaml", ".yml") or "/" in text or path.exists()
        if not looks_like_path:
            import difflib

            close = difflib.get_close_matches(text.lower(), sorted(files) + sorted(ALIASES), n=1, cutoff=0.6)
            hint = f"did you mean {close[0]}? " if close else ""
            raise UnknownName(
                f"unknown hardware {text!r}; {hint}specsim hardware lists the built-in profiles and their "
                "aliases (or give a path to a YAML file)"
            )
        if not path.is_file():
            from specsim.core.limits import not_a_file

            raise ValueError(f"hardware file {text!r} {not_a_file(path)} (give a YAML profile)")
    from specsim.core.limits import load_yaml

    if shipped:
        stat = path.stat()
        profile = _shipped_profile(path, (stat.st_mtime_ns, stat.st_size))
    else:
        profile = profile_from_mapping(load_yaml(path, "hardware file"), where=f"hardware file {path.name!r}")
    if not shipped and profile.name in files:  # a copy of a built-in, edited: labels and kernel data go by the name
        builtin = profile_from_mapping(load_yaml(files[profile.name], "hardware file", shipped=True))
        if profile != builtin:
            raise ValueError(
                f"hardware file {path.name!r} names itself {profile.name}, a built-in profile, but differs from it: "
                f"give it a name of its own (every label and the measured-kernel data go by the name; device: "
                f"{builtin.kernel_device} reads {profile.name}'s kernel data under another name)"
            )
    return profile
