"""The recording harness: run an agent in a fresh sandbox per run and record its trace.

- :func:`run` -- an agent (``agent(env)``, or a command) over tasks x seeds in parallel worker processes,
  one sandbox, mock server and network policy per run; one trace record per run appended to a JSON Lines
  file that :func:`agentab.load_traces` reads (``agentab run`` on the command line);
- :class:`Task` -- a fixture template, its expected terminal state, mock endpoints and per-seed
  randomisation (:class:`Draw`, :class:`Instance`);
- :class:`Recorder` -- recorded tools, for agents that run their own loop;
- :mod:`agentab.harness.sandbox` -- snapshots, their diff, SQLite row changes, the write guard;
- :mod:`agentab.harness.network`, :mod:`agentab.harness.usage`, :mod:`agentab.harness.mock_server` --
  the network policy and subprocess sandbox, token usage from the OpenAI and Anthropic clients, the mock
  API server.

Examples
--------
>>> import tempfile, pathlib, agentab
>>> from agentab.harness import Task, run
>>> task = Task("hello", fixture={"greeting.txt": "hello"},
...             expected_state={"files_modified": ["greeting.txt"], "files": {"greeting.txt": "HELLO"}})
>>> def agent(env):
...     text = env.tools["read"](path="greeting.txt")
...     env.tools["write"](path="greeting.txt", text=text.upper())
>>> tools = {"read": lambda path: pathlib.Path(path).read_text(),
...          "write": lambda path, text: pathlib.Path(path).write_text(text)}
>>> out = run(agent, [task], seeds=2, out=pathlib.Path(tempfile.mkdtemp()) / "runs.jsonl", tools=tools)
>>> traces = agentab.load_traces(out)
>>> len(traces.runs), bool(traces.runs["outcome"].all())
(2, True)
"""

from agentab.harness.fixtures import Draw, Instance, Task, instance_rng, write_database
from agentab.harness.recorder import Recorder, StopRun
from agentab.harness._worker import Env
from agentab.harness.run import run, run_id
from agentab.harness._objects import load_object

__all__ = ["Draw", "Env", "Instance", "Recorder", "StopRun", "Task", "instance_rng", "load_object", "run",
           "run_id", "write_database"]
