"""The many-arm verdict: decide() judges the adjusted primary p-value and says both, without patching text."""

from __future__ import annotations

import numpy as np
import pandas as pd

from agentab import compare
from agentab.comparison.decide import Adjustment, decide


def _table(p: float) -> pd.DataFrame:
    return pd.DataFrame([{"metric": "outcome", "kind": "binary", "statistic": "rate", "role": "primary",
                          "baseline": 0.4, "candidate": 0.6, "effect": 0.2, "ci_low": 0.05, "ci_high": 0.35,
                          "p_value": p, "p_adjusted": p, "direction": "higher", "assessment": "better"}])


def test_the_adjustment_decides_and_both_p_values_are_said():
    table = _table(0.01)
    assert decide(table, "outcome", [], 0.05).verdict == "ship"
    held = decide(table, "outcome", [], 0.05, Adjustment(0.08, 4, "max-T"))
    assert held.verdict == "inconclusive"
    assert "p = 0.01 alone, 0.08 adjusted across 4 candidates (max-T)" in held.reasons[0]
    kept = decide(table, "outcome", [], 0.05, Adjustment(0.03, 4, "Holm"))
    assert kept.verdict == "ship" and "0.03 adjusted across 4 candidates (Holm)" in kept.reasons[0]
    assert decide(table, "outcome", [], 0.05, Adjustment(float("nan"), 2, "Holm")).verdict == "inconclusive"


def test_each_candidates_verdict_reads_its_adjusted_p():
    rng = np.random.default_rng(0)
    rows = [{"arm": a, "task_id": f"t{t:02d}", "seed": s, "outcome": bool(rng.random() < 0.3 + 0.25 * (a == "c1"))}
            for a in ("prod", "c1", "c2", "c3") for t in range(40) for s in range(3)]
    multi = compare(pd.DataFrame(rows), baseline="prod", candidate="all", metrics=["outcome"], n_resamples=499)
    for name, comp in multi.candidates.items():
        p, adjusted = comp.table.loc[0, "p_value"], comp.table.loc[0, "p_adjusted"]
        assert f"p = {p:.3g} alone, {adjusted:.3g} adjusted across 3 candidates (max-T)" in comp.decision.reasons[0]
        assert (comp.verdict == "ship") == (adjusted < 0.05 and comp.table.loc[0, "ci_low"] > 0)
