"""Drafters: what proposes the tokens, what one draft step costs, and what else a round costs.

One class per kind, behind one interface (:class:`Drafter`), as vLLM v1's ``spec_decode`` has one
proposer per method on one base class.  A drafter owns

* ``step_model``: the network one draft step runs (None for n-gram lookup), derived from the target by
  construction where it is a head;
* ``extend_pass``: whether each round also runs the head over the verified tokens (a *draft extend*
  pass of q = gamma + 1 per sequence, the size engines capture it at) to compute the hidden states the
  next round starts from.  Engines that take the first draft token from that pass save one draft step;
  specsim counts all gamma steps, an upper bound;
* ``host_s(batch, context)``: CPU time a round spends outside any network (n-gram's scan);
* its part of a round (``draft_pass``, ``extend``, ``launched_steps``): the deployment asks the drafter and never
  its kind;
* ``published()`` and ``default_acceptance()``: the acceptance it is published to reach, with the citation, that a
  command assumes when the user gives none (n-gram has none: it depends on the workload);
* ``checkpoint(target, given)``: what an engine loads for it (the draft model's, a known head, nothing for MTP and
  n-gram);
* ``engines``: what each engine calls it, from which release it takes it and how it pins acceptance
  (:class:`EngineSupport`).

The kinds:

``draft_model``  a separate small model of the target's family (the article's case): one forward pass of it
                 per drafted token, q = 1 per sequence.
``eagle``        an EAGLE-1/2 head (Li et al. 2024): one decoder layer of the target's width fed the target's
                 last hidden state and the token embedding (a 2d -> d projection), using the target's LM head.
``eagle3``       an EAGLE-3 head (Li et al. 2025, arXiv:2503.01840): the same layer fed a fusion of three
                 target layers (a 3d -> d projection; its attention takes the 2d-wide concatenation of
                 embedding and fused feature) and its own LM head over a reduced draft vocabulary
                 (32,000 tokens in yuhuili/EAGLE3-LLaMA3.1-Instruct-8B's config).
``mtp``          the target's own multi-token-prediction layers (DeepSeek-V3: one MLA+MoE layer, a 2d -> d
                 projection, the shared embedding and LM head), where its config declares them
                 (``num_nextn_predict_layers``).
``ngram``        prompt lookup: no network; a CPU scan of each sequence's tokens per round, ``b * L`` tokens
                 at :data:`NGRAM_CPU_S_PER_TOKEN`: vLLM PR #56732 measured 9.95 ms for a batch of 512
                 sequences of 129,536 tokens (66.3M tokens scanned) with 8 threads, 1.5e-10 s per token
                 (70.28 ms, 1.06e-9 s, with one thread).

``peagle``, ``pard``, ``dflash``, ``dspark`` (:mod:`specsim.speculation.drafters.parallel`): one pass of a network drafts all
                 gamma tokens of a round (P-EAGLE, PARD, DFlash's block diffusion, DSpark's block with a verified prefix
                 per request); ``suffix`` (:mod:`specsim.speculation.drafters.suffix`): a CPU suffix-tree lookup with a
                 draft length per request.

Every drafter's steps go through the deployment's step-time source, like the target's
(:mod:`specsim.speculation.deployment`).  A new kind is one new class and one entry in :data:`DRAFTERS`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np

from specsim.core.names import draft_option, given_as
from specsim.describe.models import ModelShape, _read_json, model_from_hf_config
from specsim.engines.base import Release, as_release
from specsim.engines.engine import EngineSupport
from specsim.speculation.acceptance import Acceptance

__all__ = ["EAGLE3_DRAFT_VOCAB", "NGRAM_CPU_S_PER_TOKEN", "Drafter", "EngineSupport"]

#: vLLM PR #56732 (2026): 9.95 ms for 66.3M tokens scanned with 8 threads.
NGRAM_CPU_S_PER_TOKEN = 9.95e-3 / 66.3e6
#: Bytes of one token id in the history a GPU lookup scans: vLLM's Model Runner V2 keeps each request's token ids as
#: int32, dense on the GPU for n-gram and suffix drafting (v1/worker/gpu/states.py RequestState.all_token_ids,
#: 0.32.0 L37-41).
TOKEN_ID_BYTES = 4


def token_ids_scanned(batch: object, context: object) -> np.ndarray:
    """Bytes a lookup kernel reads scanning each of ``batch`` sequences' ``context`` token ids once
    (:meth:`Drafter.lookup_bytes` of the drafters an engine runs as a GPU scan: n-gram, suffix decoding)."""
    return TOKEN_ID_BYTES * np.asarray(batch, dtype=float) * np.asarray(context, dtype=float)


#: draft_vocab_size of yuhuili/EAGLE3-LLaMA3.1-Instruct-8B (the EAGLE-3 authors' Llama-3.1-8B head), and of SpecForge's
#: EAGLE-3 configs for other families (configs/qwen3-30B-A3B-eagle3.1.json, qwen3-235B-A22B-eagle3.json: 32,000 too).
EAGLE3_DRAFT_VOCAB = 32000
_EAGLE_ARCHITECTURES = {
    "LlamaForCausalLMEagle3": "eagle3",
    "Eagle3LlamaForCausalLM": "eagle3",
    "LlamaForCausalLMEagle": "eagle",
    "EagleLlamaForCausalLM": "eagle",
}


@dataclass(frozen=True)
class Drafter:
    """A drafter: its name, the network one draft step runs (None for n-gram) and where the numbers come from."""

    def __repr__(self) -> str:  # a notebook's echo: the drafter and the network its steps run
        return f"{type(self).__name__}({self.name if self.step_model is None else self.step_model.describe()})"

    def __init_subclass__(cls, **kwargs) -> None:
        # Each kind is a dataclass of its own, whose generated __repr__ would print every field of its network again:
        # one defined in the class keeps @dataclass from writing one.
        super().__init_subclass__(**kwargs)
        cls.__repr__ = Drafter.__repr__

    name: str
    step_model: ModelShape | None
    basis: str = ""

    kind: ClassVar[str]
    #: How a sentence names the kind ("an EAGLE-3 head").
    label: ClassVar[str]
    #: A pass of the head over the gamma + 1 verified tokens each round (EAGLE, MTP).
    extend_pass: ClassVar[bool] = False
    #: A separate model that must share the target's tokenizer (and that engines load as a model of its own).
    shares_vocabulary: ClassVar[bool] = False
    #: Whether each drafted token costs a launched draft step (n-gram lookup proposes them all from one scan).
    launches_steps: ClassVar[bool] = True
    #: Whether it can draft a token tree (top-k > 1 per step): a network ranks candidates; a lookup drafts a chain.
    drafts_trees: ClassVar[bool] = True
    #: Whether an engine loads a checkpoint for it (MTP layers ship in the target's; n-gram loads nothing).
    loads_checkpoint: ClassVar[bool] = True
    #: Published checkpoints for built-in targets: target name -> checkpoint (the authors' heads, as the engines'
    #: documentation uses them).
    checkpoints: ClassVar[dict[str, str]] = {}
    #: Where the published acceptance comes from, in a few words (figure legends).
    published_short: ClassVar[str]
    #: (target family, workload) that :meth:`published` was measured on ("*": any family; None: no one workload), so
    #: that the acceptance lookup finds it as a row (:mod:`specsim.speculation.acceptance_data`).
    published_for: ClassVar[tuple[str, str] | None] = None
    #: The built-in model :meth:`published` was measured on (None: no one model), so that a label can say where that
    #: model's size differs from the target's.
    published_target: ClassVar[str | None] = None
    #: The kind whose rounds an engine preset overlaps as this one's (None: its own kind); P-EAGLE runs vLLM's EAGLE-3
    #: proposer with parallel drafting on, PARD its draft-model proposer.
    engine_kind: ClassVar[str | None] = None
    #: How ``--draft`` spells it (None: its kind).
    spelling: ClassVar[str | None] = None
    #: How the tables' legend writes a round's draft time.
    round_formula: ClassVar[str] = "gamma t_D"
    #: Whether a round verifies fewer draft tokens than it drafts, per request (:meth:`verified`): a serving simulation's
    #: round-time table, drawn at one acceptance, cannot hold it.
    varies_verification: ClassVar[bool] = False
    #: Whether every draft proposes all its steps' tokens (an engine's counters then give K draft tokens a draft, cut
    #: only at the token budget or the positions left): not a depth per request (suffix decoding, DSpark) nor what a
    #: lookup's match holds (n-gram).
    drafts_every_step: ClassVar[bool] = True
    #: Why there is no default acceptance, where :meth:`default_acceptance` refuses (the help text's words).
    no_default: ClassVar[str] = "depends on the workload"
    #: Published mean acceptance lengths, one row per (target, workload, draft tokens): what :meth:`published` picks its
    #: default from, and what acceptance by target and workload can extend.
    published_lengths: ClassVar[tuple] = ()

    def __post_init__(self) -> None:
        if self.step_model is None:
            raise ValueError(f"drafter {self.name!r}: only n-gram drafting runs no network")

    @property
    def overlap_kind(self) -> str:
        """The kind an engine preset's overlap applies to for this drafter."""
        return self.engine_kind or self.kind

    @property
    def draft_spec(self) -> str:
        """The ``--draft`` value that builds this drafter again (a plan's manifest records it)."""
        return self.kind

    @property
    def max_steps(self) -> int | None:
        """The most draft tokens one round can propose (None: no bound of the drafter's own)."""
        return None

    @classmethod
    def support(cls, engine, version: tuple | None = None, named: str | None = None) -> EngineSupport:
        """How ``engine`` (a name or an :class:`~specsim.engines.engine.Engine`) takes this drafter, from the engine's
        own table (its ``methods``); refused where it does not, or not yet at ``version``: the one check of engine
        support (config writers, benchmark plans and every command that builds a deployment call it)."""
        from specsim.engines import REGISTRY, Engine

        e = engine if isinstance(engine, Engine) else REGISTRY.get(str(engine))
        s = None if e is None else e.methods.get(cls.kind)
        if s is None:
            found = (
                "not among its drafting methods"
                if e is None
                else e.unsupported.get(cls.kind, "not among its drafting methods")
            )
            takes = ", ".join(
                f"{name} from {_version(s.since)}"
                + (f" to {s.until[0]}.{s.until[1]}" if s.until else "")
                + _unread(REGISTRY[name], s.since)
                for name, s in cls.supported_engines().items()
            )
            raise ValueError(
                f"{engine} does not run {cls.label} ({given_as('draft')} {cls.spelling or cls.kind}) in any release: {found}; "
                f"engines that do: {takes}"
            )
        if version is not None and as_release(version) < s.since:
            # a first release past every preset's range cannot be named with --engine: say so, not "use it"
            use = (
                f"{_unread(e, s.since)}: use another drafter"
                if e.past_newest(s.since)
                else f"; use {e.name}@{_version(s.since)} or later, or another drafter"
            )
            raise ValueError(
                f"{named or e.name + ' ' + _version(version)} refuses {e.method_key} {s.name} ({s.where}): "
                f"{cls.label} ({given_as('draft')} {cls.spelling or cls.kind}) runs from {e.name} {_version(s.since)}{use}"
            )
        if version is not None and s.until is not None and as_release(version) > s.until:
            last = f"{s.until[0]}.{s.until[1]}"
            raise ValueError(
                f"{named or e.name + ' ' + _version(version)} refuses {cls.label} ({given_as('draft')} {cls.spelling or cls.kind}): "
                f"{s.until_where}; it runs on {e.name} {_version(s.since)} to {last}: use {e.name}@{last}.0, or another "
                "drafter"
            )
        return s

    @classmethod
    def supported_engines(cls) -> dict[str, EngineSupport]:
        """Engine name -> how it takes this drafter, for the engines that do (in the registry's order)."""
        from specsim.engines import REGISTRY

        return {name: e.methods[cls.kind] for name, e in REGISTRY.items() if cls.kind in e.methods}

    @classmethod
    def runs_on(cls, engine: str | None) -> None:
        """Refuse a drafter that the release ``--engine`` names does not run (``none`` and no engine: nothing to check).

        >>> from specsim.speculation.drafters import DFlashDrafter, Eagle3Head
        >>> Eagle3Head.runs_on("vllm@0.10")
        >>> DFlashDrafter.runs_on("vllm@0.10")
        Traceback (most recent call last):
        ...
        ValueError: vllm@0.10 (vLLM 0.13.0, the newest release of 0.10-0.13) refuses method dflash (vllm/config/speculative.py SpeculativeMethod: in 0.20.0, not 0.19.1 (PR #38300)): a DFlash block-diffusion drafter (draft dflash) runs from vllm 0.20.0; use vllm@0.20.0 or later, or another drafter
        """
        from specsim.engines import named_release

        named = None if engine is None else named_release(engine)
        if named is not None:
            cls.support(*named)

    @classmethod
    def published(cls) -> tuple[Acceptance, str]:
        """(acceptance, citation): what this kind is published to reach, on one workload."""
        raise NotImplementedError

    @classmethod
    def default_acceptance(
        cls, target: ModelShape | None = None, workload: str | None = None, context: int | None = None
    ) -> tuple[Acceptance, str]:
        """The acceptance a command assumes when the user gives none, with a label that names its row or default.

        Read from the published rows for the target's family, the workload and the context
        (:func:`specsim.speculation.acceptance_data.resolve`, which also reads :attr:`published_lengths`); without
        them, :meth:`published`.
        """
        from specsim.speculation.acceptance_data import resolve

        found = resolve(cls, target, workload, context)
        return found.acceptance, found.label

    @classmethod
    def fallback_acceptance(cls, reason: str | None = None) -> tuple[Acceptance, str]:
        """What :meth:`default_acceptance` falls back to where no row is published: :meth:`published`."""
        return cls.published()

    def checkpoint(self, target: ModelShape, given: str | None = None) -> str | None:
        """The checkpoint an engine loads for this drafter: ``given``, a head read from its config.json, a known head."""
        if given:
            return given
        if self.step_model.source:  # a head read from its own config.json
            return self.step_model.source
        known = self.checkpoints.get(target.name)
        if known is None:
            raise ValueError(self._no_known_head(target))
        return known

    def _no_known_head(self, target: ModelShape) -> str:
        """The one line refusing a target with no known checkpoint: why one is needed (an engine config names the
        head it loads; the timing commands model a head from the target's shape and need none), the known heads of
        the target's family, the nearest in size first, and the checkpoint argument to give one (--draft-checkpoint in a
        command: :func:`specsim.core.names.given_as`).

        >>> from specsim.describe.models import get_model
        >>> from specsim.speculation.drafters import Eagle3Head
        >>> head = Eagle3Head.build("", get_model("llama-3.1-70b"), {})
        >>> print(head._no_known_head(get_model("llama-3.1-70b")))  # doctest: +NORMALIZE_WHITESPACE
        no published eagle3 head is known for llama-3.1-70b; give its checkpoint with draft_checkpoint (an engine's
        config names the head it loads; optimal-gamma and speedup model one from the target's shape and need none);
        the known eagle3 heads for llama targets: yuhuili/EAGLE3-LLaMA3.3-Instruct-70B (trained on llama-3.3-70b),
        yuhuili/EAGLE3-LLaMA3.1-Instruct-8B (trained on llama-3.1-8b)
        """
        from specsim.describe.models import get_model
        from specsim.speculation.acceptance_data import target_family

        family = target_family(target)
        mine = float(target.total_params)
        kin = [
            (abs(np.log(float(get_model(name).total_params) / mine)), head, name)
            for name, head in self.checkpoints.items()
            if family is not None and target_family(get_model(name)) == family
        ]
        known = (
            f"the known {self.kind} heads for {family} targets: "
            + ", ".join(f"{head} (trained on {name})" for _, head, name in sorted(kin))
            if kin
            else f"none is known for {'its family' if family is None else f'a {family} target'}"
        )
        return (
            f"no published {self.kind} head is known for {target.name}; give its checkpoint with "
            f"{given_as('draft_checkpoint')} "
            "(an engine's config names the head it loads; optimal-gamma and speedup model one from the target's shape "
            f"and need none); {known}"
        )

    def with_step_model(self, model: ModelShape) -> "Drafter":
        """The same drafter running another network (another TP size or dtype of it)."""
        return dataclasses.replace(self, step_model=model)

    # -- its part of a round (the deployment's passes, asked for by the drafter) --------------------------
    def draft_pass(self, dep, batch: object, width: object, context: object):
        """One draft step on the GPU: a pass of the drafter's network over ``width`` tokens per sequence."""
        return dep.drafter_pass(batch, width, context)

    def draft_passes(self, steps: np.ndarray) -> np.ndarray:
        """Passes of the drafter's network a round of ``steps`` draft tokens runs: one per token for a chain drafter."""
        return steps

    def host_steps(self, steps: np.ndarray) -> np.ndarray:
        """The steps the engine's per-sequence, per-step host work counts: every draft step of a chain, every proposed
        token of a lookup (n-gram, suffix), the one pass of a parallel drafter."""
        return steps

    def draft_tokens(self, steps: np.ndarray, width: object) -> object:
        """Tokens per sequence in one of those passes: the draft width (1 for a chain, a tree level's top-k)."""
        return width

    def verified(self, dep, acceptance: object, steps: np.ndarray, batch: object, context: object) -> np.ndarray | None:
        """The mean draft tokens a round verifies per sequence where that is fewer than it drafts (None: all of them)."""
        return None

    #: Whether SGLang takes this drafter's round as --speculative-num-steps / --speculative-eagle-topk (EAGLE-family
    #: workers); a lookup launches no steps (:attr:`launches_steps`), a block drafter's are fixed at 1.
    sglang_steps: ClassVar[bool] = True

    @classmethod
    def sglang_flags(cls, gamma: int) -> list[str]:
        """SGLang launch flags beyond the algorithm, the draft path, the steps and the verify window."""
        return []

    def extend(self, dep, batch: object, verify_tokens: object, context: object):
        """The draft-extend pass over the verified tokens (None for drafters without one)."""
        return dep.drafter_pass(batch, verify_tokens, context) if self.extend_pass else None

    def launched_steps(self, steps: np.ndarray) -> np.ndarray | float:
        """The draft steps a round launches (the engine's per-step host work counts these)."""
        return steps

    def host_s(self, batch: object, context: object) -> np.ndarray | float:
        """CPU seconds a round spends drafting outside any network, per (batch, context)."""
        return 0.0

    def lookup_bytes(self, batch: object, context: object) -> np.ndarray | float:
        """Bytes of device memory a round's lookup reads where an engine runs it as a GPU kernel instead of
        :meth:`host_s` (:func:`specsim.speculation.gpu_lookup.gpu_lookup_s`); 0 for a drafter with no lookup."""
        return 0.0

    def describe(self) -> str:
        extra = "; plus a draft-extend pass over the gamma + 1 verified tokens per round" if self.extend_pass else ""
        return f"drafter: {self.step_model.describe()}{extra}" + (f" ({self.basis})" if self.basis else "")

    def provenance(self) -> list[str]:
        """Lines of provenance beyond the step model's own (a draft model is described with the target)."""
        return [self.describe()]


