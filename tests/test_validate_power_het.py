"""Section 4 of ``benchmarks/validate_power.py`` (heterogeneous effects): its true models and keyed streams."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import numpy as np
import pytest

_PATH = Path(__file__).resolve().parent.parent / "benchmarks" / "validate_power.py"
_SPEC = importlib.util.spec_from_file_location("validate_power", _PATH)
vp = sys.modules.setdefault("validate_power", importlib.util.module_from_spec(_SPEC))
if not hasattr(vp, "het_truth"):
    _SPEC.loader.exec_module(vp)


@pytest.mark.parametrize("li", [0, 1, 2])
def test_continuous_truth_ratio_is_the_generating_one(li):
    level = vp.HET["levels"][li]
    truth = vp.het_truth("continuous", li)
    assert truth["excess"] == pytest.approx(level, abs=0.01)
    # total ratio: effect SD over sqrt of the mean of the arms' between-task variances (1 and 1 + level^2)
    assert truth["total"] == pytest.approx(level / math.sqrt(1 + level**2 / 2), abs=0.01)
    assert truth["components"].delta == pytest.approx(vp.HET_KINDS["continuous"]["effect"])


def test_binary_truth_keeps_the_population_effect_and_has_no_excess_without_heterogeneity():
    for li in (0, 2):
        effect, _ = vp.het_population("binary", vp.HET["levels"][li], vp.het_shift("binary", li))
        assert effect == pytest.approx(vp.HET_KINDS["binary"]["effect"], abs=1e-8)
    assert vp.het_truth("binary", 0)["excess"] == 0.0
    assert vp.het_truth("binary", 2)["excess"] > 0.5
    # a uniform logit shift still moves tasks by different amounts on the rate scale
    assert 0.05 < vp.het_truth("binary", 0)["total"] < 0.4


def test_draws_are_paired_and_the_effect_shows():
    rng = np.random.default_rng(3)
    x, y = vp.het_draw("binary", 1, 4000, 3, rng)
    assert x.shape == y.shape == (12_000,)
    assert set(np.unique(x)) <= {0.0, 1.0}
    assert y.mean() - x.mean() == pytest.approx(vp.HET_KINDS["binary"]["effect"], abs=0.03)
    # paired: the two arms' task means are correlated
    assert np.corrcoef(x.reshape(-1, 3).mean(1), y.reshape(-1, 3).mean(1))[0, 1] > 0.3


def test_pilots_and_job_streams_are_keyed():
    a = vp.het_pilot("continuous", 0, 0, 1)
    assert a.equals(vp.het_pilot.__wrapped__("continuous", 0, 0, 1))
    assert not a.equals(vp.het_pilot.__wrapped__("continuous", 0, 1, 1))
    assert len(a) == 2 * vp.HET["pilot_tasks"] * vp.HET["seeds"]
    jobs = [vp.Job("het", r, s, c, 1, 1, 9) for r in (0, 1) for s in ("plan", "truth") for c in (0, 1)]
    states = {tuple(vp.job_seed(j).generate_state(2)) for j in jobs}
    assert len(states) == len(jobs)
