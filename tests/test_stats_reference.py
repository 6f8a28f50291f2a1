"""agentab.stats against values computed by R (scripts and outputs in tests/reference/).

``tests/reference/studentized_permutation.R`` enumerates, in R and without agentab, the exact permutation
distributions of the studentized statistics agentab tests: Brunner & Munzel's for Cliff's delta (all
reassignments of runs), Welch's t of task means (all reassignments of whole tasks), and the sign-flip law of
per-task differences with agentab's tie-breaking weights (enumerated; ``coin::symmetry_test``'s exact
p-values of the plain sum beside them), which the task-level t statistic follows.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from agentab.stats import mean_difference, ordinal_superiority, rate_difference

REFERENCE = Path(__file__).parent / "reference"
CASES = pd.read_csv(REFERENCE / "studentized_permutation.csv")


def _numbers(text: str) -> np.ndarray:
    return np.array(text.split(), dtype=float)


def _cases(design: str) -> list:
    return list(CASES[CASES.design == design].itertuples())


def _both_tails(fn, *args, **kwargs):
    greater = fn(*args, alternative="greater", rng=0, **kwargs)
    less = fn(*args, alternative="less", rng=0, **kwargs)
    assert greater.exact and less.exact
    return greater, less


@pytest.mark.parametrize("case", _cases("ordinal"), ids=lambda c: f"case{c.case}")
def test_ordinal_exact_pvalues_match_r_brunner_munzel_enumeration(case):
    x, y = _numbers(case.x), _numbers(case.y)
    greater, less = _both_tails(ordinal_superiority, x, y)
    assert greater.pvalue == pytest.approx(case.p_greater, abs=1e-12)
    assert less.pvalue == pytest.approx(case.p_less, abs=1e-12)
    if set(np.unique(np.r_[x, y])) <= {0.0, 1.0, 2.0, 3.0}:
        # relabelling the levels (0-3 as 0, 1, 5, 10) changes nothing: only the order is used
        relabel = np.array([0.0, 1.0, 5.0, 10.0])
        again = ordinal_superiority(relabel[x.astype(int)], relabel[y.astype(int)], alternative="greater", rng=0)
        assert again.pvalue == greater.pvalue and again.statistic == greater.statistic


def _runs_of_task_means(means: np.ndarray, prefix: str, seeds: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """Runs whose task means are ``means``: rates over ``seeds`` seeds as 0/1 runs, other values as one run."""
    counts = np.round(means * seeds)
    if np.allclose(counts, means * seeds):
        values = np.concatenate([np.r_[np.ones(int(c)), np.zeros(seeds - int(c))] for c in counts])
        tasks = np.repeat([f"{prefix}{i}" for i in range(len(means))], seeds)
        return values, tasks
    return means, np.array([f"{prefix}{i}" for i in range(len(means))])


@pytest.mark.parametrize("case", _cases("welch"), ids=lambda c: f"case{c.case}")
def test_clustered_exact_pvalues_match_r_welch_enumeration(case):
    x, xs = _runs_of_task_means(_numbers(case.x), "b")
    y, ys = _runs_of_task_means(_numbers(case.y), "c")
    greater, less = _both_tails(mean_difference, x, y, x_strata=xs, y_strata=ys, n_resamples=9999)
    assert greater.design_kind in ("clustered", "independent") and greater.n_units == (len(_numbers(case.x)), len(_numbers(case.y)))
    assert greater.pvalue == pytest.approx(case.p_greater, abs=1e-12)
    assert less.pvalue == pytest.approx(case.p_less, abs=1e-12)


@pytest.mark.parametrize("case", _cases("paired"), ids=lambda c: f"case{c.case}")
def test_paired_exact_pvalues_match_r_enumeration_and_never_exceed_coin(case):
    """Every sign flip (2^14 and 2^18 resamples asked for) gives R's enumerated p-values of the tie-broken
    statistic; they never exceed coin's exact p-values of the plain sum (ties broken, never added);
    999 Monte Carlo flips land within their error."""
    counts_x, counts_y = _numbers(case.x).astype(int), _numbers(case.y).astype(int)
    n_tasks = len(counts_x)
    tasks = np.repeat(np.arange(n_tasks), 3)
    x = np.concatenate([np.r_[np.ones(c), np.zeros(3 - c)] for c in counts_x])
    y = np.concatenate([np.r_[np.ones(c), np.zeros(3 - c)] for c in counts_y])
    greater, less = _both_tails(rate_difference, x, y, x_strata=tasks, y_strata=tasks, n_resamples=2**n_tasks)
    assert greater.pvalue == pytest.approx(case.p_greater, abs=1e-12)
    assert less.pvalue == pytest.approx(case.p_less, abs=1e-12)
    assert greater.pvalue <= case.p_plain_greater + 1e-12 and less.pvalue <= case.p_plain_less + 1e-12
    drawn = rate_difference(x, y, x_strata=tasks, y_strata=tasks, alternative="greater", n_resamples=999, rng=0)
    assert not drawn.exact
    assert abs(drawn.pvalue - case.p_greater) <= 4 * np.sqrt(max(case.p_greater, 0.01) / 1000) + 1 / 1000
