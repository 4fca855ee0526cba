"""Measured step times: the CSV that ``specsim measure`` (or ``compose-kernels``) writes, read and checked.

Each row is one timed pass: ``batch``, ``tokens_per_seq``, ``context`` and a time in seconds (``median_s``
or ``step_time_s``), with either the model's shape columns (what the timing harness writes) or a ``model``
naming a built-in shape.  Every number is checked on the way in and every row gets its
:class:`~specsim.describe.models.ModelShape`, so the measured step-time source and calibration read one table.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from specsim.core.limits import MAX_BATCH, MAX_CONTEXT, check_int
from specsim.describe.models import ModelShape, get_model

__all__ = ["MIN_POINTS", "load_measurements"]

_SHAPE_COLUMNS = ("vocab_size", "hidden_size", "intermediate_size", "n_layers", "n_heads", "n_kv_heads", "head_dim")
_TIME_COLUMNS = ("median_s", "step_time_s")
#: Fewest rows a measurements file may hold: a calibration fits up to four numbers and holds a quarter out.
MIN_POINTS = 8
#: Rows one measurements file may hold: the calibration fit is seconds at this size, minutes at ten times it.
MAX_POINTS = 20_000

#: The repeats' spread that ``specsim measure`` writes beside each median (10th and 90th percentiles, fastest repeat).
_SPREAD_COLUMNS = ("p10_s", "p90_s", "min_s")
#: Plausible time of one forward pass, seconds: a GPU kernel launch is microseconds, and a pass of minutes is a
#: machine swapping, not a step time (the CLI's model sizes keep every measured pass far inside this).
MIN_STEP_S = 1e-7
MAX_STEP_S = 1e3


def _shown(value: object) -> str:
    text = f"{value:g}" if isinstance(value, (float, np.floating)) else repr(value)
    return text if len(text) <= 30 else f"a {len(text)}-character value"


def _cell(value: object) -> float:
    """One CSV cell as a float, NaN where it is not a number (a 400-digit integer does not fit a float: NaN too)."""
    try:
        return float(value)
    except (TypeError, ValueError, OverflowError):
        return float("nan")


def _numeric_column(column: pd.Series, col: str, where: str) -> pd.Series:
    """The column as finite floats, or ValueError naming the first cell that is missing, not a number or out of range."""
    values = pd.Series([_cell(v) for v in column], index=column.index, dtype=float)
    bad = ~np.isfinite(values.to_numpy())
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        cell = column.iloc[row]
        if isinstance(cell, (int, np.integer)) and not isinstance(cell, bool):  # parsed, but past any float
            raise ValueError(
                f"{where}: column {col} has a {len(str(abs(int(cell))))}-digit number at data row {row + 1}, "
                "far out of range"
            )
        raise ValueError(
            f"{where}: column {col} has a missing or non-numeric value at data row {row + 1} ({_shown(cell)})"
        )
    return values


def _dtype_key(value: object) -> str:
    text = str(value).lower().replace("torch.", "")
    return {"bfloat16": "bf16", "float16": "fp16", "half": "fp16", "float32": "fp32", "float": "fp32"}.get(text, text)


def _number(value: object) -> object:
    """A CSV cell as a number where it is one (pandas may hand over strings), else unchanged."""
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return value
    return value


def _flag(value: object, key: str, where: str) -> bool:
    """A CSV boolean: True/False, true/false or 1/0; anything else is refused, never coerced."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    text = str(value).strip().lower()
    if text in ("true", "1", "1.0"):
        return True
    if text in ("false", "0", "0.0"):
        return False
    raise ValueError(f"{where}: {key} must be true or false, got {value!r}")


