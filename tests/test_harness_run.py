"""harness.run: records per task x seed, resume, caps and limits, crashes, outcomes, commands, network, mock API."""

from __future__ import annotations

import json
import os
import socket
import sys
import time
import urllib.request
from pathlib import Path

import pytest

import agentab
from agentab.errors import TraceWarning
from agentab.harness import StopRun, Task, run

TOOLS = {"read": lambda path: Path(path).read_text(), "write": lambda path, text: Path(path).write_text(text)}


def _upper(env):
    name = env.params.get("name", "greeting.txt")
    env.tools["write"](path=name, text=env.tools["read"](path=name).upper())


def _task(task_id="hello"):
    return Task(task_id, fixture=lambda root, inst: {inst["name"]: inst["word"]},
                randomise=lambda d: {"name": d.filename("note", ".txt"), "word": d.word()},
                expected_state=lambda inst: {"files_modified": [inst["name"]], "files": {inst["name"]: inst["word"].upper()}})


def _records(path):
    return [json.loads(line) for line in Path(path).read_text().splitlines()]


def test_tasks_x_seeds_give_records_load_traces_reads_with_no_rejection(tmp_path):
    out = run(_upper, [_task("a"), _task("b")], seeds=3, out=tmp_path / "runs.jsonl", tools=TOOLS, workers=2,
              arm="upper", metadata={"harness": "h1"}, root=tmp_path, progress=False)
    traces = agentab.load_traces(out)
    assert len(traces.runs) == 6 and len(traces.rejected) == 0
    assert sorted(traces.runs["run_id"]) == [f"{t}/{s}/upper" for t in "ab" for s in range(3)]
    assert traces.runs["outcome"].all() and set(traces.runs["harness"]) == {"h1"}
    records = _records(out)
    names = {r["metadata"]["instance"]["name"] for r in records}
    assert len(names) == 6  # every task x seed is a new instance
    for r in records:
        assert r["terminal_state"]["files_modified"] == [r["metadata"]["instance"]["name"]]
        assert r["metadata"]["outcome_source"] == "check" and r["metadata"]["terminated"] is True
        assert [s["tool"] for s in r["steps"]] == ["read", "write"] and r["latency_s"] >= 0


def test_rerunning_skips_recorded_runs_and_a_cut_last_line_is_resumed(tmp_path):
    out = tmp_path / "runs.jsonl"
    run(_upper, [_task()], seeds=2, out=out, tools=TOOLS, root=tmp_path, progress=False)
    first = out.read_text()
    run(_upper, [_task()], seeds=2, out=out, tools=TOOLS, root=tmp_path, progress=False)
    assert out.read_text() == first
    out.write_text(first + first.splitlines()[0][:40])  # a write killed half-way
    run(_upper, [_task()], seeds=3, out=out, tools=TOOLS, root=tmp_path, progress=False)
    assert [r["run_id"] for r in _records(out)] == ["hello/0", "hello/1", "hello/2"]
    agentab.load_traces(out)
    out.write_text("not json\n")
    with pytest.raises(ValueError, match="cannot resume"):
        run(_upper, [_task()], seeds=1, out=out, tools=TOOLS, root=tmp_path, progress=False)


def _looping(env):
    while True:
        env.tools["read"](path=env.params["name"])


def test_the_step_cap_is_recorded_as_non_terminated(tmp_path):
    out = run(_looping, [_task()], seeds=1, out=tmp_path / "o.jsonl", tools=TOOLS, step_cap=4, root=tmp_path,
              progress=False)
    (record,) = _records(out)
    assert len(record["steps"]) == 4 and record["outcome"] is False
    assert record["metadata"]["terminated"] is False and record["metadata"]["stop_reason"] == "step_cap"
    spec = agentab.TrajectorySpec(step_cap=4)
    scores = agentab.score(agentab.load_traces(out), spec)
    assert bool(scores["non_terminated"].iloc[0])


def _sleepy(env):
    env.tools["read"](path=env.params["name"])
    while True:
        time.sleep(0.01)


def _stubborn(env):
    while True:
        try:
            time.sleep(0.01)
        except BaseException:  # an agent that swallows even the harness's stop
            pass


