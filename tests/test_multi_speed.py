"""The many-arm call shares its draws without changing a number: shared sign flips, Holm without statsmodels."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.multitest import multipletests

from agentab import compare, stats
from agentab.comparison.decide import holm
from agentab.stats.arms import shared_draws


def sweep(arms: int = 4, tasks: int = 30, seeds: int = 3, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    difficulty = rng.normal(0, 1.5, tasks)
    rows = []
    for i, a in enumerate(["prod", *(f"c{j}" for j in range(1, arms))]):
        for t in range(tasks):
            p = 1 / (1 + np.exp(-(difficulty[t] + 0.4 * i)))
            for s in range(seeds):
                rows.append({"arm": a, "task_id": f"t{t:03d}", "seed": s, "outcome": bool(rng.random() < p),
                             "rubric": int(rng.integers(0, 4)), "tokens": float(rng.lognormal(8, 0.6)),
                             "score": float(rng.normal(difficulty[t], 1))})
    return pd.DataFrame(rows)


METRICS = {"outcome": "binary", "rubric": "ordinal", "tokens": "cost", "score": "continuous"}


def test_every_candidate_is_bit_for_bit_its_two_arm_comparison():
    data = sweep()
    multi = compare(data, baseline="prod", candidate="all", metrics=METRICS, n_resamples=499, seed=3)
    for name, comp in multi.candidates.items():
        alone = compare(data, baseline="prod", candidate=name, metrics=METRICS, n_resamples=499, seed=3)
        left = comp.table.drop(columns=["p_adjusted", "assessment"])
        right = alone.table.drop(columns=["p_adjusted", "assessment"])
        pd.testing.assert_frame_equal(left, right, check_exact=True)
        pd.testing.assert_frame_equal(comp.table.iloc[1:], alone.table.iloc[1:], check_exact=True)


def test_shared_draws_reuse_the_patterns_and_leave_the_generator_where_a_fresh_draw_would():
    rng_a, rng_b = np.random.default_rng(7), np.random.default_rng(7)
    d = np.random.default_rng(1).normal(0.2, 1, (3, 40))
    plain = stats.max_t(d, n_resamples=999, rng=rng_a)
    with shared_draws():
        first = stats.max_t(d, n_resamples=999, rng=rng_b)
        after_first = rng_b.random()
        again = stats.max_t(d, n_resamples=999, rng=np.random.default_rng(7))
    assert after_first == rng_a.random()  # the generator moved on exactly as without sharing
    for res in (first, again):
        np.testing.assert_array_equal(res.adjusted, plain.adjusted)
        np.testing.assert_array_equal(res.pvalue, plain.pvalue)


def test_another_state_or_size_draws_afresh():
    d = np.random.default_rng(1).normal(0.2, 1, (2, 30))
    with shared_draws():
        one = stats.max_t(d, n_resamples=999, rng=np.random.default_rng(1))
        two = stats.max_t(d, n_resamples=999, rng=np.random.default_rng(2))
        short = stats.max_t(d[:, :20], n_resamples=999, rng=np.random.default_rng(1))
    assert not np.array_equal(one.pvalue, two.pvalue) or not np.array_equal(one.adjusted, two.adjusted)
    np.testing.assert_array_equal(short.adjusted, stats.max_t(d[:, :20], n_resamples=999,
                                                              rng=np.random.default_rng(1)).adjusted)


@pytest.mark.parametrize("seed", range(5))
def test_holm_is_statsmodels_holm(seed):
    rng = np.random.default_rng(seed)
    p = rng.random(int(rng.integers(1, 12))) ** 3
    p[rng.random(len(p)) < 0.3] = p[0]  # ties
    np.testing.assert_array_equal(holm(p), multipletests(p, method="holm")[1])
    with_nan = np.r_[p, np.nan]
    assert np.isnan(holm(with_nan)[-1]) and np.array_equal(holm(with_nan)[:-1], holm(p))


def test_the_paired_flipped_means_are_todays_bit_for_bit():
    from agentab.stats._design import paired_design
    from agentab.stats._studentized import paired_mean, tie_weights

    rng = np.random.default_rng(4)
    d = rng.integers(-3, 4, 60) / 3
    score = rng.random(60)
    got = paired_mean(paired_design(60), d, 2999, np.random.default_rng(9), exact=False, score=score).null
    u = tie_weights(score)
    swaps = np.concatenate(list(paired_design(60).swaps(2999, np.random.default_rng(9), exact=False)))
    np.testing.assert_array_equal(got.a, np.where(swaps, -d * u, d * u).sum(axis=1) / 60)
    np.testing.assert_array_equal(got.k, np.where(swaps, -u, u).sum(axis=1) / 60)
