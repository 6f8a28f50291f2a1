"""The checks of :func:`agentab.score_run` on every run at once, but the reference matching.

Each check reads the steps and specs as arrays (:mod:`agentab.scoring._arrays`), adds its reasons and
returns its metric columns: required tools (:func:`_required`), loops (:func:`_loops`, with the cycle
scan replayed by pointer doubling in :func:`_cycles`), errors and termination (:func:`_status`), side
effects (:func:`_side_effects`: forbidden calls vectorised; the terminal-state rules of
:func:`agentab.score_run` applied once per distinct spec and state) and the agent's claims
(:func:`_claims`). The reference matching is in :mod:`agentab.scoring.reference`.
"""

from __future__ import annotations

import json
import warnings
from fnmatch import fnmatchcase
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from agentab.errors import SpecWarning
from agentab.scoring._arrays import (_BUDGET, _CAP, _LATER, _LOOPS, _REQUIRED, _SIDE, _Reasons, _Specs, _Steps,
                                     _ToolIndex, _fmt, _group, _text_array)
from agentab.scoring.spec import MAX_CYCLE, STATE_LISTS, TrajectorySpec
from agentab.scoring.trajectory import entry_text, state_changed, state_effects


def _required(steps: _Steps, sp: _Specs, run_spec: np.ndarray, reasons: _Reasons) -> dict[str, Any]:
    n_runs = len(run_spec)
    group_of, groups, _ = _group(sp.specs, lambda s: s.required)
    size = np.array([len(g) for g in groups], dtype=np.int64)
    g_start = np.concatenate(([0], np.cumsum(size)[:-1])).astype(np.int64)
    code = {t: i for i, t in enumerate(steps.tools)}
    flat_tool = np.array([code.get(t, -1) for g in groups for t in g], dtype=np.int64)
    flat_name = np.array([t for g in groups for t in g], dtype=object)
    run_group = group_of[run_spec]
    m = size[run_group]
    e_run = np.repeat(np.arange(n_runs, dtype=np.int64), m)
    e_flat = g_start[run_group[e_run]] + np.arange(len(e_run), dtype=np.int64) - np.repeat(np.cumsum(m) - m, m)
    tools = np.unique(flat_tool[flat_tool >= 0])
    _, called = _ToolIndex(steps, tools).locate(e_run, flat_tool[e_flat])
    _, done = _ToolIndex(steps, tools, ~steps.is_error).locate(e_run, flat_tool[e_flat])
    lacking = done == 0  # a tool whose every call failed did not do the necessary thing
    missing = np.bincount(e_run[lacking], minlength=n_runs).astype(np.int64)
    with np.errstate(invalid="ignore", divide="ignore"):
        recall = np.where(m > 0, (m - missing) / np.where(m > 0, m, 1), np.nan)
    for sub, (label, which) in enumerate((("never called: ", called == 0),
                                          ("only failed calls to: ", (called > 0) & (done == 0)))):
        if which.any():
            runs, first = np.unique(e_run[which], return_index=True)
            names = pa.array(flat_name[e_flat[which]].tolist(), pa.large_string())
            offsets = pa.array(np.append(first, which.sum()).astype(np.int64))
            joined = pc.binary_join(pa.LargeListArray.from_arrays(offsets, names), pa.scalar(", ", pa.large_string()))
            reasons.add(_REQUIRED, runs, sub, _fmt(label, joined))
    return {"required_missing": (missing, m > 0), "tool_recall_required": recall}


