"""Reading what serving engines' own benchmark tools write: one :class:`BenchRun` per benchmark run.

Three tools, their formats taken from their source:

``vllm bench serve --save-result``  one JSON object per file (``--append-result`` appends one per line);
    read: ``model_id``, ``max_concurrency``, ``request_rate``, ``completed``, ``duration``,
    ``total_input_tokens``, ``total_output_tokens``, ``mean_tpot_ms`` and, where the server ran speculation
    and the tool read its ``/metrics`` before and after, ``spec_decode_acceptance_length`` and, from 0.14.0,
    ``spec_decode_per_position_acceptance_rates`` (each draft position's accepted tokens over the drafts), and what
    names the dataset: the ``--metadata`` keys ``dataset``, ``dataset_name``, ``dataset_path``
    (vLLM's ``vllm/benchmarks/serve.py``; ``benchmarks/benchmark_serving.py`` before ``vllm bench`` wrote the same
    keys without the ``spec_decode_`` ones).
``python -m sglang.bench_serving --output-file``  JSON lines, one per run; read: ``backend``,
    ``max_concurrency``, ``request_rate``, ``completed``, ``duration``, ``total_input_tokens``,
    ``total_output_tokens``, ``mean_tpot_ms`` and ``accept_length`` (the server's
    ``avg_spec_accept_length``, null without speculation) and ``dataset_name`` (SGLang's
    ``python/sglang/bench_serving.py``).
``python -m tensorrt_llm.serve.scripts.benchmark_serving --save-result``  vLLM's keys, and per run the summary of
    each request's ``avg_decoded_tokens_per_iter`` (``tensorrt_llm/serve/scripts/benchmark_serving.py``): its mean is the
    acceptance length of a speculative run.
``guidellm benchmark --output-path *.json``  a report of several benchmarks; schema version 1 (GuideLLM 0.5
    and 0.6) and 2 (0.7): ``benchmarks[].config.strategy`` (``type_``, ``streams`` or ``rate`` and
    ``max_concurrency``) and, of the successful requests, the means of ``metrics.inter_token_latency_ms``,
    ``request_latency``, ``request_concurrency``, ``prompt_token_count`` and ``output_token_count``
    (``src/guidellm/benchmark/schemas``), and the data the report names (schema 1's ``args.data``, 2's
    ``config.spec.data``).  The time per token after the first is ``inter_token_latency_ms``, (last - first token) /
    (output - 1), vLLM's TPOT; GuideLLM's ``time_per_output_token_ms`` is (last token - request start) / output, the
    first token and its wait in it (``src/guidellm/schemas/request_stats.py``, 0.6.0 and 0.7.3).  GuideLLM records no
    acceptance: a speculative run needs a saved ``/metrics`` page.

Every latency the tool records is kept (TPOT, TTFT, ITL, end-to-end; the mean, else the median, said so), with the
run's output throughput: a run the tool timed only as a whole (an offline batch, ``vllm bench serve`` against a server
that streams nothing) is judged by its throughput or end-to-end latency.  A run's load is a closed loop of
``max_concurrency`` users, Poisson arrivals at ``request_rate``, or, with an infinite rate and no concurrency limit,
every request sent at once: an offline batch of ``completed`` requests (:data:`specsim.serving.steady.LOAD_KINDS`).
The totals are checked against the duration: a recorded throughput that the totals over the duration do not give
(past :data:`TOTALS_TOLERANCE`), a mean TPOT that the run's own mean end-to-end latency, TTFT and output deny (past
:data:`TPOT_SPAN_TOLERANCE`), or a closed loop whose requests in flight (Little's law, completions per second times
the end-to-end latency, TTFT plus TPOT over the output) are not about its users, is refused: those fields are not of
one run.

The decode batch of a run is Little's law over the decode phase: requests finish at ``completed / duration``
per second and each spends ``TPOT * (output - 1)`` seconds decoding (TPOT excludes the first token), so on
average ``completed / duration * TPOT * (output - 1)`` sequences decode together (at least 1: TPOT is timed
only while something decodes).  GuideLLM's measured mean
concurrency gives the same figure as ``concurrency * TPOT * (output - 1) / latency``.  The mean cached context
is the mean prompt plus half the mean output (:func:`specsim.core.workloads.mean_context_tokens`).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, replace
from pathlib import Path

from specsim.core.limits import MAX_JSON_BYTES, loads_json
from specsim.core.workloads import mean_context_tokens
from specsim.engines import REGISTRY

__all__ = ["TOOLS", "BenchRun", "read_bench_file"]

#: The engines' benchmark clients, in the order their files are told apart (each engine's ``bench_files``).
_CLIENTS = sorted((e for e in REGISTRY.values() if e.bench_files), key=lambda e: e.bench_files.precedence)
#: The tools and versions read, as outputs name them: each engine's client (by the engine's name), and GuideLLM.
TOOLS = {e.name: e.bench_files.describes for e in REGISTRY.values() if e.bench_files} | {
    "guidellm": "GuideLLM benchmark report, schema version 1 (0.5 and 0.6) or 2 (0.7 and later)"
}
#: Most runs read from one file (a sweep of concurrencies is tens).
MAX_RUNS_PER_FILE = 1000
#: Requests in flight (or sequences decoding) past the configured concurrency by more than this factor cannot have been
#: measured in one run (Little's law; the slack covers means of unequal requests).
LITTLE_SLACK = 1.25


#: A recorded throughput off the totals over the duration by more than this is not of the same run (rounding is far less).
TOTALS_TOLERANCE = 0.02
#: A closed loop holds about its users in flight; fewer than this share of them (Little's law, over the run) says the
#: duration is not the run's (the ramp up and down of a short run costs far less).
MIN_IN_FLIGHT_SHARE = 0.4
#: A benchmark run takes minutes to hours; one past a year is no run's.  A run judged by its throughput alone (no TPOT,
#: no latency) has nothing else to bound its duration by, and at 1e308 s its throughput overflowed the fit.
MAX_DURATION_S = 3.2e7


@dataclass(frozen=True)
class BenchRun:
    """One benchmark run: its load, its latencies and throughput, and what follows for the decode batch and context."""

    path: str
    index: int  # the run's position in its file (line or benchmark), from 1
    tool: str  # a key of TOOLS
    model: str | None  # the model the tool names, where it names one
    load: str  # the configured load: "concurrency 16", "rate 4/s", "batch 64"
    completed: int
    tpot_s: float | None  # time per output token after the first (None: not recorded)
    decode_batch: float | None  # Little's law over the decode phase (None without a TPOT)
    prompt_tokens: float  # means per request
    output_tokens: float
    accept_length: float | None  # tokens per verification pass, where the tool read it
    rate_per_s: float = 0.0  # requests finished per second (completed / duration; GuideLLM: concurrency / latency)
    concurrency: int | None = None  # the configured concurrency, where the load is one
    server: str | None = None  # the engine the tool says it benchmarked, where it names one
    kind: str = "concurrency"  # a key of specsim.serving.steady.LOAD_KINDS
    load_value: float = 1.0  # users, requests/s or requests at once
    ttft_s: float | None = None
    itl_s: float | None = None
    e2e_s: float | None = None
    duration_s: float | None = None
    output_tokens_per_s: float | None = None
    #: "mean" or "median": which statistic the latencies are (a tool or source that records only medians)
    statistic: str = "mean"
    #: Draft tokens proposed per draft, where the tool counted both (vLLM's spec_decode_draft_tokens / _num_drafts)
    draft_tokens_per_draft: float | None = None
    #: Requests sent that did not complete (num_prompts - completed, where the tool records both): the latencies and
    #: throughput are the completed requests'
    failed: int = 0
    #: c_k = P(drafted token k accepted), k = 1..K, where the tool counted them (vLLM's
    #: spec_decode_per_position_acceptance_rates: accepted tokens at position k over the drafts); 1 + their sum is the
    #: acceptance length, and 1 + the first s of them the acceptance length the same drafter gives at s <= K steps
    per_position: tuple | None = None
    #: What the file records that names the dataset the prompts came from ("dataset gsm8k"; None: nothing)
    dataset: str | None = None
    #: Whether the backend behind :attr:`server` names only the API spoken, an OpenAI-compatible client any server
    #: answers (vllm bench serve's "vllm"): the server is then a hint, not proof (:attr:`BenchFiles.api_backends`)
    server_hinted: bool = False
    #: Where :attr:`accept_length` came from where the file records none: a saved /metrics page's name (None: the file)
    accept_length_page: str | None = None
    #: The file as messages name it where another file given shares its base name: enough of its path to tell them
    #: apart (:func:`read_alike`; None: its base name)
    label: str | None = None
    #: How a run at a rate sent its requests where not as Poisson arrivals, as its file says (GuideLLM's constant
    #: strategy; vllm bench serve's burstiness other than 1); None: Poisson, the serving model's one open loop
    arrivals: str | None = None
    #: accepted over drafted tokens, in percent, where the tool wrote it without the counts it is made of (vLLM's
    #: spec_decode_acceptance_rate): checked against the acceptance length at the draft steps
    #: (:func:`specsim.calibration.runs.check_runs`), as the counts are where the file has them (:func:`_check_fields`)
    acceptance_rate_pct: float | None = None

    @property
    def others_rate_per_s(self) -> float:
        """The rate at which other requests arrive while one decodes: all of them in an open loop (Poisson arrivals
        see the time averages), the other ``c - 1`` users' share in a closed loop of ``c`` (a request's own successor
        arrives after it ends)."""
        c = self.concurrency
        return self.rate_per_s * (c - 1) / c if c else self.rate_per_s

    @property
    def name(self) -> str:
        """The file's name as messages, sweeps and --json give it: its base name, or its :attr:`label`."""
        return self.label or Path(self.path).name

    @property
    def where(self) -> str:
        return f"{self.name}#{self.index}"

    @property
    def context(self) -> float:
        return float(mean_context_tokens(self.prompt_tokens, self.output_tokens))

    @property
    def observable(self) -> str:
        """What the run is judged by: its TPOT where recorded, else its end-to-end latency, else its output throughput."""
        if self.tpot_s is not None:
            return "tpot"
        return "e2e" if self.e2e_s is not None else "throughput"

    @property
    def value(self) -> float:
        """The observable's measured value (seconds, or output tokens per second)."""
        return {"tpot": self.tpot_s, "e2e": self.e2e_s, "throughput": self.output_tokens_per_s}[self.observable]

    @property
    def fixed_lengths(self) -> bool:
        """Whether every request had the same output length, as far as the totals say: a whole mean (a fixed-length
        benchmark, ``--random-output-len`` with no range, ``ignore_eos``); the plain users of a closed loop then move in
        step (:func:`specsim.serving.steady.closed_population`)."""
        return float(self.output_tokens).is_integer()


