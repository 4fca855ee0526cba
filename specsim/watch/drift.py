"""Has acceptance dropped?  A CUSUM change-point test on the windows' acceptance lengths, with its false-alarm rate.

The first ``reference`` usable windows (after a start, a restart, a change of draft length or a flagged drop) set the
reference: the acceptance length ``mu0`` over their drafts, the variance ``v`` of one draft's accepted tokens, and the
overdispersion ``phi`` between windows (Pearson's statistic over the reference windows: drafts of one request, and
requests of one kind of traffic, are not independent, so a window's mean varies more than ``v / n``; at least 1).  A
window of ``n`` drafts then has the standard deviation ``sigma = sqrt(phi v / n)``; a window read from a gauge only
(no draft count) has the reference windows' own standard deviation.

Each later window adds the log-likelihood ratio of a drop of ``delta`` (``min_drop`` of ``mu0``) against none, for a
normal mean of known spread, to Page's CUSUM, ``S = max(0, S + (delta / sigma^2)(mu0 - x - delta / 2))``; the test
flags a drop when ``S`` reaches ``h = ln(1 / false_alarm)``.  Lorden's bound for this test: without a change, the mean
number of windows before a false alarm is at least ``e^h = 1 / false_alarm`` (the rate stated, and held by
tests/test_watch.py on drift-free replays).  A drop of ``delta`` adds ``delta^2 / (2 sigma^2)`` a window on average,
so it is flagged within a number of windows stated for 9 cases in 10, plus the window it starts in
(:meth:`DropDetector.windows_to_flag`).
The change is placed after the last window at which ``S`` was 0, and the acceptance since then is the drafts' mean
over those windows.  After a flag the test sets a new reference from the windows that follow.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = [
    "DEFAULT_FALSE_ALARM",
    "DEFAULT_MIN_DROP",
    "DEFAULT_REFERENCE",
    "DRAFT_LENGTH_TOLERANCE",
    "FLAG_PROBABILITY",
    "PHI_QUANTILE",
    "Drop",
    "DropDetector",
]

#: One false alarm per this many windows at most, on average (Lorden's bound): h = ln 1000 = 6.91.
DEFAULT_FALSE_ALARM = 1e-3
#: The smallest drop worth a flag, as a share of the reference acceptance length: a 5% shorter acceptance length
#: makes a round emit 5% fewer tokens, and the speedup about 5% smaller (specsim's default, an assumption).
DEFAULT_MIN_DROP = 0.05
#: Windows that set a reference (and the overdispersion between windows).
DEFAULT_REFERENCE = 10
#: The overdispersion (or a gauge's spread) is taken at the upper end of its 90% one-sided interval over the reference
#: windows: ten windows estimate a variance to within a factor of about 2, and a reference that happens to vary little
#: would otherwise make the test jumpy (on drift-free replays the plain estimate gave 1.3 false alarms per 1,000 windows
#: against the 1 stated).
PHI_QUANTILE = 0.10
#: A window whose draft length (drafted tokens per draft) moved from the reference's by more than this share of the
#: smallest drop starts a new reference: a per-batch-size schedule drafts fewer tokens at a higher load, and the
#: acceptance length falls with the draft length while the drafter's acceptance has not moved (2.18 to 1.95 at alpha
#: 0.6 from 3 drafted tokens to 2). A drafted token more adds at most one accepted, so a move within this shifts the
#: acceptance length by at most this share of the smallest drop, which leaves the CUSUM's mean run without a change at
#: (1 / false_alarm)^(1 - 2 x 0.05) windows or more (the exponent of a normal CUSUM's run length, 1 - 2 shift / delta).
DRAFT_LENGTH_TOLERANCE = 0.05
#: The stated windows to flag a drop of the smallest size: flagged within them in this share of cases or more (a normal
#: approximation of the CUSUM's sum of log-likelihood ratios).
FLAG_PROBABILITY = 0.9


@dataclass(frozen=True)
class Drop:
    """A flagged drop: the acceptance length fell from ``before`` to ``after`` from window ``since`` on."""

    flagged: int  #: the window whose counts reached the threshold
    since: int  #: the first window after the change
    before: float
    after: float
    statistic: float  #: the CUSUM when flagged (or the two-sample z of a change inside the reference)
    test: str = "CUSUM"

    def to_dict(self) -> dict:
        return {
            "flagged": self.flagged,
            "since": self.since,
            "before": self.before,
            "after": self.after,
            "statistic": self.statistic,
            "test": self.test,
        }


class DropDetector:
    """Page's CUSUM for a drop of the acceptance length (the module's docstring)."""

    def __init__(
        self,
        min_drop: float = DEFAULT_MIN_DROP,
        false_alarm: float = DEFAULT_FALSE_ALARM,
        reference: int = DEFAULT_REFERENCE,
    ):
        if not 0.0 < min_drop < 1.0:
            raise ValueError(f"the smallest drop must be a share in (0, 1), got {min_drop!r}")
        if not 0.0 < false_alarm < 1.0:
            raise ValueError(f"the false-alarm rate must be in (0, 1), got {false_alarm!r}")
        if int(reference) < 3:
            raise ValueError(
                f"a reference needs at least 3 windows (an overdispersion needs 2 degrees of freedom), got {reference!r}"
            )
        self.min_drop, self.false_alarm, self.reference = float(min_drop), float(false_alarm), int(reference)
        self.h = math.log(1.0 / self.false_alarm)
        #: The overdispersion the last reference measured, kept through a restart (a flagged drop, a new draft length,
        #: an engine restart): how this traffic's windows vary beyond their drafts' noise, for the windows that gather
        #: the next reference (:func:`specsim.watch.judge.window_sd`).  None until a counted reference is set.
        self.measured_phi: float | None = None
        self._restart(None)

    def _restart(self, gamma, draft_length=None) -> None:
        self._buffer: list = []  # (index, x, n, v) of reference windows
        self.gamma, self.draft_length = gamma, draft_length
        self.moved = None  # (from, to) where the window just added moved the draft length and restarted the test
        self.mu0 = self.v0 = self.phi = self.gauge_sd = None
        self.cusum = 0.0
        self._since_zero: list = []  # (index, x, n) since the CUSUM was last 0

    @property
    def collected(self) -> int:
        """Usable windows gathered toward the reference since the last restart (it is set at :attr:`reference`)."""
        return len(self._buffer)

    @property
    def ready(self) -> bool:
        return self.mu0 is not None

    @property
    def delta(self) -> float | None:
        return None if self.mu0 is None else self.min_drop * self.mu0

    def sd(self, drafts: float | None) -> float | None:
        """The standard deviation of a window's acceptance length over ``drafts`` drafts (None before a reference)."""
        if not self.ready:
            return None
        if drafts is None or self.v0 is None:
            return self.gauge_sd
        return math.sqrt(self.phi * self.v0 / max(drafts, 1.0))

    def windows_to_flag(self, drafts: float | None) -> int | None:
        """Windows of ``drafts`` drafts within which a drop of exactly the smallest size is flagged in
        :data:`FLAG_PROBABILITY` of cases: the fewest k whose summed log-likelihood ratios, mean k m and variance 2 k m
        for m = delta^2 / (2 sigma^2) a window, reach h at that probability; plus the window the drop starts in."""
        from scipy.special import ndtri

        sd = self.sd(drafts)
        if sd is None or sd <= 0:
            return None if sd is None else 1
        m = self.delta**2 / (2.0 * sd**2)
        z = float(ndtri(FLAG_PROBABILITY))  # the normal quantile (scipy.stats.norm.ppf's _ppf)
        k = 1
        while k * m - z * math.sqrt(2.0 * k * m) < self.h:
            k += 1
        return k + 1

    def reset(self, reason_gamma=None) -> None:
        """Start a new reference (an engine restart, a new draft length)."""
        self._restart(reason_gamma)

    def update(self, index: int, window) -> Drop | None:
        """Add a usable window; a :class:`Drop` where it flags one."""
        x, n = window.acceptance_length, window.drafts
        if x is None:
            return None
        if window.gamma != self.gamma and self.gamma is not None:
            self._restart(window.gamma)
        self.gamma, self.moved = window.gamma, None
        length = getattr(window, "draft_length", None)
        if length is not None and self.draft_length is not None:
            if abs(length - self.draft_length) > DRAFT_LENGTH_TOLERANCE * self.min_drop * (self.mu0 or x):
                moved = (self.draft_length, length)
                self._restart(window.gamma, length)
                self.moved = moved
        elif length is not None:
            self.draft_length = length
        v = window.draft_variance() if n else None
        if not self.ready:
            self._buffer.append((index, x, n, v))
            if len(self._buffer) >= self.reference:
                return self._set_reference()
            return None
        sd = self.sd(n)
        if sd is None or sd <= 0:
            return None
        llr = (self.delta / sd**2) * (self.mu0 - x - self.delta / 2.0)
        self.cusum = max(0.0, self.cusum + llr)
        if self.cusum == 0.0:
            self._since_zero = []
            return None
        self._since_zero.append((index, x, n, v))
        if self.cusum < self.h:
            return None
        since = self._since_zero[0][0]
        xs = np.array([s[1] for s in self._since_zero])
        ns = np.array([s[2] if s[2] else 1.0 for s in self._since_zero])
        drop = Drop(index, since, float(self.mu0), float((xs * ns).sum() / ns.sum()), float(self.cusum))
        self._restart(
            self.gamma, self.draft_length
        )  # the windows after this one set the next reference (the change may straddle earlier ones)
        return drop

    def _set_reference(self) -> Drop | None:
        """Set the reference from the buffered windows, unless they hold a change themselves: then a :class:`Drop`
        where the acceptance fell (the windows after the change start the next reference), nothing where it rose."""
        # scipy.special here, not at import: every command's parser reads this module's defaults (specsim --help paid
        # it).  Not scipy.stats, whose import took 1.2 s of a watch's start for three quantiles (:func:`_chi2_ppf`).
        from scipy.special import betaincinv

        xs = np.array([b[1] for b in self._buffer])
        counted = all(b[2] for b in self._buffer) and all(b[3] is not None for b in self._buffer)
        ns = np.array([b[2] for b in self._buffer], dtype=float) if counted else np.ones(xs.size)
        vs = np.array([b[3] for b in self._buffer], dtype=float) if counted else np.ones(xs.size)
        v = float((vs * ns).sum() / ns.sum())
        # A change inside the windows first, judged on a spread a step cannot inflate: the successive differences
        # q_k = (x_k+1 - x_k)^2 / (v (1/n_k + 1/n_k+1)), each phi chi^2_1 without a change, by their middle order
        # statistic (a step moves one q, not the middle one) at its upper 90% bound (the k-th of m uniforms is
        # Beta(k, m - k + 1)).
        q = np.sort(np.diff(xs) ** 2 / (v * (1.0 / ns[:-1] + 1.0 / ns[1:])))
        k = (q.size + 1) // 2
        robust = float(q[k - 1]) / _chi2_ppf(float(betaincinv(k, q.size - k + 1, PHI_QUANTILE)), 1)
        floor = 1.0 if counted else (1e-6 * float(xs.mean())) ** 2 / v
        changed, drop = self._change_inside(xs, ns, v * max(floor, robust))
        if changed:  # the windows after the change wait for more to make a reference
            return drop
        # No change: the spread from every window's deviation (Pearson's statistic, more efficient), at its upper 90%
        # chi-square bound.
        self.mu0 = float((xs * ns).sum() / ns.sum())
        pearson = float((ns * (xs - self.mu0) ** 2).sum() / v)
        phi = max(floor, pearson / _chi2_ppf(PHI_QUANTILE, xs.size - 1))
        if counted:
            self.v0, self.phi = v, phi
            self.measured_phi = phi
        else:
            self.v0, self.phi, self.gauge_sd = None, None, math.sqrt(phi * v)
        self.reference_windows = (self._buffer[0][0], self._buffer[-1][0])
        self.cusum = 0.0
        self._since_zero = []
        return None

    def _change_inside(self, xs, ns, per_draft) -> tuple[bool, Drop | None]:
        """A change of level inside the buffered windows (they came in one read of history, or the engine changed while
        the reference filled): the split of largest two-sample z over every split with two windows or more a side,
        against the normal quantile of the false-alarm rate over the splits tried.  Found, it is placed, and its levels
        taken, at the split of largest z over every split, one window a side included (detection and location apart:
        a drop in the last window had been dated a window early, the two last windows pooled as its level).  A drop
        of the smallest size or more is returned; after any change the buffer keeps only the windows after it."""
        from scipy.special import ndtri

        if xs.size < 4:
            return False, None
        z = []
        for k in range(1, xs.size):
            n1, n2 = ns[:k].sum(), ns[k:].sum()
            m1, m2 = (xs[:k] * ns[:k]).sum() / n1, (xs[k:] * ns[k:]).sum() / n2
            z.append(((m1 - m2) / math.sqrt(per_draft * (1.0 / n1 + 1.0 / n2)), k, m1, m2))
        tested = z[1:-1]  # two windows or more a side
        limit = -float(ndtri(self.false_alarm / len(tested)))  # the upper normal quantile (norm.isf's _isf)
        if max(abs(t[0]) for t in tested) < limit:
            return False, None
        stat, k, before, after = max(z, key=lambda t: abs(t[0]))
        flagged, since = self._buffer[-1][0], self._buffer[k][0]
        self._buffer = self._buffer[k:]
        if stat > 0 and before - after >= self.min_drop * before:
            return True, Drop(
                flagged, since, float(before), float(after), float(stat), "a change inside the reference windows"
            )
        return True, None

    def describe(self, drafts: float | None = None) -> str:
        """The test in a line: the smallest drop, the false-alarm rate, and how soon a drop is flagged."""
        if not self.ready:
            return (
                f"drift test: a reference of {self.reference} windows first, then a drop of {self.min_drop:.0%} or more "
                f"is flagged with at most one false alarm per {1 / self.false_alarm:,.0f} windows (Lorden's bound)"
            )
        k = self.windows_to_flag(drafts)
        spread = (
            f"overdispersion {self.phi:.1f} between windows"
            if self.phi is not None
            else f"the reference's spread, {self.gauge_sd:.3f}"
        )
        return (
            f"drift test: reference acceptance length {self.mu0:.3f}; a drop to {self.mu0 - self.delta:.3f} or below "
            f"({self.min_drop:.0%}) is flagged within {k} window(s) in {FLAG_PROBABILITY:.0%} of cases, with at most one false alarm per "
            f"{1 / self.false_alarm:,.0f} windows (CUSUM, threshold ln {1 / self.false_alarm:,.0f} = {self.h:.2f}; {spread})"
        )


def _chi2_ppf(q: float, df: int) -> float:
    """The ``q`` quantile of a chi-square of ``df`` degrees of freedom, as ``scipy.stats.chi2.ppf`` computes it (its
    ``_ppf``: twice the inverse of the regularised lower incomplete gamma function), without importing scipy.stats
    (1.2 s, against scipy.special's 0.6 s).  The beta quantile beside it is ``scipy.special.betaincinv``, Boost's
    inverse as ``scipy.stats.beta.ppf`` calls it; the normal's is ``ndtri``, norm.ppf's own.  Each the same bits as
    scipy.stats 1.17's (checked over 1 to 3,000 degrees of freedom and 20,000 normal tail shares).

    >>> round(_chi2_ppf(0.10, 9), 4)  # the lower 10% point of chi-square with 9 degrees of freedom (tables: 4.168)
    4.1682
    """
    from scipy.special import gammaincinv

    return float(2 * gammaincinv(df / 2, q))
