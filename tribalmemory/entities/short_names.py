"""A name written short once the project knows it in full (:func:`full_name`): ``Greg`` of
``Greg Mallory``, ``Riverkeep`` of ``Riverkeep Trust``."""

from __future__ import annotations

import re

from tribalmemory.entities.aliases import canonical
from tribalmemory.entities.known import Taught
from tribalmemory.entities.tools import TOOLS

_WORD = re.compile(r"[A-Z][a-z]+")
"""One capitalised word of letters: a first name, a company's or a place's first word."""
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
    if not _WORD.fullmatch(surface) or surface in MAKERS or surface.lower() in TOOLS:
        return None
    longer = {
        " ".join(words)
        for words, seps in known.exact.get(surface, ())
        if 2 <= len(words) <= 3
        and all(sep == " " for sep in seps)
        and all(_WORD.fullmatch(word) for word in words[1:])
    }
    return canonical(longer.pop()) if len(longer) == 1 else None
