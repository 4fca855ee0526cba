"""The draft model: a separate small model of the target's family, one forward pass of it per drafted token.

The default drafter, so it is the one kind this package loads with itself (:mod:`specsim.speculation.drafters`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import ClassVar

from specsim.describe.models import ModelShape, get_model
from specsim.speculation.acceptance import Acceptance
from specsim.speculation.drafters.base import Drafter

__all__ = ["DraftModel"]


@dataclass(frozen=True)
class DraftModel(Drafter):
    """A separate small model of the target's family: one forward pass of it per drafted token."""

    kind: ClassVar[str] = "draft_model"
    label: ClassVar[str] = "a draft model"
    spelling: ClassVar[str | None] = "MODEL"
    shares_vocabulary: ClassVar[bool] = True
    published_short: ClassVar[str] = "the article"
    #: The KV-cache dtype its config gives (what a deployment keeps where its engine does not give the draft the
    #: target's: :meth:`specsim.speculation.deployment.Deployment.draft_cache`); None: its step model's.
    own_kv_dtype: str | None = field(default=None, kw_only=True)
    #: Whether the user gave its KV-cache dtype (--draft-kv-dtype): then no engine rule replaces it.
    kv_given: bool = field(default=False, kw_only=True)

    @classmethod
    def published(cls) -> tuple[Acceptance, str]:
        return (
            Acceptance(alpha=0.8, source="a matched same-family draft, the reference article: 'above 0.8'"),
            "the reference article, 'Speculative decoding with draft models, explained': a stock same-family "
            "draft on its own target reaches alpha above 0.8",
        )

    @classmethod
    def build(cls, spec: str, target: ModelShape, options: dict) -> "DraftModel":
        model = get_model(spec, **options)
        return cls(model.name, model, own_kv_dtype=model.kv_dtype, kv_given=bool(options.get("kv_dtype")))

    def checkpoint(self, target: ModelShape, given: str | None = None) -> str | None:
        return given or self.step_model.source or self.step_model.name

    def with_step_model(self, model: ModelShape) -> "DraftModel":
        same = self.step_model is not None and model.name == self.step_model.name  # (another TP or dtype of it)
        return dataclasses.replace(
            self, name=model.name, step_model=model, own_kv_dtype=self.own_kv_dtype if same else model.kv_dtype
        )

    @property
    def draft_spec(self) -> str:
        return self.step_model.source or self.step_model.name

    def provenance(self) -> list[str]:
        return []
