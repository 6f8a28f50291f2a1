"""The harness's worked example: a scripted agent fixing a failing test, with and without a loop guard.

The task (:func:`example_tasks`) is a tiny repository: a module whose tax ``RATE`` is wrong and a test that
fails because of it, randomised per seed (the module's and function's names, the test folder, the prices,
the right and wrong rates), so each task x seed is a new instance. Its ``expected_state`` is the module with
the right rate, so the harness's check decides the outcome.

The agent (:class:`ScriptedAgent`, no model) lists the files, reads the test, runs it, reads the module
and replaces the wrong line. On a *slip* (probability: the task's difficulty) it misremembers the line, so
its edit fails; it then repeats the same edit (a retry each time), sometimes saves a ``.bak`` copy first
(a stray side effect), and recovers only when, by luck (probability :data:`LUCK` per attempt), it re-reads
the module. With the **loop guard** on, it may not repeat a call that just failed: it backs off (a
backtrack), re-reads the module and makes the right edit. Without it, an unlucky run repeats the failing call until the
harness's step cap stops it (non-terminated), and a lucky one is the seed note's "lucky recovery": the
right answer reached by accident, after errors and a loop, with a file left behind, which an
outcome-only grade cannot tell from a clean run.

Examples
--------
>>> import tempfile, agentab
>>> from agentab.harness.example import run_example, example_spec
>>> out = run_example(tempfile.mkdtemp(), n_tasks=2, n_seeds=2, workers=1)
>>> scores = agentab.score(agentab.load_traces(out), example_spec())
>>> sorted(scores["arm"].unique()), len(scores)
(['baseline', 'loop-guard'], 8)
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from typing import Any

from agentab.harness.fixtures import Draw, Instance, Task, instance_rng
from agentab.errors import HarnessError
from agentab.harness.run import run
from agentab.scoring import TrajectorySpec

__all__ = ["LUCK", "STEP_CAP", "TOOLS", "ScriptedAgent", "baseline_agent", "example_spec", "example_tasks",
           "guarded_agent", "run_example"]

#: The harness's step cap in the example (and the spec's).
STEP_CAP = 12
#: Chance per failed attempt that the unguarded agent re-reads the file (and so recovers).
LUCK = 0.25


def list_files() -> list[str]:
    """The repository's files (relative paths, sorted)."""
    return sorted(str(p.relative_to(".")) for p in Path(".").rglob("*") if p.is_file() and ".agentab" not in p.parts)


def read_file(path: str) -> str:
    """The text of ``path``."""
    return Path(path).read_text(encoding="utf-8")


def write_file(path: str, text: str) -> int:
    """Write ``text`` to ``path``; the characters written."""
    return Path(path).write_text(text, encoding="utf-8")


def edit_file(path: str, old: str, new: str) -> str:
    """Replace the one occurrence of ``old`` in ``path`` by ``new`` (a ValueError when ``old`` is not there)."""
    text = read_file(path)
    if old not in text:
        raise HarnessError(f"{old!r} not found in {path}")
    write_file(path, text.replace(old, new, 1))
    return "edited"


def run_tests() -> dict[str, Any]:
    """Run every ``test_*`` function of the repository's ``test_*.py`` files, in this process."""
    passed, failures = 0, []
    sys.path.insert(0, os.getcwd())
    try:
        for test_file in sorted(Path(".").rglob("test_*.py")):
            for name in [m for m in sys.modules if getattr(sys.modules[m], "__file__", "") and
                         str(sys.modules[m].__file__).startswith(os.getcwd())]:
                del sys.modules[name]  # a fresh import of the edited module
            spec = importlib.util.spec_from_file_location(test_file.stem, test_file)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            for name in sorted(n for n in vars(module) if n.startswith("test_")):
                try:
                    getattr(module, name)()
                    passed += 1
                except AssertionError as err:
                    failures.append(f"{test_file}::{name}: {err or 'assertion failed'}")
    finally:
        sys.path.remove(os.getcwd())
    return {"passed": passed, "failed": len(failures), "failures": failures}


#: The example's tools, by name (they work on the current folder: the sandbox).
TOOLS = {"list_files": list_files, "read_file": read_file, "write_file": write_file, "edit_file": edit_file,
         "run_tests": run_tests}


def _randomise(difficulty: float) -> Any:
    def draw(d: Draw) -> dict[str, Any]:
        rate = d.choice([5, 8, 10, 12, 20])
        prices = [d.integer(1, 99) for _ in range(d.integer(2, 4))]
        return {"module": f"calc_{d.word(5)}", "function": d.choice(["total", "with_tax", "gross"]),
                "tests": d.choice(["tests", "test", "checks"]), "prices": prices, "rate": rate,
                "wrong": rate + d.choice([-3, -2, 1, 2, 5]), "difficulty": difficulty,
                "expected": round(sum(prices) * (100 + rate) / 100, 2)}
    return draw


