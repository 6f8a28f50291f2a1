"""Snapshots and their diff (links as links), SQLite row changes, and the containment of writes."""

from __future__ import annotations

import os
import sqlite3

import pytest

from agentab.harness import Task, run, write_database
from agentab.harness.sandbox import copy_databases, database_changes, databases_diff, diff, is_sqlite, snapshot

import agentab


def test_created_modified_deleted_and_mode_changes(tmp_path):
    (tmp_path / "keep.txt").write_text("same")
    (tmp_path / "edit.txt").write_text("old")
    (tmp_path / "mode.sh").write_text("#!/bin/sh")
    (tmp_path / "gone.txt").write_text("bye")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "deep.txt").write_text("x")
    before = snapshot(tmp_path)
    (tmp_path / "edit.txt").write_text("new")
    os.chmod(tmp_path / "mode.sh", 0o755)
    (tmp_path / "gone.txt").unlink()
    (tmp_path / "sub" / "new.txt").write_text("y")
    (tmp_path / "empty").mkdir()  # folders are not entries
    assert diff(before, snapshot(tmp_path)) == {"files_created": ["sub/new.txt"],
                                                "files_modified": ["edit.txt", "mode.sh"],
                                                "files_deleted": ["gone.txt"]}
    entry = snapshot(tmp_path)["sub/deep.txt"]
    assert entry[0] == "file" and entry[2] == 1 and len(entry[1]) == 64


def test_symlinks_are_recorded_as_links_and_never_followed(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("s")
    root = tmp_path / "root"
    root.mkdir()
    os.symlink(outside / "secret.txt", root / "file_link")
    os.symlink(outside, root / "dir_link")
    before = snapshot(root)
    assert sorted(before) == ["dir_link", "file_link"] and {e[0] for e in before.values()} == {"link"}
    (outside / "secret.txt").write_text("changed")  # the target changes, the link does not
    (outside / "more.txt").write_text("m")
    assert diff(before, snapshot(root)) == {"files_created": [], "files_modified": [], "files_deleted": []}
    os.remove(root / "file_link")
    os.symlink(outside / "more.txt", root / "file_link")  # the same name, another target
    assert diff(before, snapshot(root))["files_modified"] == ["file_link"]


def test_excluded_top_level_entries_are_left_out(tmp_path):
    (tmp_path / ".agentab").mkdir()
    (tmp_path / ".agentab" / "steps.jsonl").write_text("{}")
    (tmp_path / "a").write_text("a")
    assert list(snapshot(tmp_path, exclude=(".agentab",))) == ["a"]


def _db(path, rows, key="id"):
    write_database(path, {"items": rows}, primary_keys={"items": key} if key else None)


def test_rows_inserted_updated_deleted_by_primary_key(tmp_path):
    old, new = tmp_path / "old.db", tmp_path / "new.db"
    _db(old, [{"id": 1, "v": "a"}, {"id": 2, "v": "b"}, {"id": 3, "v": "c"}])
    _db(new, [{"id": 1, "v": "a"}, {"id": 2, "v": "B"}, {"id": 4, "v": "d"}, {"id": 5, "v": "e"}])
    assert is_sqlite(old) and not is_sqlite(tmp_path)
    assert database_changes(str(old), str(new)) == {"items": {"inserted": 2, "updated": 1, "deleted": 1}}
    assert database_changes(None, str(new)) == {"items": {"inserted": 4, "updated": 0, "deleted": 0}}
    assert database_changes(str(old), str(old)) == {}


def test_a_table_without_a_key_is_compared_by_rowid(tmp_path):
    path = tmp_path / "t.db"
    _db(path, [{"v": "a"}, {"v": "b"}], key=None)
    copy = tmp_path / "copy.db"
    copy.write_bytes(path.read_bytes())
    with sqlite3.connect(path) as db:
        db.execute("UPDATE items SET v = 'z' WHERE v = 'a'")
        db.execute("INSERT INTO items VALUES ('c')")
    db.close()
    assert database_changes(str(copy), str(path)) == {"items": {"inserted": 1, "updated": 1, "deleted": 0}}


def test_databases_are_read_from_copies_so_the_sandbox_is_untouched(tmp_path):
    root, store = tmp_path / "root", tmp_path / "store"
    root.mkdir()
    store.mkdir()
    _db(root / "data" / "app.db", [{"id": 1, "v": "a"}])
    (root / "notes.txt").write_text("SQLite format 2 is not a header")
    before = snapshot(root)
    assert copy_databases(root, before, store) == ["data/app.db"]
    with sqlite3.connect(root / "data" / "app.db") as db:
        db.execute("DELETE FROM items")
    db.close()
    after = snapshot(root)
    changes = databases_diff(str(root), str(store), before, after)
    assert changes == {"data/app.db": {"items": {"inserted": 0, "updated": 0, "deleted": 1}}}
    assert snapshot(root) == after  # reading the databases wrote nothing into the sandbox


def _escaping_fixture(outside):
    def build(root, instance):
        os.symlink(outside, root / "out_link")
        (root / "a.txt").write_text("a")
    return build


def _escaping_agent(env):
    import shutil

    attempts = [lambda: open("../escape.txt", "w"), lambda: open("out_link/through_link.txt", "w"),
                lambda: os.remove("out_link/victim.txt"), lambda: shutil.copy("a.txt", "out_link/copy.txt"),
                lambda: sqlite3.connect("out_link/x.db")]
    refused = 0
    for attempt in attempts:
        try:
            attempt()
        except PermissionError:
            refused += 1
    open("inside.txt", "w").write("fine")
    env.report(outcome=refused == len(attempts))


def test_writes_outside_the_sandbox_are_refused_and_recorded(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim.txt").write_text("still here")
    task = Task("escape", fixture=_escaping_fixture(outside))
    out = run(_escaping_agent, [task], seeds=1, out=tmp_path / "runs.jsonl", root=tmp_path, progress=False)
    traces = agentab.load_traces(out)
    record = traces.runs.iloc[0]
    assert bool(record["outcome"])  # every attempt was refused, as the agent saw it
    assert sorted(os.listdir(outside)) == ["victim.txt"] and (outside / "victim.txt").read_text() == "still here"
    assert not (tmp_path / "escape.txt").exists() and not list(tmp_path.glob("agentab-run-*"))
    import json

    state = json.loads(open(out).readline())["terminal_state"]
    events = [r["event"] for r in state["refused_writes"]]
    assert events == ["open for writing", "open for writing", "os.remove",
                                                           "shutil.copyfile", "sqlite3.connect"]
    assert state["files_created"] == ["inside.txt"]


@pytest.mark.parametrize("keep", [False, True])
def test_sandboxes_are_removed_unless_kept(tmp_path, keep):
    def agent(env):
        env.report(outcome=True)
        os.chmod(".", 0o500)  # an agent that takes away its own write permission cannot leave junk behind

    run(agent, [Task("t", fixture={"a": "a"})], seeds=2, out=tmp_path / "o.jsonl", root=tmp_path, keep=keep,
        progress=False)
    left = list(tmp_path.glob("agentab-run-*"))
    assert len(left) == (2 if keep else 0)
    for folder in left:
        os.chmod(folder / "work", 0o700)
