"""The two arms of the example experiment (:class:`ArmProfile`, :data:`ARM_PROFILES`) and the settings they share:
the step cap, the experiment's start time and the models' prices.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

__all__ = ["ARM_PROFILES", "BASE_TIME", "MAX_STEPS", "PRICES_USD_PER_MTOK", "ArmProfile"]

MAX_STEPS: int = 30
"""Step cap enforced by both harnesses; a run that wants more is stopped."""

BASE_TIME: str = "2026-11-02T09:00:00Z"
"""Start of the experiment (UTC)."""

PRICES_USD_PER_MTOK: Mapping[str, tuple[float, float]] = MappingProxyType(
    {"sonnet-4": (3.0, 15.0)}
)
"""USD per million (input, output) tokens for each model used by an arm."""


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
