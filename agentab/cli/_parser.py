"""The argument parser of ``agentab``: every command's options, each shared option written once.

:func:`build_parser` makes the top-level parser and one subparser per command (``_add_<command>``);
the options several commands share are added by the small ``add_*`` functions below, so a flag's
name, type and default live in one place. Each subparser's ``func`` is its command in
:mod:`agentab.cli._commands`.
"""

from __future__ import annotations

import argparse
import textwrap
from pathlib import Path
from typing import Any

from agentab import __version__
from agentab._vocabulary import ALTERNATIVE_ALIASES, ALTERNATIVES, KINDS
from agentab.cli import _commands as run
from agentab.cli._inputs import positive_int
from agentab.cli._output import FAIL_ON

__all__ = ["add_arm_column", "add_field", "add_format", "add_lenient", "add_power_settings", "add_seed", "add_spec",
           "add_traces", "add_where", "build_parser"]

_EPILOG = """\
examples:
  agentab demo                         the embedded example experiment: summary, scores, findings, decision
  agentab example --out runs/          write the example as runs/baseline.jsonl, runs/candidate.jsonl, runs/spec.json
  agentab summary runs/                per-arm summary of every .jsonl/.json(.gz) file under runs/
  agentab formats                      the trace formats --format takes, with an example of each
  agentab summary a.jsonl b.jsonl --lenient
                                       load what is valid, report what was rejected
  agentab score runs/ --spec spec.json -o scores.csv
                                       score every run's trajectory; write one row per run
  agentab diagnose runs/ --spec spec.json
                                       failure shapes across the experiment, with evidence
  agentab compare runs/baseline.jsonl runs/candidate.jsonl --spec spec.json
                                       ship, don't ship or inconclusive, with reasons and the table
  agentab compare old/ new/ --guardrail "tokens: p95 <= +10%" --fail-on dont-ship --report ab.html
                                       a CI gate: exit 3 on "don't ship", an HTML report either way
  agentab compare runs/ --arm-column model --names gpt-4o sonnet-4 --json > result.json
                                       arms from a column (or metadata key); the result as JSON
  agentab compare trials.csv --arm-column submission --names A B --field outcome=is_resolved --where "agent == 'Droid'"
                                       a results table (one row per run: .csv, .tsv, .parquet, flat .jsonl);
                                       --field maps agentab's names to its columns, --where keeps rows
  agentab power --metric binary --baseline 0.5 --effect 0.05 --seeds 3 --icc 0.2
                                       runs and tasks per arm to detect +5 points of success
  agentab power --metric ordinal --baseline 0.2,0.3,0.3,0.2 --effect 1.5 --n 100 200 400
                                       power curve of a 0-3 rubric at an odds ratio of 1.5
  agentab plan pilot/ --metric rubric --effect 1.5 --spec spec.json
                                       tasks x seeds options from pilot runs, the cheapest recommended
  agentab run my_agents:agent --tasks my_tasks:TASKS --seeds 5 --out runs.jsonl --workers 2
                                       run an agent over tasks x seeds in fresh sandboxes, one record per run

exit codes:
  0  success (any verdict, unless --fail-on)
  1  internal error (a bug; --debug shows the traceback)
  2  bad input: one line on stderr naming the file and the problem (--debug: the traceback)
  3  agentab compare --fail-on dont-ship|inconclusive: the verdict is "don't ship"
  4  agentab compare --fail-on inconclusive: the verdict is "inconclusive"

--json (agentab compare) prints one JSON object, schema "agentab.comparison/1" ("agentab.comparison/2" for many
candidates; see `agentab compare --help`).
--debug and --quiet go before or after the command; --quiet silences progress bars and notes.
Progress bars are drawn on stderr only when it is a terminal.
"""

