"""``MODULE:NAME`` references (the command line's agents, tasks and tools) resolved to Python objects."""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from typing import Any

from agentab.errors import HarnessError

__all__ = ["load_object"]


def load_object(text: str, what: str) -> Any:
    """The object ``text`` names: ``package.module:name`` (``name`` may be dotted) or ``path/to/file.py:name``.

    The current folder is searched first, as ``python -m`` does. A missing module or name is a ValueError
    naming ``what`` (``"AGENT"``, ``"--tasks"``).
    """
    module_name, sep, attribute = text.rpartition(":")
    if not sep or not module_name or not attribute:
        raise HarnessError(f"{what}: {text!r} must be MODULE:NAME (e.g. my_agents:agent, or agents.py:agent)")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        if module_name.endswith(".py"):
            spec = importlib.util.spec_from_file_location(os.path.basename(module_name)[:-3], module_name)
            if spec is None or spec.loader is None or not os.path.isfile(module_name):
                raise ImportError(f"no file {module_name}")
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        else:
            module = importlib.import_module(module_name)
    except ImportError as err:
        raise HarnessError(f"{what}: cannot import {module_name!r}: {err}") from None
    value: Any = module
    for part in attribute.split("."):
        if not hasattr(value, part):
            raise HarnessError(f"{what}: {module_name!r} has no {attribute!r}")
        value = getattr(value, part)
    return value
