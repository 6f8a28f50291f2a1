"""The arguments of a power question, checked once for :mod:`~agentab.power.formulas` and
:mod:`~agentab.power.planning`.

- :class:`Question` -- a validated :func:`~agentab.power.sample_size` / :func:`~agentab.power.power` /
  :func:`~agentab.power.mde` question;
- :func:`check_question` -- builds it (the shared settings through :mod:`agentab._checks`, the baseline
  and the effect per kind here);
- :func:`check_effect` -- the effect on its kind's scale (plans use it too);
- :func:`check_untied` -- refuses a quantile that sits on a tied value (plans and formulas alike);
- :data:`METHODS` -- the methods of each kind, the first the default.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np

from agentab._checks import (
    check_alpha,
    check_alternative,
    check_kind,
    check_number,
    check_probability,
    check_whole,
)
from agentab.errors import PowerError
from agentab.stats import power as core

__all__ = ["MAX_EFFECT", "METHODS", "TIED_SHARE", "Question", "check_effect", "check_question", "check_shares", "check_untied"]

#: The methods of each kind (``method=None`` takes the first).
METHODS = MappingProxyType({
    "binary": ("arcsine", "simulation"),
    "ordinal": ("whitehead", "noether", "simulation"),
    "continuous": ("t",),
    "cost": ("asymptotic", "simulation"),
    "count": ("asymptotic", "simulation"),
})
#: Share of runs at one value above which a quantile is a tied (step) value.
TIED_SHARE = 0.05
#: Fewest pilot runs from which a quantile's density is estimated.
MIN_SAMPLE = 20


@dataclass(frozen=True)
class Question:
    """A validated power question (one per call); ``alternative`` in scipy's words."""

    kind: str
    effect: Any  # float, or candidate shares for ordinal
    baseline: Any  # float (binary), shares (ordinal), sorted sample (cost), None
    alpha: float
    seeds: int
    icc: float
    alternative: str
    method: str
    quantile: float
    notes: tuple[str, ...] = ()

    @property
    def design_effect(self) -> float:
        return 1.0 + (self.seeds - 1) * self.icc


def check_shares(shares: Any, name: str, one_level: bool = False) -> np.ndarray:
    """Level shares (worst level first): at least two, non-negative, summing to 1, on two levels or more."""
    try:
        p = np.asarray(shares, dtype=float)
    except (TypeError, ValueError):
        raise PowerError(f"{name} must be level shares (numbers summing to 1), got {shares!r}") from None
    if p.ndim != 1 or len(p) < 2:
        raise PowerError(f"{name} must list the shares of at least two levels, got {shares!r}")
    if not np.all(np.isfinite(p)) or np.any(p < 0):
        raise PowerError(f"{name} must be non-negative shares, got {shares!r}")
    if abs(p.sum() - 1.0) > 1e-6:
        raise PowerError(f"{name} must sum to 1, got {p.sum():.6g}")
    if np.count_nonzero(p) < 2 and not one_level:
        raise PowerError(f"{name} puts every run on one level: no ordinal effect can be seen")
    return p / p.sum()


def check_untied(kind: str, q: float, value: float, share: float, what: str) -> None:
    """Refuse a quantile that sits on a value shared by many runs (or on 0): it moves in steps, not by density."""
    if value <= 0 or share >= TIED_SHARE:
        raise PowerError(
            f"the {what}'s p{q * 100:g} of {kind} is {value:g}, the value of {share:.0%} of its runs: a tied quantile "
            "(or one at 0) moves in whole steps, not by a relative change, and the density-based plan does not apply; "
            "plan another quantile, or the mean with kind='continuous'"
        )


def _pilot_sample(kind: str, baseline: Any, quantile: float) -> tuple[np.ndarray, list[str]]:
    """A cost or count baseline: the sorted pilot sample, and a note when it is too small to trust its density."""
    if baseline is None:
        raise PowerError(f"{kind}: give baseline=, a pilot sample of the metric (one value per run)")
    try:
        sample = np.asarray(baseline, dtype=float).ravel()
    except (TypeError, ValueError):
        raise PowerError(f"{kind}: baseline must be a pilot sample of numbers (one per run), got {baseline!r:.80}") from None
    if not np.all(np.isfinite(sample)):
        raise PowerError(f"{kind}: the baseline sample has {int(np.sum(~np.isfinite(sample)))} missing or infinite values")
    if len(sample) < MIN_SAMPLE:
        raise PowerError(f"{kind}: the baseline sample has {len(sample)} runs; at least {MIN_SAMPLE} are needed to "
                         "estimate a quantile's density")
    if np.any(sample < 0):
        raise PowerError(f"{kind}: the baseline sample has negative values; cost and counts are >= 0")
    sample = np.sort(sample)
    check_untied(kind, quantile, *core.quantile_tie(sample, quantile), "baseline sample")
    notes = []
    if len(sample) < 200:
        notes.append(
            f"the density at the p{quantile * 100:g} of {len(sample)} runs is uncertain (the answer can be off by a "
            "factor of 2 or more); agentab.power.plan reads a pilot's tasks and all its runs"
        )
    return sample, notes


