"""Write v2_text_scripted.traj.json and v2_tool_scripted.traj.json by running the real mini-swe-agent.

mini-swe-agent 2.4.6's DefaultAgent with its own scripted test models (minisweagent.models.test_models) on
the local shell, once in text mode and once in tool mode; the agent saves the trajectories itself. Needs
``pip install mini-swe-agent==2.4.6`` (not a dependency of agentab):

    MSWEA_SILENT_STARTUP=1 python tests/data/mini_swe_agent/make_v2_fixtures.py OUT_DIR
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

SYSTEM = "You are a helpful assistant that can interact with a computer."
TASK = "Please solve this issue: {{task}}"
SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"


def said(thought: str, command: str, cost: float) -> dict:
    from minisweagent.models.test_models import make_output

    return make_output(f"THOUGHT: {thought}\n\n```mswea_bash_command\n{command}\n```", [{"command": command}],
                       cost=cost)


def call(i: int, command: str) -> dict:
    return {"id": f"call_{i}", "type": "function",
            "function": {"name": "bash", "arguments": json.dumps({"command": command})}}


def main(out: Path) -> None:
    # imported here: mini-swe-agent is not a dependency of agentab, and pytest imports this file
    from minisweagent.agents.default import DefaultAgent
    from minisweagent.environments.local import LocalEnvironment
    from minisweagent.models.test_models import (
        DeterministicModel,
        DeterministicToolcallModel,
        make_toolcall_output,
    )

    (out / "repo").mkdir(parents=True, exist_ok=True)
    env = {"cwd": str(out / "repo"), "timeout": 1}  # one second: `sleep 3` times out
    text = DeterministicModel(cost_per_call=0.0, outputs=[
        said("look around.", "printf 'a.py\\n' > a.py && ls", 0.0021),
        said("read a missing file.", "cat missing.txt", 0.0034),
        said("a slow command.", "sleep 3", 0.0017),
        said("done.", SUBMIT, 0.0012),
    ])
    agent = DefaultAgent(text, LocalEnvironment(**env), system_template=SYSTEM, instance_template=TASK,
                         output_path=out / "v2_text_scripted.traj.json")
    print(agent.run("list the files"))
    tool = DeterministicToolcallModel(outputs=[
        make_toolcall_output("Two commands at once.", [call(1, "echo one"), call(2, "false")],
                             [{"command": "echo one", "tool_call_id": "call_1"},
                              {"command": "false", "tool_call_id": "call_2"}]),
        make_toolcall_output(None, [call(3, SUBMIT)], [{"command": SUBMIT, "tool_call_id": "call_3"}]),
    ])
    agent = DefaultAgent(tool, LocalEnvironment(**env), system_template=SYSTEM, instance_template=TASK,
                         output_path=out / "v2_tool_scripted.traj.json")
    print(agent.run("echo two things"))


if __name__ == "__main__":
    main(Path(sys.argv[1]).resolve())
