"""The house rules of ARCHITECTURE.md, checked on the source: layers only look down, no import cycles,
no private name taken across subpackages, small rooms.

Imports are read from the source (every ``import`` and ``from ... import`` statement, at any depth, so an
import inside a function counts), except those under ``if TYPE_CHECKING:``, which never run.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "agentab"

#: The shared top-level modules every layer may import (stats: not _display, which imports pandas).
SHARED = {"errors", "_checks", "_vocabulary", "_display", "_version", "_write"}

#: Which stage may import which: the layers of ARCHITECTURE.md. A stage missing from a set may not import it.
ALLOWED = {
    "formats": set(),
    "traces": {"formats"},
    "scoring": {"formats", "traces"},
    "stats": set(),
    "power": {"formats", "traces", "scoring", "stats"},
    "comparison": {"formats", "traces", "scoring", "stats", "power"},
    "reporting": {"formats", "traces", "scoring", "stats", "power", "comparison"},
    "datasets": {"formats", "traces", "scoring"},
    "harness": {"formats", "traces", "scoring"},
    "cli": {"formats", "traces", "scoring", "stats", "power", "comparison", "reporting", "datasets", "agentab"},
}
#: Modules no larger than this many lines (ARCHITECTURE.md: "small rooms").
MAX_MODULE_LINES = 600
#: Functions no longer than this many lines of code (docstring excluded), unless the function says why.
MAX_FUNCTION_LINES = 80


def _module_name(path: Path) -> str:
    parts = ["agentab", *path.relative_to(PACKAGE).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, imported module or module.name) of every run-time import in ``path``, made absolute."""
    tree = ast.parse(path.read_text())
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: list[tuple[int, str]] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            found.extend((node.lineno, f"{base}.{alias.name}") for alias in node.names)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return [(line, name) for line, name in found if name == "agentab" or name.startswith("agentab.")]


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _resolve(target: str, modules: dict[str, Path]) -> str:
    """The module an import runs: ``agentab.x.y`` if it is a module, else the package or module holding ``y``."""
    return target if target in modules else target.rpartition(".")[0]


def _stage(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "agentab"


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    graph: dict[str, set[str]] = defaultdict(set)
    for name, path in modules.items():
        for _, target in _imports(path):
            resolved = _resolve(target, modules)
            if resolved != name:
                graph[name].add(resolved)
    return graph


def test_no_import_cycles():
    graph = _graph()
    # agentab/__init__ re-exports every stage; the stages below never import it (checked next), so it is a root.
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                cycle = stack[stack.index(nxt):] + [nxt]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(_modules()):
        if node not in state:
            visit(node)


def test_layers_only_look_down():
    problems = []
    for name, path in _modules().items():
        stage = _stage(name)
        if stage in SHARED or stage in ("agentab", "__main__"):
            continue
        for line, target in _imports(path):
            other = _stage(target)
            if other == stage or other in SHARED:
                if stage == "stats" and other == "_display":
                    problems.append(f"{name}:{line} stats imports _display (pandas)")
                continue
            if target == "agentab.__version__" or other not in ALLOWED[stage]:
                if not (stage == "cli" and target.startswith("agentab.")):
                    problems.append(f"{name}:{line} ({stage}) imports {target}")
    assert not problems, "\n".join(problems)


def test_shared_modules_import_only_each_other():
    for name in SHARED:
        for line, target in _imports(PACKAGE / f"{name}.py"):
            assert _stage(target) in SHARED, f"agentab.{name}:{line} imports {target}"


def test_no_private_name_across_subpackages():
    problems = []
    modules = _modules()
    for name, path in modules.items():
        stage = _stage(name)
        for line, target in _imports(path):
            other = _stage(target)
            if other == stage or other in SHARED or target == "agentab.__version__":
                continue
            private = [part for part in target.split(".")[1:] if part.startswith("_")]
            if private:
                problems.append(f"{name}:{line} imports {target}")
    assert not problems, "\n".join(problems)


def test_stats_imports_no_pandas_and_scoring_no_statistics():
    for path in (PACKAGE / "stats").rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            assert not any(n.split(".")[0] == "pandas" for n in names), f"{path} imports pandas"
    for path in (PACKAGE / "scoring").rglob("*.py"):
        for line, target in _imports(path):
            assert not target.startswith("agentab.stats"), f"{path}:{line} imports {target}"


def _why_whole(lines: list[str], node: ast.FunctionDef) -> bool:
    """A function may be long when a comment right after its signature or docstring says why it must be whole."""
    body = node.body[1:] if ast.get_docstring(node) else node.body
    start = (node.body[0].end_lineno if ast.get_docstring(node) else node.lineno) or node.lineno
    first = body[0].lineno if body else node.end_lineno
    return any("whole" in line and line.strip().startswith("#") for line in lines[start:first + 1])


def test_small_rooms():
    problems = []
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text()
        lines = text.splitlines()
        if len(lines) > MAX_MODULE_LINES:
            problems.append(f"{path.relative_to(PACKAGE.parent)}: {len(lines)} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                doc = node.body[0] if ast.get_docstring(node) else None
                size = node.end_lineno - node.lineno + 1 - (doc.end_lineno - doc.lineno + 1 if doc else 0)
                if size > MAX_FUNCTION_LINES and not _why_whole(lines, node):
                    problems.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno} {node.name}: {size} lines")
    assert not problems, "\n".join(problems)


def test_one_display_mechanism():
    """Results are shown through agentab._display alone: no other module writes its own _repr_html_."""
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == PACKAGE / "_display.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef) and node.name == "_repr_html_":
                pytest.fail(f"{path.relative_to(PACKAGE.parent)}:{node.lineno} writes its own _repr_html_")


def test_one_vocabulary():
    """The metric kinds and the alternatives are spelled out in agentab/_vocabulary.py only."""
    kinds = ast.parse('("binary", "ordinal", "count", "cost", "continuous")').body[0].value
    wanted = {elt.value for elt in kinds.elts}
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == PACKAGE / "_vocabulary.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.Tuple, ast.List, ast.Set)) and all(isinstance(e, ast.Constant) for e in node.elts):
                values = {e.value for e in node.elts}
                assert values != wanted, f"{path.relative_to(PACKAGE.parent)}:{node.lineno} lists the metric kinds again"
                assert not {"larger", "smaller"} <= values, (
                    f"{path.relative_to(PACKAGE.parent)}:{node.lineno} spells statsmodels' alternatives: use _vocabulary")