_COMPARE_EPILOG = """\
arms:
  BASELINE CANDIDATE  two trace files/folders (or two results tables); each arm is named after its file
                      (without .jsonl/.json/.gz/.csv/.tsv/.parquet) or folder, or its parent folder when both
                      have the same name (runs/a/traces.jsonl vs runs/b/traces.jsonl: a and b); --names
                      names them. The position decides which is the baseline: records whose own `arm` field
                      names one arm per file give the names (said in a note), and records saying "candidate"
                      in BASELINE's file (or "baseline" in CANDIDATE's) are an error.
  SOURCE...           with --arm-column COL (default for a single source: the records' `arm`), the arms are
                      the values of COL: a column of a results table, a runs column (arm, model, harness,
                      source) or a key of the runs' metadata; --names BASE CAND picks the two to compare.
                      Two arms need --names unless one is named baseline: never chosen by row order.

results tables (one row per run: .csv, .tsv, .parquet, .jsonl of flat records): --field NAME=COL gives
agentab's name to a column (--field task_id=instance_id --field outcome=is_resolved); --where EXPR keeps
the rows for which EXPR holds (pandas DataFrame.query syntax, repeatable: --where "agent == 'Droid'").
True/False columns with blanks are binary; the blanks are counted and left out, never read as False.

metrics (default: those of outcome, rubric, tokens, cost_usd, n_steps, loop, cap_hit, non_terminated,
arg_accuracy, n_errors the scores have): --metric tokens=cost, --metric latency_s=continuous:lower,
--metric rubric (the score's own kind). The primary metric and guardrail metrics are always compared;
a cost or count primary names its quantile: --primary "tokens p50".

guardrails: "METRIC: STAT OP MARGIN", spaces optional: "tokens: p95 <= +10%", "cost_usd:p50<=+5%",
"loop: rate <= +0.02", "rubric: delta >= -0.05". STAT is pNN (cost, count), mean, rate (binary) or
delta (ordinal); judged on the confidence interval: holds, breached (don't ship) or unresolved.

--json prints comparison.to_dict() (indent 2, no NaN: missing numbers are null), top-level keys:
  schema ("agentab.comparison/1"), verdict ("ship" | "don't ship" | "inconclusive"), reasons,
  explanations (lists of sentences), baseline, candidate (arm names), primary, arms (per arm: model,
  harness, runs, tasks), design, settings (alpha, n_resamples, seed, cluster, paired, primary, ...),
  metrics (one object per table row: metric, kind, statistic, role, effect, ci_low, ci_high, p_value,
  p_adjusted, assessment, ...), levels, guardrails (rule, status, estimate, ci_low, ci_high, bound),
  notes, plan (the next experiment of an inconclusive verdict: tasks, seeds_per_task, ...; else null).
  Keys may be added within a schema version, never renamed or removed.

many arms (--baseline NAME with --candidates A B ..., or --all-pairs for every other arm and every pair):
each candidate is compared with the baseline as above, the primary metric's p-values adjusted across the
candidates (step-down max-T over the tasks' sign flips, the two-arm tests' own; Holm where it cannot
apply: a quantile or ordinal primary, arms not paired on the same tasks); one verdict line per candidate
and a best-candidate statement only when one is shown better than every other arm (all pairs adjusted
together). --json then prints schema "agentab.comparison/2": baseline, primary, verdicts (candidate ->
verdict), best, best_statement, adjustment, summary (one object per candidate), pairs, settings, notes,
and candidates (candidate -> its "agentab.comparison/1" object).

exit codes: 0 success; 1 internal error; 2 bad input (one line on stderr); with --fail-on dont-ship,
3 when the verdict is "don't ship"; with --fail-on inconclusive, 3 for "don't ship" and 4 for
"inconclusive" (anything but ship fails). With many candidates, every candidate is gated: 3 when any
verdict is "don't ship", else (--fail-on inconclusive) 4 when any is "inconclusive".

The same command with the same --seed (default 0) prints the same result.
"""