def _unread(engine, since: tuple) -> str:
    """What a drafter's first release past every preset of ``engine`` is (empty where a preset covers it)."""
    if not engine.past_newest(since):
        return ""
    return f" (newer than the newest release specsim has read, {engine.newest}: no preset covers it)"


def _version(v) -> str:
    return str(v) if isinstance(v, Release) else ".".join(str(x) for x in v)


class _OnePass:
    """Parallel drafting: one pass of the drafter's network proposes all gamma tokens of a round, so a round runs one
    draft pass (none at gamma 0) whatever gamma is; the pass carries the tokens per sequence the engine lays out
    (:meth:`draft_tokens`).  Engines run these drafters as chains."""

    drafts_trees: ClassVar[bool] = False
    round_formula: ClassVar[str] = "t_D (one draft pass proposes all gamma tokens)"
    #: SGLang forces --speculative-num-steps and --speculative-eagle-topk to 1 for its block drafters, with a warning
    #: (DFLASH: srt/server_args.py of 0.5.11-0.5.13, arg_groups/speculative_hook.py from 0.5.14; DSPARK: _handle_dspark,
    #: 0.5.16-0.5.23): the verify window --speculative-num-draft-tokens (gamma + 1) is what sets the round.
    sglang_steps: ClassVar[bool] = False

    def draft_passes(self, steps: np.ndarray) -> np.ndarray:
        return (np.asarray(steps, dtype=float) > 0).astype(float)

    def launched_steps(self, steps: np.ndarray) -> np.ndarray:
        return self.draft_passes(steps)

    def host_steps(self, steps: np.ndarray) -> np.ndarray:
        return self.draft_passes(steps)


