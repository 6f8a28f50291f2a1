"""The plan's interval for the tasks needed (``plan(..., n_boot=N)``, :mod:`agentab.power._uncertainty`)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import agentab
from agentab.errors import PowerError
from agentab.power._pilot import Pilot
from agentab.power._uncertainty import INTERVAL_LEVEL, _resample, tasks_interval


def _pilot(kind: str, n: int = 20, m: int = 3, seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    u = np.repeat(rng.normal(0.0, 0.6, n), m)
    e = rng.normal(0.0, 0.6 if kind == "cost" else 1.0, n * m)
    values = np.exp(np.log(2000.0) + u + e) if kind == "cost" else u + e
    return pd.DataFrame({"task_id": np.repeat([f"t{i:02d}" for i in range(n)], m), "x": values})


def _fake(n: int = 20, m: int = 3, seed: int = 0) -> Pilot:
    rng = np.random.default_rng(seed)
    values = np.repeat(rng.normal(size=n), m) + rng.normal(size=n * m)
    return Pilot(values, np.repeat([f"t{i:02d}" for i in range(n)], m).astype(str), None, None, ())


def test_same_seed_same_interval_and_low_le_high():
    a = agentab.power.plan(_pilot("continuous"), "x", 0.3, kind="continuous", n_boot=30, seed=7)
    b = agentab.power.plan(_pilot("continuous"), "x", 0.3, kind="continuous", n_boot=30, seed=7)
    assert a.tasks_interval == b.tasks_interval
    iv = a.tasks_interval
    assert iv.low <= iv.high and iv.level == INTERVAL_LEVEL and iv.n_boot == 30 and iv.failed == 0


def test_interval_contains_the_plan_and_its_text_says_what_it_is():
    p = agentab.power.plan(_pilot("continuous", n=30), "x", 0.3, kind="continuous", n_boot=40, seed=1)
    iv = p.tasks_interval
    assert iv.low <= p.tasks <= iv.high
    text = iv.text(p.seeds_per_task)
    assert f"{iv.low:,.0f} to {iv.high:,.0f}" in text and "resamples of the pilot's tasks" in text


def test_cost_resamples_do_not_tie_duplicated_tasks():
    # A task drawn twice used to repeat its runs exactly: the cost quantile's tie check then refused about a
    # quarter of the resamples of a 20 x 3 pilot (10 of 40), each counted as needing infinitely many tasks.
    p = agentab.power.plan(_pilot("cost"), "x", -0.2, kind="cost", quantile=0.5, n_boot=40, seed=5)
    assert p.tasks_interval.failed == 0
    assert np.isfinite(p.tasks_interval.high)


def test_resample_keeps_every_drawn_task_with_all_its_runs():
    pilot = _fake()
    drawn = _resample(pilot, np.random.default_rng(4))
    assert len(drawn.values) == len(pilot.values) and len(np.unique(drawn.tasks)) == 20
    for name in np.unique(drawn.tasks):
        source = name.split("#")[0]
        original = np.sort(pilot.values[pilot.tasks == source])
        assert np.allclose(np.sort(drawn.values[drawn.tasks == name]), original, rtol=1e-8)


def test_failed_resamples_sit_above_the_interval():
    calls = iter(range(10**6))

    def replan(resampled: Pilot) -> float | None:
        k = next(calls)
        if k % 2:
            raise PowerError("no plan")
        return 100.0

    iv = tasks_interval(_fake(), replan, 20, np.random.default_rng(0))
    assert iv.failed >= 9 and iv.high == np.inf and iv.low <= 100.0


def test_interval_is_wider_than_the_bootstrap_spread_of_a_skewed_plan():
    # The tasks needed vary like a variance estimate (skewed to the right): the reported interval must reach
    # further than the plain 10th-90th percentile of the resampled plans (which under-covers, see
    # benchmarks/validate_plan_interval.py).
    def replan(resampled: Pilot) -> float:
        return 100.0 * float(np.var(resampled.values, ddof=1))

    pilot = _fake(n=25)
    iv = tasks_interval(pilot, replan, 60, np.random.default_rng(1))
    rng = np.random.default_rng(1)
    draws = [replan(_resample(pilot, rng)) for _ in range(60)]
    plain = np.quantile(draws, [0.1, 0.9], method="inverted_cdf")
    assert iv.high > plain[1] and iv.low < plain[0]
    assert iv.low <= replan(pilot) <= iv.high


@pytest.mark.parametrize("n_boot", [-1, 1.5])
def test_bad_n_boot_is_refused(n_boot):
    with pytest.raises(PowerError):
        agentab.power.plan(_pilot("continuous"), "x", 0.3, kind="continuous", n_boot=n_boot)