_SPEC_HELP = "trajectory spec (JSON), as for `agentab score`"


# --------------------------------------------------------------------------- #
# Shared options
# --------------------------------------------------------------------------- #
def _command(commands: Any, name: str, func: Any, *, quiet: bool, **options: Any) -> argparse.ArgumentParser:
    """A command's subparser, with --debug (and --quiet) so that they work after it as well as before."""
    parser = commands.add_parser(name, **options)
    # SUPPRESS: when not given after the command, the value given (or not) before it stands.
    parser.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                        help="show Python tracebacks on errors")
    if quiet:
        parser.add_argument("-q", "--quiet", action="store_true", default=argparse.SUPPRESS,
                            help="no progress bars or notes; the rejected records (--lenient) as one count line")
    parser.set_defaults(func=func)
    return parser


def add_traces(parser: argparse.ArgumentParser) -> None:
    """TRACES..., --lenient, --format, --field and --where: the commands that read traces or results tables."""
    parser.add_argument("traces", nargs="+", type=Path, metavar="SOURCE",
                        help="trace files or folders of them (any format: see --format), or results tables (.csv, "
                        ".tsv, .parquet, .jsonl of flat records: one row per run)")
    add_lenient(parser, "load the valid runs and list the rejected records, instead of stopping at the first problem")
    add_format(parser)


def add_lenient(parser: Any, help: str) -> None:
    """--lenient: load the valid runs, list the rejected records."""
    parser.add_argument("--lenient", action="store_true", help=help)


def add_format(parser: Any) -> None:
    """--format, --field and --where, for every command that reads traces or results tables."""
    parser.add_argument("--format", default="auto", metavar="FORMAT",
                        help="the traces' format: auto (default: detected per file), or one of `agentab formats`")
    add_field(parser)
    add_where(parser)
    parser.add_argument("--outcomes", type=Path, metavar="TABLE",
                        help="join the runs' verdicts from a results table (.csv, .tsv, .parquet, .jsonl, .json; "
                        "SWE-bench's report.json) with an outcome column and run_id, or task_id (and seed); for "
                        "converted trace formats, e.g. SWE-agent trajectories and their SWE-bench report")
    add_engine(parser)


def add_engine(parser: Any) -> None:
    """--engine and --scheduler: traces larger than memory, read in blocks here or on a Dask cluster."""
    parser.add_argument("--engine", choices=("memory", "stream", "dask"), default="memory",
                        help="how trace files are read: memory (default: whole), stream (in blocks, for files "
                        "larger than memory; scored block by block), dask (the blocks read and scored on a Dask "
                        "cluster: see --scheduler; needs agentab[dask]); the results are the same")
    parser.add_argument("--scheduler", metavar="ADDRESS",
                        help="with --engine dask: the Dask scheduler's address, e.g. tcp://10.0.0.5:8786 (default: "
                        "Dask's local scheduler in this process)")


def add_field(parser: Any) -> None:
    """--field NAME=KEY: agentab's name for a column of a results table, or a field of a converted trace format."""
    parser.add_argument("--field", action="append", metavar="NAME=KEY",
                        help="read agentab's NAME (task_id, arm, outcome, seed, cost_usd, ...) from KEY: a column of a "
                        "results table, or a converted format's attribute, key or dotted path (repeatable), e.g. "
                        "--field task_id=instance_id --field outcome=is_resolved; --field 'path={task_id}/{seed}/*' "
                        "reads run fields from each trace file's path")


def add_where(parser: Any) -> None:
    """--where EXPR: keep the rows of a results table (or of the scores) for which EXPR holds."""
    parser.add_argument("--where", action="append", metavar="EXPR",
                        help="keep only the rows for which EXPR holds (pandas DataFrame.query syntax; repeatable, "
                        "applied in order after --field), e.g. --where \"agent == 'Droid'\"; a results table's "
                        "rows, or the scores of traces")