def _number(where: str, record: dict, key: str, *, positive: bool = True, optional: bool = False) -> float | None:
    value = record.get(key)
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{where}: {key} must be a finite number, got {value!r}")
    if positive and value <= 0:
        raise ValueError(f"{where}: {key} must be positive, got {value!r}")
    if value < 0:
        raise ValueError(f"{where}: {key} must not be negative, got {value!r}")
    return float(value)


def _load(where: str, record: dict, completed: float) -> tuple[str, str, float]:
    """(label, kind, value) of a run's load: a closed loop of ``max_concurrency`` users, Poisson arrivals at
    ``request_rate``, or, at an infinite rate with no concurrency limit, all ``completed`` requests at once."""
    concurrency = record.get("max_concurrency")
    rate = record.get("request_rate")
    unpaced = rate is None or rate in ("inf", "Infinity") or (isinstance(rate, float) and math.isinf(rate))
    if not unpaced and not (_is_number(rate) and rate > 0):  # no run's, beside a concurrency or not
        raise ValueError(f"{where}: request_rate must be a number > 0 or 'inf' (unpaced), got {rate!r:.20}")
    if concurrency is not None:
        from specsim.core.limits import MAX_BATCH

        n = _number(where, record, "max_concurrency")
        if n != int(n) or n > MAX_BATCH:
            raise ValueError(
                f"{where}: max_concurrency must be a whole number in [1, {MAX_BATCH}], got {concurrency!r:.20}"
            )
        sent = _sent(record, completed)
        if unpaced and sent < n:  # --max-concurrency caps the requests in flight and adds none: all sent at once
            return f"batch {int(sent)}", "batch", float(int(sent))
        return f"concurrency {int(n)}", "concurrency", float(int(n))
    if unpaced:
        return f"batch {int(completed)}", "batch", float(completed)
    value = _number(where, record, "request_rate")
    return f"rate {value:g}/s", "rate", value


def _concurrency(load: str) -> int | None:
    kind, _, value = load.partition(" ")
    return int(value) if kind == "concurrency" else None