def _no_checkpoint(kind: str, given: str | None) -> None:
    if given:
        raise ValueError(
            f"{given_as('draft_checkpoint')} does not apply to {given_as('draft')} {kind}: it loads no separate checkpoint"
        )
    return None


# -- heads, built from the target's shape ---------------------------------------------------
def _head_shape(
    kind: str,
    target: ModelShape,
    vocab: int,
    *,
    heads: int | None = None,
    kv_heads: int | None = None,
    head_dim: int | None = None,
    intermediate: int | None = None,
    layers: int = 1,
    name: str | None = None,
    source: str = "",
    extra: int | None = None,
) -> ModelShape:
    """An EAGLE head of the target's width: ``layers`` dense decoder layers plus the feature projection.

    Built field by field: the target's width and attention layout (biases, q/k norms, sinks, norms per layer);
    the head's own heads, MLP size and vocabulary where its config gives them; no experts, windows or latent
    attention (an MLA target's head attends with full heads: its config reads n_kv_heads = n_heads).  Dtypes
    and tensor parallelism are the drafter options' (:func:`_with_options`).  A field added to ModelShape takes
    its default here unless this function says otherwise.
    """
    d = target.hidden_size
    heads = target.n_heads if heads is None else heads
    kv_heads = target.n_kv_heads if kv_heads is None else kv_heads
    head_dim = target.head_dim if head_dim is None else head_dim
    qkv_rows = (heads + 2 * kv_heads) * head_dim
    # EAGLE: fc(2d -> d).  EAGLE-3: fc(3d -> d) for the fused features, and q, k, v read the 2d-wide input.  A block
    # drafter passes its own (``extra``).
    if extra is None:
        extra = 2 * d * d if kind == "eagle" else 3 * d * d + qkv_rows * d
    return ModelShape(
        name=name or f"{kind} head ({target.name})",
        vocab_size=vocab,
        hidden_size=d,
        intermediate_size=target.intermediate_size if intermediate is None else intermediate,
        n_layers=layers,
        n_heads=heads,
        n_kv_heads=kv_heads,
        head_dim=head_dim,
        qkv_bias=target.qkv_bias,
        qk_norm=target.qk_norm,
        o_bias=target.o_bias,
        norms_per_layer=target.norms_per_layer,
        attention_sinks=target.attention_sinks,
        extra_linear_params=extra,
        architecture=target.architecture,
        max_position_embeddings=target.max_position_embeddings,
        source=source,
    )


