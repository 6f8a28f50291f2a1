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
    (``"agent_done"``, ``"agent_gave_up"``, ``"step_cap"``, ``"loop_guard"``).

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
import math
import pathlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from types import MappingProxyType
from typing import Any

import numpy as np

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

MAX_STEPS: int = 30
"""Step cap enforced by both harnesses; a run that wants more is stopped."""

BASE_TIME: str = "2026-11-02T09:00:00Z"
"""Start of the experiment (UTC)."""

TASK_DIFFICULTY_SD: float = 1.5
"""Standard deviation of the per-task latent difficulty (logit scale)."""

PRICES_USD_PER_MTOK: Mapping[str, tuple[float, float]] = MappingProxyType(
    {"sonnet-4": (3.0, 15.0)}
)
"""USD per million (input, output) tokens for each model used by an arm."""

_BASE_DATETIME = datetime(2026, 11, 2, 9, 0, 0)


@dataclass(frozen=True)
class ArmProfile:
    """Behavioural parameters of one arm (model + harness).

    Parameters
    ----------
    arm : str
        Arm name written to the records.
    code : int
        Non-zero integer used in the random-stream key of the arm's runs.
    model, harness : str
        Written to ``metadata``.
    intercept : float
        Logit of the latent success probability for a task of difficulty 0.
    system_prompt_tokens : int
        System prompt and tool descriptions, present in every ``tokens_in``.
    p_typo : float
        Probability that a path-taking call is first made with a wrong
        argument (typo'd path, stale ``old_str``, wrong test file).
    p_wrong_tool : float
        Probability per look-around step of a wrong-tool call.
    p_loop : float
        Probability that a successful read/search/list/grep/http call is
        repeated identically right away.
    max_loop_repeats : int
        Without a loop guard, a loop repeats the call 1..max_loop_repeats
        extra times.
    loop_guard : bool
        Whether identical back-to-back calls are blocked by the harness.
    guard_limit : int
        Number of blocked calls after which the harness ends the run.
    failure_weights : tuple of float
        Weights of the failure modes (give_up, premature, wrong_fix, spiral)
        for runs whose latent ``solved`` is False.
    long_explore : float
        Probability that a solved run explores at length first.
    temperature : float
        Sampling temperature, written to ``metadata``.

    Examples
    --------
    >>> from agentab.datasets import ARM_PROFILES
    >>> [(p.arm, p.harness, p.loop_guard) for p in ARM_PROFILES]
    [('baseline', 'react-v1', False), ('candidate', 'react-v2', True)]
    """

    arm: str
    code: int
    model: str
    harness: str
    intercept: float
    system_prompt_tokens: int
    p_typo: float
    p_wrong_tool: float
    p_loop: float
    max_loop_repeats: int
    loop_guard: bool
    guard_limit: int
    failure_weights: tuple[float, float, float, float]
    long_explore: float
    temperature: float = 0.2


ARM_PROFILES: tuple[ArmProfile, ArmProfile] = (
    ArmProfile(
        arm="baseline",
        code=1,
        model="sonnet-4",
        harness="react-v1",
        intercept=0.47,
        system_prompt_tokens=2300,
        p_typo=0.07,
        p_wrong_tool=0.10,
        p_loop=0.05,
        max_loop_repeats=3,
        loop_guard=False,
        guard_limit=0,
        failure_weights=(0.06, 0.30, 0.39, 0.25),
        long_explore=0.10,
    ),
    ArmProfile(
        arm="candidate",
        code=2,
        model="sonnet-4",
        harness="react-v2",
        intercept=1.05,
        system_prompt_tokens=2700,
        p_typo=0.045,
        p_wrong_tool=0.06,
        p_loop=0.05,
        max_loop_repeats=1,
        loop_guard=True,
        guard_limit=4,
        failure_weights=(0.06, 0.30, 0.42, 0.22),
        long_explore=0.10,
    ),
)
"""The two arms, baseline first."""

# --------------------------------------------------------------------------
# Static vocabulary of the simulated code base
# --------------------------------------------------------------------------