def _baseline(kind: str, baseline: Any, quantile: float) -> tuple[Any, list[str]]:
    """The baseline on its kind's terms (see :mod:`agentab.power.formulas`), and notes on it."""
    if kind == "binary":
        if baseline is None:
            raise PowerError("binary: give baseline=, the baseline success rate")
        return check_probability(baseline, "baseline", PowerError), []
    if kind == "ordinal":
        if baseline is None:
            raise PowerError("ordinal: give baseline=, the baseline's level shares (worst level first)")
        return check_shares(baseline, "baseline"), []
    if kind == "continuous":
        if baseline is not None:
            raise PowerError("continuous: effect is Cohen's d, so baseline= is not used; leave it out")
        return None, []
    return _pilot_sample(kind, baseline, quantile)


def check_question(
    kind: Any,
    effect: Any,
    baseline: Any,
    alpha: Any,
    seeds_per_task: Any,
    icc: Any,
    alternative: Any,
    method: Any,
    quantile: Any,
    *,
    effect_needed: bool = True,
) -> Question:
    """Validate the arguments shared by :func:`sample_size`, :func:`power` and :func:`mde`."""
    kind = check_kind(kind, PowerError)
    alpha = check_alpha(alpha, PowerError)
    seeds = check_whole(seeds_per_task, "seeds_per_task", 1, PowerError)
    icc = check_number(icc, "icc", PowerError)
    if not 0.0 <= icc <= 1.0:
        raise PowerError(f"icc must be in [0, 1], got {icc:g}")
    alternative = check_alternative(alternative, PowerError)
    methods = METHODS[kind]
    method = methods[0] if method is None else method
    if method not in methods:
        raise PowerError(f"method for {kind} must be one of {', '.join(methods)}, got {method!r}")
    quantile = check_probability(quantile, "quantile", PowerError)
    baseline, notes = _baseline(kind, baseline, quantile)
    if effect_needed:
        effect = check_effect(kind, effect, baseline)
    return Question(kind, effect, baseline, alpha, seeds, icc, alternative, method, quantile, tuple(notes))


#: Largest Cohen's d or relative change a plan sizes (a d of 1e6 is a million standard deviations).
MAX_EFFECT = 1e6


def check_effect(kind: str, effect: Any, baseline: Any) -> Any:
    """The effect to detect, on ``kind``'s scale (``baseline`` None: not checked against one)."""
    if kind == "ordinal" and np.ndim(effect) == 1:
        cand = check_shares(effect, "effect (candidate shares)", one_level=True)
        if len(cand) != len(baseline):
            raise PowerError(f"effect has {len(cand)} level shares, baseline {len(baseline)}")
        if abs(float(core.cliff_delta(baseline, cand))) < 1e-12:
            raise PowerError("effect: the candidate shares are no better or worse than the baseline (Cliff's delta 0)")
        return cand
    effect = check_number(effect, "effect", PowerError)
    if kind == "binary":
        if effect == 0 or abs(effect) >= 1:
            raise PowerError(
                f"effect must not be zero (it is the change in success rate to detect, non-zero and within (-1, 1)), "
                f"got {effect:g}"
            )
        if baseline is not None and not 0.0 <= baseline + effect <= 1.0:
            raise PowerError(f"baseline {baseline:g} + effect {effect:g} is not a success rate in [0, 1]")
    elif kind == "ordinal":
        if effect <= 0 or effect == 1:
            raise PowerError(f"effect for ordinal is an odds ratio > 0 and != 1, got {effect:g}")
    elif kind == "continuous":
        if effect == 0:
            raise PowerError("effect must not be zero (it is Cohen's d to detect)")
    elif effect == 0 or effect <= -1:
        raise PowerError(f"effect for {kind} is a relative change of the quantile, > -1 and != 0 (e.g. -0.2), got {effect:g}")
    if kind != "ordinal" and abs(effect) > MAX_EFFECT:  # its square overflows float64 long before 1e308
        what = "Cohen's d" if kind == "continuous" else "a relative change"
        raise PowerError(f"effect {effect:g} is beyond +-{MAX_EFFECT:g} ({what}): any design detects it; "
                         "plan for the smallest effect that matters")
    return effect
