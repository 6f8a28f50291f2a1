"""The Dask engine of ``load_traces(..., engine="dask")``: blocks read and scored in a cluster's workers (internal).

Dask is optional (``pip install 'agentab[dask]'``): it is imported here, on first use, never by
``import agentab``. ``scheduler`` is None (the Dask client already made in this process,
``distributed.get_client()``; without one, Dask's local threaded scheduler), a scheduler's address
(``"tcp://host:8786"``: a client is made for it) or a ``distributed.Client``. Each block
(:class:`agentab.traces._stream.Block`: a file, or a byte range of a large JSON Lines file) is one task;
the workers read it with the loader's own code (agentab must be installed on them, at the same
version), and only small results come back: each block's rejections, accepted run ids and run index at
load, each batch's per-run score table at :func:`agentab.score`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from agentab.errors import TraceError


def _distributed() -> Any:
    try:
        import dask  # noqa: F401
        import distributed
    except ImportError as err:  # pragma: no cover - dask is installed where the tests run
        raise TraceError("engine='dask' needs Dask: pip install 'agentab[dask]' (dask and distributed)") from err
    return distributed


class DaskRunner:
    """Runs block tasks on a Dask scheduler: a ``distributed.Client``, or the local threaded scheduler."""

    def __init__(self, scheduler: Any = None) -> None:
        distributed = _distributed()
        if scheduler is None:
            try:
                scheduler = distributed.get_client()
            except ValueError:  # no client in this process: Dask's local scheduler
                scheduler = None
        elif isinstance(scheduler, str):
            try:
                scheduler = distributed.Client(scheduler, set_as_default=False)
            except (OSError, TimeoutError) as err:
                raise TraceError(f"cannot reach the Dask scheduler at {scheduler!r}: {err}") from err
        elif not isinstance(scheduler, distributed.Client):
            raise TypeError("`scheduler` must be None, a Dask scheduler's address or a distributed.Client, got "
                            f"{type(scheduler).__name__}")
        self.client = scheduler

    def map(self, function: Callable[..., Any], blocks: Sequence[Any], *args: Any) -> list[Any]:
        return self.map_each(function, list(blocks), [() for _ in blocks], *args)

    def map_each(self, function: Callable[..., Any], blocks: list[Any], per_block: list[tuple[Any, ...]],
                 *args: Any) -> list[Any]:
        """``function(block, *per_block[k], *args)`` of every block, as Dask tasks; the results in block order."""
        if not blocks:
            return []
        if self.client is None:
            import dask

            tasks = [dask.delayed(function, pure=False)(block, *own, *args) for block, own in zip(blocks, per_block)]
            return list(dask.compute(*tasks))
        futures = [self.client.submit(function, block, *own, *args, pure=False)
                   for block, own in zip(blocks, per_block)]
        try:
            return self.client.gather(futures)
        finally:
            for future in futures:
                future.release()

    def describe(self) -> str:
        return "Dask's local scheduler" if self.client is None else f"the Dask scheduler at {self.client.scheduler.address}"

