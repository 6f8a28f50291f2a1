"""The decoder's step checks (agentab.formats._diagnose.step_problem) find the first problem a plain loop finds."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from agentab.formats._diagnose import step_problem
from agentab.formats.record import TOKEN_PARTS

FIELDS = ("tokens_in", "tokens_out", "tokens_reasoning", "tokens_cached")


def reference(agent, counts, agents):
    """Step by step, as the checks read: each part against its whole, then each step's agent."""
    at = {name: k for k, name in enumerate(FIELDS)}
    for part, whole in TOKEN_PARTS:
        parts, wholes = counts[at[part]], counts[at[whole]]
        if parts is None or wholes is None:
            continue
        for k, (p, w) in enumerate(zip(parts, wholes)):
            if p is not None and w is not None and p > w:
                return f"steps[{k}].{part}"
    if agents is not None and len(set(agents)) == len(agents) and agent is not None:
        for k, name in enumerate(agent):
            if name is not None and name not in agents:
                return f"steps[{k}].agent"
    return None


counts_of = st.one_of(st.none(), st.lists(st.one_of(st.none(), st.integers(0, 20)), min_size=5, max_size=5))


@settings(max_examples=500, deadline=None)
@given(st.tuples(counts_of, counts_of, counts_of, counts_of),
       st.one_of(st.none(), st.lists(st.sampled_from([None, "a", "b", "c"]), min_size=5, max_size=5)),
       st.one_of(st.none(), st.lists(st.sampled_from(["a", "b"]), min_size=1, max_size=2, unique=True)))
def test_step_problem_is_the_plain_loops(counts, agent, agents):
    problem = step_problem(None, agent, counts, agents)
    assert (None if problem is None else problem[0]) == reference(agent, counts, agents)
