"""The ``agentab`` command line.

A thin layer over the public API. Exit codes: 0 success; 2 bad input (a
one-line message on stderr naming the file and the problem; ``--debug``
shows the traceback); 1 an internal error.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from . import __version__, datasets
from .compare import compare
from .diagnose import diagnose
from .errors import CompareError, PowerError, SpecError, TraceError, TraceWarning, where
from .score import score
from .summary import format_summary, summarize, summarize_scores
from .traces import Traces, load_traces
from .trajectory import TrajectorySpec

EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_BAD_INPUT = 2

_EPILOG = """\
examples:
  agentab demo                         the embedded example experiment: summary, scores, findings, decision
  agentab example --out runs/          write the example as runs/baseline.jsonl, runs/candidate.jsonl
  agentab summary runs/                per-arm summary of every .jsonl/.json(.gz) file under runs/
  agentab summary a.jsonl b.jsonl --lenient
                                       load what is valid, report what was rejected
  agentab score runs/ --spec spec.json -o scores.csv
                                       score every run's trajectory; write one row per run
  agentab diagnose runs/ --spec spec.json
                                       failure shapes across the experiment, with evidence
  agentab power --metric binary --baseline 0.5 --effect 0.05 --seeds 3 --icc 0.2
                                       runs and tasks per arm to detect +5 points of success
  agentab power --metric ordinal --baseline 0.2,0.3,0.3,0.2 --effect 1.5 --n 100 200 400
                                       power curve of a 0-3 rubric at an odds ratio of 1.5
  agentab plan pilot/ --metric rubric --effect 1.5 --spec spec.json
                                       tasks x seeds options from pilot runs, the cheapest recommended

