"""The arguments of a power question, checked once for :mod:`~agentab.power.formulas` and
:mod:`~agentab.power.planning`.

- :class:`Question` -- a validated :func:`~agentab.power.sample_size` / :func:`~agentab.power.power` /
  :func:`~agentab.power.mde` question;
- :func:`check_question` -- builds it (the shared settings through :mod:`agentab._checks`, the baseline
  and the effect per kind here);
- :func:`check_effect` -- the effect on its kind's scale (plans use it too);
- :func:`check_design` -- the design and its paired parameter (``correlation``, ``discordant``);
- :func:`check_discordance` -- refuses a binary paired effect its discordance cannot hold;
- :func:`check_untied` -- refuses a quantile that sits on a tied value (plans and formulas alike);
- :data:`METHODS` -- the methods of each kind, the first the default;
- :data:`DESIGNS` -- ``"independent"`` (the default) and ``"paired"`` (the same tasks in both arms).
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

__all__ = ["DESIGNS", "MAX_EFFECT", "METHODS", "PAIRED_METHOD", "check_design", "check_discordance", "TIED_SHARE", "Question", "check_effect", "check_question", "check_shares", "check_untied"]

#: The methods of each kind (``method=None`` takes the first).
METHODS = MappingProxyType({
    "binary": ("arcsine", "simulation"),
    "ordinal": ("whitehead", "noether", "simulation"),
    "continuous": ("t",),
    "cost": ("asymptotic", "simulation"),
    "count": ("asymptotic", "simulation"),
})
#: The designs of :func:`~agentab.power.sample_size` and friends: independent arms, or the same tasks in both.
DESIGNS = ("independent", "paired")
#: The kinds with a paired formula, and the parameter each needs.
PAIRED_PARAMETER = MappingProxyType({"continuous": "correlation", "binary": "discordant"})
#: The one method of each kind's paired design: the paired t-test, McNemar's test (Connor 1987).
PAIRED_METHOD = MappingProxyType({"continuous": "t", "binary": "mcnemar"})
#: Which kind each paired parameter belongs to.
PAIRED_PARAMETER_KIND = MappingProxyType({v: k for k, v in PAIRED_PARAMETER.items()})
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
    design: str = "independent"
    correlation: float | None = None  # continuous, paired: of the arms' task means
    discordant: float | None = None  # binary, paired: share of pairs whose outcomes differ

    @property
    def paired(self) -> bool:
        return self.design == "paired"

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


def _baseline(kind: str, baseline: Any, quantile: float, paired: bool = False) -> tuple[Any, list[str]]:
    """The baseline on its kind's terms (see :mod:`agentab.power.formulas`), and notes on it."""
    if kind == "binary":
        if baseline is None and paired:
            return None, []  # McNemar planning needs only the discordance; a baseline rate only checks it
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
    design: Any = "independent",
    correlation: Any = None,
    discordant: Any = None,
) -> Question:
    """Validate the arguments shared by :func:`sample_size`, :func:`power` and :func:`mde`."""
    kind = check_kind(kind, PowerError)
    alpha = check_alpha(alpha, PowerError)
    seeds = check_whole(seeds_per_task, "seeds_per_task", 1, PowerError)
    icc = check_number(icc, "icc", PowerError)
    if not 0.0 <= icc <= 1.0:
        raise PowerError(f"icc must be in [0, 1], got {icc:g}")
    alternative = check_alternative(alternative, PowerError)
    design, correlation, discordant = check_design(kind, design, correlation, discordant)
    methods = (PAIRED_METHOD[kind],) if design == "paired" else METHODS[kind]
    method = methods[0] if method is None else method
    if method not in methods:
        raise PowerError(f"method for {kind}{' (paired design)' if design == 'paired' else ''} must be one of {', '.join(methods)}, got {method!r}")
    quantile = check_probability(quantile, "quantile", PowerError)
    baseline, notes = _baseline(kind, baseline, quantile, design == "paired")
    if effect_needed:
        effect = check_effect(kind, effect, baseline)
        if discordant is not None:
            check_discordance(effect, discordant, baseline)
    return Question(kind, effect, baseline, alpha, seeds, icc, alternative, method, quantile, tuple(notes),
                    design, correlation, discordant)


def check_design(kind: str, design: Any, correlation: Any, discordant: Any) -> tuple[str, float | None, float | None]:
    """The design and its paired parameter: ``correlation`` (continuous) or ``discordant`` (binary), paired only."""
    if design not in DESIGNS:
        raise PowerError(f"design must be 'independent' or 'paired', got {design!r}")
    given = {"correlation": correlation, "discordant": discordant}
    for name, value in given.items():
        if value is not None and (design != "paired" or PAIRED_PARAMETER.get(kind) != name):
            where = "design='paired'" if design != "paired" else f"kind={PAIRED_PARAMETER_KIND[name]!r}"
            raise PowerError(f"{name}= is for {where} (got kind={kind!r}, design={design!r})")
    if design == "independent":
        return design, None, None
    if kind not in PAIRED_PARAMETER:
        raise PowerError(f"design='paired' has formulas for continuous and binary metrics, not {kind}; "
                         "agentab.power.plan plans paired designs of every kind from a pilot")
    name = PAIRED_PARAMETER[kind]
    if given[name] is None:
        what = ("the correlation between the arms' task means, in [-1, 1)" if name == "correlation"
                else "the share of tasks whose outcomes differ between the arms, in (0, 1]")
        raise PowerError(f"design='paired' for {kind}: give {name}=, {what}")
    value = check_number(given[name], name, PowerError)
    if name == "correlation":
        if not -1.0 <= value < 1.0:
            raise PowerError(f"correlation must be in [-1, 1) (at 1 the paired differences have no variance), got {value:g}")
        return design, value, None
    if not 0.0 < value <= 1.0:
        raise PowerError(f"discordant is a share of pairs, in (0, 1], got {value:g}")
    return design, None, value


def check_discordance(effect: float, discordant: float, baseline: float | None) -> None:
    """Refuse a binary effect the discordance cannot hold: ``|p01 - p10| <= p01 + p10``, and the baseline's cells >= 0.

    With ``|effect| < 1`` (:func:`check_effect`) this keeps ``effect^2 < discordant``: Connor's variance is positive.
    """
    if abs(effect) > discordant + 1e-12:
        raise PowerError(f"effect {effect:+g} is larger than the discordant share {discordant:g}: the rates can differ "
                         "at most by the share of pairs whose outcomes differ")
    if baseline is not None:
        low, high = discordant - 2 * baseline, 2 * (1 - baseline) - discordant
        if not low - 1e-12 <= effect <= high + 1e-12:
            raise PowerError(f"baseline {baseline:g} with discordant {discordant:g} allows effects in "
                             f"[{max(low, -discordant):+g}, {min(high, discordant):+g}], got {effect:+g}")


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
