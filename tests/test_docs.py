"""The README and the documentation site: outputs current, links whole, the CLI reference complete.

The site itself is built by CI (``mkdocs build --strict`` in ``.ci/run``); these checks are the fast part:
every command output shown is what the command prints now (``docs/_outputs.py --check``), every link from
the README into docs/ exists, every page of the navigation exists, every command and flag of the parser
is in the generated CLI reference, and the README stays short.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
#: The README is a front page (what it is, install, quick start, three recipes), not the manual.
MAX_README_LINES = 250
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _module(name: str):
    spec = importlib.util.spec_from_file_location(f"_agentab_docs_{name}", DOCS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def outputs():
    return _module("_outputs")


@pytest.fixture(scope="module")
def hooks():
    return _module("_hooks")


def _nav_pages() -> list[str]:
    """The Markdown and notebook pages listed in mkdocs.yml's nav."""
    text = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    nav = text[text.index("\nnav:"):]
    return re.findall(r"(?:^|:|-)\s*([\w./-]+\.(?:md|ipynb))\s*$", nav, re.M)


@pytest.mark.slow
def test_output_blocks_are_current(outputs):
    stale = outputs.stale()
    assert not stale, f"stale output blocks (run python docs/_outputs.py --write): {stale}"


def test_every_block_has_an_example_and_every_example_is_shown(outputs):
    shown = {name for path in outputs.markdown_files() for name in outputs.blocks(path)}
    assert shown <= set(outputs.EXAMPLES), sorted(shown - set(outputs.EXAMPLES))
    assert set(outputs.EXAMPLES) <= shown, f"examples no page shows: {sorted(set(outputs.EXAMPLES) - shown)}"
    readme = outputs.blocks(README)
    assert {"readme-traces", "readme-table", "readme-plan"} <= set(readme)


def test_a_stale_block_is_found(outputs, tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# t\n\n<!-- output: power-paired-cli -->\n```console\n234 tasks\n```\n<!-- /output -->\n")
    assert outputs.stale([page]) == [f"{page}: power-paired-cli"]
    fresh = outputs.regenerate([page])[page]
    assert "234 tasks\n```" not in fresh and "agentab power --metric binary" in fresh
    page.write_text(fresh)
    assert outputs.stale([page]) == []


def test_outputs_carry_no_timings_or_temporary_paths(outputs):
    text = "\n".join(p.read_text(encoding="utf-8") for p in outputs.markdown_files())
    bodies = "\n".join(m["body"] for m in outputs.BLOCK.finditer(text))
    assert "agentab-docs-" not in bodies and "/tmp/" not in bodies
    assert not re.search(r"loaded in \d", bodies)


def test_readme_links_exist():
    text = README.read_text(encoding="utf-8")
    targets = [t for t in LINK.findall(text) if not re.match(r"[a-z]+:", t)]
    assert any(t.startswith("docs/") for t in targets)
    missing = [t for t in targets if not (ROOT / t.split("#")[0]).exists()]
    assert not missing, missing


def test_docs_pages_are_in_the_nav_and_exist():
    nav = _nav_pages()
    assert "cli.md" in nav and "api.md" in nav and "statistics.md" in nav
    missing = [page for page in nav if not (DOCS / page).exists()]
    assert not missing, missing
    pages = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md") if "data" not in p.relative_to(DOCS).parts}
    assert pages <= set(nav), f"pages not in mkdocs.yml's nav: {sorted(pages - set(nav))}"


def test_cli_reference_has_every_command_and_flag(hooks):
    from agentab.cli import build_parser

    assert hooks.MARKER in (DOCS / "cli.md").read_text(encoding="utf-8")
    reference = hooks.cli_reference()
    parser = build_parser()
    commands = hooks._commands(parser)
    assert len(commands) >= 9
    for name, (_, sub) in commands.items():
        assert f"### `agentab {name}`" in reference, name
        section = reference.split(f"### `agentab {name}`", 1)[1].split("\n### ", 1)[0]
        for action in sub._actions:
            for flag in action.option_strings:
                assert f"`{flag}`" in section, (name, flag)


def test_readme_is_short_and_its_test_command_is_ci():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_README_LINES, f"README.md has {len(lines)} lines (at most {MAX_README_LINES})"
    command = "pip install -e '.[test]' && pytest"
    assert any(line.startswith(command) for line in lines)
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert command in ci and "mkdocs build --strict" in "\n".join(ci)