def test_the_time_limit_stops_the_agent_and_a_stubborn_one_is_killed(tmp_path):
    out = tmp_path / "o.jsonl"
    run(_sleepy, [_task()], seeds=1, out=out, tools=TOOLS, time_limit=0.3, root=tmp_path, progress=False)
    run(_stubborn, [_task("stubborn")], seeds=1, out=out, tools=TOOLS, time_limit=0.2, grace=0.3, root=tmp_path,
        progress=False)
    stopped, killed = _records(out)
    assert stopped["metadata"]["stop_reason"] == "time_limit" and stopped["metadata"]["status"] == "stopped"
    assert len(stopped["steps"]) == 1 and stopped["latency_s"] >= 0.3
    assert killed["metadata"]["status"] == "killed" and killed["metadata"]["terminated"] is False
    assert killed["terminal_state"]["files_modified"] == [] and killed["outcome"] is False
    agentab.load_traces(out)
    assert not list(tmp_path.glob("agentab-run-*"))


def _crashes(env):
    _upper(env)
    raise RuntimeError("boom")


def _dies(env):
    env.tools["read"](path=env.params["name"])
    os._exit(3)


def test_a_crashed_or_dead_agent_still_yields_a_record(tmp_path):
    out = tmp_path / "o.jsonl"
    run(_crashes, [_task()], seeds=1, out=out, tools=TOOLS, root=tmp_path, progress=False)
    run(_dies, [_task("dies")], seeds=1, out=out, tools=TOOLS, root=tmp_path, progress=False)
    crashed, died = _records(out)
    assert crashed["metadata"]["status"] == "error" and crashed["metadata"]["error"] == "RuntimeError: boom"
    assert crashed["outcome"] is True  # the check decides: the state it left is right
    assert "RuntimeError" in crashed["metadata"]["traceback"]
    assert died["metadata"]["status"] == "died" and died["metadata"]["exit_code"] == 3
    assert [s["tool"] for s in died["steps"]] == ["read"]  # streamed before it died
    assert len(agentab.load_traces(out).runs) == 2


def _claims(env):
    env.report(outcome=True, note="done")


def test_the_check_decides_the_reported_outcome_is_kept_as_a_claim(tmp_path):
    out = tmp_path / "o.jsonl"
    run(_claims, [_task()], seeds=1, out=out, root=tmp_path, progress=False)
    run(_claims, [Task("no-check")], seeds=1, out=out, root=tmp_path, progress=False)
    with pytest.warns(TraceWarning, match="neither"):
        run(lambda env: None, [Task("nothing")], seeds=1, out=out, root=tmp_path, progress=False)
    checked, reported, nothing = _records(out)
    assert checked["outcome"] is False and checked["metadata"]["claimed_success"] is True
    assert checked["metadata"]["check"] and checked["metadata"]["note"] == "done"
    assert reported["outcome"] is True and reported["metadata"]["outcome_source"] == "report"
    assert nothing["outcome"] is False and nothing["metadata"]["outcome_source"] == "none"
    scores = agentab.score(agentab.load_traces(out))
    assert bool(scores.set_index("task_id").loc["hello", "premature"])


_COMMAND = """
import json, os, pathlib
work = pathlib.Path(os.environ["AGENTAB_WORKDIR"])
params = json.loads(os.environ["AGENTAB_PARAMS"])
name = params["name"]
text = (work / name).read_text()
(work / name).write_text(text.upper())
with open(os.environ["AGENTAB_STEPS"], "a") as f:
    f.write(json.dumps({"tool": "read", "args": {"path": name}, "observation": {"status": "ok"}}) + "\\n")
    f.write("not a step\\n")
    f.write(json.dumps({"tool": "write", "args": {"path": name}, "tokens_in": 5, "why": "fix"}) + "\\n")
pathlib.Path(os.environ["AGENTAB_REPORT"]).write_text(json.dumps({"outcome": True, "seed": os.environ["AGENTAB_SEED"]}))
"""