def _drafter_config(path: str, what: str) -> tuple[Path, str, dict, object, object]:
    """(config.json path, its name in messages, the config, its ``architectures`` and the first of them) of a drafter's
    checkpoint folder or config.json; a missing file or one that is not a JSON object is refused."""
    config_path = Path(path).expanduser()
    if config_path.is_dir():
        config_path = config_path / "config.json"
    if not config_path.is_file():
        from specsim.core.limits import not_a_file

        raise ValueError(f"{what} {str(config_path)!r} {not_a_file(config_path)}")
    where = f"{what} {str(config_path)!r}"
    config = _read_json(config_path, what)
    if not isinstance(config, dict):
        raise ValueError(f"{where}: expected a JSON object")
    archs = config.get("architectures")
    return config_path, where, config, archs, (archs[0] if isinstance(archs, list) and archs else None)


def _head_from_config(path: str, target: ModelShape, kind: str) -> ModelShape:
    config_path, where, config, archs, arch = _drafter_config(path, f"{kind} head config")
    if not isinstance(arch, str) or arch not in _EAGLE_ARCHITECTURES:
        shown = repr(arch) if isinstance(arch, str) or arch is None else f"a {type(archs).__name__} that names none"
        raise ValueError(f"{where}: architecture {shown} is not an EAGLE head; read: {', '.join(_EAGLE_ARCHITECTURES)}")
    if _EAGLE_ARCHITECTURES[arch] != kind:
        raise ValueError(f"{kind} head config {str(config_path)!r} describes an {_EAGLE_ARCHITECTURES[arch]} head")
    # The head's own draft vocabulary (EAGLE-3), else its vocab_size; a value that is there must be a real size.
    vocab = config.get("draft_vocab_size", config.get("vocab_size"))
    if isinstance(vocab, bool) or not isinstance(vocab, int) or not 1 <= vocab <= 10_000_000:
        key = "draft_vocab_size" if "draft_vocab_size" in config else "vocab_size"
        raise ValueError(f"{where}: {key} must be a whole number of tokens in [1, 10000000], got {vocab!r}")
    # Read through the target's reader: dtypes and quantization_config are read or refused there, as for a target.
    layer = model_from_hf_config(
        {**config, "architectures": ["LlamaForCausalLM"], "vocab_size": vocab}, name=str(config_path)
    )
    if layer.hidden_size != target.hidden_size:
        raise ValueError(
            f"{kind} head {str(config_path)!r} has hidden size {layer.hidden_size}, the target "
            f"{target.name} {target.hidden_size}: it is a head for another model"
        )
    head = _head_shape(
        kind,
        target,
        layer.vocab_size,
        heads=layer.n_heads,
        kv_heads=layer.n_kv_heads,
        head_dim=layer.head_dim,
        intermediate=layer.intermediate_size,
        layers=layer.n_layers,
        name=config_path.resolve().parent.name,
        source=str(config_path.resolve().parent),
    )
    # Its stored precision is its own (an FP8 head is FP8), not the target's; its logits run at the target's
    # head precision (:func:`_with_options`).
    return dataclasses.replace(head, weight_dtype=layer.weight_dtype)