def _latency(where: str, record: dict, name: str, prefer: str = "mean") -> tuple[float | None, str | None]:
    """(seconds, "mean" or "median") of a latency the tool records in ms as ``mean_<name>_ms`` (else the median; the
    median first where ``prefer`` says so)."""
    for stat in ("mean", "median") if prefer == "mean" else ("median", "mean"):
        key = f"{stat}_{name}_ms"
        if record.get(key) is not None:
            return _number(where, record, key) / 1e3, stat
    return None, None


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _check_fields(where: str, record: dict, completed: float, output_total: float | None = None) -> None:
    """Refuse figures a result holds that cannot be, read or not: a latency (``*_ms``) or count that is not a finite
    number >= 0, more requests completed than sent, speculative counters that contradict one another, and more
    accepted tokens or drafts than output tokens (each draft's verification yields at least one).  vLLM
    0.24.0 writes ``spec_decode_num_drafts``, ``_draft_tokens``, ``_accepted_tokens`` (whole counts of the run),
    ``_acceptance_rate`` (accepted / draft tokens x 100) and ``_acceptance_length`` (1 + accepted / drafts)
    (vllm/benchmarks/serve.py, benchmark()); a hand-edited or broken file once passed with -1000 drafts or an
    acceptance rate of 1e300."""
    for key, value in record.items():
        if key.endswith("_ms") and value is not None:
            _number(where, record, key, positive=False)
    for key in ("num_prompts", "spec_decode_num_drafts", "spec_decode_draft_tokens", "spec_decode_accepted_tokens"):
        if record.get(key) is not None and _number(where, record, key, positive=False) != int(record[key]):
            raise ValueError(f"{where}: {key} must be a whole number, got {record[key]!r}")
    prompts = record.get("num_prompts")
    if prompts is not None and prompts < completed:
        raise ValueError(
            f"{where}: completed ({completed:g}) is more than num_prompts ({prompts!r}), the requests sent"
        )
    drafts, drafted, accepted = (
        record.get(f"spec_decode_{k}") for k in ("num_drafts", "draft_tokens", "accepted_tokens")
    )
    rate = _number(where, record, "spec_decode_acceptance_rate", positive=False, optional=True)
    if rate is not None and rate > 100:
        raise ValueError(f"{where}: spec_decode_acceptance_rate is a percentage in [0, 100], got {rate:g}")
    if drafts == 0 and (drafted or accepted):  # (vLLM counts a draft as it adds its tokens: observe_draft)
        key, count = ("draft_tokens", drafted) if drafted else ("accepted_tokens", accepted)
        raise ValueError(
            f"{where}: spec_decode_{key} ({count}) with spec_decode_num_drafts 0: a draft's tokens are counted with "
            "the draft (vllm/v1/spec_decode/metrics.py, SpecDecodingStats.observe_draft)"
        )
    if drafted is not None and accepted is not None:
        if accepted > drafted:
            raise ValueError(
                f"{where}: spec_decode_accepted_tokens ({accepted}) is more than spec_decode_draft_tokens ({drafted})"
            )
        # (to half a point, 0.5%: a file written by hand or converted from a table may round it)
        if rate is not None and drafted > 0 and abs(rate - 100 * accepted / drafted) > 0.5:
            raise ValueError(
                f"{where}: spec_decode_acceptance_rate {rate:g} is not spec_decode_accepted_tokens / "
                f"spec_decode_draft_tokens x 100 = {100 * accepted / drafted:.6g}"
            )
    for key, count in (("spec_decode_accepted_tokens", accepted), ("spec_decode_num_drafts", drafts)):
        if count is not None and output_total is not None and count > output_total:
            raise ValueError(
                f"{where}: {key} ({count}) is more than total_output_tokens ({output_total:g}): each verification "
                "yields at least one output token, and an accepted token is one"
            )
    length = record.get("spec_decode_acceptance_length")
    possible = drafts and drafted is not None and 1 <= length <= 1 + drafted / drafts if _is_number(length) else False
    if possible and accepted is not None:  # (a length no draft could give is named against the steps, later)
        if abs(length - (1 + accepted / drafts)) > 5e-3 * length:  # (to 0.5%, as the rate)
            raise ValueError(
                f"{where}: spec_decode_acceptance_length {length:g} is not 1 + spec_decode_accepted_tokens / "
                f"spec_decode_num_drafts = {1 + accepted / drafts:.6g}"
            )


def _check_totals(where: str, record: dict, completed: float, duration: float | None, output_total: float) -> None:
    """Refuse a recorded throughput that the totals over the duration do not give (beyond rounding)."""
    if duration is None:
        return
    for key, total in (("output_throughput", output_total), ("request_throughput", completed)):
        recorded = _number(where, record, key, optional=True)
        if recorded is not None and abs(total / duration / recorded - 1.0) > TOTALS_TOLERANCE:
            raise ValueError(
                f"{where}: {key} {recorded:.6g} but the totals over the duration give {total / duration:.6g} "
                f"({total:g} in {duration:g} s): more than {TOTALS_TOLERANCE:.0%} apart, so these fields are "
                "not of one run"
            )


#: The chance that Poisson (gamma) arrivals send a run's requests faster than :func:`_check_sending` allows.
SENDING_FALSE_REFUSAL = 1e-6


def _sent(record: dict, completed: float) -> float:
    """The requests a run sent: its num_prompts where the file gives it, else those it completed."""
    return record.get("num_prompts") if _is_number(record.get("num_prompts")) else completed


def _shape(record: dict) -> float:
    """The shape of a paced run's gamma intervals between requests: its burstiness, 1 (Poisson) where not a number > 0."""
    shape = record.get("burstiness", 1.0)
    return 1.0 if not _is_number(shape) or shape <= 0 else float(shape)


def _sending_s(sent: float, shape: float, rate: float, q: float) -> float:
    """The ``q`` quantile of the time the last of ``sent`` requests is sent (2 or more): the sum of ``sent`` - 1 gamma
    intervals of ``shape`` at ``rate`` per second, the one home of the schedule :func:`_check_sending` and
    :func:`_last_sent_s` read.  The gamma quantile is scipy.special's inverse of the regularised incomplete gamma
    function times the scale, as ``scipy.stats.gamma.ppf`` computes it (its ``_ppf``), without importing scipy.stats:
    0.4 s of a calibrate-engine's 4.8 s of CPU on three files.

    >>> round(_sending_s(101, 1.0, 10.0, 0.5), 6)  # the median of 100 exponential intervals of 0.1 s: just under 10 s
    9.966686
    """
    from scipy.special import gammaincinv

    return float(gammaincinv((sent - 1) * shape, q) * (1.0 / (rate * shape)))


def _check_sending(where: str, record: dict, rate: float, completed: float, duration: float | None) -> None:
    """A run at a request rate cannot end before its last request is sent.  vLLM's bench serve draws gamma intervals
    of shape ``burstiness`` at ``request_rate`` and, without a ramp-up, rescales them so that the last request is sent
    at num_prompts / request_rate (vllm/benchmarks/serve.py get_request, read in a release with ramp-up strategies);
    the older benchmark_serving.py slept an exponential interval after each request, unscaled.  Either way the last is
    sent after num_prompts - 1 intervals at the least; a duration shorter than that sum's 1e-6 quantile is refused."""
    if duration is None or record.get("ramp_up_strategy") is not None:
        return
    sent, shape = _sent(record, completed), _shape(record)
    if sent < 2:
        return
    least = _sending_s(sent, shape, rate, SENDING_FALSE_REFUSAL)
    if duration < least:
        raise ValueError(
            f"{where}: {sent:g} requests sent at request_rate {rate:g}/s take {least:.3g} s to send at the least "
            f"(gamma intervals of shape {shape:g}; a shorter time has a chance of {SENDING_FALSE_REFUSAL:g}), but "
            f"duration is {duration:g} s: the duration or the rate is not this run's"
        )


