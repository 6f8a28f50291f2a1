"""Deterministic synthetic two-arm experiment for a coding / tool-use agent.

This module generates a *realistic* A/B experiment of an AI coding agent so
that the rest of :mod:`agentab` can be demonstrated, tested and benchmarked
without real traces.  Every record follows the agentab trace format (one dict
per run, see :func:`example_records`).

Design of the experiment
------------------------
* ``n_tasks`` tasks (``"t000"``, ``"t001"``, ...), each run ``n_seeds`` times
  (``seed`` = 0 .. n_seeds-1) in **both** arms: a task-paired design.
* Arm ``"baseline"``: model ``"sonnet-4"``, harness ``"react-v1"``.
* Arm ``"candidate"``: the same model with harness ``"react-v2"`` -- better
  tool descriptions (fewer wrong-argument and wrong-tool calls, a longer
  system prompt) and a **loop guard**: a call identical to the previous,
  successful one is not executed (the step gets a ``LoopGuard`` error) and
  the run is ended at the 4th such block.
* Records are yielded arm ``"baseline"`` first, then arm ``"candidate"``;
  within an arm task by task, and within a task seed by seed.

Randomness
----------
Nothing uses global random state.  Each task draws its attributes from
``numpy.random.default_rng(SeedSequence(seed, spawn_key=(task_index, 0)))``
and each run from ``SeedSequence(seed, spawn_key=(task_index, arm_code,
run_seed))`` with ``arm_code`` 1 (baseline) or 2 (candidate).  A run therefore
depends only on ``(seed, task_index, arm, run_seed)``, not on the order of
generation nor on ``n_tasks`` / ``n_seeds``: the runs of a smaller
experiment are exactly the corresponding runs of a larger one with the same
seed.  Given the task, the two arms' runs are independent draws.

Generative model
----------------
**Task level** (shared by every run of the task, in both arms):

``difficulty``
    Latent ``d ~ Normal(0, 1.5)`` on the logit scale
    (:data:`TASK_DIFFICULTY_SD`).  It makes the runs of one task correlated,
    within and across arms: the intra-task correlation (one-way ANOVA ICC)
    of the binary outcome is about 0.25-0.3.
code location
    One of 8 areas (``billing``, ``auth``, ``search``, ...) and one of its 4
    modules: target ``src/<area>/<module>.py``, visible tests
    ``tests/test_<module>.py`` (8-60 tests), sibling files, a function name
    (e.g. ``compute_total``) and file sizes (log-normal, median ~5 kB).
bug topic
    One of 8 bug kinds (rounding, timezone, off-by-one, ...), each with a
    documentation query, a reference URL (``https://docs.python.org/...``)
    and a sequence of ``old_str -> new_str`` code edits.
dependency
    With probability 0.3 the fix needs a new package: the agent fetches
    ``https://pypi.org/simple/<pkg>/`` and edits ``requirements.txt``.
task prompt
    150-600 tokens of task description added to the context.

**Arm profiles** (:class:`ArmProfile`, :data:`ARM_PROFILES`):

=====================  ===================  ===================  =================================
parameter              baseline             candidate            produces
=====================  ===================  ===================  =================================
``intercept``          0.47                 1.05                 success ~0.56 vs ~0.65
``system_prompt_tok``  2,300                2,700                base of every ``tokens_in``
``p_typo``             0.07                 0.045                wrong-argument calls
``p_wrong_tool``       0.10                 0.06                 wrong-tool calls
``p_loop``             0.05                 0.05                 identical back-to-back repeats
``max_loop_repeats``   3                    1                    repeats per loop (no guard)
``loop_guard``         off                  on, limit 4          blocked repeats, early stops
``failure_weights``    .06/.30/.39/.25      .06/.30/.42/.22      give_up/premature/wrong_fix/spiral
``long_explore``       0.10                 0.10                 long successful explorations
``temperature``        0.2                  0.2                  ``metadata`` only
=====================  ===================  ===================  =================================

**Run level** (arm profile ``p``):

1. ``solved ~ Bernoulli(sigmoid(p.intercept - d))``, the latent "the agent
   finds a correct fix".
2. A *trajectory mode*: ``"solve"`` if solved, else one failure mode drawn
   with ``p.failure_weights`` over

   ``give_up``
       stops immediately (40 %: a run with zero steps) or after 1-3
       look-around steps (``stop_reason`` ``"agent_gave_up"``).
   ``premature``
       looks around, reads and (85 %) edits the target, then declares done
       without running the tests: premature completion.
   ``wrong_fix``
       the ordinary edit / run-tests cycle (15 %: after a 6-12 step
       exploration), but the final fix is wrong: the visible tests still
       fail (60 %) or pass while the external check fails (over-fitting the
       visible tests, 40 %).
   ``spiral``
       non-termination: endless searching, re-reading, looping and
       edit/test thrashing.  Under ``react-v1`` it runs into the step cap
       (:data:`MAX_STEPS` = 30, ``stop_reason`` ``"step_cap"``); under
       ``react-v2`` the loop guard usually ends it earlier (``"loop_guard"``).

   A ``solve`` run looks around (1-3 steps), reads the target (and 60 % the
   tests), adds the dependency if any, explores at length (10-18 extra
   look-around steps) with probability ``p.long_explore``, then edits and
   runs the tests with 0, 1 or 2 failing rounds (probabilities .55/.33/.12)
   each followed by a re-edit, until the tests pass; 25 % also write a
   regression test file.
3. Steps are emitted by a small agent simulator.  Failure shapes injected at
   the level of single calls, identical in mechanism in every mode:

   wrong argument
       with probability ``p.p_typo`` a path-taking call first uses a typo'd
       path (``FileNotFoundError: src/billing/invocie.py``), an edit uses a
       stale ``old_str`` (``ValueError: old_str not found ...``) or pytest
       gets a wrong file; the agent then retries with the right argument.
   wrong tool
       with probability ``p.p_wrong_tool`` per look-around step the agent
       calls ``read_file`` on a directory (``IsADirectoryError``) and falls
       back to ``list_dir``, or searches the docs for a code symbol (0
       results) and falls back to ``grep``.
   transient errors
       ``http_get`` answers ``HTTP 503`` (probability 0.12) and ``run_tests``
       times out after 120 s (0.02); the agent retries the identical call.
   loops
       after a successful read/search/list/grep/http call the agent repeats
       the identical call back to back with probability ``p.p_loop`` (x2.5
       while exploring, x6 in a spiral), 1..``p.max_loop_repeats`` times.
       Random look-around choices can also repeat the previous call.  Under
       ``react-v2`` every such repeat is blocked by the loop guard.
   backtracks
       a failing test run is followed by a new edit of the same file.
   side-effect sloppiness
       a stray scratch file is written at the repository root (probability
       0.06) or an unrelated file deleted (0.03).
4. ``outcome`` -- the external check -- is ``solved and stop_reason ==
   "agent_done"``: hitting the step cap or the loop guard fails the run even
   if the fix was on its way.  Solved runs with loops or errors are
   *accidental recoveries*.

**Per step** (``index`` 0..n-1):

tokens
    ``tokens_in`` is the whole context: system prompt + task prompt + every
    earlier ``tokens_out`` and observation, so it grows with the step index
    and the per-run total grows roughly quadratically with the run length
    (right skew, long tail).  ``tokens_out`` is log-normal (median 140, 330
    for edits and writes, sigma 0.45).  Observation sizes: ``read_file``
    bytes/4, search results ~250 + 90 per hit, test output ~80 + 220 per
    failure, errors 40-60.
time
    Each step starts 0-250 ms after the previous one ends and lasts model
    time ``(0.5 + tokens_out/75 + tokens_in/25000) s`` (log-normal jitter)
    plus tool time (``run_tests`` seconds, ``http_get`` ~0.35 s, file
    operations milliseconds, a timeout 120 s).  Runs start at
    :data:`BASE_TIME` (``2026-11-02T09:00:00Z``) + ``240 s * task_index + 17
    s * run_seed`` + 0-5 s jitter; both arms run concurrently.  Timestamps
    are ISO-8601 UTC with milliseconds and a ``Z`` suffix.

**Per run**:

``retries``
    number of error steps that are followed by another step.
``backtracks``
    number of successful ``edit_file`` / ``write_file`` calls on a path the
    run had already changed.
``terminal_state``
    ``files_created`` (``write_file`` paths), ``files_modified``
    (``edit_file`` paths not created in the run), ``files_deleted``
    (``delete_file`` paths), ``external_calls`` (URL of every ``http_get``
    request sent, retries included, in order; calls blocked by the loop
    guard are not sent) and ``tests_passing`` (the last full ``run_tests``
    reported no failure; ``False`` if none ran).
``cost_usd``
    ``(tokens_in * 3.00 + tokens_out * 15.00) / 1e6`` for ``"sonnet-4"``
    (:data:`PRICES_USD_PER_MTOK`, USD per million tokens), rounded to 1e-6.
``latency_s``
    last ``ended_at`` minus first ``started_at`` (0.0 without steps).
``metadata``
    ``model``, ``harness``, ``temperature`` and ``stop_reason``
    (``"agent_done"``, ``"agent_gave_up"``, ``"step_cap"``, ``"loop_guard"``);
    a run without steps (the simulated agent gave up before any model call:
    cost and latency 0) also records ``tokens_in`` and ``tokens_out`` as 0, so
    its tokens read 0 (recorded), not unknown.

Resulting properties (``seed=0``, 10,000 tasks x 5 seeds, measured on the
output): 10.8 steps per run on average (median 8-9; 15 % of baseline and
6 % of candidate runs have 25+ steps, 1 % none); success 0.564 -> 0.652;
median tokens ~52 k in both arms (ratio 0.99); p95 tokens 428 k -> 301 k
(30 % lower); p95/p50 tokens ratio 8.2 (baseline) and 5.8 (candidate);
outcome ICC 0.27 / 0.26; mean cost 0.36 / 0.27 USD per run.

Examples
--------
>>> from agentab.datasets import example_records
>>> records = list(example_records(0, n_tasks=3, n_seeds=2))
>>> len(records)
12
>>> [r["run_id"] for r in records[:3]]
['baseline-t000-s0', 'baseline-t000-s1', 'baseline-t001-s0']
"""

