"""Run an agent over tasks x seeds, one fresh sandbox per run, and write one trace record per run.

:func:`run` is the harness's entry point (``agentab run`` on the command line). Each run is forked into a
worker process of its own (so the write guard's audit hook, which cannot be removed, never reaches the
caller's process, and a crash or a hang stays in the worker); up to ``workers`` run at once.

What a record says about how its run ended (``metadata``)
----------------------------------------------------------
``status``
    ``"ok"`` (the agent returned), ``"error"`` (it raised: ``error`` and ``traceback`` hold what; a
    command's non-zero exit), ``"stopped"`` (the harness stopped it at ``step_cap`` or ``time_limit``),
    ``"killed"`` (it ignored the time limit and its worker was killed ``grace`` seconds later), or
    ``"died"`` (its worker process died: ``exit_code``).
``terminated`` and ``stop_reason``
    ``terminated`` is ``false`` when the harness ended the run (``stop_reason`` ``"step_cap"``,
    ``"time_limit"``, ``"killed"``, ``"worker_died"``), ``true`` when the agent ended it itself
    (``"agent_done"``, or ``"error"`` for a crash). A run stopped at the step cap has exactly
    ``step_cap`` steps; a call interrupted by the time limit has observation ``null``. Give the same
    ``step_cap`` and ``time_limit`` to the scoring spec (:class:`agentab.TrajectorySpec`) and
    ``non_terminated`` flags these runs.
``outcome_source``
    ``"check"``: the task's ``expected_state`` decided the outcome on the terminal state (the agent's own
    ``env.report(outcome=)``, if any, is kept as ``claimed_success``; failed parts in ``check``);
    ``"report"``: no expected state, so the reported outcome is the outcome; ``"none"``: neither, so the
    outcome is recorded as ``false`` (and a warning says how many). A crashed, stopped or killed run is
    judged the same way: the check sees the state it left.

``metadata.instance`` holds the instance's randomised parameters; ``terminal_state`` the diff
(``files_created``, ``files_modified``, ``files_deleted``), ``databases`` (SQLite row changes),
``external_calls`` (the network policy's record; absent with ``network="allow"``, which records nothing),
``api_requests`` (the mock server's requests) and ``refused_writes`` (writes outside the sandbox refused).

Output and resume
-----------------
Records are appended to ``out`` as whole JSON lines, each followed by ``flush`` and ``fsync``, by the
calling process alone. A kill can leave at most a partial last line: the next call cuts it off (it was
never a complete record) and appends after it. The next call also skips every run whose ``run_id``
(``task/seed``, or ``task/seed/arm`` with an arm) is already in ``out``, so an interrupted experiment is
resumed by running the same call again.
"""

from __future__ import annotations

import json
import multiprocessing
import multiprocessing.connection
import os
import shutil
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from agentab.errors import TraceWarning
from agentab.errors import HarnessError
from agentab.harness._worker import Job, _read_json, assemble, execute, is_command, read_steps
from agentab.harness.network import _check_mode
from agentab.harness.fixtures import Task

__all__ = ["run", "run_id", "GRACE_S"]

#: Seconds a worker gets beyond its time limit before it is killed.
GRACE_S = 5.0


def run_id(task_id: str, seed: int, arm: str | None = None) -> str:
    """The run id of a task, seed and arm: ``task/seed`` or ``task/seed/arm``.

    Examples
    --------
    >>> run_id("fix-1", 3), run_id("fix-1", 3, "guard")
    ('fix-1/3', 'fix-1/3/guard')
    """
    return f"{task_id}/{int(seed)}" + (f"/{arm}" if arm else "")


def _seeds(seeds: Any) -> list[int]:
    if isinstance(seeds, bool):
        raise TypeError(f"`seeds` must be a count or a list of integers, got {seeds!r}")
    if isinstance(seeds, int):
        if seeds < 1:
            raise HarnessError(f"`seeds` must be at least 1, got {seeds}")
        return list(range(seeds))
    values = list(seeds)
    if not values or any(isinstance(s, bool) or not isinstance(s, int) for s in values):
        raise TypeError(f"`seeds` must be a count or a non-empty list of integers, got {seeds!r}")
    if len(set(values)) != len(values):
        raise HarnessError("`seeds` has repeated values")
    return values


def _tasks(tasks: Any) -> list[Task]:
    items = [tasks] if isinstance(tasks, Task) else list(tasks.values() if isinstance(tasks, Mapping) else tasks)
    if not items:
        raise HarnessError("`tasks` is empty")
    for item in items:
        if not isinstance(item, Task):
            raise TypeError(f"`tasks` must hold agentab.harness.Task objects, got {type(item).__name__}")
    ids = [t.task_id for t in items]
    if len(set(ids)) != len(ids):
        raise HarnessError(f"task ids are repeated: {sorted({i for i in ids if ids.count(i) > 1})}")
    return items


