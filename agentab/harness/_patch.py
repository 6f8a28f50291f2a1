"""Attributes replaced while a context is active and put back exactly on exit, in any exit order.

The network policy and the usage capture patch process-wide attributes (``socket.socket.connect``,
``httpx.Client.send``, ...). A :class:`Patches` set remembers, for every attribute it replaced, what the
owner's own ``__dict__`` held (or that it held nothing, the attribute being inherited), and on exit puts that
back. Nested sets compose: an inner wrapper calls the outer one. When sets exit out of order (possible with
threads or hand-called ``__exit__``), a set whose wrapper is no longer on top turns inert (its wrappers pass
calls straight through) and the set that is on top unwraps every inert wrapper below it, so that once all
have exited the owners hold exactly what they held before.

Examples
--------
>>> class Owner:
...     def hello(self):
...         return "hello"
>>> patches = Patches()
>>> patches.install(Owner, "hello", lambda orig: lambda self: orig(self).upper())
>>> Owner().hello()
'HELLO'
>>> patches.restore()
>>> Owner().hello(), "hello" in Owner.__dict__
('hello', True)
"""

from __future__ import annotations

import inspect
import threading
from typing import Any, Callable

__all__ = ["Patches"]

_MISSING = object()
# One lock for every patch set of the process: the attributes patched are themselves process-wide, so the
# lock guarding their replacement must be too (it holds no state of its own).
_LOCK = threading.Lock()


class Patches:
    """A set of replaced attributes; ``active`` is True from the first install until :meth:`restore`."""

    def __init__(self) -> None:
        self._saved: list[tuple[Any, str, Any, Callable]] = []
        self.active = False

    def install(self, owner: Any, name: str, make: Callable[[Callable], Callable]) -> None:
        """Replace ``owner.name`` by ``make(current)``; the wrapper passes through once this set is inert.

        Parameters
        ----------
        owner : class or module
            Where the attribute lives.
        name : str
            The attribute.
        make : callable
            Given the current value (what a call reaches now, inherited or not), returns the wrapper.
        """
        with _LOCK:
            current = getattr(owner, name)
            own = owner.__dict__.get(name, _MISSING)
            inner = make(current)

            if inspect.iscoroutinefunction(current):  # keep a coroutine function one (callers may check)
                async def wrapper(*args: Any, **kwargs: Any) -> Any:
                    return await (inner if self.active else current)(*args, **kwargs)
            else:
                def wrapper(*args: Any, **kwargs: Any) -> Any:
                    return (inner if self.active else current)(*args, **kwargs)

            wrapper.__wrapped__ = current  # type: ignore[attr-defined]
            wrapper.__name__ = getattr(current, "__name__", name)
            wrapper.__doc__ = getattr(current, "__doc__", None)
            wrapper._agentab_patches = self  # type: ignore[attr-defined]
            wrapper._agentab_own = own  # type: ignore[attr-defined]
            setattr(owner, name, wrapper)
            self._saved.append((owner, name, own, wrapper))
            self.active = True

    def restore(self) -> None:
        """Put back every attribute this set replaced (or turn inert where another set is on top)."""
        with _LOCK:
            self.active = False
            for owner, name, own, wrapper in reversed(self._saved):
                if owner.__dict__.get(name, _MISSING) is not wrapper:
                    continue  # another set is on top: it unwraps this inert wrapper when it restores
                value = own
                while getattr(value, "_agentab_patches", None) is not None and not value._agentab_patches.active:
                    value = value._agentab_own  # an inert wrapper of a set that exited first
                if value is _MISSING:
                    delattr(owner, name)
                else:
                    setattr(owner, name, value)
            self._saved.clear()