def load_measurements(path: str | Path) -> pd.DataFrame:
    """Read measured step times and attach a ModelShape to every row.

    Required columns: ``batch``, ``tokens_per_seq``, ``context``, a time column
    (``median_s`` or ``step_time_s``, seconds), and either the shape columns
    that ``specsim measure`` writes or a ``model`` naming a built-in shape.
    Optional: ``dtype`` (weights and KV), ``device_name``.
    """
    p = Path(path)
    if not p.is_file():
        from specsim.core.limits import not_a_file

        raise ValueError(f"measurements file {str(path)!r} {not_a_file(p)}")
    try:
        df = pd.read_csv(p, comment="#")
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as err:
        raise ValueError(f"measurements file {p.name!r} is not a readable CSV ({str(err).splitlines()[0]})") from None
    where = f"measurements file {p.name!r}"
    time_col = next((c for c in _TIME_COLUMNS if c in df.columns), None)
    missing = [c for c in ("batch", "tokens_per_seq", "context") if c not in df.columns]
    if time_col is None:
        missing.append("median_s (or step_time_s)")
    has_shape = all(c in df.columns for c in _SHAPE_COLUMNS)
    if not has_shape and "model" not in df.columns:
        missing.append("model (or the shape columns " + ", ".join(_SHAPE_COLUMNS) + ")")
    if missing:
        raise ValueError(f"{where}: missing column(s) {', '.join(missing)}")
    if len(df) < MIN_POINTS:
        raise ValueError(f"{where}: {len(df)} measurements; calibration needs at least {MIN_POINTS}")
    if len(df) > MAX_POINTS:
        raise ValueError(
            f"{where}: {len(df):,} measurements; at most {MAX_POINTS:,} (a sweep of `specsim measure` is a few "
            "hundred; repeats are summarised by their median)"
        )
    for col in ["batch", "tokens_per_seq", "context", time_col] + [c for c in _SPREAD_COLUMNS if c in df.columns]:
        df[col] = _numeric_column(df[col], col, where)
    if (df[time_col] <= 0).any():
        row = int(np.flatnonzero((df[time_col] <= 0).to_numpy())[0])
        raise ValueError(f"{where}: step times must be > 0 seconds; data row {row + 1} has {df[time_col].iloc[row]!r}")
    if (df["batch"] < 1).any() or (df["tokens_per_seq"] < 1).any() or (df["context"] < 0).any():
        raise ValueError(f"{where}: batch and tokens_per_seq must be >= 1 and context >= 0")
    for col, low, high in (("batch", 1, MAX_BATCH), ("tokens_per_seq", 1, MAX_CONTEXT), ("context", 0, MAX_CONTEXT)):
        bad = np.flatnonzero(((df[col] < low) | (df[col] > high) | (df[col] != np.round(df[col]))).to_numpy())
        if bad.size:
            raise ValueError(
                f"{where}: {col} must be a whole number in [{low:,}, {high:,}]; data row {bad[0] + 1} has "
                f"{_shown(df[col].iloc[bad[0]])}"
            )
    for col in [time_col] + [c for c in _SPREAD_COLUMNS if c in df.columns]:
        bad = np.flatnonzero(((df[col] < MIN_STEP_S) | (df[col] > MAX_STEP_S)).to_numpy())
        if bad.size:
            raise ValueError(
                f"{where}: {col} must be a pass time in [{MIN_STEP_S:g}, {MAX_STEP_S:g}] seconds; data row "
                f"{bad[0] + 1} has {_shown(df[col].iloc[bad[0]])}"
            )
    if all(c in df.columns for c in ("p10_s", "p90_s")):
        bad = np.flatnonzero(((df["p10_s"] > df[time_col]) | (df[time_col] > df["p90_s"])).to_numpy())
        if bad.size:
            raise ValueError(
                f"{where}: data row {bad[0] + 1} has a median {df[time_col].iloc[bad[0]]:g} s outside its "
                f"10th-90th percentiles [{df['p10_s'].iloc[bad[0]]:g}, {df['p90_s'].iloc[bad[0]]:g}] s"
            )
    df = df.rename(columns={time_col: "measured_s"})
    shapes: dict[tuple, ModelShape] = {}
    keys = []
    for number, row in enumerate(df.itertuples(index=False), start=1):
        dtype = _dtype_key(getattr(row, "dtype", "bf16"))
        if has_shape:
            at = f"{where}, data row {number}"
            dims = tuple(check_int(f"{at}: {c}", _number(getattr(row, c)), 1, 10_000_000) for c in _SHAPE_COLUMNS)
            key = dims + (
                _flag(getattr(row, "tie_embeddings", False), "tie_embeddings", at),
                _flag(getattr(row, "qkv_bias", False), "qkv_bias", at),
                dtype,
                str(getattr(row, "model", "")),
            )
            if key not in shapes:
                v, d, f, n, h, kv, hd = key[:7]
                shapes[key] = ModelShape(
                    str(key[10]) or "measured",
                    v,
                    d,
                    f,
                    n,
                    h,
                    kv,
                    hd,
                    tie_embeddings=key[7],
                    qkv_bias=key[8],
                    weight_dtype=dtype,
                    kv_dtype=dtype,
                )
        else:
            key = (str(row.model), dtype)
            if key not in shapes:
                shapes[key] = get_model(str(row.model), weight_dtype=dtype, kv_dtype=dtype)
        keys.append(key)
    df["shape"] = [shapes[k] for k in keys]
    df["model_name"] = [s.name for s in df["shape"]]
    df["n_layers_"] = [s.n_layers for s in df["shape"]]
    return df
