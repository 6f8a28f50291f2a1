"""The ``agentab`` command line.

A thin layer over the public API (:func:`agentab.load_traces`,
:func:`agentab.score`, :func:`agentab.compare`, :func:`agentab.report`,
:func:`agentab.diagnose`, :mod:`agentab.power`).

Exit codes
----------
0 (:data:`EXIT_OK`)
    success (whatever the verdict, unless ``--fail-on`` says otherwise);
1 (:data:`EXIT_INTERNAL`)
    an internal error (a bug: ``--debug`` shows the traceback);
2 (:data:`EXIT_BAD_INPUT`)
    bad input: one line on stderr naming the file (line, field) and the
    problem; ``--debug`` shows the traceback. Usage errors found by argparse
    also exit 2;
3 (:data:`EXIT_DONT_SHIP`)
    ``agentab compare --fail-on dont-ship`` (or ``inconclusive``): the
    verdict is "don't ship";
4 (:data:`EXIT_INCONCLUSIVE`)
    ``agentab compare --fail-on inconclusive``: the verdict is
    "inconclusive".

Progress bars (tqdm) go to stderr, only when stderr is a terminal and never
with ``--quiet``; stdout carries the result alone (``--json``: one JSON
document).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import textwrap
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from agentab import __version__, datasets
from agentab.comparison.compare import compare
from agentab.scoring.diagnose import diagnose
from agentab.errors import (
    CompareError,
    PowerError,
    ReportError,
    SpecError,
    TraceError,
    TraceWarning,
    where,
)
from agentab.reporting.report import FORMATS as REPORT_FORMATS
from agentab.scoring.score import metric_kinds, score
from agentab.traces.summary import format_summary, summarize, summarize_scores
from agentab.traces._load import SUFFIXES as TRACE_SUFFIXES
from agentab.traces._load import Traces, load_traces
from agentab.scoring.trajectory import TrajectorySpec

EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_BAD_INPUT = 2
EXIT_DONT_SHIP = 3
EXIT_INCONCLUSIVE = 4

#: ``--fail-on`` -> {verdict: exit code}: which verdicts fail a CI job.
FAIL_ON = {
    "dont-ship": {"don't ship": EXIT_DONT_SHIP},
    "inconclusive": {"don't ship": EXIT_DONT_SHIP, "inconclusive": EXIT_INCONCLUSIVE},
}

#: The metric kinds of agentab.compare and agentab.power.
KINDS = ("binary", "ordinal", "continuous", "cost", "count")

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

_TRACE_SUFFIXES = tuple(sorted(TRACE_SUFFIXES, key=len, reverse=True))  # the longest ending first
_TABLE_SUFFIXES = (".csv", ".parquet")
_REPORT_SUFFIXES = tuple(REPORT_FORMATS)

_EPILOG = """\
examples:
  agentab demo                         the embedded example experiment: summary, scores, findings, decision
  agentab example --out runs/          write the example as runs/baseline.jsonl, runs/candidate.jsonl
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
  agentab power --metric binary --baseline 0.5 --effect 0.05 --seeds 3 --icc 0.2
                                       runs and tasks per arm to detect +5 points of success
  agentab power --metric ordinal --baseline 0.2,0.3,0.3,0.2 --effect 1.5 --n 100 200 400
                                       power curve of a 0-3 rubric at an odds ratio of 1.5
  agentab plan pilot/ --metric rubric --effect 1.5 --spec spec.json
                                       tasks x seeds options from pilot runs, the cheapest recommended

exit codes:
  0  success (any verdict, unless --fail-on)
  1  internal error (a bug; --debug shows the traceback)
  2  bad input: one line on stderr naming the file and the problem (--debug: the traceback)
  3  agentab compare --fail-on dont-ship|inconclusive: the verdict is "don't ship"
  4  agentab compare --fail-on inconclusive: the verdict is "inconclusive"