def _last_sent_s(record: dict, completed: float) -> float | None:
    """The latest a paced run's last request is sent (the gamma intervals' sum at its 1 - 1e-6 quantile, or the
    rescaled schedule's num_prompts / request_rate, whichever is later; :func:`_check_sending` reads the same
    schedule); None under a ramp-up, whose schedule the file does not give."""
    if record.get("ramp_up_strategy") is not None:
        return None
    rate, sent = float(record["request_rate"]), _sent(record, completed)
    most = _sending_s(sent, _shape(record), rate, 1 - SENDING_FALSE_REFUSAL) if sent > 1 else 0.0
    return max(sent / rate, most)


def _check_first_token(where: str, ttft_s: float | None, tpot_s: float | None, names: tuple[str, str]) -> None:
    """Refuse a run whose time to first token is under a tenth of its time per output token: a first token takes at
    least one iteration (the prompt's, with the decoding beside it), and an output token at most one (a speculative
    round's iteration yields one or more), so TTFT >= TPOT wherever both are of one run; a tenth leaves room for
    iterations of unequal length and a mean against a median.  A TTFT written in seconds where milliseconds are read
    falls a thousandfold below it."""
    if ttft_s is not None and tpot_s is not None and 0 < ttft_s < tpot_s / 10:
        raise ValueError(
            f"{where}: {names[0]} {ttft_s * 1e3:.4g} is under a tenth of {names[1]} {tpot_s * 1e3:.4g}: a first token "
            "takes at least one iteration and an output token at most one, so TTFT is at least TPOT; both must be in "
            "milliseconds (seconds written as ms?)"
        )


#: A run's mean TPOT and the time per token after the first that its own mean end-to-end latency, mean TTFT and mean
#: output give, (e2e - ttft) / (output - 1), are both averages of its requests' time per token after the first (the
#: second weighted by each request's tokens after the first); they part only as far as that time varies with a
#: request's length.  Beyond this factor they are not of one client's count of tokens: in the 356 runs of
#: examples/bench and tests/data that record all three means (2026-12-07; most of fixed lengths, DO-Solutions' three
#: multi-turn runs of varied ones) the TPOT is 0.996-1.002 of theirs; GPUStack's benchmark-runner reports
#: (tests/data/gpustack-qwen3.5) give 0.12-0.22, its client timing streamed chunks.
TPOT_SPAN_TOLERANCE = 2.0


def _check_decode_span(
    where: str,
    tpot_s: float | None,
    ttft_s: float | None,
    e2e_s: float | None,
    output: float,
    names: tuple[str, str, str],
    stats: tuple[str | None, ...],
) -> None:
    """Refuse a run whose mean TPOT is off the time per token its own mean latencies give by more than
    :data:`TPOT_SPAN_TOLERANCE` (``names``: the TPOT's, TTFT's and end-to-end latency's keys as the file writes them;
    medians are not compared, the median of a ratio being no ratio of medians).  Such a TPOT counts something else than
    tokens (a client that times streamed chunks, several tokens to one); judged by it, every run sits under the
    model's floor and the fit says to check the GPU."""
    if None in (tpot_s, ttft_s, e2e_s) or output <= 1 or any(stat != "mean" for stat in stats):
        return
    implied = (e2e_s - ttft_s) / (output - 1)
    if implied <= 0 or 1 / TPOT_SPAN_TOLERANCE <= tpot_s / implied <= TPOT_SPAN_TOLERANCE:
        return
    raise ValueError(
        f"{where}: {names[0]} {tpot_s * 1e3:.4g} is {tpot_s / implied:.2f} of the {implied * 1e3:.4g} ms per token after "
        f"the first that its {names[2]} {e2e_s * 1e3:.6g}, {names[1]} {ttft_s * 1e3:.4g} and {output:.5g} output tokens "
        f"per request give; both average the same requests' time per token, so this TPOT counts something else than "
        f"tokens (a client that times streamed chunks): leave the run's TPOT out of the file to have it judged by its "
        f"end-to-end latency"
    )


def _check_span(
    where: str,
    record: dict,
    completed: float,
    duration: float | None,
    whole_s: float | None,
    in_flight: float | None,
    paced: bool,
    suspects: str,
) -> None:
    """Little's law bounds every run's duration, not only a closed loop's (:func:`_check_in_flight`): completions per
    second times the mean end-to-end latency, the mean number in flight, cannot pass the requests sent; and from the
    time the last request is sent (at once, unpaced) until the run ends at least one is in flight, so the duration is
    at most that time plus every request's latency end to end, one after another (not where some failed: no latency
    holds their time).  Each bound allows :data:`LITTLE_SLACK` (means of unequal requests).  ``suspects``: what the
    refusal of the number in flight names as not the run's (the duration, or the latencies it was read from)."""
    if in_flight is None:  # (no duration or no latency end to end)
        return
    sent = _sent(record, completed)
    if in_flight > LITTLE_SLACK * sent:
        raise ValueError(
            f"{where}: completions per second times the end-to-end latency give {in_flight:.3g} requests in flight, "
            f"more than the {sent:g} sent: {suspects} not this run's"
        )
    failed = record.get("failed")
    if sent > completed or (_is_number(failed) and failed > 0):
        return
    last_sent = _last_sent_s(record, completed) if paced else 0.0
    if last_sent is None:
        return
    longest = last_sent + LITTLE_SLACK * completed * whole_s
    if duration > longest:
        after = f" after the last is sent by {last_sent:.3g} s" if paced else ""
        raise ValueError(
            f"{where}: duration {duration:.4g} s is longer than its {completed:g} requests can take: at "
            f"{whole_s * 1e3:.3g} ms each end to end, one after another{after}, they take {longest:.3g} s at the most: "
            "the duration is not this run's"
        )


def _cap_binds(in_flight: float, cap: float) -> bool:
    """Whether a run paced at a rate with at most ``cap`` requests in flight (vllm bench serve's --request-rate with
    --max-concurrency, GuideLLM's constant or poisson rate with max_concurrency) is the closed loop at the cap: its
    requests in flight (``in_flight``, Little's law over the run) reach :data:`MIN_IN_FLIGHT_SHARE` of it, as a closed
    loop's do; below that the rate left the cap unreached and the run is the rate's.

    >>> _cap_binds(61.0, 64), _cap_binds(12.0, 64)
    (True, False)
    """
    return in_flight >= MIN_IN_FLIGHT_SHARE * cap