def _block_drafter_config(path: str, target: ModelShape, kind: str, architectures: tuple) -> tuple[ModelShape, dict]:
    """A block drafter's layers from its config.json (DFlash, DSpark), read like an EAGLE head's."""
    config_path, where, config, _, arch = _drafter_config(path, f"{kind} drafter config")
    if arch not in architectures:
        raise ValueError(f"{where}: architecture {arch!r} is not a {kind} drafter; read: {', '.join(architectures)}")
    layer = model_from_hf_config(
        {**config, "architectures": ["LlamaForCausalLM"], "vocab_size": target.vocab_size}, name=str(config_path)
    )
    if layer.hidden_size != target.hidden_size:
        raise ValueError(
            f"{where}: hidden size {layer.hidden_size}, the target {target.name} {target.hidden_size}: it drafts "
            "for another model"
        )
    head = _head_shape(
        kind,
        target,
        target.vocab_size,
        heads=layer.n_heads,
        kv_heads=layer.n_kv_heads,
        head_dim=layer.head_dim,
        intermediate=layer.intermediate_size,
        layers=layer.n_layers,
        name=config_path.resolve().parent.name,
        source=str(config_path.resolve().parent),
        extra=0,
    )
    return dataclasses.replace(head, weight_dtype=layer.weight_dtype), config