_AREAS: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = (
    ("billing", ("invoice", "tax", "discounts", "ledger"),
     ("compute_total", "apply_discount", "post_entry")),
    ("auth", ("tokens", "sessions", "passwords", "oauth"),
     ("refresh_token", "verify_password", "create_session")),
    ("search", ("indexer", "query_parser", "ranking", "highlight"),
     ("build_index", "parse_query", "score_document")),
    ("notifications", ("email", "sms", "templates", "digest"),
     ("render_template", "send_email", "build_digest")),
    ("reports", ("exporter", "aggregates", "csv_writer", "charts"),
     ("export_rows", "aggregate_by_day", "write_csv")),
    ("inventory", ("stock", "warehouse", "reservations", "sku"),
     ("reserve_items", "adjust_stock", "lookup_sku")),
    ("scheduler", ("cron", "jobs", "retry_policy", "calendar"),
     ("next_run", "enqueue_job", "backoff_delay")),
    ("payments", ("refunds", "gateway", "webhooks", "currency"),
     ("issue_refund", "convert_currency", "handle_webhook")),
)


@dataclass(frozen=True)
class _Topic:
    """A kind of bug: how the agent searches for it and how it edits it."""

    name: str
    query: str
    doc_url: str
    original: str
    fixes: tuple[str, str, str]


_TOPICS: tuple[_Topic, ...] = (
    _Topic("rounding", "decimal rounding half up",
           "https://docs.python.org/3/library/decimal.html",
           "return total",
           ("return round(total, 2)",
            'return total.quantize(Decimal("0.01"))',
            'return total.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)')),
    _Topic("timezone", "aware datetime utc conversion",
           "https://docs.python.org/3/library/datetime.html",
           "now = datetime.now()",
           ("now = datetime.utcnow()",
            "now = datetime.now(timezone.utc)",
            "now = datetime.now(tz=timezone.utc).replace(microsecond=0)")),
    _Topic("off_by_one", "range boundary last element",
           "https://docs.python.org/3/library/stdtypes.html",
           "for i in range(1, len(items)):",
           ("for i in range(len(items) - 1):",
            "for i in range(len(items)):",
            "for i, item in enumerate(items):")),
    _Topic("none_handling", "optional field default none",
           "https://docs.python.org/3/library/typing.html",
           "if value:",
           ("if value is not None:",
            'if value is not None and value != "":',
            'if value not in (None, ""):')),
    _Topic("pagination", "cursor pagination offset limit",
           "https://docs.python.org/3/library/itertools.html",
           "offset = page * size",
           ("offset = (page - 1) * size",
            "offset = max(page - 1, 0) * size",
            "offset = max(page - 1, 0) * min(size, MAX_PAGE_SIZE)")),
    _Topic("unicode", "utf-8 encode normalize",
           "https://docs.python.org/3/library/unicodedata.html",
           "data = name.encode()",
           ('data = name.encode("utf-8")',
            'data = unicodedata.normalize("NFC", name).encode("utf-8")',
            'data = unicodedata.normalize("NFKC", name).encode("utf-8")')),
    _Topic("retry_backoff", "exponential backoff jitter",
           "https://docs.python.org/3/library/random.html",
           "delay = base * attempt",
           ("delay = base * 2 ** attempt",
            "delay = min(cap, base * 2 ** attempt)",
            "delay = random.uniform(0, min(cap, base * 2 ** attempt))")),
    _Topic("caching", "lru_cache invalidation",
           "https://docs.python.org/3/library/functools.html",
           "@lru_cache",
           ("@lru_cache(maxsize=1024)", "@lru_cache(maxsize=None)", "@cache")),
)

_DEPENDENCIES: tuple[tuple[str, str], ...] = (
    ("requests", "2.32.3"),
    ("python-dateutil", "2.9.0"),
    ("tenacity", "9.0.0"),
    ("babel", "2.16.0"),
    ("httpx", "0.27.2"),
    ("pydantic", "2.9.2"),
)
_STRAY_FILES: tuple[str, ...] = ("scratch.py", "notes.md", "debug_output.txt", "tmp_repro.py")
_REQUIREMENTS = "requirements.txt"
_REQUIREMENTS_LAST_LINE = "pyyaml==6.0.2"
_P_DEPENDENCY = 0.3
_P_HTTP_503 = 0.12
_P_TEST_TIMEOUT = 0.02
_P_STRAY_FILE = 0.06
_P_DELETE = 0.03
_P_ZERO_STEPS_GIVE_UP = 0.4
_LOOP_GUARD_ERROR = "LoopGuard: identical call repeated; try a different approach"
_LOOP_SCALE_EXPLORE = 2.5
_LOOP_SCALE_SPIRAL = 6.0


# --------------------------------------------------------------------------
# Small pure helpers
# --------------------------------------------------------------------------


