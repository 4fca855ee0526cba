"""compare as a library result: latency and throughput per batch size, and at the largest batch that fits."""

from __future__ import annotations

from dataclasses import dataclass

from specsim.answers import deployment_capacity
from specsim.answers.frames import Framed
from specsim.core.defaults import ARTICLE_CONTEXT_TOKENS, DEFAULT_BATCHES, DEFAULT_GAMMA_MAX
from specsim.core.limits import whole_batches
from specsim.core.names import given_as
from specsim.serving.capacity import Capacity, throughput_table
from specsim.speculation.deployment import Deployment
from specsim.speculation.search import checked_deployment

__all__ = ["CompareAnswer", "compare_answer"]


@dataclass(frozen=True)
class CompareAnswer(Framed):
    """compare: latency and throughput per batch size (:attr:`frame`), and at the largest batch that fits."""

    frame: object  # pandas DataFrame, one row per batch (see capacity.throughput_table)
    capacity: Capacity
    deployment: Deployment
    acceptance: object
    options: tuple  # (context, gamma, gamma_max, max_context, memory_utilization)
    #: The engine's limits (:class:`specsim.serving.steady.EngineLimits`): its max_num_seqs, speculating and plain, caps
    #: the largest batch as memory does (SGLang's speculating server runs 48 unless told).
    limits: object = None
    limits_from: str = ""
    #: What the acceptance is called, as every row's ``acceptance`` says it (:func:`compare_answer`'s ``label``).
    label: str = ""

    def __repr__(self) -> str:  # a notebook's echo: the batches compared, not the frame (frame holds it)
        batches = ", ".join(str(int(b)) for b in self.frame["batch"][:8]) if "batch" in self.frame else "?"
        return f"CompareAnswer({self.deployment!r}, batches {batches})"

    def records(self) -> list[dict]:
        """What ``compare --json`` prints, one record per batch: the row of :attr:`frame`, its verdict and the error it
        is judged against, the largest batches (:meth:`largest_record`), the context and where it comes from, the
        acceptance (its label and its rates), and the sources of every number (``provenance``, ``deployment``)."""
        from specsim.answers.context import context_basis
        from specsim.speculation.acceptance import acceptance_rates

        dep, context, error = self.deployment, self.options[0], self.model_error.record()
        shared = {
            "at_largest_batch": self.largest_record(),
            "context_tokens": int(context),
            "context_basis": context_basis(context),
            "acceptance": self.label,
            "acceptance_rates": acceptance_rates(self.acceptance),
            "provenance": dep.provenance(),
            "deployment": dep.identity(),
        }
        rows = self.frame.to_dict(orient="records")
        lines = self.on_the_line()
        return [
            r | {"verdict": said, "on_the_line": line, "model_error": error} | shared
            for r, said, line in zip(rows, self.verdicts(), lines)
        ]

    def largest_batches(self) -> tuple | None:
        """(the largest batch the engine runs with the draft, the largest without it: what fits in memory, at most its
        max_num_seqs), or None where the draft does not fit beside the target."""
        cap = self.capacity
        if not (cap.target_fits and cap.both_fit and cap.max_batch_with_draft > 0):
            return None
        fits = (cap.max_batch_with_draft, max(cap.max_batch_without_draft, 1))
        if self.limits is None:
            return fits
        return tuple(min(b, int(self.limits.seqs(spec))) for b, spec in zip(fits, (True, False)))

    def largest_record(self) -> dict | None:
        """compare --json's ``at_largest_batch``: each arm's largest batch, its tokens/s and what stops it there, and
        where the engine's max_num_seqs comes from; None where the draft does not fit beside the target."""
        peak, batches, by = self.at_largest(), self.largest_batches(), self.limited_by()
        if peak is None:
            return None
        arms = {
            arm: {"batch": int(batches[i]), "tokens_per_s": peak[i], "limited_by": by[i]}
            for i, arm in enumerate(("speculating", "plain"))
        }
        return arms | {"limits_from": self.limits_from}

    def limited_by(self) -> tuple | None:
        """For each of :meth:`largest_batches` ("memory" or "max_num_seqs"): what stops the batch there."""
        batches = self.largest_batches()
        if batches is None:
            return None
        cap = self.capacity
        fits = (cap.max_batch_with_draft, max(cap.max_batch_without_draft, 1))
        return tuple("memory" if b >= f else "max_num_seqs" for b, f in zip(batches, fits))

    def at_largest(self) -> tuple | None:
        """(tokens/s with speculation at its largest batch, tokens/s without the draft at its largest batch), or None
        where the draft does not fit beside the target (:meth:`largest_batches`)."""
        batches = self.largest_batches()
        if batches is None:
            return None
        context, gamma, gamma_max, max_context, util = self.options
        best = throughput_table(
            self.deployment,
            self.acceptance,
            list(batches),
            context,
            gamma,
            gamma_max,
            max_context,
            util,
        )
        return float(best.tokens_per_s_spec.iloc[0]), float(best.tokens_per_s_plain.iloc[1])

    @property
    def model_error(self):
        """The error its verdicts are judged against (:func:`specsim.answers.verdict.model_error`)."""
        from specsim.answers.verdict import model_error

        return model_error(self.deployment)

    def weighed(self) -> list:
        """Per row of :attr:`frame`, the speculating gamma its verdict weighs and that gamma's speedup, as optimal-gamma
        at batches weighs it (:func:`specsim.answers.weighed_at_batch`): with gamma searched, the gamma picked or, where
        plain decoding is, the best speculating one; with gamma fixed, that gamma.  None where none is weighed (gamma
        fixed at 0, or none searched)."""
        context, gamma, gamma_max, _, _ = self.options
        if gamma is not None:
            return [None if gamma == 0 else (gamma, float(s)) for s in self.frame["speedup"]]
        from specsim.answers import weighed_at_batch
        from specsim.speculation.search import optimal_gamma

        best = optimal_gamma(self.deployment, self.acceptance, self.frame["batch"].to_numpy(float), context, gamma_max)
        return [weighed_at_batch(best, i) for i in range(len(self.frame))]

    def on_the_line(self) -> list:
        """Per row of :attr:`frame`: whether the gain :meth:`weighed` is on the line
        (:func:`specsim.answers.verdict.on_the_line`), its verdict as well the other; False where none is weighed."""
        from specsim.answers.verdict import on_the_line

        error = self.model_error
        return [w is not None and on_the_line(w[1] - 1.0, error) for w in self.weighed()]

    def verdicts(self) -> list:
        """Per row of :attr:`frame`: :func:`specsim.answers.verdict.verdict` of the gain :meth:`weighed`, speculating
        where the row's gamma is above 0 and gains (a fixed gamma may lose); None where none is weighed."""
        from specsim.answers.verdict import verdict

        error = self.model_error
        return [
            None if w is None else verdict(w[1] - 1.0, error, bool(g > 0 and w[1] >= 1.0))
            for w, g in zip(self.weighed(), self.frame["gamma"])
        ]


