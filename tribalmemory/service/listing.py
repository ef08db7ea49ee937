"""Listing memories without a query: newest first, in pages joined by an opaque cursor.

A page is ordered by ``(created_at, id)``, newest first; its cursor is the key of its last
memory, and the next page holds the memories whose key is below it. Memories written
meanwhile have their own keys: one newer than the cursor is never shown on a later page, one
older is shown where it belongs, so no memory that existed when paging began is shown twice
or skipped. The store orders by ``created_at`` only, so memories sharing the boundary instant
are read whole and ordered here by id.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import replace
from datetime import datetime, timedelta

from ..errors import InvalidInput
from ..models import Memory
from ..storage.base import MemoryFilter, MemoryStore
from ..timeutil import parse_iso, to_iso

Key = tuple[datetime, str]
TICK = timedelta(microseconds=1)  # the resolution of created_at
BAD_CURSOR = "cursor is not one this server gave; start again without cursor"


def key(memory: Memory) -> Key:
    return (memory.created_at, memory.id)


LISTS = ("memories", "sessions")
"""The lists that page with a cursor: each cursor names its list, so that one list's cursor
given to another is refused instead of read as a position in it."""


def encode_cursor(memory: Memory) -> str:
    return encode_key(key(memory))


def encode_key(at: Key, of: str = "memories") -> str:
    """The cursor of the list ``of`` (:data:`LISTS`) standing for the key ``at``."""
    raw = f"{of}:{to_iso(at[0])}/{at[1]}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(text: str, of: str = "memories") -> Key:
    """The key a cursor of the list ``of`` stands for; InvalidInput for anything this server
    did not give, or gave for another list."""
    if not isinstance(text, str) or not text or len(text) > 200:
        raise InvalidInput(BAD_CURSOR)
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)).decode()
        given, _, position = raw.partition(":")
        moment, memory_id = position.split("/")
        at = (parse_iso(moment), memory_id)
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise InvalidInput(BAD_CURSOR) from None
    if given != of:
        if given in LISTS:
            raise InvalidInput(
                f"cursor is one of the {given} list, not of the {of} list; "
                "start again without cursor"
            )
        raise InvalidInput(BAD_CURSOR)
    return at


def below(memories: list[Memory], cursor: Key | None) -> list[Memory]:
    """``memories`` newest first by key, only those below ``cursor``."""
    ordered = sorted(memories, key=key, reverse=True)
    return ordered if cursor is None else [m for m in ordered if key(m) < cursor]


def page(
    store: MemoryStore, where: MemoryFilter, limit: int, cursor: Key | None
) -> tuple[list[Memory], str | None]:
    """One page and the cursor of the next one (None when this is the last page)."""
    bound = where
    if cursor is not None:
        end = cursor[0] + TICK  # the cursor's own instant may hold more memories
        bound = replace(where, before=min(where.before, end) if where.before else end)
    want = limit + 1
    while True:
        fetched = store.newest(bound, want)
        found = {m.id: m for m in fetched}
        if len(fetched) == want:  # the oldest instant read may hold more memories
            instant = fetched[-1].created_at
            start = max(instant, where.after) if where.after else instant
            same = replace(bound, after=start, before=instant + TICK)
            found.update((m.id, m) for m in store.scroll(same))
        shown = below(list(found.values()), cursor)
        if len(shown) > limit or len(fetched) < want:
            chosen = shown[:limit]
            more = len(shown) > limit
            return chosen, encode_cursor(chosen[-1]) if more else None
        want *= 4  # the cursor's instant filled the read: read further