def test_a_command_agent_reports_steps_through_its_file(tmp_path):
    out = run([sys.executable, "-c", _COMMAND], [_task()], seeds=[5], out=tmp_path / "o.jsonl", root=tmp_path,
              progress=False)
    (record,) = _records(out)
    assert record["outcome"] is True and record["seed"] == 5
    assert [s["tool"] for s in record["steps"]] == ["read", "write"]
    assert record["steps"][1]["metadata"] == {"why": "fix"} and record["steps"][1]["tokens_in"] == 5
    meta = record["metadata"]
    assert meta["exit_code"] == 0 and meta["protocol_errors"]["count"] == 1 and meta["seed"] == "5"
    assert meta["claimed_success"] is True and "sandbox" in meta
    assert ".agentab" not in json.dumps(record["terminal_state"])
    agentab.load_traces(out)


def test_a_failing_command_and_a_step_capped_one(tmp_path):
    out = tmp_path / "o.jsonl"
    with pytest.warns(TraceWarning):  # neither a check nor a report: outcome false, and said so
        run("false", [Task("f")], seeds=1, out=out, root=tmp_path, progress=False, network="allow")
    loop = ("import json, os\nwhile True:\n    open(os.environ['AGENTAB_STEPS'], 'a').write("
            "json.dumps({'tool': 'spin', 'args': {}}) + '\\n')\n")
    with pytest.warns(TraceWarning):
        run([sys.executable, "-c", loop], [Task("g")], seeds=1, out=out, root=tmp_path, step_cap=3, time_limit=20,
            progress=False, network="allow")
    failed, capped = _records(out)
    assert failed["metadata"]["status"] == "error" and failed["metadata"]["exit_code"] == 1
    assert capped["metadata"]["stop_reason"] == "step_cap" and len(capped["steps"]) == 3


def test_the_network_is_blocked_and_recorded_but_the_mock_api_answers(tmp_path):
    listener = socket.create_server(("127.0.0.1", 0))  # stands in for the internet
    listener.settimeout(0.2)
    port = listener.getsockname()[1]

    def agent(env):
        with urllib.request.urlopen(env.api_url + "/price") as answer:
            price = json.load(answer)["price"]
        try:
            socket.create_connection(("127.0.0.1", port), timeout=2)
        except OSError:
            pass
        env.report(outcome=price == env.params["price"])

    task = Task("api", randomise=lambda d: {"price": d.integer(1, 99)},
                endpoints=lambda inst: {"GET /price": {"price": inst["price"]}})
    out = run(agent, [task], seeds=2, out=tmp_path / "o.jsonl", root=tmp_path, progress=False)
    with pytest.raises(socket.timeout):
        listener.accept()  # the listener received nothing
    listener.close()
    for record in _records(out):
        assert record["outcome"] is True
        calls = record["terminal_state"]["external_calls"]
        assert [(c["host"], c["port"], c["action"]) for c in calls] == [("127.0.0.1", port, "blocked")]
        assert [r["path"] for r in record["terminal_state"]["api_requests"]] == ["/price"]


def test_database_changes_are_in_the_terminal_state(tmp_path):
    import sqlite3

    from agentab.harness import write_database

    def fixture(root, inst):
        write_database(root / "shop.db", {"orders": inst["rows"]}, primary_keys={"orders": "id"})

    def agent(env):
        with sqlite3.connect("shop.db") as db:
            db.execute("DELETE FROM orders WHERE id = 1")
            db.execute("UPDATE orders SET qty = qty + 1 WHERE id = 2")
        db.close()

    task = Task("db", fixture=fixture, randomise=lambda d: {"rows": d.rows(3, id=None, qty=lambda x: x.integer(1, 9))},
                expected_state={"databases": {"shop.db": {"orders": {"deleted": 1, "updated": 1, "inserted": 0}}}})
    (record,) = _records(run(agent, [task], seeds=1, out=tmp_path / "o.jsonl", root=tmp_path, progress=False))
    assert record["terminal_state"]["databases"] == {"shop.db": {"orders": {"inserted": 0, "updated": 1, "deleted": 1}}}
    assert record["terminal_state"]["files_modified"] == ["shop.db"] and record["outcome"] is True