def _loops(steps: _Steps, sp: _Specs, run_spec: np.ndarray, reasons: _Reasons) -> dict[str, Any]:
    n_runs, n = len(run_spec), len(steps.pos)
    pos, key = steps.pos, steps.key
    same = np.zeros(n, dtype=bool)
    same[1:] = (pos[1:] == pos[:-1]) & (key[1:] == key[:-1])
    repeats = np.bincount(pos[same], minlength=n_runs).astype(np.int64)
    row = np.arange(n, dtype=np.int64)
    streak = row - np.maximum.accumulate(np.where(same, 0, row)) + 1 if n else row
    longest = np.zeros(n_runs, dtype=np.int64)
    has_steps = steps.n > 0
    if has_steps.any():
        longest[has_steps] = np.maximum.reduceat(streak, steps.start[has_steps])
    cap = sp.max_repeats[run_spec][pos]
    at_cap = same & (cap > 0) & (streak - 1 == cap)
    cap_hit = np.bincount(pos[at_cap], minlength=n_runs) > 0
    within = steps.within
    repeat_rows = np.flatnonzero(same)
    reasons.add(_LOOPS, pos[repeat_rows], 2 * within[repeat_rows],
                _fmt("repeated identical call: ", steps.call_text(repeat_rows)))
    cap_rows = np.flatnonzero(at_cap)
    reasons.add(_LOOPS, pos[cap_rows], 2 * within[cap_rows] + 1,
                _fmt("loop cap hit: ", steps.call_text(cap_rows), " repeated ", cap[cap_rows], " times back to back"))
    starts, length = _cycles(pos, key, same)
    cycles = np.bincount(pos[starts], minlength=n_runs).astype(np.int64)
    if len(starts):
        texts = [" -> ".join(part) for part in _split_texts(steps, starts, length)]
        reasons.add(_LOOPS, pos[starts], _LATER + within[starts], _fmt("repeated cycle: ", _text_array(texts)))
    return {"repeats": repeats, "cycles": cycles, "longest_streak": longest, "loop": (repeats + cycles) > 0,
            "cap_hit": (cap_hit, sp.max_repeats[run_spec] > 0)}


def _split_texts(steps: _Steps, starts: np.ndarray, length: np.ndarray) -> list[list[str]]:
    rows = np.repeat(starts, length) + np.arange(length.sum()) - np.repeat(np.cumsum(length) - length, length)
    texts = steps.call_text(rows).to_pylist()
    bounds = np.cumsum(length).tolist()
    return [texts[b - k:b] for b, k in zip(bounds, length.tolist())]


