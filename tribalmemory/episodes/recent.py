"""A bounded map that forgets its least recently used entry first: the engine's caches
(members' vectors and features, what summaries read off a text) are each one of these."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class Recent(Generic[K, V]):
    """At most ``capacity`` entries; reading or writing one makes it the most recent. A value
    is never None (:meth:`get` answers None for a key not kept): wrap one that may be."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._entries: OrderedDict[K, V] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: K) -> V | None:
        value = self._entries.get(key)
        if value is not None:
            self._entries.move_to_end(key)
        return value

    def put(self, key: K, value: V) -> None:
        self._entries[key] = value
        self._entries.move_to_end(key)
        while len(self._entries) > self.capacity:
            self._entries.popitem(last=False)

    def drop(self, keys: Iterable[K]) -> None:
        for key in keys:
            self._entries.pop(key, None)