def _check_in_flight(where: str, concurrency: int | None, in_flight: float | None, suspects: str) -> None:
    """A closed loop keeps about its users in flight: Little's law over the run (``in_flight``, completions per second
    times the end-to-end latency) must give at least a share of them; ``suspects`` names what was read (the duration,
    or the latencies the end-to-end latency was built from)."""
    if concurrency is None or in_flight is None:
        return
    if in_flight < MIN_IN_FLIGHT_SHARE * concurrency or in_flight > LITTLE_SLACK * concurrency:
        raise ValueError(
            f"{where}: completions per second times the end-to-end latency give {in_flight:.3g} requests in "
            f"flight at concurrency {concurrency}: a closed loop keeps about its users in flight (between "
            f"{MIN_IN_FLIGHT_SHARE:g} and {LITTLE_SLACK:g} of them), so {suspects} not this run's"
        )


#: The client backends of vllm bench serve and sglang.bench_serving that name the engine behind them (an OpenAI-style
#: backend such as ``openai-chat`` names none).
_SERVERS = {backend: e.name for e in _CLIENTS for backend in e.bench_files.backends} | {
    "tgi": "tgi",
    "lmdeploy": "lmdeploy",
    "deepspeed-mii": "deepspeed-mii",
    "scalellm": "scalellm",
}


#: The backends that name only the API the client spoke (an OpenAI-compatible client, which any server answers).
_API_BACKENDS = {backend for e in _CLIENTS for backend in e.bench_files.api_backends}


def _server(where: str, record: dict) -> str | None:
    backend = record.get("backend")
    if backend is None:
        return None
    if not isinstance(backend, str):
        raise ValueError(f"{where}: backend must be a string, got {backend!r}")
    return _SERVERS.get(backend.strip().lower())


def _little(where: str, completed: float, duration: float | None, tpot_s: float | None, output: float) -> float | None:
    if output < 2:
        raise ValueError(
            f"{where}: a mean of {output:g} output tokens per request leaves no decode steps to time "
            "(TPOT needs at least 2 output tokens)"
        )
    if tpot_s is None or duration is None:
        return None
    return max(1.0, completed / duration * tpot_s * (output - 1))


def _acceptance(where: str, record: dict, tool: str) -> float | None:
    files = REGISTRY[tool].bench_files
    key = files.acceptance_key
    if files.decoded_per_iteration:
        # Tokens per iteration of each request, summarised over the run: the acceptance length where the server
        # speculated, 1 where it did not.
        summary = record.get(key)
        if not isinstance(summary, dict):
            raise ValueError(f"{where}: {key} must be an object with a mean, got {summary!r}")
        al = _number(f"{where}: {key}", summary, "mean")
        al = None if al == 1.0 else al
    else:
        al = _number(where, record, key, optional=True)
    if al is not None and al < 1:
        raise ValueError(f"{where}: {key} must be at least 1 (tokens per verification pass), got {al:g}")
    return al


def _serve_run(path: str, index: int, record: object, tool: str, prefer: str = "mean") -> BenchRun:
    where = f"{path}#{index}"
    if not isinstance(record, dict):
        raise ValueError(f"{where}: a {tool} result is a JSON object, got {type(record).__name__}")
    completed = _number(where, record, "completed")
    duration = _number(where, record, "duration", optional=True)
    if duration is not None and duration > MAX_DURATION_S:
        raise ValueError(
            f"{where}: duration must be a number of seconds in (0, {MAX_DURATION_S:.2g}] (a year), got {duration:g}"
        )
    tpot_s, tpot_stat = _latency(where, record, "tpot", prefer)
    ttft_s, ttft_stat = _latency(where, record, "ttft", prefer)
    itl_s, _ = _latency(where, record, "itl", prefer)
    e2e_s, e2e_stat = _latency(where, record, "e2el", prefer)
    if tpot_s is None and e2e_s is None and duration is None:
        raise ValueError(
            f"{where}: no mean_tpot_ms (or median), no end-to-end latency and no duration: nothing to judge the run by"
        )
    prompt = _number(where, record, "total_input_tokens", positive=False) / completed
    output_total = _number(where, record, "total_output_tokens")
    output = output_total / completed
    _check_totals(where, record, completed, duration, output_total)
    _check_fields(where, record, completed, output_total)
    al = _acceptance(where, record, tool)
    per_position = _per_position(where, record, tool, al)
    model = record.get("model_id")  # vLLM names it; SGLang's result does not
    if model is not None and not isinstance(model, str):
        raise ValueError(f"{where}: model_id must be a string, got {model!r}")
    load, kind, value = _load(where, record, completed)
    concurrency = _concurrency(load)
    rate = completed / duration if duration is not None else None
    whole = (
        e2e_s
        if e2e_s is not None
        else (ttft_s + tpot_s * (output - 1) if ttft_s is not None and tpot_s is not None else None)
    )
    paced = _is_number(record.get("request_rate"))
    in_flight = rate * whole if rate is not None and whole is not None else None  # Little's law over the run
    suspects = (  # what Little's law over the run was read from, where it cannot hold
        f"the duration or {e2e_stat}_e2el_ms is"
        if e2e_s is not None
        else f"the duration or the latencies it is built from ({ttft_stat}_ttft_ms + {tpot_stat}_tpot_ms x the output "
        "tokens after the first; no e2el recorded) are"
    )
    if concurrency is not None and paced and in_flight is not None:
        # Arrivals at request_rate with at most max_concurrency in flight (vllm bench serve takes both): where Little's
        # law leaves the cap unreached, the run is the rate's; where it binds, the closed loop's.
        if not _cap_binds(in_flight, concurrency):
            load, kind, value = _load(where, record | {"max_concurrency": None}, completed)
            concurrency = None
    _check_in_flight(where, concurrency, in_flight, suspects)
    if paced:  # a paced run cannot end before its last request is sent, its cap binding or not
        _check_sending(where, record, float(record["request_rate"]), completed, duration)
    _check_span(where, record, completed, duration, whole, in_flight, paced, suspects)
    decoding = _little(where, completed, duration, tpot_s, output)
    _check_first_token(where, ttft_s, tpot_s, (f"{ttft_stat}_ttft_ms", f"{tpot_stat}_tpot_ms"))
    _check_decode_span(
        where,
        tpot_s,
        ttft_s,
        e2e_s,
        output,
        (f"{tpot_stat}_tpot_ms", f"{ttft_stat}_ttft_ms", f"{e2e_stat}_e2el_ms"),
        (tpot_stat, ttft_stat, e2e_stat),
    )
    return BenchRun(
        str(Path(path)),
        index,
        tool,
        model,
        load,
        int(completed),
        tpot_s,
        decoding,
        prompt,
        output,
        al,
        rate or 0.0,
        concurrency,
        _server(where, record),
        kind,
        value,
        ttft_s,
        itl_s,
        e2e_s,
        duration,
        output_total / duration if duration is not None else None,
        tpot_stat or e2e_stat or "mean",
        _per_draft(record),
        int(sent - completed) if _is_number(sent := record.get("num_prompts")) and sent > completed else 0,
        per_position,
        _dataset(where, record, REGISTRY[tool].bench_files.dataset_keys),
        str(record.get("backend")).strip().lower() in _API_BACKENDS,
        arrivals=_arrivals(record) if kind == "rate" else None,
        acceptance_rate_pct=_rate_alone(record),
    )


