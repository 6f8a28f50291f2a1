"""Paired designs in agentab.power and ``agentab power --paired``, against R and statsmodels.

The references are in tests/reference/power_paired.csv, made by tests/reference/power_paired.R
(``Rscript tests/reference/power_paired.R`` from the repository root; its columns are documented there):
``pwr::pwr.t.test(type="paired")`` for the paired t-test, Connor's (1987) McNemar sample size written
in R from the published formula, and the power of the McNemar tests themselves by exact enumeration.

Tolerances: the paired t-test's unrounded pairs within 1e-5 relative of pwr's (both solve the same
noncentral-t equation with root finders), its powers within 1e-9; Connor's closed form within 1e-9
relative (the same arithmetic); statsmodels' ``TTestPower`` within 1e-4 relative (its solver's tolerance).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from agentab.cli import main
from agentab.errors import PowerError
from agentab.power import mde, power, sample_size
from agentab.stats.power import connor_pairs, paired_d, t_power

TABLE = pd.read_csv(Path(__file__).parent / "reference" / "power_paired.csv", comment="#")
REL_T = 1e-5
ABS_POWER = 1e-9
REL_CONNOR = 1e-9


def _rows(test: str, solve: str) -> list:
    rows = TABLE[(TABLE.test == test) & (TABLE.solve == solve)]
    assert len(rows) >= 12, f"the reference table lost its {test}/{solve} cases"
    return list(rows.itertuples())


def _ask(row) -> dict:
    if row.test == "paired_t":
        return {"design": "paired", "correlation": row.correlation, "alpha": row.alpha, "alternative": row.alternative}
    return {"design": "paired", "discordant": row.discordant, "alpha": row.alpha, "alternative": row.alternative}


def _kind(row) -> str:
    return "continuous" if row.test == "paired_t" else "binary"


# --------------------------------------------------------------------------- R references


@pytest.mark.parametrize("test", ["paired_t", "mcnemar"])
def test_sample_sizes_match_r(test):
    rel = REL_T if test == "paired_t" else REL_CONNOR
    for row in _rows(test, "n"):
        s = sample_size(_kind(row), row.effect, power=row.target_power, **_ask(row))
        assert s.exact_runs == pytest.approx(row.n_exact, rel=rel), row.case
        assert (s.tasks_per_arm, s.runs_per_arm) == (row.n, row.n), row.case
        assert s.power == pytest.approx(row.power, abs=ABS_POWER), row.case
        assert s.power >= row.target_power


@pytest.mark.parametrize("test", ["paired_t", "mcnemar"])
def test_powers_match_r(test):
    for row in _rows(test, "power"):
        p = power(_kind(row), row.effect, int(row.n), **_ask(row))
        assert p.power == pytest.approx(row.power, abs=ABS_POWER), row.case


def test_paired_t_matches_statsmodels_ttestpower():
    from statsmodels.stats.power import TTestPower

    words = {"two-sided": "two-sided", "greater": "larger", "less": "smaller"}
    for row in _rows("paired_t", "n")[::3] + _rows("paired_t", "power")[::4]:
        dz = float(paired_d(row.effect, row.correlation))
        if row.solve == "n":
            n = TTestPower().solve_power(effect_size=dz, alpha=row.alpha, power=row.target_power,
                                         alternative=words[row.alternative])
            got = sample_size("continuous", row.effect, power=row.target_power, **_ask(row)).exact_runs
            assert got == pytest.approx(n, rel=1e-4), row.case
        else:
            expected = TTestPower().power(dz, row.n, row.alpha, alternative=words[row.alternative])
            assert power("continuous", row.effect, int(row.n), **_ask(row)).power == pytest.approx(expected, abs=1e-9)


def test_connor_is_close_to_the_mcnemar_tests_it_approximates():
    """At Connor's n, the uncorrected McNemar z test (exact enumeration in R) has about the planned power,
    and the conditional exact binomial test a little less (it is conservative): measured, not assumed."""
    rows = [r for r in _rows("mcnemar", "n") if not math.isnan(r.power_exact_chisq)]
    assert len(rows) >= 12
    gaps_z = np.array([r.power_exact_chisq - r.power for r in rows])
    gaps_exact = np.array([r.power_exact_binomial - r.power for r in rows])
    assert np.all(np.abs(gaps_z) < 0.03), gaps_z.round(3)  # measured: +0.000 to +0.024
    assert np.all((gaps_exact < 0) & (gaps_exact > -0.05)), gaps_exact.round(3)  # measured: -0.039 to -0.010


# --------------------------------------------------------------------------- the formulas


def test_paired_effect_size_and_seeds():
    assert float(paired_d(0.5, 0.5)) == pytest.approx(0.5)
    assert float(paired_d(0.3, 0.6)) == pytest.approx(0.3 / math.sqrt(0.8))
    # m seeds per task: the task mean has variance sigma^2 (1 + (m - 1) icc) / m; rho is of the task means.
    s = sample_size("continuous", 0.3, design="paired", correlation=0.6, seeds_per_task=4, icc=0.25)
    dz = 0.3 / math.sqrt(0.8) * math.sqrt(4 / 1.75)
    at = [float(t_power(dz * math.sqrt(n), n - 1, 0.05, "two-sided")) for n in (s.tasks_per_arm - 1, s.tasks_per_arm)]
    assert at[0] < 0.8 <= at[1] and s.power == pytest.approx(at[1])
    assert s.runs_per_arm == 4 * s.tasks_per_arm
    assert any("task means over 4 seeds" in n for n in s.notes)


def test_paired_needs_far_fewer_tasks_than_independent():
    independent = sample_size("continuous", 0.1)
    paired = sample_size("continuous", 0.1, design="paired", correlation=0.8)
    assert independent.tasks_per_arm == 1571
    assert paired.tasks_per_arm == 316  # d_z = 0.1 / sqrt(0.4): pwr.t.test(d = 0.158, type = "paired") n = 315.88
    # rho = 0: pairing gains nothing, the same runs per arm (pwr's n = 1571.69; the t-test has n - 1 df, not 2 n - 2)
    assert sample_size("continuous", 0.1, design="paired", correlation=0.0).tasks_per_arm == 1572


def test_existing_calls_are_unchanged():
    for kwargs in ({"kind": "binary", "effect": 0.1, "baseline": 0.5}, {"kind": "continuous", "effect": 0.5},
                   {"kind": "binary", "effect": 0.1, "baseline": 0.5, "seeds_per_task": 3, "icc": 0.3}):
        default, explicit = sample_size(**kwargs), sample_size(**kwargs, design="independent")
        assert default == explicit and default.design == "independent"
        assert default.correlation is None and default.discordant is None
    assert sample_size("binary", 0.1, baseline=0.5).runs_per_arm == 388
    assert round(power("continuous", 0.5, 64).power, 3) == 0.801
    assert "paired" not in str(sample_size("continuous", 0.5))


def test_mde_inverts_power_in_both_designs():
    for kind, ask in (("continuous", {"correlation": 0.4}), ("binary", {"discordant": 0.25})):
        for alternative in ("two-sided", "less"):
            m = mde(kind, 120, design="paired", alternative=alternative, **ask)
            assert (m.effect < 0) == (alternative == "less")
            assert power(kind, m.effect, 120, design="paired", alternative=alternative, **ask).power == pytest.approx(0.8)
            assert m.design == "paired" and "paired" in str(m)


def test_mde_binary_respects_the_baseline():
    # baseline 0.9, discordant 0.15: the candidate-only cell (0.15 + delta) / 2 <= 0.1 caps a rise at 0.05
    assert mde("binary", 100, design="paired", discordant=0.15, baseline=0.9).effect is None
    assert mde("binary", 100, design="paired", discordant=0.15).effect > 0.05  # without the baseline's cap
    big = mde("binary", 20_000, design="paired", discordant=0.15, baseline=0.9).effect
    assert 0 < big < 0.05
    with pytest.raises(PowerError, match="allows effects"):
        sample_size("binary", 0.06, design="paired", discordant=0.15, baseline=0.9)


def test_results_record_the_design():
    s = sample_size("binary", 0.1, design="paired", discordant=0.3, baseline=0.5)
    d = s.to_dict()
    assert (d["design"], d["discordant"], d["correlation"], d["method"]) == ("paired", 0.3, None, "mcnemar")
    assert s.exact_runs == pytest.approx(connor_pairs(0.1, 0.3, 0.05, 0.8, "two-sided"))
    text = str(s)
    assert "paired design (discordant share 0.3 of pairs)" in text and "the same tasks in both arms" in text
    c = power("continuous", 0.4, [10, 20], design="paired", correlation=0.5)
    assert list(c.columns) == ["runs_per_arm", "tasks_per_arm", "seeds_per_task", "power"]
    assert (c.attrs["design"], c.attrs["correlation"]) == ("paired", 0.5)


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"kind": "binary", "effect": 0.4, "discordant": 0.3}, "larger than the discordant share"),
        ({"kind": "binary", "effect": 0.1, "discordant": 1.3}, "in (0, 1]"),
        ({"kind": "binary", "effect": 0.1, "discordant": 0.0}, "in (0, 1]"),
        ({"kind": "binary", "effect": 0.1}, "give discordant="),
        ({"kind": "binary", "effect": 0.1, "discordant": 0.3, "baseline": 0.05}, "allows effects"),
        ({"kind": "binary", "effect": 0.1, "correlation": 0.3}, "kind='continuous'"),
        ({"kind": "continuous", "effect": 0.3}, "give correlation="),
        ({"kind": "continuous", "effect": 0.3, "correlation": 1.0}, "[-1, 1)"),
        ({"kind": "continuous", "effect": 0.3, "correlation": -1.5}, "[-1, 1)"),
        ({"kind": "continuous", "effect": 0.3, "correlation": 0.5, "method": "simulation"}, "paired design"),
        ({"kind": "cost", "effect": -0.2, "baseline": list(range(1, 40))}, "not cost"),
    ],
)
def test_impossible_paired_questions_are_one_line_power_errors(kwargs, needle):
    kind, effect = kwargs.pop("kind"), kwargs.pop("effect")
    with pytest.raises(PowerError) as info:
        sample_size(kind, effect, design="paired", **kwargs)
    assert needle in str(info.value) and "\n" not in str(info.value)


def test_paired_parameters_need_the_paired_design():
    for kwargs in ({"correlation": 0.5}, {"discordant": 0.3}):
        with pytest.raises(PowerError, match="design='paired'"):
            sample_size("continuous" if "correlation" in kwargs else "binary", 0.1, baseline=None if
                        "correlation" in kwargs else 0.5, **kwargs)
    with pytest.raises(PowerError, match="design must be"):
        sample_size("continuous", 0.3, design="crossover")


# --------------------------------------------------------------------------- the command


def _run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_paired(capsys):
    code, out, err = _run(capsys, "power", "--metric", "continuous", "--effect", "0.3", "--paired", "--correlation", "0.6")
    assert code == 0 and "72 runs per arm = 72 tasks" in out and "paired design (correlation 0.6" in out, err
    code, out, _ = _run(capsys, "power", "--metric", "binary", "--effect", "0.1", "--paired", "--discordant", "0.3")
    assert code == 0 and "234 runs per arm" in out and "method mcnemar" in out
    code, out, _ = _run(capsys, "power", "--metric", "binary", "--mde", "--n", "234", "--paired", "--discordant", "0.3")
    assert code == 0 and "+0.100 (absolute)" in out
    code, _, err = _run(capsys, "power", "--metric", "continuous", "--effect", "0.3", "--correlation", "0.6")
    assert code != 0 and "add --paired" in err and err.count("\n") == 1
    code, _, err = _run(capsys, "power", "--metric", "binary", "--effect", "0.4", "--paired", "--discordant", "0.3")
    assert code != 0 and "discordant share" in err and err.count("\n") == 1


def _table(path: Path, arms: list[str] | None, column: str = "arm") -> Path:
    rng = np.random.default_rng(1)
    values = np.concatenate([rng.lognormal(8, 1, 100), rng.lognormal(9, 1, 100)])
    frame = pd.DataFrame({"tokens": values})
    if arms is not None:
        frame[column] = [arms[0]] * 100 + [arms[1]] * 100
    frame.to_csv(path, index=False)
    return path


def test_cli_baseline_table_is_split_by_arm_never_pooled(tmp_path, capsys):
    base = ["power", "--metric", "cost", "--column", "tokens", "--effect=-20%", "--baseline"]
    two = _table(tmp_path / "two.csv", ["baseline", "candidate"])
    code, out, err = _run(capsys, *base, str(two))
    assert code == 0 and "arm baseline of" in out and "(100 runs" in out and "not pooled with candidate" in out, err
    assert "density at the p95 of 100 runs" in out  # one arm's runs, not 200
    code, out, _ = _run(capsys, *base, str(two), "--baseline-arm", "candidate")
    assert code == 0 and "arm candidate of" in out
    other = _table(tmp_path / "ab.csv", ["a", "b"], column="variant")
    code, _, err = _run(capsys, *base, str(other), "--arm-column", "variant")
    assert code != 0 and "2 arms in column 'variant' (a, b)" in err and "--baseline-arm" in err and err.count("\n") == 1
    code, out, _ = _run(capsys, *base, str(other), "--arm-column", "variant", "--baseline-arm", "b")
    assert code == 0 and "arm b of" in out
    code, _, err = _run(capsys, *base, str(two), "--baseline-arm", "c")
    assert code != 0 and "not an arm" in err and "baseline, candidate" in err
    code, _, err = _run(capsys, *base, str(two), "--arm-column", "group")
    assert code != 0 and "no arm column 'group'" in err


def test_cli_baseline_without_arms_is_said_to_be_one_arm(tmp_path, capsys):
    one = _table(tmp_path / "one.csv", None)
    code, out, err = _run(capsys, "power", "--metric", "cost", "--column", "tokens", "--effect=-20%", "--baseline", str(one))
    assert code == 0 and "has no arm column" in out and "read as one arm" in out, err
    code, _, err = _run(capsys, "power", "--metric", "binary", "--effect", "0.1", "--baseline", "0.5", "--baseline-arm", "x")
    assert code != 0 and "--baseline table" in err
