"""The verdict of an answer: speculate, do not, or too close to call, against the error the answer carries.

A predicted gain G (the speculating arm's speedup, or its output tokens per second over plain decoding's, minus 1) is
a model's: where |G| is inside the error specsim measured for such predictions, the sign of G is not known and the
verdict says so, with the way to find out (measure both arms).  The error is

* with a calibration whose fit kept a held-out error of both arms: that error, plain plus speculative
  (:meth:`specsim.calibration.file.Calibration.speedup_error`), carried by the calibrated engine preset;
* otherwise: :data:`CORPUS_SPEEDUP_ERROR`, the corpus's measured error of an uncalibrated speedup, with why the
  calibration's own could not be taken where a calibration was given (it keeps none, or the answer rests on something
  its runs did not judge: a term a flag replaced, another drafter's rounds, an acceptance given in place of the runs'
  measured one; :meth:`specsim.engines.base.EnginePreset.unjudged` sets it aside).

``rtol`` (optimal-gamma's --rtol) keeps its meaning: it picks the gamma (the smallest within ``rtol`` of the best);
this error then judges the gain of the gamma picked, or, where plain decoding is picked, of the best speculating gamma.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from specsim.core.names import given_as

__all__ = [
    "CORPUS_SPEEDUP_ERROR",
    "CORPUS_SPEEDUP_ERROR_SOURCE",
    "VERDICTS",
    "VERDICT_RESOLUTION",
    "ModelError",
    "judged_at",
    "line_said",
    "model_error",
    "on_the_line",
    "on_the_line_said",
    "verdict",
]

#: The median, over the 8 deployments that recorded their acceptance when it was first measured (at d6d6c12), of the
#: mean absolute error of the speedup at the load, uncalibrated (engine preset as shipped, acceptance from the record),
#: whole sources held out: column (a) of ``benchmarks/validate_corpus.py`` run at db2a284 (2026-12-07), whose model is
#: main's at 944b3f9 (db2a284 changes error messages only); its output is docs/reports/2026-12-07-corpus-944b3f9.txt
#: (per deployment 3.8% to 10.3%; median of 6.2% and 7.8%).  It was 6.85% at d6d6c12 (the median of 6.7% and 7.0%,
#: docs/reports/2026-12-06-corpus-d6d6c12.txt).  h100-qwen2.5-7b-ngram, added to the corpus at aea167d, is not among
#: the 8 (85.8% there: vLLM release assumed, prompt length estimated, its source.yaml says); with it the median of 9 is
#: 7.8%.
CORPUS_SPEEDUP_ERROR = 0.070
#: Where :data:`CORPUS_SPEEDUP_ERROR` comes from, in the words the answers print.
CORPUS_SPEEDUP_ERROR_SOURCE = (
    "the corpus, uncalibrated: the median of 8 public deployments' mean absolute speedup error, whole sources held out "
    "(benchmarks/validate_corpus.py column (a) at 944b3f9's model, 2026-12-07; docs/reports/2026-12-07-corpus-944b3f9.txt)"
)
#: How close to the error a gain is on the line (0.001: 0.1 percentage point), where the verdict cannot be told from
#: its neighbour's: the error is an estimate known no closer (at d6d6c12 it was the median of 6.7% and 7.0%, 0.15 pp
#: either side of it; now of 6.2% and 7.8%, 0.8 pp either side, so this resolution is narrower than the estimate's
#: spread).  A schedule takes a run of batch sizes or loads on the line with the verdict of the ranges either side of
#: it (:func:`specsim.answers.schedule.schedule_answer`), so that it does not flip for a gain 0.05 pp under the error
#: between two just over it.
VERDICT_RESOLUTION = 0.001
#: The verdicts, as --json carries them.
VERDICTS = ("speculate", "do not speculate", "too close to call")


@dataclass(frozen=True, slots=True)
class ModelError:
    """The relative error of a speedup an answer carries (``share``: 0.0685 is +-6.85%), where it comes from
    (``basis``) and a short name for the table (``short``)."""

    share: float
    basis: str
    short: str

    def record(self) -> dict:
        """What --json carries of it."""
        return {"share": self.share, "basis": self.basis}

    @property
    def shown(self) -> str:
        """The share as the answers print it, to the precision it is judged at (a gain of 6.87% clears 6.85%, which
        ``±6.9%`` would not say).

        >>> ModelError(0.0685, "where", "corpus").shown
        '±6.85%'
        """
        return f"±{self.share:.2%}"

    def said(self, rtol: bool = True) -> str:
        """The line under an answer's table: the threshold of its verdicts and where it comes from, and how it stands
        to rtol (``--rtol`` on the command line) where the answer has it (``rtol``).

        >>> print(ModelError(0.0685, "where", "corpus").said())
        verdicts: a gain within ±6.85% is too close to call, specsim's measured error of a speedup: where (rtol picks the gamma; this judges its gain)
        >>> print(ModelError(0.0685, "where", "corpus").said(rtol=False))
        verdicts: a gain within ±6.85% is too close to call, specsim's measured error of a speedup: where
        """
        return (
            f"verdicts: a gain within {self.shown} is too close to call, specsim's measured error of a speedup: "
            f"{self.basis}" + (f" ({given_as('rtol')} picks the gamma; this judges its gain)" if rtol else "")
        )


def judged_at(dep, acceptance: object, label: str):
    """``dep`` for an answer at ``acceptance`` (``label``: what the answer prints of it): with its calibration's
    held-out error set aside where that error is of another acceptance, its runs' own
    (:meth:`specsim.engines.base.EnginePreset.judged_at` decides it); ``dep`` itself otherwise.  Every answer that takes
    an acceptance calls it, so that a library caller's verdicts fall back to the corpus's error as the command line's
    do with ``--alpha`` beside ``--calibration``."""
    engine = dep.engine.judged_at(acceptance, f"{label}, the acceptance this answer takes")
    return dep if engine is dep.engine else dataclasses.replace(dep, engine=engine)


def model_error(dep) -> ModelError:
    """The error of the speedups ``dep``'s answers give: its calibration's held-out error where it keeps one (the
    ``held_out_error`` of its :class:`~specsim.engines.base.EnginePreset`), else the corpus's, with why not the
    calibration's where one was given (in the basis and the short name both: a calibrated answer judged by the corpus's
    error is not an uncalibrated one).

    >>> from specsim.speculation.deployment import Deployment
    >>> model_error(Deployment.build("h100-sxm", "llama-3.1-8b", "llama-3.2-1b")).short
    'corpus, uncalibrated'
    >>> import dataclasses
    >>> dep = Deployment.build("h100-sxm", "llama-3.1-8b", "llama-3.2-1b")
    >>> why = "c.yaml's held-out error is of its runs' own acceptance, not alpha 0.8"
    >>> aside = dataclasses.replace(dep.engine, held_out_error=(None, why))
    >>> model_error(dataclasses.replace(dep, engine=aside)).short
    "corpus: c.yaml's held-out error is of its runs' own acceptance, not alpha 0.8"
    """
    held = getattr(dep.engine, "held_out_error", None)
    if held is not None and held[0] is not None:
        return ModelError(float(held[0]), str(held[1]), f"{dep.engine.calibration_file} held out")
    if held is None:
        return ModelError(CORPUS_SPEEDUP_ERROR, CORPUS_SPEEDUP_ERROR_SOURCE, "corpus, uncalibrated")
    # A calibrated answer whose calibration's error was set aside: the band is the corpus's, and its short name says
    # why, not "uncalibrated", which read as though the answer (a watch's calibrated break-even) were (a review).
    return ModelError(CORPUS_SPEEDUP_ERROR, f"{held[1]}: {CORPUS_SPEEDUP_ERROR_SOURCE}", f"corpus: {held[1]}")


def verdict(gain: float, error: ModelError, picked: bool) -> str:
    """One of :data:`VERDICTS`: "too close to call" where the relative gain ``gain`` (speedup - 1) of the speculating
    gamma weighed is inside ``error`` (|gain| <= error.share); else "speculate" where a speculating gamma was
    ``picked``, "do not speculate" where plain decoding was.

    >>> e = ModelError(0.07, "test", "test")
    >>> verdict(0.005, e, True), verdict(0.30, e, True), verdict(-0.02, e, False), verdict(-0.2, e, False)
    ('too close to call', 'speculate', 'too close to call', 'do not speculate')
    """
    if abs(gain) <= error.share:
        return VERDICTS[2]
    return VERDICTS[0] if picked else VERDICTS[1]


def on_the_line(gain: float, error: ModelError) -> bool:
    """Whether the relative gain ``gain`` lies within :data:`VERDICT_RESOLUTION` of ``error`` either side of 0, where
    its :func:`verdict` could as well be the other.

    >>> e = ModelError(0.0685, "test", "test")
    >>> on_the_line(0.0676, e), on_the_line(0.0694, e), on_the_line(0.0670, e), on_the_line(-0.069, e)
    (True, True, False, True)
    """
    return abs(abs(gain) - error.share) <= VERDICT_RESOLUTION + 1e-12


def line_said(error: ModelError) -> str:
    """How a gain on the line (:func:`on_the_line`) is said, by every answer that says it (schedule's notes,
    optimal-gamma's recommendations).

    >>> print(line_said(ModelError(0.0685, "b", "corpus, uncalibrated")))
    within 0.1 percentage point of specsim's measured error of ±6.85% (corpus, uncalibrated), which is known no closer: on the line
    """
    return (
        f"within {VERDICT_RESOLUTION * 100:g} percentage point of specsim's measured error of {error.shown} "
        f"({error.short}), which is known no closer: on the line"
    )


def on_the_line_said(gain: float, error: ModelError, picked: bool) -> str:
    """What a recommendation adds where the relative gain ``gain`` it weighs is :func:`on_the_line`: that, in
    :func:`line_said`'s words, and the verdict on the other side of the line, which it could as well be ("" where the
    gain is not on the line).  ``picked``: whether a speculating gamma was picked, as :func:`verdict` takes it.

    >>> e = ModelError(0.0685, "b", "corpus")
    >>> print(on_the_line_said(0.068, e, True))
    ; its gain is within 0.1 percentage point of specsim's measured error of ±6.85% (corpus), which is known no closer: on the line, speculate as well
    >>> on_the_line_said(0.05, e, True)
    ''
    """
    if not on_the_line(gain, error):
        return ""
    other = VERDICTS[2] if verdict(gain, error, picked) != VERDICTS[2] else VERDICTS[0 if picked else 1]
    return f"; its gain is {line_said(error)}, {other} as well"


def too_close_said(weighed: str, change: str, error: ModelError) -> str:
    """The words of "too close to call" for a user to act on: the gain of the speculation ``weighed`` ("gamma=1", a
    tree) (``change``, as printed: "+0.5% output tok/s"), the error it is inside, where that comes from in short, and
    what to do.

    >>> e = ModelError(0.0685, "b", "corpus, uncalibrated")
    >>> print(too_close_said("gamma=1", "+0.5% output tok/s", e).split("; ")[0])
    too close to call: gamma=1 gives +0.5% output tok/s, inside specsim's measured error of ±6.85% (corpus, uncalibrated)
    """
    return (
        f"too close to call: {weighed} gives {change}, inside specsim's measured error of {error.shown} "
        f"({error.short}); measure both arms (specsim bench-plan)"
    )