def _arrivals(record: dict) -> str | None:
    """How vllm bench serve paced a run, where not as Poisson arrivals: gamma intervals of shape ``burstiness``
    (vllm/benchmarks/serve.py: 1 is Poisson, above 1 more evenly spaced, below 1 burstier)."""
    shape = _shape(record)
    if shape == 1.0:
        return None
    return f"gamma intervals of shape {shape:g} (burstiness: {'more even' if shape > 1 else 'burstier'} than Poisson)"


def _per_position(where: str, record: dict, tool: str, al: float | None) -> tuple | None:
    """The run's per-position acceptance shares c_1..c_K where the tool counted them (None: not recorded, or an empty
    list, which vLLM writes where no draft was counted), refused in one line where they cannot be a run's
    (:func:`specsim.speculation.acceptance.checked_shares`, the check a calibration's shares get too: numbers in [0, 1],
    not rising with the position), or where 1 + their sum is off the recorded acceptance length by more than rounding
    (the accepted tokens of every position are the accepted tokens).  Their number against the draft steps is checked
    where the steps are known (:func:`specsim.calibration.runs.check_runs`)."""
    from specsim.speculation.acceptance import SHARE_ROUNDING, checked_shares

    files = REGISTRY[tool].bench_files
    key, tol = files.per_position_key, SHARE_ROUNDING
    rates = record.get(key) if key else None
    if rates is None or rates == []:
        return None
    try:
        shares = checked_shares(rates)
    except ValueError as err:
        raise ValueError(f"{where}: {key} {err}") from None
    if al is None:
        raise ValueError(
            f"{where}: {key} without {files.acceptance_key}: both are written from the same counters; a file with the "
            "shares alone was edited"
        )
    if abs(1 + sum(rates) - al) > tol * al:  # (to 0.5%, as the length against the counters)
        raise ValueError(
            f"{where}: 1 + the sum of {key} is {1 + sum(rates):.6g}, not {files.acceptance_key} {al:g}: the tokens "
            "accepted at every position are the tokens accepted"
        )
    return shares


def _dataset(where: str, record: dict, keys: tuple) -> str | None:
    """What a record says of the dataset its prompts came from: each of ``keys`` it holds with a value, as "key value"
    ("dataset gsm8k; dataset_path gsm8k.jsonl"), or None where it holds none."""
    named = []
    for key in keys:
        value = record.get(key)
        if value is None or value == "":
            continue
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise ValueError(f"{where}: {key} must be a string naming the run, got {value!r:.40}")
        named.append(f"{key} {str(value).strip()[:60]}")
    return "; ".join(named) or None


def _rate_alone(record: dict) -> float | None:
    """vLLM's spec_decode_acceptance_rate where the file has no spec_decode_draft_tokens to check it by (read and
    bounded by :func:`_check_fields`), else None."""
    rate = record.get("spec_decode_acceptance_rate")
    return float(rate) if _is_number(rate) and record.get("spec_decode_draft_tokens") is None else None


def _per_draft(record: dict) -> float | None:
    """Draft tokens per draft from vLLM's counters (checked whole and consistent by :func:`_check_fields`)."""
    drafts, drafted = record.get("spec_decode_num_drafts"), record.get("spec_decode_draft_tokens")
    return drafted / drafts if drafts and drafted is not None else None


def _mean(where: str, metrics: dict, key: str) -> float:
    try:
        summary = metrics[key]["successful"]
    except (KeyError, TypeError):
        raise ValueError(f"{where}: metrics.{key}.successful is missing") from None
    if not isinstance(summary, dict):
        raise ValueError(f"{where}: metrics.{key}.successful must be an object")
    return _number(f"{where}: metrics.{key}.successful", summary, "mean", positive=False)


def _latency_of(where: str, metrics: dict, key: str, prefer: str) -> tuple[float, str]:
    """(value, "mean" or "median") of a GuideLLM latency: its successful requests' median where ``prefer`` asks for it
    and the summary holds one, else their mean."""
    summary = (metrics.get(key) or {}).get("successful") if isinstance(metrics.get(key), dict) else None
    if prefer == "median" and isinstance(summary, dict) and summary.get("median") is not None:
        return _number(f"{where}: metrics.{key}.successful", summary, "median", positive=False), "median"
    return _mean(where, metrics, key), "mean"


def _guidellm_data(name: str, report: dict) -> str | None:
    """What a GuideLLM report names of the data its benchmarks drew from: schema 1's args.data, a list of strings
    (src/guidellm/benchmark/schemas/base_args.py, BaseBenchmarkArgs.data, at vllm-project/guidellm 4e38be6), schema 2's
    config.spec.data, a list of DataArgs objects (src/guidellm/benchmark/schemas/entrypoints.py, BenchmarkArgs.data,
    0.7.3), each said as its scalar fields, key=value."""
    config = report.get("config")
    holder = report.get("args") if "args" in report else config.get("spec") if isinstance(config, dict) else None
    data = holder.get("data") if isinstance(holder, dict) else None
    if not isinstance(data, list):
        return None
    said = [
        ",".join(f"{k}={v}" for k, v in item.items() if isinstance(v, (str, int, float)))
        if isinstance(item, dict)
        else str(item)
        for item in data
    ]
    return _dataset(name, {"data": ", ".join(said)}, ("data",))


def _guidellm_failed(where: str, totals: dict) -> int:
    """The requests of a GuideLLM benchmark that errored or were cut off at its end (GenerativeMetrics.request_totals,
    src/guidellm/benchmark/schemas/metrics.py, 0.7.3): its summaries are the successful ones'."""
    failed = 0
    for status in ("errored", "incomplete"):
        count = totals.get(status, 0)
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise ValueError(f"{where}: metrics.request_totals.{status} must be a count, got {count!r}")
        failed += count
    return failed


def _guidellm_in_flight(where: str, metrics: dict) -> float:
    """A GuideLLM benchmark's mean requests in flight of every status: ``request_concurrency.total`` (GuideLLM 0.5 and
    later write it beside ``successful``, the time-weighted concurrency of all the benchmark's requests:
    StatusDistributionSummary.concurrency_distribution_from_timings, src/guidellm/schemas/statistics.py, 0.7.3
    L898-906), for an errored or cut-off request held its place in the engine and under the cap while in flight;
    ``successful`` (the successful requests' alone) where the report keeps no total and every request succeeded (a
    report trimmed to it, as examples/bench's are).  Where some failed and no total is kept, refused: the successful
    requests' concurrency leaves out those that held the engine, and GuideLLM writes the total in every report
    (GenerativeMetrics.request_concurrency, a StatusDistributionSummary with successful, errored, incomplete and total,
    src/guidellm/benchmark/schemas/metrics.py 0.7.3 L781-783, filled at L890)."""
    summary = metrics.get("request_concurrency")
    if isinstance(summary, dict) and isinstance(summary.get("total"), dict):
        return _number(f"{where}: metrics.request_concurrency.total", summary["total"], "mean", positive=False)
    totals = metrics.get("request_totals")
    failed = _guidellm_failed(where, totals) if isinstance(totals, dict) else 0
    if failed:
        raise ValueError(
            f"{where}: metrics.request_concurrency has no total, and {failed} of its requests errored or were cut off: "
            "the successful requests' concurrency leaves out those, which held the engine while in flight; give the "
            "report as GuideLLM wrote it (request_concurrency.total beside successful)"
        )
    return _mean(where, metrics, "request_concurrency")


