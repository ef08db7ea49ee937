"""A memory's entities as stored: canonical name -> kind and the surfaces it was written as."""

from __future__ import annotations

from collections.abc import Collection, Iterable

from .acronyms import kind_words
from .confidence import sure_model
from .extract import Entity, extract_entities

Found = dict[str, tuple[str, list[str]]]
"""Canonical name -> the kind of its first mention and its surfaces in order of appearance."""


def _grouped(entities: Iterable[Entity]) -> Found:
    found: Found = {}
    for entity in entities:
        kind, surfaces = found.setdefault(entity.name, (entity.kind, []))
        if entity.text not in surfaces:
            surfaces.append(entity.text)
    return found


def mentions_of(text: str, known: Iterable[str] = ()) -> Found:
    """The entities ``text`` names, each once: its kind (that of its first mention) and its
    surfaces in order of first appearance."""
    return _grouped(extract_entities(text, known))


def judged_mentions(text: str, known: Collection[str] = frozenset()) -> tuple[Found, set[str]]:
    """:func:`mentions_of`, and the names among them the extraction is unsure of: none of their
    spans in ``text`` is sure (:mod:`.confidence`)."""
    entities = extract_entities(text, known)
    sure = sure_model().sure(text, entities, known)
    found = _grouped(entities)
    return found, set(found) - {e.name for e, ok in zip(entities, sure, strict=True) if ok}


WARM_UP_TEXT = (
    "Nora traced the TLS errors of the payouts-api to BIL-11433 in src/app/payouts.py; the "
    "rollback to v2.4.1 and two NRFs fixed it, said Alice."
)
"""A memory naming one entity of each common kind, extracted once by :func:`warm_up`."""


def warm_up() -> None:
    """Load what the extraction reads on first use (the English word list, the sure model)
    and take its first steps, by finding the entities of one memory: about 60 ms of CPU,
    which a daemon spends before its first answer instead of inside a request."""
    judged_mentions(WARM_UP_TEXT)
    kind_words(WARM_UP_TEXT)
