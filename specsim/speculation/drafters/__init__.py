"""Drafters: one class per kind behind one interface (:mod:`.base`), and the registry ``--draft`` reads.

The kinds live in :mod:`.draft_model` (the draft model), :mod:`.classic` (EAGLE, EAGLE-3, MTP, n-gram), :mod:`.parallel`
(P-EAGLE, PARD, DFlash, DSpark) and :mod:`.suffix` (suffix decoding).  A new kind is one class and one entry in
:data:`KINDS`.

Only the default kind, the draft model, loads with the package; the other modules load the first time one of their
kinds is looked up (through ``--draft``, :data:`DRAFTERS` or an attribute of this package), so that a run names what it
builds (issue 28: every module and record class a command loads is paid at each cold start).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from types import ModuleType

from specsim.core.limits import UnknownName, as_name_or_path
from specsim.core.names import given_as
from specsim.describe.models import ModelShape
from specsim.speculation.drafters.base import EAGLE3_DRAFT_VOCAB, NGRAM_CPU_S_PER_TOKEN, Drafter, EngineSupport
from specsim.speculation.drafters.draft_model import DraftModel

__all__ = [
    "DRAFTERS",
    "DRAFTER_KINDS",
    "KINDS",
    "EAGLE3_DRAFT_VOCAB",
    "NGRAM_CPU_S_PER_TOKEN",
    "SUFFIX_CPU_S_PER_SEQUENCE",
    "DFlashDrafter",
    "DSparkDrafter",
    "DraftModel",
    "Drafter",
    "Eagle3Head",
    "EagleHead",
    "EngineSupport",
    "MtpHead",
    "NgramDrafter",
    "PEagleHead",
    "ParallelDraftModel",
    "PublishedLength",
    "SuffixDrafter",
    "default_acceptance_help",
    "drafter_class",
    "drafter_runs_on",
    "make_drafter",
    "published_acceptance",
]


#: Every drafter keyword of ``--draft`` but the draft model's, with the module of this package its class lives in and
#: the class's name: the one entry a new kind adds.  The modules load on first use.
KINDS = {
    "eagle": ("classic", "EagleHead"),
    "eagle3": ("classic", "Eagle3Head"),
    "mtp": ("classic", "MtpHead"),
    "ngram": ("classic", "NgramDrafter"),
    "peagle": ("parallel", "PEagleHead"),
    "pard": ("parallel", "ParallelDraftModel"),
    "dflash": ("parallel", "DFlashDrafter"),
    "dspark": ("parallel", "DSparkDrafter"),
    "suffix": ("suffix", "SuffixDrafter"),
}
#: Names the lazily loaded modules give this package besides their classes.
_ALSO = {"SUFFIX_CPU_S_PER_SEQUENCE": "suffix", "PublishedLength": "parallel"}


def _module(home: str) -> ModuleType:
    """The module ``home`` of this package, imported on first use."""
    import importlib

    return importlib.import_module(f"{__name__}.{home}")


class _Registry(Mapping):
    """Keyword -> drafter class, in a fixed order; a lazily loaded kind's class is imported when first looked up."""

    def __init__(self, loaded: dict[str, type[Drafter]], order: tuple[str, ...]) -> None:
        self._classes, self._order = dict(loaded), order

    def __getitem__(self, kind: str) -> type[Drafter]:
        if kind not in self._classes:
            home, name = KINDS[kind]  # KeyError for a keyword that names no drafter
            self._classes[kind] = getattr(_module(home), name)
        return self._classes[kind]

    def __iter__(self) -> Iterator[str]:
        return iter(self._order)

    def __len__(self) -> int:
        return len(self._order)

    def __contains__(self, kind: object) -> bool:
        return kind in self._order

    def __repr__(self) -> str:
        return f"DRAFTERS({', '.join(self._order)})"