def _task_rng(seed: int, task_index: int) -> np.random.Generator:
    """Random stream of a task's attributes (independent of the arms)."""
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(task_index, 0)))


def _run_rng(seed: int, task_index: int, arm_code: int, run_seed: int) -> np.random.Generator:
    """Random stream of one run, keyed by (task, arm, run seed)."""
    key = (task_index, arm_code, run_seed)
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=key))


def _sigmoid(x: float) -> float:
    """Logistic function."""
    return 1.0 / (1.0 + math.exp(-x))


def _iso(ms: int) -> str:
    """ISO-8601 UTC timestamp, ``ms`` milliseconds after :data:`BASE_TIME`."""
    moment = _BASE_DATETIME + timedelta(milliseconds=ms)
    return moment.isoformat(timespec="milliseconds") + "Z"


def _typo(path: str, u1: float, u2: float) -> str:
    """Misspell the file stem of ``path`` (swap or drop a character).

    ``u1`` picks the position, ``u2`` the kind of typo.  The result always
    differs from ``path``.
    """
    head, _, base = path.rpartition("/")
    stem, dot, ext = base.partition(".")
    if len(stem) < 3:
        stem = stem + stem[-1:]
    else:
        i = 1 + int(u1 * (len(stem) - 2))
        if u2 < 0.5 and stem[i] != stem[i - 1]:
            stem = stem[: i - 1] + stem[i] + stem[i - 1] + stem[i + 1:]
        else:
            stem = stem[:i] + stem[i + 1:]
    return (head + "/" if head else "") + stem + dot + ext


def _edit_strings(topic: _Topic, attempt: int) -> tuple[str, str]:
    """``(old_str, new_str)`` of the ``attempt``-th edit (0-based) of a topic."""
    old = topic.original if attempt == 0 else topic.fixes[(attempt - 1) % 3]
    return old, topic.fixes[attempt % 3]


def _repeats_last(steps: Sequence[dict[str, Any]], tool: str, args: dict[str, Any]) -> bool:
    """Whether ``tool(args)`` repeats the previous step, which succeeded."""
    if not steps:
        return False
    last = steps[-1]
    return last["tool"] == tool and last["args"] == args and last["observation"]["status"] == "ok"


def _count_errors_followed(steps: Sequence[dict[str, Any]]) -> int:
    """Number of error steps that are followed by another step (retries)."""
    return sum(
        1 for step in steps[:-1] if step["observation"]["status"] == "error"
    )


# --------------------------------------------------------------------------
# Random draws and task specification
# --------------------------------------------------------------------------


class _Draws:
    """Fast scalar draws from a numpy Generator, buffered in blocks.

    Scalar calls into numpy cost ~0.4 us each; drawing blocks of 128 values
    and popping them from a Python list is several times faster.
    """

    __slots__ = ("_rng", "_u", "_z")

    def __init__(self, rng: np.random.Generator) -> None:
        self._rng = rng
        self._u: list[float] = []
        self._z: list[float] = []

    def u(self) -> float:
        """Uniform on [0, 1)."""
        if not self._u:
            self._u = self._rng.random(128).tolist()
        return self._u.pop()

    def z(self) -> float:
        """Standard normal."""
        if not self._z:
            self._z = self._rng.standard_normal(64).tolist()
        return self._z.pop()

    def chance(self, p: float) -> bool:
        """Bernoulli(p)."""
        return self.u() < p

    def integer(self, low: int, high: int) -> int:
        """Uniform integer in ``[low, high]`` (both inclusive)."""
        return low + int(self.u() * (high - low + 1))

    def pick(self, options: Sequence[Any]) -> Any:
        """Uniform choice from a non-empty sequence."""
        return options[int(self.u() * len(options))]

    def lognormal(self, median: float, sigma: float) -> float:
        """Log-normal with the given median and log-scale sigma."""
        return median * math.exp(sigma * self.z())

    def weighted(self, weights: Sequence[float]) -> int:
        """Index drawn with probability proportional to ``weights``."""
        x = self.u() * sum(weights)
        for i, w in enumerate(weights):
            x -= w
            if x < 0:
                return i
        return len(weights) - 1


