"""Drafters: one class per kind behind one interface (:mod:`.base`), and the registry ``--draft`` reads.

The kinds live in :mod:`.classic` (draft model, EAGLE, EAGLE-3, MTP, n-gram), :mod:`.parallel` (P-EAGLE, PARD, DFlash,
DSpark) and :mod:`.suffix` (suffix decoding).  A new kind is one class and one entry in :data:`DRAFTERS`.
"""

from __future__ import annotations

from specsim.describe.models import ModelShape
from specsim.speculation.drafters.base import (EAGLE3_DRAFT_VOCAB, NGRAM_CPU_S_PER_TOKEN, Drafter, EngineSupport,
                                               PublishedLength)
from specsim.speculation.drafters.classic import DraftModel, Eagle3Head, EagleHead, MtpHead, NgramDrafter
from specsim.speculation.drafters.parallel import DFlashDrafter, DSparkDrafter, ParallelDraftModel, PEagleHead
from specsim.speculation.drafters.suffix import SUFFIX_CPU_S_PER_SEQUENCE, SuffixDrafter

__all__ = ["DRAFTERS", "DRAFTER_KINDS", "EAGLE3_DRAFT_VOCAB", "NGRAM_CPU_S_PER_TOKEN", "SUFFIX_CPU_S_PER_SEQUENCE", "DFlashDrafter",
           "DSparkDrafter", "DraftModel", "Drafter", "Eagle3Head", "EagleHead", "EngineSupport", "MtpHead", "NgramDrafter",
           "PEagleHead", "ParallelDraftModel", "PublishedLength", "SuffixDrafter", "default_acceptance_help", "drafter_class",
           "make_drafter", "published_acceptance"]


#: Drafter keywords of ``--draft`` and their classes; any other value names a draft model.
DRAFTERS: dict[str, type[Drafter]] = {"eagle": EagleHead, "eagle3": Eagle3Head, "mtp": MtpHead, "ngram": NgramDrafter,
                                      "peagle": PEagleHead, "pard": ParallelDraftModel, "dflash": DFlashDrafter,
                                      "dspark": DSparkDrafter, "suffix": SuffixDrafter}
DRAFTER_KINDS = ("draft_model",) + tuple(DRAFTERS)
#: Every kind's class by kind (the draft model's included).
_BY_KIND: dict[str, type[Drafter]] = {"draft_model": DraftModel, **DRAFTERS}


def drafter_class(spec: str | None) -> type[Drafter]:
    """The class of the drafter ``--draft`` names (a model name or path is a draft model), or of a kind's name.

    >>> drafter_class("eagle3:heads/config.json").label, drafter_class("llama-3.2-1b").kind
    ('an EAGLE-3 head', 'draft_model')
    """
    from specsim.core.defaults import DEFAULT_DRAFT

    kind = str(spec or DEFAULT_DRAFT).partition(":")[0].lower()
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
        value = f"{acc.alpha:.3g}" if acc.alpha is not None else ", ".join(f"{c:g}" for c in acc.cumulative) + " by position"
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


def make_drafter(spec: str, target: ModelShape, draft_options: dict | None = None,
                 ngram_cpu_s_per_token: float | None = None) -> Drafter:
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
    if cls is NgramDrafter:
        return NgramDrafter.build(path, target, opts, ngram_cpu_s_per_token)
    if ngram_cpu_s_per_token is not None:
        raise ValueError("--ngram-cpu-ns applies to --draft ngram only")
    if cls is None:
        try:
            return DraftModel.build(spec, target, opts)
        except KeyError as err:
            import difflib

            close = difflib.get_close_matches(kind.lower().replace("-", "").replace("_", ""), list(DRAFTERS), n=1, cutoff=0.6)
            hint = f"; did you mean --draft {close[0]}?" if close else ""
            raise KeyError(f"{err.args[0]}; --draft also takes a drafter: {', '.join(DRAFTERS)}{hint}") from None
    return cls.build(path, target, opts)