def __getattr__(name: str):
    """The lazily loaded classes (with suffix decoding's CPU cost and the parallel drafters' PublishedLength) as
    attributes of this package (PEP 562)."""
    homes = {cls: home for home, cls in KINDS.values()} | _ALSO
    if name in homes:
        return getattr(_module(homes[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: Drafter keywords of ``--draft`` and their classes; any other value names a draft model.
DRAFTERS: Mapping[str, type[Drafter]] = _Registry({}, tuple(KINDS))
DRAFTER_KINDS = ("draft_model",) + tuple(DRAFTERS)
#: Every kind's class by kind (the draft model's included).
_BY_KIND: Mapping[str, type[Drafter]] = _Registry({"draft_model": DraftModel}, DRAFTER_KINDS)


def drafter_class(spec: str | None) -> type[Drafter]:
    """The class of the drafter ``--draft`` names (a model name or path is a draft model), or of a kind's name.

    >>> drafter_class("eagle3:heads/config.json").label, drafter_class("llama-3.2-1b").kind
    ('an EAGLE-3 head', 'draft_model')
    """
    from specsim.core.defaults import DEFAULT_DRAFT

    takes = "a model's name or config.json path, or a drafter's name (eagle3, mtp, ngram, ...)"
    kind = as_name_or_path("a draft", spec or DEFAULT_DRAFT, takes).partition(":")[0].lower()
    return _BY_KIND.get(kind, DraftModel)


def default_acceptance_help() -> str:
    """What --alpha defaults to, per drafter kind, for the command line's help.

    >>> default_acceptance_help().split("; ")[:2]
    ["the drafter's published acceptance: a draft model 0.8", 'an EAGLE head 0.634']
    """
    parts = []
    for cls in _BY_KIND.values():
        try:
            acc, _ = cls.fallback_acceptance()  # what default_acceptance() gives without a target (no table to read)
        except ValueError:
            parts.append(f"{cls.label}: none ({cls.no_default}; give one)")
            continue
        value = (
            f"{acc.alpha:.3g}"
            if acc.alpha is not None
            else ", ".join(f"{c:g}" for c in acc.cumulative) + " by position"
        )
        parts.append(f"{cls.label} {value}")
    return "the drafter's published acceptance: " + "; ".join(parts)


def published_acceptance() -> dict:
    """Acceptance each drafter kind is published to reach, with the source: kind -> (Acceptance, citation).

    Workload-specific numbers, for comparing drafter kinds; measure your own (``specsim alpha --metrics``).  A kind whose
    published numbers give no rate (PARD's one length names no draft length) is left out.
    """
    out = {}
    for kind, cls in _BY_KIND.items():
        try:
            out[kind] = cls.published()
        except ValueError:
            continue
    return out


def make_drafter(
    spec: str, target: ModelShape, draft_options: dict | None = None, ngram_cpu_s_per_token: float | None = None
) -> Drafter:
    """The drafter ``--draft`` names: a model name or config.json, ``eagle``, ``eagle3`` (optionally
    ``eagle3:PATH`` to a head's config.json), ``mtp`` or ``ngram``.

    >>> from specsim.describe.models import get_model
    >>> make_drafter("eagle3", get_model("llama-3.1-8b")).step_model.n_layers
    1
    >>> make_drafter("ngram", get_model("llama-3.1-8b")).step_model is None
    True
    """
    opts = dict(draft_options or {})
    kind, _, path = spec.partition(":")
    cls = DRAFTERS.get(kind.lower())
    if kind.lower() == "ngram":  # the one kind whose build takes the host scan's cost per token
        return cls.build(path, target, opts, ngram_cpu_s_per_token)
    if ngram_cpu_s_per_token is not None:
        raise ValueError(f"{given_as('ngram_cpu_s_per_token')} applies to {given_as('draft')} ngram only")
    if cls is None:
        try:
            return DraftModel.build(spec, target, opts)
        except KeyError as err:
            raise _unknown_draft(err, kind) from None
    return cls.build(path, target, opts)


def _unknown_draft(err: KeyError, kind: str) -> UnknownName:
    """The line for a ``--draft`` that names neither a model (``err``, the model lookup's) nor a drafter ``kind``."""
    import difflib

    close = difflib.get_close_matches(kind.lower().replace("-", "").replace("_", ""), list(DRAFTERS), n=1, cutoff=0.6)
    hint = f"; did you mean {given_as('draft')} {close[0]}?" if close else ""
    return UnknownName(f"{err.args[0]}; {given_as('draft')} also takes a drafter: {', '.join(DRAFTERS)}{hint}")


def drafter_runs_on(cls: type[Drafter], spec: str, engine: object) -> None:
    """``cls.runs_on(engine)`` (:meth:`~specsim.speculation.drafters.base.Drafter.runs_on`) for ``cls``, the class of
    the drafter ``spec`` names, with a ``spec`` naming neither a drafter nor a model (built-in, or a config.json)
    refused first, with :func:`make_drafter`'s line: ``eagle9`` on vllm@0.10 was read as a draft model and refused as
    one, the typo never named.  A model that is found but does not build (a config.json missing keys) is left to
    :func:`make_drafter`, after the engine's refusal.

    >>> drafter_runs_on(DraftModel, "llama-3.2-1b", "vllm@0.15.0")
    >>> drafter_runs_on(DraftModel, "eagle9", "vllm@0.10")
    Traceback (most recent call last):
    ...
    specsim.core.limits.UnknownName: unknown model 'eagle9'; specsim models lists the built-in ones (or give a path to a config.json); draft also takes a drafter: eagle, eagle3, mtp, ngram, peagle, pard, dflash, dspark, suffix; did you mean draft eagle?
    """
    try:
        cls.runs_on(engine)
    except ValueError:
        from specsim.describe.models import get_model

        kind = spec.partition(":")[0]
        if kind.lower() not in DRAFTERS:
            try:
                get_model(spec)
            except KeyError as err:
                raise _unknown_draft(err, kind) from None
            except ValueError:  # found, but not a model specsim builds: the engine's refusal first, as before
                pass
        raise