def _guidellm_load(where: str, strategy: dict, metrics: dict) -> tuple[str, str, float]:
    """(label, kind, value) of a GuideLLM benchmark's load (its strategy's type_: src/guidellm/scheduler/strategies.py,
    0.7.3).  A constant or poisson rate with a max_concurrency (which GuideLLM's sweep passes to every rate:
    src/guidellm/benchmark/profiles/sweep.py) is the rate where its requests in flight leave the cap unreached, and a
    closed loop at the cap where they reach it (:func:`_cap_binds`), as vllm bench serve's rate with --max-concurrency
    is read."""
    kind = strategy.get("type_")
    if kind not in ("concurrent", "synchronous", "constant", "poisson", "throughput"):
        raise ValueError(
            f"{where}: strategy type_ {kind!r}; read: synchronous, concurrent, constant, poisson, throughput"
        )
    if kind == "synchronous":
        return "concurrency 1", "concurrency", 1.0
    if kind == "throughput":  # as many requests as the server takes: a closed loop at the concurrency it measured
        value = float(max(1, round(_guidellm_in_flight(where, metrics))))
        return f"concurrency {int(value)}", "concurrency", value
    key = "streams" if kind == "concurrent" else "max_concurrency"
    streams = _number(where, strategy, key, optional=kind != "concurrent")
    if streams is not None and streams != int(streams):
        raise ValueError(f"{where}: config.strategy.{key} must be a whole number of streams, got {strategy[key]!r}")
    if kind != "concurrent":
        rate = _number(where, strategy, "rate")
        if streams is None or not _cap_binds(_guidellm_in_flight(where, metrics), streams):
            return f"rate {rate:g}/s", "rate", rate
    return f"concurrency {int(streams)}", "concurrency", float(int(streams))


def _guidellm_runs(path: str, report: dict, prefer: str = "mean") -> list[BenchRun]:
    version = (report.get("metadata") or {}).get("version") if isinstance(report.get("metadata"), dict) else None
    if version not in (1, 2):
        raise ValueError(
            f"{path}: GuideLLM report schema version {version!r}; read: 1 (GuideLLM 0.5 and 0.6), 2 (0.7 and later)"
        )
    benchmarks = report.get("benchmarks")
    if not isinstance(benchmarks, list) or not benchmarks:
        raise ValueError(f"{path}: a GuideLLM report holds a non-empty list 'benchmarks'")
    runs = []
    dataset = _guidellm_data(path, report)
    for index, bench in enumerate(benchmarks, start=1):
        where = f"{path}#{index}"
        if not isinstance(bench, dict) or not isinstance(bench.get("metrics"), dict):
            raise ValueError(f"{where}: a GuideLLM benchmark is an object with 'metrics'")
        strategy = (bench.get("config") or {}).get("strategy") if isinstance(bench.get("config"), dict) else None
        if not isinstance(strategy, dict):
            raise ValueError(f"{where}: config.strategy is missing")
        m = bench["metrics"]
        load, load_kind, value = _guidellm_load(where, strategy, m)
        if "inter_token_latency_ms" not in m:
            raise ValueError(
                f"{where}: metrics.inter_token_latency_ms is missing: GuideLLM's time_per_output_token_ms holds the "
                "first token and its wait (src/guidellm/schemas/request_stats.py), so a run's time per token after the "
                "first is its inter_token_latency_ms, which every GuideLLM 0.6 and 0.7 report holds"
            )
        tpot_ms, statistic = _latency_of(where, m, "inter_token_latency_ms", prefer)
        tpot_s = tpot_ms / 1e3
        latency, latency_stat = _latency_of(where, m, "request_latency", prefer)
        concurrency = _mean(where, m, "request_concurrency")
        output = _mean(where, m, "output_token_count")
        prompt = _mean(where, m, "prompt_token_count")
        totals = m.get("request_totals")
        completed = totals.get("successful") if isinstance(totals, dict) else None
        if isinstance(completed, bool) or not isinstance(completed, int) or completed < 1:
            raise ValueError(f"{where}: metrics.request_totals.successful must be a positive count, got {completed!r}")
        failed = _guidellm_failed(where, totals)
        total = totals.get("total", completed + failed)
        if isinstance(total, bool) or total != completed + failed:
            # GuideLLM writes total = successful + incomplete + errored (GenerativeMetrics.compile,
            # src/guidellm/benchmark/schemas/metrics.py, 0.7.3 L876-881): a total that is not is of another report
            raise ValueError(
                f"{where}: metrics.request_totals.total {total!r} is not successful + incomplete + errored "
                f"({completed} + {failed}): these counts are not of one run"
            )
        if tpot_s <= 0 or latency <= 0:
            raise ValueError(f"{where}: inter_token_latency_ms and request_latency must be positive")
        if output < 2:
            raise ValueError(f"{where}: a mean of {output:g} output tokens per request leaves no decode steps to time")
        backend = (bench.get("config") or {}).get("backend")
        model = backend.get("model") if isinstance(backend, dict) and isinstance(backend.get("model"), str) else None
        if concurrency <= 0:
            raise ValueError(
                f"{where}: metrics.request_concurrency.successful.mean must be positive, got {concurrency:g}"
            )
        streams, in_flight = _concurrency(load), _guidellm_in_flight(where, m)
        if streams is not None and max(concurrency, in_flight) > LITTLE_SLACK * streams:
            raise ValueError(
                f"{where}: a mean of {max(concurrency, in_flight):g} requests in flight at {streams} stream(s) is more "
                "than the load lets in: these fields are not of one run"
            )
        batch = max(1.0, concurrency * tpot_s * (output - 1) / latency)
        try:
            ttft_ms, ttft_stat = _latency_of(where, m, "time_to_first_token_ms", prefer)
            ttft_s = ttft_ms / 1e3
        except ValueError:
            ttft_s, ttft_stat = None, None
        _check_first_token(where, ttft_s, tpot_s, ("time_to_first_token_ms", "inter_token_latency_ms"))
        _check_decode_span(
            where,
            tpot_s,
            ttft_s,
            latency,
            output,
            ("inter_token_latency_ms", "time_to_first_token_ms", "request_latency (ms)"),
            (statistic, ttft_stat, latency_stat),
        )
        runs.append(
            BenchRun(
                str(Path(path)),
                index,
                "guidellm",
                model,
                load,
                completed,
                tpot_s,
                batch,
                prompt,
                output,
                None,
                concurrency / latency,
                streams,
                None,
                load_kind,
                value,
                ttft_s,
                None,
                latency,
                None,
                concurrency / latency * output,
                statistic,
                failed=failed,
                dataset=dataset,
                arrivals="constant intervals (GuideLLM's constant strategy)"
                if load_kind == "rate" and strategy.get("type_") == "constant"
                else None,
            )
        )
    return runs


