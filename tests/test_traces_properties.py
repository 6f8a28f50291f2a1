"""Property-based tests: valid records round-trip, corrupted records are accounted for."""

from __future__ import annotations

import json
import warnings

import pandas as pd
import pytest
from conftest import write_jsonl
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentab import TraceError, load_traces

TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12)
NAME = st.text(alphabet="abcdefghij_-./", min_size=1, max_size=8)
JSON_SCALAR = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**53), 2**53), st.floats(allow_nan=False, allow_infinity=False), TEXT
)
JSON = st.recursive(JSON_SCALAR, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
                    max_leaves=8)
OBJECT = st.dictionaries(TEXT, JSON, max_size=4)
NONNEG_FLOAT = st.floats(min_value=0, max_value=1e12, allow_nan=False)
EPOCH = st.integers(0, 4_000_000_000)


@st.composite
def timestamps(draw):
    if not draw(st.booleans()):
        return None, None
    start = draw(EPOCH)
    end = start + draw(st.integers(0, 10_000))
    as_text = draw(st.booleans())

    def render(seconds):
        return pd.Timestamp(seconds, unit="s", tz="UTC").strftime("%Y-%m-%dT%H:%M:%SZ") if as_text else seconds

    return render(start), render(end)


def _optional(draw, strategy):
    return draw(st.one_of(st.just(None), strategy))


@st.composite
def steps(draw):
    out = []
    for index in range(draw(st.integers(0, 4))):
        step = {"index": index, "tool": draw(NAME), "args": draw(OBJECT)}
        if draw(st.booleans()):
            observation = draw(OBJECT)
            status = draw(st.sampled_from([None, "ok", "error"]))
            if status is not None:
                observation["status"] = status
            step["observation"] = observation
        for key in ("tokens_in", "tokens_out"):
            value = _optional(draw, st.integers(0, 2**40))
            if value is not None:
                step[key] = value
        started, ended = draw(timestamps())
        if started is not None:
            step["started_at"], step["ended_at"] = started, ended
        if draw(st.booleans()):
            step["metadata"] = draw(OBJECT)
        out.append(step)
    return out


@st.composite
def records(draw, min_size=1, max_size=6):
    n = draw(st.integers(min_size, max_size))
    outcome_kind = draw(st.sampled_from(["bool", "number"]))
    out = []
    for i in range(n):
        rec = {
            "run_id": f"run-{i}" if draw(st.booleans()) else i,
            "task_id": draw(st.one_of(NAME, st.integers(0, 99))),
            "seed": draw(st.integers(-(2**31), 2**31)),
            "steps": draw(steps()),
            "outcome": draw(st.booleans()) if outcome_kind == "bool" else draw(st.floats(-10, 10, allow_nan=False)),
        }
        optional = {
            "arm": _optional(draw, NAME),
            "terminal_state": _optional(draw, st.fixed_dictionaries(
                {}, optional={"files_created": st.lists(NAME, max_size=3), "files_deleted": st.lists(NAME, max_size=2),
                              "external_calls": st.lists(JSON, max_size=2), "rows": JSON})),
            "retries": _optional(draw, st.integers(0, 50)),
            "backtracks": _optional(draw, st.integers(0, 50)),
            "cost_usd": _optional(draw, NONNEG_FLOAT),
            "latency_s": _optional(draw, NONNEG_FLOAT),
            "metadata": _optional(draw, st.fixed_dictionaries({}, optional={"model": NAME, "harness": NAME, "x": JSON})),
        }
        rec.update({k: v for k, v in optional.items() if v is not None})
        out.append(rec)
    return out


def _instant(value):
    if isinstance(value, str):
        return pd.Timestamp(value).tz_convert("UTC") if pd.Timestamp(value).tzinfo else pd.Timestamp(value, tz="UTC")
    return pd.Timestamp(value, unit="s", tz="UTC")


def _normal(rec: dict) -> dict:
    """What a record should look like after load -> to_records."""
    out = json.loads(json.dumps(rec))
    out["run_id"], out["task_id"] = str(rec["run_id"]), str(rec["task_id"])
    for step in out["steps"]:
        for key in ("started_at", "ended_at"):
            if key in step:
                step[key] = _instant(step[key])
    return out


def _loaded(rec: dict) -> dict:
    out = json.loads(json.dumps(rec))
    for step in out["steps"]:
        for key in ("started_at", "ended_at"):
            if key in step:
                step[key] = _instant(step[key])
    return out


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records())
def test_valid_records_round_trip(recs):
    traces = load_traces(recs)
    assert traces.n_read == len(recs) == len(traces.runs) and len(traces.rejected) == 0
    assert len(traces.steps) == sum(len(r["steps"]) for r in recs)
    assert [_loaded(r) for r in traces.to_records()] == [_normal(r) for r in recs]


CORRUPTIONS = {
    "malformed": lambda rec, first: json.dumps(rec)[:-3],
    "wrong type": lambda rec, first: {**rec, "seed": "seven"},
    "missing field": lambda rec, first: {k: v for k, v in rec.items() if k != "task_id"},
    "negative tokens": lambda rec, first: {**rec, "steps": [{"index": 0, "tool": "t", "args": {}, "tokens_in": -3}]},
    "bad index": lambda rec, first: {**rec, "steps": [{"index": 1, "tool": "t", "args": {}}]},
    "duplicate": lambda rec, first: {**rec, "run_id": first["run_id"]},
    "non-finite": lambda rec, first: json.dumps({**rec, "cost_usd": float("nan")}),
    "bad timestamp": lambda rec, first: {**rec, "steps": [{"index": 0, "tool": "t", "args": {}, "started_at": "noon"}]},
    "unknown field": lambda rec, first: {**rec, "cost": 1.0},
}


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(records(min_size=2, max_size=8), st.data())
def test_corrupted_records_are_rejected_and_counted(tmp_path_factory, recs, data):
    for i, rec in enumerate(recs):  # unique text ids, so "duplicate" is the only way to collide
        rec["run_id"] = f"run-{i}"
    lines: list = list(recs)
    bad = data.draw(st.sets(st.integers(1, len(recs) - 1), min_size=1), label="corrupted")
    for i in sorted(bad):
        kind = data.draw(st.sampled_from(sorted(CORRUPTIONS)), label=f"corruption of {i}")
        lines[i] = CORRUPTIONS[kind](recs[i], recs[0])
    path = write_jsonl(tmp_path_factory.mktemp("c") / "runs.jsonl", lines)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        traces = load_traces(path, strict=False)
        assert traces.n_read == len(lines) == len(traces.runs) + len(traces.rejected)
        assert set(traces.rejected["line"]) == {i + 1 for i in bad}
        assert set(traces.runs["run_id"]) == {f"run-{i}" for i in range(len(recs)) if i not in bad}
        assert len(traces.steps) == sum(len(recs[i]["steps"]) for i in range(len(recs)) if i not in bad)
        with pytest.raises(TraceError, match=rf"runs\.jsonl, line {min(bad) + 1}\b"):
            load_traces(path)