def add_arm_column(parser: Any, help: str) -> None:
    """--arm-column COL: the column naming each run's arm."""
    parser.add_argument("--arm-column", metavar="COL", help=help)


def add_spec(parser: Any, help: str = _SPEC_HELP) -> None:
    """--spec SPEC.json: the trajectory spec the runs are scored against."""
    parser.add_argument("--spec", type=Path, help=help)


def add_seed(parser: Any, help: str, default: int | None = 0) -> None:
    """--seed: of a generator, the resampling or simulations."""
    parser.add_argument("--seed", type=int, default=default, help=help)


def add_power_settings(parser: argparse.ArgumentParser) -> None:
    """--alpha, --power, --alternative, --quantile and --seed of ``agentab power`` and ``agentab plan``."""
    parser.add_argument("--alpha", type=float, default=0.05, help="significance level (default 0.05)")
    parser.add_argument("--power", type=float, default=0.8, help="target power (default 0.8)")
    parser.add_argument("--alternative", choices=[ALTERNATIVES[0], *ALTERNATIVE_ALIASES, *ALTERNATIVES[1:]],
                        default="two-sided", metavar="{two-sided,larger,smaller}",
                        help="two-sided (default), or one-sided: the candidate larger / smaller "
                        "(or scipy's greater / less)")
    parser.add_argument("--quantile", type=float, default=0.95, help="quantile for cost/count (default 0.95)")
    add_seed(parser, "seed of simulations (default 0: reproducible)")


# --------------------------------------------------------------------------- #
# The parser
# --------------------------------------------------------------------------- #
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
    parser.add_argument("-q", "--quiet", action="store_true",
                        help="no progress bars or notes (also after the command, for those that load traces)")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.required = True
    for add in (_add_demo, _add_example, _add_formats, _add_summary, _add_score, _add_diagnose, _add_compare,
                _add_power, _add_plan, _add_run):
        add(commands)
    return parser


def _add_demo(commands: Any) -> None:
    demo = _command(
        commands, "demo", run.run_demo, quiet=True,
        help="run the whole product on the embedded example experiment",
        description="Load the embedded two-arm example experiment (60 tasks x 5 seeds x 2 arms), "
        "print a per-arm summary, score every trajectory against the example's specs, list the "
        "findings, and end with the comparison of the two arms and its decision.",
    )
    add_seed(demo, "seed of the example generator (default 0)")


def _add_example(commands: Any) -> None:
    example = _command(
        commands, "example", run.run_example, quiet=False,
        help="write the example experiment as JSONL, one file per arm, and its spec.json",
        description="Write the embedded example experiment as OUT/baseline.jsonl and OUT/candidate.jsonl, and its "
        "trajectory specs as OUT/spec.json: agentab compare OUT/baseline.jsonl OUT/candidate.jsonl --spec OUT/spec.json "
        "reproduces the demo's comparison.",
    )
    example.add_argument("--out", required=True, type=Path, help="output directory (created if missing)")
    add_seed(example, "seed of the generator (default 0)")
    example.add_argument("--tasks", type=positive_int, default=60, help="number of tasks (default 60)")
    example.add_argument("--seeds", type=positive_int, default=5, help="seeds per task and arm (default 5)")


def _add_formats(commands: Any) -> None:
    _command(
        commands, "formats", run.run_formats, quiet=False,
        help="list the trace formats agentab reads, with an example of each",
        description="List the trace formats --format takes (every command that reads traces has it; the default, "
        "auto, detects each file's format from its content), with a one-line example of each and the run-level "
        "fields --field can remap.",
    )


