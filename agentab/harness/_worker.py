"""One run, inside its worker process: the sandbox, the services, the agent, the terminal state, the record.

The worker process is forked by :func:`agentab.harness.run` for this run alone. It builds the sandbox
(``<run dir>/work``) from the task's fixture, snapshots it (written to ``before.json``, its databases
copied to ``db-before/``), starts the mock server, the network policy, the usage capture and the write
guard, calls the agent (or runs the command), snapshots again and writes the record to ``record.json``
(temporary file, then rename). Steps are streamed to ``steps.jsonl`` as they happen and ``env.report``
writes ``report.json`` at once, so that when the worker is killed (its time limit passed and the agent did
not stop) or dies, the parent builds the record from what is on disk with :func:`assemble`.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import signal
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentab.harness.fixtures import Instance, Task
from agentab.harness.recorder import Recorder, StopRun, jsonable
from agentab.harness.sandbox import WriteGuard, copy_databases, databases_diff, diff, snapshot

__all__ = ["Env", "Job", "assemble", "check_state", "execute"]

#: The harness's own folder inside the sandbox (command agents' steps and report), left out of every snapshot.
HARNESS_DIR = ".agentab"


@dataclass
class Job:
    """Everything one run needs (passed to the forked worker as is, not pickled)."""

    task: Task
    seed: int
    instance: Instance
    run_id: str
    run_dir: Path
    agent: Any
    tools: Any = None
    arm: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    time_limit: float | None = None
    step_cap: int | None = None
    network: str = "block"
    allow: tuple = ()

    @property
    def work(self) -> Path:
        """The sandbox folder."""
        return self.run_dir / "work"


class Env:
    """What the agent is given: ``tools``, ``workdir``, ``seed``, ``api_url``, ``report``, and more.

    Attributes
    ----------
    tools : mapping of name -> callable
        The recorded tools (``env.tools["name"](**args)``).
    workdir : pathlib.Path
        The sandbox folder (also the current directory of the worker).
    seed : int
        The run's seed.
    api_url : str or None
        The mock API server's base URL (None when the task declares no endpoints).
    task_id : str
        The task's id.
    params : mapping
        The instance's randomised parameters.
    recorder : Recorder
        The run's recorder: register more tools (``env.recorder.tool(name, fn)``), report retries.
    """

    def __init__(self, job: Job, recorder: Recorder, api_url: str | None, report_path: Path) -> None:
        self.tools = recorder.tools
        self.workdir = job.work
        self.seed = job.seed
        self.api_url = api_url
        self.task_id = job.task.task_id
        self.params = job.instance.params
        self.recorder = recorder
        self.reported: dict[str, Any] = {}
        self.guard: WriteGuard | None = None
        self._report_path = report_path

    def report(self, outcome: bool | float | None = None, **fields: Any) -> None:
        """Report the run's outcome and other fields (``cost_usd``, ``claimed_success``, metadata keys).

        With an ``expected_state`` on the task, the check decides the outcome and a reported one is kept as
        ``metadata.claimed_success``; without one, the reported outcome is the record's outcome.
        """
        if outcome is not None and (not isinstance(outcome, (bool, int, float)) or not math.isfinite(outcome)):
            raise TypeError(f"`outcome` must be True/False or a finite number, got {outcome!r}")
        if outcome is not None:
            self.reported["outcome"] = outcome
        self.reported.update(jsonable(fields))
        guard = self.guard
        paused = guard is not None and guard.active
        if paused:  # the harness's own write, outside the sandbox
            guard.active = False
        try:
            _write_json(self._report_path, self.reported)
        finally:
            if paused:
                guard.active = True

    def retry(self, n: int = 1) -> None:
        """The agent retried after an error."""
        self.recorder.retry(n)

    def backtrack(self, n: int = 1) -> None:
        """The agent undid or redid its own work."""
        self.recorder.backtrack(n)


def _write_json(path: Path, value: Any) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(jsonable(value)), encoding="utf-8")
    os.replace(tmp, path)


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def read_steps(path: Path) -> list[dict[str, Any]]:
    """The steps streamed to ``path`` (one JSON line per start and end of a step; the last per index wins)."""
    steps: dict[int, dict[str, Any]] = {}
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    for line in lines:
        try:
            step = json.loads(line)
        except ValueError:  # a line cut by a kill
            continue
        if isinstance(step, dict) and isinstance(step.get("index"), int):
            steps[step["index"]] = step
    return [steps[i] for i in sorted(steps)]


def is_command(agent: Any) -> bool:
    """Whether the agent is a command (a list of arguments or a string) rather than a callable."""
    return isinstance(agent, (str, list, tuple))


def _excluded(job: Job) -> tuple[str, ...]:
    """What snapshots leave out: the harness's own folder, which only command agents have."""
    return (HARNESS_DIR,) if is_command(job.agent) else ()