from __future__ import annotations

import contextlib
import json
import pathlib
from collections.abc import Iterator
from typing import Any

from agentab._write import atomic_file
from agentab.datasets._arms import (
    ARM_PROFILES,
    BASE_TIME,
    MAX_STEPS,
    PRICES_USD_PER_MTOK,
    ArmProfile,
)
from agentab.datasets._records import check_args, generate
from agentab.datasets._tasks import REQUIREMENTS, TASK_DIFFICULTY_SD, make_task

__all__ = [
    "ARM_PROFILES",
    "BASE_TIME",
    "MAX_STEPS",
    "PRICES_USD_PER_MTOK",
    "TASK_DIFFICULTY_SD",
    "ArmProfile",
    "example_experiment",
    "example_records",
    "example_specs",
    "write_example",
]


def example_records(seed: int = 0, *, n_tasks: int = 60,
                    n_seeds: int = 5) -> Iterator[dict[str, Any]]:
    """Stream the trace records of a synthetic two-arm agent experiment.

    The generative model is documented in the module docstring.  Records are
    produced one at a time (nothing is accumulated), baseline arm first, so
    very large experiments can be written with constant memory.

    Parameters
    ----------
    seed : int, default 0
        Non-negative master seed; the same seed gives identical records.
    n_tasks : int, default 60
        Number of tasks; run ``i`` of a task does not depend on ``n_tasks``.
    n_seeds : int, default 5
        Runs per task and arm (the records' ``seed`` is 0 .. n_seeds-1).

    Returns
    -------
    Iterator[dict]
        A generator of ``2 * n_tasks * n_seeds`` JSON-serialisable trace
        records with keys ``run_id``, ``task_id``, ``seed``, ``arm``,
        ``steps``, ``terminal_state``, ``retries``, ``backtracks``,
        ``outcome``, ``cost_usd``, ``latency_s`` and ``metadata``.

    Raises
    ------
    TypeError
        If an argument is not an integer.
    ValueError
        If an argument is negative.

    Examples
    --------
    >>> from agentab.datasets import example_records
    >>> records = list(example_records(1, n_tasks=10, n_seeds=2))
    >>> len(records), sorted({r["arm"] for r in records})
    (40, ['baseline', 'candidate'])
    >>> records[0]["run_id"], records[-1]["run_id"]
    ('baseline-t000-s0', 'candidate-t009-s1')
    >>> list(example_records(1, n_tasks=10, n_seeds=2)) == records
    True
    """
    check_args(seed, n_tasks, n_seeds)
    return generate(int(seed), int(n_tasks), int(n_seeds))


