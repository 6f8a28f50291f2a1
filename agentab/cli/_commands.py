"""The commands of ``agentab``: each reads its options, hands the work to the library, prints the result.

One function per command, ``run_<command>(args) -> exit code``; the library is called at call time
through its public names (``agentab.compare``, ``agentab.power.plan``, ...).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

import agentab
from agentab._checks import MIN_DECISION_RESAMPLES, check_alpha, check_alternative, check_n_resamples, check_whole
from agentab._write import write_table
from agentab.cli._arms import TRAJECTORY_NEEDS, _runs_column, candidates, check_arms, compare_data, no_spec
from agentab.cli._inputs import (
    TABLE_SUFFIXES,
    InputError,
    checked,
    filter_rows,
    is_table,
    load,
    need_column,
    number,
    parse_guardrails,
    parse_metrics,
    read_spec,
    read_table,
    score,
    write_spec,
)
from agentab.cli._output import (
    EXIT_DONT_SHIP,
    EXIT_INCONCLUSIVE,
    EXIT_OK,
    Progress,
    exit_code,
    note,
    print_rejected,
    say,
    say_result,
)
from agentab.comparison.multi import MultiComparison
from agentab.errors import PowerError, SpecError
from agentab.reporting import FORMATS as REPORT_FORMATS
from agentab.traces import format_summary

__all__ = ["DEFAULT_METRICS", "DEMO_GUARDRAILS", "DEMO_METRICS", "DEMO_PLAN_EFFECT", "run_compare", "run_demo",
           "run_diagnose", "run_example", "run_formats", "run_plan", "run_power", "run_score", "run_summary"]

#: The metrics ``agentab compare`` (and ``agentab demo``) compare by default, those the scores have:
#: outcome decides; trajectory and cost explain.
DEFAULT_METRICS = [
    "outcome", "rubric", "tokens", "cost_usd", "n_steps", "loop", "cap_hit", "non_terminated",
    "arg_accuracy", "n_errors",
]  # fmt: skip
#: The same list under its first name.
DEMO_METRICS = DEFAULT_METRICS
#: The guardrails of ``agentab demo`` (``agentab compare`` has none by default).
DEMO_GUARDRAILS = {"tokens": "p95 <= +10%", "cost_usd": "p95 <= +10%"}
#: The effect ``agentab demo`` plans for: +5 points of success.
DEMO_PLAN_EFFECT = 0.05


def run_demo(args: argparse.Namespace) -> int:
    """``agentab demo``: the whole product on the embedded example experiment."""
    progress = Progress.for_args(args)
    start = time.perf_counter()
    traces = agentab.datasets.example_experiment(seed=args.seed)
    elapsed = time.perf_counter() - start
    n_tasks = traces.runs["task_id"].nunique()
    say("agentab demo: the embedded example experiment")
    say(f"  {traces!r}, {n_tasks} tasks, loaded in {elapsed:.2f} s\n"
        "  baseline and candidate share the model and differ in the harness (a loop guard and\n"
        "  clearer tool descriptions); every task ran with the same seeds in both arms.\n")
    say(format_summary(agentab.summarize(traces)))
    say("\nSuccess rate is averaged over tasks; steps, tokens and cost are long-tailed, so they are\n"
        "shown at p50 and p95 (the inverse empirical CDF, tasks weighing the same, as compare uses),\n"
        "not as means.")
    specs = agentab.datasets.example_specs(seed=args.seed, n_tasks=n_tasks)
    scores = score(traces, specs, progress)
    say("\nTrajectory scores (each task's spec: read, edit and test the target within 15 steps,\n"
        "loop cap 3, modify only the intended files, delete nothing):\n")
    say(format_summary(agentab.summarize_scores(scores)))
    with progress.phase("diagnosing", total=1):
        findings = agentab.diagnose(traces, spec=specs).findings
    if findings:
        say(f"\nFindings ({len(findings)}):")
        for finding in findings[:8]:
            say(f"- {finding.title}\n    {finding.reading}")
    say("\nComparison: outcome decides (tested at alpha 0.05), trajectory explains (Holm-adjusted),\n"
        "cost constrains (guardrails on the p95 of tokens and dollars). Tasks are the unit: the same\n"
        "tasks ran in both arms, so every test swaps the arms of whole tasks.\n")
    with progress.phase("comparing", unit=" metrics") as tick:
        result = agentab.compare(scores, metrics=DEMO_METRICS, guardrails=DEMO_GUARDRAILS, seed=args.seed,
                                 progress=tick)
    say(result)
    say(f"\nPlanning the next experiment: how many tasks and seeds detect +{DEMO_PLAN_EFFECT * 100:.0f} points of\n"
        "success (the primary metric) with 80% power? This experiment serves as the pilot: its baseline arm\n"
        "gives the success rate and the intra-task correlation, and its two arms how much the effect\n"
        "varies from task to task (agentab plan PILOT --metric outcome --effect 0.05).\n")
    say(agentab.power.plan(scores, "outcome", DEMO_PLAN_EFFECT))
    return EXIT_OK


def run_example(args: argparse.Namespace) -> int:
    """``agentab example``: the example experiment written as JSONL, one file per arm."""
    paths = agentab.datasets.write_example(args.out, seed=args.seed, n_tasks=args.tasks, n_seeds=args.seeds)
    for arm, path in paths.items():
        say(f"{arm}: {path}")
    spec = write_spec(args.out / "spec.json", agentab.datasets.example_specs(seed=args.seed, n_tasks=args.tasks))
    say(f"spec: {spec}  (agentab compare {paths['baseline']} {paths['candidate']} --spec {spec})")
    return EXIT_OK


def run_formats(args: argparse.Namespace) -> int:
    """``agentab formats``: the trace formats, with an example of each."""
    for fmt in agentab.formats.available().values():
        say(f"{fmt.name}: {fmt.summary}")
        say(f"  example: {fmt.example}")
        if fmt.fields:
            mapping = ", ".join(f"{name} <- {key}" for name, key in fmt.fields.items())
            say(f"  run-level fields (--field NAME=KEY to change): {mapping}")
        say()
    say("--format auto (the default) detects each file's format from its first bytes.")
    return EXIT_OK


def run_summary(args: argparse.Namespace) -> int:
    """``agentab summary``: the per-arm summary of trace files or results tables."""
    by = args.arm_column or args.by
    if _tables(args.traces):
        table = read_table(list(args.traces), args)
        say(format_summary(_summarize_table(table, by)))
        return EXIT_OK
    traces = load(list(args.traces), args, Progress.for_args(args))
    runs = filter_rows(traces.runs, args)
    if by not in runs.columns:
        flag = "--arm-column" if args.arm_column else "--by"
        raise InputError(f"{flag} {by}: cannot group by {by!r}, not a runs column "
                         f"(columns: {', '.join(map(str, runs.columns))})")
    say(format_summary(agentab.summarize(runs, by=by)))
    print_rejected(traces, quiet=args.quiet)
    return EXIT_OK


def _tables(sources: list[Path]) -> bool:
    """Whether the sources are results tables (all of them); a mixture is an error."""
    tables = [is_table(p) for p in sources]
    if any(tables) and not all(tables):
        raise InputError("give trace files/folders or results tables (.csv/.tsv/.parquet/flat .jsonl), not both")
    return bool(tables) and all(tables)


#: The runs-table columns agentab.summarize reads that a results table may lack (shown as n/a).
_SUMMARY_COLUMNS = {"model": object, "harness": object, "n_steps": float, "tokens": float, "cost_usd": float,
                    "n_errors": float}


def _summarize_table(table: pd.DataFrame, by: str) -> pd.DataFrame:
    """agentab.summarize of a results table: the columns it lacks are missing (n/a), never 0."""
    for name in ("task_id", "outcome"):
        need_column(table, name, "agentab summary")
    if by not in table.columns:
        raise InputError(f"--arm-column {by}: no such column (columns: {', '.join(map(str, table.columns))})")
    absent = [c for c in _SUMMARY_COLUMNS if c not in table.columns]
    filled = table.assign(**{c: pd.Series(np.nan, index=table.index, dtype=_SUMMARY_COLUMNS[c]) for c in absent})
    summary = agentab.summarize(filled, by=by)
    if "n_errors" in absent:
        summary[["step_error_rate", "runs_with_error"]] = np.nan
    return summary


def run_score(args: argparse.Namespace) -> int:
    """``agentab score``: every run scored; the per-run table written, or its per-arm summary printed."""
    progress = Progress.for_args(args)
    suffix = None if args.out is None else args.out.suffix.lower()
    if suffix not in (None, *TABLE_SUFFIXES):
        raise SpecError(f"{args.out}: the output must end in .csv or .parquet")
    if _tables(args.traces):
        return _score_table(args)
    spec = read_spec(args.spec)
    traces = load(list(args.traces), args, progress)
    scores = filter_rows(score(traces, spec, progress), args)
    if args.out is None:
        say(format_summary(agentab.summarize_scores(scores)))
    else:
        write_table(scores, args.out, raw_csv=args.raw_csv)  # atomic: the old file or the new one, whole
        say(f"{len(scores):,} runs scored: {args.out}")
    print_rejected(traces, quiet=args.quiet)
    return EXIT_OK


def _score_table(args: argparse.Namespace) -> int:
    """``agentab score TABLE``: a results table passes through (no --spec), its columns' kinds shown."""
    sources = ", ".join(map(str, args.traces))
    no_spec(args, args.traces, instead="give trace files to score")
    table = read_table(list(args.traces), args)
    if args.out is not None:
        write_table(table, args.out, raw_csv=args.raw_csv)
        say(f"{len(table):,} runs (a results table, passed through): {args.out}")
        return EXIT_OK
    say(f"{sources}: a results table of {len(table):,} runs, passed through as it is (no trajectories to score)")
    for column in table.columns:
        values = table[column]
        kind = ("binary" if isinstance(values.dtype, pd.BooleanDtype) else
                "numeric" if pd.api.types.is_numeric_dtype(values) else "text")
        blank = int(values.isna().sum())
        say(f"  {column}: {kind}" + (f", {blank:,} missing" if blank else ""))
    return EXIT_OK