def _check(agent: Any, workers: Any, time_limit: Any, step_cap: Any, network: Any, arm: Any) -> None:
    if not callable(agent) and not is_command(agent):
        raise TypeError(f"`agent` must be a callable agent(env) or a command (a list of arguments or a string), "
                        f"got {type(agent).__name__}")
    if is_command(agent) and not agent:
        raise HarnessError("`agent` is an empty command")
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise HarnessError(f"`workers` must be a positive integer, got {workers!r}")
    if step_cap is not None and (isinstance(step_cap, bool) or not isinstance(step_cap, int) or step_cap < 1):
        raise HarnessError(f"`step_cap` must be a positive integer or None, got {step_cap!r}")
    if time_limit is not None and (isinstance(time_limit, bool) or not isinstance(time_limit, (int, float))
                                   or not time_limit > 0 or time_limit == float("inf")):
        raise HarnessError(f"`time_limit` must be a positive number of seconds or None, got {time_limit!r}")
    _check_mode(network, "network")
    if arm is not None and (not isinstance(arm, str) or not arm or "/" in arm):
        raise HarnessError(f"`arm` must be non-empty text without '/', got {arm!r}")


def recorded_ids(out: Path) -> set[str]:
    """The run ids already in ``out``; a partial last line (a killed write) is cut off the file."""
    if not out.exists():
        return set()
    with open(out, "rb+") as f:
        data = f.read()
        complete = data.rfind(b"\n") + 1
        if complete < len(data):
            f.truncate(complete)
    ids = set()
    for number, line in enumerate(data[:complete].splitlines(), 1):
        if not line.strip():
            continue
        try:
            ids.add(str(json.loads(line)["run_id"]))
        except (ValueError, KeyError, TypeError):
            raise HarnessError(f"{out}, line {number}: not a trace record the harness wrote (cannot resume into it)") \
                from None
    return ids


