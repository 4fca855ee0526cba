"""Request workloads: prompt and output lengths, and how requests arrive.

Lengths are lognormal with a median and a spread (sigma of the log), clipped to a maximum: the shape
real traces show (most requests short, a long tail).  The medians come from the sources named with
each workload; the spreads are assumptions, stated as such.

``chat``           Splitwise (Patel et al., ISCA 2024, arXiv:2311.18677), Azure "conversation" trace:
                   median prompt 1,020 tokens, median output 129.
``summarization``  long documents in, short abstracts out: median prompt 3,000, output 200 (assumed; the
                   arXiv summarisation set of Cohan et al. 2018 has articles of thousands of words and
                   abstracts of a few hundred).
``reasoning``      short problems, long chains of thought: median prompt 200, output 4,000 (assumed; the
                   DeepSeek-R1 report, arXiv:2501.12948, shows responses growing to about 10,000 tokens
                   on average during training).
``code-completion``  Splitwise's Azure "coding" trace (``code`` is its old name, kept): median prompt 1,500,
                   output 13; completion-style (the editor asks for the next few tokens).
``code-editing``   rewriting given code: InstructCoder prompts answered by Llama-3.1-8B-Instruct in
                   SpecDecode-Bench's released traces (``data/llama3.1-8B/combined_instructcoder.jsonl`` @ 2fdccbd,
                   500 requests): median prompt 156, output 144.5 tokens, means 171 and 262; the log-spreads are
                   the lognormal's that give those means (mean = median exp(sigma^2 / 2)): 0.43 and 1.09.
                   Its output repeats much of its prompt, which n-gram and suffix drafters feed on.

Each workload names the acceptance workload (:data:`specsim.speculation.acceptance_data.ACCEPTANCE_WORKLOADS`)
whose published acceptance a simulation of it assumes: reasoning reads math's (GSM8K), the nearest measured.

A trace file (CSV with a header, or JSON lines) gives ``arrival_s``, ``prompt_tokens`` and
``output_tokens`` per request instead; it is checked on the way in.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = [
    "DEFAULT_WORKLOAD",
    "WORKLOADS",
    "WORKLOAD_ALIASES",
    "Requests",
    "Workload",
    "get_workload",
    "mean_context_tokens",
    "read_trace",
]

DEFAULT_WORKLOAD = "chat"


#: Longest simulated horizon, seconds: at 1e7 s a float64 clock still resolves steps of about 2 ns.
MAX_HORIZON_S = 1e7


def mean_context_tokens(prompt_tokens: object, output_tokens: object) -> np.ndarray:
    """The mean cached context over a generation: the prompt plus half of the output (the article's 1,000 + 256 / 2).

    >>> float(mean_context_tokens(1000, 256))
    1128.0
    """
    return np.asarray(prompt_tokens, dtype=float) + np.asarray(output_tokens, dtype=float) / 2


@dataclass(frozen=True)
class Workload:
    """Lognormal prompt and output lengths (median, sigma of the log), clipped to ``[1, max]``."""

    name: str
    prompt_median: float
    prompt_sigma: float
    output_median: float
    output_sigma: float
    prompt_max: int
    output_max: int
    source: str
    #: The workload whose published acceptance applies (a key of acceptance_data.ACCEPTANCE_WORKLOADS).
    acceptance: str = "chat"

    @property
    def median_context_tokens(self) -> float:
        """The cached context of a median request halfway through its output (:func:`mean_context_tokens`)."""
        return float(mean_context_tokens(self.prompt_median, self.output_median))

    def sample(self, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """(prompt tokens, output tokens) of ``n`` requests.

        >>> p, o = get_workload("chat").sample(20_000, np.random.default_rng(0))
        >>> bool(abs(np.median(p) - 1020) < 40), bool(abs(np.median(o) - 129) < 6)
        (True, True)
        """
        prompt = np.exp(rng.normal(np.log(self.prompt_median), self.prompt_sigma, n))
        output = np.exp(rng.normal(np.log(self.output_median), self.output_sigma, n))
        return (
            np.clip(np.rint(prompt), 1, self.prompt_max).astype(np.int64),
            np.clip(np.rint(output), 1, self.output_max).astype(np.int64),
        )


_SPREAD = "log-spreads 0.6 (prompt) and 0.8 (output) assumed"
WORKLOADS = {
    w.name: w
    for w in (
        Workload(
            "chat",
            1020,
            0.6,
            129,
            0.8,
            16384,
            4096,
            f"Splitwise (Patel et al. 2024, arXiv:2311.18677) conversation trace medians; {_SPREAD}",
        ),
        Workload(
            "summarization",
            3000,
            0.6,
            200,
            0.8,
            32768,
            2048,
            f"assumed medians (long in, short out); {_SPREAD}",
            "summarization",
        ),
        Workload(
            "reasoning",
            200,
            0.6,
            4000,
            0.8,
            4096,
            32768,
            f"assumed medians (DeepSeek-R1, arXiv:2501.12948: responses of ~10k tokens); {_SPREAD}",
            "math",
        ),
        Workload(
            "code-completion",
            1500,
            0.6,
            13,
            0.8,
            16384,
            1024,
            f"Splitwise (Patel et al. 2024, arXiv:2311.18677) coding trace medians; {_SPREAD}",
            "code-completion",
        ),
        Workload(
            "code-editing",
            156,
            0.43,
            144.5,
            1.09,
            8192,
            4096,
            "InstructCoder answered by Llama-3.1-8B-Instruct, SpecDecode-Bench traces @ 2fdccbd: medians 156 / 144.5 "
            "tokens, log-spreads from the means 171 / 262",
            "code-editing",
        ),
    )
}
#: Old names kept: ``code`` was Splitwise's completion trace before code editing had its own workload.
WORKLOAD_ALIASES = {"code": "code-completion"}


def get_workload(name: str) -> Workload:
    """The workload of a name (or an alias of one), or one line listing them.

    >>> get_workload("code").name
    'code-completion'
    """
    name = WORKLOAD_ALIASES.get(name, name)
    if name not in WORKLOADS:
        raise ValueError(f"unknown workload {name!r}; choose {', '.join(WORKLOADS)} or give --trace FILE")
    return WORKLOADS[name]


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
        if p.ndim != 1 or p.shape != o.shape or p.size == 0:
            raise ValueError("requests need matching, non-empty prompt and output token arrays")
        if np.any(p < 1) or np.any(o < 1):
            raise ValueError("every request needs at least 1 prompt token and 1 output token")
        if self.arrival_s is not None:
            a = np.asarray(self.arrival_s, dtype=float)
            if a.shape != p.shape or not np.all(np.isfinite(a)) or np.any(a < 0) or np.any(np.diff(a) < 0):
                raise ValueError("arrival times must be finite, >= 0 and non-decreasing")
            if a[-1] > MAX_HORIZON_S:
                raise ValueError(
                    f"arrivals reach {a[-1]:.3g} s; at most {MAX_HORIZON_S:g} s (about 116 days) are simulated, "
                    "where the clock still resolves a microsecond step"
                )

    @classmethod
    def poisson(cls, rate: float, n: int, workload: Workload, rng: np.random.Generator) -> "Requests":
        """``n`` requests arriving as a Poisson process of ``rate`` per second."""
        from specsim.core.limits import MAX_RATE_PER_S

        if not (np.isfinite(rate) and 0 < rate <= MAX_RATE_PER_S):
            raise ValueError(f"request rate must be in (0, {MAX_RATE_PER_S:g}] per second, got {rate:g}")
        if n / rate > MAX_HORIZON_S / 10:
            raise ValueError(
                f"a rate of {rate:g} requests/s spreads {n:,} requests over about {n / rate:.3g} s; the simulated "
                f"horizon is at most {MAX_HORIZON_S:g} s: give a rate of at least {10 * n / MAX_HORIZON_S:.3g} requests/s"
            )
        arrivals = np.cumsum(rng.exponential(1.0 / rate, n))
        prompt, output = workload.sample(n, rng)
        return cls(prompt, output, arrivals, f"Poisson, {rate:g} requests/s, workload {workload.name}")

    @classmethod
    def closed_loop(cls, n: int, workload: Workload, rng: np.random.Generator) -> "Requests":
        """``n`` requests served by a fixed number of users who send the next as soon as one finishes."""
        prompt, output = workload.sample(n, rng)
        return cls(prompt, output, None, f"closed loop, workload {workload.name}")

    def __len__(self) -> int:
        return int(np.asarray(self.prompt).size)


def _trace_line(line: str, where: str) -> object:
    """One JSON line of a trace, within the nesting and integer budgets of every JSON reader (core.limits), and with
    no key given twice (JSON keeps the last one silently)."""
    from specsim.core.limits import loads_json

    def pairs(items: list) -> dict:
        keys = [k for k, _ in items]
        twice = sorted({k for k in keys if keys.count(k) > 1})
        if twice:
            raise ValueError(f"{where}: the key {twice[0]!r} appears twice; each once")
        return dict(items)

    return loads_json(line, where, object_pairs_hook=pairs)


def read_trace(path: str | Path) -> Requests:
    """A trace of ``arrival_s, prompt_tokens, output_tokens`` per request: CSV with a header, or JSON lines."""
    from specsim.core.files import read_text

    p = Path(path)
    text = read_text(path, "trace")
    keys = ("arrival_s", "prompt_tokens", "output_tokens")
    rows = []
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
    else:
        lines = [line for line in text.splitlines() if line.strip()]
        if not lines:
            raise ValueError(f"trace {p.name} is empty")
        header = [h.strip() for h in lines[0].split(",")]
        twice = sorted({h for h in header if header.count(h) > 1})
        if twice:  # the first column of a name would be read and the second silently dropped
            raise ValueError(f"trace {p.name}: the header names {', '.join(twice)} more than once; each column once")
        if any(k not in header for k in keys):
            raise ValueError(f"trace {p.name}: the header must name {', '.join(keys)}; got {', '.join(header)}")
        idx = [header.index(k) for k in keys]
        for i, line in enumerate(lines[1:], 2):
            cells = line.split(",")
            if len(cells) != len(header):
                raise ValueError(f"trace {p.name}, line {i}: {len(cells)} fields, the header has {len(header)}")
            rows.append([cells[j].strip() for j in idx])
    if not rows:
        raise ValueError(f"trace {p.name} holds no requests")
    from specsim.core.limits import MAX_REQUESTS

    if len(rows) > MAX_REQUESTS:
        raise ValueError(f"trace {p.name} holds {len(rows):,} requests; at most {MAX_REQUESTS:,} per simulation")
    try:
        arr = np.array(rows, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"trace {p.name}: arrival_s, prompt_tokens and output_tokens must be numbers") from None
    a, prompt, output = arr[:, 0], arr[:, 1], arr[:, 2]
    for name, col in (("prompt_tokens", prompt), ("output_tokens", output)):
        bad = np.flatnonzero(~np.isfinite(col) | (col != np.round(col)) | (col < 1))
        if bad.size:
            raise ValueError(
                f"trace {p.name}, request {bad[0] + 1}: {name} must be a whole number >= 1, got {col[bad[0]]:g}"
            )
    bad = np.flatnonzero(~np.isfinite(a) | (a < 0))
    if bad.size:
        raise ValueError(
            f"trace {p.name}, request {bad[0] + 1}: arrival_s must be a finite time >= 0, got {a[bad[0]]:g}"
        )
    back = np.flatnonzero(np.diff(a) < 0)
    if back.size:
        raise ValueError(
            f"trace {p.name}, request {back[0] + 2}: arrival_s {a[back[0] + 1]:g} is before the previous "
            f"request's {a[back[0]]:g}; sort the trace by arrival time"
        )
    return Requests(prompt.astype(np.int64), output.astype(np.int64), a, f"trace {p.name}")
