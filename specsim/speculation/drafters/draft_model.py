"""The draft model: a separate small model of the target's family, one forward pass of it per drafted token.

The default drafter, so it is the one kind this package loads with itself (:mod:`specsim.speculation.drafters`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
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
        return cls(model.name, model)

    def checkpoint(self, target: ModelShape, given: str | None = None) -> str | None:
        return given or self.step_model.source or self.step_model.name

    def with_step_model(self, model: ModelShape) -> "DraftModel":
        return dataclasses.replace(self, name=model.name, step_model=model)

    @property
    def draft_spec(self) -> str:
        return self.step_model.source or self.step_model.name

    def provenance(self) -> list[str]:
        return []
