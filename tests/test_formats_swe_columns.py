"""The column paths of SWE-agent and mini-SWE-agent (runs built as ``Prepared``, also those awaiting their
outcome or task from the loader) give exactly the tables of the readers' usual paths: on the benchmark's files
(the shape of the real fixtures), with the outcome from the file, from ``fields=``, from an outcomes table or
from the path, and on edge cases each path must read alike (or reject alike)."""

from __future__ import annotations

import copy
import importlib.util
import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import agentab
from agentab.formats import mini_swe_agent, swe_agent
from agentab.formats._base import MISSING, lookup
from agentab.formats._fast_path import Slow
from agentab.formats.decode import Prepared, PreparedSteps

ROOT = Path(__file__).parent.parent
SWE_DATA = ROOT / "tests" / "data" / "swe_agent"
FUNCTION_CALLING = SWE_DATA / "6e44b9__sweagenttestrepo-1c2844.traj"
MINI_V1 = ROOT / "tests" / "data" / "mini_swe_agent" / "django__django-12143.traj.json"


def _writers() -> Any:
    """The benchmark's writers (benchmarks/_format_writers.py), loaded from their file."""
    spec = importlib.util.spec_from_file_location("_format_writers", ROOT / "benchmarks" / "_format_writers.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


@pytest.fixture(scope="module")
def bench_records() -> list[dict[str, Any]]:
    return list(agentab.datasets.example_records(seed=3, n_tasks=6, n_seeds=2))


def tables(source: Any, fmt: str, **kwargs: Any) -> list[pd.DataFrame]:
    traces = agentab.load_traces(source, format=fmt, strict=False, workers=1, **kwargs)
    return [t.reset_index(drop=True) for t in (traces.runs, traces.steps, traces.rejected)]


def _no_swe_columns(*args: Any) -> Any:
    raise Slow


def assert_same(source: Any, fmt: str, monkeypatch: pytest.MonkeyPatch, **kwargs: Any) -> list[pd.DataFrame]:
    """The tables with the column path, and with it off (the usual walk; for SWE-agent also decoding whole)."""
    fast = tables(source, fmt, **kwargs)
    offs = ([("_fast_item", _no_swe_columns)], [("_trimmed", lambda raw, fields: None)]) if fmt == "swe-agent" \
        else ([("trajectory", lambda body: None)],)
    module = swe_agent if fmt == "swe-agent" else mini_swe_agent
    for off in offs:
        with monkeypatch.context() as patch:
            for name, value in off:
                patch.setattr(module, name, value)
            slow = tables(source, fmt, **kwargs)
        for a, b in zip(fast, slow):
            pd.testing.assert_frame_equal(a, b)
    return fast


# --------------------------------------------------------------------------- #
# SWE-agent
# --------------------------------------------------------------------------- #
def _swe_folder(tmp_path: Path, docs: dict[str, dict[str, Any]]) -> Path:
    folder = tmp_path / "swe"
    for name, doc in docs.items():
        (folder / name).mkdir(parents=True)
        (folder / name / f"{name}.traj").write_text(json.dumps(doc, indent=2))
    return folder


def test_swe_agent_bench_files_take_the_column_path_and_read_the_same(tmp_path, monkeypatch, bench_records):
    writers = _writers()
    folder = _swe_folder(tmp_path, {rec["run_id"]: writers._swe_agent_traj(rec) for rec in bench_records})
    first = next(folder.rglob("*.traj"))
    (item,) = swe_agent.FORMAT.read_file(first, {**swe_agent.FIELDS, **writers.SWE_AGENT_FIELDS})
    assert type(item.record) is Prepared and item.missing is None and item.record.terminal_state is not None
    runs, steps, rejected = assert_same(folder, "swe-agent", monkeypatch, fields=writers.SWE_AGENT_FIELDS)
    assert len(runs) == len(bench_records) and rejected.empty
    assert len(steps) == sum(len(rec["steps"]) for rec in bench_records)


def test_swe_agent_runs_awaiting_their_outcome_read_the_same(tmp_path, monkeypatch, bench_records):
    writers = _writers()
    docs = {}
    for rec in bench_records:
        doc = writers._swe_agent_traj(rec)
        del doc["outcome"]
        docs[rec["run_id"]] = doc
    folder = _swe_folder(tmp_path, docs)
    (item,) = swe_agent.FORMAT.read_file(next(folder.rglob("*.traj")), dict(swe_agent.FIELDS))
    assert type(item.record) is Prepared and item.record.outcome is None and list(item.missing) == ["outcome"]
    verdicts = pd.DataFrame({"run_id": sorted(p.as_posix() for p in folder.rglob("*.traj")), "outcome": 1.0})
    verdicts.loc[::2, "outcome"] = 0.0
    assert_same(folder, "swe-agent", monkeypatch, outcomes=verdicts)
    assert_same(folder, "swe-agent", monkeypatch)  # every run rejected for its outcome, alike
    assert_same(folder, "swe-agent", monkeypatch, fields={"path": "{task_id}/*.traj", "outcome": "info.resolved"},
                outcomes=pd.DataFrame({"task_id": sorted(docs), "outcome": True}))


def _swe_edits() -> dict[str, dict[str, Any]]:
    raw = json.loads(FUNCTION_CALLING.read_text())
    raw["seed"], raw["outcome"] = 1, True
    step = next(k for k, item in enumerate(raw["history"]) if item.get("tool_calls"))
    edits: dict[str, Any] = {
        "plain": lambda d: None,
        "int_time": lambda d: d["trajectory"][0].update(execution_time=2),
        "not_run": lambda d: d["trajectory"][0].update(execution_time=0, observation=""),
        "timeout": lambda d: d["trajectory"][0].update(
            observation="The command 'sleep 99' was cancelled because it took more than 30 seconds."),
        "two_calls": lambda d: d["history"][step]["tool_calls"].append(copy.deepcopy(d["history"][step]["tool_calls"][0])),
        "dict_args": lambda d: d["history"][step]["tool_calls"][0]["function"].update(arguments={"a": 1}),
        "null_args": lambda d: d["history"][step]["tool_calls"][0]["function"].update(arguments="null"),
        "blank_args": lambda d: d["history"][step]["tool_calls"][0]["function"].update(arguments="  "),
        "bad_args": lambda d: d["history"][step]["tool_calls"][0]["function"].update(arguments="{oops"),
        "list_args": lambda d: d["history"][step]["tool_calls"][0]["function"].update(arguments="[1]"),
        "no_name": lambda d: d["history"][step]["tool_calls"][0]["function"].update(name=""),
        "no_history": lambda d: d.pop("history"),
        "null_history": lambda d: d.update(history=None),
        "empty_action": lambda d: d["trajectory"][0].update(action="  "),
        "null_observation": lambda d: d["trajectory"][0].update(observation=None),
        "no_time": lambda d: d["trajectory"][0].pop("execution_time"),
        "bad_time": lambda d: d["trajectory"][0].update(execution_time=True),
        "replay_tokens": lambda d: d["info"]["model_stats"].update(tokens_sent=0),
        "float_tokens": lambda d: d["info"]["model_stats"].update(tokens_sent=900.0),
        "huge_tokens": lambda d: d["info"]["model_stats"].update(tokens_sent=2**63),
        "no_stats": lambda d: d["info"].pop("model_stats"),
        "patch": lambda d: d["info"].update(submission="diff --git a/x b/x\nnew file mode 100644\n@@ -0,0 +1 @@\n"
                                                       "diff --git a/y b/y\ndeleted file mode 100644\n"),
        "no_patch": lambda d: d["info"].pop("submission", None),
        "bool_seed": lambda d: d.update(seed=True),
        "huge_seed": lambda d: d.update(seed=2**63),
        "text_seed": lambda d: d.update(seed="1"),
        "int_outcome": lambda d: d.update(outcome=0),
        "float_outcome": lambda d: d.update(outcome=0.5),
        "no_seed": lambda d: d.pop("seed"),
        "text_replay": lambda d: d.update(replay_config=json.dumps(d["replay_config"])),
        "no_task": lambda d: d.update(replay_config={}),
        "entry_not_object": lambda d: d["trajectory"].append(3),
        "extra_key": lambda d: d.update(extra_key=1),
        "no_trajectory": lambda d: d.pop("trajectory"),
    }
    out = {}
    for name, edit in edits.items():
        doc = copy.deepcopy(raw)
        edit(doc)
        out[name] = doc
    return out


@pytest.mark.parametrize("how", ["fields", "table", "none"])
def test_swe_agent_edited_files_read_the_same(tmp_path, monkeypatch, how):
    folder = _swe_folder(tmp_path, _swe_edits())
    if how == "fields":
        assert_same(folder, "swe-agent", monkeypatch, fields={"seed": "seed", "outcome": "outcome"})
    elif how == "table":  # a verdict beside the file's own: outcome_in_file
        names = sorted(p.as_posix() for p in folder.rglob("*.traj"))
        runs = assert_same(folder, "swe-agent", monkeypatch, fields={"seed": "seed", "outcome": "outcome"},
                           outcomes=pd.DataFrame({"run_id": names, "outcome": True}))[0]
        # an integer outcome takes the column path and is kept as read (0, not 0.0), as the usual path keeps it
        (item,) = swe_agent.FORMAT.read_file(folder / "int_outcome" / "int_outcome.traj",
                                      {**swe_agent.FIELDS, "seed": "seed", "outcome": "outcome"})
        assert type(item.record) is Prepared and type(item.record.outcome) is int
        kept = json.loads(runs.set_index("run_id").loc[(folder / "int_outcome" / "int_outcome.traj").as_posix(),
                                                        "metadata"])["outcome_in_file"]
        assert kept == 0 and type(kept) is int
    else:
        assert_same(folder, "swe-agent", monkeypatch)


# --------------------------------------------------------------------------- #
# mini-SWE-agent
# --------------------------------------------------------------------------- #
def _mini_folder(tmp_path: Path, docs: dict[str, dict[str, Any]]) -> Path:
    folder = tmp_path / "mini"
    folder.mkdir(parents=True)
    for name, doc in docs.items():
        (folder / f"{name}.traj.json").write_text(json.dumps(doc, indent=2))
    return folder


def test_mini_swe_agent_bench_files_read_the_same(tmp_path, monkeypatch, bench_records):
    writers = _writers()
    docs = {rec["run_id"]: writers._mini_swe_agent_traj(rec) for rec in bench_records}
    folder = _mini_folder(tmp_path, docs)
    runs, _, rejected = assert_same(folder, "mini-swe-agent", monkeypatch)
    assert len(runs) == len(bench_records) and rejected.empty
    for doc in docs.values():  # the outcome from a table (the agent's own file has none), or from the path
        del doc["outcome"]
    folder = _mini_folder(tmp_path / "without", docs)
    (item,) = mini_swe_agent.read_file(next(folder.glob("*.traj.json")), mini_swe_agent.FIELDS)
    assert type(item.record) is Prepared and list(item.missing) == ["outcome"]
    verdicts = pd.DataFrame({"run_id": [doc["run_id"] for doc in docs.values()], "outcome": 0.0})
    assert_same(folder, "mini-swe-agent", monkeypatch, outcomes=verdicts)
    assert_same(folder, "mini-swe-agent", monkeypatch)  # rejected for the outcome, alike
    assert_same(folder, "mini-swe-agent", monkeypatch, fields={"path": "{run_id}.traj.json", "outcome": "nope"},
                outcomes=pd.DataFrame({"run_id": sorted(docs), "outcome": True}))


def _mini_edits() -> dict[str, dict[str, Any]]:
    raw = json.loads(MINI_V1.read_text())
    assistant = next(k for k, m in enumerate(raw["messages"]) if m["role"] == "assistant")
    edits: dict[str, Any] = {
        "plain": lambda d: None,
        "int_outcome": lambda d: d.update(outcome=0),
        "bool_outcome": lambda d: d.update(outcome=False),
        "float_outcome": lambda d: d.update(outcome=0.25),
        "no_seed": lambda d: d.pop("seed", None),
        "seed": lambda d: d.update(seed=4),
        "no_task": lambda d: d.pop("instance_id"),
        "timeout": lambda d: d["messages"][assistant + 1].update(
            content="The last command <command>sleep 9</command> timed out and has been killed."),
        "head_tail": lambda d: d["messages"][assistant + 1].update(
            content="<returncode>0</returncode>\n<output_head>\na\n</output_head>\n<elided>\n<output_tail>\nb\n"
                    "</output_tail>"),
        "nonzero": lambda d: d["messages"][assistant + 1].update(content="<returncode>2</returncode>\n<output>\nx\n"
                                                                         "</output>"),
        "two_actions": lambda d: d["messages"][assistant].update(
            content=d["messages"][assistant]["content"] + "\n```bash\nls\n```"),
        "cost_zero": lambda d: d["messages"][assistant]["extra"].update(cost=0),
        "usage_names": lambda d: d["messages"][assistant]["extra"]["response"].update(
            usage={"input_tokens": 5, "output_tokens": 2}),
        "usage_key": lambda d: d["messages"][assistant]["extra"]["response"]["usage"].update(foo=1),
        "usage_cost": lambda d: (d["messages"][assistant]["extra"].pop("cost", None),
                                 d["messages"][assistant]["extra"]["response"]["usage"].update(cost=0.5)),
        "usage_null": lambda d: d["messages"][assistant]["extra"]["response"].update(usage=None),
        "usage_text": lambda d: d["messages"][assistant]["extra"]["response"].update(usage="5"),
        "response_null": lambda d: d["messages"][assistant]["extra"].update(response=None),
        "extra_null": lambda d: d["messages"][assistant].update(extra=None),
        "no_extra": lambda d: d["messages"][assistant].pop("extra"),
        "no_content": lambda d: d["messages"][assistant + 1].pop("content"),
        "own_regex": lambda d: d["info"]["config"]["agent"].update(action_regex=r"```sh\s*\n(.*?)\n```"),
    }
    out = {}
    for name, edit in edits.items():
        doc = {**copy.deepcopy(raw), "outcome": True}
        edit(doc)
        out[name] = doc
    return out


@pytest.mark.parametrize("table", [False, True])
def test_mini_swe_agent_edited_files_read_the_same(tmp_path, monkeypatch, table):
    docs = _mini_edits()
    folder = _mini_folder(tmp_path, docs)
    if not table:
        assert_same(folder, "mini-swe-agent", monkeypatch)
        return
    verdicts = pd.DataFrame({"run_id": sorted(str(p) for p in folder.glob("*.traj.json")), "outcome": True})
    assert_same(folder, "mini-swe-agent", monkeypatch, outcomes=verdicts)  # beside the file's own outcome


def test_prepared_to_record_gives_the_terminal_state():
    steps = PreparedSteps(["ls"], [{"command": "ls"}], [{"content": "a"}], [None], [None], [None], [None], [None])
    run = Prepared("r", "t", 0, None, True, None, None, {"harness": "x"}, steps)
    assert "terminal_state" not in run.to_record()
    state = {"files_created": [], "files_modified": ["a"], "files_deleted": []}
    record = run._replace(terminal_state=state).to_record()
    assert record["terminal_state"] == state and record["steps"][0]["tool"] == "ls"


_KEYS = st.sampled_from(["a", "b", "0", "1", "a.b", "*", "", "x.y"])
_JSON = st.recursive(st.none() | st.integers(), lambda inner: st.lists(inner, max_size=3)
                     | st.dictionaries(_KEYS, inner, max_size=3), max_leaves=8)
_PATHS = st.lists(st.sampled_from(["a", "b", "0", "1", "*", "", "x", "y"]), min_size=1, max_size=3).map(".".join) | _KEYS


@settings(max_examples=500, suppress_health_check=list(HealthCheck), deadline=None)
@given(st.dictionaries(_KEYS, _JSON, max_size=4), _PATHS)
def test_lookup_walk_without_star_is_the_candidate_walk(obj, path):
    # lookup walks one value when the path has no `*` (the readers' run fields); the reference is the walk over
    # lists of candidates that lookup does with a `*`
    def candidates(obj, path):
        if isinstance(obj, dict) and path in obj:
            return obj[path]
        values, star = [obj], False
        for part in path.split("."):
            found = []
            for value in values:
                if part == "*" and isinstance(value, dict):
                    found.extend(value.values())
                    star = True
                elif isinstance(value, dict) and part in value:
                    found.append(value[part])
                elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
                    found.append(value[int(part)])
            if not found:
                return MISSING
            values = found
        return values if star else values[0]

    found, expected = lookup(obj, path), candidates(obj, path)
    assert found is expected or found == expected
