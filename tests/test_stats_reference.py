"""agentab.stats against values computed by R (scripts and outputs in tests/reference/)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from agentab.stats import ordinal_superiority

REFERENCE = Path(__file__).parent / "reference"


@pytest.mark.parametrize("case", list(pd.read_csv(REFERENCE / "ordinal_exact_coin.csv").itertuples()), ids=lambda c: f"case{c.case}")
def test_ordinal_exact_pvalues_match_coin(case):
    """Exact conditional Wilcoxon-Mann-Whitney with ties (coin::wilcox_test, distribution = "exact")."""
    x = np.array(case.x.split(), dtype=float)
    y = np.array(case.y.split(), dtype=float)
    greater = ordinal_superiority(x, y, alternative="greater", rng=0)
    less = ordinal_superiority(x, y, alternative="less", rng=0)
    assert greater.exact and less.exact
    assert greater.pvalue == pytest.approx(case.p_greater, abs=1e-12)
    assert less.pvalue == pytest.approx(case.p_less, abs=1e-12)
    # relabelling the levels (0-3 as 0, 1, 5, 10) changes nothing: only the order is used
    relabel = np.array([0.0, 1.0, 5.0, 10.0])
    again = ordinal_superiority(relabel[x.astype(int)], relabel[y.astype(int)], alternative="greater", rng=0)
    assert again.pvalue == greater.pvalue and again.statistic == greater.statistic
