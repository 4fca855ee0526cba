"""Shared fixtures for the specsim test suite."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import settings

# Property tests check values, never speed: a per-example deadline fails the first example of a file run alone
# (it pays lazy imports, e.g. scipy, ~0.5 s) and any example on a loaded machine.
settings.register_profile("specsim", deadline=None)
settings.load_profile("specsim")

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def repo() -> Path:
    """The repository root."""
    return REPO
