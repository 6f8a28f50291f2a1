"""The format registry and load_traces' format/fields plumbing (each converted format has its own test file)."""

from __future__ import annotations

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
    path.write_text('{"run_id": "a", "task": "t1"}\n')
    with pytest.raises(TraceError, match=r"runs\.jsonl, line 1"):
        agentab.load_traces(path)
