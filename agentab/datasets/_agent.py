"""The agent simulator of the example experiment: one run's steps, tool by tool, and its trajectory modes.

An :class:`Agent` holds the state of one run (steps, context size, clock, files changed) and emits steps
through the harness (:meth:`Agent.emit`: the step cap and, under ``react-v2``, the loop guard, which raise
:class:`Stop`); its tool methods inject the per-call failure shapes (wrong argument, wrong tool, transient
errors, loops). A trajectory mode (:func:`mode_solve`, or one of :data:`FAILURE_MODES`) strings the tools
into a run. See :mod:`agentab.datasets.example` for the model and its numbers.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from agentab.datasets._arms import BASE_TIME, MAX_STEPS, ArmProfile
from agentab.datasets._streams import Draws
from agentab.datasets._tasks import DEPENDENCIES, REQUIREMENTS, Task, Topic

__all__ = ["FAILURE_MODES", "Agent", "Stop", "mode_solve"]

_BASE_DATETIME = datetime.fromisoformat(BASE_TIME.removesuffix("Z"))
_STRAY_FILES: tuple[str, ...] = ("scratch.py", "notes.md", "debug_output.txt", "tmp_repro.py")
_REQUIREMENTS_LAST_LINE = "pyyaml==6.0.2"
_P_HTTP_503 = 0.12
_P_TEST_TIMEOUT = 0.02
_P_STRAY_FILE = 0.06
_P_DELETE = 0.03
_P_ZERO_STEPS_GIVE_UP = 0.4
_LOOP_GUARD_ERROR = "LoopGuard: identical call repeated; try a different approach"
_LOOP_SCALE_EXPLORE = 2.5
_LOOP_SCALE_SPIRAL = 6.0


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


def _edit_strings(topic: Topic, attempt: int) -> tuple[str, str]:
    """``(old_str, new_str)`` of the ``attempt``-th edit (0-based) of a topic."""
    old = topic.original if attempt == 0 else topic.fixes[(attempt - 1) % 3]
    return old, topic.fixes[attempt % 3]


def _repeats_last(steps: Sequence[dict[str, Any]], tool: str, args: dict[str, Any]) -> bool:
    """Whether ``tool(args)`` repeats the previous step, which succeeded."""
    if not steps:
        return False
    last = steps[-1]
    return last["tool"] == tool and last["args"] == args and last["observation"]["status"] == "ok"


# --------------------------------------------------------------------------
# The agent
# --------------------------------------------------------------------------


class Stop(Exception):
    """Raised by the harness to end a run (step cap, loop guard)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Agent:
    """Mutable state of one run: emits steps and tracks their side effects."""

    def __init__(self, task: Task, profile: ArmProfile, draws: Draws, start_ms: int) -> None:
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

        Raises :class:`Stop` at the step cap.  Under a loop guard, a call
        identical to the previous successful one is not executed: the step
        gets the guard's error instead, and the run is stopped once the guard
        has fired ``guard_limit`` times.
        """
        if len(self.steps) >= MAX_STEPS:
            raise Stop("step_cap")
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
                raise Stop("loop_guard")
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
        pkg, version = self.task.dependency or DEPENDENCIES[0]
        self.http_get(f"https://pypi.org/simple/{pkg}/")
        self.edit(REQUIREMENTS, _REQUIREMENTS_LAST_LINE,
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


def _bad_rounds(d: Draws) -> int:
    """Number of failing test rounds before the final one (0, 1 or 2)."""
    return d.weighted((0.55, 0.33, 0.12))


def mode_solve(a: Agent) -> str:
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


def _mode_wrong_fix(a: Agent) -> str:
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


def _mode_premature(a: Agent) -> str:
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


def _mode_give_up(a: Agent) -> str:
    """Gives up immediately or after a short look around."""
    d = a.d
    if not d.chance(_P_ZERO_STEPS_GIVE_UP):
        a.look_around(d.integer(1, 3))
    return "agent_gave_up"


def _mode_spiral(a: Agent) -> str:
    """Never converges: searches, loops and thrashes until stopped."""
    d = a.d
    t = a.task
    a.look_around(d.integer(1, 3))
    a.read(t.target)
    while True:  # ended by Stop (step cap or loop guard)
        x = d.u()
        if x < 0.70:
            a.look_around(1, _LOOP_SCALE_SPIRAL, p_docs_url=0.08)
        elif x < 0.80:
            a.read(d.pick((t.target, t.test_file)), _LOOP_SCALE_SPIRAL)
        else:
            a.edit_fix()
            a.run_tests(d.integer(1, 5), subset=d.chance(0.3))


FAILURE_MODES = (_mode_give_up, _mode_premature, _mode_wrong_fix, _mode_spiral)
