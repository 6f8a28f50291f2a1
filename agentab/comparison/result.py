"""The result of :func:`agentab.compare`: the table, the decision, and their display."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from agentab._checks import jsonable_seed
from agentab._display import Blank, Block, Display, Items, Lines, Table
from agentab.comparison.decide import ASSESSMENT_RULE, Decision, format_value
from agentab.stats import ConfidenceInterval, Estimates, QuantileResult, TwoSampleResult

__all__ = ["Comparison", "ComparisonDesign", "ComparisonSettings", "Dropped"]


class _Record(Mapping):
    """A frozen record whose fields also read as a mapping (``settings["alpha"]``, ``dict(settings)``)."""

    def __getitem__(self, key: str) -> Any:
        if key not in self._keys():
            raise KeyError(key)
        return getattr(self, key)

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys())

    def __len__(self) -> int:
        return len(self._keys())

    def _keys(self) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(self))  # type: ignore[arg-type]


@dataclass(frozen=True)
class ComparisonSettings(_Record):
    """The settings a comparison ran with; passing them back to :func:`agentab.compare` reproduces it.

    Attributes
    ----------
    alpha : float
    n_resamples : int
    seed : int or numpy.random.SeedSequence
        The seed actually used (drawn and recorded when ``compare`` was given ``seed=None``; a spawned
        SeedSequence as itself).
    cluster : str or None
        The task column (None: runs independent).
    paired : {"auto", True, False}
        As asked; the design used is :attr:`Comparison.design`.
    primary : str
        The primary row, e.g. ``"outcome"`` or ``"tokens p95"``.
    arm : str
        The arm column.
    """

    alpha: float
    n_resamples: int
    seed: Any
    cluster: str | None
    paired: bool | str
    primary: str
    arm: str


@dataclass(frozen=True)
class ComparisonDesign(_Record):
    """The design of the primary metric's comparison.

    Attributes
    ----------
    kind : {"paired", "clustered", "independent"}
    label : str
        E.g. ``"paired by task (30 tasks)"``.
    seeds : str
        Seeds (runs) per task: ``"3"``, or a range ``"2-5"``.
    dropped_tasks, dropped_runs : tuple of int
        Tasks run by one arm only (and their runs), left out of a paired design, per arm (named in
        :attr:`Comparison.dropped`).
    warning : str
        What must be read before the numbers, shown in the first lines of every display and report: runs
        treated as independent because the data has no task column. Empty when there is nothing to say.
    """

    kind: str
    label: str
    seeds: str
    dropped_tasks: tuple[int, int] = (0, 0)
    dropped_runs: tuple[int, int] = (0, 0)
    warning: str = ""


@dataclass(frozen=True)
class Dropped(_Record):
    """Runs (and tasks) a comparison left out, counted and named.

    Attributes
    ----------
    reason : {"missing value", "task in one arm only"}
        A run whose metric value is missing (NaN, None, a blank cell) is left out of that metric's test; with a
        paired design, a task that only one arm ran (with a value) is left out with all its runs.
    arm : str
        The arm whose runs were left out.
    runs : int
        How many of its runs.
    tasks : int
        How many tasks were left out whole: for missing values, the tasks of this arm with no value at all
        (a task whose outcomes are all missing: 80 -> 79 tasks); for one-arm tasks, those tasks.
    ids : tuple of str
        The first few (up to 5, sorted as text) of the tasks left out whole, else of the tasks whose runs
        were left out; without a task column, of the runs (``run_id``, else the row label).
    metrics : tuple of str
        The metrics it concerns; empty when it concerns every metric compared.
    n_ids : int
        How many ids there are in all (``ids`` shows the first few).
    """

    reason: str
    arm: str
    runs: int
    tasks: int
    ids: tuple[str, ...]
    metrics: tuple[str, ...] = ()
    n_ids: int = 0

    def __str__(self) -> str:
        what = ", ".join(self.metrics) if self.metrics else "every metric"
        more = max(self.n_ids - len(self.ids), 0)
        named = ", ".join(self.ids) + (f" and {more} more" if more else "")
        runs = f"{self.runs} run{'s' if self.runs != 1 else ''} of {self.arm}"
        if self.reason == "task in one arm only":
            tasks = f"{self.tasks} task{'s' if self.tasks != 1 else ''}"
            return f"{what}: {tasks} run by {self.arm} only, left out of the paired comparison ({runs}): {named}"
        if self.tasks:
            tasks = f"{self.tasks} task{'s' if self.tasks != 1 else ''}"
            return f"{what}: {runs} left out (missing value); {tasks} with no value at all in {self.arm}: {named}"
        return f"{what}: {runs} left out (missing value): {named}"


@dataclass(frozen=True)
class Comparison(Display):
    """The result of :func:`compare`.

    Attributes
    ----------
    table : pandas.DataFrame
        One row per reported statistic (columns :data:`TABLE_COLUMNS`); the
        primary metric first.
    decision : Decision
        ``decision.verdict`` is "ship", "don't ship" or "inconclusive", with
        ``reasons``.
    baseline, candidate : str
        The arms compared.
    arms : pandas.DataFrame
        Per arm: model, harness, runs, tasks.
    design : ComparisonDesign
        The design used for the primary metric and the seeds per task (its
        fields also read as a mapping: ``design["kind"]``).
    metrics : pandas.DataFrame
        Every metric's kind, direction and where they came from
        (declared, score, inferred).
    levels : pandas.DataFrame
        Ordinal metrics: each level's share in each arm and the shift.
    settings : ComparisonSettings
        alpha, n_resamples, seed (the one used), cluster, paired, primary, arm
        (also readable as a mapping).
    notes : tuple of str
        What :func:`compare` decided on the user's behalf (arm roles, missing
        task column, excluded rows).
    results : dict
        The scipy-style result of every test, by metric (see :meth:`metric`).
    data : pandas.DataFrame
        The runs of the two arms that were compared (rows of ``compare``'s
        input; with a paired design, only those of the tasks both arms ran),
        for plots and reports.
    plan : agentab.power.Plan or None
        When the verdict is inconclusive because the primary metric is not
        significant: the plan of a new experiment that would detect the
        observed effect (or ``min_effect``) with 80% power.
    dropped : tuple of Dropped
        Every run and task left out of a test, counted and named: runs with
        a missing value, tasks run by one arm only in a paired design.
    holm_family : tuple of str
        The rows whose p-values were Holm-adjusted together: every secondary
        row with a p-value, except metrics constant in both arms. A
        secondary row's adjusted p-value (and so its assessment) depends on
        this family: adding or removing metrics changes it.
    """

    table: pd.DataFrame
    decision: Decision
    baseline: str
    candidate: str
    arms: pd.DataFrame
    design: ComparisonDesign
    metrics: pd.DataFrame
    levels: pd.DataFrame
    settings: ComparisonSettings
    notes: tuple[str, ...]
    results: dict[str, Any] = field(repr=False, default_factory=dict)
    data: pd.DataFrame = field(repr=False, default_factory=pd.DataFrame)
    plan: Any = field(repr=False, default=None)
    dropped: tuple[Dropped, ...] = ()
    holm_family: tuple[str, ...] = ()

    @property
    def verdict(self) -> str:
        return self.decision.verdict

    def metric(self, name: str) -> TwoSampleResult:
        """The scipy-style result of a metric or a table row.

        ``"outcome"``, ``"rubric"``, ``"outcome pass^5"``, ``"tokens mean"``:
        that test's result. ``"tokens"``: the quantile comparison with arrays
        over its quantiles; ``"tokens p95"``: the same for p95 alone, with
        scalar fields. Each has statistic, pvalue, confidence_interval,
        estimates, method, design and the typed fields of
        :class:`~agentab.stats.TwoSampleResult`.
        """
        if name in self.results:
            return self.results[name]
        metric, _, stat = name.rpartition(" ")
        result = self.results.get(metric)
        if isinstance(result, QuantileResult) and stat.startswith("p"):
            qs = np.atleast_1d(result.q)
            match = np.flatnonzero(np.isclose(qs * 100, float(stat[1:]))) if stat[1:].replace(".", "", 1).isdigit() else []
            if len(match):
                return _one_quantile(result, int(match[0]))
        raise KeyError(f"no metric {name!r} in this comparison; rows: {', '.join(self.table['metric'])}")

    def flipped_tasks(self, n: int = 10) -> pd.DataFrame:
        """The tasks whose per-task result of the primary metric moved most: the ``n`` most regressed, then the
        ``n`` most improved, each ranked by a per-task exact test.

        Per-task results rest on a few runs each and are noisy: a task that flipped may not flip again. The
        p-values are per task and **not adjusted** for the number of tasks (``p_adjusted`` is the
        Benjamini-Hochberg adjustment over every task compared): read the table as where to look, not as
        findings. The comparison's verdict rests on the primary test, never on this table.

        Parameters
        ----------
        n : int, default 10
            How many tasks of each direction: up to ``n`` regressed ones (first) and up to ``n`` improved
            ones, so at most ``2 n`` rows. Tasks whose result did not move are never listed.

        Returns
        -------
        pandas.DataFrame
            One row per listed task, columns ``task_id``, ``baseline``, ``candidate`` (the task's statistic in
            each arm), ``effect`` (candidate - baseline, in the metric's units), ``p_value``, ``direction``
            ("regressed" or "improved", by the metric's direction: for a metric where lower is better a rise
            is a regression); then ``statistic`` (what ``baseline`` and ``candidate`` are), ``n_baseline``,
            ``n_candidate`` (runs with a known value), ``missing_baseline``, ``missing_candidate`` (runs whose
            value is unknown: left out, never read as 0), ``successes_baseline``, ``successes_candidate``
            (binary metrics; NA otherwise), ``p_adjusted``, and the task's runs in each arm as tuples in the
            order of :attr:`data`: ``runs_*`` (``run_id``, else the row label), ``values_*`` (None when
            unknown) and ``reasons_*`` (the failure shapes :func:`agentab.score` found true, its ``reasons``,
            and a ``failure_mode``, ``termination_reason`` or ``error`` column when the data has one).
            ``attrs`` holds the metric, the test, how many tasks were compared, regressed, improved and
            unchanged, and ``one_arm_tasks``: tasks with a known value in one arm only, left out and counted.

        Raises
        ------
        CompareError
            The comparison has no task column (``cluster=None``), or ``n`` is not a whole number >= 1.

        Notes
        -----
        The per-task statistic is the primary metric's: for a binary metric the rate (successes over runs
        with a known value), tested by Fisher's exact test on the task's 2x2 table; for an ordinal metric
        the mean level, for a continuous one the mean, for a cost or count metric the primary's quantile
        (inverse ECDF: with 5 runs, p95 is the largest), each tested by a permutation of the task's runs
        between the arms (every split when there are at most 10,000, else 9,999 random ones from a stream of
        the comparison's seed and the task's run counts). Two-sided throughout. With one run per arm every p-value is
        1: one run each cannot show a per-task difference. Ranked by p-value, then by ``|effect|``
        (largest first), then by task id. Same data, same seed: same table.

        Examples
        --------
        >>> import agentab
        >>> scores = agentab.score(agentab.datasets.example_experiment(seed=0, n_tasks=12, n_seeds=3))
        >>> result = agentab.compare(scores, metrics=["outcome"], n_resamples=199, seed=0)
        >>> flipped = result.flipped_tasks(n=2)
        >>> flipped.columns[:6].tolist()
        ['task_id', 'baseline', 'candidate', 'effect', 'p_value', 'direction']
        """
        from agentab.comparison._flipped import flipped_tasks

        return flipped_tasks(self, n)

    def to_dict(self) -> dict[str, Any]:
        """Everything a CI job or a dashboard needs, as JSON-ready Python values.

        The layout is stable within a schema version (``"schema":
        "agentab.comparison/1"``); keys may be added, never renamed or
        removed. Missing numbers (NaN) and unbounded ones (a ratio over a
        baseline of 0) are None, so ``json.dumps(...,
        allow_nan=False)`` works.

        Keys: ``schema``, ``verdict``, ``reasons`` and ``explanations``
        (lists of sentences), ``baseline`` and ``candidate`` (arm names),
        ``primary``, ``arms`` (per arm: arm, model, harness, runs, tasks),
        ``design`` (kind, label, seeds, dropped_tasks, dropped_runs),
        ``design`` also has ``warning`` (runs treated as independent for
        want of a task column; "" otherwise),
        ``settings`` (alpha, n_resamples, seed, cluster, paired, primary, arm),
        ``metrics`` (one object per table row, keys :data:`TABLE_COLUMNS`),
        ``levels`` (ordinal level shares: metric, level, baseline,
        candidate, shift), ``guardrails`` (rule, metric, row, status,
        estimate, ci_low, ci_high, bound, relative, note), ``notes``, and
        ``plan`` (the next experiment of an inconclusive verdict: metric,
        effect, design, tasks, seeds_per_task, runs_per_arm, power, alpha;
        None otherwise), ``dropped`` (the runs and tasks left out: reason,
        arm, runs, tasks, ids, metrics, n_ids; see :class:`Dropped`),
        ``holm_family`` (the rows adjusted together) and ``assessment_rule``
        (how the ``assessment`` of every row was reached).

        Examples
        --------
        >>> import json, agentab
        >>> scores = agentab.score(agentab.datasets.example_experiment(seed=0, n_tasks=12, n_seeds=2))
        >>> out = agentab.compare(scores, metrics=["outcome"], n_resamples=199, seed=0).to_dict()
        >>> out["schema"], out["verdict"], out["metrics"][0]["metric"]
        ('agentab.comparison/1', 'inconclusive', 'outcome')
        >>> _ = json.dumps(out, allow_nan=False)
        """
        arms = self.arms.reset_index()
        arms = arms.rename(columns={arms.columns[0]: "arm"})
        checks = [
            {"rule": str(c.guardrail), "metric": c.guardrail.metric, "row": c.guardrail.row, "status": c.status,
             "estimate": c.estimate, "ci_low": c.ci_low, "ci_high": c.ci_high, "bound": c.guardrail.bound,
             "relative": c.guardrail.relative, "note": c.note}
            for c in self.decision.guardrails
        ]
        return _jsonable({
            "schema": "agentab.comparison/1",
            "verdict": self.verdict,
            "reasons": list(self.decision.reasons),
            "explanations": list(self.decision.explanations),
            "baseline": self.baseline,
            "candidate": self.candidate,
            "primary": self.settings.primary,
            "arms": arms.to_dict(orient="records"),
            "design": dict(self.design),
            "settings": {**self.settings, "seed": jsonable_seed(self.settings.seed)},
            "metrics": self.table.to_dict(orient="records"),
            "levels": self.levels.to_dict(orient="records"),
            "guardrails": checks,
            "notes": list(self.notes),
            "dropped": [dict(d) for d in self.dropped],
            "holm_family": list(self.holm_family),
            "assessment_rule": ASSESSMENT_RULE,
            "plan": None if self.plan is None else {
                "metric": self.plan.metric, "effect": self.plan.effect, "effect_text": self.plan.effect_text(),
                "design": self.plan.design, "tasks": self.plan.tasks, "seeds_per_task": self.plan.seeds_per_task,
                "runs_per_arm": self.plan.runs_per_arm, "power": self.plan.power, "alpha": self.plan.alpha,
            },
        })

    def __repr__(self) -> str:
        return f"Comparison({self.candidate!r} vs {self.baseline!r}: {self.verdict}, {len(self.table)} rows)"

    def _header(self) -> list[str]:
        arms, s = self.arms, self.settings

        def describe(arm: str) -> str:
            parts = [p for p in (arms.loc[arm, "model"], arms.loc[arm, "harness"]) if p != "-"]
            return f"{arm} ({' + '.join(parts)})" if parts else arm

        cand, base = describe(self.candidate), describe(self.baseline)
        design = (
            f"design: {self.design.label}; seeds per task {self.design.seeds}; "
            f"alpha {s.alpha:g}; {s.n_resamples} resamples; seed {s.seed}"
        )
        lines = [f"agentab comparison: {cand} vs {base}", design]
        if self.design.warning:
            lines.append(f"WARNING: {self.design.warning}")
        lines += [f"left out: {d}" for d in self.dropped]
        return lines

    def to_frame(self) -> pd.DataFrame:
        """The comparison table (one row per statistic), as :attr:`table`; a copy."""
        return self.table.copy()

    def summary_table(self) -> pd.DataFrame:
        """The table as people read it: formatted effects, intervals and p-values (strings), one row per statistic."""
        t = self.table
        shown = pd.DataFrame({"metric": t["metric"], "statistic": t["statistic"]})
        for col in ("baseline", "candidate", "effect"):
            shown[col] = [format_value(v, k, signed=col == "effect") for v, k in zip(t[col], t["kind"])]
        shown["95% CI" if self.settings.alpha == 0.05 else "CI"] = [
            f"[{format_value(lo, k, True)}, {format_value(hi, k, True)}]" if np.isfinite(lo) else "-"
            for lo, hi, k in zip(t["ci_low"], t["ci_high"], t["kind"])
        ]
        shown["ratio"] = [f"{r:.2f}" if np.isfinite(r) else "" for r in t["ratio"]]
        shown["p"] = [f"{p:.3g}" if np.isfinite(p) else "-" for p in t["p_value"]]
        shown["p (Holm)"] = [f"{p:.3g}" if np.isfinite(p) else "-" for p in t["p_adjusted"]]
        shown["assessment"] = t["assessment"]
        return shown

    def footnotes(self) -> list[str]:
        """What the numbers of :meth:`summary_table` mean (the scale of effects, the quantile, ordinal means)."""
        lines = ["effects are candidate minus baseline; rates and means are averages over tasks, each task weighing the same"]
        if (self.table["kind"].isin(["cost", "count"])).any():
            lines.append("quantiles: inverse of the empirical CDF (always an observed value), tasks weighted equally")
        ordinal = self.table.loc[(self.table["kind"] == "ordinal") & (self.table["role"] != "descriptive"), "metric"]
        if len(ordinal):
            lines.append(
                f"{', '.join(ordinal)}: the effect is Cliff's delta, P(candidate > baseline) - P(candidate < baseline), "
                "which uses only the order of the levels; the mean level is a descriptive row of its own"
            )
        return lines

    def family_note(self) -> str:
        """Which rows form the Holm family (a secondary's adjusted p-value, so its assessment, depends on it)."""
        if not self.holm_family:
            return "Holm family: empty (no secondary row has a p-value); the primary metric is tested alone at alpha"
        return (f"Holm family ({len(self.holm_family)} rows, adjusted together; the primary metric is tested alone): "
                f"{', '.join(self.holm_family)}; a secondary's adjusted p-value, and so its assessment, changes "
                "with the metrics compared")

    def _level_lines(self) -> list[str]:
        lines = []
        for metric, shares in self.levels.groupby("metric", sort=False):
            parts = [
                f"{level}: {b:.1%} -> {c:.1%} ({100 * d:+.1f} pts)"
                for level, b, c, d in zip(shares["level"], shares["baseline"], shares["candidate"], shares["shift"])
            ]
            lines.append(f"{metric} level shares: " + "; ".join(parts))
        return lines

    def _warning_lines(self) -> list[str]:
        warned = self.table[self.table["warnings"] != ""]
        return [f"{m}: {w}" for m, w in zip(warned["metric"], warned["warnings"])]

    def _view(self) -> list[Block]:
        """What ``str()`` and Jupyter show: header, verdict, the table, footnotes, level shares, warnings, notes."""
        view: list[Block] = [Lines(self._header()), Blank(), *self.decision._view(shout=True), Blank(),
                      Table(self.summary_table()),
                      Lines([f"({line})" for line in (*self.footnotes(), self.family_note(), ASSESSMENT_RULE)], small=True)]
        if len(self.levels):
            view += [Blank(), Lines(self._level_lines())]
        if self._warning_lines():
            view += [Blank(), Items(self._warning_lines(), title="warnings:", bullet="", collapsed=True)]
        if self.notes:
            view += [Blank(), Items(list(self.notes), title=None, indent="", bullet="note: ")]
        return view


def _jsonable(value: Any) -> Any:
    """Plain JSON values: numpy scalars unwrapped, non-finite numbers and pandas' NA as None, tuples as lists."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if value is None or value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, float) and not np.isfinite(value):
        return None
    if isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def _one_quantile(result: QuantileResult, j: int) -> QuantileResult:
    """The part of a quantile comparison that concerns its ``j``-th quantile, as scalars."""
    pick = lambda v: float(np.atleast_1d(v)[j])
    ci, ri = result.confidence_interval, result.ratio_interval
    notes = (*result.notes, *result.notes_by_q[j])
    return dataclasses.replace(
        result,
        statistic=pick(result.statistic),
        pvalue=pick(result.pvalue),
        confidence_interval=ConfidenceInterval(pick(ci.low), pick(ci.high)),
        estimates=Estimates(pick(result.estimates.baseline), pick(result.estimates.candidate)),
        warnings=tuple(notes),
        q=pick(result.q),
        ratio=pick(result.ratio),
        ratio_interval=ConfidenceInterval(pick(ri.low), pick(ri.high)),
    )