--json (agentab compare) prints one JSON object, schema "agentab.comparison/1" (see `agentab compare --help`).
--debug and --quiet go before or after the command; --quiet silences progress bars and notes.
Progress bars are drawn on stderr only when it is a terminal.
"""

_COMPARE_EPILOG = """\
arms:
  BASELINE CANDIDATE  two trace files/folders (or two scores tables); each arm is named after its file
                      (without .jsonl/.json/.gz/.csv/.parquet) or folder, or its parent folder when both
                      have the same name (runs/a/traces.jsonl vs runs/b/traces.jsonl: a and b); --names
                      names them. Records carrying an `arm` field must agree with that name.
  SOURCE...           with --arm-column COL (default for a single source: the records' `arm`), the arms are
                      the values of COL: a runs column (arm, model, harness, source) or a key of the
                      runs' metadata; --names BASE CAND picks the two to compare when there are more.

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

exit codes: 0 success; 1 internal error; 2 bad input (one line on stderr); with --fail-on dont-ship,
3 when the verdict is "don't ship"; with --fail-on inconclusive, 3 for "don't ship" and 4 for
"inconclusive" (anything but ship fails).

The same command with the same --seed (default 0) prints the same result.
"""


class _InputError(ValueError):
    """Bad command-line input found by the CLI itself (exit 2)."""


# --------------------------------------------------------------------------- #
# Progress bars
# --------------------------------------------------------------------------- #
def _is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


class _Progress:
    """Progress bars on stderr (tqdm), drawn only when stderr is a terminal and not ``--quiet``."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    @classmethod
    def for_args(cls, args: argparse.Namespace) -> _Progress:
        return cls(not getattr(args, "quiet", False) and _is_terminal(sys.stderr))

    @contextlib.contextmanager
    def phase(self, desc: str, unit: str = "it", total: int | None = None) -> Iterator[Callable[[str, int, int], None] | None]:
        """A bar shown from the start of a phase.

        Yields the ``progress(label, done, total)`` callback the API takes
        (None when bars are off, so the API is not called back at all). A
        phase without callbacks (scoring) shows as one step.
        """
        try:
            from tqdm import tqdm
        except ImportError:  # bars are a nicety: without tqdm, none
            self.enabled = False
        if not self.enabled:
            yield None
            return

        bar = tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, leave=False, dynamic_ncols=True)

        def update(label: str, done: int, total: int) -> None:
            if bar.total != total:
                bar.total = total
            label = str(label)
            bar.set_postfix_str(label if len(label) <= 40 else "..." + label[-37:], refresh=False)
            bar.update(done - bar.n)

        try:
            yield update
            if total is not None and bar.n < total:
                bar.update(total - bar.n)
        finally:
            bar.close()


# --------------------------------------------------------------------------- #
# The parser
# --------------------------------------------------------------------------- #
def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return value


def _common(quiet: bool) -> list[argparse.ArgumentParser]:
    """--debug (and --quiet) for a command, so that they work after it as well as before."""
    parent = argparse.ArgumentParser(add_help=False)
    # SUPPRESS: when not given after the command, the value given (or not) before it stands.
    parent.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                        help="show Python tracebacks on errors")
    if quiet:
        parent.add_argument("-q", "--quiet", action="store_true", default=argparse.SUPPRESS,
                            help="no progress bars or notes; the rejected records (--lenient) as one count line")
    return [parent]


def _add_traces_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("traces", nargs="+", type=Path, help="trace files or folders of them (any format: see --format)")
    parser.add_argument(
        "--lenient",
        action="store_true",
        help="load the valid runs and list the rejected records, instead of stopping at the first problem",
    )
    _add_format_arguments(parser)


def _add_format_arguments(parser: Any) -> None:
    """--format and --field, for every command that reads traces."""
    parser.add_argument("--format", default="auto", metavar="FORMAT",
                        help="the traces' format: auto (default: detected per file), or one of `agentab formats`")
    parser.add_argument("--field", action="append", metavar="NAME=KEY",
                        help="converted formats: read a run-level field (task_id, seed, arm, outcome, ...) from KEY "
                        "(an attribute, key or dotted path; repeatable), e.g. --field outcome=reward")


