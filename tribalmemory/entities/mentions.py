"""A memory's entities as stored: canonical name -> kind and the surfaces it was written as."""

from __future__ import annotations

from collections.abc import Iterable

from .extract import extract_entities


def mentions_of(text: str, known: Iterable[str] = ()) -> dict[str, tuple[str, list[str]]]:
    """The entities ``text`` names, each once: its kind (that of its first mention) and its
    surfaces in order of first appearance."""
    found: dict[str, tuple[str, list[str]]] = {}
    for entity in extract_entities(text, known):
        kind, surfaces = found.setdefault(entity.name, (entity.kind, []))
        if entity.text not in surfaces:
            surfaces.append(entity.text)
    return found
