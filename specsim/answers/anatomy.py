"""explain as a library result: where a speculative round's time goes against batch, next to a plain decode step; and at
a load, each load's round at the decode batch it implies, with the others' prompts that ride in its iterations."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from specsim.answers import checked_capacity
from specsim.answers.context import LOAD_CONTEXT, context_basis
from specsim.answers.frames import Framed
from specsim.answers.verdict import VERDICTS, judged_at, line_said, model_error, on_the_line, verdict
from specsim.core.defaults import ARTICLE_CONTEXT_TOKENS, DEFAULT_BATCHES, DEFAULT_GAMMA_MAX
from specsim.core.limits import MAX_BATCH, MAX_CONTEXT, MAX_GAMMA, check_int, is_real
from specsim.speculation.acceptance import acceptance_rates
from specsim.speculation.deployment import Deployment
from specsim.speculation.search import checked_deployment, optimal_gamma

__all__ = ["RoundAnatomy", "load_anatomy", "round_anatomy"]


@dataclass(frozen=True)
class RoundAnatomy(Framed):
    """specsim explain: per batch size, a round's parts next to a plain decode step, and what they imply; a notebook
    shows it as a table (``_repr_html_``, :meth:`~specsim.answers.frames.Framed.to_frame`: a round's parts as
    ``parts_s.<part>`` columns, the sources in ``attrs``)."""

    deployment: Deployment
    acceptance: str
    context: int
    rows: list
    #: Part names in the order a round adds them (:meth:`specsim.speculation.deployment.RoundTime.parts`).
    parts: list

    def __repr__(self) -> str:  # a notebook's echo: each batch's round, not every field (rows holds the rest)
        shown = ", ".join(
            f"batch {r['batch']:g}: gamma {r['gamma']} round {r['t_round_s'] * 1e3:.3f} ms {r['speedup']:.3f}x"
            for r in self.rows[:6]
        )
        more = f", ... ({len(self.rows)} batches)" if len(self.rows) > 6 else ""
        return (
            f"RoundAnatomy({self.deployment!r}, {self.acceptance.split(' (')[0]}, context {self.context:g}; "
            f"{shown}{more})"
        )

    @property
    def model_error(self):
        """The error its verdicts are judged against (:func:`specsim.answers.verdict.model_error`)."""
        return model_error(self.deployment)

    def frame_records(self) -> list[dict]:
        """The records its table shows: its :attr:`rows`, as ``explain --json`` prints them less the findings."""
        return self.rows

    def records(self) -> list[dict]:
        """What ``specsim explain --json`` prints: each of its :attr:`rows` with the conclusions over all the batches
        (:meth:`findings`, the text's bullets), as compare's records carry them."""
        findings = self.findings()
        return [row | {"findings": findings} for row in self.rows]

    @property
    def stops_paying(self) -> int | None:
        """The first batch size where the round costs more than plain decoding of the tokens it yields."""
        return next((r["batch"] for r in self.rows if r["speedup"] <= 1.0), None)

    def findings(self) -> list[str]:
        """What the breakdown says, in sentences computed from it."""
        first, last = self.rows[0], self.rows[-1]
        out = []
        for r in [first] if first is last else [first, last]:
            host = r["parts_s"]["engine host time"] + r["hidden_host_s"]
            share = r["parts_s"]["engine host time"] / r["t_round_s"]
            hidden = (
                f", {r['hidden_host_s'] * 1e3:.2f} ms of it hidden behind the passes"
                if r["hidden_host_s"] > 1e-9 * r["t_round_s"]
                else ""
            )
            out.append(
                f"batch {r['batch']}: the round costs {r['round_over_decode']:.2f} decode steps and yields "
                f"{r['tokens_per_round']:.2f} tokens; engine host work {host * 1e3:.2f} ms per round{hidden}; "
                f"the round waits {share:.0%} of its time on it"
            )
        stop = self.stops_paying
        out.append(
            f"speculation stops paying at batch {stop}: from there a round costs more decode steps than it yields tokens"
            if stop is not None
            else f"speculation pays at every batch shown (up to {last['batch']})"
        )
        close = [r for r in self.rows if r["verdict"] == VERDICTS[2]]
        if close:
            e = model_error(self.deployment)
            speedups = ", ".join(f"{r['speedup']:.3f}x" for r in close)
            out.append(
                f"at batch {', '.join(str(r['batch']) for r in close)} the speedup "
                f"({speedups}) is inside specsim's measured error of "
                f"{e.shown} ({e.short}): too close to call; measure both arms (specsim bench-plan)"
            )
        line = [r for r in self.rows if r.get("on_the_line")]
        if line:
            speedups = ", ".join(f"{r['speedup']:.3f}x" for r in line)
            out.append(
                f"at batch {', '.join(str(r['batch']) for r in line)} the speedup ({speedups}) is "
                f"{line_said(model_error(self.deployment))}: its verdict could as well be the other"
            )
        grow = {
            p: last["parts_s"][p] / last["t_target_s"] - first["parts_s"][p] / first["t_target_s"] for p in self.parts
        }
        part = max(grow, key=grow.get)
        if grow[part] > 0:
            out.append(
                f"from batch {first['batch']} to {last['batch']} the {part} grows most: +{grow[part]:.2f} decode steps per round"
            )
        return out


def round_anatomy(
    dep: Deployment,
    acceptance: object,
    label: str | None = None,
    batches: list = DEFAULT_BATCHES,
    context: int = ARTICLE_CONTEXT_TOKENS,
    gamma: int | None = None,
    gamma_max: int = DEFAULT_GAMMA_MAX,
    *,
    cap=None,
) -> RoundAnatomy:
    """A round's parts per batch size at ``gamma`` (default: the best gamma per batch, at least 1, so that a batch where
    speculation does not pay still shows the round it would run), with the plain decode step it replaces.

    ``dep`` the :class:`~specsim.speculation.deployment.Deployment`; ``acceptance`` an alpha or an
    :class:`~specsim.speculation.acceptance.Acceptance`, ``label`` what the rows call it (None:
    :func:`specsim.answers.acceptance.acceptance_label`); ``batches`` decode batch sizes in sequences (a load's mean
    decode batch may be a fraction); ``context`` cached tokens per sequence; ``gamma_max`` the largest gamma searched
    where ``gamma`` is None.  Each left out is what ``specsim explain`` takes without its flag
    (:mod:`specsim.core.defaults`).  Times are in seconds (``t_round_s``, ``parts_s``).

    ``cap`` the memory the deployment is checked against (:func:`specsim.answers.checked_capacity`; None: the engine's
    own at ``context``).  A target whose weights do not fit, a context past the target's or the draft's
    ``max_position_embeddings``, or one where the target's last positions leave no room for ``gamma`` drafts (one,
    where ``gamma`` is None: the round it shows) is refused, as ``specsim explain`` refuses it
    (:meth:`~specsim.speculation.deployment.Deployment.require_drafts_within_positions`).

    >>> dep = Deployment.build("h100-sxm", "llama-3.1-8b", "llama-3.2-1b", timing="roofline", engine="none")
    >>> [(r["batch"], r["gamma"], round(r["speedup"], 3)) for r in round_anatomy(dep, 0.8, "alpha 0.8", [1, 64], 1128).rows]
    [(1, 4, 1.739), (64, 3, 1.717)]
    """
    dep = checked_deployment(dep)  # a name or a profile is refused by the keyword's name
    return _rounds(dep, acceptance, label, batches, context, gamma, gamma_max, within_positions=True, cap=cap)


def _rounds(
    dep: Deployment,
    acceptance: object,
    label: str,
    batches: list,
    context: float,
    gamma: int | None,
    gamma_max: int,
    within_positions: bool,
    cap=None,
) -> RoundAnatomy:
    """:func:`round_anatomy`'s rows; ``within_positions``: refuse a deployment or a context where its rounds cannot run
    (a load's are at its mean context, its requests and memory already checked by the load's answer)."""
    from specsim.answers.acceptance import acceptance_label, checked_label

    # a row shows it as the acceptance it was computed at
    label = acceptance_label(acceptance) if label is None else checked_label(acceptance, label)
    dep = judged_at(dep, acceptance, label)  # a calibration's error is of its runs' own acceptance, not another's
    rates = acceptance_rates(acceptance)
    b = np.atleast_1d(np.asarray(batches, dtype=float))  # a load's mean decode batch is a fraction (load_anatomy)
    if b.ndim != 1 or b.size == 0 or not np.all(np.isfinite(b) & (b >= 1) & (b <= MAX_BATCH)):
        raise ValueError(f"batches must be a non-empty list of batch sizes in [1, {MAX_BATCH:,}], got {batches!r:.60}")
    if not (is_real(context) and 0 <= context <= MAX_CONTEXT):
        raise ValueError(f"context must be a number of tokens in [0, {MAX_CONTEXT:,}], got {context!r:.60}")
    if gamma is not None:
        gamma = check_int("gamma", gamma, 1, MAX_GAMMA)
    if within_positions:  # such rounds were answered from the library (a 70B on one H100 3.8x), as if they ran
        checked_capacity(dep, context, cap)
        dep.require_drafts_within_positions(context, 1 if gamma is None else gamma)
    if gamma is None:
        gammas = np.maximum(optimal_gamma(dep, acceptance, b, context, gamma_max).gamma, 1)
    else:
        gammas = np.full(b.shape, int(gamma))
    rows, names, error = [], [], model_error(dep)
    for batch, g in zip(batches, gammas):
        out = dep.outcome(acceptance, int(g), batch, context)
        r = out.round
        parts = {name: float(v) for name, v in out.parts().items()}
        names += [n for n in parts if n not in names]
        decode = float(out.decode.total_s)
        tokens = float(out.tokens)
        total = float(r.total_s)
        rows.append(
            {
                "batch": batch,
                "gamma": int(g),
                "tokens_per_round": tokens,
                "t_target_s": decode,
                "t_round_s": total,
                "parts_s": parts,
                "hidden_host_s": float(r.hidden_host_s),
                "overlapped": bool(r.overlapped),
                "hidden_share": float(r.overlapped),
                "round_over_decode": total / decode,
                "speedup": float(out.speedup),
                "verdict": verdict(float(out.speedup) - 1.0, error, float(out.speedup) > 1.0),
                "on_the_line": on_the_line(float(out.speedup) - 1.0, error),
                "model_error": error.record(),
                "context_tokens": int(context),
                "context_basis": context_basis(context),
                "acceptance": label,
                "acceptance_rates": rates,
                "provenance": dep.provenance(),
                "deployment": dep.identity(),
            }
        )
    for row in rows:  # every row names every part (0 where a batch's round has none of it)
        row["parts_s"] = {n: row["parts_s"].get(n, 0.0) for n in names}
    return RoundAnatomy(dep, label, context, rows, names)


def load_anatomy(dep: Deployment, acceptance: object, label: str, answer, context: int) -> list[dict]:
    """explain at a load: for each row of ``answer`` (a :func:`specsim.answers.load.load_answer`), the round it runs at
    its gamma at the decode batch the load implies and ``context`` tokens, with the time the others' prompts take beside
    it in each iteration (``prompts_beside_s``, the iteration's ITL less the round), the plain iteration and the load's
    speedup.  A load where speculation does not pay shows the round of the speculating gamma its recommendation weighs
    (:meth:`~specsim.answers.load.LoadAnswer.best_speculating`, gamma 1 where none has room) with what that load would
    give speculating so (``speculates`` False): its batch, iteration and speedup, not the plain ones beside a round.
    ``dep``, ``acceptance`` and ``label`` are the answer's (:func:`round_anatomy`'s); times are in seconds.

    >>> from specsim.answers.load import load_answer
    >>> dep = Deployment.build("h100-sxm", "llama-3.1-8b", "llama-3.2-1b", timing="roofline", engine="none")
    >>> at = load_answer(dep, 0.8, "alpha 0.8", "concurrency", [1, 64], 1000, 256)
    >>> [(r["load"], r["gamma"], round(r["prompts_beside_s"] * 1e3, 1)) for r in load_anatomy(dep, 0.8, "alpha 0.8", at, 1128)]
    [('concurrency 1', 4, 0.0), ('concurrency 64', 3, 14.8)]
    """
    dep = checked_deployment(dep)  # a name or a profile is refused by the keyword's name
    rows = []
    for j, r in enumerate(answer.rows):
        spec, speedup, g = r["spec"], r["speedup_tpot"], r["gamma"]
        if g == 0:
            would = answer.best_speculating(j)
            g = 1 if would is None else would[0]
            if would is not None:
                spec, speedup = would[1], would[2]
        a = _rounds(
            dep, acceptance, label, [max(spec["batch_a_request_sees"], 1.0)], context, g, DEFAULT_GAMMA_MAX, False
        ).rows[0]
        a["speedup_without_prompts"] = a.pop("speedup")  # the round's at that batch, no prompts beside it
        rows.append(
            a
            | {
                "load": r["load"],
                "context_basis": LOAD_CONTEXT,
                "speculates": r["gamma"] > 0,
                "prompts_beside_s": spec["itl_s"] - a["t_round_s"],
                "iteration_s": spec["itl_s"],
                "plain_iteration_s": r["plain"]["itl_s"],
                "speedup_tpot": r["speedup_tpot"],  # the load's, as optimal-gamma at a load gives it
                # the speedup of the gamma this row breaks down (the load's where it speculates; what speculating so
                # would give where it does not: the text's starred row)
                "speedup_at_gamma": speedup,
                "verdict": r["verdict"],  # the load's (by what its gamma is picked on), not the bare round's
                "on_the_line": r["on_the_line"],
                "at_load": {k: r[k] for k in ("gamma", "plain", "spec", "recommendation")},
            }
        )
    return rows
