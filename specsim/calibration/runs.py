"""Benchmark runs as the fit sees them, and the model of one run.

A run (:class:`CalRun`) is a benchmark file's run (:class:`~specsim.calibration.bench_files.BenchRun`: its mean TPOT
``y``, its decode batch ``b`` by Little's law over the decode phase, its mean context ``L``, its mean prompt ``P``, the
rate ``lambda`` at which its requests finished) and what it ran with (:class:`SpecSetup`).  Its model is the
deployment's (:class:`specsim.speculation.deployment.Deployment`, the one home of a pass's and a round's time), with the prefill
work of the other requests that rides in the same iterations:

    plain TPOT        = t_decode(b, L) / (1 - rho)
    speculative TPOT  = t_round(b, L, s) / AL / (1 - rho)          AL: tokens per verification pass
    rho               = lambda' * t_prefill(P)                      the share of the engine's time the others' prompts take

``t_prefill`` is the marginal time of a prompt in an iteration (:meth:`Deployment.prefill_s`): while a request decodes,
the prompts of the requests that arrive meanwhile take that share of every second (chunked prefill mixes them into the
decode iterations; without it they pause them, at the same cost).  ``lambda'`` is the rate at which the others arrive:
the finishing rate ``lambda`` in an open loop, ``lambda (c - 1) / c`` in a closed loop of ``c`` users, whose own
successor comes only after it ends (:attr:`BenchRun.others_rate_per_s`; a lone user's TPOT holds no prefill at all).
Checked against the request-level simulator (:mod:`specsim.serving.simulator`) in ``tests/test_engine_calibrate.py``.

AL comes from the engine's pinned (synthetic) acceptance, from the file, from a saved ``/metrics`` page, or, where none
is recorded, from one acceptance rate per sweep (the runs of one file share their prompts and drafter): AL(alpha, s) =
1 + alpha + ... + alpha^s for a chain of s steps.

Runs that no engine could have produced are refused before any fit (:func:`check_runs`, :func:`check_design`), and
:func:`identifiable` says which terms a set of runs can separate.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from specsim.core.records import record
from specsim.speculation.acceptance import tokens_per_round
from specsim.engines import SpecHost
from specsim.calibration.bench_files import LITTLE_SLACK, BenchRun

__all__ = ["CalRun", "SpecSetup", "check_design", "check_runs", "closed_loop", "identifiable", "load_key", "model_key",
           "tpot_with_prefill"]

#: Bounds of a fitted per-token acceptance rate.
ALPHA_BOUNDS = (0.01, 0.99)
#: Decode batches closer than this ratio cannot tell a per-sequence term (or an efficiency) from a constant.
SPREAD = 1.5
#: A run the model says spent more than this share of its time prefilling is refused: its TPOT is mostly prompts.
MAX_PREFILL_SHARE = 0.9
#: A recorded acceptance length further than this from the pinned one says the pin did not take.
PIN_TOLERANCE = 0.10

@record
class SpecSetup:
    """What a speculative run ran with: draft steps per round, tokens per step, tokens verified per sequence, the
    acceptance length the engine was made to produce (None: real acceptance), and the sweep its acceptance is shared
    with (runs over the same prompts and drafter: by default its file)."""

    steps: int
    topk: int = 1
    verify_tokens: int | None = None
    pinned_accept_length: float | None = None
    sweep: str | None = None

    @property
    def verify(self) -> int:
        return self.steps + 1 if self.verify_tokens is None else self.verify_tokens

    @property
    def max_accept_length(self) -> int:
        """The most tokens one verification can yield: every draft step's token accepted, plus the target's own."""
        return self.steps + 1


@record
class CalRun:
    """A benchmark run and what it ran: ``setup`` None for a plain run."""

    run: BenchRun
    setup: SpecSetup | None = None

    @property
    def kind(self) -> str:
        return "plain" if self.setup is None else "spec"

    @property
    def sweep(self) -> str:
        return (self.setup.sweep if self.setup is not None and self.setup.sweep else None) or self.run.path


def load_key(load: str) -> tuple:
    """Sort key of a load label: concurrencies by number, then rates by number, an unlimited rate last."""
    kind, _, value = load.partition(" ")
    number = value.rstrip("/s")
    try:
        x = float("inf") if number == "inf" else float(number)
    except ValueError:
        x = float("inf")
    return (0 if kind == "concurrency" else 1, x, load)


def tpot_with_prefill(step_s: object, rate_per_s: object, prefill_s: object) -> np.ndarray:
    """A run's TPOT: its decode step (or round per accepted token) over the share of time the prompts of the requests
    arriving meanwhile leave, 1 - rate * t_prefill(P).

    >>> round(float(tpot_with_prefill(0.010, 10.0, 0.020)), 6)
    0.0125
    """
    return np.asarray(step_s, dtype=float) / (1.0 - np.asarray(rate_per_s, dtype=float) * np.asarray(prefill_s, dtype=float))


def closed_loop(dep, concurrency: int, prompt_tokens: float, output_tokens: float, requests: int, steps: int | None = None,
                accept_length: float | None = None) -> float:
    """Seconds a closed loop of ``concurrency`` users takes for ``requests`` requests of ``prompt_tokens`` in and
    ``output_tokens`` out, as the run model above predicts it (speculative with ``steps`` draft steps and
    ``accept_length`` tokens per verification, default the drafter's published acceptance): each request takes its
    prefill plus (output - 1) TPOTs, the users keep ``concurrency`` of them in flight, and the TPOT carries the prefill
    share of the requests that arrive meanwhile (solved by fixed-point iteration)."""
    from specsim.speculation.acceptance import tokens_per_round

    L = float(prompt_tokens) + float(output_tokens) / 2
    b = float(concurrency)
    if steps is None:
        step = float(dep.decode(b, L).total_s)
    else:
        al = accept_length
        if al is None:
            acc, _ = dep.drafter.default_acceptance()
            al = float(tokens_per_round(acc, steps))
        step = float(dep.round_time(b, L, steps).total_s) / al
    prefill = float(dep.prefill_s(prompt_tokens))
    rate = 0.0
    others = (b - 1) / b  # the other users' share of the arrivals (see the module's docstring)
    for _ in range(50):
        tpot = float(tpot_with_prefill(step, min(rate * others, 0.9 / prefill) if prefill else 0.0, prefill))
        rate = b / (prefill + step + tpot * (float(output_tokens) - 1))
    return requests / rate


# -- what no engine could have measured ---------------------------------------------------------------------------
def check_runs(dep, runs: list[CalRun]) -> None:
    """Refuse runs that break a physical limit, one line naming the run, the field and the limit: acceptance past
    what the draft steps allow or off its pin, more sequences decoding than the load lets in (Little's law), a context
    past the model's positions, weights that do not fit the GPUs, a TPOT faster than reading the weights at the
    datasheet bandwidth, and a run spent nearly all in prefill."""
    from specsim.serving.capacity import capacity

    target = dep.target
    limit = target.max_position_embeddings
    cap = capacity(dep, 1)
    if not cap.target_fits:
        raise ValueError(f"{target.name} ({target.weight_bytes / 1e9:.1f} GB of weights per GPU at TP {target.tp}) does not fit in "
                         f"{dep.hardware.name}'s {dep.hardware.memory_bytes / 1e9:.0f} GB: no run could have served it; check "
                         "--hardware and --tp")
    if dep.drafter is not None and not cap.both_fit:
        raise ValueError(f"{target.name} with {dep.drafter.name} does not fit in {dep.hardware.name}'s "
                         f"{dep.hardware.memory_bytes / 1e9:.0f} GB: no speculative run could have served them")
    # The fastest a pass can be: its weights read once at the datasheet bandwidth (each GPU its shard).
    floor_s = target.weight_bytes / dep.hardware.peak_bytes_per_s
    for c in runs:
        r = c.run
        if limit and r.context > limit:
            raise ValueError(f"{r.where}: a mean context of {r.context:,.0f} tokens (prompt plus half the output) is past "
                             f"{target.name}'s max_position_embeddings ({limit:,}): these runs are not of this model")
        if r.concurrency is not None and r.decode_batch > LITTLE_SLACK * r.concurrency:
            raise ValueError(f"{r.where}: duration, TPOT and output tokens give {r.decode_batch:.1f} sequences decoding at once "
                             f"(Little's law) at {r.load}: more than the load lets in, so these fields are not of one run")
        most = 1.0 if c.setup is None else float(c.setup.max_accept_length)
        if r.tpot_s * most < 0.5 * floor_s:
            raise ValueError(f"{r.where}: a TPOT of {r.tpot_s * 1e3:.3g} ms is less than half the {floor_s * 1e3:.3g} ms "
                             f"{dep.hardware.name} needs to read {target.name}'s weights once at its datasheet bandwidth"
                             + ("" if c.setup is None else f", per {most:g} tokens") + ": check --hardware, --target and --tp")
        if c.setup is None:
            continue
        al, setup = r.accept_length, c.setup
        for value, what in ((al, "an acceptance length"), (setup.pinned_accept_length, "a pinned acceptance length")):
            if value is not None and not 1.0 <= value <= setup.max_accept_length + 1e-9:
                raise ValueError(f"{r.where}: {what} of {value:g} tokens per verification is outside [1, "
                                 f"{setup.max_accept_length}]: {setup.steps} draft steps accept at most {setup.steps} "
                                 "tokens plus the target's own")
        if al is not None and setup.pinned_accept_length is not None and abs(al / setup.pinned_accept_length - 1) > PIN_TOLERANCE:
            raise ValueError(f"{r.where}: the file records an acceptance length of {al:.2f} but the run was pinned at "
                             f"{setup.pinned_accept_length:.2f}: the engine did not apply the pinned acceptance")


def identifiable(runs: list[CalRun], fit_scale: bool, overlapped: bool = False) -> dict[str, str]:
    """Which terms the design of ``runs`` can separate: name -> "" where it can be fitted, else why it cannot."""
    plain = [c.run.decode_batch for c in runs if c.kind == "plain"]
    spec = [c for c in runs if c.kind == "spec"]
    out = {"iteration_s": "" if plain else "no plain runs"}
    contexts = [c.run.context for c in runs if c.kind == "plain"]

    def spread(values) -> bool:
        return len(values) > 1 and max(values) / min(values) >= SPREAD

    if not fit_scale:
        out["scale"] = "the step-time source is bare GPU time (no efficiency to fit)"
    else:
        out["scale"] = "" if spread(plain) else "the plain runs' decode batches are less than 1.5x apart"
    if not spread(plain):
        out["iteration_seq_s"] = "the plain runs' decode batches are less than 1.5x apart"
    elif fit_scale and not spread(contexts):
        out["iteration_seq_s"] = ("the plain runs are at one prompt length: a time per sequence cannot be told from the "
                                  "KV-cache reads")
    else:
        out["iteration_seq_s"] = ""
    if not spec:
        return out
    steps = sorted({c.setup.steps for c in spec})
    ngram = False
    batches = [c.run.decode_batch for c in spec]
    out["round_s"] = ""
    two_steps = len(steps) > 1
    out["step_s"] = "" if two_steps else f"the speculative runs are at one number of draft steps ({steps[0]})"
    out["seq_s"] = "" if spread(batches) else "the speculative runs' decode batches are less than 1.5x apart"
    by_steps = [[c.run.decode_batch for c in spec if c.setup.steps == s] for s in steps]
    if not two_steps:
        out["seq_step_s"] = out["step_s"]
    elif sum(spread(b) for b in by_steps) < 2:
        out["seq_step_s"] = "fewer than two step counts have runs at decode batches at least 1.5x apart"
    else:
        out["seq_step_s"] = ""
    del ngram
    return out


def check_design(dep, runs: list[CalRun]) -> None:
    """Refuse what cannot be fitted together: no plain runs, runs at one load only, a speculative run without a plain
    run at its load, plain runs that report speculation, runs of different models or engines, a speculative run without
    a drafter, a tree without its acceptance."""
    plain = [c for c in runs if c.kind == "plain"]
    spec = [c for c in runs if c.kind == "spec"]
    if not plain:
        raise ValueError("no plain runs: the fit needs a benchmark without speculation at each load (--plain FILE)")
    loads = {c.run.load for c in plain}
    if len({c.run.load for c in runs}) < 2:
        raise ValueError(f"every run is at one load ({runs[0].run.load}): nothing tells a per-iteration time from the rest "
                         "and nothing can be held out; benchmark at two or more concurrencies")
    for c in plain:
        if c.run.accept_length is not None and c.run.accept_length > 1:
            raise ValueError(f"{c.run.where}: given as a plain run but it reports an acceptance length of "
                             f"{c.run.accept_length:.2f}: the server ran speculation")
    for c in spec:
        if c.run.load not in loads:
            raise ValueError(f"{c.run.where}: speculative run at {c.run.load} has no plain run at the same load; plain runs "
                             "are at " + ", ".join(sorted(loads, key=load_key)))
        if c.setup.topk > 1 and c.run.accept_length is None and c.setup.pinned_accept_length is None:
            raise ValueError(f"{c.run.where}: a token tree (top-k {c.setup.topk}) without a recorded acceptance length: "
                             "pass --metrics with the server's /metrics page saved after the run")
    if spec and dep.drafter is None:
        raise ValueError("speculative runs need a drafter: pass --draft")
    models = {model_key(c.run.model) for c in runs if c.run.model}
    if len(models) > 1:
        names = sorted({c.run.model for c in runs if c.run.model})
        raise ValueError("the runs name different models: " + ", ".join(names) + "; fit one deployment at a time")
    servers = {c.run.server for c in runs if c.run.server}
    if len(servers) > 1:
        raise ValueError("the runs were served by different engines (" + ", ".join(sorted(servers)) + "); fit one engine at a time")
    if dep.engine.name == "none":
        raise ValueError("--engine none adds no engine time: name the engine and version that served the runs "
                         "(vllm, sglang or trtllm, e.g. vllm@0.10)")


def model_key(name: str) -> str:
    """One spelling of a model name: a Hugging Face ID or a local folder's last part, case folded, 'Meta-' dropped
    (meta-llama/Meta-Llama-3.1-8B-Instruct and meta-llama/Llama-3.1-8B-Instruct are one model)."""
    last = name.rstrip("/").split("/")[-1].lower()
    return last[len("meta-"):] if last.startswith("meta-") else last


# -- the model of the runs ------------------------------------------------------------------------------------------
class _Runs:
    """The runs as arrays, and their predictions for one set of values, through the deployment."""

    def __init__(self, dep, runs: list[CalRun]):
        self.dep = dep
        self.runs = runs
        self.kinds = np.array([c.kind for c in runs])
        self.batch = np.array([c.run.decode_batch for c in runs])
        self.context = np.array([c.run.context for c in runs])
        self.prompt = np.array([c.run.prompt_tokens for c in runs])
        self.rate = np.array([c.run.others_rate_per_s for c in runs])
        self.tpot = np.array([c.run.tpot_s for c in runs])
        self.steps = np.array([c.setup.steps if c.setup else 0 for c in runs], dtype=float)
        self.topk = np.array([c.setup.topk if c.setup else 1 for c in runs], dtype=float)
        self.verify = np.array([c.setup.verify if c.setup else 1 for c in runs], dtype=float)
        known = []
        for c in runs:
            if c.setup is None:
                known.append(1.0)
            elif c.setup.pinned_accept_length is not None:
                known.append(c.setup.pinned_accept_length)
            else:
                known.append(np.nan if c.run.accept_length is None else c.run.accept_length)
        self.known_al = np.array(known)
        self.sweeps = list(dict.fromkeys(c.sweep for c, k in zip(runs, self.known_al) if np.isnan(k)))
        self.sweep_index = np.array([self.sweeps.index(c.sweep) if np.isnan(k) else -1 for c, k in zip(runs, self.known_al)])
        self.fit_scale = _scales(dep.source)
        self.dep = _memoised(dep)
        self._plain_cache: dict[float, tuple[np.ndarray, np.ndarray]] = {}

    # The deployment for a scale and per-iteration time, with no host terms: the passes of every run.
    def deployment(self, scale: float, iteration: float | tuple, host: SpecHost | tuple | None = None):
        """The deployment at an efficiency ``scale``, the engine's time per iteration ``iteration`` (seconds, or a pair
        with its time per sequence of an iteration) and the round's host terms ``host`` (none by default)."""
        dep = self.dep
        if self.fit_scale and scale != 1.0:
            dep = _scaled(dep, scale)
        per_iteration, per_seq = (iteration, 0.0) if np.ndim(iteration) == 0 else iteration
        engine = dep.engine.with_iteration_ms(per_iteration * 1e3, per_seq * 1e6)
        # ``host`` is the round's terms, or (terms, the share of them the engine hides; None: the version's own).
        h, share = (host, None) if host is None or isinstance(host, SpecHost) else host
        h = SpecHost() if h is None else h
        engine = dataclasses.replace(engine, spec=h, kernel_spec=h)
        if share is not None:
            engine = dataclasses.replace(engine, overlap_share=share, kernel_overlap_share=share)
        return dataclasses.replace(dep, engine=engine)

    def plain_parts(self, scale: float, index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(decode step without the per-iteration time, prefill share rho) of plain runs ``index``; every run's are
        computed once per scale and shared by every subset a held-out fit takes."""
        key = round(float(scale), 12)
        if key not in self._plain_cache:
            dep = self.deployment(scale, 0.0)
            step = np.asarray(dep.decode(self.batch, self.context).total_s, dtype=float)
            self._plain_cache[key] = (step, self.rate * dep.prefill_s(self.prompt))
        step, rho = self._plain_cache[key]
        return step[index], rho[index]

    def spec_passes(self, dep, index: np.ndarray) -> tuple[list, np.ndarray]:
        """(rounds, prefill share) of speculative runs ``index`` on ``dep``: one :class:`~specsim.speculation.deployment.RoundTime`
        per draft width (its hidden share is per width), with the row positions it covers."""
        groups = []
        for w in np.unique(self.topk[index]):
            j = np.flatnonzero(self.topk[index] == w)
            i = index[j]
            groups.append((j, w, dep.round_time(self.batch[i], self.context[i], self.steps[i], w, self.verify[i])))
        return groups, self.rate[index] * dep.prefill_s(self.prompt[index])

    def accept_length(self, index: np.ndarray, alphas: np.ndarray) -> np.ndarray:
        """Tokens per verification of runs ``index``: recorded or pinned, else AL(alpha, s) of its sweep's rate."""
        al = self.known_al[index].copy()
        unknown = self.sweep_index[index] >= 0
        if unknown.any():
            al[unknown] = tokens_per_round(alphas[self.sweep_index[index][unknown]], self.steps[index][unknown])
        return al

    def spec_tpot(self, dep_host, index: np.ndarray, groups: list, rho: np.ndarray, alphas: np.ndarray) -> np.ndarray:
        """TPOT of speculative runs ``index``: their rounds (the passes of ``groups`` with the host work ``dep_host``'s
        engine adds, hidden as the engine version hides it, composed by the round itself) per accepted length, over the
        share of time left by prefill."""
        rounds = np.empty(index.size)
        for j, w, r in groups:
            host, hidden = dep_host.round_host(self.batch[index[j]], self.steps[index[j]], w)
            rounds[j] = dataclasses.replace(r, host_s=host, overlapped=hidden).total_s
        return tpot_with_prefill(rounds / self.accept_length(index, alphas), 1.0, rho)


def _memoised(dep):
    """``dep`` with the parts of its source that do not depend on the efficiency kept between calls."""
    from specsim.timing.hybrid import HybridSource
    from specsim.timing.roofline import RooflineSource

    from specsim.timing.memo import MemoSource

    source = dep.source
    if isinstance(source, HybridSource):
        source = HybridSource(source.roofline, MemoSource(source.kernels))
    elif not isinstance(source, RooflineSource):
        source = MemoSource(source)
    return dataclasses.replace(dep, source=source)


def _scales(source) -> bool:
    from specsim.timing.hybrid import HybridSource
    from specsim.timing.roofline import RooflineSource

    return isinstance(source, (RooflineSource, HybridSource))


def _scaled(dep, scale: float):
    """The deployment with its profile's compute and bandwidth efficiencies times ``scale`` (each at most 1)."""
    from specsim.timing.hybrid import HybridSource
    from specsim.timing.roofline import RooflineSource

    hw = dep.hardware
    hw = dataclasses.replace(hw, compute_eff=min(1.0, hw.compute_eff * scale), bandwidth_eff=min(1.0, hw.bandwidth_eff * scale))
    roof = RooflineSource(hw)
    source = HybridSource(roof, dep.source.kernels) if isinstance(dep.source, HybridSource) else roof
    return dataclasses.replace(dep, hardware=hw, source=source)


def scale_upper(hardware) -> float:
    """The largest efficiency scale: where the first of the profile's efficiencies reaches the datasheet peak."""
    return 1.0 / max(hardware.compute_eff, hardware.bandwidth_eff)
