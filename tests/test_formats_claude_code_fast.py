"""Claude Code's fast path (session lines decoded without unread keys, walked once into columns) gives exactly what
the reader's usual path gives: the same runs, steps and rejections, on the real fixtures and on edited copies
(sidechains, usage repeated over streamed lines, errors, usage missing, odd values the fast path leaves alone)."""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path
from typing import Any

import msgspec
import pandas as pd
import pytest

import agentab
from agentab import formats
from agentab.formats import _claude_code_fast, claude_code
from agentab.formats.decode import Prepared, PreparedSteps

DATA = Path(__file__).parent / "data" / "claude_code"
FILES = sorted(DATA.glob("*.jsonl"))


@pytest.fixture(autouse=True)
def _registered(monkeypatch: pytest.MonkeyPatch) -> None:
    """The format registered for the test (as tests/test_formats_claude_code.py does; the registry is the lead's)."""
    registered = formats.available()
    monkeypatch.setattr(formats, "available", lambda: {**registered, "claude-code": claude_code.FORMAT})


def raw_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(text) for text in path.read_text(encoding="utf-8").splitlines() if text.strip()]


def write(path: Path, lines: list[Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def frames(folder: Path, **options: Any) -> list[pd.DataFrame]:
    traces = agentab.load_traces(folder, format="claude-code", strict=False, workers=1, **options)
    return [t.reset_index(drop=True) for t in (traces.runs, traces.steps, traces.rejected)]


def assert_same(folder: Path, monkeypatch: pytest.MonkeyPatch, **options: Any) -> list[pd.DataFrame]:
    fast = frames(folder, **options)
    with monkeypatch.context() as patch:
        patch.setattr(claude_code, "lines_of", lambda body: None)  # the fast path off
        slow = frames(folder, **options)
    for a, b in zip(fast, slow):
        pd.testing.assert_frame_equal(a, b)
    return fast


def identified(lines: list[dict[str, Any]], task: str = "t1", seed: int = 0, outcome: Any = True) -> list[dict[str, Any]]:
    lines = copy.deepcopy(lines)
    lines[0]["agentab"] = {"task_id": task, "seed": seed, "outcome": outcome}
    return lines


def test_real_files_read_the_same_both_ways(tmp_path, monkeypatch):
    for k, path in enumerate(FILES):
        write(tmp_path / f"with-{path.name}", identified(raw_lines(path), task=path.stem, seed=k))
    runs, steps, rejected = assert_same(tmp_path, monkeypatch)
    assert len(runs) == len(FILES) and len(steps) > 0 and len(rejected) == 0


def test_real_files_without_identity_read_the_same_both_ways(tmp_path, monkeypatch):
    """The loader completes the runs (an outcomes table, a path template): the usual path's dicts both ways."""
    for path in FILES:
        write(tmp_path / path.stem / "0.jsonl", raw_lines(path))
    outcomes = pd.DataFrame({"task_id": [p.stem for p in FILES], "seed": 0, "outcome": [True, False, 1.0, 0.5]})
    runs, _, _ = assert_same(tmp_path, monkeypatch, outcomes=outcomes, fields={"path": "{task_id}/{seed}.jsonl"})
    assert len(runs) == len(FILES)
    runs, _, rejected = assert_same(tmp_path, monkeypatch)  # nothing fills them: rejected alike
    assert len(runs) == 0 and len(rejected) == len(FILES)


def test_the_real_files_take_the_fast_path(tmp_path):
    for path in FILES:
        (item,) = claude_code.read_file(write(tmp_path / path.name, identified(raw_lines(path))), claude_code.FIELDS)
        assert type(item.record) is Prepared and item.missing is None
        (item,) = claude_code.read_file(path, claude_code.FIELDS)  # run fields missing: a dict, the loader fills it
        assert isinstance(item.record, dict) and list(item.missing) == ["task_id", "seed", "outcome"]


def test_the_benchmark_sessions_take_the_fast_path(tmp_path, monkeypatch):
    import sys

    sys.path.insert(0, str(Path(__file__).parent.parent / "benchmarks"))
    try:
        from _format_writers import _claude_code_session
    finally:
        sys.path.pop(0)
    records = list(agentab.datasets.example_records(seed=0, n_tasks=4, n_seeds=2))
    for n, rec in enumerate(records):
        path = write(tmp_path / f"{n}.jsonl", _claude_code_session(rec, n))
        (item,) = claude_code.read_file(path, claude_code.FIELDS)
        assert type(item.record) is Prepared
    assert_same(tmp_path, monkeypatch)


def _assistant(session: str, uuid: str, mid: str | None, blocks: list[Any], usage: Any = None,
               stamp: Any = "2026-01-01T10:00:01.000Z", **extra: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "model": "claude-x", "content": blocks}
    if mid is not None:
        message["id"] = mid
    if usage is not None:
        message["usage"] = usage
    line = {"type": "assistant", "sessionId": session, "uuid": uuid, "isSidechain": False, "parentUuid": None,
            "message": message, **extra}
    if stamp is not None:
        line["timestamp"] = stamp
    return line


def _user(session: str, uuid: str, blocks: Any, stamp: Any = "2026-01-01T10:00:02.000Z", **extra: Any) -> dict[str, Any]:
    line = {"type": "user", "sessionId": session, "uuid": uuid, "isSidechain": False, "parentUuid": None,
            "message": {"role": "user", "content": blocks}, **extra}
    if stamp is not None:
        line["timestamp"] = stamp
    return line


def _use(call: str, name: str = "Bash", args: Any = None) -> dict[str, Any]:
    return {"type": "tool_use", "id": call, "name": name, "input": {"command": "ls"} if args is None else args}


def _result(call: str, content: Any = "out", **flags: Any) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": call, "content": content, **flags}


USAGE = {"input_tokens": 5, "output_tokens": 7, "cache_creation_input_tokens": 11, "cache_read_input_tokens": 13,
         "service_tier": "standard"}


def _base(s: str) -> list[dict[str, Any]]:
    """A small session: a streamed response with two calls over two lines (usage repeated, growing), their
    answers, a second response, a text-only one, and lines of other types."""
    return identified([
        {"type": "summary", "summary": "x", "leafUuid": "u0"},
        _user(s, "u1", "do it", stamp="2026-01-01T10:00:00.000Z"),
        _assistant(s, "a1", "m1", [{"type": "thinking", "thinking": "hm", "signature": "sig"}, _use("c1")],
                   {**USAGE, "output_tokens": 1}, requestId="r1"),
        _assistant(s, "a2", "m1", [{"type": "text", "text": "and"}, _use("c2", "Read", {"path": "x"})], USAGE,
                   requestId="r1"),
        _user(s, "u2", [_result("c1", "fine", is_error=False), _result("c2", [{"type": "text", "text": "t"}])],
              toolUseResult={"stdout": "fine", "stderr": ""}),
        {"type": "progress", "data": {"message": {"x": 1}}, "timestamp": "2026-01-01T10:00:02.500Z"},
        _assistant(s, "a3", "m2", [_use("c3", "Grep")], {"input_tokens": 3, "output_tokens": 4},
                   stamp="2026-01-01T10:00:03.125Z"),
        _user(s, "u3", [_result("c3", "Error: no such file", is_error=True)], stamp="2026-01-01T10:00:04.000Z"),
        _assistant(s, "a4", "m3", [{"type": "text", "text": "done"}], {"input_tokens": 2, "output_tokens": 2},
                   stamp="2026-01-01T10:00:05.000Z"),
    ], task=f"task-{s}")


def _edits() -> list[list[dict[str, Any]]]:
    """Copies of the small session, each edited one way (several stay the plain case, the others leave it)."""
    out: list[list[dict[str, Any]]] = []
    for edit in range(48):
        s = f"s{edit}"
        lines = _base(s)
        a1, a2, u2, a3, u3 = lines[2], lines[3], lines[4], lines[6], lines[7]
        if edit == 0:
            pass
        elif edit == 1:  # a sidechain of a named agent and an unnamed one
            a3["isSidechain"] = u3["isSidechain"] = True
            a3["agentId"] = u3["agentId"] = "ag1"
            lines.append({**_assistant(s, "a5", "m9", [_use("c9")]), "isSidechain": True})
        elif edit == 2:  # a sub-agent's own file: every conversation line a sidechain of one agent
            for line in lines[1:]:
                if line.get("type") in ("user", "assistant"):
                    line["isSidechain"], line["agentId"] = True, "solo"
        elif edit == 3:  # a Task call answered with the sub-agent's totals
            a3["message"]["content"] = [_use("c3", "Task", {"prompt": "p"})]
            u3["toolUseResult"] = {"agentId": "sub1", "totalToolUseCount": 4, "totalTokens": 900,
                                   "totalDurationMs": 1200, "content": [{"type": "text", "text": "r"}]}
        elif edit == 4:  # the same, totals beyond 64 bits and of other types
            a3["message"]["content"] = [_use("c3", "Agent")]
            u3["toolUseResult"] = {"totalToolUseCount": 2**64, "totalTokens": "9", "totalDurationMs": -1}
            u3["agentId"] = "from-line"
        elif edit == 5:  # toolUseResult as text
            a3["message"]["content"] = [_use("c3", "Task")]
            u3["toolUseResult"] = "Error: interrupted"
        elif edit == 6:  # a line written twice, a call written twice
            lines.insert(4, copy.deepcopy(a2))
            lines.append(_assistant(s, "a9", "m8", [_use("c1")], {"input_tokens": 1, "output_tokens": 1}))
        elif edit == 7:  # no usage on any line of a response; usage null
            del a1["message"]["usage"]
            del a2["message"]["usage"]
            a3["message"]["usage"] = None
        elif edit == 8:  # usage only on the first streamed line
            del a2["message"]["usage"]
        elif edit == 9:  # no message id: the request id keys the response
            del a1["message"]["id"]
            del a2["message"]["id"]
        elif edit == 10:  # neither: each line its own response
            for line in (a1, a2):
                del line["message"]["id"]
                del line["requestId"]
        elif edit == 11:  # an API error line (no usage counted), with a call
            a3["isApiErrorMessage"] = True
            a3["message"]["model"] = "<synthetic>"
        elif edit == 12:  # costUSD on every response
            for k, line in enumerate((a1, a2, a3, lines[8])):
                line["costUSD"] = 0.1 * (k + 1)
        elif edit == 13:  # costUSD on some
            a3["costUSD"] = 0.25
        elif edit == 14:  # a bad costUSD: rejected
            a3["costUSD"] = -1
        elif edit == 15:  # a negative count: rejected, naming its line
            a2["message"]["usage"]["output_tokens"] = -3
        elif edit == 16:  # a count beyond 64 bits
            a3["message"]["usage"]["input_tokens"] = 2**63
        elif edit == 17:  # a count as a float
            a3["message"]["usage"]["input_tokens"] = 3.0
        elif edit == 18:  # an error without is_error: the text says so
            u3["message"]["content"] = [_result("c3", "Error: failed")]
        elif edit == 19:  # error by key, by status
            u2["message"]["content"] = [_result("c1", "x", error="boom"), _result("c2", "y", status="error")]
        elif edit == 20:  # an unanswered call, a result for no call
            del u3["message"]["content"][0]
            u3["message"]["content"].append(_result("gone"))
        elif edit == 21:  # a result answered twice: rejected
            u3["message"]["content"].append(_result("c3"))
        elif edit == 22:  # times without an offset, with one, with nanoseconds
            a1["timestamp"] = "2026-01-01T10:00:01"
            a3["timestamp"] = "2026-01-01T11:00:03.125+01:00"
            u3["timestamp"] = "2026-01-01T10:00:04.123456789Z"
        elif edit == 23:  # epoch seconds
            a3["timestamp"] = 1767261603.125
        elif edit == 24:  # no times at all, one missing
            for line in lines:
                line.pop("timestamp", None)
        elif edit == 25:
            del a3["timestamp"]
        elif edit == 26:  # a time that is no time, a day the month lacks
            a3["timestamp"] = "yesterday"
            u3["timestamp"] = "2026-02-30T10:00:00.000Z"
        elif edit == 27:  # times out of order
            a3["timestamp"] = "2026-01-01T09:00:00.000Z"
        elif edit == 28:  # arguments as JSON text, as null, as a list
            a1["message"]["content"][1]["input"] = '{"command": "pwd"}'
            a2["message"]["content"][1]["input"] = None
            a3["message"]["content"][0]["input"] = [1]
        elif edit == 29:  # a call without a name: rejected
            del a3["message"]["content"][0]["name"]
        elif edit == 30:  # a content block that is not an object: rejected
            u3["message"]["content"].append("text")
        elif edit == 31:  # message not an object: rejected; content not a list
            a3["message"] = "hello"
        elif edit == 32:
            u2["message"]["content"] = {"type": "text"}
        elif edit == 33:  # several session ids (a resumed session)
            for line in lines[6:]:
                if "sessionId" in line:
                    line["sessionId"] = s + "-b"
        elif edit == 34:  # a key that is itself the dotted path of a field, beside the object
            lines[1]["agentab.task_id"] = "literal"
        elif edit == 35:  # the same, null: the next line's value counts
            lines[0]["agentab.task_id"] = None
            lines[1]["agentab"] = {"task_id": "second", "seed": 1, "outcome": False}
        elif edit == 36:  # whole-number and fractional outcomes, integer ids
            lines[0]["agentab"] = {"task_id": 7, "seed": 3, "outcome": 1}
            lines[1]["sessionId"] = 12
        elif edit == 37:
            lines[0]["agentab"] = {"task_id": "t", "seed": 0, "outcome": 0.25}
        elif edit == 38:  # a seed beyond 64 bits, a bool seed: rejected
            lines[0]["agentab"]["seed"] = 2**64
        elif edit == 39:
            lines[0]["agentab"]["seed"] = True
        elif edit == 40:  # blank lines and Windows line ends are written below; server and MCP tools
            a3["message"]["content"] = [{"type": "server_tool_use", "id": "c3", "name": "web_search", "input": {}}]
            u3["message"]["content"] = [{"type": "web_search_tool_result", "tool_use_id": "c3", "content": []}]
        elif edit == 41:  # a block without a type, a line without a type, a type of another kind
            a3["message"]["content"].append({"id": "zz"})
            lines.append({"sessionId": s})
            lines.append({"type": 5})
        elif edit == 42:  # a parallel response across three lines, interleaved with its results
            lines.insert(5, _assistant(s, "a2b", "m1", [_use("c4", "Glob")], USAGE, requestId="r1"))
            lines.insert(6, _user(s, "u2b", [_result("c4", "ok", is_error=False)]))
        elif edit == 43:  # several models
            a3["message"]["model"] = "claude-y"
        elif edit == 44:  # the message ids and call ids of unusual types
            a3["message"]["id"] = 5
            a3["requestId"] = ["r"]
        elif edit == 45:  # cache counts only
            a3["message"]["usage"] = {"cache_read_input_tokens": 9}
        elif edit == 46:  # a nested content of a result, with an image
            u3["message"]["content"][0]["content"] = [{"type": "image", "source": {"data": "abc"}},
                                                       {"type": "text", "text": "Error: x"}]
            del u3["message"]["content"][0]["is_error"]
        else:  # agentId of a type a set cannot hold
            a3["agentId"] = {"x": 1}
        out.append(lines)
    return out


def test_edited_sessions_read_the_same_both_ways(tmp_path, monkeypatch):
    for k, lines in enumerate(_edits()):
        path = write(tmp_path / f"edit{k:02d}.jsonl", lines)
        if k == 40:
            text = path.read_text().replace("\n", "\r\n", 3)
            path.write_text("\n" + text.replace("\r\n", "\r\n\n   \n", 1))
    runs, steps, rejected = assert_same(tmp_path, monkeypatch)
    assert len(runs) + len(rejected) == len(_edits()) and len(rejected) >= 5 and len(steps) > 100


def test_edited_sessions_read_the_same_with_mappings(tmp_path, monkeypatch):
    """Fields mapped to other keys of the lines (the fast path reads them), and to keys it does not decode."""
    for k, lines in enumerate(_edits()[:12]):
        for line in lines:
            if line.get("type") in ("user", "assistant"):
                line.update(cwd=f"/p/{k}", gitBranch=f"b{k}", version="2.0.1")
        write(tmp_path / f"edit{k:02d}.jsonl", lines)
    for fields in ({"task_id": "cwd", "arm": "gitBranch", "model": "version"},
                   {"seed": "agentab.seed", "cost_usd": "agentab.seed", "harness": "cwd"},
                   {"task_id": "parentUuid"}, {"run_id": "uuid"}, {"task_id": "message.model"}):
        assert_same(tmp_path, monkeypatch, fields=fields)


def test_random_sessions_read_the_same_both_ways(tmp_path, monkeypatch):
    """Random cuts, repeats and shuffles of the real sessions' lines."""
    rng = random.Random(20)
    sources = [raw_lines(path) for path in FILES]
    for k in range(40):
        lines = identified(copy.deepcopy(rng.choice(sources)), task=f"r{k}", seed=k)
        ops = rng.randrange(4)
        for _ in range(ops):
            choice = rng.randrange(4)
            if choice == 0 and len(lines) > 2:
                del lines[rng.randrange(1, len(lines))]
            elif choice == 1:
                lines.insert(rng.randrange(1, len(lines) + 1), copy.deepcopy(rng.choice(lines)))
            elif choice == 2:
                tail = lines[1:]
                rng.shuffle(tail)
                lines[1:] = tail
            else:
                line = rng.choice(lines)
                line["isSidechain"] = not line.get("isSidechain", False)
        write(tmp_path / f"random{k:02d}.jsonl", lines)
    assert_same(tmp_path, monkeypatch)


def test_times_stay_as_written_for_the_decoder_to_parse(tmp_path, monkeypatch):
    """The fast path keeps each step's time as written (Prepared.text_times), whatever its shape: the decoder
    parses them with the chunk's, as the usual path's; only the session's wall time asks for one shape."""
    odd = ["2026-01-01T10:00:01Z", "2026-01-01T11:00:01.000+01:00", "2262-01-01T00:00:00.000Z",
           "2026-13-01T00:00:00.000Z", "2026-01-01T24:00:00.000Z", "2026-W01-1T10:00:00.000Z",
           "\uff12026-01-01T10:00:00.000Z", "1600-01-01T00:00:00.000Z"]
    for k, stamp in enumerate(odd):
        lines = identified(_base(f"odd{k}"), task=f"t{k}")
        lines[2]["timestamp"] = stamp  # the first call's line
        path = write(tmp_path / f"odd{k}.jsonl", lines)
        (item,) = claude_code.read_file(path, claude_code.FIELDS)
        assert type(item.record) is Prepared and item.record.text_times
        assert stamp in item.record.steps.started_ns + item.record.steps.ended_ns
    runs, _, rejected = assert_same(tmp_path, monkeypatch)
    assert len(runs) + len(rejected) == len(odd) and len(rejected) >= 4  # beyond 2262, month 13, hour 24, a week


def test_the_default_fields_are_found_as_the_search_finds_them():
    """default_found reads the default mapping off the lines as _identity's search over their dicts does: the
    first value that is not null, a literal dotted key winning over the agentab object's key (null too)."""
    rng = random.Random(11)
    choices = [msgspec.UNSET, None, "t", 0, 1.5, True]
    for _ in range(400):
        lines = []
        for _ in range(rng.randrange(1, 4)):
            line: dict[str, Any] = {"type": rng.choice(["user", "summary"])}
            if rng.random() < 0.6:
                line["sessionId"] = rng.choice([None, "s1", "s2"])
            agentab_obj = rng.choice([None, [1], "x", {}, *({k: rng.choice(choices[1:]) for k in keys}
                                                            for keys in (["task_id"], ["task_id", "seed", "outcome"]))])
            if agentab_obj is not None or rng.random() < 0.3:
                line["agentab"] = agentab_obj
            for name in ("task_id", "seed", "outcome"):
                value = rng.choice(choices)
                if value is not msgspec.UNSET:
                    line[f"agentab.{name}"] = value
            lines.append(line)
        source = _claude_code_fast.lines_of("".join(json.dumps(x) + "\n" for x in lines).encode())
        keys = _claude_code_fast.plain_fields(claude_code.FIELDS)
        dicts = _claude_code_fast.Dicts(source, keys)
        want = {}
        for key, name in claude_code.FIELDS.items():
            for d in dicts:
                value = formats._base.lookup(d, name)
                if value is not formats._base.MISSING and value is not None:
                    want[key] = (name, value)
                    break
        assert _claude_code_fast.default_found(source.lines, claude_code.FIELDS) == want, lines


def test_one_shape_of_time_is_known_by_each_time():
    shaped = ["2026-01-01T10:00:01.000Z", "1999-12-31T23:59:59.999Z"]
    assert _claude_code_fast.uniform(shaped) and _claude_code_fast.uniform([])
    # two times that join into the shape twice, neither of it: not one shape
    assert not _claude_code_fast.uniform(["2026-01-01T10:00:01.000", "Z2026-01-01T10:00:01.000Z"])
    assert not _claude_code_fast.uniform(shaped + ["2026-01-01T10:00:01Z"])


def test_no_steps_and_empty_files_read_the_same(tmp_path, monkeypatch):
    write(tmp_path / "text-only.jsonl", identified([_user("s", "u1", "hi"), _assistant("s", "a1", "m1", [], USAGE)]))
    write(tmp_path / "others-only.jsonl", [{"type": "summary", "sessionId": "q", "agentab": {"task_id": "t",
                                                                                              "seed": 0, "outcome": 1}}])
    (tmp_path / "empty.jsonl").write_text("\n\n")
    (tmp_path / "bad.jsonl").write_text('{"type": "user"}\n{not json\n')
    (tmp_path / "array.jsonl").write_text('[1, 2]\n')
    two = json.dumps(_base("two")[1])  # two objects on a line beside a blank one: as many objects as lines
    (tmp_path / "two-on-a-line.jsonl").write_text(two + two.replace('"u1"', '"u9"') + "\n\n" + two + "\n")
    split = two.replace(", ", ",\n", 1)  # one object over two lines, two on another: as many objects as lines
    (tmp_path / "split-and-two.jsonl").write_text(split + " " + two + "\n" + two.replace('"u1"', '"u9"') + "\n")
    assert_same(tmp_path, monkeypatch)
    assert claude_code._fast_item(b"", claude_code.FIELDS, ()) is None


def test_columns_have_the_decoders_shape(tmp_path):
    (item,) = claude_code.read_file(write(tmp_path / "s.jsonl", _edits()[1]), claude_code.FIELDS)
    steps = item.record.steps
    assert isinstance(steps, PreparedSteps) and steps.kind is None and steps.tokens_reasoning is None
    assert steps.agent == [None, None, "ag1", "sidechain"] and steps.parallel[:2] == ["m1", "m1"]
    assert steps.metadata[1]["tokens_with_step"] == 0 and steps.tokens_in[0] == 5 + 11 + 13
