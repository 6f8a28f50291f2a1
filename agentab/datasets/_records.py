"""Record generation of the example experiment: one simulated run as its trace record, and the stream of them.

:func:`simulate_run` draws a run's latent success and trajectory mode, lets the :class:`~agentab.datasets._agent.Agent`
play it and assembles the record (steps, terminal state, retries, backtracks, outcome, cost, latency,
metadata); :func:`generate` yields the experiment's records arm by arm, task by task, seed by seed.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from agentab.datasets._agent import FAILURE_MODES, Agent, Stop, mode_solve
from agentab.datasets._arms import ARM_PROFILES, PRICES_USD_PER_MTOK, ArmProfile
from agentab.datasets._streams import Draws, run_rng
from agentab.datasets._tasks import Task, make_task

__all__ = ["check_args", "generate", "simulate_run"]


def _sigmoid(x: float) -> float:
    """Logistic function."""
    return 1.0 / (1.0 + math.exp(-x))


def _count_errors_followed(steps: Sequence[dict[str, Any]]) -> int:
    """Number of error steps that are followed by another step (retries)."""
    return sum(
        1 for step in steps[:-1] if step["observation"]["status"] == "error"
    )


def simulate_run(seed: int, task: Task, profile: ArmProfile, run_seed: int) -> dict[str, Any]:
    """Simulate one run and return its trace record."""
    d = Draws(run_rng(seed, task.index, profile.code, run_seed))
    solved = d.chance(_sigmoid(profile.intercept - task.difficulty))
    mode = mode_solve if solved else FAILURE_MODES[d.weighted(profile.failure_weights)]
    start_ms = 240_000 * task.index + 17_000 * run_seed + int(d.u() * 5000)
    agent = Agent(task, profile, d, start_ms)
    try:
        stop_reason = mode(agent)
    except Stop as stop:
        stop_reason = stop.reason
    return _assemble(agent, run_seed, solved and stop_reason == "agent_done", stop_reason)


def _assemble(a: Agent, run_seed: int, outcome: bool, stop_reason: str) -> dict[str, Any]:
    """Build the trace record of a finished run."""
    steps = a.steps
    p = a.profile
    tokens_in = sum(s["tokens_in"] for s in steps)
    tokens_out = sum(s["tokens_out"] for s in steps)
    price_in, price_out = PRICES_USD_PER_MTOK[p.model]
    latency_ms = a.clock - a.first_start_ms if steps else 0
    metadata: dict[str, Any] = {"model": p.model, "harness": p.harness, "temperature": p.temperature,
                                "stop_reason": stop_reason}
    if not steps:  # the simulated agent made no model call: its tokens are recorded as 0, not unknown
        metadata["tokens_in"], metadata["tokens_out"] = 0, 0
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
        "metadata": metadata,
    }


def check_args(seed: int, n_tasks: int, n_seeds: int) -> None:
    """Validate the public arguments (non-negative integers)."""
    for name, value in (("seed", seed), ("n_tasks", n_tasks), ("n_seeds", n_seeds)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise TypeError(f"{name} must be an int, got {type(value).__name__}")
        if value < 0:
            raise ValueError(f"{name} must be >= 0, got {value}")


def generate(seed: int, n_tasks: int, n_seeds: int) -> Iterator[dict[str, Any]]:
    """Yield the records arm by arm, task by task, seed by seed."""
    for profile in ARM_PROFILES:
        for index in range(n_tasks):
            task = make_task(seed, index)
            for run_seed in range(n_seeds):
                yield simulate_run(seed, task, profile, run_seed)
