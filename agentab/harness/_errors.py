"""The harness's typed errors (to move into ``agentab/errors.py``).

Examples
--------
>>> err = NetworkBlocked("example.com", 443)
>>> print(err)
[Errno 111] network blocked: example.com:443 is not on the allow list
>>> isinstance(err, ConnectionRefusedError), isinstance(err, PermissionError), err.host
(True, True, 'example.com')
"""

from __future__ import annotations

import errno

__all__ = ["HarnessError", "NetworkBlocked"]


class HarnessError(ValueError):
    """A harness argument (a network mode, a mock server's endpoints, ...) is invalid."""


class NetworkBlocked(ConnectionRefusedError, PermissionError):
    """An outbound connection (or name lookup) refused by a :class:`~agentab.harness.network.NetworkPolicy`.

    Parameters
    ----------
    host : str
        The host (name or address) the agent tried to reach.
    port : int or None
        Its port (None for a name lookup without one).
    """

    def __init__(self, host: str, port: int | None) -> None:
        self.host, self.port = host, port
        where = host if port is None else f"{host}:{port}"
        super().__init__(errno.ECONNREFUSED, f"network blocked: {where} is not on the allow list")

    def __reduce__(self):  # rebuilt from (host, port), not from OSError's (errno, text)
        return (type(self), (self.host, self.port))