exit codes: 0 success, 2 bad input (one line on stderr), 1 internal error.
"""


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return value


def _add_traces_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("traces", nargs="+", type=Path, help=".jsonl/.json(.gz) files or folders of them")
    parser.add_argument(
        "--lenient",
        action="store_true",
        help="load the valid runs and list the rejected records, instead of stopping at the first problem",
    )


def build_parser() -> argparse.ArgumentParser:
    """The argument parser for every ``agentab`` command."""
    parser = argparse.ArgumentParser(
        prog="agentab",
        description="Did the change to your AI agent ship an improvement? Load, score and compare agent runs.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"agentab {__version__}")
    parser.add_argument("--debug", action="store_true", help="show Python tracebacks on errors")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.required = True

    demo = commands.add_parser(
        "demo",
        help="run the whole product on the embedded example experiment",
        description="Load the embedded two-arm example experiment (60 tasks x 5 seeds x 2 arms), "
        "print a per-arm summary, score every trajectory against the example's specs, list the "
        "findings, and end with the comparison of the two arms and its decision.",
    )
    demo.add_argument("--seed", type=int, default=0, help="seed of the example generator (default 0)")
    demo.set_defaults(func=_cmd_demo)

    example = commands.add_parser(
        "example",
        help="write the example experiment as JSONL, one file per arm",
        description="Write the embedded example experiment as OUT/baseline.jsonl and OUT/candidate.jsonl.",
    )
    example.add_argument("--out", required=True, type=Path, help="output directory (created if missing)")
    example.add_argument("--seed", type=int, default=0, help="seed of the generator (default 0)")
    example.add_argument("--tasks", type=_positive_int, default=60, help="number of tasks (default 60)")
    example.add_argument("--seeds", type=_positive_int, default=5, help="seeds per task and arm (default 5)")
    example.set_defaults(func=_cmd_example)

    summary = commands.add_parser(
        "summary",
        help="per-arm summary of trace files",
        description="Load trace files or folders (arms from each record's `arm` field) and print a "
        "per-arm summary: runs, tasks, success rate, steps/tokens/cost p50 and p95, error rates.",
    )
    _add_traces_arguments(summary)
    summary.add_argument("--by", default="arm", help="runs column to group by (default: arm)")
    summary.set_defaults(func=_cmd_summary)

    score_cmd = commands.add_parser(
        "score",
        help="score every run's trajectory against a spec",
        description="Load traces and score every run against a trajectory spec (loops, budget, match "
        "against a reference, side effects, the 0-3 rubric). SPEC.json holds one spec object (the fields "
        "of agentab.TrajectorySpec, references as [{\"tool\": ..., \"args\": {...}}]) or "
        "{\"tasks\": {TASK_ID: spec, ...}}. Without -o, prints a per-arm summary of the scores.",
    )
    _add_traces_arguments(score_cmd)
    score_cmd.add_argument("--spec", type=Path, help="trajectory spec (JSON); default: an empty spec")
    score_cmd.add_argument("-o", "--out", type=Path, help="write the per-run table (.csv or .parquet)")
    score_cmd.set_defaults(func=_cmd_score)

    diagnose_cmd = commands.add_parser(
        "diagnose",
        help="find failure shapes across an experiment",
        description="Load and score traces, then report findings with their evidence: success by step "
        "count (context exhaustion), loops and cap hits, non-termination, error cascades, accidental "
        "recovery, tool selection vs argument correctness, tool choice by arm.",
    )
    _add_traces_arguments(diagnose_cmd)
    diagnose_cmd.add_argument("--spec", type=Path, help="trajectory spec (JSON), as for `agentab score`")
    diagnose_cmd.add_argument("--by", default="arm", help="column to compare by (default: arm)")
    diagnose_cmd.set_defaults(func=_cmd_diagnose)

    power_cmd = commands.add_parser(
        "power",
        help="sample size, power or minimum detectable effect from formulas",
        description="Runs and tasks per arm needed to detect an effect (default), the power of given runs "
        "(--n), or the minimum detectable effect of given runs (--mde --n). What --effect and --baseline mean "
        "depends on the metric kind: binary, baseline success rate and absolute change (0.05 or 5%); ordinal, "
        "baseline level shares worst first (0.2,0.3,0.3,0.2) and an odds ratio; continuous, Cohen's d (no "
        "baseline); cost/count, a pilot sample (a file: one number per line, or .csv/.parquet with --column) "
        "and a relative change of the --quantile (-20%).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    power_cmd.add_argument("--metric", required=True, choices=["binary", "ordinal", "continuous", "cost", "count"],
                           help="the metric's kind")
    power_cmd.add_argument("--effect", help="the effect to detect (not with --mde); a negative percentage as --effect=-20%%")
    power_cmd.add_argument("--baseline", help="baseline rate, level shares, or a file with a pilot sample")
    power_cmd.add_argument("--column", help="column of --baseline's .csv/.parquet file (cost, count)")
    power_cmd.add_argument("--n", nargs="+", type=int, help="runs per arm: print their power (or MDE with --mde)")
    power_cmd.add_argument("--mde", action="store_true", help="minimum detectable effect of --n runs per arm")
    _add_power_settings(power_cmd)
    power_cmd.add_argument("--icc", type=float, default=0.0, help="intra-task correlation (default 0)")
    power_cmd.add_argument("--seeds", type=_positive_int, default=1, help="seeds per task (default 1)")
    power_cmd.add_argument("--method", help="arcsine, t, whitehead, noether, asymptotic or simulation")
    power_cmd.set_defaults(func=_cmd_power)

    plan_cmd = commands.add_parser(
        "plan",
        help="tasks x seeds per task from pilot runs",
        description="Read pilot runs (trace files or folders, scored with --spec; or a scores table .csv/.parquet "
        "from `agentab score -o`), measure the metric's distribution and intra-task correlation, and list designs "
        "(tasks x seeds per task) with their power; the cheapest reaching the target is recommended. A pilot "
        "with only the baseline arm is the usual case.",
    )
    plan_cmd.add_argument("pilot", nargs="+", type=Path, help="trace files/folders, or one scores .csv/.parquet")
    plan_cmd.add_argument("--metric", required=True, help="the metric's column (e.g. outcome, rubric, tokens)")
    plan_cmd.add_argument("--effect", required=True,
                          help="binary: change of rate (0.05 or 5%%); ordinal: odds ratio; continuous: Cohen's d; "
                          "cost/count: relative change of the quantile (--effect=-20%% or --effect -0.2)")
    plan_cmd.add_argument("--kind", choices=["binary", "ordinal", "continuous", "cost", "count"],
                          help="the metric's kind (default: from the scores)")
    plan_cmd.add_argument("--design", choices=["paired", "independent"], default="paired",
                          help="paired: the same tasks in both arms (default); independent: different tasks")
    plan_cmd.add_argument("--seeds", type=_positive_int, help="fix the seeds per task")
    plan_cmd.add_argument("--cost-ratio", type=float, default=1.0,
                          help="cost of a new task / cost of one more run (default 1)")
    plan_cmd.add_argument("--max-tasks", type=_positive_int, help="tasks available")
    plan_cmd.add_argument("--spec", type=Path, help="trajectory spec (JSON), as for `agentab score`")
    plan_cmd.add_argument("--cluster", default="task_id", help="task column (default task_id)")
    plan_cmd.add_argument("--baseline-arm", help="the pilot's baseline arm (default: 'baseline' or the first)")
    plan_cmd.add_argument("--simulate", type=_positive_int, metavar="N",
                          help="also check the recommendation on N simulated experiments")
    plan_cmd.add_argument("--lenient", action="store_true", help="load valid runs, report rejected records")
    _add_power_settings(plan_cmd)
    plan_cmd.set_defaults(func=_cmd_plan)
    return parser


def _add_power_settings(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--alpha", type=float, default=0.05, help="significance level (default 0.05)")
    parser.add_argument("--power", type=float, default=0.8, help="target power (default 0.8)")
    parser.add_argument("--alternative", choices=["two-sided", "larger", "smaller"], default="two-sided",
                        help="two-sided (default), or one-sided: the candidate larger / smaller")
    parser.add_argument("--quantile", type=float, default=0.95, help="quantile for cost/count (default 0.95)")
    parser.add_argument("--seed", type=int, help="seed of simulations")


def _read_spec(path: Path | None) -> TrajectorySpec | dict[str, TrajectorySpec]:
    """A spec file: one spec object, or ``{"tasks": {task_id: spec}}``."""
    if path is None:
        return TrajectorySpec()
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as err:
        raise SpecError(f"{path}, line {err.lineno}: malformed JSON: {err.msg}") from err
    if not isinstance(data, dict):
        raise SpecError(f"{path}: expected a JSON object, got {type(data).__name__}")
    try:
        if set(data) == {"tasks"}:
            return {str(task): TrajectorySpec(**spec) for task, spec in data["tasks"].items()}
        return TrajectorySpec(**data)
    except (TypeError, ValueError) as err:
        raise SpecError(f"{path}: {err}") from err


def _print_traces_summary(traces: Traces, by: str = "arm") -> None:
    print(format_summary(summarize(traces, by=by)))
    _print_rejected(traces)


def _print_rejected(traces: Traces) -> None:
    if len(traces.rejected):
        print(f"\n{len(traces.rejected):,} of {traces.n_read:,} records rejected:")
        for row in traces.rejected.head(10).itertuples(index=False):
            location = where(row.source, row.line) + ("" if pd.isna(row.field) else f", field {row.field}")
            print(f"  {location}: {row.reason}")
        if len(traces.rejected) > 10:
            print(f"  ... and {len(traces.rejected) - 10:,} more")


def _cmd_demo(args: argparse.Namespace) -> int:
    start = time.perf_counter()
    traces = datasets.example_experiment(seed=args.seed)
    elapsed = time.perf_counter() - start
    n_tasks = traces.runs["task_id"].nunique()
    print("agentab demo: the embedded example experiment")
    print(
        f"  {traces!r}, {n_tasks} tasks, loaded in {elapsed:.2f} s\n"
        "  baseline and candidate share the model and differ in the harness (a loop guard and\n"
        "  clearer tool descriptions); every task ran with the same seeds in both arms.\n"
    )
    print(format_summary(summarize(traces)))
    print(
        "\nSuccess rate is averaged over tasks; steps, tokens and cost are long-tailed, so they are\n"
        "shown at p50 and p95 (numpy's linear quantile), not as means."
    )
    specs = datasets.example_specs(seed=args.seed, n_tasks=n_tasks)
    scores = score(traces, specs)
    print("\nTrajectory scores (each task's spec: read, edit and test the target within 15 steps,\n"
          "loop cap 3, modify only the intended files, delete nothing):\n")
    print(format_summary(summarize_scores(scores)))
    findings = diagnose(traces, spec=specs).findings
    if findings:
        print(f"\nFindings ({len(findings)}):")
        for finding in findings[:8]:
            print(f"- {finding.title}\n    {finding.reading}")
    print(
        "\nComparison: outcome decides (tested at alpha 0.05), trajectory explains (Holm-adjusted),\n"
        "cost constrains (guardrails on the p95 of tokens and dollars). Tasks are the unit: the same\n"
        "tasks ran in both arms, so every test swaps the arms of whole tasks.\n"
    )
    result = compare(scores, metrics=DEMO_METRICS, guardrails=DEMO_GUARDRAILS, seed=args.seed)
    print(result)
    print(
        f"\nPlanning the next experiment: how many tasks and seeds detect +{DEMO_PLAN_EFFECT * 100:.0f} points of\n"
        "success (the primary metric) with 80% power? This experiment serves as the pilot: its baseline arm\n"
        "gives the success rate and the intra-task correlation, and its two arms how much the effect\n"
        "varies from task to task (agentab plan PILOT --metric outcome --effect 0.05).\n"
    )
    from .power import plan

    print(plan(scores, "outcome", DEMO_PLAN_EFFECT))
    return EXIT_OK


#: The effect ``agentab demo`` plans for: +5 points of success.
DEMO_PLAN_EFFECT = 0.05


#: The metrics and guardrails of ``agentab demo``: the three axes.
DEMO_METRICS = [
    "outcome", "rubric", "tokens", "cost_usd", "n_steps", "loop", "cap_hit", "non_terminated",
    "arg_accuracy", "n_errors",
]  # fmt: skip
DEMO_GUARDRAILS = {"tokens": "p95 <= +10%", "cost_usd": "p95 <= +10%"}


def _cmd_example(args: argparse.Namespace) -> int:
    paths = datasets.write_example(args.out, seed=args.seed, n_tasks=args.tasks, n_seeds=args.seeds)
    for arm, path in paths.items():
        print(f"{arm}: {path}")
    return EXIT_OK


def _cmd_score(args: argparse.Namespace) -> int:
    spec = _read_spec(args.spec)
    traces = load_traces(list(args.traces), strict=not args.lenient)
    scores = score(traces, spec)
    if args.out is None:
        print(format_summary(summarize_scores(scores)))
    elif args.out.suffix == ".parquet":
        scores.to_parquet(args.out, index=False)
        print(f"{len(scores):,} runs scored: {args.out}")
    elif args.out.suffix == ".csv":
        scores.to_csv(args.out, index=False)
        print(f"{len(scores):,} runs scored: {args.out}")
    else:
        raise SpecError(f"{args.out}: the output must end in .csv or .parquet")
    _print_rejected(traces)
    return EXIT_OK


def _cmd_diagnose(args: argparse.Namespace) -> int:
    traces = load_traces(list(args.traces), strict=not args.lenient)
    found = diagnose(traces, spec=_read_spec(args.spec), by=args.by)
    print(found)
    _print_rejected(traces)
    return EXIT_OK


def _number(text: str, what: str) -> float:
    """A number, with ``%`` meaning hundredths (``5%`` is 0.05)."""
    raw = text.strip()
    try:
        return float(raw[:-1]) / 100.0 if raw.endswith("%") else float(raw)
    except ValueError:
        raise PowerError(f"{what} must be a number (or a percentage), got {text!r}") from None


def _power_baseline(args: argparse.Namespace) -> object:
    text = args.baseline
    if text is None:
        return None
    if args.metric == "binary":
        return _number(text, "--baseline")
    if args.metric == "ordinal":
        return [_number(part, "--baseline share") for part in text.split(",")]
    if args.metric == "continuous":
        raise PowerError("--baseline is not used for continuous metrics (the effect is Cohen's d)")
    path = Path(text)
    if not path.exists():
        raise PowerError(f"--baseline {text}: no such file (cost/count take a pilot sample file)")
    if path.suffix in (".csv", ".parquet"):
        table = pd.read_csv(path) if path.suffix == ".csv" else pd.read_parquet(path)
        if args.column is None or args.column not in table.columns:
            raise PowerError(f"{path}: say --column (columns: {', '.join(map(str, table.columns))})")
        return pd.to_numeric(table[args.column], errors="raise").to_numpy(dtype=float)
    values = []
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if line.strip():
            values.append(_number(line, f"{path}, line {number}"))
    return values


def _cmd_power(args: argparse.Namespace) -> int:
    from . import power as pw

    baseline = _power_baseline(args)
    common = dict(
        baseline=baseline, alpha=args.alpha, seeds_per_task=args.seeds, icc=args.icc, alternative=args.alternative,
        quantile=args.quantile, method=args.method,
    )
    if args.mde:
        if not args.n:
            raise PowerError("--mde needs --n (runs per arm)")
        result = pw.mde(args.metric, args.n if len(args.n) > 1 else args.n[0], power=args.power, **common)
        print(result.to_string(index=False) if isinstance(result, pd.DataFrame) else result)
        return EXIT_OK
    if args.effect is None:
        raise PowerError("--effect is required (or --mde with --n)")
    effect = (
        [_number(part, "--effect") for part in args.effect.split(",")]
        if args.metric == "ordinal" and "," in args.effect
        else _number(args.effect, "--effect")
    )
    if args.n:
        result = pw.power(args.metric, effect, args.n if len(args.n) > 1 else args.n[0], seed=args.seed, **common)
        print(result.to_string(index=False) if isinstance(result, pd.DataFrame) else result)
    else:
        print(pw.sample_size(args.metric, effect, power=args.power, seed=args.seed, **common))
    return EXIT_OK


def _read_pilot(args: argparse.Namespace) -> pd.DataFrame:
    paths = list(args.pilot)
    if len(paths) == 1 and paths[0].suffix in (".csv", ".parquet"):
        if not paths[0].exists():
            raise PowerError(f"{paths[0]}: no such file")
        return pd.read_csv(paths[0]) if paths[0].suffix == ".csv" else pd.read_parquet(paths[0])
    traces = load_traces(paths, strict=not args.lenient)
    _print_rejected(traces)
    return score(traces, _read_spec(args.spec))


def _cmd_plan(args: argparse.Namespace) -> int:
    from .power import plan

    pilot = _read_pilot(args)
    effect = _number(args.effect, "--effect")
    result = plan(
        pilot, args.metric, effect, kind=args.kind, alpha=args.alpha, power=args.power, design=args.design,
        seeds_per_task=args.seeds, cost_ratio=args.cost_ratio, cluster=args.cluster, baseline=args.baseline_arm,
        quantile=args.quantile, alternative=args.alternative, max_tasks=args.max_tasks,
    )
    print(result)
    if args.simulate:
        print()
        print(result.simulate(args.simulate, seed=args.seed))
    return EXIT_OK


def _cmd_summary(args: argparse.Namespace) -> int:
    traces = load_traces(list(args.traces), strict=not args.lenient)
    _print_traces_summary(traces, by=args.by)
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``agentab`` command line; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("always", TraceWarning)
            warnings.showwarning = _show_warning
            return args.func(args)
    except BrokenPipeError:  # the reader went away (`agentab ... | head`): nothing left to say
        sys.stderr.close()
        return EXIT_OK
    except (TraceError, SpecError, CompareError, PowerError, OSError, KeyError, pd.errors.ParserError) as err:
        if args.debug:
            raise
        message = err.args[0] if isinstance(err, KeyError) and err.args else err
        print(f"agentab: error: {message}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except Exception as err:  # noqa: BLE001 - last resort: no traceback without --debug
        if args.debug:
            raise
        print(f"agentab: internal error: {type(err).__name__}: {err} (run with --debug for details)",
              file=sys.stderr)
        return EXIT_INTERNAL


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:  # noqa: ANN001
    print(f"agentab: warning: {message}", file=sys.stderr)