def prepare(job: Job) -> dict[str, Any]:
    """Build the sandbox and write its first snapshot (``before.json``, ``db-before/``); the snapshot."""
    job.task.build(job.work, job.instance)
    for name in ("tmp", "db-before"):
        (job.run_dir / name).mkdir(exist_ok=True)
    before = snapshot(job.work, exclude=_excluded(job))
    copy_databases(job.work, before, job.run_dir / "db-before")
    _write_json(job.run_dir / "before.json", before)
    if is_command(job.agent):
        (job.work / HARNESS_DIR).mkdir(exist_ok=True)
    return before


@contextlib.contextmanager
def _services(job: Job) -> Any:
    """The mock server (when the task has endpoints), the network policy and the usage capture."""
    from agentab.harness.mock_server import MockServer
    from agentab.harness.network import NetworkPolicy
    from agentab.harness.usage import capture_usage

    with contextlib.ExitStack() as stack:
        endpoints = job.task.endpoints_of(job.instance)
        server = stack.enter_context(MockServer(endpoints, seed=job.seed)) if endpoints else None
        policy = NetworkPolicy(job.network, allow=job.allow)
        if server is not None:
            policy.allow(server.host, server.port)
        stack.enter_context(policy)
        usage = stack.enter_context(capture_usage())
        yield server, policy, usage


def _alarm(seconds: float | None) -> None:
    """Raise StopRun("time_limit") in the main thread after ``seconds`` (None: cancel)."""
    if seconds is None:
        signal.setitimer(signal.ITIMER_REAL, 0)
        return

    def stop(signum: int, frame: Any) -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)
        raise StopRun("time_limit")

    signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, seconds)


def _tools(job: Job) -> Mapping[str, Callable[..., Any]]:
    tools = job.tools
    if tools is None:
        return {}
    if callable(tools) and not isinstance(tools, Mapping):
        tools = tools(job.work, job.instance)
    if not isinstance(tools, Mapping):
        raise TypeError(f"`tools` must be a mapping of name -> callable (or a callable returning one), got "
                        f"{type(tools).__name__}")
    return tools


def _call_agent(job: Job, env: Env, guard: WriteGuard) -> dict[str, Any]:
    """Run the agent under the write guard and the time limit; its status, stop reason and error."""
    outcome: dict[str, Any] = {"status": "ok", "stop_reason": "agent_done", "terminated": True}
    cwd = os.getcwd()
    os.chdir(job.work)
    try:
        _alarm(job.time_limit)
        guard.active = True
        job.agent(env)
    except StopRun as stop:
        outcome.update(status="stopped", stop_reason=stop.reason, terminated=False)
    except BaseException as err:  # the agent crashed (SystemExit and KeyboardInterrupt included)
        outcome.update(status="error", stop_reason="error", error=f"{type(err).__name__}: {err}",
                       traceback="".join(traceback.format_exception(err))[-4000:])
    finally:
        guard.active = False
        _alarm(None)
        os.chdir(cwd)
    return outcome


def execute(job: Job) -> None:
    """The worker's whole run: sandbox, services, agent, record (written to ``record.json``)."""
    sys.dont_write_bytecode = True  # no __pycache__ in the sandbox, nor refused writes outside it
    if not is_command(job.agent):  # an in-process agent's temporary files: allowed, not diffed
        tempfile.tempdir = str(job.run_dir / "tmp")
        os.environ["TMPDIR"] = tempfile.tempdir
    try:
        before = prepare(job)
    except Exception as err:  # a broken fixture is the task's bug, not the agent's: the parent raises it
        (job.run_dir / "setup_error.txt").write_text(f"{type(err).__name__}: {err}", encoding="utf-8")
        return
    guard = WriteGuard([job.work, job.run_dir / "tmp"]).install()
    steps_file = open(job.run_dir / "steps.jsonl", "a", encoding="utf-8")  # opened before the guard is active

    def sink(step: dict[str, Any]) -> None:
        steps_file.write(json.dumps(step) + "\n")
        steps_file.flush()

    report_path = job.run_dir / "report.json"
    with _services(job) as (server, policy, usage):
        recorder = Recorder(_tools(job), step_cap=job.step_cap, usage=usage, sink=sink)
        env = Env(job, recorder, server.url if server is not None else None, report_path)
        env.guard = guard
        start = time.time()
        if is_command(job.agent):
            from agentab.harness._command import run_command

            status = run_command(job, recorder, env)
        else:
            status = _call_agent(job, env, guard)
        latency = time.time() - start
        calls = policy.calls if job.network != "allow" else None
        requests = server.requests if server is not None else None
    steps_file.close()
    status.update(refused=guard.refused, subprocesses=guard.subprocesses)
    record = assemble(job, before=before, steps=recorder.steps, status=status, latency_s=latency,
                      reported=env.reported, external_calls=calls, mock_requests=requests, recorder=recorder)
    _write_json(job.run_dir / "record.json", record)