def run_diagnose(args: argparse.Namespace) -> int:
    """``agentab diagnose``: failure shapes across an experiment."""
    progress = Progress.for_args(args)
    if _tables(args.traces):
        raise InputError(f"agentab diagnose reads trace files: {TRAJECTORY_NEEDS} ({', '.join(map(str, args.traces))}); "
                         "compare the table's metrics with agentab compare")
    if args.where:
        raise InputError("--where filters results tables and scores; agentab diagnose reads whole traces: "
                         "write the runs you want with agentab score -o, or filter the trace files")
    spec = read_spec(args.spec)
    traces = load(list(args.traces), args, progress)
    with progress.phase(f"diagnosing {len(traces.runs):,} runs", total=1):
        found = agentab.diagnose(traces, spec=spec, by=args.by)
    say(found)
    print_rejected(traces, quiet=args.quiet)
    return EXIT_OK


def _power_baseline(args: argparse.Namespace) -> object:
    """``agentab power --baseline``: a rate, level shares, or a pilot sample read from a file."""
    text = args.baseline
    if (args.arm_column or args.baseline_arm) and (text is None or args.metric not in ("cost", "count")):
        raise PowerError("--arm-column and --baseline-arm choose the arm of a --baseline table (cost, count)")
    if text is None:
        return None
    if args.metric == "binary":
        return number(text, "--baseline")
    if args.metric == "ordinal":
        return [number(part, "--baseline share") for part in text.split(",")]
    if args.metric == "continuous":
        raise PowerError("--baseline is not used for continuous metrics (the effect is Cohen's d)")
    path = Path(text)
    if not path.exists():
        raise PowerError(f"--baseline {text}: no such file (cost/count take a pilot sample file)")
    if is_table(path):
        table = _baseline_arm(args, path, read_table(path, args))
        if args.column is None or args.column not in table.columns:
            raise PowerError(f"{path}: say --column (columns: {', '.join(map(str, table.columns))})")
        try:
            return pd.to_numeric(table[args.column], errors="raise").to_numpy(dtype=float)
        except (ValueError, TypeError) as err:
            raise PowerError(f"{path}, column {args.column}: {err}") from err
    if args.arm_column or args.baseline_arm:
        raise PowerError(f"{path} is one number per line, with no arms: --arm-column and --baseline-arm need a table")
    values = []
    for line_number, line in enumerate(path.read_text().splitlines(), start=1):
        if line.strip():
            values.append(number(line, f"{path}, line {line_number}"))
    say(f"baseline sample: {path}, {len(values):,} values read as one arm")
    return values