@dataclass(frozen=True)
class _Task:
    """Attributes of one task, shared by all its runs in both arms."""

    index: int
    task_id: str
    difficulty: float
    area: str
    module: str
    modules: tuple[str, ...]
    symbol: str
    topic: _Topic
    n_tests: int
    dependency: tuple[str, str] | None
    prompt_tokens: int
    sizes: dict[str, int] = field(hash=False, compare=False)

    @property
    def target(self) -> str:
        """File that must be fixed."""
        return f"src/{self.area}/{self.module}.py"

    @property
    def test_file(self) -> str:
        """Visible test file."""
        return f"tests/test_{self.module}.py"

    @property
    def neighbours(self) -> tuple[str, ...]:
        """Sibling source files the agent may read while looking around."""
        others = [f"src/{self.area}/{m}.py" for m in self.modules if m != self.module]
        return (*others, f"src/{self.area}/models.py", f"src/{self.area}/__init__.py")

    @property
    def queries(self) -> tuple[str, ...]:
        """Documentation queries the agent may issue."""
        t = self.topic
        return (
            f"{self.module} {t.query}",
            f"{self.symbol} {t.name.replace('_', ' ')}",
            f"{self.area} {t.query}",
            t.query,
        )


def _make_task(seed: int, index: int) -> _Task:
    """Draw the attributes of task ``index``."""
    d = _Draws(_task_rng(seed, index))
    area, modules, symbols = d.pick(_AREAS)
    module = d.pick(modules)
    topic = d.pick(_TOPICS)
    difficulty = TASK_DIFFICULTY_SD * d.z()
    dependency = d.pick(_DEPENDENCIES) if d.chance(_P_DEPENDENCY) else None
    sizes = {f"src/{area}/{m}.py": int(d.lognormal(4200, 0.5)) for m in modules}
    sizes[f"src/{area}/{module}.py"] = int(d.lognormal(5200, 0.5))
    sizes[f"src/{area}/models.py"] = int(d.lognormal(3000, 0.5))
    sizes[f"src/{area}/__init__.py"] = d.integer(60, 400)
    sizes[f"tests/test_{module}.py"] = int(d.lognormal(3800, 0.5))
    sizes[_REQUIREMENTS] = d.integer(300, 700)
    return _Task(
        index=index,
        task_id=f"t{index:03d}",
        difficulty=difficulty,
        area=area,
        module=module,
        modules=modules,
        symbol=d.pick(symbols),
        topic=topic,
        n_tests=d.integer(8, 60),
        dependency=dependency,
        prompt_tokens=d.integer(150, 600),
        sizes=sizes,
    )


# --------------------------------------------------------------------------
# The agent simulator
# --------------------------------------------------------------------------


