"""``compare`` gives bit-identical cost rows with the windowed quantile kernel and with the reference one.

The reference (``tests/test_quantile_kernel.py::_Reference``, the kernel before the window) is swapped in
for :class:`agentab.stats._kernels.QuantileKernel`; without ``swapped``/``bootstrapped`` methods it also
takes the dense-matrix resampling path of before. The window is forced onto these small inputs by lowering
:data:`agentab.stats._windowed.MIN_WINDOWED`, so the window's code runs, not the small-input shortcut.
"""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pytest

import agentab
import agentab.stats.two_sample as two_sample
from agentab.stats import _windowed
from test_quantile_kernel import _Reference

TRIALS = os.environ.get("AGENTAB_TB_TRIALS", "/work/shared/data/terminal-bench/tb_core_0.1.1_trials.csv")


def _both(monkeypatch, run):
    """``run()`` with the windowed kernel (window forced on) and with the reference kernel."""
    monkeypatch.setattr(_windowed, "MIN_WINDOWED", 16)
    new = run()
    monkeypatch.setattr(two_sample, "QuantileKernel", _Reference)
    old = run()
    return new, old


def _same_tables(new, old):
    pd.testing.assert_frame_equal(new.table, old.table, check_exact=True)
    assert new.decision == old.decision


@pytest.fixture(scope="module")
def scores() -> pd.DataFrame:
    return agentab.score(agentab.datasets.example_experiment(seed=0), agentab.datasets.example_specs())


@pytest.mark.filterwarnings("ignore::agentab.errors.StatsWarning")
def test_example_experiment_is_bit_identical(scores, monkeypatch):
    new, old = _both(monkeypatch, lambda: agentab.compare(scores, n_resamples=999))
    assert (new.table["kind"].isin(["cost", "count"])).any()
    _same_tables(new, old)


@pytest.mark.filterwarnings("ignore::agentab.errors.StatsWarning")
@pytest.mark.skipif(not os.path.exists(TRIALS), reason="Terminal-Bench trials not present")
@pytest.mark.parametrize("paired", ["auto", False])
def test_terminal_bench_cost_metrics_are_bit_identical(monkeypatch, paired):
    trials = pd.read_csv(TRIALS)
    pair = ["20250923_droid_claude-4-sonnet", "20250924_droid_gpt-5"]
    data = trials[trials["submission"].isin(pair)].assign(outcome=lambda d: d["is_resolved"].astype(float))
    metrics = {"agent_duration_sec": "cost", "trial_duration_sec": "cost", "n_tests_passed": "count"}

    def run():
        return agentab.compare(data, arm="submission", baseline=pair[0], candidate=pair[1], metrics=metrics,
                               primary="agent_duration_sec p50", paired=paired, n_resamples=1999)

    new, old = _both(monkeypatch, run)
    assert np.isfinite(new.table["p_value"]).sum() >= 4
    _same_tables(new, old)


def _small() -> pd.DataFrame:
    rng = np.random.default_rng(3)
    task = np.tile(np.repeat(np.arange(40), 3), 2)
    arm = np.repeat(["a", "b"], 120)
    tokens = np.round(np.exp(8 + rng.normal(0, 1, 40)[task] + 0.3 * rng.normal(size=240)))
    return pd.DataFrame({"arm": arm, "task_id": task, "tokens": tokens,
                         "outcome": (rng.random(240) < 0.5).astype(float)})


@pytest.mark.filterwarnings("ignore::agentab.errors.StatsWarning")
def test_spawned_seeds_give_different_resamples_and_integer_seeds_are_unchanged():
    from agentab.comparison._routing import _rng

    data = _small()
    children = np.random.SeedSequence(5).spawn(2)
    run = lambda seed: agentab.compare(data, baseline="a", candidate="b", metrics={"tokens": "cost"},
                                       n_resamples=499, seed=seed).table
    first, second = run(children[0]), run(children[1])
    assert not first[["p_value", "ci_low", "ci_high"]].equals(second[["p_value", "ci_low", "ci_high"]])
    pd.testing.assert_frame_equal(run(children[0]), first, check_exact=True)  # and each is reproducible
    # An integer seed's sequence has no spawn key: its streams are the ones drawn before the fix.
    import zlib
    for seed in (0, 12345):
        before = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(zlib.crc32(b"tokens"),)))
        np.testing.assert_array_equal(_rng(np.random.SeedSequence(seed), "tokens").random(8), before.random(8))
    a, b = (_rng(c, "tokens").random(8) for c in children)
    assert not np.array_equal(a, b)