def check_state(expected: Mapping[str, Any], state: Mapping[str, Any], work: Path) -> list[str]:
    """What of ``expected`` the terminal ``state`` (and the files under ``work``) does not meet; [] if all."""
    problems = []
    for key in ("files_created", "files_modified", "files_deleted"):
        if key in expected and sorted(map(str, expected[key])) != list(state.get(key, [])):
            problems.append(f"{key} is {list(state.get(key, []))}, expected {sorted(map(str, expected[key]))}")
    for path, content in (expected.get("files") or {}).items():
        target = work / path
        if content is None:
            if os.path.lexists(target):
                problems.append(f"{path} exists, expected it absent")
            continue
        if target.is_symlink() or not target.is_file():
            problems.append(f"{path} is not a file")
            continue
        data = target.read_bytes()
        if data != (content.encode("utf-8") if isinstance(content, str) else content):
            problems.append(f"{path} does not have the expected content")
    for db, tables in (expected.get("databases") or {}).items():
        seen = (state.get("databases") or {}).get(db, {})
        for table, counts in tables.items():
            got = seen.get(table, {"inserted": 0, "updated": 0, "deleted": 0})
            for what, n in counts.items():
                if got.get(what, 0) != n:
                    problems.append(f"{db}: table {table} has {got.get(what, 0)} rows {what}, expected {n}")
    return problems


def _outcome(job: Job, state: Mapping[str, Any] | None, reported: Mapping[str, Any], meta: dict[str, Any]) -> Any:
    """The check decides when the task has an expected state; else the reported outcome; else False."""
    expected = job.task.expected(job.instance)
    claim = reported.get("outcome")
    if expected is not None and state is not None:
        problems = check_state(expected, state, job.work)
        meta["outcome_source"] = "check"
        if problems:
            meta["check"] = problems
        if claim is not None:
            meta["claimed_success"] = bool(claim)
        return not problems
    if claim is not None:
        meta["outcome_source"] = "report"
        return claim
    meta["outcome_source"] = "none"  # no check and no report: recorded as a failure, and said so
    return False


def terminal_state(job: Job, before: Mapping[str, Any] | None, external_calls: list | None,
                   mock_requests: list | None, refused: list | None) -> dict[str, Any] | None:
    """The diff of the sandbox against ``before``, its databases, the external calls and refused writes."""
    if before is None or not job.work.is_dir():
        return None
    before = {k: tuple(v) for k, v in before.items()}
    after = snapshot(job.work, exclude=_excluded(job))
    state: dict[str, Any] = diff(before, after)
    databases = databases_diff(str(job.work), str(job.run_dir / "db-before"), before, after)
    if databases:
        state["databases"] = databases
    if external_calls is not None:
        state["external_calls"] = external_calls
    if mock_requests is not None:
        state["api_requests"] = mock_requests
    if refused:
        state["refused_writes"] = refused
    return state


def assemble(job: Job, *, before: Mapping[str, Any] | None, steps: list[dict[str, Any]], status: Mapping[str, Any],
             latency_s: float | None, reported: Mapping[str, Any], external_calls: list | None = None,
             mock_requests: list | None = None, recorder: Recorder | None = None) -> dict[str, Any]:
    """The run's trace record (used by the worker, and by the parent for a killed or dead worker)."""
    rec = recorder or Recorder()
    rec.steps = steps
    state = terminal_state(job, before, external_calls, mock_requests, status.get("refused"))
    meta: dict[str, Any] = dict(job.metadata)
    meta.update({k: v for k, v in status.items() if k not in ("refused",) and v not in (None, [], "")})
    if job.instance.params:
        meta["instance"] = jsonable(dict(job.instance.params))
    extra = {k: v for k, v in reported.items() if k != "outcome"}
    cost = extra.pop("cost_usd", None)
    meta.update(extra)
    outcome = _outcome(job, state, reported, meta)
    fields = {"latency_s": None if latency_s is None else round(max(latency_s, 0.0), 6), "cost_usd": cost}
    try:
        return rec.record(run_id=job.run_id, task_id=job.task.task_id, seed=job.seed, outcome=outcome, arm=job.arm,
                          terminal_state=state, metadata=meta, **fields)
    except ValueError as err:  # a reported value the record cannot hold (a negative cost, an outcome of None)
        meta["report_error"] = str(err)
        fields["cost_usd"] = None
        return rec.record(run_id=job.run_id, task_id=job.task.task_id, seed=job.seed, outcome=outcome, arm=job.arm,
                          terminal_state=state, metadata=meta, **fields)