def compare_answer(
    dep: Deployment,
    acceptance: object,
    batches: list = DEFAULT_BATCHES,
    context: int = ARTICLE_CONTEXT_TOKENS,
    gamma: int | None = None,
    gamma_max: int = DEFAULT_GAMMA_MAX,
    max_context: int | None = None,
    memory_utilization: float | None = None,
    max_batched_tokens: int | None = None,
    max_num_seqs: int | None = None,
    limits: object = None,
    limits_from: str = "",
    label: str | None = None,
) -> CompareAnswer:
    """compare: latency and throughput per batch size with and without speculation, and at the largest batch that fits.

    ``dep`` the :class:`~specsim.speculation.deployment.Deployment`; ``acceptance`` an alpha or an
    :class:`~specsim.speculation.acceptance.Acceptance`; ``batches`` decode batch sizes in sequences; ``context`` cached
    tokens per sequence; ``gamma`` draft tokens a round (None: the best per batch, searched up to ``gamma_max``);
    ``max_context`` the tokens each sequence reserves in the memory check (None: ``context``); ``memory_utilization``
    the engine's share of device memory, a fraction (None: the engine's own).  Throughputs are in tokens per second,
    latencies in seconds per token (:func:`specsim.serving.capacity.throughput_table`).
    ``label``: what the acceptance is called in each record (None: :func:`specsim.answers.acceptance.acceptance_label`,
    "alpha 0.8"); ``max_batched_tokens`` and ``max_num_seqs``: the engine's, for its memory (None: its own,
    :func:`specsim.answers.deployment_capacity`); ``limits``: the limits that cap the largest batches
    (:class:`specsim.serving.steady.EngineLimits`, ``limits_from`` saying where they come from), None: those two, each
    not given at the engine's own on the GPU (:func:`specsim.serving.steady.engine_limits`).  Each left out is what
    ``specsim compare`` takes without its flag (:mod:`specsim.core.defaults`).

    >>> dep = Deployment.build("h100-sxm", "llama-3.1-8b", "llama-3.2-1b", timing="roofline", engine="none")
    >>> frame = compare_answer(dep, 0.8, [1, 64]).frame
    >>> frame[["batch", "gamma", "tokens_per_s_plain", "tokens_per_s_spec"]].round(0).values.tolist()
    [[1.0, 4.0, 162.0, 282.0], [64.0, 3.0, 6643.0, 11408.0]]
    """
    dep = checked_deployment(dep)  # a name or a profile is refused by the keyword's name
    from specsim.answers.acceptance import acceptance_label, checked_label
    from specsim.core.limits import MAX_GAMMA, check_int
    from specsim.serving.steady import check_limits, engine_limits

    batches = whole_batches(batches)
    if gamma is not None:
        gamma = check_int("gamma", gamma, 0, MAX_GAMMA)
    if limits is None:
        limits, limits_from = engine_limits(dep.engine, dep.hardware, False, max_num_seqs, max_batched_tokens)
        limits_from = "max_num_seqs given" if max_num_seqs is not None else limits_from.split(";")[0]
    check_limits(dep.engine, limits)  # as the CLI's flags are checked: vLLM refuses a budget below max_num_seqs
    cap = deployment_capacity(dep, context, max_context, memory_utilization, max_batched_tokens, max_num_seqs)
    # a context where the engine runs a decode step
    dep.require_drafts_within_positions(context, 0, given_as("context"))
    frame = throughput_table(dep, acceptance, batches, context, gamma, gamma_max, max_context, memory_utilization)
    options = (context, gamma, gamma_max, max_context, memory_utilization)
    label = acceptance_label(acceptance) if label is None else checked_label(acceptance, label)
    return CompareAnswer(frame, cap, dep, acceptance, options, limits, limits_from, label)
