"""What the engine reads off a memory's text, kept: summaries read every member again.

A summary job, and the rewrite after a member left, read each member of the episode anew:
its decision, its lesson, its event cue, the entities its causes name. Each is a pure function
of the text, so :func:`by_text` keeps the most recently used answers, keyed by a 128-bit
BLAKE2 digest of the text rather than the text itself (a memory may hold 20,000 characters).
"""

from __future__ import annotations

import functools
import hashlib
import threading
from collections.abc import Callable
from typing import TypeVar

from .recent import Recent

TEXTS_KEPT = 4096  # answers kept per reading: 0.5 MB (decisions) to 1.2 MB (entities)

T = TypeVar("T")


def digest(text: str) -> bytes:
    """A 128-bit digest of ``text``: equal for equal texts, and in practice only for them."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def by_text(maxsize: int = TEXTS_KEPT) -> Callable[[Callable[[str], T]], Callable[[str], T]]:
    """Keep the answers of a pure function of one text (an immutable answer: the callers
    share it). Safe on threads: summaries are composed on one."""

    def decorate(function: Callable[[str], T]) -> Callable[[str], T]:
        kept: Recent[bytes, tuple[T]] = Recent(maxsize)  # in a 1-tuple: None is an answer
        lock = threading.Lock()

        @functools.wraps(function)
        def reading(text: str) -> T:
            key = digest(text)
            with lock:
                hit = kept.get(key)
            if hit is not None:
                return hit[0]
            value = function(text)
            with lock:
                kept.put(key, (value,))
            return value

        return reading

    return decorate