def example_experiment(seed: int = 0, *, n_tasks: int = 60, n_seeds: int = 5) -> Any:
    """Load the synthetic experiment with :func:`agentab.traces.load_traces`.

    Parameters
    ----------
    seed : int, default 0
        Master seed, see :func:`example_records`.
    n_tasks : int, default 60
        Number of tasks.
    n_seeds : int, default 5
        Runs per task and arm.

    Returns
    -------
    agentab.traces.Traces
        The loaded traces: ``.runs`` has one row per run and ``.steps`` one
        row per step.

    Examples
    --------
    >>> from agentab.datasets import example_experiment
    >>> traces = example_experiment(0, n_tasks=4, n_seeds=2)
    >>> len(traces.runs)
    16
    >>> sorted(traces.runs["arm"].unique())
    ['baseline', 'candidate']
    """
    from agentab.traces import load_traces

    return load_traces(list(example_records(seed, n_tasks=n_tasks, n_seeds=n_seeds)))


def write_example(out_dir: str | pathlib.Path, seed: int = 0, *, n_tasks: int = 60,
                  n_seeds: int = 5) -> dict[str, pathlib.Path]:
    """Write the synthetic experiment as one JSONL file per arm.

    Records are streamed to ``<out_dir>/baseline.jsonl`` and
    ``<out_dir>/candidate.jsonl``, one compact JSON object per line;
    memory use does not grow with the size of the experiment.

    Parameters
    ----------
    out_dir : str or pathlib.Path
        Destination directory, created (with parents) if missing.  Existing
        files of the same names are overwritten.
    seed : int, default 0
        Master seed, see :func:`example_records`.
    n_tasks : int, default 60
        Number of tasks.
    n_seeds : int, default 5
        Runs per task and arm.

    Returns
    -------
    dict[str, pathlib.Path]
        ``{"baseline": path, "candidate": path}``.

    Examples
    --------
    >>> import tempfile
    >>> from agentab.datasets import write_example
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     paths = write_example(tmp, n_tasks=3, n_seeds=2)
    ...     sorted(paths), [len(p.read_text().splitlines()) for p in paths.values()]
    (['baseline', 'candidate'], [6, 6])
    """
    check_args(seed, n_tasks, n_seeds)
    directory = pathlib.Path(out_dir)
    directory.mkdir(parents=True, exist_ok=True)
    paths = {p.arm: directory / f"{p.arm}.jsonl" for p in ARM_PROFILES}
    with contextlib.ExitStack() as stack:  # each file whole or as it was (atomic_file: a temporary, then a rename)
        handles = {arm: stack.enter_context(atomic_file(path, "w", encoding="utf-8"))
                   for arm, path in paths.items()}
        for record in example_records(seed, n_tasks=n_tasks, n_seeds=n_seeds):
            handles[record["arm"]].write(json.dumps(record, separators=(",", ":")) + "\n")
    return paths


