"""The scored runs as arrays, for :func:`agentab.score`: the steps, the specs, and the reasons.

- :class:`_Steps` -- the steps sorted by run and index, each call an integer key;
- :class:`_ToolIndex` -- sorted ``(run, tool)`` look-ups;
- :class:`_Specs` -- each distinct spec's fields as arrays, the reference calls flattened;
- :class:`_Reasons` -- reason texts as Arrow arrays with their run and order, joined per run at the end,
  in the order :func:`agentab.score_run` lists them (the check, then a position inside the check).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from agentab.scoring.spec import MATCH_MODES, TrajectorySpec

# Reason order: the check (as in score_run), then a position inside the check.
_REQUIRED, _REFERENCE, _LOOPS, _BUDGET, _CAP, _SIDE, _OUTCOME = range(1, 8)
_CHECK = 1 << 48
_LATER = 1 << 40  # a second group of reasons inside one check


# --------------------------------------------------------------------------- #
# The steps as arrays
# --------------------------------------------------------------------------- #
@dataclass(frozen=True)
class _Steps:
    """The steps of the scored runs, sorted by run and index, as integer arrays."""

    pos: np.ndarray       # position of the step's run in traces.runs
    tool: np.ndarray      # tool code (into ``tools``)
    args: np.ndarray      # argument code (into ``args_text``)
    key: np.ndarray       # call code: equal calls (tool and arguments) have equal codes
    is_ok: np.ndarray
    is_error: np.ndarray
    known: np.ndarray     # status recorded
    start: np.ndarray     # first row of each run
    n: np.ndarray         # steps of each run
    tools: list[str]
    args_text: np.ndarray

    @property
    def within(self) -> np.ndarray:
        """Position of each step inside its run (0 .. n-1)."""
        return np.arange(len(self.pos), dtype=np.int64) - self.start[self.pos]

    @classmethod
    def build(cls, runs: pd.DataFrame, steps: pd.DataFrame) -> _Steps:
        n_runs = len(runs)
        run_ids, step_ids = runs["run_id"], steps["run_id"]
        if isinstance(run_ids.dtype, pd.CategoricalDtype) and run_ids.dtype == step_ids.dtype:
            to_pos = np.full(len(run_ids.cat.categories) + 1, -1, dtype=np.int64)
            to_pos[run_ids.cat.codes.to_numpy()] = np.arange(n_runs)
            pos = to_pos[step_ids.cat.codes.to_numpy().astype(np.int64)]
        else:
            pos = pd.Index(run_ids.astype(str)).get_indexer(step_ids.astype(str)).astype(np.int64)
        index = steps["index"].to_numpy(dtype=np.float64, na_value=np.nan)
        keep = pos >= 0
        step_back = (np.diff(pos) < 0) | ((np.diff(pos) == 0) & (np.diff(index) <= 0))
        if not keep.all() or step_back.any():
            order = np.lexsort((index, pos))
            order = order[keep[order]]
        else:
            order = None

        def take(values: np.ndarray) -> np.ndarray:
            return values if order is None else values[order]

        pos = take(pos)
        tool_col = steps["tool"].astype("category")
        tools = [str(t) for t in tool_col.cat.categories]
        tool = take(tool_col.cat.codes.to_numpy().astype(np.int64))
        if (tool < 0).any():
            raise ValueError("traces.steps has steps without a tool")
        args_codes, args_text = pd.factorize(steps["args"])
        if (args_codes < 0).any():
            raise ValueError("traces.steps has steps without args (expected canonical JSON text, '{}' for none)")
        args = take(args_codes.astype(np.int64))
        status = steps["status"].astype("category")
        labels = np.append(np.asarray(status.cat.categories, dtype=object), None)
        status_codes = take(status.cat.codes.to_numpy().astype(np.int64))
        is_ok, is_error = (labels == "ok")[status_codes], (labels == "error")[status_codes]
        counts = np.bincount(pos, minlength=n_runs).astype(np.int64)
        recorded = runs["n_steps"].to_numpy(dtype=np.float64, na_value=np.nan)
        bad = np.flatnonzero(~np.isnan(recorded) & (recorded != counts))
        if len(bad):
            i = bad[0]
            raise ValueError(f"traces.steps holds {counts[i]} steps for run {str(runs['run_id'].iloc[i])!r}, but "
                             f"traces.runs says n_steps={int(recorded[i])} (in {len(bad)} runs)")
        start = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64) if n_runs else counts
        key = tool * max(len(args_text), 1) + args
        return cls(pos=pos, tool=tool, args=args, key=key, is_ok=is_ok, is_error=is_error, known=is_ok | is_error,
                   start=start, n=counts, tools=tools, args_text=np.asarray(args_text, dtype=object))

    def call_text(self, rows: np.ndarray) -> pa.Array:
        """``str(Call)`` of the steps at ``rows``, as score_run shows them (one Python repr per distinct call)."""
        keys = self.key[rows]
        distinct, inverse = np.unique(keys, return_inverse=True)
        width = max(len(self.args_text), 1)
        texts = [f"{self.tools[k // width]}({json.loads(self.args_text[k % width])!r})" for k in distinct.tolist()]
        return pa.array(texts, pa.large_string()).take(pa.array(inverse.reshape(-1)))


class _ToolIndex:
    """Sorted ``(run, tool)`` look-ups over the steps whose tool is of interest."""

    def __init__(self, steps: _Steps, tools_of_interest: np.ndarray, only: np.ndarray | None = None) -> None:
        self.width = max(len(steps.tools), 1)
        wanted = np.isin(steps.tool, tools_of_interest)
        rows = np.flatnonzero(wanted if only is None else wanted & only)
        pair = steps.pos[rows] * self.width + steps.tool[rows]
        order = np.argsort(pair, kind="stable")
        self.pairs, self.rows = pair[order], rows[order]

    def locate(self, run: np.ndarray, tool: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """First position (into ``self.rows``) and count of the calls of ``tool`` in ``run``."""
        pair = run * self.width + tool
        first = np.searchsorted(self.pairs, pair, side="left")
        count = np.searchsorted(self.pairs, pair, side="right") - first
        return first, np.where(tool >= 0, count, 0)


# --------------------------------------------------------------------------- #
# Reasons
# --------------------------------------------------------------------------- #
class _Reasons:
    """Reason texts with their run and order, joined per run at the end."""

    def __init__(self) -> None:
        self.runs: list[np.ndarray] = []
        self.order: list[np.ndarray] = []
        self.texts: list[pa.Array] = []

    def add(self, check: int, runs: np.ndarray, sub: Any, texts: Any) -> None:
        runs = np.asarray(runs, dtype=np.int64)
        if len(runs) == 0:
            return
        self.runs.append(runs)
        self.order.append(check * _CHECK + np.broadcast_to(np.asarray(sub, dtype=np.int64), runs.shape))
        self.texts.append(texts if isinstance(texts, pa.Array) else pa.array(list(texts), pa.large_string()))

    def join(self, n_runs: int) -> tuple[np.ndarray, pa.Array]:
        """Reasons per run, and the reasons of each run joined by ``"; "``."""
        if not self.runs:
            return np.zeros(n_runs, dtype=np.int64), pa.array([""] * n_runs, pa.large_string())
        runs, order = np.concatenate(self.runs), np.concatenate(self.order)
        texts = pa.concat_arrays([t.cast(pa.large_string()) for t in self.texts])
        sort = np.lexsort((order, runs))
        counts = np.bincount(runs, minlength=n_runs).astype(np.int64)
        offsets = np.concatenate(([0], np.cumsum(counts)))
        lists = pa.LargeListArray.from_arrays(pa.array(offsets, pa.int64()), texts.take(pa.array(sort)))
        return counts, pc.binary_join(lists, pa.scalar("; ", pa.large_string()))


def _fmt(*parts: Any) -> pa.Array:
    """Concatenate strings and arrays (ints or Arrow strings) element-wise."""
    arrays = []
    for part in parts:
        if isinstance(part, str):
            arrays.append(pa.scalar(part, pa.large_string()))
        elif isinstance(part, pa.Array):
            arrays.append(part.cast(pa.large_string()))
        else:
            arrays.append(pc.cast(pa.array(np.asarray(part, dtype=np.int64)), pa.large_string()))
    return pc.binary_join_element_wise(*arrays, pa.scalar("", pa.large_string()))


def _text_array(values: Sequence[str] | np.ndarray) -> pa.Array:
    return pa.array(list(values), pa.large_string())


# --------------------------------------------------------------------------- #
# The specs as arrays
# --------------------------------------------------------------------------- #
@dataclass(frozen=True)
class _Specs:
    """Per-spec fields as arrays, plus the reference calls flattened."""

    specs: list[TrajectorySpec]
    budget: np.ndarray       # 0: none
    cap: np.ndarray          # 0: none
    time_limit: np.ndarray   # NaN: none
    max_repeats: np.ndarray  # 0: none
    success_at: np.ndarray
    match: np.ndarray        # index into MATCH_MODES
    ref_start: np.ndarray    # first flat reference call of each spec
    ref_len: np.ndarray      # 0: no reference
    # flat reference calls
    ref_spec: np.ndarray
    ref_tool: np.ndarray     # tool code, -1 if no run calls it
    ref_rank: np.ndarray     # rank among the spec's reference calls of the same tool
    ref_any_args: np.ndarray  # arguments not compared (args None, or rule "ignore")
    ref_text: np.ndarray     # str(call)
    ref_name: np.ndarray     # tool name

    @classmethod
    def build(cls, specs: list[TrajectorySpec], steps: _Steps) -> _Specs:
        def ints(name: str) -> np.ndarray:
            return np.array([getattr(s, name) or 0 for s in specs], dtype=np.int64)

        code = {t: i for i, t in enumerate(steps.tools)}
        ref_len = np.array([len(s.reference or ()) for s in specs], dtype=np.int64)
        spec_of, tool, rank, any_args, text, name = [], [], [], [], [], []
        for i, spec in enumerate(specs):
            seen: dict[str, int] = {}
            for call in spec.reference or ():
                spec_of.append(i)
                tool.append(code.get(call.tool, -1))
                rank.append(seen.get(call.tool, 0))
                seen[call.tool] = rank[-1] + 1
                any_args.append(call.args is None or spec.rule_for(call.tool) == "ignore")
                text.append(str(call))
                name.append(call.tool)
        return cls(
            specs=specs, budget=ints("step_budget"), cap=ints("step_cap"), max_repeats=ints("max_repeats"),
            time_limit=np.array([np.nan if s.time_limit is None else float(s.time_limit) for s in specs]),
            success_at=np.array([float(s.success_at) for s in specs], dtype=np.float64),
            match=np.array([MATCH_MODES.index(s.match) for s in specs], dtype=np.int64),
            ref_start=np.concatenate(([0], np.cumsum(ref_len)[:-1])).astype(np.int64), ref_len=ref_len,
            ref_spec=np.array(spec_of, dtype=np.int64), ref_tool=np.array(tool, dtype=np.int64),
            ref_rank=np.array(rank, dtype=np.int64), ref_any_args=np.array(any_args, dtype=bool),
            ref_text=np.array(text, dtype=object), ref_name=np.array(name, dtype=object),
        )


def _group(specs: Sequence[TrajectorySpec], key: Any) -> tuple[np.ndarray, list[Any], list[TrajectorySpec]]:
    """Group specs by ``key(spec)``: the group of each spec, the distinct keys, a spec of each group."""
    groups: dict[Any, int] = {}
    first: list[TrajectorySpec] = []
    of = np.empty(len(specs), dtype=np.int64)
    for i, spec in enumerate(specs):
        of[i] = groups.setdefault(key(spec), len(groups))
        if of[i] == len(first):
            first.append(spec)
    return of, list(groups), first
