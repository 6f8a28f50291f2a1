"""The permutation distribution of a studentized statistic: p-values, and the interval that inverts them.

A test here compares the observed studentized statistic ``t = (estimate - theta0) / se`` with its
permutation distribution (every permutation, or the probabilities of an exact law, or Monte Carlo
draws). The interval is the set of effects ``theta0`` the same test does not reject:

    {theta0 : P*(t* >= (estimate - theta0) / se) > alpha / 2  and  P*(t* <= (estimate - theta0) / se) > alpha / 2}

which is ``[estimate - se * x_hi, estimate - se * x_lo]`` for two points ``x_lo <= x_hi`` of the
permutation distribution. It uses the permutation distribution of the studentized statistic as the
reference law of the pivot ``(estimate - theta) / se``: that distribution tends to the pivot's
standard normal whatever the arms' variances (Janssen 1997; Chung & Romano 2013; DiCiccio & Romano
2017), so the interval covers where a bootstrap over few tasks does not, and, being built from the
very numbers the p-value counts, it excludes 0 exactly when the two-sided p-value is at most
``alpha = 1 - confidence_level``.

References
----------
- Janssen, A. (1997). Studentized permutation tests for non-i.i.d. hypotheses and the generalized
  Behrens-Fisher problem. *Statistics & Probability Letters* 36:9-21.
- Chung, E. & Romano, J. P. (2013). Exact and asymptotically robust permutation tests. *Annals of
  Statistics* 41:484-507.
- DiCiccio, C. J. & Romano, J. P. (2017). Robust permutation tests for correlation and regression
  coefficients. *JASA* 112:1211-1220.
- Phipson, B. & Smyth, G. K. (2010). Permutation p-values should never be zero (Monte Carlo
  p-values add one to the count and to the number of draws).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from agentab.stats._resampling import combine_tails

__all__ = ["NullDistribution", "ShiftNull", "studentize", "alpha_of", "T_TOLERANCE"]

#: Two studentized values closer than this (relative to max(1, |t|)) are the same value: the same
#: permutation statistic reached through sums in another order differs in the last bits.
T_TOLERANCE = 1e-9


def studentize(effect: np.ndarray, se: np.ndarray) -> np.ndarray:
    """``effect / se``; 0 where both are 0 (no evidence either way), +-inf where only ``se`` is 0."""
    effect = np.asarray(effect, dtype=float)
    se = np.asarray(se, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = effect / se
    t = np.where((se == 0) & (effect == 0), 0.0, t)
    return np.where(np.isnan(t), 0.0, t)


@dataclass(frozen=True)
class NullDistribution:
    """Distinct values of a studentized permutation statistic with their weights.

    Attributes
    ----------
    values : numpy.ndarray
        Sorted distinct values (``-inf`` and ``inf`` allowed).
    weights : numpy.ndarray
        Their probabilities (an exact law) or counts (Monte Carlo draws).
    exact : bool
        Exact (no Monte Carlo correction) or drawn (one added to the count and the total).
    size : float
        Permutations enumerated or drawn (``inf`` for an exact law too large to count).
    atol : float
        An absolute tie tolerance on the t scale besides the relative :data:`T_TOLERANCE`: the rounding
        error of values far from 0 relative to their spread (``1e-12 * max|value| / se``).
    """

    values: np.ndarray
    weights: np.ndarray
    exact: bool
    size: float
    atol: float = 0.0

    @classmethod
    def from_values(
        cls, t: np.ndarray, weights: np.ndarray | None = None, *, exact: bool, size: float | None = None, atol: float = 0.0
    ) -> NullDistribution:
        """Group ``t`` (one value per permutation, or per point of an exact law with ``weights``) into distinct values."""
        t = np.asarray(t, dtype=float).ravel()
        w = np.ones(len(t)) if weights is None else np.asarray(weights, dtype=float).ravel()
        order = np.argsort(t, kind="stable")
        t, w = t[order], w[order]
        finite = np.isfinite(t)
        gap = np.ones(len(t), dtype=bool)
        if len(t) > 1:
            with np.errstate(invalid="ignore"):  # inf - inf between repeated infinite values
                step = np.diff(t)
            scale = np.maximum(1.0, np.abs(t[1:]))
            same = finite[1:] & finite[:-1] & (step <= np.maximum(T_TOLERANCE * scale, atol))
            same |= ~finite[1:] & ~finite[:-1] & (t[1:] == t[:-1])
            gap[1:] = ~same
        group = np.cumsum(gap) - 1
        values = t[gap]
        totals = np.bincount(group, weights=w, minlength=len(values))
        keep = totals > 0
        return cls(values[keep], totals[keep], exact, float(len(t) if size is None else size), float(atol))

    # ------------------------------------------------------------------ #
    def _tails_at(self, *, mid_p: bool) -> tuple[np.ndarray, np.ndarray]:
        """``P*(t* >= values[j])`` and ``P*(t* <= values[j])`` for every distinct value: the one place they are computed."""
        adjust = 0 if self.exact else 1
        total = float(self.weights.sum()) + adjust
        at_least = np.cumsum(self.weights[::-1])[::-1]
        at_most = np.cumsum(self.weights)
        if mid_p:
            at_least = at_least - self.weights / 2
            at_most = at_most - self.weights / 2
        return (at_least + adjust) / total, (at_most + adjust) / total

    def _position(self, tau: float) -> tuple[int, bool]:
        """Index of the first distinct value >= ``tau`` (within tolerance), and whether it equals ``tau``."""
        if np.isnan(tau):
            tau = 0.0
        if np.isinf(tau):
            i = int(np.searchsorted(self.values, tau, side="left"))
            return i, i < len(self.values) and self.values[i] == tau
        tol = max(T_TOLERANCE * max(1.0, abs(tau)), self.atol)
        i = int(np.searchsorted(self.values, tau - tol, side="left"))
        return i, i < len(self.values) and abs(self.values[i] - tau) <= tol

    def tails(self, tau: float, *, mid_p: bool = False) -> tuple[float, float]:
        """``P*(t* >= tau)`` and ``P*(t* <= tau)`` (with mid-p, ties at ``tau`` count half)."""
        at_least, at_most = self._tails_at(mid_p=False)
        i, tied = self._position(tau)
        floor = 0.0 if self.exact else 1.0 / (float(self.weights.sum()) + 1)
        greater = float(at_least[i]) if i < len(at_least) else floor
        less = float(at_most[i]) if tied else (float(at_most[i - 1]) if i > 0 else floor)
        if mid_p and tied:
            mid_least, mid_most = self._tails_at(mid_p=True)
            greater, less = float(mid_least[i]), float(mid_most[i])
        return greater, less

    def pvalue(self, tau: float, alternative: str, *, mid_p: bool = False) -> float:
        """The p-value of the observed studentized statistic ``tau`` (two-sided: twice the smaller tail)."""
        greater, less = self.tails(tau, mid_p=mid_p)
        return float(combine_tails(greater, less, alternative))

    def smallest_pvalue(self, alternative: str, *, mid_p: bool = False) -> float:
        """The smallest p-value any data with this permutation distribution could give."""
        return min(self.pvalue(self.values[-1], alternative, mid_p=mid_p), self.pvalue(self.values[0], alternative, mid_p=mid_p))

    def bounds(self, alpha: float) -> tuple[float, float]:
        """``(x_lo, x_hi)``: the extreme studentized values the two-sided test at ``alpha`` does not reject.

        A value is not rejected when its two-sided p-value is at least ``alpha`` (a decision rejects at
        ``p < alpha``), computed with the same numbers as :meth:`pvalue`; the tails are monotone, so
        the values not rejected form an interval.
        """
        if not self.exact and min(1.0, 2.0 / (float(self.weights.sum()) + 1)) >= alpha:
            return -np.inf, np.inf  # a Monte Carlo tail is never below 1 / (B + 1): nothing can be rejected
        at_least, at_most = self._tails_at(mid_p=False)
        upper = np.flatnonzero(np.minimum(1.0, 2.0 * at_least) >= alpha)
        lower = np.flatnonzero(np.minimum(1.0, 2.0 * at_most) >= alpha)
        if not len(upper) or not len(lower):
            return np.inf, -np.inf
        return float(self.values[lower[0]]), float(self.values[upper[-1]])

    def interval(self, estimate: float, se: float, confidence_level: float) -> tuple[float, float]:
        """The effects the test does not reject: ``[estimate - se * x_hi, estimate - se * x_lo]``.

        An end within the tie rule's tolerance of 0 is 0, so the interval excludes 0 exactly when the
        two-sided :meth:`pvalue` of ``estimate / se`` is below ``alpha = 1 - confidence_level``. With ``se == 0``
        the interval is the estimate itself, or unbounded on a side whose extreme the test accepts.
        """
        if not np.isfinite(estimate) or not se >= 0:
            return np.nan, np.nan
        x_lo, x_hi = self.bounds(alpha_of(confidence_level))
        if x_lo > x_hi:  # nothing accepted (cannot happen: the observed data are one permutation)
            return np.nan, np.nan
        return _bound(estimate, se, x_hi, self.atol), _bound(estimate, se, x_lo, self.atol)


def alpha_of(confidence_level: float) -> float:
    """``1 - confidence_level`` without its rounding error (1 - 0.95 is 0.050000000000000044 in floating point)."""
    return round(1.0 - confidence_level, 12)


def _bound(estimate: float, se: float, x: float, atol: float) -> float:
    """``estimate - se * x``, the end of the interval at the accepted studentized value ``x``.

    The p-value treats a studentized value within :data:`T_TOLERANCE` of ``x`` as ``x`` itself, so an end
    within that tolerance of 0 is 0 (the data's own value then is ``x``, accepted: 0 lies in the interval).
    """
    if np.isinf(x):  # accepting t = +inf leaves the interval open below, t = -inf open above
        return -np.inf if x > 0 else np.inf
    if se == 0:
        return float(estimate)
    value = float(estimate - se * x)
    return 0.0 if abs(value) <= se * max(T_TOLERANCE * max(1.0, abs(x)), atol) else value


@dataclass(frozen=True)
class ShiftNull:
    """The sign-flip distribution of a paired mean difference, for every hypothesised effect at once.

    Testing ``H0: effect = theta`` flips the signs of the shifted task differences ``d - theta``. A
    flip pattern ``s`` gives the mean ``a - theta * k`` with ``a = mean(s * d)`` and ``k = mean(s)``,
    so whether it is at least as large as the observed ``m - theta`` is a step in ``theta`` at
    ``(m - a) / (1 - k)``: both tails are monotone in ``theta``, and the interval of effects not
    rejected is read off the sorted steps (Hartigan 1969; Garthwaite 1996, on inverting permutation
    tests). The t statistic of the shifted differences is an increasing function of their mean under
    sign flips, so this is also the inversion of the studentized sign-flip test. With task weights
    ``u`` (which break ties), ``a`` and ``k`` are the means of ``s * u * d`` and ``s * u``, the
    observed ones ``m`` and ``sign``, and the steps ``(m - a) / (sign - k)``.

    Attributes
    ----------
    mean : float
        The observed mean difference ``m``.
    a, k : numpy.ndarray
        Per flip pattern (or point of the exact law): the flipped mean and the mean sign.
    weights : numpy.ndarray
        Probabilities (exact) or counts (Monte Carlo draws).
    exact : bool
    size : float
        Sign patterns enumerated or drawn.
    scale : float
        Largest absolute task difference (for the tie tolerance).
    sign : float
        The unflipped pattern's mean sign: 1, or the mean task weight when tasks carry weights
        (``a`` and ``k`` are then weighted means; the steps are ``(m - a) / (sign - k)``).
    """

    mean: float
    a: np.ndarray
    k: np.ndarray
    weights: np.ndarray
    exact: bool
    size: float
    scale: float
    sign: float = 1.0

    def _steps(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, float, float]:
        """The steps of both tails, sorted the way each tail grows, with their cumulative weights.

        Returns ``(up, up_at, cum_up, down, down_at, cum_down, fixed, total)``: the upper tail at ``theta``
        counts the patterns with ``up <= theta`` (``up`` ascending), the lower tail those with
        ``down >= theta`` (``down`` descending); ``up``/``down`` carry the tie tolerance, ``*_at`` are the
        same steps without it (where a flipped mean within the tolerance of the observed one is a tie, its
        step exactly 0): the values an interval reports. ``cum_*`` include ``fixed``, the weight always
        counted (the unflipped pattern, and the Monte Carlo one). Every tail and bound is read from these
        arrays only.
        """
        gamma = 1e-10 * (self.scale if self.scale > 0 else 1.0)
        moving = self.k < self.sign * (1 - 1e-12)
        w = self.weights[moving]
        fixed = float(self.weights[~moving].sum()) + (0 if self.exact else 1)
        total = float(self.weights.sum()) + (0 if self.exact else 1)
        gap = self.mean - self.a[moving]
        spread = self.sign - self.k[moving]
        up = (gap - gamma) / spread
        down = (gap + gamma) / spread
        at = np.where(np.abs(gap) <= gamma, 0.0, gap) / spread
        order_up = np.argsort(up, kind="stable")
        order_down = np.argsort(-down, kind="stable")
        return (
            up[order_up], at[order_up], fixed + np.cumsum(w[order_up]),
            down[order_down], at[order_down], fixed + np.cumsum(w[order_down]),
            fixed, total,
        )

    def tails(self, theta: float = 0.0) -> tuple[float, float]:
        """``P*(mean of flipped (d - theta) >= m - theta)`` and ``P*(... <= m - theta)``."""
        up, _, cum_up, down, _, cum_down, fixed, total = self._steps()
        j = int(np.searchsorted(up, theta, side="right"))  # steps with up <= theta
        i = int(np.searchsorted(-down, -theta, side="right"))  # steps with down >= theta
        return (cum_up[j - 1] if j else fixed) / total, (cum_down[i - 1] if i else fixed) / total

    def pvalue(self, alternative: str, *, mid_p: bool = False) -> float:
        """The p-value of ``H0: effect = 0`` (with mid-p, patterns tied with the data count half)."""
        greater, less = self.tails(0.0)
        if mid_p:
            gamma = 1e-10 * (self.scale if self.scale > 0 else 1.0)
            tied = float(self.weights[np.abs(self.a - self.mean) <= gamma].sum()) + (0 if self.exact else 1)
            total = float(self.weights.sum()) + (0 if self.exact else 1)
            greater, less = greater - tied / (2 * total), less - tied / (2 * total)
        return float(combine_tails(greater, less, alternative))

    def smallest_pvalue(self, alternative: str) -> float:
        """The p-value of the most extreme flip pattern: the smallest any data with these |differences| give."""
        tol = 1e-10 * max(self.scale, 1e-300)
        top, bottom = float(self.a.max()), float(self.a.min())
        adjust = 0 if self.exact else 1
        total = float(self.weights.sum()) + adjust
        greater = (float(self.weights[self.a >= top - tol].sum()) + adjust) / total
        less = (float(self.weights[self.a <= bottom + tol].sum()) + adjust) / total
        return float(combine_tails(greater, less, alternative))

    def interval(self, confidence_level: float) -> tuple[float, float]:
        """The effects ``theta`` whose two-sided sign-flip p-value is at least ``alpha = 1 - confidence_level``.

        Read from the same arrays as :meth:`tails`, so it excludes 0 exactly when the two-sided
        p-value at 0 is below alpha (a decision rejects at ``p < alpha``).
        """
        alpha = alpha_of(confidence_level)
        _, up_at, cum_up, _, down_at, cum_down, fixed, total = self._steps()
        if min(1.0, 2.0 * fixed / total) >= alpha:  # too few patterns: nothing can be rejected
            return -np.inf, np.inf
        ok_up = np.flatnonzero(np.minimum(1.0, 2.0 * (cum_up / total)) >= alpha)
        ok_down = np.flatnonzero(np.minimum(1.0, 2.0 * (cum_down / total)) >= alpha)
        # The bound is the step of the first pattern accepted, reported without the tie tolerance: a step
        # within it of 0 is 0 itself (0 then lies in the interval, as the p-value at 0 counts the tie).
        low = float(up_at[ok_up[0]]) if len(ok_up) else np.nan
        high = float(down_at[ok_down[0]]) if len(ok_down) else np.nan
        return low, high
