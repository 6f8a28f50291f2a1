"""Recorded tools: :class:`Recorder` turns every tool call into one step of agentab's trace record.

What a step holds
-----------------
``tool`` (the name it was registered under), ``args`` (the call's arguments by name: positional arguments
are bound to their parameter names through the tool's signature, defaults the agent did not pass are *not*
filled in, ``**kwargs`` are merged in; a tool whose signature cannot be read takes keyword arguments only),
``observation`` (``{"status": "ok", "result": <the return value>}`` or ``{"status": "error", "error":
"<Type>: <message>"}``; ``None`` when the call was interrupted by the harness's time limit and never
answered), ``started_at``/``ended_at`` (ISO-8601 UTC) and, with a usage capture, the token counts of the
model calls made since the previous step (see below). Values that are not JSON (paths, tuples, numpy
numbers, bytes, other objects) are converted: paths to text, tuples and sets to lists, bytes to text when
they are UTF-8 (else ``"<N bytes>"``), anything else to its ``repr``.

Errors
------
By default (``errors="raise"``) a tool's exception is recorded and then re-raised to the agent, so the
agent sees exactly what it would see without the harness. ``errors="return"`` returns the error
observation (a dict) instead, for loops that feed errors back to the model as text.

Tokens
------
Given a usage capture (``usage=``, anything with a ``.calls`` list as
:func:`agentab.harness.usage.capture_usage` makes), the model calls that ended since the previous step are
counted at the next step (summed; a count that any of them lacks is left out, never 0). A step with no new
model call after an earlier one says ``metadata.tokens_with_step`` = the step that holds them (parallel
tool calls of one response). The run's totals are the sums over every captured call, including those after
the last step. Without a capture, or with one that saw no call, tokens are absent (unknown).

Retries and backtracks are the agent's to report (``rec.retry()``, ``rec.backtrack()``); a run that never
reports them has them absent (unknown). Call ``rec.retry(0)`` to say "counted, none".
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import os
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import PurePath
from types import MappingProxyType
from typing import Any

import msgspec

from agentab.formats.record import Record
from agentab.errors import HarnessError

__all__ = ["Recorder", "StopRun", "jsonable", "timestamp", "TOKEN_KEYS"]

#: The token counts of a model call that a step and a run carry.
TOKEN_KEYS = ("tokens_in", "tokens_out", "tokens_cached", "tokens_reasoning")


class StopRun(BaseException):
    """Raised into the agent when the harness stops the run: ``reason`` is ``"step_cap"`` or ``"time_limit"``.

    A ``BaseException``, so that an agent's ``except Exception`` does not swallow it.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def timestamp(seconds: float) -> str:
    """Epoch seconds as ISO-8601 UTC text with microseconds: ``2026-12-01T22:00:00.000000Z``."""
    whole = math.floor(seconds)
    micros = min(int(round((seconds - whole) * 1e6)), 999_999)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)) + f".{micros:06d}Z"


