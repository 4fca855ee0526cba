"""An answer as a notebook's table: one row per batch or load, its sources beside the table rather than in every row.

Every answer's records (what its command's ``--json`` prints) repeat, in each row, what is the same for all of them:
the acceptance and its rates, the error the verdicts are judged against, the memory, the engine's limits, provenance
and deployment.  :func:`answer_frame` keeps the figures as columns (nested ones flattened: ``spec.tpot_s``) and puts
those in the frame's ``attrs``, with the deployment's notes, as :func:`specsim.speculation.sweep.optimal_gamma_table`
does; :func:`answer_html` is the answers' ``_repr_html_``, the table under the answer's one-line echo and its verdicts'
threshold.
"""

from __future__ import annotations

import html

__all__ = ["SOURCE_KEYS", "Framed", "answer_frame", "answer_html"]

#: The keys of a record that are the same in every row of an answer: where its numbers come from, not a figure.
SOURCE_KEYS = (
    "acceptance",
    "acceptance_rates",
    "model_error",
    "capacity",
    "context_basis",
    "engine_limits",
    "kv_cache_bytes_per_gpu",
    "lengths",
    "at_largest_batch",
    "provenance",
    "deployment",
)


def answer_frame(records: list[dict], dep) -> object:
    """A pandas DataFrame of an answer's ``records``: one row each, nested figures flattened (``plain.tpot_s``), and
    in ``attrs`` the record's :data:`SOURCE_KEYS` (the same in every row) and ``notes``, ``dep``'s
    (:meth:`~specsim.speculation.deployment.Deployment.notes`).

    >>> frame = answer_frame([{"batch": 1, "spec": {"tpot_s": 0.004}, "acceptance": "alpha 0.8"}], None)
    >>> list(frame.columns), frame.attrs["acceptance"]
    (['batch', 'spec.tpot_s'], 'alpha 0.8')
    """
    import pandas as pd

    figures = [{k: v for k, v in r.items() if k not in SOURCE_KEYS} for r in records]
    frame = pd.json_normalize(figures) if figures else pd.DataFrame()
    first = records[0] if records else {}
    frame.attrs.update({k: first[k] for k in SOURCE_KEYS if k in first})
    frame.attrs["notes"] = [] if dep is None else dep.notes()
    return frame


def answer_html(answer, frame) -> str:
    """A notebook's display of ``answer``: its echo (who, on what), the verdicts' threshold and where it comes from,
    and ``frame`` (:func:`answer_frame`) as a table."""
    error = answer.model_error
    return (
        f"<p><code>{html.escape(repr(answer))}</code></p><p>{html.escape(error.said(rtol=False))}</p>"
        + frame.to_html(max_rows=60)
    )


class Framed:
    """An answer as a notebook shows it (mixed into :class:`~specsim.answers.GammaAnswer`,
    :class:`~specsim.answers.load.LoadAnswer` and :class:`~specsim.answers.compare.CompareAnswer`): :meth:`to_frame`
    and the display ``_repr_html_``, from the answer's :meth:`frame_records` and ``deployment``."""

    def frame_records(self) -> list[dict]:
        """The records its table shows: what its command's ``--json`` prints (its ``records()``)."""
        return self.records()

    def to_frame(self):
        """A pandas DataFrame of this answer, one row per batch or load: the figures of :meth:`frame_records` as
        columns (nested ones flattened), and in ``attrs`` what every row repeats there (acceptance, model_error,
        provenance, deployment, ...) and the deployment's notes (:func:`answer_frame`)."""
        return answer_frame(self.frame_records(), self.deployment)

    def _repr_html_(self) -> str:  # a notebook's display: the echo, the verdicts' threshold, the table
        return answer_html(self, self.to_frame())
