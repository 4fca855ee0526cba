"""How requests arrive: a workload's lengths (:mod:`specsim.core.workloads`, the one catalogue) drawn as a Poisson
process or a closed loop, or a trace file.

A trace file (CSV with a header, or JSON lines) gives ``arrival_s``, ``prompt_tokens`` and ``output_tokens`` per
request instead; it is checked on the way in.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

# The catalogue's home is specsim.core.workloads (every command reads it); its names stay importable from here, where
# they lived until 2026-12-05.
from specsim.core.workloads import (  # noqa: F401 (re-exported)
    DEFAULT_WORKLOAD,
    WORKLOAD_ALIASES,
    WORKLOADS,
    Workload,
    get_workload,
    mean_context_tokens,
)

__all__ = ["MAX_HORIZON_S", "Requests", "read_trace"]


#: Longest simulated horizon, seconds: at 1e7 s a float64 clock still resolves steps of about 2 ns.
MAX_HORIZON_S = 1e7


@dataclass(frozen=True)
class Requests:
    """Requests in arrival order: arrival time (s), prompt and output tokens.  ``arrival_s`` None: a closed loop
    (each request arrives when a slot frees)."""

    prompt: np.ndarray
    output: np.ndarray
    arrival_s: np.ndarray | None = None
    source: str = ""

    def __post_init__(self) -> None:
        p, o = np.asarray(self.prompt), np.asarray(self.output)
        if p.dtype == object or o.dtype == object:  # e.g. a pandas object column of integers
            try:
                p, o = p.astype(float), o.astype(float)
            except (TypeError, ValueError):
                raise ValueError("prompt and output tokens must be numbers") from None
        if p.ndim != 1 or p.shape != o.shape or p.size == 0:
            raise ValueError("requests need matching, non-empty prompt and output token arrays")
        for name, x in (("prompt", p), ("output", o)):
            if x.dtype == bool or not np.issubdtype(x.dtype, np.number):
                raise ValueError(f"{name} tokens must be numbers, got an array of {x.dtype}")
            if not np.all(np.isfinite(x)) or np.any(x != np.round(x)) or np.any(x < 1):
                raise ValueError(f"every request needs a whole number of {name} tokens, at least 1")
        if self.arrival_s is not None:
            a = np.asarray(self.arrival_s, dtype=float)
            if a.shape != p.shape or not np.all(np.isfinite(a)) or np.any(a < 0) or np.any(np.diff(a) < 0):
                raise ValueError("arrival times must be finite, >= 0 and non-decreasing")
            if a[-1] > MAX_HORIZON_S:
                raise ValueError(
                    f"arrivals reach {a[-1]:.3g} s; at most {MAX_HORIZON_S:g} s (about 116 days) are simulated, "
                    "where the clock still resolves a microsecond step"
                )

    def __repr__(self) -> str:  # a notebook's echo: what the requests are, not every length (the arrays hold them)
        prompt, output = np.asarray(self.prompt, float), np.asarray(self.output, float)
        over = "" if self.arrival_s is None else f" arriving over {float(np.asarray(self.arrival_s)[-1]):,.3g} s"
        source = f"; {self.source}" if self.source else ""
        return (
            f"Requests({prompt.size:,} requests{over}, mean {prompt.mean():,.0f} tokens in, {output.mean():,.0f} out"
            f"{source})"
        )

    @classmethod
    def poisson(cls, rate: float, n: int, workload: Workload | str, rng: np.random.Generator) -> "Requests":
        """``n`` requests arriving as a Poisson process of ``rate`` per second."""
        from specsim.core.limits import MAX_RATE_PER_S

        if not (np.isfinite(rate) and 0 < rate <= MAX_RATE_PER_S):
            raise ValueError(f"request rate must be in (0, {MAX_RATE_PER_S:g}] per second, got {rate:g}")
        n = _count(n)
        if n / rate > MAX_HORIZON_S / 10:
            raise ValueError(
                f"a rate of {rate:g} requests/s spreads {n:,} requests over about {n / rate:.3g} s; the simulated "
                f"horizon is at most {MAX_HORIZON_S:g} s: give a rate of at least {10 * n / MAX_HORIZON_S:.3g} requests/s"
            )
        workload = get_workload(workload)
        arrivals = np.cumsum(rng.exponential(1.0 / rate, n))
        prompt, output = workload.sample(n, rng)
        return cls(prompt, output, arrivals, f"Poisson, {rate:g} requests/s, workload {workload.name}")

    @classmethod
    def closed_loop(cls, n: int, workload: Workload | str, rng: np.random.Generator) -> "Requests":
        """``n`` requests served by a fixed number of users who send the next as soon as one finishes."""
        workload = get_workload(workload)
        prompt, output = workload.sample(_count(n), rng)
        return cls(prompt, output, None, f"closed loop, workload {workload.name}")

    def __len__(self) -> int:
        return int(np.asarray(self.prompt).size)


def _count(n: object) -> int:
    """A number of requests: a whole number in [1, MAX_REQUESTS]."""
    from specsim.core.limits import MAX_REQUESTS, check_int

    return check_int("requests", n, 1, MAX_REQUESTS)


def _trace_line(line: str, where: str) -> object:
    """One JSON line of a trace, within the nesting and integer budgets of every JSON reader (core.limits), and with
    no key given twice (JSON keeps the last one silently)."""
    from specsim.core.limits import loads_json, unique_keys

    return loads_json(line, where, object_pairs_hook=unique_keys(where))


def read_trace(path: str | Path) -> Requests:
    """A trace of ``arrival_s, prompt_tokens, output_tokens`` per request: CSV with a header, or JSON lines."""
    from specsim.core.files import read_text

    p = Path(path)
    text = read_text(path, "trace")
    keys = ("arrival_s", "prompt_tokens", "output_tokens")
    rows, line_of = [], []  # each request's line, which every message names (a row's number was once "line 11"
    # where a word was not a number and "request 10" where its time was negative)
    if p.suffix in (".jsonl", ".json"):
        for i, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            obj = _trace_line(line, f"trace {p.name}, line {i}")
            if not isinstance(obj, dict) or any(k not in obj for k in keys):
                raise ValueError(f"trace {p.name}, line {i}: needs {', '.join(keys)}")
            bad = [k for k in keys if isinstance(obj[k], bool) or not isinstance(obj[k], (int, float))]
            if bad:
                raise ValueError(f"trace {p.name}, line {i}: {bad[0]} must be a number, got {obj[bad[0]]!r}")
            rows.append([obj[k] for k in keys])
            line_of.append(i)
    else:
        import csv

        # csv, not str.split: a spreadsheet's export quotes its cells; each line keeps the number an editor shows
        reader = csv.reader(text.splitlines())
        try:
            lines = [(reader.line_num, cells) for cells in reader if "".join(cells).strip()]
        except csv.Error as err:  # (a field past csv's size limit, a stray quote at the end)
            raise ValueError(f"trace {p.name}, line {reader.line_num}: not CSV ({err})") from None
        if not lines:
            raise ValueError(f"trace {p.name} is empty")
        header = [h.strip() for h in lines[0][1]]
        twice = sorted({h for h in header if header.count(h) > 1})
        if twice:  # the first column of a name would be read and the second silently dropped
            raise ValueError(f"trace {p.name}: the header names {', '.join(twice)} more than once; each column once")
        if any(k not in header for k in keys):
            raise ValueError(f"trace {p.name}: the header must name {', '.join(keys)}; got {', '.join(header)}")
        idx = [header.index(k) for k in keys]
        for i, cells in lines[1:]:
            if len(cells) != len(header):
                raise ValueError(f"trace {p.name}, line {i}: {len(cells)} fields, the header has {len(header)}")
            row = []
            for k, j in zip(keys, idx):
                try:
                    row.append(float(cells[j]))
                except ValueError:  # (float() takes the cell's surrounding spaces)
                    raise ValueError(
                        f"trace {p.name}, line {i}: {k} must be a number, got {cells[j].strip()!r}"
                    ) from None
            rows.append(row)
            line_of.append(i)
    if not rows:
        raise ValueError(f"trace {p.name} holds no requests")
    from specsim.core.limits import MAX_REQUESTS

    if len(rows) > MAX_REQUESTS:
        raise ValueError(f"trace {p.name} holds {len(rows):,} requests; at most {MAX_REQUESTS:,} per simulation")
    arr = np.array(rows, dtype=float)  # (every cell checked a number above, by line and column)
    a, prompt, output = arr[:, 0], arr[:, 1], arr[:, 2]
    for name, col in (("prompt_tokens", prompt), ("output_tokens", output)):
        bad = np.flatnonzero(~np.isfinite(col) | (col != np.round(col)) | (col < 1))
        if bad.size:
            raise ValueError(
                f"trace {p.name}, line {line_of[bad[0]]} (request {bad[0] + 1}): {name} must be a whole number >= 1, "
                f"got {col[bad[0]]:g}"
            )
    bad = np.flatnonzero(~np.isfinite(a) | (a < 0))
    if bad.size:
        raise ValueError(
            f"trace {p.name}, line {line_of[bad[0]]} (request {bad[0] + 1}): arrival_s must be a finite time >= 0, "
            f"got {a[bad[0]]:g}"
        )
    back = np.flatnonzero(np.diff(a) < 0)
    if back.size:
        raise ValueError(
            f"trace {p.name}, line {line_of[back[0] + 1]} (request {back[0] + 2}): arrival_s {a[back[0] + 1]:g} is "
            f"before the previous request's {a[back[0]]:g} (line {line_of[back[0]]}); sort the trace by arrival time"
        )
    return Requests(prompt.astype(np.int64), output.astype(np.int64), a, f"trace {p.name}")
