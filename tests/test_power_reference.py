"""agentab.power against sample sizes and powers computed by R (tests/reference/power_r.R).

The CSV tests/reference/power_r.csv is committed, so these tests need no R. Its
columns are documented in the R script; regenerate it with
``Rscript tests/reference/power_r.R`` from the repository root.

Tolerances: sample sizes (``exact_runs``, the unrounded runs per arm) within 1%
relative of R, and the rounded ``runs_per_arm`` equal to R's ceiling (no case has an
unrounded n within 0.008 of an integer, while R's root finder is accurate to ~1e-4);
powers within 0.005 absolute unless a comment says otherwise.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from agentab.power import power, sample_size

REFERENCE = Path(__file__).parent / "reference"
TABLE = pd.read_csv(REFERENCE / "power_r.csv", comment="#", dtype={"baseline": str, "pbar": str})

REL_N = 0.01  # sample sizes: 1% relative
ABS_POWER = 0.005  # powers: 0.005 absolute
# Ordinal: agentab's Whitehead power and the identical expression recomputed in R are
# the same closed form, so they must agree to rounding. agentab counts both tails of a
# two-sided test, P(|Z| > z_{1-a/2}) (as pwr.2p.test and statsmodels do), so the R value
# is power_whitehead_two_tail = pnorm(A - z) + pnorm(-A - z) with
# A = |log OR| sqrt(N (1 - sum pbar^3) / 12); Whitehead's and Hmisc's one-tail
# power_whitehead = pnorm(A - z) is lower by the far tail (<= 0.0016 here, case 41).
ABS_SAME_FORMULA = 1e-9


def _rows(kind: str, solve: str) -> list:
    rows = TABLE[(TABLE.kind == kind) & (TABLE.solve == solve)]
    assert len(rows) >= 6, f"reference table lost its {kind}/{solve} cases"
    return list(rows.itertuples(index=False))


def _id(row) -> str:
    return f"case{row.case}-{row.alternative}"


def _baseline(row):
    if row.kind == "binary":
        return float(row.baseline)
    if row.kind == "ordinal":
        return np.array(row.baseline.split("|"), dtype=float)
    return None


def _solve(row):
    return sample_size(row.kind, row.effect, baseline=_baseline(row), alpha=row.alpha, power=row.target_power,
                       alternative=row.alternative)


def _power_at(row, n):
    return power(row.kind, row.effect, n, baseline=_baseline(row), alpha=row.alpha, alternative=row.alternative).power


def _check_sample_size(row, ss, method: str):
    assert ss.method.lower().startswith(method)
    assert ss.exact_runs == pytest.approx(row.n_per_arm_exact, rel=REL_N)
    assert ss.runs_per_arm == math.ceil(ss.exact_runs)
    assert ss.runs_per_arm == int(row.n_per_arm)
    assert ss.seeds_per_task == 1 and ss.tasks_per_arm == ss.runs_per_arm
    # the achieved power is the power at the rounded n, and power() agrees with it
    assert ss.power >= row.target_power
    assert ss.power == pytest.approx(_power_at(row, ss.runs_per_arm), abs=1e-9)


# --- binary: Cohen's h --------------------------------------------------------------


@pytest.mark.parametrize("row", _rows("binary", "n"), ids=_id)
def test_binary_sample_size_matches_pwr_2p_test(row):
    """n per group for two proportions, arcsine transformation / Cohen's h = ES.h(p2, p1):
    R pwr::pwr.2p.test(h, sig.level, power, alternative); Cohen (1988), Statistical Power
    Analysis for the Behavioral Sciences, 2nd ed., ch. 6."""
    ss = _solve(row)
    _check_sample_size(row, ss, "arcsine")
    assert ss.power == pytest.approx(row.power_r, abs=ABS_POWER)


@pytest.mark.parametrize("row", _rows("binary", "power"), ids=_id)
def test_binary_power_matches_pwr_2p_test(row):
    """Power at n per group for two proportions (Cohen's h), both tails for two-sided:
    R pwr::pwr.2p.test(h, n, sig.level, alternative); Cohen (1988), ch. 6."""
    assert _power_at(row, int(row.n_per_arm)) == pytest.approx(row.power_r, abs=ABS_POWER)


# --- continuous: two-sample t, Cohen's d ----------------------------------------------


@pytest.mark.parametrize("row", _rows("continuous", "n"), ids=_id)
def test_continuous_sample_size_matches_pwr_t_test(row):
    """n per group for the two-sample t test (noncentral t), Cohen's d:
    R pwr::pwr.t.test(d, sig.level, power, type = "two.sample", alternative);
    Cohen (1988), ch. 2."""
    ss = _solve(row)
    _check_sample_size(row, ss, "t")
    assert ss.power == pytest.approx(row.power_r, abs=ABS_POWER)


@pytest.mark.parametrize("row", _rows("continuous", "power"), ids=_id)
def test_continuous_power_matches_pwr_t_test(row):
    """Power of the two-sample t test at n per group (exact, noncentral t):
    R pwr::pwr.t.test(d, n, sig.level, type = "two.sample", alternative); Cohen (1988), ch. 2."""
    assert _power_at(row, int(row.n_per_arm)) == pytest.approx(row.power_r, abs=ABS_POWER)


# --- ordinal: proportional odds, Whitehead (1993) --------------------------------------


def _popower_tolerance(row) -> float:
    """Bound on |agentab power - Hmisc::popower|.

    popower uses V = n1 n2 N / (3 (N + 1)^2) (1 - sum pbar^3), which for n1 = n2 = N/2 is
    V_N * N^2 / (N + 1)^2 with V_N = N (1 - sum pbar^3) / 12, the variance agentab (and
    posamsize) uses. So popower's A = |log OR| sqrt(V) is agentab's A_N times N / (N + 1),
    smaller by A_N / (N + 1), and as the normal density is at most 1/sqrt(2 pi) the
    one-tail powers differ by at most A_N / ((N + 1) sqrt(2 pi)) (0.0099 at N = 60, 0.0035
    at N = 212). popower counts one tail, agentab two: add the far tail R recorded.
    """
    n_total = 2 * int(row.n_per_arm)
    a_n = math.sqrt(n_total * (1 - np.sum(np.array(row.pbar.split("|"), dtype=float) ** 3)) / 12) * abs(row.es)
    far_tail = row.power_whitehead_two_tail - row.power_whitehead
    return a_n / ((n_total + 1) * math.sqrt(2 * math.pi)) + far_tail + 1e-9


@pytest.mark.parametrize("row", _rows("ordinal", "n"), ids=_id)
def test_ordinal_sample_size_matches_hmisc_posamsize(row):
    """Runs per arm for the proportional-odds (Wilcoxon) comparison of ordinal levels:
    R Hmisc::posamsize(pbar, odds.ratio, fraction = .5, alpha, power)$n / 2, where pbar
    averages the baseline shares and the shares shifted by the odds ratio; Whitehead (1993),
    Sample size calculations for ordered categorical data, Stat Med 12:2257-2271."""
    ss = _solve(row)
    _check_sample_size(row, ss, "whitehead")
    assert ss.exact_runs == pytest.approx(row.n_total_r / 2, rel=REL_N)
    assert ss.power == pytest.approx(row.power_whitehead_two_tail, abs=ABS_SAME_FORMULA)
    assert ss.power == pytest.approx(row.power_r, abs=_popower_tolerance(row))


@pytest.mark.parametrize("row", _rows("ordinal", "power"), ids=_id)
def test_ordinal_power_matches_hmisc_popower(row):
    """Power of the proportional-odds comparison at n runs per arm (total N = 2n):
    R Hmisc::popower(pbar, odds.ratio, n = N, alpha), and the same Whitehead expression with
    V = N (1 - sum pbar^3) / 12, both tails (power_whitehead_two_tail); Whitehead (1993)
    Stat Med 12:2257-2271. agentab must equal the latter to rounding and popower within the
    bound its (N + 1)^2 factor and one-tail convention allow (see _popower_tolerance)."""
    got = _power_at(row, int(row.n_per_arm))
    assert got == pytest.approx(row.power_whitehead_two_tail, abs=ABS_SAME_FORMULA)
    assert got == pytest.approx(row.power_r, abs=_popower_tolerance(row))


def test_ordinal_candidate_shares_follow_the_odds_ratio():
    """The pbar recorded by R is (p0 + p1) / 2 for p1 = p0 shifted by a proportional-odds
    model with the given odds ratio (Whitehead 1993): recompute it here, so the cases above
    feed agentab the same model R was given."""
    from scipy.special import expit, logit

    for row in _rows("ordinal", "n") + _rows("ordinal", "power"):
        p0 = _baseline(row)
        gamma = np.cumsum(p0)[:-1]
        p1 = np.diff(np.concatenate([[0.0], expit(logit(gamma) - math.log(row.effect)), [1.0]]))
        np.testing.assert_allclose((p0 + p1) / 2, np.array(row.pbar.split("|"), dtype=float), atol=1e-12)
        if row.effect > 1:
            assert np.dot(p1, np.arange(len(p1))) > np.dot(p0, np.arange(len(p0)))


# --- statsmodels cross-check ------------------------------------------------------------


@pytest.mark.parametrize("row", _rows("binary", "n") + _rows("continuous", "n"), ids=_id)
def test_sample_size_matches_statsmodels(row):
    """Second, Python-side reference: statsmodels NormalIndPower().solve_power on
    proportion_effectsize(p2, p1) (Cohen's h) for binary, TTestIndPower().solve_power(d)
    for continuous; Cohen (1988), ch. 6 and ch. 2. Within 1% of agentab's exact_runs."""
    from statsmodels.stats.power import NormalIndPower, TTestIndPower
    from statsmodels.stats.proportion import proportion_effectsize

    if row.kind == "binary":
        p1 = float(row.baseline)
        expected = NormalIndPower().solve_power(proportion_effectsize(p1 + row.effect, p1), alpha=row.alpha,
                                                power=row.target_power, ratio=1.0, alternative=row.alternative)
    else:
        expected = TTestIndPower().solve_power(row.effect, alpha=row.alpha, power=row.target_power, ratio=1.0,
                                               alternative=row.alternative)
    assert _solve(row).exact_runs == pytest.approx(expected, rel=REL_N)
