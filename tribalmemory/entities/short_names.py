"""A name written short once the project knows it in full (:func:`full_name`): ``Greg`` of
``Greg Mallory``, ``Ingrid`` of ``Ingrid Sørensen``, ``Riverkeep`` of ``Riverkeep Trust``; and
the initials a text defines for a name (:func:`defined_initials`: ``KP`` of ``Kestrel Peak
(KP)``)."""

from __future__ import annotations

import re

from tribalmemory.entities.aliases import canonical
from tribalmemory.entities.known import Taught, capitalised
from tribalmemory.entities.tools import TOOLS

_DEFINED = re.compile(r" \(([A-Z]{2,5})[),;]")
"""Capitals in brackets after a word (``Kestrel Peak (KP,``): initials, maybe."""
MAKERS = frozenset(
    "Amazon Apple Google Microsoft Azure Oracle Apache Adobe Meta Cisco Intel Nvidia Samsung "
    "Mozilla Atlassian Salesforce".split()
)
"""Makers whose name opens their products' (``Google Play``): a maker alone is itself."""


def full_name(surface: str, known: Taught) -> str | None:
    """The canonical name of the one known name of two or three capitalised words that
    ``surface``, one capitalised word, opens (``Greg`` -> ``greg-mallory`` once ``Greg
    Mallory`` is known); None when there is none, or more than one (``Greg Mallory`` and
    ``Greg Tanaka``), or when the word is a maker or a listed tool (``Google``, ``Kafka``)."""
    if not _one_word(surface) or surface in MAKERS or surface.lower() in TOOLS:
        return None
    longer = {
        " ".join(words)
        for words, seps in known.exact.get(surface, ())
        if 2 <= len(words) <= 3
        and all(sep == " " for sep in seps)
        and all(_one_word(word) for word in words[1:])
    }
    return canonical(longer.pop()) if len(longer) == 1 else None


def _one_word(surface: str) -> bool:
    """One capitalised word of letters, the others in small letters, in any alphabet
    (``Greg``, ``Sørensen``; not ``McKay`` nor ``IHC``)."""
    return surface.isalpha() and surface[0].isupper() and surface[1:].islower()


def defined_initials(text: str) -> list[tuple[int, int]]:
    """Where ``text`` defines initials: two to five capitals in brackets right after the
    capitalised words they are the initials of (``KP`` of ``Kestrel Peak (KP, Colorado)``),
    which then name a thing of the project (the entity reads count them for the name:
    :func:`tribalmemory.entities.short_forms.initials_of`)."""
    spans = []
    for m in _DEFINED.finditer(text):
        words = text[: m.start()].split()[-len(m.group(1)) :]
        if len(words) == len(m.group(1)) and all(capitalised(w) for w in words):
            if "".join(w[0] for w in words) == m.group(1):
                spans.append(m.span(1))
    return spans