def example_specs(seed: int = 0, *, n_tasks: int = 60) -> dict[str, Any]:
    """A :class:`~agentab.TrajectorySpec` per task of the example experiment.

    Each task needs the target file read, edited and the tests run (a
    ``superset`` reference: extra calls are tolerated), within 15 steps
    (the harness caps runs at :data:`MAX_STEPS`), with a loop cap of 3
    repeats. Its intended terminal state modifies the target file (and
    ``requirements.txt`` when the fix needs a dependency, whose PyPI page is
    then a reference call too) and deletes nothing; created files are not
    checked (a regression test is welcome).

    Examples
    --------
    >>> from agentab.datasets import example_specs
    >>> spec = example_specs(0, n_tasks=3)["t000"]
    >>> [call.tool for call in spec.reference]
    ['read_file', 'edit_file', 'run_tests']
    >>> spec.step_budget, spec.step_cap, spec.max_repeats
    (15, 30, 3)
    """
    from agentab.scoring.trajectory import Call, TrajectorySpec

    check_args(seed, n_tasks, 1)
    specs = {}
    for index in range(n_tasks):
        task = make_task(seed, index)
        reference = [Call("read_file", {"path": task.target}), Call("edit_file", {"path": task.target}),
                     Call("run_tests")]
        modified = [task.target]
        if task.dependency is not None:
            reference.insert(1, Call("http_get", {"url": f"https://pypi.org/simple/{task.dependency[0]}/"}))
            reference.insert(2, Call("edit_file", {"path": REQUIREMENTS}))
            modified.append(REQUIREMENTS)
        specs[task.task_id] = TrajectorySpec(
            reference=tuple(reference), match="superset", step_budget=15, step_cap=MAX_STEPS, max_repeats=3,
            forbidden=(), expected_state={"files_modified": modified, "files_deleted": []},
        )
    return specs
