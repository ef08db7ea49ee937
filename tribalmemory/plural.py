"""Counts in text for people: ``counted(1, "memory")`` is "1 memory", never "1 memories"."""

from __future__ import annotations


def plural(noun: str) -> str:
    """The English plural of a regular ``noun`` (its last word): memory → memories,
    episode → episodes, day → days."""
    if noun.endswith("y") and noun[-2:-1] not in ("a", "e", "i", "o", "u", ""):
        return noun[:-1] + "ies"
    return noun + "s"


def counted(count: int, noun: str) -> str:
    """``count`` and ``noun``, in the plural unless the count is 1."""
    return f"{count} {noun if count == 1 else plural(noun)}"
