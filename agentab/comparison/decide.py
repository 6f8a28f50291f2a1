"""From a comparison table to one decision: ship, don't ship, or inconclusive.

Outcome decides, trajectory explains, cost constrains:

- **ship** -- the primary metric improved significantly (permutation p-value
  below ``alpha`` *and* a confidence interval on the good side of zero) and
  every guardrail is shown to hold;
- **don't ship** -- the primary metric is significantly worse (two-sided
  test: a regression is never hidden), or a guardrail is breached;
- **inconclusive** -- anything else, with what was observed.

Significance comes from the test and magnitude from the interval. The two
come from different resampling schemes and can disagree at the margin (a
p-value just below ``alpha`` with an interval that touches zero, or the
reverse). A "ship" needs both to agree; a significant regression is "don't
ship" whatever the interval says (a ship gate should err towards caution).

Guardrails
----------
A guardrail bounds how much a metric may move, judged on its confidence
interval, never on the point estimate (a non-inferiority check). The grammar,
per metric, is ``"<statistic> <op> <margin>"``:

- statistic: ``p50``, ``p95``, any ``pNN`` (a quantile, for cost and count
  metrics), ``mean`` (continuous, cost and count: the difference of means),
  ``rate`` (binary), ``delta`` (Cliff's delta, ordinal);
- op: ``<=`` (the metric may rise by at most the margin) or ``>=`` (it may fall
  by at most the margin, written negative);
- margin: a signed number, absolute (``+0.02``: two percentage points for a
  rate) or, for quantiles only, relative with ``%`` (``+10%``: the candidate's
  quantile at most 1.10 times the baseline's).

``{"tokens": "p95 <= +10%"}`` *holds* when the interval's upper bound of the
p95 ratio is at most 1.10, is *breached* when its lower bound exceeds 1.10,
and is *unresolved* otherwise, which blocks a "ship". Guardrails may also be
given as strings ``"metric: statistic op margin"`` (``"tokens: p95 <= +10%"``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from agentab._display import Block, Display, Items, Title
from agentab._vocabulary import QUANTILE_KINDS
from agentab.errors import CompareError

__all__ = ["ASSESSMENTS", "ASSESSMENT_RULE", "Adjustment", "Guardrail", "GuardrailCheck", "Decision", "assess", "parse_guardrails",
           "guardrail_metrics", "check_guardrail", "decide", "VERDICTS"]

VERDICTS = ("ship", "don't ship", "inconclusive")

#: Every assessment a row of the comparison table can have (:func:`assess`).
ASSESSMENTS = ("better", "worse", "changed", "borderline", "no evidence", "descriptive")

#: The rule of :func:`assess`, in words: shown with every table (text, HTML, Markdown) and in the JSON.
ASSESSMENT_RULE = (
    "assessment of a row: 'descriptive' when it has no test; 'no evidence' when its p-value (the primary's own, a "
    "secondary's Holm-adjusted) is missing or not below alpha; when it is below alpha: 'better' or 'worse' (by the "
    "metric's direction; 'changed' when it has none) if the interval also lies wholly on that side of no change, "
    "'borderline' if the interval reaches no change or is a single point (the test and the interval disagree at the "
    "margin). Intervals are not adjusted for multiplicity, so a secondary's interval can exclude no change while its "
    "Holm-adjusted p-value reads 'no evidence'"
)

_GRAMMAR = re.compile(
    r"^\s*(?P<stat>p\d+(?:\.\d+)?|mean|rate|delta)\s*(?P<op><=|>=)\s*(?P<margin>[+-]?\d+(?:\.\d+)?(?:e[+-]?\d+)?)\s*(?P<pct>%)?\s*$",
    re.IGNORECASE,
)
_STAT_KINDS = {"mean": ("continuous", *QUANTILE_KINDS), "rate": ("binary",), "delta": ("ordinal",)}


@dataclass(frozen=True)
class Guardrail:
    """A bound on how far a metric may move (see the module docstring)."""

    metric: str
    statistic: str  # "p95", "mean", "rate", "delta"
    op: str  # "<=" or ">="
    margin: float  # relative (0.10 for +10%) or absolute
    relative: bool
    text: str
    row: str  # the comparison-table row it is judged on, e.g. "tokens p95"

    @property
    def quantile(self) -> float | None:
        """The probability of a ``pNN`` statistic, else None."""
        return float(self.statistic[1:]) / 100 if self.statistic.startswith("p") else None

    @property
    def bound(self) -> float:
        """The bound on the effect (a difference) or, for relative margins, on the ratio."""
        return 1.0 + self.margin if self.relative else self.margin

    def __str__(self) -> str:
        sign = "+" if self.margin >= 0 else ""
        margin = f"{sign}{100 * self.margin:g}%" if self.relative else f"{sign}{self.margin:g}"
        return f"{self.metric} {self.statistic} {self.op} {margin}"


def _parse_one(metric: str, text: str, kinds: Mapping[str, str]) -> Guardrail:
    if not isinstance(text, str):
        raise CompareError(f"guardrail for {metric!r} must be text like 'p95 <= +10%', got {text!r}")
    match = _GRAMMAR.match(text)
    if match is None:
        raise CompareError(
            f"guardrail {metric!r}: {text!r} is not '<statistic> <op> <margin>', e.g. 'p95 <= +10%' or "
            "'rate <= +0.02' (statistic pNN, mean, rate or delta; op <= or >=)"
        )
    stat = match["stat"].lower()
    if metric not in kinds:
        raise CompareError(f"guardrail on {metric!r}: no such metric column (metrics: {', '.join(kinds)})")
    kind = kinds[metric]
    if stat.startswith("p"):
        q = float(stat[1:])
        if not 0 < q < 100:
            raise CompareError(f"guardrail {metric!r}: quantile {stat} must be between p0 and p100 (exclusive)")
        if kind not in QUANTILE_KINDS:
            raise CompareError(f"guardrail {metric!r}: quantile guardrails ({stat}) need a cost or count metric; {metric!r} is {kind}")
        stat = f"p{q:g}"  # "p95.0" and "p095" read as "p95", the row's name
    elif kind not in _STAT_KINDS[stat]:
        raise CompareError(
            f"guardrail {metric!r}: {stat!r} applies to {' and '.join(_STAT_KINDS[stat])} metrics; {metric!r} is {kind}"
        )
    relative = match["pct"] is not None
    if relative and not stat.startswith("p"):
        raise CompareError(
            f"guardrail {metric!r}: relative margins (%) apply to quantiles only; give an absolute margin for {stat}"
        )
    margin = float(match["margin"]) / (100 if relative else 1)
    if not math.isfinite(margin):  # "1e400" reads as infinity: a bound nothing can cross
        raise CompareError(f"guardrail {metric!r}: the margin of {text!r} is beyond float64's range")
    if relative and margin <= -1:
        raise CompareError(f"guardrail {metric!r}: a relative margin must be above -100%, got {text!r}")
    row = f"{metric} {stat}" if stat.startswith("p") or kind in QUANTILE_KINDS else metric
    return Guardrail(metric, stat, match["op"], margin, relative, text.strip(), row)


def guardrail_metrics(guardrails: Any) -> list[str]:
    """The metric names guardrails refer to, before their kinds are known."""
    if isinstance(guardrails, Mapping):
        return [str(k) for k in guardrails]
    if isinstance(guardrails, Sequence) and not isinstance(guardrails, str):
        return [g.split(":", 1)[0].strip() for g in guardrails if isinstance(g, str) and ":" in g]
    return []


def parse_guardrails(guardrails: Any, kinds: Mapping[str, str]) -> list[Guardrail]:
    """Parse ``{"metric": "stat op margin" | [..]}`` or ``["metric: stat op margin", ...]``.

    Examples
    --------
    >>> [str(g) for g in parse_guardrails({"tokens": "p95 <= +10%"}, {"tokens": "cost"})]
    ['tokens p95 <= +10%']
    >>> parse_guardrails(["loop: rate <= 0.02"], {"loop": "binary"})[0].bound
    0.02
    """
    if guardrails is None:
        return []
    items: list[tuple[str, str]] = []
    if isinstance(guardrails, Mapping):
        for metric, rules in guardrails.items():
            for rule in [rules] if isinstance(rules, str) or not isinstance(rules, Sequence) else rules:
                items.append((str(metric), rule))
    elif isinstance(guardrails, Sequence) and not isinstance(guardrails, str):
        for entry in guardrails:
            if not isinstance(entry, str) or ":" not in entry:
                raise CompareError(f"guardrail {entry!r} must read 'metric: statistic op margin', e.g. 'tokens: p95 <= +10%'")
            metric, rule = entry.split(":", 1)
            items.append((metric.strip(), rule))
    else:
        raise CompareError(f"`guardrails` must be a mapping metric -> rule or a list of 'metric: rule', got {guardrails!r}")
    return [_parse_one(metric, rule, kinds) for metric, rule in items]


@dataclass(frozen=True)
class GuardrailCheck:
    """A guardrail judged on its interval: ``status`` is holds, breached or unresolved."""

    guardrail: Guardrail
    status: str
    estimate: float
    ci_low: float
    ci_high: float
    note: str = ""

    def __str__(self) -> str:
        g = self.guardrail
        what = "ratio" if g.relative else "difference"
        text = (
            f"guardrail {g}: {self.status} ({what} {self.estimate:.4g}, CI {self.ci_low:.4g} to {self.ci_high:.4g}; "
            f"bound {g.bound:.4g})"
        )
        return f"{text}; {self.note}" if self.note else text


def check_guardrail(guardrail: Guardrail, row: pd.Series) -> GuardrailCheck:
    """Judge one guardrail on its table row (an infinite bound counts: x / 0 is an unbounded rise)."""
    if guardrail.relative:
        estimate, low, high = row["ratio"], row["ratio_low"], row["ratio_high"]
    else:
        estimate, low, high = row["effect"], row["ci_low"], row["ci_high"]
    bound = guardrail.bound
    note = ""
    if np.isnan(low) or np.isnan(high):
        status = "unresolved"
        note = "no interval could be computed"
    elif guardrail.op == "<=":
        status = "holds" if high <= bound else "breached" if low > bound else "unresolved"
    else:
        status = "holds" if low >= bound else "breached" if high < bound else "unresolved"
    if guardrail.relative and (row["baseline"] == 0 or np.isinf(high)):
        note = (
            f"the baseline's {guardrail.statistic} is 0 in the data or in resamples, so the ratio is unbounded; "
            "an absolute margin suits this metric better"
        )
    return GuardrailCheck(guardrail, status, float(estimate), float(low), float(high), note)


@dataclass(frozen=True)
class Decision(Display):
    """The verdict and why.

    Attributes
    ----------
    verdict : str
        One of ``"ship"``, ``"don't ship"``, ``"inconclusive"``.
    reasons : tuple of str
        What decided it: the primary metric, then each guardrail.
    explanations : tuple of str
        Secondary (trajectory and cost) metrics that changed significantly
        after Holm adjustment; they explain, they never decide.
    guardrails : tuple of GuardrailCheck
    """

    verdict: str
    reasons: tuple[str, ...]
    explanations: tuple[str, ...]
    guardrails: tuple[GuardrailCheck, ...]

    def _view(self, shout: bool = False) -> list[Block]:
        """The verdict line, its reasons, and what changed (shown in text and HTML alike).

        ``shout``: the verdict line in capitals in text ("VERDICT: ship"), as a comparison shows it.
        """
        tone = {"ship": "good", "don't ship": "bad"}.get(self.verdict, "neutral")
        plain = f"{'VERDICT' if shout else 'verdict'}: {self.verdict}"
        view: list[Block] = [Title(f"Verdict: {self.verdict}", tone=tone, level=3, plain=plain), Items(self.reasons)]
        if self.explanations:
            view.append(Items(self.explanations, title="  what changed (explains, does not decide):", indent="    ",
                              collapsed=True))
        return view

    def to_dict(self) -> dict[str, Any]:
        """The verdict, reasons, explanations and guardrail checks as plain values."""
        return {"verdict": self.verdict, "reasons": list(self.reasons), "explanations": list(self.explanations),
                "guardrails": [str(check) for check in self.guardrails]}


def format_value(value: float, kind: str, signed: bool = False) -> str:
    """A number for people: rates as percentages, large values with thousands separators.

    Examples
    --------
    >>> format_value(0.0867, "binary", signed=True), format_value(418812.0, "cost"), format_value(0.16461, "cost")
    ('+8.7%', '418,812', '0.1646')
    """
    if not np.isfinite(value):
        return "-"
    sign = "+" if signed else ""
    if kind == "binary":
        return f"{value:{sign}.1%}"
    if abs(value) >= 1000:
        return f"{value:{sign},.0f}"
    return f"{value:{sign}.4g}"



@dataclass(frozen=True)
class Adjustment:
    """The primary p-value adjusted across a family of comparisons (several candidates against one baseline).

    With it, :func:`decide` judges the primary metric by ``p_adjusted`` and says both p-values.

    Attributes
    ----------
    p_adjusted : float
    family : int
        Comparisons adjusted together (candidates).
    method : str
        How, in a word or two (``"max-T"``, ``"Holm"``).
    """

    p_adjusted: float
    family: int
    method: str


def _p_text(p: float, adjustment: Adjustment | None) -> str:
    """``p = 0.012``, or with an adjustment ``p = 0.012 alone, 0.034 adjusted across 3 candidates (max-T)``."""
    if adjustment is None or not np.isfinite(adjustment.p_adjusted):
        return f"p = {(p if adjustment is None else adjustment.p_adjusted):.3g}"
    return (f"p = {p:.3g} alone, {adjustment.p_adjusted:.3g} adjusted across {adjustment.family} candidates "
            f"({adjustment.method})")


def _primary_sentence(row: pd.Series, alpha: float, table: pd.DataFrame, adjustment: Adjustment | None = None) -> str:
    kind, stat = row["kind"], row["statistic"]
    p_text = _p_text(row["p_value"], adjustment)
    level = f"{1 - alpha:.0%}"
    if kind == "ordinal":
        means = table.loc[table["metric"] == f"{row['metric']} mean level"]
        shown = (f"; mean level {format_value(means['baseline'].iloc[0], kind)} -> "
                 f"{format_value(means['candidate'].iloc[0], kind)}" if len(means) else "")
        return (f"{row['metric']} ({stat}): {format_value(row['effect'], kind, True)} ({level} CI "
                f"{format_value(row['ci_low'], kind, True)} to {format_value(row['ci_high'], kind, True)}{shown}), "
                f"{p_text}")
    if kind == "binary":
        move = (
            f"{format_value(row['baseline'], kind)} -> {format_value(row['candidate'], kind)} "
            f"({format_value(row['effect'], kind, True)}, {level} CI {format_value(row['ci_low'], kind, True)} to "
            f"{format_value(row['ci_high'], kind, True)})"
        )
    else:
        move = (
            f"{stat} {format_value(row['effect'], kind, True)} ({level} CI {format_value(row['ci_low'], kind, True)} to "
            f"{format_value(row['ci_high'], kind, True)}; baseline {format_value(row['baseline'], kind)}, "
            f"candidate {format_value(row['candidate'], kind)})"
        )
    return f"{row['metric']} ({stat}): {move}, {p_text}"


def holm(p_values: Sequence[float]) -> np.ndarray:
    """Holm (1979) adjusted p-values of one family; a NaN (no test) stays NaN and is not in the family.

    The sorted p-values times ``m, m - 1, ..., 1``, made monotone and capped at 1: the numbers of statsmodels'
    ``multipletests(method="holm")`` (``tests/test_multi_speed.py`` checks it), without its ``gc.collect()`` per call.

    Examples
    --------
    >>> holm([0.01, float("nan"), 0.04]).round(3).tolist()
    [0.02, nan, 0.04]
    """
    p = np.asarray(p_values, dtype=float)
    out = np.full(p.shape, np.nan)
    family = ~np.isnan(p)
    if family.any():
        values = p[family]
        order = np.argsort(values)
        ranked = np.maximum.accumulate(values[order] * np.arange(len(values), 0, -1))
        adjusted = np.empty_like(ranked)
        adjusted[order] = np.minimum(ranked, 1.0)
        out[family] = adjusted
    return out


def assess(role: str, p_value: float, p_adjusted: float, effect: float, ci_low: float, ci_high: float,
           direction: str, alpha: float) -> str:
    """The assessment of one row of the comparison table: the one rule every display and report shows.

    - ``"descriptive"``: the row has no test (``role == "descriptive"``: the mean of a cost or count metric, the
      mean level of an ordinal one);
    - ``"no evidence"``: its p-value is missing or not below ``alpha`` (the primary row's own p-value, a
      secondary row's Holm-adjusted one);
    - ``"better"`` or ``"worse"``: the p-value is below ``alpha`` *and* the interval lies wholly on one side of no
      change, the good or the bad side by the metric's ``direction`` (``"changed"`` when the direction is
      ``"neither"``);
    - ``"borderline"``: the p-value is below ``alpha`` but the interval reaches no change (or is a single point,
      every resample giving the same value): the test and the interval disagree at the margin. They come from
      different resampling schemes for quantiles (a permutation test, a bootstrap interval).

    Intervals are each at confidence ``1 - alpha``, not adjusted for multiplicity: a secondary row's interval
    can exclude no change while its Holm-adjusted p-value says "no evidence". The verdict (:func:`decide`) is
    a separate rule on the primary row: "ship" needs the primary row to read "better"; a primary row that is
    significantly worse is "don't ship" even when it reads "borderline".

    Examples
    --------
    >>> assess("secondary", 0.003, 0.021, -4.0, -6.0, 0.0, "lower", 0.05)  # a p95 whose interval touches 0
    'borderline'
    >>> assess("secondary", 0.003, 0.021, -4.0, -6.0, -1.0, "lower", 0.05)
    'better'
    >>> assess("secondary", 0.035, 0.175, 0.117, 0.03, 0.214, "higher", 0.05)  # significant before Holm only
    'no evidence'
    """
    if role == "descriptive":
        return "descriptive"
    p = p_value if role == "primary" else p_adjusted
    if not (np.isfinite(p) and p < alpha):
        return "no evidence"
    up = bool(ci_low > 0 and effect > 0 and ci_low < ci_high)
    down = bool(ci_high < 0 and effect < 0 and ci_low < ci_high)
    if not (up or down):
        return "borderline"
    if direction == "neither":
        return "changed"
    return "better" if up == (direction == "higher") else "worse"


def decide(table: pd.DataFrame, primary: str, checks: Sequence[GuardrailCheck], alpha: float,
           adjustment: Adjustment | None = None) -> Decision:
    """Reach the verdict from the comparison table (see the module docstring); with ``adjustment``, the primary
    metric's significance is its p-value adjusted across candidates, and the reasons give both p-values."""
    row = table.loc[table["metric"] == primary].iloc[0]
    good = 1.0 if row["direction"] == "higher" else -1.0
    p, effect, low, high = row["p_value"], row["effect"], row["ci_low"], row["ci_high"]
    if adjustment is not None:
        p = adjustment.p_adjusted
    sentence = _primary_sentence(row, alpha, table, adjustment)
    significant = bool(p < alpha)
    improved = significant and good * effect > 0
    regressed = significant and good * effect < 0
    degenerate = bool(low == high)  # every resample gave the same value: the interval says nothing
    ci_good = not degenerate and ((low > 0) if good > 0 else (high < 0))
    ci_bad = not degenerate and ((high < 0) if good > 0 else (low > 0))
    reasons: list[str] = []
    if regressed:
        reasons.append(f"primary metric is significantly worse: {sentence}")
        if not ci_bad:
            reasons.append("the interval still reaches no change, but a significant regression is never waved through")
    elif improved and ci_good:
        reasons.append(f"primary metric improved: {sentence}")
    elif improved:
        reasons.append(
            f"primary metric: the test is significant but the interval includes no change ({sentence}); "
            "a ship needs both"
        )
    elif ci_good or ci_bad:
        reasons.append(f"primary metric: the interval excludes no change but the test is not significant at {alpha:g} ({sentence})")
    else:
        reasons.append(f"primary metric: no significant difference at alpha = {alpha:g}: {sentence}")
    if degenerate:
        reasons.append("the interval is a single point (every bootstrap resample gave the same value): too few tasks")
    breached = [c for c in checks if c.status == "breached"]
    unresolved = [c for c in checks if c.status == "unresolved"]
    reasons += [str(c) for c in checks]
    if regressed or breached:
        verdict = "don't ship"
    elif improved and ci_good and not unresolved:
        verdict = "ship"
    else:
        verdict = "inconclusive"
        if improved and ci_good and unresolved:
            reasons.append("the primary metric improved, but a guardrail is unresolved: more tasks would narrow its interval")
    explanations = []
    secondary = table[(table["role"] == "secondary") & table["assessment"].isin(["better", "worse", "changed"])]
    for _, r in secondary.iterrows():
        label = r["metric"] if r["metric"].endswith(r["statistic"]) else f"{r['metric']} ({r['statistic']})"
        move = (f"{format_value(r['baseline'], r['kind'])} -> {format_value(r['candidate'], r['kind'])}, "
                if np.isfinite(r["baseline"]) else "")
        explanations.append(
            f"{label}: {r['assessment']}, {move}"
            f"effect {format_value(r['effect'], r['kind'], True)} (CI {format_value(r['ci_low'], r['kind'], True)} to "
            f"{format_value(r['ci_high'], r['kind'], True)}), Holm p = {r['p_adjusted']:.3g}"
        )
    return Decision(verdict, tuple(reasons), tuple(explanations), tuple(checks))