def jsonable(value: Any, depth: int = 0) -> Any:
    """``value`` as JSON data (see the module docstring for the conversions)."""
    kind = type(value)
    if kind is str or kind is bool or value is None or (kind is float and math.isfinite(value)):
        return value
    if kind is int and abs(value) < 2**63:
        return value
    if kind is dict:
        return {k if type(k) is str else str(k): jsonable(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return value if abs(value) < 2**63 else str(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if depth > 50:
        return repr(value)
    if isinstance(value, Mapping):
        return {str(k): jsonable(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v, depth + 1) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((jsonable(v, depth + 1) for v in value), key=repr)
    if isinstance(value, (PurePath, os.PathLike)):
        return os.fspath(value)
    if isinstance(value, (bytes, bytearray)):
        try:
            return bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            return f"<{len(value)} bytes>"
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return jsonable(dataclasses.asdict(value), depth + 1)
    item = getattr(value, "item", None)  # numpy scalars
    if callable(item) and type(value).__module__ == "numpy":
        return jsonable(item(), depth + 1)
    return repr(value)


def _signature(fn: Callable[..., Any]) -> inspect.Signature | None:
    try:
        return inspect.signature(fn)
    except (TypeError, ValueError):
        return None


def _arguments(name: str, sig: inspect.Signature | None, args: tuple, kwargs: dict) -> dict[str, Any]:
    """The call's arguments by name (see the module docstring)."""
    if not args:
        return dict(kwargs)
    if sig is None:
        raise TypeError(f"tool {name!r}: its signature cannot be read, so call it with keyword arguments only")
    try:
        bound = sig.bind(*args, **kwargs)
    except TypeError:
        return {"*args": list(args), **kwargs}  # a bad call: the tool raises, recorded as an error
    out: dict[str, Any] = {}
    for key, value in bound.arguments.items():
        if sig.parameters[key].kind is inspect.Parameter.VAR_KEYWORD:
            out.update(value)
        else:
            out[key] = value
    return out


def _sum(calls: list[Mapping[str, Any]], key: str) -> int | None:
    values = [c.get(key) for c in calls]
    if not values or any(v is None for v in values):
        return None
    return int(sum(values))


class Recorder:
    """Record an agent's tool calls as the steps of one trace record.

    Parameters
    ----------
    tools : mapping of name -> callable, optional
        Tools to wrap now (more with :meth:`tool`); the wrapped ones are :attr:`tools`.
    errors : {"raise", "return"}
        What a failing tool does after its error is recorded: re-raise (default) or return the error
        observation.
    step_cap : int, optional
        The most tool calls allowed: the next one raises :class:`StopRun` (``"step_cap"``) unrecorded.
    usage : object with a ``calls`` list, optional
        A token-usage capture (:func:`agentab.harness.usage.capture_usage`).
    sink : callable, optional
        Called with each step as it starts (observation ``None``) and when it ends: the harness streams
        steps to a file with it, so a killed run keeps them.

    Examples
    --------
    >>> rec = Recorder()
    >>> @rec.tool
    ... def add(a, b):
    ...     return a + b
    >>> add(1, b=2)
    3
    >>> record = rec.record(run_id="r", task_id="t", seed=0, outcome=True)
    >>> record["steps"][0]["args"], record["steps"][0]["observation"]
    ({'a': 1, 'b': 2}, {'status': 'ok', 'result': 3})
    """

    def __init__(self, tools: Mapping[str, Callable[..., Any]] | None = None, *, errors: str = "raise",
                 step_cap: int | None = None, usage: Any = None, sink: Callable[[dict], None] | None = None) -> None:
        if errors not in ("raise", "return"):
            raise HarnessError(f"`errors` must be 'raise' or 'return', got {errors!r}")
        if step_cap is not None and (isinstance(step_cap, bool) or not isinstance(step_cap, int) or step_cap < 1):
            raise HarnessError(f"`step_cap` must be a positive integer or None, got {step_cap!r}")
        self.errors, self.step_cap, self.usage, self.sink = errors, step_cap, usage, sink
        self.steps: list[dict[str, Any]] = []
        self.retries: int | None = None
        self.backtracks: int | None = None
        self.stop_reason: str | None = None
        self._tools: dict[str, Callable[..., Any]] = {}
        self._lock = threading.Lock()
        self._seen = 0
        self._model_step: int | None = None
        for name, fn in (tools or {}).items():
            self.tool(name, fn)

    @property
    def tools(self) -> Mapping[str, Callable[..., Any]]:
        """The recorded tools, by name (read-only)."""
        return MappingProxyType(self._tools)

    def tool(self, fn_or_name: Any = None, fn: Callable[..., Any] | None = None) -> Any:
        """Register a tool: ``@rec.tool``, ``@rec.tool("name")`` or ``rec.tool("name", fn)``; returns the recorded callable."""
        if callable(fn_or_name) and fn is None:
            return self._wrap(getattr(fn_or_name, "__name__", "tool"), fn_or_name)
        if not isinstance(fn_or_name, str) or not fn_or_name:
            raise TypeError(f"a tool's name must be non-empty text, got {fn_or_name!r}")
        if fn is not None:
            return self._wrap(fn_or_name, fn)
        return lambda f: self._wrap(fn_or_name, f)

    def _wrap(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        if not callable(fn):
            raise TypeError(f"tool {name!r} must be callable, got {type(fn).__name__}")
        if name in self._tools:
            raise HarnessError(f"a tool named {name!r} is already registered")
        sig = _signature(fn)

        def recorded(*args: Any, **kwargs: Any) -> Any:
            return self._call(name, fn, sig, args, kwargs)

        recorded.__name__ = name
        recorded.__doc__ = getattr(fn, "__doc__", None)
        recorded.__wrapped__ = fn  # type: ignore[attr-defined]
        self._tools[name] = recorded
        return recorded

    def _begin(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            if self.step_cap is not None and len(self.steps) >= self.step_cap:
                self.stop_reason = "step_cap"
                raise StopRun("step_cap")
            step: dict[str, Any] = {"index": len(self.steps), "tool": name, "args": jsonable(arguments),
                                    "observation": None, "started_at": timestamp(time.time())}
            self._attribute(step)
            self.steps.append(step)
        self._emit(step)
        return step

    def _attribute(self, step: dict[str, Any]) -> None:
        """The usage of the model calls since the last step, onto ``step`` (module docstring: Tokens)."""
        calls = list(getattr(self.usage, "calls", None) or [])
        new, self._seen = calls[self._seen:], len(calls)
        if new:
            for key in TOKEN_KEYS:
                value = _sum(new, key)
                if value is not None:
                    step[key] = value
            self._model_step = step["index"]
        elif self._model_step is not None:
            step["metadata"] = {"tokens_with_step": self._model_step}

    def _call(self, name: str, fn: Callable[..., Any], sig: inspect.Signature | None, args: tuple, kwargs: dict) -> Any:
        step = self._begin(name, _arguments(name, sig, args, kwargs))
        try:
            result = fn(*args, **kwargs)
        except Exception as err:
            step["observation"] = {"status": "error", "error": f"{type(err).__name__}: {err}"}
            self._end(step)
            if self.errors == "raise":
                raise
            return step["observation"]
        except BaseException:  # StopRun, KeyboardInterrupt: the call was never answered
            self._end(step)
            raise
        step["observation"] = {"status": "ok", "result": jsonable(result)}
        self._end(step)
        return result

    def _end(self, step: dict[str, Any]) -> None:
        step["ended_at"] = timestamp(time.time())
        self._emit(step)

    def _emit(self, step: dict[str, Any]) -> None:
        if self.sink is not None:
            self.sink(step)

    def add_step(self, tool: str, args: Mapping[str, Any] | None = None, observation: Mapping[str, Any] | None = None,
                 **fields: Any) -> dict[str, Any]:
        """Record a step the agent made without a wrapped tool (any other step field by keyword; no times made up)."""
        if not isinstance(tool, str) or not tool:
            raise TypeError(f"a step's tool must be non-empty text, got {tool!r}")
        if args is not None and not isinstance(args, Mapping):
            raise TypeError(f"a step's args must be a mapping, got {type(args).__name__}")
        step = self._begin(tool, dict(args or {}))
        step.pop("started_at")  # times only as given: never made up
        step["observation"] = None if observation is None else jsonable(dict(observation))
        step.update(jsonable(fields))
        self._emit(step)
        return step

    def retry(self, n: int = 1) -> None:
        """The agent retried after an error (``n`` times; ``retry(0)``: counted, none yet)."""
        self.retries = (self.retries or 0) + int(n)

    def backtrack(self, n: int = 1) -> None:
        """The agent undid or redid its own work (``n`` times; ``backtrack(0)``: counted, none yet)."""
        self.backtracks = (self.backtracks or 0) + int(n)

    def totals(self) -> dict[str, int]:
        """The run's token totals over every captured model call (empty without a capture or a call)."""
        calls = list(getattr(self.usage, "calls", None) or [])
        return {key: value for key in TOKEN_KEYS if (value := _sum(calls, key)) is not None}

    def models(self) -> list[str]:
        """The models of the captured calls, in order of first use."""
        calls = list(getattr(self.usage, "calls", None) or [])
        return list(dict.fromkeys(str(c["model"]) for c in calls if c.get("model")))

    def record(self, *, run_id: str, task_id: str, seed: int, outcome: bool | float, arm: str | None = None,
               terminal_state: Mapping[str, Any] | None = None, metadata: Mapping[str, Any] | None = None,
               **fields: Any) -> dict[str, Any]:
        """One trace record of the steps so far (validated against :class:`agentab.formats.record.Record`).

        ``fields`` are further record fields (``latency_s``, ``cost_usd``, ...). Unknown values are left out.
        """
        record: dict[str, Any] = {"run_id": run_id, "task_id": task_id, "seed": seed, "steps": self.steps,
                                  "outcome": outcome}
        meta = dict(metadata or {})
        models = self.models()
        if models and "model" not in meta:
            meta["model"] = models[0]
            if len(models) > 1:
                meta["models"] = models
        optional = {"arm": arm, "terminal_state": terminal_state, "retries": self.retries,
                    "backtracks": self.backtracks, "metadata": meta or None, **self.totals(), **fields}
        record.update({k: v for k, v in optional.items() if v is not None})
        record = jsonable(record)
        try:
            msgspec.convert(record, Record)
        except msgspec.ValidationError as err:
            raise HarnessError(f"run {run_id!r}: the record is not valid: {err}") from None
        return record
