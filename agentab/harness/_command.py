"""Command agents: a subprocess in the sandbox, and the small file protocol through which it reports steps.

The command (a list of arguments, or a string split as a shell would, without a shell) runs with the
sandbox as its working directory, under :func:`agentab.harness.network.sandbox_command` (bubblewrap with
its own network namespace where available; the record's ``metadata.sandbox`` says what was enforced), and
these environment variables:

======================== ===================================================================
``AGENTAB_WORKDIR``      the sandbox folder
``AGENTAB_SEED``         the run's seed
``AGENTAB_TASK_ID``      the task's id
``AGENTAB_PARAMS``       the instance's randomised parameters, as JSON
``AGENTAB_API_URL``      the mock server's URL (empty without endpoints; under bubblewrap without
                         network it is still reached at the same address, through a port bridge)
``AGENTAB_STEPS``        a file to append steps to: one JSON object per line, ``{"tool": ..., "args": {...},
                         "observation": {...}}`` plus any step field of the record (``started_at``,
                         ``tokens_in``, ...; other keys go into the step's ``metadata``). The harness
                         numbers them in order. A line that is not a valid step is skipped and counted
                         in ``metadata.protocol_errors``
``AGENTAB_REPORT``       a file the command may write one JSON object to: ``{"outcome": ..., ...}``, as
                         ``env.report`` takes
``AGENTAB_STEP_CAP``     the step cap (empty without one)
======================== ===================================================================

Both files live in the sandbox's ``.agentab/`` folder, which no snapshot includes. Without steps written,
the record has none (the harness cannot see inside a command). The process is stopped (its whole process
group killed) when it writes more steps than the cap or outlives the time limit; its exit code is
``metadata.exit_code`` and a non-zero one makes ``metadata.status`` ``"error"``.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import subprocess
import time
import urllib.parse
from typing import Any

import msgspec

from agentab.formats.record import Step
from agentab.harness.recorder import Recorder

__all__ = ["run_command", "parse_steps"]

_STEP_FIELDS = set(Step.__struct_fields__) - {"index"}


def parse_steps(text: str, cap: int | None) -> tuple[list[dict[str, Any]], list[str]]:
    """The valid steps of a steps file (at most ``cap``) and the problems of the others."""
    steps, problems = [], []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
            if not isinstance(item, dict):
                raise ValueError("not a JSON object")
            step = {k: v for k, v in item.items() if k in _STEP_FIELDS}
            extra = {k: v for k, v in item.items() if k not in _STEP_FIELDS}
            if extra:
                step["metadata"] = {**(step.get("metadata") or {}), **extra}
            step.setdefault("args", {})
            msgspec.convert({**step, "index": len(steps)}, Step)
        except (ValueError, msgspec.ValidationError) as err:
            problems.append(f"line {number}: {err}")
            continue
        if cap is not None and len(steps) >= cap:
            break
        steps.append(step)
    return steps, problems


def _environment(job: Any, env: Any, steps: str, report: str) -> dict[str, str]:
    return {**os.environ, "AGENTAB_WORKDIR": str(job.work), "AGENTAB_SEED": str(job.seed),
            "AGENTAB_TASK_ID": job.task.task_id, "AGENTAB_PARAMS": json.dumps(dict(env.params), default=str),
            "AGENTAB_API_URL": env.api_url or "", "AGENTAB_STEPS": steps, "AGENTAB_REPORT": report,
            "AGENTAB_STEP_CAP": "" if job.step_cap is None else str(job.step_cap)}


class _Lines:
    """The number of lines in the steps file so far, reading only the bytes added since the last count."""

    def __init__(self, path: str) -> None:
        self.path, self.offset, self.n = path, 0, 0

    def count(self) -> int:
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                for chunk in iter(lambda: f.read(1 << 16), b""):
                    self.n += chunk.count(b"\n")
                    self.offset += len(chunk)
        except OSError:
            pass
        return self.n


def _wait(proc: subprocess.Popen, steps: str, job: Any) -> str | None:
    """Wait for the command; the reason it was stopped (``"step_cap"``, ``"time_limit"``) or None."""
    deadline = None if job.time_limit is None else time.monotonic() + job.time_limit
    lines = _Lines(steps)
    while proc.poll() is None:
        reason = None
        if deadline is not None and time.monotonic() >= deadline:
            reason = "time_limit"
        elif job.step_cap is not None and lines.count() > job.step_cap:
            reason = "step_cap"
        if reason:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
            return reason
        time.sleep(0.02)
    return None


def run_command(job: Any, recorder: Recorder, env: Any) -> dict[str, Any]:
    """Run the command agent of ``job``; its steps go to ``recorder``, its report to ``env``; the status."""
    from agentab.harness._bridge import PortBridge
    from agentab.harness.network import sandbox_command

    argv = shlex.split(job.agent) if isinstance(job.agent, str) else [str(a) for a in job.agent]
    harness = job.work / ".agentab"
    steps, report = str(harness / "steps.jsonl"), str(harness / "report.json")
    with contextlib.ExitStack() as stack:
        bridge = None
        if env.api_url and job.network != "allow":  # the mock server, reachable from a sandbox without network
            bridge = stack.enter_context(PortBridge([urllib.parse.urlsplit(env.api_url).port]))
        command = sandbox_command(argv, job.work, network=job.network, bridge=bridge)
        status: dict[str, Any] = {"sandbox": command.enforced, "command": argv}
        try:
            proc = subprocess.Popen(list(command.argv), cwd=job.work, env=_environment(job, env, steps, report),
                                    start_new_session=True)
        except OSError as err:
            return {**status, "status": "error", "stop_reason": "error", "terminated": True,
                    "error": f"{type(err).__name__}: {err}"}
        stopped = _wait(proc, steps, job)
    try:
        text = open(steps, encoding="utf-8", errors="replace").read()
    except OSError:
        text = ""
    parsed, problems = parse_steps(text, job.step_cap)
    for step in parsed:
        recorder.add_step(step.pop("tool"), step.pop("args"), step.pop("observation", None), **step)
    if problems:
        status["protocol_errors"] = {"count": len(problems), "first": problems[0]}
    reported = _report(report)
    if isinstance(reported, dict):
        try:
            env.report(reported.pop("outcome", None), **reported)
        except (TypeError, ValueError) as err:
            status["protocol_errors"] = {**status.get("protocol_errors", {}), "report": str(err)}
    elif reported is not None:
        status["protocol_errors"] = {**status.get("protocol_errors", {}), "report": "not a JSON object"}
    status["exit_code"] = proc.returncode
    if stopped:
        status.update(status="stopped", stop_reason=stopped, terminated=False)
    else:
        status.update(status="ok" if proc.returncode == 0 else "error", stop_reason="agent_done", terminated=True)
    return status


def _report(path: str) -> Any:
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return "invalid"
