"""The verdict against the error an answer carries (specsim.answers.verdict): a gain inside the model's measured error
is "too close to call", a gain well outside it is called, and the error says where it comes from."""

from __future__ import annotations

import re
import statistics
from pathlib import Path

import pytest

from specsim.answers.verdict import CORPUS_SPEEDUP_ERROR, CORPUS_SPEEDUP_ERROR_SOURCE

REPO = Path(__file__).resolve().parent.parent
REPORT = REPO / "docs/reports/2026-12-06-corpus-d6d6c12.txt"


def test_the_corpus_error_is_the_committed_reports_median_uncalibrated_error():
    """CORPUS_SPEEDUP_ERROR is the median of column (a) (uncalibrated, the recorded acceptance) over the deployments
    of the committed corpus output that have one: read from the report, never by running the corpus."""
    errors = []
    for line in REPORT.read_text().splitlines():
        if line.startswith(" ") or "skipped" in line:
            continue
        cells = re.findall(r"n/a|(\d+\.\d)% \([+-]\d+\.\d%, \d+\)", line[52:])
        if cells and cells[0]:
            errors.append(float(cells[0]) / 100)
    assert len(errors) == 8  # the deployments that record their acceptance
    assert CORPUS_SPEEDUP_ERROR == pytest.approx(statistics.median(errors), abs=1e-12)
    assert REPORT.relative_to(REPO).as_posix() in CORPUS_SPEEDUP_ERROR_SOURCE