@pytest.mark.parametrize("kwargs, match", [
    ({"agent": 3}, "agent"), ({"workers": 0}, "workers"), ({"step_cap": 0}, "step_cap"),
    ({"time_limit": -1}, "time_limit"), ({"network": "open"}, "network"), ({"seeds": 0}, "seeds"),
    ({"tasks": []}, "empty"), ({"tasks": [Task("a"), Task("a")]}, "repeated"), ({"arm": "a/b"}, "arm"),
])
def test_bad_arguments(tmp_path, kwargs, match):
    arguments = {"agent": _upper, "tasks": [_task()], "seeds": 1, "out": tmp_path / "o.jsonl", **kwargs}
    with pytest.raises((TypeError, ValueError), match=match):
        run(arguments.pop("agent"), arguments.pop("tasks"), **arguments)


def test_a_broken_fixture_is_an_error_not_a_record(tmp_path):
    def broken(root, inst):
        raise OSError("disk full")

    with pytest.raises(ValueError, match="fixture could not be built: OSError: disk full"):
        run(_upper, [Task("broken", fixture=broken)], seeds=1, out=tmp_path / "o.jsonl", root=tmp_path,
            progress=False)
    assert not (tmp_path / "o.jsonl").exists() and not list(tmp_path.glob("agentab-run-*"))


_FETCH = """
import json, os, urllib.request
with urllib.request.urlopen(os.environ["AGENTAB_API_URL"] + "/price") as answer:
    price = json.load(answer)["price"]
with open(os.environ["AGENTAB_REPORT"], "w") as f:
    json.dump({"outcome": price == json.loads(os.environ["AGENTAB_PARAMS"])["price"]}, f)
"""


def test_a_command_agent_reaches_the_mock_api_even_without_network(tmp_path):
    task = Task("api", randomise=lambda d: {"price": d.integer(1, 99)},
                endpoints=lambda inst: {"GET /price": {"price": inst["price"]}})
    (record,) = _records(run([sys.executable, "-c", _FETCH], [task], seeds=1, out=tmp_path / "o.jsonl", root=tmp_path,
                             progress=False, time_limit=60))
    assert record["outcome"] is True, record["metadata"]
    assert [r["path"] for r in record["terminal_state"]["api_requests"]] == ["/price"]


def _model_agent(env):
    import httpx

    body = {"id": "c", "object": "chat.completion", "created": 1, "model": "gpt-test", "choices": [],
            "usage": {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150}}
    client = httpx.Client(transport=httpx.MockTransport(lambda request: httpx.Response(200, json=body)))
    for _ in range(2):
        client.post("https://api.openai.example/v1/chat/completions", json={"model": "gpt-test"})
        env.tools["read"](path=env.params["name"])
    client.post("https://api.openai.example/v1/chat/completions", json={"model": "gpt-test"})
    env.report(outcome=True)


def test_model_tokens_are_captured_at_the_transport_and_land_on_the_next_step(tmp_path):
    (record,) = _records(run(_model_agent, [Task("m", fixture={"a.txt": "a"}, randomise=lambda d: {"name": "a.txt"})],
                             seeds=1, out=tmp_path / "o.jsonl", tools=TOOLS, root=tmp_path, progress=False))
    assert [(s["tokens_in"], s["tokens_out"]) for s in record["steps"]] == [(120, 30), (120, 30)]
    assert (record["tokens_in"], record["tokens_out"]) == (360, 90)  # the last call made no step: the run's
    assert record["metadata"]["model"] == "gpt-test" and record["terminal_state"]["external_calls"] == []
    assert int(agentab.load_traces(tmp_path / "o.jsonl").runs["tokens_in"].iloc[0]) == 360


def test_a_bad_reported_value_is_noted_and_the_run_still_recorded(tmp_path):
    def agent(env):
        with pytest.raises(TypeError, match="finite"):
            env.report(outcome=float("nan"))
        env.report(outcome=True, cost_usd=-3)
        os.makedirs(".agentab")  # an in-process agent's own folder of that name is seen (only commands' is not)
        open(".agentab/x", "w").write("x")

    (record,) = _records(run(agent, [Task("t")], seeds=1, out=tmp_path / "o.jsonl", root=tmp_path, progress=False))
    assert record["outcome"] is True and "cost_usd" not in record and "report_error" in record["metadata"]
    assert record["terminal_state"]["files_created"] == [".agentab/x"]
    agentab.load_traces(tmp_path / "o.jsonl")
