"""Every argument check shared by more than one function, written once.

Each check takes the value, returns it normalised, and raises ``error`` (a ``ValueError`` or
``TypeError`` subclass chosen by the caller's layer: :class:`~agentab.errors.CompareError`,
:class:`~agentab.errors.PowerError`, plain ``ValueError`` in :mod:`agentab.stats`) with a one-line
message that names the parameter and echoes the value: "`alpha` must be in (0, 1), got 1.5".

Seeds
    Every resampling or simulating function takes ``seed`` (or scipy's ``rng``) as ``None``, a
    non-negative integer, a :class:`numpy.random.SeedSequence` or a :class:`numpy.random.Generator`.
    :func:`seed_sequence` turns it into the one ``SeedSequence`` the computation draws from and
    :func:`recorded_seed` into the integer a result records, so that passing the recorded value back
    reproduces the numbers exactly. ``None`` draws fresh entropy (and records it); a Generator is drawn
    from once (so it advances) for an integer seed.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

from agentab._vocabulary import ALTERNATIVE_ALIASES, ALTERNATIVES, DIRECTIONS, KINDS

__all__ = ["MIN_DECISION_RESAMPLES", "check_alpha", "check_alternative", "check_confidence_level", "check_direction",
           "check_kind", "check_n_resamples", "check_number", "check_paired", "check_probability", "check_whole",
           "jsonable_seed", "recorded_seed", "seed_sequence"]

#: Fewest resamples for a p-value that decides a verdict: with fewer, no p-value can fall below 0.01.
MIN_DECISION_RESAMPLES = 99


def check_number(value: Any, name: str, error: type[Exception] = ValueError) -> float:
    """A finite real number (not a bool).

    Examples
    --------
    >>> check_number(2, "effect")
    2.0
    >>> check_number("big", "effect")
    Traceback (most recent call last):
    ValueError: `effect` must be a number, got 'big'
    """
    try:
        if isinstance(value, bool):
            raise TypeError("a bool is not a number")
        number = float(value)
    except (TypeError, ValueError):
        raise error(f"`{name}` must be a number, got {value!r}") from None
    if not math.isfinite(number):
        raise error(f"`{name}` must be finite, got {value!r}")
    return number


def check_probability(value: Any, name: str, error: type[Exception] = ValueError) -> float:
    """A number strictly between 0 and 1.

    Examples
    --------
    >>> check_probability(0.05, "alpha")
    0.05
    >>> check_probability(1.5, "alpha")
    Traceback (most recent call last):
    ValueError: `alpha` must be in (0, 1), got 1.5
    """
    if isinstance(value, bool):
        raise error(f"`{name}` must be in (0, 1), got {value!r}")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise error(f"`{name}` must be a number in (0, 1), got {value!r}") from None
    if not 0.0 < number < 1.0:
        raise error(f"`{name}` must be in (0, 1), got {value!r}")
    return number


def check_alpha(value: Any, error: type[Exception] = ValueError) -> float:
    """The significance level: in (0, 1)."""
    return check_probability(value, "alpha", error)


def check_confidence_level(value: Any, error: type[Exception] = ValueError) -> float:
    """The confidence level of an interval: in (0, 1)."""
    return check_probability(value, "confidence_level", error)


def check_whole(value: Any, name: str, minimum: int, error: type[Exception] = ValueError) -> int:
    """A whole number (an int, or a float with no fraction; not a bool) of at least ``minimum``.

    Examples
    --------
    >>> check_whole(3.0, "seeds_per_task", 1)
    3
    >>> check_whole(2.5, "seeds_per_task", 1)
    Traceback (most recent call last):
    ValueError: `seeds_per_task` must be a whole number >= 1, got 2.5
    """
    ok = not isinstance(value, bool) and isinstance(value, (numbers.Real, np.integer, np.floating))
    if ok:
        ok = math.isfinite(float(value)) and float(value) == int(value) and int(value) >= minimum
    if not ok:
        raise error(f"`{name}` must be a whole number >= {minimum}, got {value!r}")
    return int(value)


def check_n_resamples(value: Any, error: type[Exception] = ValueError, minimum: int = 1) -> int:
    """Resamples of a test or interval: a whole number of at least ``minimum``.

    ``minimum`` is 1 for the array functions of :mod:`agentab.stats` and :data:`MIN_DECISION_RESAMPLES`
    wherever a p-value decides a verdict.

    Examples
    --------
    >>> check_n_resamples(999)
    999
    >>> check_n_resamples(50, minimum=MIN_DECISION_RESAMPLES)
    Traceback (most recent call last):
    ValueError: `n_resamples` must be an integer >= 99, got 50
    """
    wanted = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
    try:
        return check_whole(value, "n_resamples", minimum, error)
    except error:
        raise error(f"`n_resamples` must be {wanted}, got {value!r}") from None


def check_alternative(value: Any, error: type[Exception] = ValueError) -> str:
    """The alternative hypothesis in scipy's words; statsmodels' ``larger``/``smaller`` are translated.

    Examples
    --------
    >>> check_alternative("larger"), check_alternative("less")
    ('greater', 'less')
    """
    if isinstance(value, str):
        value = ALTERNATIVE_ALIASES.get(value, value)
    if value not in ALTERNATIVES:
        raise error(f"`alternative` must be one of {ALTERNATIVES} (or 'larger'/'smaller'), got {value!r}")
    return value


def check_kind(value: Any, error: type[Exception] = ValueError, allowed: tuple[str, ...] = KINDS) -> str:
    """A metric kind from :data:`agentab._vocabulary.KINDS` (or the subset ``allowed``)."""
    if value not in allowed:
        raise error(f"`kind` must be one of {allowed}, got {value!r}")
    return value


def check_direction(value: Any, error: type[Exception] = ValueError) -> str:
    """Which way is better: ``higher``, ``lower`` or ``neither``."""
    if value not in DIRECTIONS:
        raise error(f"`direction` must be one of {DIRECTIONS}, got {value!r}")
    return value


def check_paired(value: Any, error: type[Exception] = ValueError) -> bool | str:
    """``"auto"``, True or False."""
    if not (value == "auto" or value is True or value is False):
        raise error(f"`paired` must be 'auto', True or False, got {value!r}")
    return value


def seed_sequence(seed: Any, error: type[Exception] = ValueError) -> np.random.SeedSequence:
    """The one ``SeedSequence`` a computation draws from (see the module's notes on seeds).

    Examples
    --------
    >>> seed_sequence(7).entropy
    7
    >>> seed_sequence(-1)
    Traceback (most recent call last):
    ValueError: `seed` must be None, a non-negative integer, a numpy SeedSequence or Generator, got -1
    """
    if isinstance(seed, np.random.SeedSequence):
        return seed
    if isinstance(seed, np.random.Generator):
        return np.random.SeedSequence(int(seed.integers(2**63)))
    if isinstance(seed, bool):
        seed = "bool"  # rejected below: True is not a seed
    try:
        return np.random.SeedSequence(seed)
    except (TypeError, ValueError):
        raise error(f"`seed` must be None, a non-negative integer, a numpy SeedSequence or Generator, got {seed!r}"
                    ) from None


def recorded_seed(sequence: np.random.SeedSequence) -> int | np.random.SeedSequence:
    """What a result records for ``sequence``: ``seed_sequence(recorded_seed(s))`` draws as ``s`` does.

    The integer entropy, or the SeedSequence itself when it was spawned (a spawn key is not one integer).

    Examples
    --------
    >>> s = seed_sequence(None)
    >>> rng_a = np.random.default_rng(s)
    >>> rng_b = np.random.default_rng(seed_sequence(recorded_seed(s)))
    >>> bool(rng_a.random() == rng_b.random())
    True
    """
    return sequence if sequence.spawn_key else int(sequence.entropy)


def jsonable_seed(seed: Any) -> Any:
    """A recorded seed as JSON: the integer (or None), or a spawned SeedSequence's entropy and spawn key.

    Examples
    --------
    >>> jsonable_seed(7), jsonable_seed(np.random.SeedSequence(7, spawn_key=(1,)))
    (7, {'entropy': 7, 'spawn_key': [1]})
    """
    if isinstance(seed, np.random.SeedSequence):
        return {"entropy": seed.entropy, "spawn_key": list(seed.spawn_key)}
    return seed