class _Stop(Exception):
    """Raised by the harness to end a run (step cap, loop guard)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class _Agent:
    """Mutable state of one run: emits steps and tracks their side effects."""

    def __init__(self, task: _Task, profile: ArmProfile, draws: _Draws, start_ms: int) -> None:
        self.task = task
        self.profile = profile
        self.d = draws
        self.steps: list[dict[str, Any]] = []
        self.context = profile.system_prompt_tokens + task.prompt_tokens
        self.clock = start_ms
        self.first_start_ms = start_ms
        self.sizes = dict(task.sizes)
        self.created: dict[str, None] = {}
        self.modified: dict[str, None] = {}
        self.deleted: dict[str, None] = {}
        self.changed: set[str] = set()
        self.external: list[str] = []
        self.backtracks = 0
        self.guard_fires = 0
        self.edits = 0
        self.tests_passing = False

    # ---- low level -------------------------------------------------------

    def emit(self, tool: str, args: dict[str, Any], obs: dict[str, Any],
             obs_tokens: int, tool_s: float, out_median: float = 140.0) -> bool:
        """Append one step and return whether the tool call was executed.

        Raises :class:`_Stop` at the step cap.  Under a loop guard, a call
        identical to the previous successful one is not executed: the step
        gets the guard's error instead, and the run is stopped once the guard
        has fired ``guard_limit`` times.
        """
        if len(self.steps) >= MAX_STEPS:
            raise _Stop("step_cap")
        blocked = self.profile.loop_guard and _repeats_last(self.steps, tool, args)
        if blocked:
            obs, obs_tokens, tool_s = {"status": "error", "error": _LOOP_GUARD_ERROR}, 45, 0.001
        d = self.d
        tokens_in = self.context
        tokens_out = max(1, int(d.lognormal(out_median, 0.45)))
        think_s = (0.5 + tokens_out / 75.0 + tokens_in / 25000.0) * d.lognormal(1.0, 0.25)
        start = self.clock + int(d.u() * 250)
        end = start + int((think_s + tool_s) * 1000)
        if not self.steps:
            self.first_start_ms = start
        self.steps.append({
            "index": len(self.steps),
            "tool": tool,
            "args": args,
            "observation": obs,
            "tokens_in": tokens_in,
            "tokens_out": tokens_out,
            "started_at": _iso(start),
            "ended_at": _iso(end),
        })
        self.clock = end
        self.context += tokens_out + obs_tokens
        if blocked:
            self.guard_fires += 1
            if self.guard_fires >= self.profile.guard_limit:
                raise _Stop("loop_guard")
            return False
        if tool == "http_get":
            self.external.append(args["url"])
        return True

    def act(self, tool: str, args: dict[str, Any], obs: dict[str, Any], obs_tokens: int,
            tool_s: float, loop_scale: float = 1.0) -> None:
        """Emit a successful call, possibly repeated identically (a loop)."""
        if not self.emit(tool, args, obs, obs_tokens, tool_s):
            return
        p = self.profile
        if self.d.chance(p.p_loop * loop_scale):
            for _ in range(self.d.integer(1, p.max_loop_repeats)):
                if not self.emit(tool, dict(args), dict(obs), obs_tokens, tool_s):
                    return

    def error(self, tool: str, args: dict[str, Any], message: str, tool_s: float = 0.01) -> None:
        """Emit a failed call."""
        self.emit(tool, args, {"status": "error", "error": message},
                  40 + len(message) // 4, tool_s)

    # ---- tools -----------------------------------------------------------

    def read(self, path: str, loop_scale: float = 1.0) -> None:
        """``read_file``, possibly preceded by a typo'd path."""
        d = self.d
        if d.chance(self.profile.p_typo):
            bad = _typo(path, d.u(), d.u())
            self.error("read_file", {"path": bad}, f"FileNotFoundError: {bad}")
        size = self.sizes.get(path, 2000)
        obs = {"status": "ok", "bytes": size, "lines": size // 34 + 1}
        self.act("read_file", {"path": path}, obs, size // 4, 0.01 + 0.05 * d.u(), loop_scale)

    def list_dir(self, path: str, loop_scale: float = 1.0) -> None:
        """``list_dir`` of a source or test directory."""
        t = self.task
        if path == "tests":
            entries = ["conftest.py", *(f"test_{m}.py" for m in t.modules)]
        else:
            entries = ["__init__.py", "models.py", *(f"{m}.py" for m in t.modules)]
        obs = {"status": "ok", "entries": entries}
        self.act("list_dir", {"path": path}, obs, 20 + 6 * len(entries),
                 0.01 + 0.02 * self.d.u(), loop_scale)

    def search_docs(self, query: str, loop_scale: float = 1.0) -> None:
        """``search_docs`` with a few hits."""
        d = self.d
        n = d.integer(3, 8)
        t = self.task
        obs = {"status": "ok", "n_results": n, "top": f"docs/{t.area}/{t.module}.md"}
        self.act("search_docs", {"q": query}, obs, 250 + 90 * n, 0.3 + 1.2 * d.u(), loop_scale)

    def grep(self, loop_scale: float = 1.0) -> None:
        """``grep`` for the task's function in its package."""
        d = self.d
        t = self.task
        n = d.integer(1, 6)
        args = {"pattern": f"def {t.symbol}", "path": f"src/{t.area}"}
        obs = {"status": "ok", "matches": n}
        self.act("grep", args, obs, 30 + 28 * n, 0.05 + 0.35 * d.u(), loop_scale)

    def http_get(self, url: str, loop_scale: float = 1.0) -> None:
        """``http_get``, retried after a transient 503."""
        d = self.d
        while d.chance(_P_HTTP_503):
            self.error("http_get", {"url": url}, "HTTP 503 Service Unavailable",
                       d.lognormal(0.4, 0.5))
        n_bytes = int(d.lognormal(9000, 0.7))
        obs = {"status": "ok", "http_status": 200, "bytes": n_bytes}
        self.act("http_get", {"url": url}, obs, min(n_bytes // 4, 2000),
                 d.lognormal(0.35, 0.5), loop_scale)

    def _record_change(self, path: str) -> None:
        """Count a backtrack when ``path`` was already changed in this run."""
        if path in self.changed:
            self.backtracks += 1
        self.changed.add(path)

    def edit(self, path: str, old: str, new: str) -> None:
        """Successful ``edit_file`` replacing ``old`` by ``new``."""
        args = {"path": path, "old_str": old, "new_str": new}
        obs = {"status": "ok", "lines_changed": 1 + new.count("\n")}
        if not self.emit("edit_file", args, obs, 40, 0.02 + 0.04 * self.d.u(), out_median=330.0):
            return
        self._record_change(path)
        if path not in self.created:
            self.modified[path] = None
        self.sizes[path] = self.sizes.get(path, 2000) + len(new) - len(old)

    def edit_fix(self) -> None:
        """Next attempt at fixing the target; sometimes a stale ``old_str`` first."""
        t = self.task
        old, new = _edit_strings(t.topic, self.edits)
        if self.d.chance(self.profile.p_typo):
            stale = _edit_strings(t.topic, self.edits + 1)[0]
            self.error("edit_file", {"path": t.target, "old_str": stale, "new_str": new},
                       f"ValueError: old_str not found in {t.target}")
            self.read(t.target)
        self.edit(t.target, old, new)
        self.edits += 1

    def write(self, path: str, content: str) -> None:
        """``write_file`` creating a new file."""
        args = {"path": path, "content": content}
        obs = {"status": "ok", "bytes": len(content)}
        if not self.emit("write_file", args, obs, 30, 0.02, out_median=330.0):
            return
        self._record_change(path)
        self.created[path] = None
        self.sizes[path] = len(content)

    def delete(self, path: str) -> None:
        """``delete_file`` of an existing file."""
        if not self.emit("delete_file", {"path": path}, {"status": "ok"}, 20, 0.01):
            return
        self.deleted[path] = None
        self.created.pop(path, None)
        self.modified.pop(path, None)

    def run_tests(self, failed: int, subset: bool = False) -> None:
        """``run_tests`` on the visible tests; ``failed`` failures reported."""
        d = self.d
        t = self.task
        if d.chance(self.profile.p_typo):
            bad = _typo(t.test_file, d.u(), d.u())
            self.error("run_tests", {"cmd": f"pytest -q {bad}"},
                       f"ERROR: file or directory not found: {bad}", 0.8)
        cmd = f"pytest -q {t.test_file}" + (f" -k {t.symbol}" if subset else "")
        while d.chance(_P_TEST_TIMEOUT):
            self.error("run_tests", {"cmd": cmd}, "TimeoutError: command exceeded 120 s", 120.0)
        n = d.integer(1, 4) if subset else t.n_tests
        failed = min(failed, n)
        duration = round(d.lognormal(1.2 + 0.1 * n, 0.3), 2)
        obs = {"status": "ok", "passed": n - failed, "failed": failed, "duration_s": duration}
        executed = self.emit("run_tests", {"cmd": cmd}, obs, 80 + 220 * failed + n, duration + 0.3)
        if executed and not subset:
            self.tests_passing = failed == 0

    # ---- composite behaviours -------------------------------------------

    def look_around(self, n: int, loop_scale: float = 1.0, p_docs_url: float = 0.0) -> None:
        """``n`` orientation calls (list, search, grep, read a sibling, docs)."""
        d = self.d
        t = self.task
        for _ in range(n):
            if d.chance(self.profile.p_wrong_tool):
                self.wrong_tool()
                continue
            x = d.u()
            if x < p_docs_url:
                self.http_get(t.topic.doc_url, loop_scale)
            elif x < 0.25:
                self.list_dir(d.pick((f"src/{t.area}", f"src/{t.area}", "tests")), loop_scale)
            elif x < 0.50:
                self.search_docs(d.pick(t.queries), loop_scale)
            elif x < 0.75:
                self.grep(loop_scale)
            else:
                self.read(d.pick(t.neighbours), loop_scale)

    def wrong_tool(self) -> None:
        """A call with the wrong tool followed by the right one."""
        t = self.task
        if self.d.chance(0.5):
            folder = f"src/{t.area}"
            self.error("read_file", {"path": folder},
                       f"IsADirectoryError: [Errno 21] Is a directory: '{folder}'")
            self.list_dir(folder)
        else:
            obs = {"status": "ok", "n_results": 0}
            self.emit("search_docs", {"q": f"def {t.symbol}"}, obs, 30, 0.4)
            self.grep()

    def add_dependency(self) -> None:
        """Look the package up on PyPI and add it to ``requirements.txt``."""
        pkg, version = self.task.dependency or _DEPENDENCIES[0]
        self.http_get(f"https://pypi.org/simple/{pkg}/")
        self.edit(_REQUIREMENTS, _REQUIREMENTS_LAST_LINE,
                  f"{_REQUIREMENTS_LAST_LINE}\n{pkg}=={version}")

    def write_regression_test(self) -> None:
        """Create a new regression test file."""
        t = self.task
        content = (f"from {t.area}.{t.module} import {t.symbol}\n\n\n"
                   f"def test_{t.symbol}_{t.topic.name}():\n    assert {t.symbol} is not None\n")
        self.write(f"tests/test_{t.module}_regression.py", content)

    def fix_cycle(self, bad_rounds: int, final_failed: int) -> None:
        """Edit, then ``bad_rounds`` x (failing tests, re-edit), then final tests."""
        d = self.d
        self.edit_fix()
        if d.chance(0.25):
            self.write_regression_test()
        for _ in range(bad_rounds):
            self.run_tests(d.integer(1, 3), subset=d.chance(0.2))
            if d.chance(0.5):
                self.read(self.task.target)
            self.edit_fix()
        self.run_tests(final_failed)

    def sloppiness(self) -> None:
        """Occasional stray file or unrelated deletion."""
        d = self.d
        t = self.task
        if d.chance(_P_STRAY_FILE):
            self.write(d.pick(_STRAY_FILES), f"# scratch notes for {t.task_id}\n")
        if d.chance(_P_DELETE):
            self.delete(d.pick((f"tests/test_{t.module}_legacy.py", f"src/{t.area}/_compat.py")))


# --------------------------------------------------------------------------
# Trajectory modes
# --------------------------------------------------------------------------


def _bad_rounds(d: _Draws) -> int:
    """Number of failing test rounds before the final one (0, 1 or 2)."""
    return d.weighted((0.55, 0.33, 0.12))


def _mode_solve(a: _Agent) -> str:
    """Ordinary successful trajectory (possibly long, with slips)."""
    d = a.d
    t = a.task
    a.look_around(d.integer(1, 3))
    a.read(t.target)
    if d.chance(0.6):
        a.read(t.test_file)
    if t.dependency is not None and d.chance(0.85):
        a.add_dependency()
    if d.chance(a.profile.long_explore):
        a.look_around(d.integer(10, 18), _LOOP_SCALE_EXPLORE, p_docs_url=0.1)
    a.fix_cycle(_bad_rounds(d), 0)
    a.sloppiness()
    return "agent_done"


def _mode_wrong_fix(a: _Agent) -> str:
    """Ordinary-looking trajectory whose final fix is wrong."""
    d = a.d
    t = a.task
    a.look_around(d.integer(1, 3))
    a.read(t.target)
    if d.chance(0.5):
        a.read(t.test_file)
    if t.dependency is not None and d.chance(0.5):
        a.add_dependency()
    if d.chance(0.15):
        a.look_around(d.integer(6, 12), _LOOP_SCALE_EXPLORE, p_docs_url=0.1)
    overfit = d.chance(0.4)
    a.fix_cycle(_bad_rounds(d), 0 if overfit else d.integer(1, 4))
    a.sloppiness()
    return "agent_done"


def _mode_premature(a: _Agent) -> str:
    """Edits and declares done without running the tests."""
    d = a.d
    t = a.task
    a.look_around(d.integer(0, 2))
    if d.chance(0.8):
        a.read(t.target)
    if d.chance(0.85):
        a.edit_fix()
        if d.chance(0.2):
            a.write_regression_test()
    a.sloppiness()
    return "agent_done"


def _mode_give_up(a: _Agent) -> str:
    """Gives up immediately or after a short look around."""
    d = a.d
    if not d.chance(_P_ZERO_STEPS_GIVE_UP):
        a.look_around(d.integer(1, 3))
    return "agent_gave_up"


def _mode_spiral(a: _Agent) -> str:
    """Never converges: searches, loops and thrashes until stopped."""
    d = a.d
    t = a.task
    a.look_around(d.integer(1, 3))
    a.read(t.target)
    while True:  # ended by _Stop (step cap or loop guard)
        x = d.u()
        if x < 0.70:
            a.look_around(1, _LOOP_SCALE_SPIRAL, p_docs_url=0.08)
        elif x < 0.80:
            a.read(d.pick((t.target, t.test_file)), _LOOP_SCALE_SPIRAL)
        else:
            a.edit_fix()
            a.run_tests(d.integer(1, 5), subset=d.chance(0.3))


_FAILURE_MODES = (_mode_give_up, _mode_premature, _mode_wrong_fix, _mode_spiral)


# --------------------------------------------------------------------------
# Records
# --------------------------------------------------------------------------


def _simulate_run(seed: int, task: _Task, profile: ArmProfile, run_seed: int) -> dict[str, Any]:
    """Simulate one run and return its trace record."""
    d = _Draws(_run_rng(seed, task.index, profile.code, run_seed))
    solved = d.chance(_sigmoid(profile.intercept - task.difficulty))
    mode = _mode_solve if solved else _FAILURE_MODES[d.weighted(profile.failure_weights)]
    start_ms = 240_000 * task.index + 17_000 * run_seed + int(d.u() * 5000)
    agent = _Agent(task, profile, d, start_ms)
    try:
        stop_reason = mode(agent)
    except _Stop as stop:
        stop_reason = stop.reason
    return _assemble(agent, run_seed, solved and stop_reason == "agent_done", stop_reason)


def _assemble(a: _Agent, run_seed: int, outcome: bool, stop_reason: str) -> dict[str, Any]:
    """Build the trace record of a finished run."""
    steps = a.steps
    p = a.profile
    tokens_in = sum(s["tokens_in"] for s in steps)
    tokens_out = sum(s["tokens_out"] for s in steps)
    price_in, price_out = PRICES_USD_PER_MTOK[p.model]
    latency_ms = a.clock - a.first_start_ms if steps else 0
    return {
        "run_id": f"{p.arm}-{a.task.task_id}-s{run_seed}",
        "task_id": a.task.task_id,
        "seed": run_seed,
        "arm": p.arm,
        "steps": steps,
        "terminal_state": {
            "files_created": list(a.created),
            "files_modified": list(a.modified),
            "files_deleted": list(a.deleted),
            "external_calls": list(a.external),
            "tests_passing": a.tests_passing,
        },
        "retries": _count_errors_followed(steps),
        "backtracks": a.backtracks,
        "outcome": outcome,
        "cost_usd": round((tokens_in * price_in + tokens_out * price_out) / 1e6, 6),
        "latency_s": latency_ms / 1000.0,
        "metadata": {
            "model": p.model,
            "harness": p.harness,
            "temperature": p.temperature,
            "stop_reason": stop_reason,
        },
    }


def _check_args(seed: int, n_tasks: int, n_seeds: int) -> None:
    """Validate the public arguments (non-negative integers)."""
    for name, value in (("seed", seed), ("n_tasks", n_tasks), ("n_seeds", n_seeds)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise TypeError(f"{name} must be an int, got {type(value).__name__}")
        if value < 0:
            raise ValueError(f"{name} must be >= 0, got {value}")


def _generate(seed: int, n_tasks: int, n_seeds: int) -> Iterator[dict[str, Any]]:
    """Yield the records arm by arm, task by task, seed by seed."""
    for profile in ARM_PROFILES:
        for index in range(n_tasks):
            task = _make_task(seed, index)
            for run_seed in range(n_seeds):
                yield _simulate_run(seed, task, profile, run_seed)


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
    _check_args(seed, n_tasks, n_seeds)
    return _generate(int(seed), int(n_tasks), int(n_seeds))


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
    from agentab.traces._load import load_traces

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
    _check_args(seed, n_tasks, n_seeds)
    directory = pathlib.Path(out_dir)
    directory.mkdir(parents=True, exist_ok=True)
    paths = {p.arm: directory / f"{p.arm}.jsonl" for p in ARM_PROFILES}
    with contextlib.ExitStack() as stack:
        handles = {arm: stack.enter_context(path.open("w", encoding="utf-8"))
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

    _check_args(seed, n_tasks, 1)
    specs = {}
    for index in range(n_tasks):
        task = _make_task(seed, index)
        reference = [Call("read_file", {"path": task.target}), Call("edit_file", {"path": task.target}),
                     Call("run_tests")]
        modified = [task.target]
        if task.dependency is not None:
            reference.insert(1, Call("http_get", {"url": f"https://pypi.org/simple/{task.dependency[0]}/"}))
            reference.insert(2, Call("edit_file", {"path": _REQUIREMENTS}))
            modified.append(_REQUIREMENTS)
        specs[task.task_id] = TrajectorySpec(
            reference=tuple(reference), match="superset", step_budget=15, step_cap=MAX_STEPS, max_repeats=3,
            forbidden=(), expected_state={"files_modified": modified, "files_deleted": []},
        )
    return specs