def _fields(args: argparse.Namespace) -> dict[str, str] | None:
    """``--field NAME=KEY ...`` as load_traces' ``fields`` mapping."""
    if not getattr(args, "field", None):
        return None
    out = {}
    for item in args.field:
        name, eq, key = (part.strip() for part in item.partition("="))
        if not eq or not name or not key:
            raise _InputError(f"--field {item!r}: expected NAME=KEY, e.g. --field outcome=reward")
        out[name] = key
    return out


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

    demo = commands.add_parser(
        "demo",
        parents=_common(quiet=True),
        help="run the whole product on the embedded example experiment",
        description="Load the embedded two-arm example experiment (60 tasks x 5 seeds x 2 arms), "
        "print a per-arm summary, score every trajectory against the example's specs, list the "
        "findings, and end with the comparison of the two arms and its decision.",
    )
    demo.add_argument("--seed", type=int, default=0, help="seed of the example generator (default 0)")
    demo.set_defaults(func=_cmd_demo)

    example = commands.add_parser(
        "example",
        parents=_common(quiet=False),
        help="write the example experiment as JSONL, one file per arm",
        description="Write the embedded example experiment as OUT/baseline.jsonl and OUT/candidate.jsonl.",
    )
    example.add_argument("--out", required=True, type=Path, help="output directory (created if missing)")
    example.add_argument("--seed", type=int, default=0, help="seed of the generator (default 0)")
    example.add_argument("--tasks", type=_positive_int, default=60, help="number of tasks (default 60)")
    example.add_argument("--seeds", type=_positive_int, default=5, help="seeds per task and arm (default 5)")
    example.set_defaults(func=_cmd_example)

    formats_cmd = commands.add_parser(
        "formats",
        parents=_common(quiet=False),
        help="list the trace formats agentab reads, with an example of each",
        description="List the trace formats --format takes (every command that reads traces has it; the default, "
        "auto, detects each file's format from its content), with a one-line example of each and the run-level "
        "fields --field can remap.",
    )
    formats_cmd.set_defaults(func=_cmd_formats)

    summary = commands.add_parser(
        "summary",
        parents=_common(quiet=True),
        help="per-arm summary of trace files",
        description="Load trace files or folders (arms from each record's `arm` field) and print a "
        "per-arm summary: runs, tasks, success rate, steps/tokens/cost p50 and p95, error rates.",
    )
    _add_traces_arguments(summary)
    summary.add_argument("--by", default="arm", help="runs column to group by (default: arm)")
    summary.set_defaults(func=_cmd_summary)

    score_cmd = commands.add_parser(
        "score",
        parents=_common(quiet=True),
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
        parents=_common(quiet=True),
        help="find failure shapes across an experiment",
        description="Load and score traces, then report findings with their evidence: success by step "
        "count (context exhaustion), loops and cap hits, non-termination, error cascades, accidental "
        "recovery, tool selection vs argument correctness, tool choice by arm.",
    )
    _add_traces_arguments(diagnose_cmd)
    diagnose_cmd.add_argument("--spec", type=Path, help="trajectory spec (JSON), as for `agentab score`")
    diagnose_cmd.add_argument("--by", default="arm", help="column to compare by (default: arm)")
    diagnose_cmd.set_defaults(func=_cmd_diagnose)

    _add_compare_parser(commands)

    power_cmd = commands.add_parser(
        "power",
        parents=_common(quiet=False),
        help="sample size, power or minimum detectable effect from formulas",
        description="Runs and tasks per arm needed to detect an effect (default), the power of given runs "
        "(--n), or the minimum detectable effect of given runs (--mde --n). What --effect and --baseline mean "
        "depends on the metric kind: binary, baseline success rate and absolute change (0.05 or 5%); ordinal, "
        "baseline level shares worst first (0.2,0.3,0.3,0.2) and an odds ratio; continuous, Cohen's d (no "
        "baseline); cost/count, a pilot sample (a file: one number per line, or .csv/.parquet with --column) "
        "and a relative change of the --quantile (-20%).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    power_cmd.add_argument("--metric", required=True, choices=list(KINDS), help="the metric's kind")
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
        parents=_common(quiet=True),
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
    plan_cmd.add_argument("--kind", choices=list(KINDS), help="the metric's kind (default: from the scores)")
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
    _add_format_arguments(plan_cmd)
    _add_power_settings(plan_cmd)
    plan_cmd.set_defaults(func=_cmd_plan)
    return parser


def _add_compare_parser(commands: Any) -> None:
    cmd = commands.add_parser(
        "compare",
        parents=_common(quiet=True),
        help="compare a candidate with a baseline and decide: ship, don't ship or inconclusive",
        usage="agentab compare BASELINE CANDIDATE [options]\n"
        "       agentab compare SOURCE... --arm-column COL [--names BASELINE CANDIDATE] [options]",
        description=textwrap.fill(
            "Load two arms' traces (or scores tables), score every run against --spec, compare every metric with "
            "the test its kind calls for (tasks as the unit: paired by task when both arms ran the same tasks; "
            "permutation p-values, bootstrap intervals; secondary metrics Holm-adjusted), check the guardrails and "
            "print the verdict with its reasons and the table (or, with --json, the result as JSON). Outcome "
            "decides, trajectory explains, cost constrains.", width=100),
        epilog=_COMPARE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    cmd.add_argument("sources", nargs="+", type=Path, metavar="SOURCE",
                     help="BASELINE CANDIDATE: trace files/folders or scores tables (.csv/.parquet), arms by "
                     "position; or SOURCE... with --arm-column")
    data = cmd.add_argument_group("arms and data")
    data.add_argument("--names", nargs=2, metavar=("BASELINE", "CANDIDATE"),
                      help="the arms' names (two sources), or which two arms of --arm-column to compare")
    data.add_argument("--arm-column", metavar="COL",
                      help="take the arms from this runs column or metadata key (default for one source: arm)")
    data.add_argument("--spec", type=Path, help="trajectory spec (JSON), as for `agentab score`")
    _add_format_arguments(data)
    data.add_argument("--lenient", action="store_true",
                      help="leave out invalid records (listed on stderr) instead of stopping at the first")
    what = cmd.add_argument_group("what decides")
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
    stats = cmd.add_argument_group("statistics")
    stats.add_argument("--alpha", type=float, default=0.05,
                       help="significance level; intervals have confidence 1 - alpha (default 0.05)")
    stats.add_argument("--n-resamples", type=int, default=9999, metavar="N",
                       help="permutations and bootstrap resamples per metric, at least 99 (default 9999)")
    stats.add_argument("--seed", type=int, default=0, help="seed of the resampling (default 0: reproducible)")
    stats.add_argument("--paired", choices=["auto", "yes", "no"], default="auto",
                       help="pair the arms by task: auto (when most tasks ran in both; default), yes, no")
    stats.add_argument("--cluster", default="task_id", metavar="COL",
                       help="the task column, the unit of replication (default task_id; 'none': runs independent)")
    out = cmd.add_argument_group("output")
    out.add_argument("--json", action="store_true", help="print the result as JSON (schema below) instead of text")
    out.add_argument("--report", type=Path, metavar="FILE",
                     help="also write a report: .html (self-contained) or .md")
    out.add_argument("--fail-on", choices=sorted(FAIL_ON),
                     help="exit non-zero unless the verdict passes: dont-ship (3 on don't ship) or "
                     "inconclusive (3 on don't ship, 4 on inconclusive)")
    cmd.set_defaults(func=_cmd_compare)


def _add_power_settings(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--alpha", type=float, default=0.05, help="significance level (default 0.05)")
    parser.add_argument("--power", type=float, default=0.8, help="target power (default 0.8)")
    parser.add_argument("--alternative", choices=["two-sided", "larger", "smaller"], default="two-sided",
                        help="two-sided (default), or one-sided: the candidate larger / smaller")
    parser.add_argument("--quantile", type=float, default=0.95, help="quantile for cost/count (default 0.95)")
    parser.add_argument("--seed", type=int, help="seed of simulations")


# --------------------------------------------------------------------------- #
# Shared helpers
# --------------------------------------------------------------------------- #
def _require_file(path: Path) -> None:
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file or directory")


def _read_spec(path: Path | None) -> TrajectorySpec | dict[str, TrajectorySpec]:
    """A spec file: one spec object, or ``{"tasks": {task_id: spec}}``."""
    if path is None:
        return TrajectorySpec()
    _require_file(path)
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as err:
        raise SpecError(f"{path}, line {err.lineno}: malformed JSON: {err.msg}") from err
    except UnicodeDecodeError as err:
        raise SpecError(f"{path}: not a UTF-8 text file ({err.reason})") from err
    if not isinstance(data, dict):
        raise SpecError(f"{path}: expected a JSON object, got {type(data).__name__}")
    try:
        if set(data) == {"tasks"}:
            return {str(task): TrajectorySpec(**spec) for task, spec in data["tasks"].items()}
        return TrajectorySpec(**data)
    except (TypeError, ValueError, AttributeError) as err:
        raise SpecError(f"{path}: {err}") from err


def _read_table(path: Path) -> pd.DataFrame:
    """A scores table (.csv or .parquet), with a one-line error when it cannot be read."""
    _require_file(path)
    try:
        return pd.read_csv(path) if path.suffix.lower() == ".csv" else pd.read_parquet(path)
    except (ValueError, OSError, ImportError) as err:  # ParserError, EmptyDataError, ArrowInvalid are ValueErrors
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise _InputError(f"{path}: cannot read the table: {first}") from err


def _load(source: Any, args: argparse.Namespace, progress: _Progress) -> Traces:
    fields = _fields(args)
    try:
        with progress.phase("loading", unit=" files") as tick:
            traces = load_traces(source, format=getattr(args, "format", "auto"), fields=fields,
                                 strict=not args.lenient, progress=tick)
    except (TypeError, ValueError) as err:  # a bad --format or --field: the loader's message names it
        if isinstance(err, TraceError):
            raise
        raise _InputError(str(err).replace("`format` ==", "--format").replace("`fields`", "--field")) from err
    converted = sorted({fmt for _, fmt in traces.formats if fmt != "record"})
    if converted and getattr(args, "format", "auto") == "auto":
        _note(args, f"read as {', '.join(converted)} (detected; --format to choose)")
    return traces


def _score(traces: Traces, spec: Any, progress: _Progress) -> pd.DataFrame:
    with progress.phase(f"scoring {len(traces.runs):,} runs", total=1):
        return score(traces, spec)


def _print_traces_summary(traces: Traces, by: str = "arm", quiet: bool = False) -> None:
    print(format_summary(summarize(traces, by=by)))
    _print_rejected(traces, quiet=quiet)


def _print_rejected(traces: Traces, *, quiet: bool = False, file: Any = None) -> None:
    """The records --lenient left out: a count and the first ten (the count alone under --quiet)."""
    if not len(traces.rejected):
        return
    out = sys.stdout if file is None else file
    head = f"{len(traces.rejected):,} of {traces.n_read:,} records rejected"
    if quiet:
        print(f"\n{head}", file=out)
        return
    print(f"\n{head}:", file=out)
    for row in traces.rejected.head(10).itertuples(index=False):
        location = where(row.source, row.line) + ("" if pd.isna(row.field) else f", field {row.field}")
        print(f"  {location}: {row.reason}", file=out)
    if len(traces.rejected) > 10:
        print(f"  ... and {len(traces.rejected) - 10:,} more", file=out)


def _note(args: argparse.Namespace, text: str) -> None:
    """A note on stderr about a choice made on the user's behalf (silent under --quiet)."""
    if not getattr(args, "quiet", False):
        print(f"agentab: note: {text}", file=sys.stderr)


def _number(text: str, what: str) -> float:
    """A number, with ``%`` meaning hundredths (``5%`` is 0.05)."""
    raw = text.strip()
    try:
        return float(raw[:-1]) / 100.0 if raw.endswith("%") else float(raw)
    except ValueError:
        raise PowerError(f"{what} must be a number (or a percentage), got {text!r}") from None


# --------------------------------------------------------------------------- #
# Commands
# --------------------------------------------------------------------------- #
def _cmd_demo(args: argparse.Namespace) -> int:
    progress = _Progress.for_args(args)
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
    scores = _score(traces, specs, progress)
    print("\nTrajectory scores (each task's spec: read, edit and test the target within 15 steps,\n"
          "loop cap 3, modify only the intended files, delete nothing):\n")
    print(format_summary(summarize_scores(scores)))
    with progress.phase("diagnosing", total=1):
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
    with progress.phase("comparing", unit=" metrics") as tick:
        result = compare(scores, metrics=DEMO_METRICS, guardrails=DEMO_GUARDRAILS, seed=args.seed, progress=tick)
    print(result)
    print(
        f"\nPlanning the next experiment: how many tasks and seeds detect +{DEMO_PLAN_EFFECT * 100:.0f} points of\n"
        "success (the primary metric) with 80% power? This experiment serves as the pilot: its baseline arm\n"
        "gives the success rate and the intra-task correlation, and its two arms how much the effect\n"
        "varies from task to task (agentab plan PILOT --metric outcome --effect 0.05).\n"
    )
    from agentab.power import plan

    print(plan(scores, "outcome", DEMO_PLAN_EFFECT))
    return EXIT_OK


def _cmd_example(args: argparse.Namespace) -> int:
    paths = datasets.write_example(args.out, seed=args.seed, n_tasks=args.tasks, n_seeds=args.seeds)
    for arm, path in paths.items():
        print(f"{arm}: {path}")
    return EXIT_OK


def _cmd_formats(args: argparse.Namespace) -> int:
    from agentab import formats

    for fmt in formats.available().values():
        print(f"{fmt.name}: {fmt.summary}")
        print(f"  example: {fmt.example}")
        if fmt.fields:
            mapping = ", ".join(f"{name} <- {key}" for name, key in fmt.fields.items())
            print(f"  run-level fields (--field NAME=KEY to change): {mapping}")
        print()
    print("--format auto (the default) detects each file's format from its first bytes.")
    return EXIT_OK


def _cmd_summary(args: argparse.Namespace) -> int:
    traces = _load(list(args.traces), args, _Progress.for_args(args))
    _print_traces_summary(traces, by=args.by, quiet=args.quiet)
    return EXIT_OK


def _cmd_score(args: argparse.Namespace) -> int:
    progress = _Progress.for_args(args)
    spec = _read_spec(args.spec)
    suffix = None if args.out is None else args.out.suffix.lower()
    if suffix not in (None, *_TABLE_SUFFIXES):
        raise SpecError(f"{args.out}: the output must end in .csv or .parquet")
    traces = _load(list(args.traces), args, progress)
    scores = _score(traces, spec, progress)
    if args.out is None:
        print(format_summary(summarize_scores(scores)))
    else:
        if suffix == ".parquet":
            scores.to_parquet(args.out, index=False)
        else:
            scores.to_csv(args.out, index=False)
        print(f"{len(scores):,} runs scored: {args.out}")
    _print_rejected(traces, quiet=args.quiet)
    return EXIT_OK


def _cmd_diagnose(args: argparse.Namespace) -> int:
    progress = _Progress.for_args(args)
    spec = _read_spec(args.spec)
    traces = _load(list(args.traces), args, progress)
    with progress.phase(f"diagnosing {len(traces.runs):,} runs", total=1):
        found = diagnose(traces, spec=spec, by=args.by)
    print(found)
    _print_rejected(traces, quiet=args.quiet)
    return EXIT_OK


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
    if path.suffix in _TABLE_SUFFIXES:
        table = _read_table(path)
        if args.column is None or args.column not in table.columns:
            raise PowerError(f"{path}: say --column (columns: {', '.join(map(str, table.columns))})")
        try:
            return pd.to_numeric(table[args.column], errors="raise").to_numpy(dtype=float)
        except (ValueError, TypeError) as err:
            raise PowerError(f"{path}, column {args.column}: {err}") from err
    values = []
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if line.strip():
            values.append(_number(line, f"{path}, line {number}"))
    return values


def _cmd_power(args: argparse.Namespace) -> int:
    from agentab import power as pw

    baseline = _power_baseline(args)
    common = {
        "baseline": baseline, "alpha": args.alpha, "seeds_per_task": args.seeds, "icc": args.icc,
        "alternative": args.alternative, "quantile": args.quantile, "method": args.method,
    }
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


def _read_pilot(args: argparse.Namespace, progress: _Progress) -> pd.DataFrame:
    paths = list(args.pilot)
    if len(paths) == 1 and paths[0].suffix.lower() in _TABLE_SUFFIXES:
        return _read_table(paths[0])
    spec = _read_spec(args.spec)
    traces = _load(paths, args, progress)
    _print_rejected(traces, quiet=args.quiet)
    return _score(traces, spec, progress)


def _cmd_plan(args: argparse.Namespace) -> int:
    from agentab.power import plan

    effect = _number(args.effect, "--effect")
    pilot = _read_pilot(args, _Progress.for_args(args))
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


# --------------------------------------------------------------------------- #
# agentab compare
# --------------------------------------------------------------------------- #
def _parse_metric_args(items: Sequence[str] | None) -> dict[str, Any] | None:
    """``--metric COL``, ``COL=KIND``, ``COL=KIND:DIR`` -> compare's ``metrics`` mapping (None: the default set)."""
    if not items:
        return None
    out: dict[str, Any] = {}
    for item in items:
        name, has_kind, spec = (part.strip() for part in item.partition("="))
        if not name or (has_kind and not spec):
            raise _InputError(f"--metric {item!r}: expected COLUMN, COLUMN=KIND or COLUMN=KIND:higher|lower")
        if name in out:
            raise _InputError(f"--metric {name!r} is given twice")
        if not has_kind:
            out[name] = None
            continue
        kind, has_direction, direction = (part.strip().lower() for part in spec.partition(":"))
        if kind not in KINDS:
            raise _InputError(f"--metric {item!r}: unknown kind {kind!r} (kinds: {', '.join(KINDS)})")
        if has_direction and direction not in ("higher", "lower", "neither"):
            raise _InputError(f"--metric {item!r}: the direction must be higher or lower (which is better) or neither, got {direction!r}")
        out[name] = (kind, direction) if has_direction else kind
    return out


def _parse_guardrail_args(items: Sequence[str] | None) -> list[str] | None:
    """``--guardrail "tokens:p95<=+10%"`` -> compare's list of "metric: rule" (the rule is checked by compare)."""
    if not items:
        return None
    out = []
    for item in items:
        metric, colon, rule = item.partition(":")
        if not colon or not metric.strip() or not rule.strip():
            raise _InputError(f"--guardrail {item!r}: expected 'METRIC: STAT OP MARGIN', e.g. 'tokens: p95 <= +10%'")
        out.append(f"{metric.strip()}:{rule.strip()}")
    return out


def _arm_name(path: Path) -> str:
    """runs/base.jsonl.gz -> "base"; a folder -> its name."""
    name = path.name
    for suffix in (*_TRACE_SUFFIXES, *_TABLE_SUFFIXES):
        if name.lower().endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return name


def _default_names(args: argparse.Namespace, baseline: Path, candidate: Path) -> tuple[str, str]:
    """The arms named after their files or folders; after the nearest parent folders that differ when those are equal."""
    names = _arm_name(baseline), _arm_name(candidate)
    if names[0] != names[1]:
        return names
    for left, right in zip(baseline.resolve().parents, candidate.resolve().parents):
        if left.name and right.name and left.name != right.name:
            _note(args, f"both sources are named {names[0]!r}: the arms are named after their folders, "
                        f"{left.name!r} and {right.name!r} (--names to choose)")
            return left.name, right.name
    raise _InputError(
        f"{baseline} and {candidate}: both arms would be named {names[0]!r}; name them with --names BASELINE CANDIDATE"
    )


def _runs_column(scores: pd.DataFrame, traces: Traces, column: str, where_: str) -> pd.DataFrame:
    """Add ``column`` to the scores: a runs column, or a key of the runs' metadata."""
    if column in scores.columns:
        return scores
    runs = traces.runs
    if column in runs.columns:
        values = runs[column]
    else:
        values = traces.metadata_values(column) if "metadata" in runs.columns else pd.Series(dtype=object)
        if not values.notna().any():
            shown = [c for c in runs.columns if c not in ("metadata", "line")]
            raise _InputError(
                f"{where_}: --arm-column {column!r} is neither a runs column nor a metadata key "
                f"(columns: {', '.join(map(str, shown))})"
            )
    by_run = pd.Series(values.to_numpy(), index=runs["run_id"].astype(str).to_numpy())
    scores = scores.copy()
    scores[column] = by_run.reindex(scores["run_id"].astype(str)).to_numpy()
    return scores


def _check_arms(data: pd.DataFrame, column: str, names: Sequence[str] | None, where_: str) -> None:
    """Every run has an arm; --names are arms of the column; without them, exactly two arms."""
    if column not in data.columns:
        raise _InputError(f"{where_}: no column {column!r} (columns: {', '.join(map(str, data.columns))})")
    missing = data[column].isna()
    if missing.all():
        hint = (" (the records have no `arm` field): give two sources, BASELINE CANDIDATE, or the column holding "
                "the arms with --arm-column") if column == "arm" else ""
        raise _InputError(f"{where_}: no run has a value in column {column!r}{hint}")
    if missing.any():
        raise _InputError(f"{where_}: {int(missing.sum()):,} of {len(data):,} runs have no value in column {column!r}")
    arms = list(dict.fromkeys(str(a) for a in pd.unique(data[column])))
    if names:
        for name in names:
            if name not in arms:
                raise _InputError(f"--names: no arm {name!r} in column {column!r} (arms: {', '.join(arms)})")
    elif len(arms) < 2:
        raise _InputError(
            f"{where_}: column {column!r} has one arm ({arms[0]}); give two sources, BASELINE CANDIDATE, or an "
            "--arm-column with two arms"
        )
    elif len(arms) > 2:
        raise _InputError(
            f"{where_}: column {column!r} has {len(arms)} arms ({', '.join(arms)}); pick two with --names BASELINE CANDIDATE"
        )


def _compare_data(args: argparse.Namespace, progress: _Progress) -> tuple[pd.DataFrame, Traces | None, str, str | None, str | None]:
    """The runs to compare: (scores, traces or None, arm column, baseline, candidate)."""
    sources = list(args.sources)
    tables = [p.suffix.lower() in _TABLE_SUFFIXES for p in sources]
    if any(tables) and not all(tables):
        raise _InputError("give trace files/folders or scores tables (.csv/.parquet), not both")
    names = tuple(args.names) if args.names else None
    if names and names[0] == names[1]:
        raise _InputError(f"--names: baseline and candidate must differ, got {names[0]!r} twice")
    where_ = ", ".join(map(str, sources))
    if args.arm_column is not None or len(sources) == 1:
        column = args.arm_column or "arm"
        if all(tables):
            frames = [_read_table(p) for p in sources]
            data, traces = (frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)), None
        else:
            spec = _read_spec(args.spec)
            traces = _load(sources, args, progress)
            data = _runs_column(_score(traces, spec, progress), traces, column, where_)
        _check_arms(data, column, names, where_)
        return data, traces, column, *(names or (None, None))
    if len(sources) != 2:
        raise _InputError(
            f"give two sources, BASELINE CANDIDATE (got {len(sources)}), or take the arms from a column with --arm-column COL"
        )
    if sources[0].resolve() == sources[1].resolve():
        raise _InputError(f"{sources[0]}: BASELINE and CANDIDATE are the same {'folder' if sources[0].is_dir() else 'file'}")
    if all(tables):
        names = names or _default_names(args, *sources)
        named_by = "by --names" if args.names else "after the files or folders"
        frames = []
        for path, name in zip(sources, names):
            frame = _read_table(path)
            if "arm" in frame.columns and frame["arm"].notna().any():
                own = [str(a) for a in pd.unique(frame["arm"].dropna())]
                if own != [name]:
                    raise _InputError(
                        f"{path}: the table's arm column says {', '.join(map(repr, own))}, but this arm is named {name!r} "
                        f"({named_by}): name the arms with --names BASELINE CANDIDATE, or compare by that column: agentab compare "
                        f"{' '.join(map(str, sources))} --arm-column arm"
                    )
            frames.append(frame.assign(arm=name))
        return pd.concat(frames, ignore_index=True), None, "arm", *names
    spec = _read_spec(args.spec)
    traces = _load([str(p) for p in sources], args, progress)  # the records' own arms, if any, are kept
    position = _source_positions(traces.runs["source"], sources)
    names = _position_names(args, traces.runs["arm"], position, sources)
    for i, (path, name) in enumerate(zip(sources, names)):
        if not (position == i).any():
            message = f"{path}: no valid runs for arm {name!r}: every record was rejected"
            if len(traces.rejected):
                first = traces.rejected.iloc[0]
                message += f" (e.g. {where(first['source'], first['line'])}: {first['reason']})"
            raise _InputError(message)
    scores = _score(traces, spec, progress)
    arm_of = pd.Series([names[i] for i in position], index=traces.runs["run_id"].astype(str).to_numpy())
    scores["arm"] = arm_of.reindex(scores["run_id"].astype(str)).to_numpy()
    return scores, traces, "arm", *names


def _source_positions(files: pd.Series, sources: Sequence[Path]) -> np.ndarray:
    """0 for the runs read from BASELINE (a file, or a file under the folder), 1 for CANDIDATE's."""
    where_from = {}
    for name in pd.unique(files.astype(str)):
        path = Path(name)
        where_from[name] = next(i for i, src in enumerate(sources) if path == src or path.is_relative_to(src))
    return np.array([where_from[name] for name in files.astype(str)], dtype=int)


def _position_names(args: argparse.Namespace, arms: pd.Series, position: Any, sources: Sequence[Path]) -> tuple[str, str]:
    """The arms' names: --names; else the records' own arm field, one per source; else the files or folders."""
    own = [sorted(set(arms[position == i].dropna().astype(str))) for i in (0, 1)]
    if args.names:
        replaced = [f"{src}: {', '.join(o)}" for src, o, name in zip(sources, own, args.names) if o and o != [name]]
        if replaced:
            _note(args, f"the records' own arm field is replaced by --names ({'; '.join(replaced)})")
        return tuple(args.names)
    if not own[0] and not own[1]:
        return _default_names(args, *sources)
    hint = (f"name the arms with --names BASELINE CANDIDATE, or take them from the records: agentab compare "
            f"{' '.join(map(str, sources))} --arm-column arm")
    for src, o, i in zip(sources, own, (0, 1)):
        if len(o) > 1:
            raise _InputError(f"{src}: its records name {len(o)} arms ({', '.join(o)}); {hint}")
        if not o:
            raise _InputError(f"{src}: its records have no arm field, while the other source's records do; {hint}")
        missing = int(arms[position == i].isna().sum())
        if missing:
            raise _InputError(f"{src}: {missing} of its records have no arm field and the others say {o[0]!r}; {hint}")
    if own[0] == own[1]:
        raise _InputError(f"{sources[0]} and {sources[1]}: the records of both name the arm {own[0][0]!r}; {hint}")
    names = own[0][0], own[1][0]
    if names != (_arm_name(sources[0]), _arm_name(sources[1])):
        _note(args, f"the arms are named as their records name them: {names[0]!r} and {names[1]!r} (--names to rename)")
    return names


def _default_metrics(data: pd.DataFrame, column: str, baseline: str | None, candidate: str | None) -> list[str]:
    """The default metrics the scores have, with values in both arms (arg_accuracy needs a reference, say)."""
    arms = data[column].astype(str)
    compared = arms.isin([baseline, candidate]) if baseline and candidate else pd.Series(True, index=data.index)
    out = []
    for name in DEFAULT_METRICS:
        if name in data.columns:
            present = data.loc[compared, name].notna().groupby(arms[compared]).any()
            if len(present) and present.all():
                out.append(name)
    return out


def _check_report_path(path: Path | None) -> None:
    """Before any work: a report name that agentab.report will take, in a folder that exists or can be made."""
    if path is None:
        return
    if path.suffix.lower() not in _REPORT_SUFFIXES:
        raise _InputError(f"--report {path}: the report must end in .html or .md")
    if path.is_dir():
        raise _InputError(f"--report {path}: a folder; give the report's file name")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise _InputError(f"--report {path}: cannot make its folder {path.parent}: {err.strerror or err}") from err


def _cmd_compare(args: argparse.Namespace) -> int:
    progress = _Progress.for_args(args)
    # Everything that can be checked without the data is checked before loading it.
    metrics = _parse_metric_args(args.metric)
    guardrails = _parse_guardrail_args(args.guardrail)
    _check_report_path(args.report)
    if not 0 < args.alpha < 1:
        raise _InputError(f"--alpha must be between 0 and 1, got {args.alpha:g}")
    if args.n_resamples < 99:
        raise _InputError(f"--n-resamples must be at least 99, got {args.n_resamples}")
    if args.seed < 0:
        raise _InputError(f"--seed must be a non-negative integer, got {args.seed}")
    min_effect = None if args.min_effect is None else _number(args.min_effect, "--min-effect")
    cluster = None if args.cluster.lower() == "none" else args.cluster
    if cluster is None and args.paired == "yes":
        raise _InputError("--paired yes needs a task column (--cluster COL): runs are never paired by their order")
    data, traces, column, baseline, candidate = _compare_data(args, progress)
    if traces is not None:
        _print_rejected(traces, quiet=args.quiet, file=sys.stderr)
    if metrics is None:
        metrics = _default_metrics(data, column, baseline, candidate)
    for name in metrics:
        if name not in data.columns:
            known = [str(c) for c in metric_kinds(data).index if c != column]
            raise _InputError(f"--metric {name!r}: no such column in the scores (metrics: {', '.join(known)})")
    with progress.phase("comparing", unit=" metrics") as tick:
        result = compare(
            data, arm=column, baseline=baseline, candidate=candidate, metrics=metrics, primary=args.primary,
            guardrails=guardrails, cluster=cluster, paired={"auto": "auto", "yes": True, "no": False}[args.paired],
            alpha=args.alpha, n_resamples=args.n_resamples, seed=args.seed, min_effect=min_effect, progress=tick,
        )
    text = json.dumps(result.to_dict(), indent=2, allow_nan=False) if args.json else str(result)
    try:
        print(text)
        sys.stdout.flush()
    except BrokenPipeError:  # `agentab compare ... | head`: the report and the exit code still follow
        _silence_stdout()
    if args.report is not None:
        import agentab  # the public API (agentab.report), imported when first needed

        with progress.phase("writing the report", total=1):
            written = agentab.report(result, args.report, traces=traces, seed=args.seed)
        _note(args, f"report written to {written}")
    return FAIL_ON.get(args.fail_on, {}).get(result.verdict, EXIT_OK)


def _silence_stdout() -> None:
    """Send what is left of stdout to /dev/null once its reader has gone (no error at exit)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


# --------------------------------------------------------------------------- #
# Entry point
# --------------------------------------------------------------------------- #
_BAD_INPUT = (TraceError, SpecError, CompareError, PowerError, ReportError, _InputError, OSError, KeyError, pd.errors.ParserError)


def _message(err: BaseException) -> str:
    """One line: the file and the problem."""
    if isinstance(err, KeyError) and err.args:
        return str(err.args[0])
    if isinstance(err, OSError) and err.filename is not None and err.strerror:
        return f"{err.filename}: {err.strerror[0].lower()}{err.strerror[1:]}"
    return " ".join(str(err).split()) or type(err).__name__


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``agentab`` command line; returns the exit code (see the module docstring)."""
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
    except _BAD_INPUT as err:
        if args.debug:
            raise
        print(f"agentab: error: {_message(err)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        if args.debug:
            raise
        print("agentab: interrupted", file=sys.stderr)
        return 130
    except Exception as err:  # last resort: no traceback without --debug
        if args.debug:
            raise
        print(f"agentab: internal error: {type(err).__name__}: {_message(err)} (run with --debug for details)",
              file=sys.stderr)
        return EXIT_INTERNAL


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    print(f"agentab: warning: {' '.join(str(message).split())}", file=sys.stderr)