def _baseline_arm(args: argparse.Namespace, path: Path, table: pd.DataFrame) -> pd.DataFrame:
    """The baseline arm's rows of a ``--baseline`` table: split by its arm column, never pooled; said on stdout."""
    column = args.arm_column or ("arm" if "arm" in table.columns else None)
    if column is None:
        say(f"baseline sample: {path} has no arm column (name it with --arm-column), so its runs are read as one arm")
        return table
    if column not in table.columns:
        raise PowerError(f"{path}: no arm column {column!r} (columns: {', '.join(map(str, table.columns))})")
    arms = table[column].dropna().astype(str)
    names = sorted(arms.unique())
    chosen = args.baseline_arm
    if chosen is None:
        if len(names) == 1:
            chosen = names[0]
        elif "baseline" in names:
            chosen = "baseline"
        else:
            raise PowerError(f"{path} has {len(names)} arms in column {column!r} ({', '.join(names)}): name the "
                             "baseline one with --baseline-arm (arms are never pooled)")
    if chosen not in names:
        raise PowerError(f"--baseline-arm {chosen}: not an arm of {path} (column {column!r}: {', '.join(names)})")
    rows = table.loc[arms.index[arms == chosen]]
    others = [name for name in names if name != chosen]
    also = f"; not pooled with {', '.join(others)}" if others else ""
    say(f"baseline sample: arm {chosen} of {path} ({len(rows):,} runs, column {column!r}){also}")
    return rows


