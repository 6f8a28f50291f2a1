"""load_traces(engine="dask") on a LocalCluster of two worker processes: the in-memory numbers exactly."""

from __future__ import annotations

import pandas as pd
import pytest
from conftest import make_record, write_jsonl

import agentab
from agentab import TraceError, TrajectorySpec, load_traces, score

distributed = pytest.importorskip("distributed")

SPEC = TrajectorySpec(required=("edit_file", "run_tests"), step_budget=15)
METRICS = ["outcome", "tokens", "rubric", "n_steps"]


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                                  memory_limit="1GiB") as cluster, distributed.Client(cluster) as connected:
        yield connected


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """20 files of the example experiment (one per task), and one with a bad record and a duplicate id."""
    out = tmp_path_factory.mktemp("dask")
    traces = agentab.datasets.example_experiment(seed=3, n_tasks=20, n_seeds=3)
    records = traces.to_records()
    for k in range(20):
        write_jsonl(out / f"task{k:02d}.jsonl", [r for r in records if r["task_id"] == f"t{k:03d}"])
    write_jsonl(out / "task20.jsonl", ["{oops", make_record(records[0]["run_id"], task_id="t000")])
    return out


@pytest.mark.slow
def test_dask_scores_and_comparison_equal_the_in_memory_ones(client, folder):
    memory = load_traces(folder, strict=False)
    dask = load_traces(folder, strict=False, engine="dask", scheduler=client)
    assert dask.engine == "dask" and dask.n_batches == 21
    pd.testing.assert_frame_equal(memory.rejected, dask.rejected)
    assert (memory.n_read, memory.sources, len(memory), memory.arms) == (dask.n_read, dask.sources, len(dask),
                                                                         dask.arms)
    a, b = score(memory, SPEC), score(dask, SPEC)
    pd.testing.assert_frame_equal(a, b)
    assert a.attrs == b.attrs
    first = agentab.compare(a, metrics=METRICS, n_resamples=499, seed=2)
    second = agentab.compare(b, metrics=METRICS, n_resamples=499, seed=2)
    pd.testing.assert_frame_equal(first.table, second.table)
    assert first.decision == second.decision


def test_a_scheduler_address_and_blocks_of_a_large_file(client, folder):
    path = folder / "task03.jsonl"
    memory = score(load_traces(path), SPEC)
    dask = load_traces(path, engine="dask", scheduler=client.scheduler.address, batch_size=4_000)
    assert dask.n_batches >= 3
    pd.testing.assert_frame_equal(memory, score(dask, SPEC))


def test_a_strict_load_raises_the_in_memory_error(client, folder):
    with pytest.raises(TraceError) as in_memory:
        load_traces(folder)
    with pytest.raises(TraceError) as on_dask:
        load_traces(folder, engine="dask", scheduler=client)
    assert str(on_dask.value) == str(in_memory.value)


def test_without_a_client_the_local_scheduler_runs_the_tasks(folder, monkeypatch):
    monkeypatch.setattr(distributed, "get_client", lambda: (_ for _ in ()).throw(ValueError("no client")))
    path = folder / "task05.jsonl"
    traces = load_traces(path, engine="dask", batch_size=5_000)
    assert traces._runner.client is None
    pd.testing.assert_frame_equal(score(load_traces(path), SPEC), score(traces, SPEC))


def test_a_scheduler_of_the_wrong_type_is_refused(folder):
    with pytest.raises(TypeError, match="`scheduler` must be None, a Dask scheduler's address"):
        load_traces(folder, engine="dask", scheduler=3)
