"""The recorder: each tool call one step of the trace record, arguments by name, errors, tokens, caps."""

from __future__ import annotations

from pathlib import Path

import pytest

import agentab
from agentab.harness import Recorder, StopRun
from agentab.harness.recorder import jsonable


class FakeUsage:
    """Stands in for a usage capture: a list of model calls the test appends to."""

    def __init__(self):
        self.calls = []

    def call(self, tokens_in, tokens_out, cached=None, model="m-1"):
        self.calls.append({"provider": "openai", "model": model, "tokens_in": tokens_in, "tokens_out": tokens_out,
                           "tokens_cached": cached, "tokens_reasoning": None})


def test_the_three_ways_to_register_a_tool_and_the_mapping():
    rec = Recorder({"upper": str.upper})

    @rec.tool
    def add(a, b=2):
        return a + b

    @rec.tool("mul")
    def times(a, b):
        return a * b

    neg = rec.tool("neg", lambda x: -x)
    assert sorted(rec.tools) == ["add", "mul", "neg", "upper"]
    assert add(1) == 3 and times(2, 3) == 6 and neg(x=4) == -4 and rec.tools["upper"]("a") == "A"
    assert [s["tool"] for s in rec.steps] == ["add", "mul", "neg", "upper"]
    assert [s["index"] for s in rec.steps] == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="already registered"):
        rec.tool("add", abs)
    with pytest.raises(TypeError, match="must be callable"):
        rec.tool("x", 3)


def test_positional_arguments_are_bound_to_their_names_and_defaults_are_not_filled():
    rec = Recorder()

    @rec.tool
    def write_file(path, content="", *, mode="create", **options):
        return len(content)

    write_file("out/a.md", "hi", mode="append", encoding="utf-8")
    write_file("b.md")
    assert rec.steps[0]["args"] == {"path": "out/a.md", "content": "hi", "mode": "append", "encoding": "utf-8"}
    assert rec.steps[1]["args"] == {"path": "b.md"}


def test_a_tool_without_a_readable_signature_refuses_positional_arguments():
    rec = Recorder({"max": max})
    with pytest.raises(TypeError, match="keyword arguments only"):
        rec.tools["max"](1, 2)


def test_errors_are_recorded_then_raised_or_returned():
    def fails(path):
        raise FileNotFoundError(f"no such file: {path}")

    raising = Recorder({"read": fails})
    with pytest.raises(FileNotFoundError):
        raising.tools["read"](path="x")
    assert raising.steps[0]["observation"] == {"status": "error", "error": "FileNotFoundError: no such file: x"}
    returning = Recorder({"read": fails}, errors="return")
    assert returning.tools["read"](path="x") == {"status": "error", "error": "FileNotFoundError: no such file: x"}
    with pytest.raises(ValueError, match="errors"):
        Recorder(errors="ignore")


def test_observations_and_arguments_are_made_json():
    rec = Recorder({"echo": lambda value: value})
    rec.tools["echo"](value=(Path("a/b"), {1, 2}, b"\xff\xfe", float("nan"), object))
    result = rec.steps[0]["observation"]["result"]
    assert result[:4] == ["a/b", [1, 2], "<2 bytes>", "nan"] and result[4].startswith("<class")
    assert jsonable({"k": (1, 2)}) == {"k": [1, 2]}


def test_the_step_cap_stops_the_next_call_unrecorded():
    rec = Recorder({"noop": lambda: None}, step_cap=2)
    rec.tools["noop"]()
    rec.tools["noop"]()
    with pytest.raises(StopRun) as stop:
        rec.tools["noop"]()
    assert stop.value.reason == "step_cap" and len(rec.steps) == 2 and rec.stop_reason == "step_cap"
    assert not isinstance(stop.value, Exception)  # an agent's `except Exception` cannot swallow it


def test_model_tokens_go_to_the_next_step_and_the_rest_to_the_run():
    usage = FakeUsage()
    rec = Recorder({"a": lambda: 1, "b": lambda: 2}, usage=usage)
    rec.tools["a"]()  # before any model call: unknown, absent
    usage.call(100, 10, cached=40)
    usage.call(50, 5, cached=None)
    rec.tools["a"]()  # two calls: summed; the cached count one of them lacks is left out
    rec.tools["b"]()  # no new call: counted at step 1
    usage.call(7, 3, cached=0, model="m-2")  # after the last step: only in the run's totals
    record = rec.record(run_id="r", task_id="t", seed=0, outcome=True)
    s0, s1, s2 = record["steps"]
    assert "tokens_in" not in s0 and "metadata" not in s0
    assert (s1["tokens_in"], s1["tokens_out"]) == (150, 15) and "tokens_cached" not in s1
    assert s2["metadata"] == {"tokens_with_step": 1} and "tokens_in" not in s2
    assert (record["tokens_in"], record["tokens_out"]) == (157, 18) and "tokens_cached" not in record
    assert record["metadata"] == {"model": "m-1", "models": ["m-1", "m-2"]}
    traces = agentab.load_traces([record])
    assert int(traces.runs["tokens_in"].iloc[0]) == 157


def test_unknown_is_absent_never_zero():
    rec = Recorder({"a": lambda: 1})
    rec.tools["a"]()
    record = rec.record(run_id="r", task_id="t", seed=0, outcome=False)
    for key in ("retries", "backtracks", "tokens_in", "tokens_out", "terminal_state", "metadata", "arm"):
        assert key not in record, key
    rec.retry(0)
    rec.backtrack()
    rec.backtrack()
    record = rec.record(run_id="r", task_id="t", seed=0, outcome=False)
    assert (record["retries"], record["backtracks"]) == (0, 2)


def test_the_record_loads_with_zero_rejections_and_bad_fields_are_refused():
    rec = Recorder({"read_file": lambda path: "text"})
    rec.tools["read_file"](path="src/main.py")
    rec.add_step("think", {"about": "x"}, {"status": "ok"}, tokens_in=3, tokens_out=1)
    record = rec.record(run_id="r1", task_id="t1", seed=7, outcome=True, arm="a",
                        terminal_state={"files_created": ["x"]}, metadata={"harness": "h"}, latency_s=1.5)
    traces = agentab.load_traces([record])
    assert len(traces.runs) == 1 and len(traces.rejected) == 0
    assert traces.steps["tool"].tolist() == ["read_file", "think"]
    assert "started_at" not in record["steps"][1]  # a step added by hand gets no made-up times
    with pytest.raises(ValueError, match="not valid"):
        rec.record(run_id="r1", task_id="t1", seed=7, outcome=True, latency_s=-1)