def _alternative(args: argparse.Namespace) -> str:
    """--alternative in scipy's words (two-sided, greater, less); larger and smaller are translated here."""
    return checked(check_alternative, args.alternative, "--alternative")


def run_power(args: argparse.Namespace) -> int:
    """``agentab power``: sample size (default), power (--n) or minimum detectable effect (--mde --n)."""
    if not args.paired and (args.correlation is not None or args.discordant is not None):
        raise PowerError("--correlation and --discordant describe a paired design: add --paired")
    baseline = _power_baseline(args)
    common = {
        "baseline": baseline, "alpha": args.alpha, "seeds_per_task": args.seeds, "icc": args.icc,
        "alternative": _alternative(args), "quantile": args.quantile, "method": args.method,
    }
    if args.paired:
        common.update(design="paired", correlation=args.correlation, discordant=args.discordant)
    runs = None if not args.n else args.n if len(args.n) > 1 else args.n[0]
    if args.mde:
        if not args.n:
            raise PowerError("--mde needs --n (runs per arm)")
        result = agentab.power.mde(args.metric, runs, power=args.power, **common)
        say(result.to_string(index=False) if isinstance(result, pd.DataFrame) else result)
        return EXIT_OK
    if args.effect is None:
        raise PowerError("--effect is required (or --mde with --n)")
    effect = (
        [number(part, "--effect") for part in args.effect.split(",")]
        if args.metric == "ordinal" and "," in args.effect
        else number(args.effect, "--effect")
    )
    if args.n:
        result = agentab.power.power(args.metric, effect, runs, seed=args.seed, **common)
        say(result.to_string(index=False) if isinstance(result, pd.DataFrame) else result)
    else:
        say(agentab.power.sample_size(args.metric, effect, power=args.power, seed=args.seed, **common))
    return EXIT_OK


def _read_pilot(args: argparse.Namespace, progress: Progress) -> pd.DataFrame:
    """``agentab plan``'s pilot: results or scores tables, or traces scored with --spec; its baseline arm checked."""
    paths = list(args.pilot)
    if _tables(paths):
        no_spec(args, paths, instead="give trace files as the pilot")
        pilot = read_table(paths, args)
    else:
        spec = read_spec(args.spec)
        traces = load(paths, args, progress)
        print_rejected(traces, quiet=args.quiet)
        pilot = filter_rows(score(traces, spec, progress), args)
    need_column(pilot, args.metric, f"--metric {args.metric}")
    column = args.arm_column or "arm"
    if args.arm_column is not None and column not in pilot.columns:
        raise InputError(f"--arm-column {column}: no such column (columns: {', '.join(map(str, pilot.columns))})")
    if column in pilot.columns and pilot[column].nunique() > 1 and args.baseline_arm is None:
        arms = [str(a) for a in pd.unique(pilot[column].dropna())]
        if len(arms) > 2:
            raise InputError(f"{', '.join(map(str, paths))}: column {column!r} has {len(arms)} arms ({', '.join(arms)}); "
                             "name the baseline with --baseline-arm NAME (and keep one other arm with --where, "
                             "for a paired plan)")
        check_arms(pilot, column, None, ", ".join(map(str, paths)), flag="--baseline-arm NAME")
    return pilot