def _records(path: str) -> list:
    """The file's JSON (``path``: as the user gave it, which messages name): one document, or JSON lines (vLLM's
    --append-result, SGLang's --output-file)."""
    from specsim.core.files import read_text

    size = Path(path).stat().st_size
    if size > MAX_JSON_BYTES:
        raise ValueError(f"benchmark file {str(path)!r} is {size:,} bytes; the limit is {MAX_JSON_BYTES:,}")
    text = read_text(Path(path), "benchmark file")
    if not text.strip():
        raise ValueError(f"{path}: the file is empty; a benchmark file holds one run's JSON, or one per line")
    try:
        return [loads_json(text, path, allow_infinity=True)]
    except ValueError as err:
        if "Extra data" not in str(err):
            raise
    records = []
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.removeprefix("\ufeff")  # files saved with a byte-order mark each, then joined by cat
        if line.strip():
            if len(records) >= MAX_RUNS_PER_FILE:
                raise ValueError(f"{path}: more than {MAX_RUNS_PER_FILE} runs in one file")
            records.append(loads_json(line, f"{path}, line {number}", allow_infinity=True))
    return records


def _tool_of(path: str, record: dict) -> str:
    if "benchmarks" in record and "metadata" in record:
        return "guidellm"
    if "benchmarks" in record and set(record) <= {"args", "benchmarks"}:
        # GuideLLM writes metadata.version from 0.5.0; 0.4's report is args and benchmarks alone
        # (src/guidellm/benchmark/schemas/generative/report.py at v0.4.0 and v0.5.0)
        raise ValueError(
            f"{path}: a GuideLLM report with no metadata.version, as GuideLLM 0.4 and older wrote; read: schema "
            "version 1 (GuideLLM 0.5 and 0.6), 2 (0.7 and later)"
        )
    for engine in _CLIENTS:
        if engine.bench_files.recognises(record):
            return engine.name
    raise ValueError(f"{path}: not a benchmark file specsim reads; read: " + "; ".join(TOOLS.values()))


def read_bench_file(path: str | Path, prefer: str = "mean") -> list[BenchRun]:
    """Every run of one benchmark file, its tool detected from its keys; refused with one line if it is none of them,
    the line naming the file as ``path`` gives it (its base name alone did not tell two files of one name in two
    folders apart: vllm bench serve names a file by its load).  ``prefer``: the statistic of the latencies read
    where a record holds both ("mean" or "median"; the other where it holds one)."""
    if prefer not in ("mean", "median"):
        raise ValueError(f"prefer must be 'mean' or 'median', got {prefer!r}")
    given = os.fspath(path)
    p = Path(given)
    if not p.is_file():
        from specsim.core.limits import not_a_file

        why = not_a_file(p)
        if p.is_dir():  # what to give instead: a folder of runs is read as its files, one a run (it named none)
            why += f" (give the benchmark files in it, {os.path.join(given, '*.json')}: each run's result)"
        raise ValueError(f"benchmark file {given!r} {why}")
    records = _records(given)
    if not records:
        raise ValueError(f"{given}: no benchmark runs in the file")
    runs: list[BenchRun] = []
    for index, record in enumerate(records, start=1):
        if not isinstance(record, dict):
            kind = {list: "an array", str: "a string", bool: "true or false", type(None): "null"}.get(
                type(record), "a number"
            )
            where = f"{given}#{index}" if len(records) > 1 else given  # the file's one document: no record to point at
            raise ValueError(f"{where}: a benchmark result is a JSON object ({{...}}), got {kind}")
        tool = _tool_of(given, record)
        if tool == "guidellm":
            runs += _guidellm_runs(given, record, prefer)
        else:
            runs.append(_serve_run(given, index, record, tool, prefer))
    if len(runs) > MAX_RUNS_PER_FILE:
        raise ValueError(f"{given}: more than {MAX_RUNS_PER_FILE} runs in one file")
    return runs


def _labels(paths: list) -> list:
    """Each path's :attr:`BenchRun.label`: None where its base name is its own, else the shortest tail of its path that no
    other path given with that base name shares (vllm bench serve names a file by its load, so two sweeps kept in two
    folders share their names: ``plain/rate-1.0.json``, ``spec/rate-1.0.json``)."""
    parts = [Path(p).absolute().parts for p in paths]
    out = []
    for mine in parts:
        alike = [other for other in parts if other[-1] == mine[-1] and other != mine]
        k = next((k for k in range(2, len(mine) + 1) if all(o[-k:] != mine[-k:] for o in alike)), len(mine))
        out.append("/".join(mine[-k:]) if alike else None)
    return out


def read_alike(paths: list) -> tuple[list[list[BenchRun]], str | None]:
    """(each file's runs, in the order of ``paths``, a note or None): every run read by one statistic.  The mean where
    every record holds one; else the median (a source that keeps medians for every row and means for some, as
    InferenceX's dashboard does): a plain run's median TPOT over a speculative run's mean is not a speedup (the
    InferenceX sources' speculative means sat from 9% under to 1% over their medians), and a fit to both reads two
    statistics as one.  Each file is read once, and again only where the medians are taken."""
    labels = _labels(paths)

    def read(prefer: str) -> list[list[BenchRun]]:
        return [
            [r if label is None else replace(r, label=label) for r in read_bench_file(path, prefer)]
            for path, label in zip(paths, labels)
        ]

    runs = read("mean")
    flat = [r for file_runs in runs for r in file_runs]
    medians = [r for r in flat if r.statistic == "median"]
    if not medians or len(medians) == len(flat):
        return runs, None
    runs = read("median")
    means = [r for file_runs in runs for r in file_runs if r.statistic == "mean"]
    others = f" and {len(means) - 1} other(s)" if len(means) > 1 else ""
    return runs, (
        f"latencies read by their medians: {medians[0].where} records no mean, and a mean against a median is not "
        "the same statistic"
        + (f" ({means[0].where}{others} record(s) no median: read by their means)" if means else "")
    )


def common_statistic(paths: list) -> tuple[str, str | None]:
    """("mean" or "median", a note or None): the statistic :func:`read_alike` reads these files' runs by."""
    runs, note = read_alike(paths)
    return ("median" if note else "mean"), note