def _add_summary(commands: Any) -> None:
    summary = _command(
        commands, "summary", run.run_summary, quiet=True,
        help="per-arm summary of trace files or results tables",
        description="Load trace files or folders (arms from each record's `arm` field), or results tables (one row "
        "per run; --field task_id=COL --field outcome=COL name their columns), and print a per-arm summary: runs, "
        "tasks, success rate, steps/tokens/cost p50 and p95, error rates (n/a where the data has no such column).",
    )
    add_traces(summary)
    summary.add_argument("--by", default="arm", help="runs column to group by (default: arm)")
    add_arm_column(summary, "the column naming each run's arm, to group by (the same as --by)")


def _add_score(commands: Any) -> None:
    score = _command(
        commands, "score", run.run_score, quiet=True,
        help="score every run's trajectory against a spec",
        description="Load traces and score every run against a trajectory spec (loops, budget, match "
        "against a reference, side effects, the 0-3 rubric). SPEC.json holds one spec object (the fields "
        "of agentab.TrajectorySpec, references as [{\"tool\": ..., \"args\": {...}}]) or "
        "{\"tasks\": {TASK_ID: spec, ...}}. Without -o, prints a per-arm summary of the scores. A results table "
        "(one row per run, no steps) has no trajectory to score: it passes through (-o writes it, with --field and "
        "--where applied), and --spec is an error.",
    )
    add_traces(score)
    add_spec(score, "trajectory spec (JSON); default: an empty spec")
    score.add_argument("-o", "--out", type=Path, help="write the per-run table (.csv or .parquet), atomically")
    score.add_argument("--raw-csv", action="store_true",
                       help="write text cells as they are: by default a CSV cell starting with =, +, -, @, a tab "
                       "or a carriage return gets a leading ' so a spreadsheet shows it as text, not a formula")


def _add_diagnose(commands: Any) -> None:
    diagnose = _command(
        commands, "diagnose", run.run_diagnose, quiet=True,
        help="find failure shapes across an experiment",
        description="Load and score traces, then report findings with their evidence: success by step "
        "count (context exhaustion), loops and cap hits, non-termination, error cascades, accidental "
        "recovery, tool selection vs argument correctness, tool choice by arm. It needs traces (each run's "
        "steps): a results table is refused, naming what is missing.",
    )
    add_traces(diagnose)
    add_spec(diagnose)
    diagnose.add_argument("--by", default="arm", help="column to compare by (default: arm)")