def _heterogeneity(text: str | None) -> float | str | None:
    """``--heterogeneity``: a name (typical, model change, none) or a number."""
    if text is None or text.strip().lower() in ("typical", "model change", "none"):
        return None if text is None else text.strip().lower()
    return number(text, "--heterogeneity")


def run_plan(args: argparse.Namespace) -> int:
    """``agentab plan``: tasks x seeds per task from pilot runs."""
    effect = number(args.effect, "--effect")
    pilot = _read_pilot(args, Progress.for_args(args))
    result = agentab.power.plan(
        pilot, args.metric, effect, kind=args.kind, alpha=args.alpha, power=args.power, design=args.design,
        seeds_per_task=args.seeds, cost_ratio=args.cost_ratio, cluster=args.cluster, arm=args.arm_column or "arm",
        baseline=args.baseline_arm,
        quantile=args.quantile, alternative=_alternative(args), max_tasks=args.max_tasks, n_boot=args.n_boot or 0,
        heterogeneity=_heterogeneity(args.heterogeneity),
    )
    say(result)
    if args.simulate:
        say()
        say(result.simulate(args.simulate, seed=args.seed))
    return EXIT_OK


def _default_metrics(data: pd.DataFrame, column: str, baseline: str | None,
                     candidate: str | None) -> tuple[list[str], list[str]]:
    """The default metrics with values in both arms, and those without (not computed: arg_accuracy needs a reference)."""
    arms = data[column].astype(str)
    compared = arms.isin([baseline, candidate]) if baseline and candidate else pd.Series(True, index=data.index)
    out, empty = [], []
    for name in DEFAULT_METRICS:
        if name in data.columns:
            present = data.loc[compared, name].notna().groupby(arms[compared]).any()
            (out if len(present) and present.all() else empty).append(name)
    return out, empty


def _check_report_path(path: Path | None) -> None:
    """Before any work: a report name that agentab.report will take, in a folder that exists or can be made."""
    if path is None:
        return
    if path.suffix.lower() not in tuple(REPORT_FORMATS):
        raise InputError(f"--report {path}: the report must end in .html or .md")
    if path.is_dir():
        raise InputError(f"--report {path}: a folder; give the report's file name")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise InputError(f"--report {path}: cannot make its folder {path.parent}: {err.strerror or err}") from err


def run_compare(args: argparse.Namespace) -> int:
    """``agentab compare``: the verdict, its reasons and the table (or JSON); the exit code per --fail-on."""
    progress = Progress.for_args(args)
    # Everything that can be checked without the data is checked before loading it.
    metrics = parse_metrics(args.metric)
    guardrails = parse_guardrails(args.guardrail)
    _check_report_path(args.report)
    if args.by is not None and (args.candidates or args.all_pairs):
        raise InputError("--by slices one comparison: leave out --candidates / --all-pairs")
    checked(check_alpha, args.alpha, "--alpha")
    checked(check_n_resamples, args.n_resamples, "--n-resamples", minimum=MIN_DECISION_RESAMPLES)
    checked(check_whole, args.seed, "--seed", minimum=0)
    min_effect = None if args.min_effect is None else number(args.min_effect, "--min-effect")
    cluster = None if args.cluster.lower() == "none" else args.cluster
    if cluster is None and args.paired == "yes":
        raise InputError("--paired yes needs a task column (--cluster COL): runs are never paired by their order")
    arms = compare_data(args, progress)
    if arms.traces is not None:
        print_rejected(arms.traces, quiet=args.quiet, file=sys.stderr)
    if args.by is not None and arms.traces is not None:
        arms = arms._replace(data=_runs_column(arms.data, arms.traces, args.by, "the traces", "--by"))
    need_column(arms.data, args.primary.split()[0], f"--primary {args.primary}")
    candidate = candidates(args, arms)
    empty: list[str] = []
    if metrics is None:
        metrics, empty = _default_metrics(arms.data, arms.column, arms.baseline,
                                          candidate if isinstance(candidate, str) else None)
    for name in metrics:
        if name not in arms.data.columns:
            known = [str(c) for c in agentab.metric_kinds(arms.data).index if c != arms.column]
            raise InputError(f"--metric {name!r}: no such column in the scores (metrics: {', '.join(known)})")
    with progress.phase("comparing", unit=" metrics") as tick:
        result = agentab.compare(
            arms.data, arm=arms.column, baseline=arms.baseline, candidate=candidate, metrics=metrics,
            primary=args.primary, guardrails=guardrails, cluster=cluster,
            paired={"auto": "auto", "yes": True, "no": False}[args.paired], alpha=args.alpha,
            n_resamples=args.n_resamples, seed=args.seed, min_effect=min_effect, progress=tick, by=args.by,
        )
    reported = result  # the report is of the result as compare returned it: two arms, many, or sliced
    if isinstance(result, agentab.SlicedComparison):
        say_result(json.dumps(result.to_dict(), indent=2, allow_nan=False) if args.json else str(result))
        result = result.overall  # the exit code is the whole comparison's
    elif not isinstance(result, agentab.Comparison):  # many candidates
        code = _many_result(args, result, empty)
        _write_report(args, reported, arms.traces, progress)
        return code
    else:
        say_result(json.dumps(result.to_dict(), indent=2, allow_nan=False) if args.json else str(result))
    if empty:
        note(args, f"not compared, no values in an arm (not computed: checks the spec does not ask for, or no "
                   f"--spec): {', '.join(empty)}")
    _write_report(args, reported, arms.traces, progress)
    return exit_code(args.fail_on, result.verdict)


