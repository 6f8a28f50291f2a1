"""The public API, frozen: every ``__all__``, every public signature, the JSON schema of a comparison.

The snapshot is ``tests/reference/public_api.json``. A change to the public API fails this test; when the
change is meant (an issue asks for it), regenerate the snapshot with

    python tests/test_public_api.py --write

and say in the change's note which names or signatures moved. The CLI's commands and flags are frozen in
``tests/test_cli.py``.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import json
import sys
from pathlib import Path
from typing import Any

SNAPSHOT = Path(__file__).parent / "reference" / "public_api.json"

#: Every module whose ``__all__`` is public: the package, each stage's subpackage, and the public modules
#: that users import by name (agentab.plots is agentab.reporting.plots).
PUBLIC_MODULES = (
    "agentab",
    "agentab.errors",
    "agentab.formats",
    "agentab.harness",
    "agentab.traces",
    "agentab.scoring",
    "agentab.stats",
    "agentab.comparison",
    "agentab.power",
    "agentab.reporting",
    "agentab.reporting.plots",
    "agentab.datasets",
    "agentab.cli",
)


def _signature(obj: Any) -> str | dict[str, Any] | None:
    """The call signature of a function; for a class, its constructor and its public methods and properties."""
    if inspect.isclass(obj):
        out: dict[str, Any] = {}
        if dataclasses.is_dataclass(obj):
            out["fields"] = [f.name for f in dataclasses.fields(obj)]
        try:
            out["init"] = str(inspect.signature(obj))
        except (TypeError, ValueError):
            out["init"] = None
        members = {}
        for name, member in sorted(vars(obj).items()):
            if name.startswith("_"):
                continue
            if isinstance(member, property):
                members[name] = "property"
            elif inspect.isfunction(member):
                members[name] = str(inspect.signature(member))
            elif isinstance(member, (classmethod, staticmethod)):
                members[name] = str(inspect.signature(member.__func__))
        out["members"] = members
        return out
    if callable(obj):
        try:
            return str(inspect.signature(obj))
        except (TypeError, ValueError):
            return None
    return None


def _schema(value: Any) -> Any:
    """The key structure of a JSON value: objects as their keys (recursively), lists as their first element."""
    if isinstance(value, dict):
        return {key: _schema(v) for key, v in sorted(value.items())}
    if isinstance(value, list):
        return [_schema(value[0])] if value else []
    return type(value).__name__


def _comparison_schema() -> Any:
    import agentab

    traces = agentab.datasets.example_experiment(seed=0, n_tasks=12, n_seeds=3)
    scores = agentab.score(traces, agentab.datasets.example_specs(n_tasks=12))
    result = agentab.compare(scores, metrics=["outcome", "rubric", "tokens"], guardrails={"tokens": "p95 <= +10%"},
                             n_resamples=199)
    out = result.to_dict()
    assert out["plan"] is not None, "the frozen example must be inconclusive, so that the plan's keys are frozen too"
    return _schema(out)


def snapshot() -> dict[str, Any]:
    """The public API as plain JSON: names per module, signatures per public callable, the comparison schema."""
    modules = {}
    for name in PUBLIC_MODULES:
        module = importlib.import_module(name)
        names = sorted(module.__all__)
        modules[name] = {public: _signature(getattr(module, public)) for public in names}
    return {"modules": modules, "comparison_schema": _comparison_schema()}


def test_public_api_is_frozen():
    expected = json.loads(SNAPSHOT.read_text())
    actual = json.loads(json.dumps(snapshot()))
    for module in sorted(set(expected["modules"]) | set(actual["modules"])):
        want, got = expected["modules"].get(module, {}), actual["modules"].get(module, {})
        assert sorted(got) == sorted(want), f"{module}.__all__ changed (see this file's docstring)"
        for name in want:
            assert got[name] == want[name], f"signature of {module}.{name} changed (see this file's docstring)"
    assert actual["comparison_schema"] == expected["comparison_schema"], "the agentab.comparison/1 JSON layout changed"


def test_every_public_name_exists_and_is_documented():
    for module_name in PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        assert module.__doc__, f"{module_name} has no docstring"
        for name in module.__all__:
            obj = getattr(module, name)  # raises when __all__ names something missing
            if (inspect.isfunction(obj) or inspect.isclass(obj)) and not name.isupper():
                assert obj.__doc__, f"{module_name}.{name} has no docstring"


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python tests/test_public_api.py --write   (regenerates tests/reference/public_api.json)")
    SNAPSHOT.write_text(json.dumps(snapshot(), indent=1, sort_keys=True) + "\n")
    print(f"wrote {SNAPSHOT}")