def _module(p: Any, rate: int) -> str:
    return (f'"""Prices with tax."""\n\nRATE = {rate}  # percent\n\n\ndef {p["function"]}(prices):\n'
            f'    """The sum of ``prices`` with RATE percent tax, rounded to cents."""\n'
            f"    return round(sum(prices) * (100 + RATE) / 100, 2)\n")


def _fixture(root: Path, inst: Instance) -> dict[str, str]:
    p = inst.params
    test = (f"from {p['module']} import {p['function']}\n\n\ndef test_{p['function']}():\n"
            f"    assert {p['function']}({list(p['prices'])}) == {p['expected']}\n")
    return {f"{p['module']}.py": _module(p, p["wrong"]), f"{p['tests']}/test_{p['module']}.py": test,
            "README.md": "Make the tests pass.\n"}


def _expected(inst: Instance) -> dict[str, Any]:
    path = f"{inst['module']}.py"
    return {"files_modified": [path], "files": {path: _module(inst.params, inst["rate"])}}


def example_tasks(n_tasks: int = 6) -> list[Task]:
    """``n_tasks`` "fix the failing test" tasks, ``fix-0`` .. (difficulty rising from 0.2 to 0.8)."""
    if isinstance(n_tasks, bool) or not isinstance(n_tasks, int) or n_tasks < 1:
        raise HarnessError(f"`n_tasks` must be a positive integer, got {n_tasks!r}")
    return [Task(f"fix-{i}", fixture=_fixture, expected_state=_expected,
                 randomise=_randomise(round(0.2 + 0.6 * i / max(n_tasks - 1, 1), 3))) for i in range(n_tasks)]


class ScriptedAgent:
    """The example's scripted agent (module docstring); ``loop_guard`` turns the loop guard on."""

    def __init__(self, loop_guard: bool) -> None:
        self.loop_guard = loop_guard

    def __call__(self, env: Any) -> None:
        tools, p = env.tools, env.params
        rng = instance_rng(f"{env.task_id}#agent", env.seed)  # the same draws in both arms: paired noise
        env.retry(0)
        env.backtrack(0)
        files = tools["list_files"]()
        tools["read_file"](path=next(f for f in files if "/test_" in f))
        tools["run_tests"]()
        module = f"{p['module']}.py"
        source = tools["read_file"](path=module)
        right = f"RATE = {p['wrong']}"
        old = f"RATE = {p['wrong'] + 1}" if rng.random() < p["difficulty"] else right
        if old != right and rng.random() < 0.5:
            tools["write_file"](path=module + ".bak", text=source)
        failures = 0
        while True:
            try:
                tools["edit_file"](path=module, old=old, new=f"RATE = {p['rate']}")
                break
            except ValueError:
                failures += 1
                env.retry()
                if self.loop_guard or rng.random() < LUCK:
                    if self.loop_guard:  # the guard refuses to repeat a call that just failed: back off, re-read
                        env.backtrack()
                    tools["read_file"](path=module)
                    old = right
        result = tools["run_tests"]()
        env.report(outcome=result["failed"] == 0)


#: The agent without a loop guard (arm "baseline").
baseline_agent = ScriptedAgent(loop_guard=False)
#: The agent with the loop guard (arm "loop-guard").
guarded_agent = ScriptedAgent(loop_guard=True)


def example_spec() -> TrajectorySpec:
    """The trajectory spec of the example: tests run, 8 steps budget, the harness's cap, no ``.bak`` left."""
    return TrajectorySpec(required=("run_tests",), step_budget=8, step_cap=STEP_CAP, max_repeats=3,
                          forbidden=("*.bak",))


def run_example(folder: str | os.PathLike[str], *, n_tasks: int = 6, n_seeds: int = 5, workers: int = 2,
                progress: bool = False) -> Path:
    """Run both arms over ``n_tasks`` x ``n_seeds`` into ``folder/runs.jsonl`` (resumed if there); its path."""
    out = Path(folder) / "runs.jsonl"
    tasks = example_tasks(n_tasks)
    for arm, agent in (("baseline", baseline_agent), ("loop-guard", guarded_agent)):
        run(agent, tasks, seeds=n_seeds, out=out, workers=workers, step_cap=STEP_CAP, tools=TOOLS, arm=arm,
            metadata={"model": "scripted", "harness": arm}, progress=progress)
    return out