def _write_report(args: argparse.Namespace, result: agentab.Comparison | agentab.MultiComparison | agentab.SlicedComparison,
                  traces: agentab.Traces | None, progress: Progress) -> None:
    """--report: agentab.report of a two-arm, many-arm or sliced comparison, and a note saying where."""
    if args.report is None:
        return
    with progress.phase("writing the report", total=1):
        written = agentab.report(result, args.report, traces=traces, seed=args.seed)
    note(args, f"report written to {written}")


def _many_result(args: argparse.Namespace, result: MultiComparison, empty: list[str]) -> int:
    """Many candidates: one verdict line each (or the JSON); every candidate gated by --fail-on: 3 when any
    verdict exits 3 (don't ship), else 4 when any exits 4 (inconclusive under --fail-on inconclusive)."""
    text = result.text(pairs=args.all_pairs)
    say_result(json.dumps(result.to_dict(), indent=2, allow_nan=False) if args.json else text)
    if empty:
        note(args, f"not compared, no values in an arm: {', '.join(empty)}")
    codes = {exit_code(args.fail_on, v) for v in result.verdicts.values()}
    return next((code for code in (EXIT_DONT_SHIP, EXIT_INCONCLUSIVE) if code in codes), EXIT_OK)


def _allowed(values: list[str] | None) -> list:
    """--allow HOST[:PORT] values as the network policy takes them."""
    out: list = []
    for value in values or []:
        host, sep, port = value.rpartition(":")
        out.append((host, int(port)) if sep and port.isdigit() else value)
    return out


def run_harness(args: argparse.Namespace) -> int:
    """``agentab run``: :func:`agentab.harness.run` on the named agent and tasks; one line saying what it wrote."""
    import agentab.harness

    try:
        agent = args.agent if args.command else agentab.harness.load_object(args.agent, "AGENT")
        tasks = agentab.harness.load_object(args.tasks, "--tasks")
        tasks = tasks() if callable(tasks) and not isinstance(tasks, agentab.harness.Task) else tasks
        tools = agentab.harness.load_object(args.tools, "--tools") if args.tools else None
        before = args.out.read_bytes().count(b"\n") if args.out.is_file() else 0  # whole lines only
        out = agentab.harness.run(agent, tasks, seeds=args.seeds, out=args.out, workers=args.workers,
                                  time_limit=args.time_limit, step_cap=args.step_cap, network=args.network,
                                  tools=tools, arm=args.arm, allow=_allowed(args.allow), keep=args.keep,
                                  progress=not args.quiet)
    except (TypeError, ValueError) as err:
        raise InputError(str(err)) from None
    records = [json.loads(line) for line in open(out, encoding="utf-8") if line.strip()]
    new = records[before:]
    stopped = sum(1 for r in new if r.get("metadata", {}).get("terminated") is False)
    errors = sum(1 for r in new if r.get("metadata", {}).get("status") in ("error", "died"))
    passed = sum(1 for r in new if r.get("outcome") is True)
    say(f"{out}: {len(new)} runs recorded ({len(records) - len(new)} already there): {passed} succeeded, "
        f"{errors} crashed, {stopped} stopped by the step cap or time limit")
    return EXIT_OK