def _cycles(pos: np.ndarray, key: np.ndarray, same: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows where the loop scan of score_run finds a cycle, and each cycle's length.

    A candidate at row i of length L: the L calls from i, not all equal, are
    followed by the same L calls, inside one run. The scan takes the first
    candidate of a run, jumps past both blocks, takes the next candidate
    there, and so on; it is replayed by pointer doubling: each candidate
    points to the first candidate at or after its jump, and the cycles found
    are the candidates reachable from the first candidate of each run.
    """
    n = len(pos)
    length = np.zeros(n, dtype=np.int64)
    for size in range(MAX_CYCLE, 1, -1):  # the shortest length wins, as in the scan
        span = n - 2 * size + 1
        if span <= 0:
            continue
        pair = (pos[:-size] == pos[size:]) & (key[:-size] == key[size:])
        found = pair[:span].copy()
        uniform = same[1:1 + span].copy()
        for j in range(1, size):
            found &= pair[j:j + span]
            if j > 1:
                uniform &= same[j:j + span]
        found &= ~uniform
        length[:span][found] = size
    rows = np.flatnonzero(length)
    if len(rows) == 0:
        return rows, rows
    m = len(rows)
    size = length[rows]
    target = np.searchsorted(rows, rows + 2 * size)
    inside = target < m
    inside[inside] = pos[rows[target[inside]]] == pos[rows[inside]]
    jump = np.append(np.where(inside, target, m), m)
    reached = np.append(np.r_[True, pos[rows[1:]] != pos[rows[:-1]]], False)
    while True:
        reached[jump[reached]] = True
        if (jump == m).all():
            break
        jump = jump[jump]
    taken = reached[:m]
    return rows[taken], size[taken]

def _status(steps: _Steps, sp: _Specs, run_spec: np.ndarray, reasons: _Reasons,
            latency: np.ndarray) -> dict[str, Any]:
    """Errors, uncorrected errors, budget, step cap, time limit and unanswered calls."""
    n_runs, n = len(run_spec), steps.n
    pos = steps.pos
    n_errors = np.bincount(pos[steps.is_error], minlength=n_runs).astype(np.int64)
    # an error whose tool has no later ok call in the run
    width = max(len(steps.tools), 1)
    pair = pos * width + steps.tool
    ok_rows = np.flatnonzero(steps.is_ok)
    ok_pairs = pair[ok_rows]
    last_pairs, last_at = np.unique(ok_pairs[::-1], return_index=True)
    last_ok = ok_rows[::-1][last_at]
    err_rows = np.flatnonzero(steps.is_error)
    at = np.searchsorted(last_pairs, pair[err_rows])
    found = at < len(last_pairs)
    found[found] = last_pairs[at[found]] == pair[err_rows][found]
    later_ok = np.zeros(len(err_rows), dtype=bool)
    later_ok[found] = last_ok[at[found]] > err_rows[found]
    # ... and that does not merely repeat a call that had already succeeded (e.g. blocked by a loop guard)
    width = int(steps.key.max()) + 1 if n.sum() else 1
    call_pair = pos * width + steps.key
    first_pairs, first_at = np.unique(call_pair[ok_rows], return_index=True)
    first_ok = ok_rows[first_at]
    at = np.searchsorted(first_pairs, call_pair[err_rows])
    found = at < len(first_pairs)
    found[found] = first_pairs[at[found]] == call_pair[err_rows][found]
    redundant = np.zeros(len(err_rows), dtype=bool)
    redundant[found] = first_ok[at[found]] < err_rows[found]
    uncorrected_rows = err_rows[~(later_ok | redundant)]
    cascade = np.bincount(pos[uncorrected_rows], minlength=n_runs) > 0
    budget, cap = sp.budget[run_spec], sp.cap[run_spec]
    over = (budget > 0) & (n > budget)
    hit_cap = (cap > 0) & (n >= cap)
    last = steps.start + n - 1
    known_any = np.bincount(pos[steps.known], minlength=n_runs) > 0
    unanswered = np.zeros(n_runs, dtype=bool)
    has = n > 0
    unanswered[has] = ~steps.known[last[has]] & known_any[has]
    runs = np.flatnonzero(over)
    reasons.add(_BUDGET, runs, 0, _fmt("took ", n[runs], " steps against a budget of ", budget[runs]))
    runs = np.flatnonzero(hit_cap)
    reasons.add(_CAP, runs, 0, _fmt("did not terminate: reached the step cap of ", cap[runs]))
    limit = sp.time_limit[run_spec]
    with np.errstate(invalid="ignore"):
        timed_out = ~np.isnan(limit) & ~np.isnan(latency) & (latency >= limit)
    runs = np.flatnonzero(timed_out)
    reasons.add(_CAP, runs, 1, [f"did not terminate: ran {latency[r]:g} s against a time limit of {limit[r]:g} s"
                                for r in runs])
    runs = np.flatnonzero(unanswered)
    reasons.add(_CAP, runs, 2, _text_array(["did not terminate: the last call was never answered"] * len(runs)))
    first_runs, first_at = np.unique(pos[uncorrected_rows], return_index=True)  # rows are in run order
    reasons.add(_CAP, first_runs, 3,
                _fmt("failed call never made good: ", steps.call_text(uncorrected_rows[first_at])))
    statuses = (n == 0) | known_any  # a status is recorded (or there is no step): errors are known
    checked = (cap > 0) | (~np.isnan(limit) & ~np.isnan(latency)) | statuses
    return {"n_errors": n_errors, "error_cascade": cascade, "over_budget": over, "_has_budget": budget > 0,
            "non_terminated": hit_cap | unanswered | timed_out, "_checked": checked, "_statuses": statuses}


def _side_effects(runs: pd.DataFrame, steps: _Steps, sp: _Specs, run_spec: np.ndarray,
                  reasons: _Reasons) -> dict[str, Any]:
    """Forbidden calls (vectorised), and the terminal-state checks once per distinct (spec, state)."""
    n_runs = len(run_spec)
    # forbidden calls: a flag per (forbidden patterns, tool)
    group_of, groups, _ = _group(sp.specs, lambda s: s.forbidden)
    flags = np.array([[any(fnmatchcase(t, p) for p in g) for t in steps.tools] for g in groups],
                     dtype=bool).reshape(len(groups), len(steps.tools))
    bad = np.flatnonzero(flags[group_of[run_spec[steps.pos]], steps.tool]) if len(steps.pos) else steps.pos
    forbidden_calls = np.bincount(steps.pos[bad], minlength=n_runs).astype(np.int64)
    has_forbidden = np.array([bool(g) for g in groups], dtype=bool)[group_of[run_spec]]
    reasons.add(_SIDE, steps.pos[bad], steps.within[bad], _fmt("forbidden call: ", steps.call_text(bad)))
    # terminal state
    state_code, state_text = pd.factorize(runs["terminal_state"])
    state_code = state_code.astype(np.int64)
    parsed = [json.loads(t) for t in state_text]
    changed = np.array([state_changed(s) for s in parsed] + [False])
    effect_of, _, effect_spec = _group(sp.specs, _effect_key)
    combo = effect_of[run_spec] * (len(parsed) + 1) + state_code + 1
    distinct, inverse = np.unique(combo, return_inverse=True)
    inverse = inverse.reshape(-1)
    names = ("forbidden_side_effects", "unexpected_side_effects", "missing_changes", "duplicate_changes")
    values = np.zeros((len(distinct), len(names)), dtype=np.int64)
    known = np.zeros((len(distinct), len(names)), dtype=bool)
    texts: list[str] = []
    for i, c in enumerate(distinct.tolist()):
        group, code = divmod(c, len(parsed) + 1)
        found, metrics = state_effects(parsed[code - 1] if code else None, effect_spec[group])
        for j, name in enumerate(names):
            if metrics[name] is not None:
                values[i, j], known[i, j] = metrics[name], True
        texts.append("; ".join(found))
    out: dict[str, Any] = {"forbidden_calls": (forbidden_calls, has_forbidden)}
    for j, name in enumerate(names):
        out[name] = (values[inverse, j], known[inverse, j])
    has_text = np.array([bool(t) for t in texts], dtype=bool)
    with_text = np.flatnonzero(has_text[inverse])
    reasons.add(_SIDE, with_text, _LATER, _text_array(texts).take(pa.array(inverse[with_text])))
    out["_state_changed"] = (changed[state_code], state_code >= 0)
    return out


def _effect_key(spec: TrajectorySpec) -> Any:
    """What the terminal-state checks of score_run read from a spec (equal keys: equal results)."""
    if spec.expected_state is None:
        return spec.forbidden, None
    try:
        intended = tuple((key, tuple(entry_text(v) for v in spec.expected_state[key]))
                         for key in STATE_LISTS if key in spec.expected_state)
    except (TypeError, ValueError):
        return id(spec)
    return spec.forbidden, intended


def _claims(runs: pd.DataFrame, notes: list[Any] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``metadata.claimed_success`` of each run (truth value, recorded), once per distinct metadata.

    ``notes``: a list (a batch of a streamed score) collects ``("claims", runs, example)`` instead of the
    warning, for :func:`agentab.score` to warn once for every batch.
    """
    code, texts = pd.factorize(runs["metadata"])
    claims = [(json.loads(t) or {}).get("claimed_success") for t in texts]
    odd = [i for i, c in enumerate(claims) if c is not None and not isinstance(c, bool)]
    if odd and notes is not None:
        notes.append(("claims", int(np.isin(code, odd).sum()), claims[odd[0]]))
    elif odd:
        warnings.warn(f"metadata.claimed_success is not true/false in {int(np.isin(code, odd).sum())} runs "
                      f"(e.g. {claims[odd[0]]!r}); it is read by its truth value, as score_run does",
                      SpecWarning, stacklevel=5)  # _claims, _columns, _score_frame, score, the caller
    value = np.append(np.array([bool(c) for c in claims], dtype=bool), False)
    recorded = np.append(np.array([c is not None for c in claims], dtype=bool), False)
    return value[code], recorded[code]