def _append(out: Path, record: Mapping[str, Any]) -> None:
    line = (json.dumps(record, separators=(",", ":"), ensure_ascii=False) + "\n").encode("utf-8")
    fd = os.open(out, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        view = memoryview(line)
        while view:  # one O_APPEND write per call; a short write continues where it stopped
            view = view[os.write(fd, view):]
        os.fsync(fd)
    finally:
        os.close(fd)


def _fallback(job: Job, exit_code: int | None, killed: bool) -> dict[str, Any]:
    """The record of a worker that was killed or died, from what it left on disk."""
    before = _read_json(job.run_dir / "before.json")
    reported = _read_json(job.run_dir / "report.json") or {}
    if killed:
        status = {"status": "killed", "stop_reason": "killed", "terminated": False,
                  "error": f"ignored the time limit of {job.time_limit:g} s: its worker was killed"}
    else:
        status = {"status": "died", "stop_reason": "worker_died", "terminated": False, "exit_code": exit_code,
                  "error": f"the worker process died (exit code {exit_code})"}
    started = os.path.getmtime(job.run_dir / "before.json") if before is not None else None
    return assemble(job, before=before, steps=read_steps(job.run_dir / "steps.jsonl"), status=status,
                    latency_s=None if started is None else time.time() - started, reported=reported)


def remove(folder: Path) -> None:
    """Remove a run folder, even where the agent took away its own write permissions (links not followed)."""
    def writable(function: Any, path: str, _exc: Any) -> None:
        for target in {os.path.dirname(path), path}:
            if os.path.isdir(target) and not os.path.islink(target):
                os.chmod(target, 0o700)
        function(path)

    try:
        if sys.version_info >= (3, 12):
            shutil.rmtree(folder, onexc=writable)
        else:
            shutil.rmtree(folder, onerror=writable)
    except OSError:
        shutil.rmtree(folder, ignore_errors=True)


def _result(job: Job, exit_code: int | None, killed: bool) -> dict[str, Any]:
    setup = job.run_dir / "setup_error.txt"
    if setup.exists():
        raise HarnessError(f"task {job.task.task_id!r}, seed {job.seed}: the fixture could not be built: "
                         f"{setup.read_text(encoding='utf-8')}")
    record = None if killed else _read_json(job.run_dir / "record.json")
    return record if isinstance(record, dict) else _fallback(job, exit_code, killed)


def _schedule(jobs: list[Job], workers: int, grace: float) -> Iterable[dict[str, Any]]:
    """Fork up to ``workers`` runs at a time; yield each run's record as it finishes."""
    context = multiprocessing.get_context("fork")
    pending, running = list(jobs), {}
    try:
        while pending or running:
            while pending and len(running) < workers:
                job = pending.pop(0)
                process = context.Process(target=execute, args=(job,))  # not a daemon: an agent may start processes
                process.start()
                deadline = None if job.time_limit is None else time.monotonic() + job.time_limit + grace
                running[process.sentinel] = (process, job, deadline)
            deadlines = [d for _, _, d in running.values() if d is not None]
            timeout = max(0.0, min(deadlines) - time.monotonic()) if deadlines else None
            ready = multiprocessing.connection.wait(list(running), timeout)
            now = time.monotonic()
            for sentinel in list(running):
                process, job, deadline = running[sentinel]
                overdue = sentinel not in ready and deadline is not None and now >= deadline
                if sentinel in ready or overdue:
                    if overdue:
                        process.kill()
                    process.join()
                    del running[sentinel]
                    yield _result(job, process.exitcode, overdue)
    finally:
        for process, _, _ in running.values():
            process.kill()
            process.join()


def _warm() -> None:
    """Import what every worker needs (httpx for the usage capture, ...) once here, so forks inherit it."""
    from agentab.harness.mock_server import MockServer  # noqa: F401
    from agentab.harness.network import NetworkPolicy
    from agentab.harness.usage import capture_usage

    with capture_usage(), NetworkPolicy("allow"):
        pass


def _progress(total: int, show: bool) -> Any:
    from tqdm.auto import tqdm

    class Bar(tqdm):  # no monitor thread: the harness forks its workers, and a thread would be forked mid-lock
        monitor_interval = 0

    return Bar(total=total, desc="runs", unit="run", file=sys.stderr, disable=not (show and sys.stderr.isatty()))


def run(agent: Callable[[Any], Any] | Sequence[str] | str, tasks: Task | Iterable[Task] | Mapping[str, Task], *,
        seeds: int | Iterable[int], out: str | os.PathLike[str], workers: int = 1, time_limit: float | None = None,
        step_cap: int | None = None, network: str = "block", tools: Any = None, arm: str | None = None,
        metadata: Mapping[str, Any] | None = None, allow: Sequence[Any] = (), keep: bool = False,
        progress: bool = True, root: str | os.PathLike[str] | None = None, grace: float = GRACE_S) -> Path:
    """Run ``agent`` on every task x seed, each in a fresh sandbox, and append one trace record per run to ``out``.

    Parameters
    ----------
    agent : callable or command
        ``agent(env)``, called once per run in its worker process (``env``: :class:`agentab.harness.Env`), or
        a command (a list of arguments, or a string) run in the sandbox (protocol:
        :mod:`agentab.harness._command`).
    tasks : Task, iterable or mapping of Task
        The tasks.
    seeds : int or iterable of int
        ``N`` for seeds ``0 .. N-1``, or the seeds themselves.
    out : path
        The JSON Lines file of records (created, or appended to: runs already in it are skipped).
    workers : int
        Runs at once, each in its own process.
    time_limit : float, optional
        Seconds per run: the agent is stopped (``StopRun`` raised in it) and recorded as non-terminated; one
        that ignores it is killed ``grace`` seconds later and still recorded.
    step_cap : int, optional
        The most tool calls per run: the next call raises ``StopRun`` and the run is non-terminated.
    network : {"block", "record", "allow"}
        The network policy of every run (the mock server and ``allow`` are always let through).
    tools : mapping or callable, optional
        The tools given to the agent, recorded: a mapping name -> callable, or ``tools(workdir, instance)``
        returning one (tools run in the worker, whose current directory is the sandbox).
    arm : str, optional
        The arm of every record (and part of its run id).
    metadata : mapping, optional
        Added to every record's metadata (``model``, ``harness``, ...).
    allow : sequence of host or (host, port)
        Hosts the network policy lets through.
    keep : bool
        Keep every run's folder (sandbox, streamed steps) instead of removing it.
    progress : bool
        Show a progress bar (only when stderr is a terminal).
    root : path, optional
        Where the run folders are made (default: the system's temporary folder).
    grace : float
        Seconds beyond ``time_limit`` before a worker is killed.

    Returns
    -------
    pathlib.Path
        ``out``, which :func:`agentab.load_traces` reads.
    """
    _check(agent, workers, time_limit, step_cap, network, arm)
    task_list, seed_list = _tasks(tasks), _seeds(seeds)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    done = recorded_ids(out)
    meta = dict(metadata or {})
    todo = [(t, s) for t in task_list for s in seed_list if run_id(t.task_id, s, arm) not in done]
    base = Path(root) if root is not None else Path(tempfile.gettempdir())
    jobs = [Job(task=t, seed=s, instance=t.instance(s), run_id=run_id(t.task_id, s, arm),
                run_dir=Path(tempfile.mkdtemp(prefix="agentab-run-", dir=base)), agent=agent, tools=tools, arm=arm,
                metadata=meta, time_limit=time_limit, step_cap=step_cap, network=network, allow=tuple(allow))
            for t, s in todo]
    if jobs:
        _warm()
    unjudged = 0
    bar = _progress(len(jobs), progress)
    try:
        for record in _schedule(jobs, workers, grace):
            _append(out, record)
            unjudged += record.get("metadata", {}).get("outcome_source") == "none"
            bar.update(1)
    finally:
        bar.close()
        if not keep:
            for job in jobs:
                remove(job.run_dir)
    if unjudged:
        warnings.warn(f"{unjudged} runs had neither an expected_state check nor a reported outcome: recorded "
                      "with outcome false (metadata.outcome_source 'none')", TraceWarning, stacklevel=2)
    return out