def _add_compare(commands: Any) -> None:
    cmd = _command(
        commands, "compare", run.run_compare, quiet=True,
        help="compare a candidate with a baseline and decide: ship, don't ship or inconclusive",
        usage="agentab compare BASELINE CANDIDATE [options]\n"
        "       agentab compare SOURCE... --arm-column COL [--names BASELINE CANDIDATE] [options]\n"
        "       agentab compare SOURCE... --arm-column COL --baseline NAME [--candidates NAME... | --all-pairs] [options]",
        description=textwrap.fill(
            "Load two arms' traces (or results tables), score every run against --spec, compare every metric with "
            "the test its kind calls for (tasks as the unit: paired by task when both arms ran the same tasks; "
            "permutation p-values, bootstrap intervals; secondary metrics Holm-adjusted), check the guardrails and "
            "print the verdict with its reasons and the table (or, with --json, the result as JSON). Outcome "
            "decides, trajectory explains, cost constrains.", width=100),
        epilog=_COMPARE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    cmd.add_argument("sources", nargs="+", type=Path, metavar="SOURCE",
                     help="BASELINE CANDIDATE: trace files/folders or results tables (.csv/.tsv/.parquet/flat "
                     ".jsonl), arms by position; or SOURCE... with --arm-column")
    data = cmd.add_argument_group("arms and data")
    data.add_argument("--names", nargs=2, metavar=("BASELINE", "CANDIDATE"),
                      help="the arms' names (two sources), or which two arms of --arm-column to compare")
    add_arm_column(data, "take the arms from this column (of a results table, the runs, or a metadata key; default "
                   "for one source: arm); two arms need --names unless one is named baseline")
    data.add_argument("--baseline", metavar="NAME",
                      help="many arms: the baseline every candidate is compared with (the arms of --arm-column; "
                      "without --candidates, every other arm)")
    many = data.add_mutually_exclusive_group()
    many.add_argument("--candidates", nargs="+", metavar="NAME",
                      help="many arms: the candidates to compare with --baseline, the primary metric adjusted across them")
    many.add_argument("--all-pairs", action="store_true",
                      help="many arms: every other arm against --baseline, and every pair of arms on the primary "
                      "metric, adjusted together")
    data.add_argument("--by", default=None, metavar="COL",
                      help="slice by a task property (a runs column or metadata key, constant within each task): "
                      "the primary effect per slice, Holm across slices, and a test of whether it differs between "
                      "slices")
    add_spec(data)
    add_format(data)
    add_lenient(data, "leave out invalid records (listed on stderr) instead of stopping at the first")
    _add_compare_decision(cmd.add_argument_group("what decides"))
    _add_compare_statistics(cmd.add_argument_group("statistics"))
    out = cmd.add_argument_group("output")
    out.add_argument("--json", action="store_true", help="print the result as JSON (schema below) instead of text")
    out.add_argument("--report", type=Path, metavar="FILE",
                     help="also write a report: .html (self-contained) or .md")
    out.add_argument("--fail-on", choices=sorted(FAIL_ON),
                     help="exit non-zero unless the verdict passes: dont-ship (3 on don't ship) or "
                     "inconclusive (3 on don't ship, 4 on inconclusive)")


def _add_compare_decision(what: Any) -> None:
    """``agentab compare``: what decides (--primary, --metric, --guardrail, --min-effect)."""
    what.add_argument("--primary", default="outcome", metavar="M",
                      help="the metric that decides (default outcome); a cost/count metric with its quantile: 'tokens p50'")
    what.add_argument("--metric", action="append", metavar="COL[=KIND[:DIR]]",
                      help="compare this column (repeatable; replaces the default set); KIND binary, ordinal, "
                      "count, cost or continuous, DIR higher or lower (which is better) or neither; without KIND, the score's own")
    what.add_argument("--guardrail", action="append", metavar="RULE",
                      help="a bound the candidate must be shown to respect (repeatable): 'tokens: p95 <= +10%%'")
    what.add_argument("--min-effect", metavar="E",
                      help="smallest primary effect worth detecting, for the sample-size advice of an inconclusive "
                      "result (binary: 0.05 or 5%%; ordinal: odds ratio; continuous: Cohen's d; cost/count: -20%%)")


def _add_compare_statistics(stats: Any) -> None:
    """``agentab compare``: the statistics (--alpha, --n-resamples, --seed, --paired, --cluster)."""
    stats.add_argument("--alpha", type=float, default=0.05,
                       help="significance level; intervals have confidence 1 - alpha (default 0.05)")
    stats.add_argument("--n-resamples", type=int, default=9999, metavar="N",
                       help="permutations and bootstrap resamples per metric, at least 99 (default 9999)")
    add_seed(stats, "seed of the resampling (default 0: reproducible)")
    stats.add_argument("--paired", choices=["auto", "yes", "no"], default="auto",
                       help="pair the arms by task: auto (when most tasks ran in both; default), yes, no")
    stats.add_argument("--cluster", default="task_id", metavar="COL",
                       help="the task column, the unit of replication (default task_id; 'none': runs independent)")


def _add_power(commands: Any) -> None:
    power = _command(
        commands, "power", run.run_power, quiet=False,
        help="sample size, power or minimum detectable effect from formulas",
        description="Runs and tasks per arm needed to detect an effect (default), the power of given runs "
        "(--n), or the minimum detectable effect of given runs (--mde --n). What --effect and --baseline mean "
        "depends on the metric kind: binary, baseline success rate and absolute change (0.05 or 5%); ordinal, "
        "baseline level shares worst first (0.2,0.3,0.3,0.2) and an odds ratio; continuous, Cohen's d (no "
        "baseline); cost/count, a pilot sample (a file: one number per line, or .csv/.parquet with --column) "
        "and a relative change of the --quantile (-20%). A --baseline table with an arm column is split by arm "
        "(--baseline-arm), never pooled. --paired plans the same tasks in both arms: continuous, the paired t-test "
        "from --correlation (of the arms' task means); binary, McNemar's test from --discordant (Connor 1987).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    power.add_argument("--metric", required=True, choices=list(KINDS), help="the metric's kind")
    power.add_argument("--effect", help="the effect to detect (not with --mde); a negative percentage as --effect=-20%%")
    power.add_argument("--baseline", help="baseline rate, level shares, or a file with a pilot sample")
    power.add_argument("--column", help="column of --baseline's results table (.csv, .tsv, .parquet, flat .jsonl; cost, count)")
    add_arm_column(power, "column of --baseline's table naming each run's arm (default: arm, when the table has it); "
                   "a table with two or more arms is split, never pooled")
    add_field(power)
    add_where(power)
    power.add_argument("--baseline-arm", metavar="NAME",
                       help="the arm of --baseline's table to read (default: the arm named baseline)")
    power.add_argument("--paired", action="store_true",
                       help="paired design: the same tasks in both arms (continuous: paired t-test, with --correlation; "
                       "binary: McNemar's test, with --discordant)")
    power.add_argument("--correlation", type=float, metavar="R",
                       help="with --paired, continuous: correlation between the arms' task means, in [-1, 1)")
    power.add_argument("--discordant", type=float, metavar="P",
                       help="with --paired, binary: share of tasks whose outcomes differ between the arms (p10 + p01); "
                       "--effect is then the difference of the rates, --baseline optional")
    power.add_argument("--n", nargs="+", type=int, help="runs per arm: print their power (or MDE with --mde)")
    power.add_argument("--mde", action="store_true", help="minimum detectable effect of --n runs per arm")
    add_power_settings(power)
    power.add_argument("--icc", type=float, default=0.0, help="intra-task correlation (default 0)")
    power.add_argument("--seeds", type=positive_int, default=1, help="seeds per task (default 1)")
    power.add_argument("--method", help="arcsine, t, whitehead, noether, asymptotic or simulation")


def _add_plan(commands: Any) -> None:
    plan = _command(
        commands, "plan", run.run_plan, quiet=True,
        help="tasks x seeds per task from pilot runs",
        description="Read pilot runs (trace files or folders, scored with --spec; or a results table: .csv, .tsv, "
        ".parquet, flat .jsonl, such as `agentab score -o` writes, with --field, --where and --arm-column), measure the metric's distribution and intra-task correlation, and list designs "
        "(tasks x seeds per task) with their power; the cheapest reaching the target is recommended. A pilot "
        "with only the baseline arm is the usual case.",
    )
    plan.add_argument("pilot", nargs="+", type=Path,
                      help="trace files/folders, or results tables (.csv, .tsv, .parquet, flat .jsonl)")
    plan.add_argument("--metric", required=True, help="the metric's column (e.g. outcome, rubric, tokens)")
    plan.add_argument("--effect", required=True,
                      help="binary: change of rate (0.05 or 5%%); ordinal: odds ratio; continuous: Cohen's d; "
                      "cost/count: relative change of the quantile (--effect=-20%% or --effect -0.2)")
    plan.add_argument("--kind", choices=list(KINDS), help="the metric's kind (default: from the scores)")
    plan.add_argument("--design", choices=["paired", "independent"], default="paired",
                      help="paired: the same tasks in both arms (default); independent: different tasks")
    plan.add_argument("--seeds", type=positive_int, help="fix the seeds per task")
    plan.add_argument("--cost-ratio", type=float, default=1.0,
                      help="cost of a new task / cost of one more run (default 1)")
    plan.add_argument("--max-tasks", type=positive_int, help="tasks available")
    add_spec(plan)
    plan.add_argument("--cluster", default="task_id", help="task column (default task_id)")
    add_arm_column(plan, "the pilot's column naming each run's arm (default: arm)")
    plan.add_argument("--baseline-arm", metavar="NAME",
                      help="the pilot's baseline arm (default: the arm named baseline; with other arms and none "
                      "named baseline, required)")
    plan.add_argument("--simulate", type=positive_int, metavar="N",
                      help="also check the recommendation on N simulated experiments")
    plan.add_argument("--heterogeneity", metavar="H",
                      help="paired plans from one arm: how much the effect varies across tasks, as its SD over the "
                      "between-task SD, or typical (0.83, real pairs' median; the default), 'model change' (0.52), none")
    plan.add_argument("--n-boot", type=positive_int, metavar="N",
                      help="re-plan on N resamples of the pilot's tasks: the 80%% interval of the tasks needed")
    add_lenient(plan, "load valid runs, report rejected records")
    add_format(plan)
    add_power_settings(plan)


def _add_run(commands: Any) -> None:
    """``agentab run``: the recording harness (:func:`agentab.harness.run`)."""
    cmd = _command(
        commands, "run", run.run_harness, quiet=True,
        help="run an agent over tasks x seeds in fresh sandboxes and record one trace per run",
        description="Run AGENT once per task x seed, each run in its own worker process and fresh sandbox (the "
        "task's fixture, randomised per seed), with a mock API server when the task declares endpoints and the "
        "network blocked or recorded; append one trace record per run to --out (JSON Lines, ready for agentab "
        "compare). Runs already in --out are skipped, so the same command resumes an interrupted experiment. "
        "A run stopped at --step-cap or --time-limit is recorded as non-terminated (metadata.terminated false), "
        "a crashed one with its error.",
    )
    cmd.add_argument("agent", metavar="AGENT",
                     help="MODULE:NAME of an agent(env) callable (or path/to/file.py:NAME); with --command, the "
                     "agent's command line, run in the sandbox")
    cmd.add_argument("--command", action="store_true",
                     help="AGENT is a command line (split as a shell would), run as a subprocess in the sandbox; "
                     "it reports steps through $AGENTAB_STEPS and its outcome through $AGENTAB_REPORT")
    cmd.add_argument("--tasks", required=True, metavar="MODULE:NAME",
                     help="the tasks: a Task, a list or mapping of them, or a function returning one")
    cmd.add_argument("--tools", metavar="MODULE:NAME",
                     help="the agent's tools, recorded: a mapping name -> function, or a function (workdir, "
                     "instance) returning one")
    cmd.add_argument("--seeds", required=True, type=positive_int, metavar="N", help="seeds 0 .. N-1 per task")
    cmd.add_argument("--out", required=True, type=Path, metavar="FILE",
                     help="JSON Lines file of trace records (appended to; runs already in it are skipped)")
    cmd.add_argument("--arm", metavar="NAME", help="the arm of every record (part of its run id: task/seed/arm)")
    cmd.add_argument("--workers", type=positive_int, default=1, metavar="N", help="runs at once (default 1)")
    cmd.add_argument("--time-limit", type=float, metavar="S", help="seconds per run (default: none)")
    cmd.add_argument("--step-cap", type=positive_int, metavar="N", help="most tool calls per run (default: none)")
    cmd.add_argument("--network", choices=["block", "record", "allow"], default="block",
                     help="outbound connections other than the mock API: block (default; refused and recorded), "
                     "record (let through and recorded), allow (let through, not recorded)")
    cmd.add_argument("--allow", action="append", metavar="HOST[:PORT]",
                     help="a host (or host:port) the network policy lets through (repeatable)")
    cmd.add_argument("--keep", action="store_true", help="keep every run's sandbox folder instead of removing it")
