"""The benchmark suite runs (small sizes) and its fast paths agree with the references it times."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


@pytest.mark.slow  # runs every benchmark case once: run by `pytest -m slow` (CI)
def test_run_quick_prints_every_case_with_agreement():
    out = subprocess.run(
        [sys.executable, str(BENCHMARKS / "run.py"), "--quick"], capture_output=True, text=True, timeout=600, check=True
    ).stdout
    cases = ("ordinal permutation", "ordinal bootstrap BCa", "p95 difference CI", "paired tasks", "compare end to end",
             "ordinal power simulation")
    for case in cases:
        assert case in out
    # p-values agree within 4 Monte Carlo standard errors, intervals within 15% of their width
    for se in re.findall(r"\(([\d.]+) SE\)", out):
        assert float(se) < 4.0
    for share in re.findall(r"\(([\d.]+)% of width\)", out):
        assert float(share) < 15.0
