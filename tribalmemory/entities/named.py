"""Entities an LLM's record names (the summary's ``metadata.entities``), kept for a memory when
its text writes them: no call of its own, the names of an answer already paid for."""

from __future__ import annotations

import re
from collections.abc import Iterable

from .aliases import canonical
from .extract import extract_entities
from .stoplist import (
    ALONE,
    CAPITALISED_WORDS,
    GENERIC_ACRONYMS,
    GENERIC_WITH_DIGITS,
    GROUPS,
    STOP,
)

NAME_MAX = 80
"""A longer "name" is a phrase (a sentence the model wrote), no one thing."""

_SPACES = re.compile(r"\s+")


def names_no_one_thing(name: str) -> bool:
    """Whether ``name`` names no one thing: empty, longer than :data:`NAME_MAX`, or a stop
    word, a group of people, a language or a built-in type, a generic acronym or a word
    written in capitals as syntax (``API``, ``users``, ``the``, ``SELECT``)."""
    if not name or len(name) > NAME_MAX:
        return True
    lower, upper = name.lower(), name.upper().replace("-", "")
    return (
        lower in STOP
        or lower in GROUPS
        or lower in ALONE
        or upper in GENERIC_ACRONYMS
        or upper in GENERIC_WITH_DIGITS
        or name.upper() in CAPITALISED_WORDS
    )


def _written(text: str, form: str) -> re.Pattern[str]:
    """``form`` as a whole word in any case: not inside a longer word, path, dotted name,
    flag or hyphenated name (``refresh.py`` is not written by ``auth/refresh.py``), spaces
    matching any run of spaces."""
    body = r"\s+".join(re.escape(part) for part in form.split(" "))
    return re.compile(rf"(?<![\w/.@#-]){body}(?![\w/@-]|\.\w)", re.IGNORECASE)


def kind_of(name: str) -> tuple[str, str]:
    """The kind and canonical name the rules give ``name`` when one entity spans it whole
    (``#2214`` a ticket, ``auth/refresh.py`` a path); else ``name`` and its canonical form."""
    found = extract_entities(name)
    if len(found) == 1 and found[0].start == 0 and found[0].end == len(name):
        return found[0].kind, found[0].name
    return "name", canonical(name)


def named_mentions(text: str, names: Iterable[str]) -> dict[str, tuple[str, list[str]]]:
    """Of the ``names`` an LLM's record gave, those ``text`` writes, as stored mentions:
    canonical name -> (kind, surfaces as ``text`` writes them, in order). A name is written when
    it, or its canonical form, is a whole word of ``text`` in any case; names that name no one
    thing (:func:`names_no_one_thing`) are dropped."""
    found: dict[str, tuple[str, list[str]]] = {}
    for given in names:
        name = _SPACES.sub(" ", str(given)).strip().strip("'\"`")
        if names_no_one_thing(name):
            continue
        kind, key = kind_of(name)
        if not key or names_no_one_thing(key):
            continue
        spans: dict[int, str] = {}
        for form in dict.fromkeys((name, key)):
            for m in _written(text, form).finditer(text):
                spans.setdefault(m.start(), m.group())
        if not spans:
            continue
        _, surfaces = found.setdefault(key, (kind, []))
        for _, surface in sorted(spans.items()):
            if surface not in surfaces:
                surfaces.append(surface)
    return found
