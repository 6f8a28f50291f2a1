"""Tasks and held-out instances: validation, seeded draws, fixtures from folders, mappings and callables."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from agentab.harness import Draw, Task, instance_rng, write_database


def _randomise(d: Draw):
    return {"name": d.filename("data", ".csv"), "n": d.integer(1, 5), "price": d.number(1, 2),
            "layout": d.layout(["a.py", "b.py"]), "rows": d.rows(3, id=None, colour=["red", "blue"]),
            "order": d.shuffle([1, 2, 3]), "pick": d.choice("xyz"), "word": d.word(4)}


def test_instances_are_seeded_by_task_and_seed_the_same_in_every_process():
    task = Task("t", randomise=_randomise)
    a, b, c = task.instance(1), task.instance(1), task.instance(2)
    assert a.params == b.params and a.params != c.params
    assert Task("other", randomise=_randomise).instance(1).params != a.params
    code = ("from agentab.harness import instance_rng; print(int(instance_rng('t', 1).integers(10**9)))")
    env = {**os.environ, "PYTHONHASHSEED": "123"}
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert int(other.stdout) == int(instance_rng("t", 1).integers(10**9))
    assert a["n"] in range(1, 6) and [r["id"] for r in a["rows"]] == [1, 2, 3]
    assert all(p.endswith(("a.py", "b.py")) for p in a["layout"].values())
    with pytest.raises(TypeError):
        a.params["n"] = 3  # read-only


def test_fixture_from_a_folder_keeps_links_as_links(tmp_path):
    template = tmp_path / "template"
    (template / "src").mkdir(parents=True)
    (template / "src" / "main.py").write_text("x = 1")
    os.symlink("src/main.py", template / "link.py")
    task = Task("folder", fixture=template)
    root = task.build(tmp_path / "sandbox", task.instance(0))
    assert (root / "src" / "main.py").read_text() == "x = 1"
    assert os.readlink(root / "link.py") == "src/main.py"


def test_fixture_from_a_mapping_and_from_callables(tmp_path):
    task = Task("m", fixture={"a/b.txt": "text", "c.bin": b"\x00\x01"})
    root = task.build(tmp_path / "m", task.instance(0))
    assert (root / "a" / "b.txt").read_text() == "text" and (root / "c.bin").read_bytes() == b"\x00\x01"

    def writes(root, inst):
        (root / inst["name"]).write_text(str(inst["n"]))

    def returns(root, inst):
        return {inst["name"]: "returned"}

    for fixture in (writes, returns):
        task = Task("c", fixture=fixture, randomise=_randomise)
        inst = task.instance(3)
        root = task.build(tmp_path / fixture.__name__, inst)
        assert os.listdir(root) == [inst["name"]]


def test_expected_state_and_endpoints_follow_the_instance():
    task = Task("e", randomise=_randomise, expected_state=lambda inst: {"files_created": [inst["name"]]},
                endpoints=lambda inst: {"GET /price": {"price": inst["price"]}})
    one, two = task.instance(1), task.instance(2)
    assert task.expected(one) == {"files_created": [one["name"]]} != task.expected(two)
    assert task.endpoints_of(one) == {"GET /price": {"price": one["price"]}}
    assert Task("none").expected(one) is None and Task("none").endpoints_of(one) is None


@pytest.mark.parametrize("kwargs, error, match", [
    ({"task_id": ""}, TypeError, "task_id"),
    ({"task_id": "a/b"}, ValueError, "may not contain"),
    ({"task_id": True}, TypeError, "task_id"),
    ({"task_id": "t", "fixture": 3}, TypeError, "fixture"),
    ({"task_id": "t", "fixture": "/no/such/folder"}, ValueError, "does not exist"),
    ({"task_id": "t", "fixture": {"../up": "x"}}, ValueError, "relative path"),
    ({"task_id": "t", "fixture": {"a": 3}}, TypeError, "text or bytes"),
    ({"task_id": "t", "expected_state": {"files_made": []}}, ValueError, "unknown keys"),
    ({"task_id": "t", "expected_state": {"files_created": "a.txt"}}, TypeError, "list of paths"),
    ({"task_id": "t", "expected_state": 3}, TypeError, "expected_state"),
    ({"task_id": "t", "randomise": {"a": 1}}, TypeError, "randomise"),
])
def test_bad_tasks_are_one_line_errors(kwargs, error, match):
    with pytest.raises(error, match=match):
        Task(**kwargs)


def test_a_randomise_that_returns_no_mapping_and_a_bad_seed():
    with pytest.raises(TypeError, match="return a mapping"):
        Task("t", randomise=lambda d: [1]).instance(0)
    with pytest.raises(TypeError, match="seed"):
        Task("t").instance("0")


def test_write_database_rows_and_keys(tmp_path):
    import sqlite3

    path = write_database(tmp_path / "db" / "x.db", {"users": [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}]},
                          primary_keys={"users": "id"})
    db = sqlite3.connect(path)
    assert db.execute("SELECT name FROM users ORDER BY id").fetchall() == [("a",), ("b",)]
    assert [r[5] for r in db.execute("PRAGMA table_info(users)")] == [1, 0]
    db.close()
    with pytest.raises(ValueError, match="at least one row"):
        write_database(tmp_path / "y.db", {"empty": []})
