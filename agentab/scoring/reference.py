"""Matching runs against reference trajectories: one run, and every run of an experiment at once.

The rules (what each match mode and argument rule means) are in :mod:`agentab.scoring.trajectory`.
One run (:func:`reference_check`, used by :func:`agentab.score_run`): calls are paired with reference
calls by a maximum bipartite matching (Hopcroft-Karp, :func:`matching`), argument rules applied by
:func:`args_ok`. Every run (:func:`_reference`, used by :func:`agentab.score`): the first phase of that
matching is replayed on arrays (:func:`_greedy_matching`); where the greedy pairing is provably maximum it
is the answer, and the other runs are matched one by one with :func:`matching`. The ``exact`` mode
compares position by position (:func:`_exact`). Argument rules are evaluated once per distinct
(reference call, arguments) pair (:func:`_args_fit`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import scipy.sparse
from scipy.sparse.csgraph import maximum_bipartite_matching

from agentab.scoring._arrays import _LATER, _REFERENCE, _Reasons, _Specs, _Steps, _ToolIndex, _fmt, _text_array
from agentab.scoring.spec import MATCH_MODES, ArgRule, Call, TrajectorySpec

__all__ = ["args_ok", "matching", "reference_check"]

#: Match modes in which every reference call must be paired with a call.
ALL_REFERENCE = ("superset", "any_order")
#: Match modes in which every call must be paired with a reference call.
ALL_CALLS = ("subset", "any_order")


# --------------------------------------------------------------------------- #
# One run
# --------------------------------------------------------------------------- #
def args_ok(rule: ArgRule, actual: Mapping[str, Any], reference: Mapping[str, Any] | None) -> bool:
    """Whether a call's arguments fit a reference call's under ``rule`` (``reference`` None: any arguments)."""
    if reference is None or rule == "ignore":
        return True
    if rule == "exact":
        return dict(actual) == dict(reference)
    if rule == "subset":
        return all(key in actual and actual[key] == value for key, value in reference.items())
    return bool(rule(actual, reference))


def matching(calls: list[Call], reference: Sequence[Call], spec: TrajectorySpec, *, use_args: bool) -> np.ndarray:
    """For each reference call, the index of its paired call (or -1), maximising the pairs."""
    if not reference or not calls:
        return np.full(len(reference), -1)
    edges = np.array([[c.tool == r.tool and (not use_args or args_ok(spec.rule_for(r.tool), c.args or {}, r.args))
                       for c in calls] for r in reference], dtype=bool)
    return maximum_bipartite_matching(scipy.sparse.csr_matrix(edges), perm_type="column")


def reference_check(run: Any, spec: TrajectorySpec) -> tuple[list[str], dict[str, Any]]:
    """The reference check of one run (``run.calls``): its reasons, and the four reference metrics."""
    calls, reference = run.calls, spec.reference or ()
    if not reference:
        return [], {"reference_match": None, "tool_precision": None, "tool_recall": None, "arg_accuracy": None}
    by_tool = matching(calls, reference, spec, use_args=False)
    full = matching(calls, reference, spec, use_args=True)
    overlap = int((by_tool >= 0).sum())
    matched = int((full >= 0).sum())
    used_tools = {c.tool for c in calls}
    reasons: list[str] = []
    if spec.match == "exact":
        ok = len(calls) == len(reference) and all(
            c.tool == r.tool and args_ok(spec.rule_for(r.tool), c.args or {}, r.args) for c, r in zip(calls, reference))
        if not ok:
            k = next((i for i, (c, r) in enumerate(zip(calls, reference)) if c.tool != r.tool
                      or not args_ok(spec.rule_for(r.tool), c.args or {}, r.args)), min(len(calls), len(reference)))
            want = str(reference[k]) if k < len(reference) else "the end of the run"
            got = str(calls[k]) if k < len(calls) else "the end of the run"
            reasons.append(f"not the reference order: step {k} should be {want}, got {got}")
    else:
        need_all_reference = spec.match in ALL_REFERENCE
        need_all_calls = spec.match in ALL_CALLS
        ok = (not need_all_reference or matched == len(reference)) and (not need_all_calls or matched == len(calls))
        if need_all_reference:
            for r, j in zip(reference, full):
                if j < 0:
                    reasons.append(f"never called: {r.tool}" if r.tool not in used_tools
                                   else f"wrong arguments: no {r.tool} call matches {r}")
        if need_all_calls:
            paired = set(int(j) for j in full if j >= 0)
            for i, c in enumerate(calls):
                if i not in paired:
                    reasons.append(f"call outside the reference: {c}")
    metrics = {
        "reference_match": ok,
        "tool_precision": overlap / len(calls) if calls else None,
        "tool_recall": overlap / len(reference),
        "arg_accuracy": matched / overlap if overlap else None,
    }
    return reasons, metrics


# --------------------------------------------------------------------------- #
# Every run at once
# --------------------------------------------------------------------------- #
def _reference(steps: _Steps, sp: _Specs, run_spec: np.ndarray, reasons: _Reasons,
               stats: dict[str, int]) -> dict[str, Any]:
    """The reference metrics of every run, and their reasons (unmatched reference calls, calls outside the
    reference, then the exact order), as :func:`reference_check` gives them run by run."""
    n_runs = len(run_spec)
    ref_len = sp.ref_len[run_spec]
    out = {"reference_match": np.zeros(n_runs, dtype=bool), "tool_precision": np.full(n_runs, np.nan),
           "tool_recall": np.full(n_runs, np.nan), "arg_accuracy": np.full(n_runs, np.nan),
           "_has_reference": ref_len > 0}
    ref_runs = np.flatnonzero(ref_len > 0)
    if len(ref_runs) == 0:
        return out
    mode = sp.match[run_spec]
    # one entry per (run, reference call)
    e_run = np.repeat(ref_runs, ref_len[ref_runs])
    e_flat = (sp.ref_start[run_spec[e_run]] + np.arange(len(e_run), dtype=np.int64)
              - np.repeat(np.cumsum(ref_len[ref_runs]) - ref_len[ref_runs], ref_len[ref_runs]))
    e_tool = sp.ref_tool[e_flat]
    index = _ToolIndex(steps, np.unique(e_tool[e_tool >= 0]))
    first, n_calls = index.locate(e_run, e_tool)
    overlap = np.bincount(e_run, weights=sp.ref_rank[e_flat] < n_calls, minlength=n_runs).astype(np.int64)
    # candidate pairs (reference call, call of the same tool), calls in step order
    p_e = np.repeat(np.arange(len(e_run), dtype=np.int64), n_calls)
    p_row = index.rows[np.repeat(first, n_calls) + np.arange(len(p_e), dtype=np.int64)
                       - np.repeat(np.cumsum(n_calls) - n_calls, n_calls)]
    cache: dict[int, bool] = {}
    edge = sp.ref_any_args[e_flat[p_e]].copy()
    check = ~edge
    edge[check] = _args_fit(steps, sp, e_flat[p_e[check]], steps.args[p_row[check]], cache)
    matched = _greedy_matching(steps, sp, e_run, e_flat, p_e, p_row, edge, stats)
    n_matched = np.bincount(e_run[matched >= 0], minlength=n_runs).astype(np.int64)
    n = steps.n
    # exact order
    exact_runs = ref_runs[mode[ref_runs] == MATCH_MODES.index("exact")]
    exact_ok, exact_k = _exact(steps, sp, run_spec, exact_runs, cache)
    with np.errstate(invalid="ignore", divide="ignore"):
        out["tool_precision"] = np.where((ref_len > 0) & (n > 0), overlap / np.where(n > 0, n, 1), np.nan)
        out["tool_recall"] = np.where(ref_len > 0, overlap / np.where(ref_len > 0, ref_len, 1), np.nan)
        out["arg_accuracy"] = np.where((ref_len > 0) & (overlap > 0), n_matched / np.where(overlap > 0, overlap, 1),
                                       np.nan)
    all_ref = np.isin(mode, [MATCH_MODES.index(m) for m in ALL_REFERENCE])
    all_calls = np.isin(mode, [MATCH_MODES.index(m) for m in ALL_CALLS])
    ok = (~all_ref | (n_matched == ref_len)) & (~all_calls | (n_matched == n))
    ok[exact_runs] = exact_ok
    out["reference_match"] = ok
    lost = (matched < 0) & all_ref[e_run]
    if lost.any():
        _lost_reasons(sp, run_spec, e_run[lost], e_flat[lost], n_calls[lost] == 0, reasons)
    outside = np.ones(len(steps.pos), dtype=bool)
    outside[matched[matched >= 0]] = False
    outside = np.flatnonzero(outside & all_calls[steps.pos] & (ref_len[steps.pos] > 0))
    reasons.add(_REFERENCE, steps.pos[outside], _LATER + steps.within[outside],
                _fmt("call outside the reference: ", steps.call_text(outside)))
    if not exact_ok.all():
        _order_reasons(steps, sp, run_spec, exact_runs[~exact_ok], exact_k[~exact_ok], reasons)
    return out


def _lost_reasons(sp: _Specs, run_spec: np.ndarray, runs: np.ndarray, flat: np.ndarray, never: np.ndarray,
                  reasons: _Reasons) -> None:
    """Reasons for reference calls (``flat``) that no call of their run (``runs``) was paired with."""
    names = _text_array(sp.ref_name[flat])
    texts = pc.if_else(pa.array(never), _fmt("never called: ", names),
                       _fmt("wrong arguments: no ", names, " call matches ", _text_array(sp.ref_text[flat])))
    reasons.add(_REFERENCE, runs, flat - sp.ref_start[run_spec[runs]], texts)


def _order_reasons(steps: _Steps, sp: _Specs, run_spec: np.ndarray, wrong: np.ndarray, k: np.ndarray,
                   reasons: _Reasons) -> None:
    """Reasons for runs of "exact" specs out of the reference order, first differing at step ``k``."""
    length = sp.ref_len[run_spec[wrong]]
    want = sp.ref_text[sp.ref_start[run_spec[wrong]] + np.minimum(k, length - 1)]
    want = np.where(k < length, want, "the end of the run")
    has_call = k < steps.n[wrong]
    got = np.full(len(wrong), "the end of the run", dtype=object)
    got[has_call] = steps.call_text(steps.start[wrong[has_call]] + k[has_call]).to_numpy(zero_copy_only=False)
    reasons.add(_REFERENCE, wrong, 0, _fmt("not the reference order: step ", k, " should be ",
                                           _text_array(want), ", got ", _text_array(got)))


def _args_fit(steps: _Steps, sp: _Specs, flat: np.ndarray, args: np.ndarray, cache: dict[int, bool]) -> np.ndarray:
    """:func:`args_ok` for (reference call, call arguments) pairs, once per distinct pair."""
    if len(flat) == 0:
        return np.zeros(0, dtype=bool)
    width = max(len(steps.args_text), 1)
    distinct, inverse = np.unique(flat * width + args, return_inverse=True)
    values = np.empty(len(distinct), dtype=bool)
    for i, pair in enumerate(distinct.tolist()):
        if pair not in cache:
            f, a = divmod(pair, width)
            spec = sp.specs[sp.ref_spec[f]]
            call = spec.reference[f - sp.ref_start[sp.ref_spec[f]]]  # type: ignore[index]
            cache[pair] = bool(args_ok(spec.rule_for(call.tool), json.loads(steps.args_text[a]), call.args))
        values[i] = cache[pair]
    return values[inverse.reshape(-1)]


def _greedy_matching(steps: _Steps, sp: _Specs, e_run: np.ndarray, e_flat: np.ndarray, p_e: np.ndarray,
                     p_row: np.ndarray, edge: np.ndarray, stats: dict[str, int]) -> np.ndarray:
    """The call (row) paired with each reference entry by score_run's matching, or -1.

    The first phase of Hopcroft-Karp (scipy) lets each reference call, in
    order, take the first free call it fits. Per (run, tool) block, when that
    pairs as many as the count bound min(reference calls with an edge, calls
    with an edge), no augmenting path exists and it is final; the runs with a
    block short of the bound are matched by score_run's own matching.
    """
    matched = np.full(len(e_run), -1, dtype=np.int64)
    if len(p_e):
        taken = np.zeros(len(steps.pos), dtype=bool)
        rank = sp.ref_rank[e_flat[p_e]]
        for k in range(int(rank.max()) + 1):
            pick = np.flatnonzero((rank == k) & edge & ~taken[p_row])
            if len(pick) == 0:
                continue
            entries, first = np.unique(p_e[pick], return_index=True)
            rows = p_row[pick[first]]
            matched[entries] = rows
            taken[rows] = True
    # the count bound per (run, tool) block
    e_block = e_run * (len(steps.tools) + 1) + sp.ref_tool[e_flat] + 1
    blocks, e_block = np.unique(e_block, return_inverse=True)
    e_block = e_block.reshape(-1)
    has_edge = np.zeros(len(e_run), dtype=bool)
    has_edge[p_e[edge]] = True
    refs_bound = np.bincount(e_block[has_edge], minlength=len(blocks))
    _, first = np.unique(p_row[edge], return_index=True)
    calls_bound = np.bincount(e_block[p_e[edge][first]], minlength=len(blocks))
    size = np.bincount(e_block[matched >= 0], minlength=len(blocks))
    short = size < np.minimum(refs_bound, calls_bound)
    undecided = np.unique(e_run[short[e_block]])
    stats["matching_fallback_runs"] = stats.get("matching_fallback_runs", 0) + len(undecided)
    if len(undecided):
        run_first = np.searchsorted(e_run, undecided)
        for run, at in zip(undecided.tolist(), run_first.tolist()):
            spec = sp.specs[sp.ref_spec[e_flat[at]]]
            lo, hi = steps.start[run], steps.start[run] + steps.n[run]
            calls = [Call(steps.tools[t], json.loads(steps.args_text[a]))
                     for t, a in zip(steps.tool[lo:hi].tolist(), steps.args[lo:hi].tolist())]
            full = np.asarray(matching(calls, spec.reference or (), spec, use_args=True))
            matched[at:at + len(full)] = np.where(full >= 0, lo + full, -1)
    return matched


def _exact(steps: _Steps, sp: _Specs, run_spec: np.ndarray, runs: np.ndarray,
           cache: dict[int, bool]) -> tuple[np.ndarray, np.ndarray]:
    """For runs of "exact" specs: matches the reference in order, and the first step that does not."""
    if len(runs) == 0:
        return np.zeros(0, dtype=bool), np.zeros(0, dtype=np.int64)
    ref_len = sp.ref_len[run_spec]
    in_runs = np.zeros(len(run_spec), dtype=bool)
    in_runs[runs] = True
    within = steps.within
    rows = np.flatnonzero(in_runs[steps.pos] & (within < ref_len[steps.pos]))
    flat = sp.ref_start[run_spec[steps.pos[rows]]] + within[rows]
    fits = sp.ref_tool[flat] == steps.tool[rows]
    check = fits & ~sp.ref_any_args[flat]
    fits[check] = _args_fit(steps, sp, flat[check], steps.args[rows[check]], cache)
    k = np.minimum(steps.n, ref_len)
    bad = rows[~fits]
    np.minimum.at(k, steps.pos[bad], within[bad])
    ok = (steps.n[runs] == ref_len[runs]) & (k[runs] == steps.n[runs])
    return ok, k[runs]

