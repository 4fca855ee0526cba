"""The workloads a user names with ``--workload``: one catalogue, each name giving request lengths and the published
acceptance that applies to it.

Lengths are lognormal with a median and a spread (sigma of the log), clipped to a maximum: the shape real traces show
(most requests short, a long tail).  The medians come from the sources named with each workload; where a spread is an
assumption, the workload says so.

``chat``           Splitwise (Patel et al., ISCA 2024, arXiv:2311.18677), Azure "conversation" trace:
                   median prompt 1,020 tokens, median output 129.
``summarization``  news articles summarised: CNN/DailyMail prompts answered by Llama-3.1-8B-Instruct in
                   SpecDecode-Bench's released traces (``data/llama3.1-8B/combined_cnn.jsonl`` @ 2fdccbd, 300
                   requests): median prompt 788.5, output 337.5 tokens; log-spreads 0.47 and 0.37, the standard
                   deviations of the logs of the lengths.  (Until 2026-12-05 assumed: 3,000 in, 200 out.)
``reasoning``      short problems, long chains of thought: median prompt 200, output 4,000 (assumed; the
                   DeepSeek-R1 report, arXiv:2501.12948, shows responses growing to about 10,000 tokens
                   on average during training).
``math``           grade-school maths answered step by step: GSM8K prompts answered by Llama-3.1-8B-Instruct in
                   SpecDecode-Bench's released traces (``data/llama3.1-8B/combined_gsm8k.jsonl`` @ 2fdccbd,
                   300 requests): median prompt 91.5, output 161.5 tokens; the log-spreads are the standard
                   deviations of the logs of the lengths, 0.22 and 0.33.
``code-completion``  Splitwise's Azure "coding" trace (``code`` is its old name, kept): median prompt 1,500,
                   output 13; completion-style (the editor asks for the next few tokens).
``code-editing``   rewriting given code: InstructCoder prompts answered by Llama-3.1-8B-Instruct in
                   SpecDecode-Bench's released traces (``data/llama3.1-8B/combined_instructcoder.jsonl`` @ 2fdccbd,
                   500 requests): median prompt 156, output 144.5 tokens, means 171 and 262; the log-spreads are
                   the lognormal's that give those means (mean = median exp(sigma^2 / 2)): 0.43 and 1.09.
                   Its output repeats much of its prompt, which n-gram and suffix drafters feed on.

Each workload names the benchmark class whose published acceptance applies to it (a key of
:data:`specsim.core.defaults.ACCEPTANCE_WORKLOADS`, which the published rows are keyed by): its own where one was
measured; ``reasoning`` reads ``math``'s (GSM8K), the nearest measured, and every label says so
(:func:`acceptance_of`).

Per decode batch (``--batch``) a workload gives only its acceptance; at a load (``--concurrency``, ``--rate``,
``serve-sim``) it gives the requests' lengths too.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from specsim.core.defaults import ACCEPTANCE_WORKLOADS, DEFAULT_WORKLOAD

__all__ = [
    "DEFAULT_WORKLOAD",
    "WORKLOADS",
    "WORKLOAD_ALIASES",
    "Workload",
    "acceptance_of",
    "acceptance_question",
    "get_workload",
    "lengths_or_workload",
    "trace_alone",
    "mean_context_tokens",
]


def lengths_or_workload(lengths: str | None = None) -> str:
    """Why fixed lengths and a workload are not taken together, by every function that takes requests' lengths: the
    answers at a load, serve-sim and serve-sweep (one line, so that each refuses the pair alike), naming what the
    caller gave (:func:`specsim.core.names.given_as`): ``lengths``, the keyword that gave both lengths
    (:func:`specsim.serving.simulator.requests_for`'s), else ``input_tokens`` and ``output_tokens``.

    >>> lengths_or_workload("lengths")
    'lengths give every request the same lengths; workload a distribution: drop one'
    >>> from specsim.core.names import as_flags
    >>> with as_flags():
    ...     lengths_or_workload("lengths") == lengths_or_workload()
    True
    """
    from specsim.core.names import given_as

    named = (
        given_as(lengths, "--input-len and --output-len")
        if lengths
        else f"{given_as('input_tokens')} and {given_as('output_tokens')}"
    )
    return f"{named} give every request the same lengths; {given_as('workload')} a distribution: drop one"


def trace_alone() -> str:
    """Why a trace takes no request count, workload or lengths beside it (:func:`specsim.serving.simulator.requests_for`),
    naming what the caller gave (:func:`specsim.core.names.given_as`).

    >>> trace_alone()
    'trace gives the requests and their lengths: drop n, workload, lengths'
    >>> from specsim.core.names import as_flags
    >>> with as_flags():
    ...     trace_alone()
    '--trace gives the requests and their lengths: drop --requests, --workload, --input-len and --output-len'
    """
    from specsim.core.names import given_as

    return (
        f"{given_as('trace')} gives the requests and their lengths: drop {given_as('n', '--requests')}, "
        f"{given_as('workload')}, {given_as('lengths', '--input-len and --output-len')}"
    )


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
    #: The workload whose published acceptance applies (a key of core.defaults.ACCEPTANCE_WORKLOADS).
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
            788.5,
            0.47,
            337.5,
            0.37,
            16384,
            2048,
            "CNN/DailyMail answered by Llama-3.1-8B-Instruct, SpecDecode-Bench traces @ 2fdccbd: medians 788.5 / 337.5 "
            "tokens, log-spreads 0.47 / 0.37 (of the 300 requests' lengths)",
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
            "math",
            91.5,
            0.22,
            161.5,
            0.33,
            8192,
            4096,
            "GSM8K answered by Llama-3.1-8B-Instruct, SpecDecode-Bench traces @ 2fdccbd: medians 91.5 / 161.5 tokens, "
            "log-spreads 0.22 / 0.33 (of the 300 requests' lengths)",
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


def get_workload(name: str | Workload) -> Workload:
    """The workload of a name (or an alias of one; a :class:`Workload` is itself), or one line listing them.

    >>> get_workload("code").name
    'code-completion'
    """
    if isinstance(name, Workload):
        return name
    if not isinstance(name, str):
        raise ValueError(f"a workload is a name ({', '.join(WORKLOADS)}) or a Workload, got {name!r:.60}")
    name = WORKLOAD_ALIASES.get(name, name)
    if name not in WORKLOADS:
        raise ValueError(f"unknown workload {name!r}; choose {', '.join(WORKLOADS)}")
    return WORKLOADS[name]


def acceptance_question(workload: str | Workload | None = None, lengths: tuple | None = None) -> tuple[int, str]:
    """(context, workload name) whose published acceptance a simulation of these requests reads: a workload's at the
    context of its median request halfway through its output; fixed ``lengths`` (prompt, output) chat's at theirs.  A
    :class:`Workload` outside the catalogue reads its ``acceptance`` class.  serve-sim, serve-sweep and the library's
    ``serve_sweep`` all ask it here.

    >>> acceptance_question("reasoning")
    (2200, 'reasoning')
    >>> acceptance_question(lengths=(101, 21))
    (112, 'chat')
    """
    if lengths is not None:
        return int(round(float(mean_context_tokens(*lengths)))), DEFAULT_WORKLOAD
    w = get_workload(DEFAULT_WORKLOAD if workload is None else workload)
    return int(round(w.median_context_tokens)), (w.name if WORKLOADS.get(w.name) == w else w.acceptance)


def acceptance_of(name: str) -> tuple[str, str]:
    """(the benchmark class whose published acceptance applies to workload ``name``, a clause saying so where it is
    another's; empty where the workload's own was measured).

    >>> acceptance_of("reasoning")
    ('math', "reasoning reads math's published acceptance (GSM8K), the nearest measured")
    >>> acceptance_of("code")
    ('code-completion', '')
    """
    w = get_workload(name)
    if w.acceptance == w.name:
        return w.acceptance, ""
    what = ACCEPTANCE_WORKLOADS[w.acceptance].split("(")[-1].rstrip(")")
    return w.acceptance, f"{w.name} reads {w.acceptance}'s published acceptance ({what}), the nearest measured"
