"""Required run-level fields a file does not hold (:attr:`agentab.formats._base.Item.missing`).

A reader that cannot find ``run_id``, ``task_id``, ``seed`` or ``outcome`` in
the file leaves it out of the record and names it in ``Item.missing`` with the
field path and reason it would have rejected the run with (:func:`absent`).
The loader fills such fields from ``fields={"path": ...}`` or ``outcomes=``;
what nothing fills becomes the rejection :func:`settle` gives.
"""

from __future__ import annotations

from dataclasses import replace

from agentab.formats._base import Item

__all__ = ["absent", "settle"]


def absent(missing: dict[str, tuple[str | None, str]], key: str, field: str | None, reason: str) -> None:
    """Record that the run lacks ``key`` (an agentab run-level field): ``(field, reason)``, the first one kept.

    Examples
    --------
    >>> missing = {}
    >>> absent(missing, "outcome", "reward", "no outcome: the run has no 'reward'")
    >>> missing
    {'outcome': ('reward', "no outcome: the run has no 'reward'")}
    """
    missing.setdefault(key, (field, reason))


def settle(item: Item) -> Item:
    """The rejection of ``item`` for its first missing field (naming its run id, if it has one), or ``item``
    unchanged when nothing is missing.

    Examples
    --------
    >>> settle(Item(3, record={"run_id": "r"}, missing={"outcome": ("reward", "no outcome")}))
    Item(line=3, record=None, field='reward', reason='no outcome', source=None, missing=None, run_id='r')
    >>> settle(Item(3, record={"run_id": "r"})).record
    {'run_id': 'r'}
    """
    if not item.missing:
        return item
    field, reason = next(iter(item.missing.values()))
    run_id, record = item.run_id, item.record
    if run_id is None and record is not None:  # the rejection names the run it has so far
        value = record.get("run_id") if isinstance(record, dict) else getattr(record, "run_id", None)
        run_id = None if value is None else str(value)
    return replace(item, record=None, field=field, reason=reason, missing=None, run_id=run_id)
