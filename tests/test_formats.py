"""The format registry and load_traces' format/fields plumbing (each converted format has its own test file)."""

from __future__ import annotations

import dataclasses
import json

import pytest

import agentab
from agentab import TraceError, formats

RECORD = {"run_id": "a", "task_id": "t1", "seed": 0, "outcome": True,
          "steps": [{"index": 0, "tool": "ls", "args": {}, "observation": {"status": "ok"}}]}


def test_registry_lists_record_first_and_get_names_the_formats():
    names = list(formats.available())
    assert names[0] == "record"
    assert formats.get("record").read_file is None  # agentab.traces reads its own record
    with pytest.raises(ValueError, match=r"unknown trace format 'nope'; formats: auto, record"):
        formats.get("nope")


#: Every format the registry must hold, in its order (a reader missing from it fails here, never skips).
FORMATS = ("record", "otel", "openai-agents", "tau2", "mini-swe-agent", "swe-agent", "openhands", "claude-code", "openai", "anthropic", "inspect", "atif")


def test_registry_holds_exactly_the_formats_by_name():
    registry = formats.available()
    assert tuple(registry) == FORMATS
    for name in FORMATS:
        assert formats.get(name) is registry[name] and registry[name].name == name


@pytest.mark.parametrize("name", FORMATS[1:])
def test_every_converted_reader_is_reached_through_load_traces(tmp_path, name, monkeypatch):
    """Each registered reader reads its own example, by name and detected, and is the one that ran."""
    fmt = formats.get(name)
    assert fmt.read_file is not None and fmt.sniff(fmt.example.encode(), "runs.json")
    path = tmp_path / "runs.json"
    path.write_text(fmt.example + "\n")
    assert formats.detect(fmt.example.encode(), path.name) == name
    calls = []

    def read_file(*args, **kwargs):
        calls.append(args[0])
        return fmt.read_file(*args, **kwargs)

    every = {**formats.available(), name: dataclasses.replace(fmt, read_file=read_file, read_whole=None)}
    monkeypatch.setattr(formats, "available", lambda: dict(every))
    monkeypatch.setattr(formats, "get", every.__getitem__)
    for given in (name, "auto"):
        traces = agentab.load_traces(path, format=given)
        assert len(traces.runs) == 1 and len(traces.steps) >= 1
        assert traces.formats == ((str(path), name),)
    assert len(calls) == 2


def test_detect_our_record_and_nothing_else():
    assert formats.detect(json.dumps(RECORD).encode()) == "record"
    assert formats.detect(b'{"resourceSpans": []}') != "record"
    assert formats.detect(b"hello") is None


def test_load_traces_says_which_format_it_read(tmp_path):
    path = tmp_path / "runs.jsonl"
    path.write_text(json.dumps(RECORD) + "\n")
    traces = agentab.load_traces(path)
    assert traces.formats == ((str(path), "record"),)
    assert agentab.load_traces([RECORD]).formats == (("<records>", "record"),)
    assert agentab.load_traces(path, format="record").formats == ((str(path), "record"),)


def test_format_and_fields_are_checked(tmp_path):
    path = tmp_path / "runs.jsonl"
    path.write_text(json.dumps(RECORD) + "\n")
    with pytest.raises(TypeError, match=r"`format` == 'nope': must be 'auto' or one of record"):
        agentab.load_traces(path, format="nope")
    with pytest.raises(TypeError, match="agentab's own record has fixed names"):
        agentab.load_traces(path, format="record", fields={"task_id": "x"})
    with pytest.raises(ValueError, match=r"`fields` has 'task', not a run-level field"):
        agentab.load_traces(path, fields={"task": "x"})
    with pytest.raises(ValueError, match=r"`fields\['task_id'\]` must be a non-empty name"):
        agentab.load_traces(path, fields={"task_id": ""})
    with pytest.raises(TypeError, match="`fields` must be a mapping"):
        agentab.load_traces(path, fields=["task_id"])


def test_undetectable_content_is_a_trace_error_naming_the_file(tmp_path):
    path = tmp_path / "notes.jsonl"
    path.write_text("task 1 passed, task 2 failed\n")
    with pytest.raises(TraceError, match=r"notes\.jsonl: cannot tell the trace format from the file's content"):
        agentab.load_traces(path)


def test_json_that_fits_no_format_is_read_as_our_record_so_errors_name_the_field(tmp_path):
    path = tmp_path / "runs.jsonl"
    path.write_text('{"run_id": "a", "task": "t1", "steps": []}\n')
    with pytest.raises(TraceError, match=r"runs\.jsonl, line 1"):
        agentab.load_traces(path)
    path.write_text('{"run_id": "a", "task": "t1"}\n')  # flat records, no steps: a results table, said so
    with pytest.raises(TraceError, match=r"runs\.jsonl: a per-run results table .* agentab\.load_results"):
        agentab.load_traces(path)


def test_a_tool_argument_named_like_another_format_is_not_its_signature(tmp_path):
    # found by tests/test_traces_properties.py: a record whose tool takes a "traj" or "messages" list was read as
    # OpenAI messages and every record rejected ("no messages"); the first record's own keys decide
    records = [
        {"run_id": "r0", "task_id": "t", "seed": 0, "outcome": True, "steps": [
            {"index": 0, "tool": "send", "args": {"messages": [{"role": "user", "content": "hi"}], "traj": []}}]},
        {"run_id": "r1", "task_id": "t", "seed": 1, "outcome": False, "steps": []},
    ]
    path = tmp_path / "runs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    assert formats.detect(path.read_bytes(), path.name) == "record"
    traces = agentab.load_traces(path)
    assert list(traces.runs["run_id"]) == ["r0", "r1"] and len(traces.rejected) == 0
    # a real message list at the top level is still OpenAI's
    messages = {"run_id": "r0", "task_id": "t", "seed": 0, "outcome": True, "steps": [],
                "messages": [{"role": "assistant", "tool_calls": []}]}
    assert formats.detect((json.dumps(messages) + "\n").encode(), "x.jsonl") == "openai"