def _stored_as_published(head: ModelShape, target: ModelShape, label: str, opts: dict) -> ModelShape:
    """A head derived from the target's shape is its own checkpoint, stored at the target's 16-bit precision whatever the
    target's weights are quantized to: the public EAGLE, EAGLE-3, DFlash and DSpark heads are FP16 or BF16
    (yuhuili/EAGLE3-LLaMA3.1-Instruct-8B float16; SpecForge's heads bfloat16), and an engine quantizes them only where
    told: vLLM 0.24.0 leaves a draft unquantized unless its checkpoint or ``quantization`` in --speculative-config says
    otherwise, and gives the target's quantization to MTP drafters alone (vllm/config/speculative.py,
    ``SpeculativeConfig.quantization``); SGLang 0.5.12 gives the target's --quantization to the draft unless
    --speculative-draft-model-quantization says otherwise (srt/server_args.py), unset where a pre-quantized checkpoint
    is served without the flag, save a few families whose checkpoints it reads it from (DeepSeek-V3 on Blackwell among
    them).  Said in a note where it differs from the target's weights; --draft-weight-dtype replaces it."""
    stored = target.head_dtype_
    if opts.get("weight_dtype") or stored == target.weight_dtype:
        return dataclasses.replace(head, weight_dtype=stored)
    note = (
        f"weights {stored}, not the target's {target.weight_dtype}: {label} is its own checkpoint, stored at 16 bits "
        "as the public ones are, and vLLM 0.24.0 quantizes only MTP drafters with the target "
        f"(vllm/config/speculative.py); {draft_option('weight_dtype')} for a quantized head, or for SGLang served "
        "with --quantization, which it gives the draft too"
    )
    return dataclasses.replace(head, weight_dtype=stored, notes=head.notes + (note,))


def no_network_said(kind: str) -> str:
    """The refusal of a draft model's options for a drafter ``kind`` that runs no network (n-gram, suffix)."""
    options = f"{draft_option('weight_dtype')}, {draft_option('kv_dtype')} and {draft_option('tp')}"
    return f"{given_as('draft')} {kind} runs no network: {options} do not apply"


def _with_options(head: ModelShape, opts: dict, target: ModelShape, own_dtype: bool = False) -> ModelShape:
    """A head takes --draft-weight-dtype / --draft-kv-dtype / --draft-tp; by default the target's dtypes (a head with
    its own checkpoint, ``own_dtype``: read from its config.json, or derived and :func:`_stored_as_published`, keeps its
    stored weight dtype)."""
    changes = {
        "weight_dtype": opts.get("weight_dtype") or (head.weight_dtype if own_dtype else target.weight_dtype),
        "kv_dtype": opts.get("kv_dtype") or target.kv_dtype,
        "tp": opts.get("tp") or 1,
        "head_dtype": target.head_dtype_,
        "expert_dtype": target.expert_dtype if head.is_moe else None,
    }
    return dataclasses.replace(head, **changes)
