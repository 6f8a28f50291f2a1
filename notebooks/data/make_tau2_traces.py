"""Build the notebook data in this folder from the shared copies of two public, MIT-licensed data sets.

Usage (from the repository root)::

    python notebooks/data/make_tau2_traces.py [SHARED_DATA_DIR]

``SHARED_DATA_DIR`` defaults to ``../shared/data`` (relative to the repository
root); it holds ``tau2-bench-grok-policy-ab/`` and ``tau-bench/`` as described
in ``notebooks/data/README.md`` (source repositories, paths and commits).

Writes, beside this script:

- ``tau2_airline_policy_ab.jsonl``: one agentab trace record (see
  ``agentab/record.py``) per simulation of block 1 of the tau2-bench policy
  A/B (96 runs: 3 Grok models x 2 policies x 4 tasks x 4 trials);
- ``tau2_airline_expected_actions.json``: each task's expected actions
  (the benchmark's own ``action_checks``), for trajectory specs;
- ``tau2_policy_diff.diff``: the two policies' difference, copied verbatim;
- ``tau_bench_gpt4o_airline_runs.csv``: tau-bench's gpt-4o airline runs
  (50 tasks x 4 trials), copied verbatim.

Only ids, names and layout change; no value is edited (each mapping is below
and in the README). The script checks what it relies on and fails loudly.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
BLOCK1 = "tau2_block1_4tasks_x4trials_3models_2025-10-13.jsonl"


def step_records(messages: list[dict]) -> list[dict]:
    """The agent's tool calls in order, each with its observation's status (tool output text is not kept)."""
    answers = {m["tool_call_id"]: m for m in messages if m["role"] == "tool"}
    steps = []
    for message in messages:
        if message["role"] != "assistant" or not message.get("tool_calls"):
            continue
        for call in message["tool_calls"]:
            assert call["requestor"] == "assistant", call
            answer = answers.get(call["id"])
            if answer is None:
                observation = None  # never answered
            elif answer.get("error"):
                observation = {"status": "error", "error": answer["content"]}
            else:
                observation = {"status": "ok"}
            steps.append({"index": len(steps), "tool": call["name"], "args": call["arguments"], "observation": observation})
    return steps


def trace_record(sim: dict) -> dict:
    """One tau2 simulation as an agentab trace record."""
    assert sim["reward"] in (0.0, 1.0), sim["reward"]
    steps = step_records(sim["messages"])
    assert len(steps) == sim["n_tool_calls"], (sim["sim_id"], len(steps), sim["n_tool_calls"])
    return {
        "run_id": sim["sim_id"],
        "task_id": sim["task_id"],
        "seed": sim["seed"],
        "arm": sim["policy_variant"],
        "steps": steps,
        "outcome": sim["reward"] == 1.0,
        "cost_usd": sim["agent_cost"],
        "latency_s": sim["duration_sec"],
        "metadata": {
            "model": sim["agent_model"],
            "harness": f"tau2 llm_agent, {sim['domain']} policy",
            "trial": sim["trial"],
            "user_model": sim["user_model"],
            "user_cost_usd": sim["user_cost"],
            "reward_breakdown": sim["reward_breakdown"],
            "termination_reason": sim["termination_reason"],
            "n_messages": sim["n_messages"],
        },
    }


def expected_actions(sims: list[dict]) -> dict[str, list[dict]]:
    """Each task's expected actions (name and arguments), checked to be the same in every simulation of the task."""
    found: dict[str, list[dict]] = {}
    for sim in sims:
        actions = [{"tool": c["action"]["name"], "args": c["action"]["arguments"]} for c in sim["action_checks"]]
        assert found.setdefault(sim["task_id"], actions) == actions, sim["task_id"]
    return dict(sorted(found.items(), key=lambda item: int(item[0])))


def main(shared: Path) -> None:
    tau2 = shared / "tau2-bench-grok-policy-ab"
    sims = [json.loads(line) for line in (tau2 / BLOCK1).read_text().splitlines() if line.strip()]
    assert len(sims) == 96, len(sims)
    records = [trace_record(sim) for sim in sims]
    records.sort(key=lambda r: (r["arm"], r["metadata"]["model"], int(r["task_id"]), r["metadata"]["trial"]))
    with open(HERE / "tau2_airline_policy_ab.jsonl", "w") as out:
        out.writelines(json.dumps(record, separators=(",", ":")) + "\n" for record in records)
    (HERE / "tau2_airline_expected_actions.json").write_text(json.dumps(expected_actions(sims), indent=1) + "\n")
    shutil.copyfile(tau2 / "policy_diff_original_vs_tighter.diff", HERE / "tau2_policy_diff.diff")
    shutil.copyfile(shared / "tau-bench" / "gpt-4o-airline_runs.csv", HERE / "tau_bench_gpt4o_airline_runs.csv")
    for path in sorted(HERE.iterdir()):
        print(f"{path.name:40s} {path.stat().st_size:>8,d} bytes")


if __name__ == "__main__":
    root = HERE.parent.parent
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else (root / ".." / "shared" / "data").resolve())
