"""Entities an LLM's record names (the summary's ``metadata.entities``), kept for a memory when
its text writes them: no call of its own, the names of an answer already paid for."""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

from .acronyms import generic_with_digits
from .aliases import canonical
from .extract import extract_entities
from .stoplist import (
    ALONE,
    CAPITALISED_WORDS,
    GENERIC_ACRONYMS,
    GROUPS,
    STOP,
)

NAME_MAX = 80
"""A longer "name" is a phrase (a sentence the model wrote), no one thing."""

_SPACES = re.compile(r"\s+")


def names_no_one_thing(name: str) -> bool:
    """Whether ``name`` names no one thing: empty, longer than :data:`NAME_MAX`, a stop word, a
    language or a built-in type, a group of people in small letters (``users``; not
    ``Android``), a generic acronym written in capitals or in small letters (``API``, ``api``,
    ``UTF-8``; not ``iOS``) or a word written in capitals as syntax (``SELECT``)."""
    if not name or len(name) > NAME_MAX:
        return True
    lower = name.lower()
    if lower in STOP or lower in ALONE or name in CAPITALISED_WORDS:
        return True
    if name.islower() and name in GROUPS:  # users, platform; not Android, iOS
        return True
    if not (name.isupper() or name.islower()) or not name[0].isalnum():
        return False  # iOS, Android, --fasta: no acronym
    return name.upper() in GENERIC_ACRONYMS or generic_with_digits(name)


@lru_cache(maxsize=1024)
def _written(form: str) -> re.Pattern[str]:
    """``form`` as a whole word in any case, spaces matching any run of spaces: not inside a
    longer word, dotted name, flag or hyphenated name, nor (a path or a file's name) inside a
    longer path (``refresh.py`` is not written by ``auth/refresh.py``); a word is written
    beside a slash (``Xbox`` in ``PC/Xbox``), a ticket after its repository (``#188`` in
    ``wren-eval#188``)."""
    body = r"\s+".join(re.escape(part) for part in form.split(" "))
    slash = "/" if "/" in form or "." in form else ""
    before = "(?<![#&])" if form.startswith("#") else rf"(?<![\w{slash}.@#-])"
    return re.compile(rf"{before}{body}(?![\w{slash}@-]|\.\w)", re.IGNORECASE)


@lru_cache(maxsize=1024)
def kind_of(name: str) -> tuple[str, str]:
    """The kind and canonical name the rules give ``name`` when one entity spans it whole
    (``#2214`` a ticket, ``auth/refresh.py`` a path); else ``name`` and its canonical form.
    Kept per name: a record's names are matched against each member's text."""
    found = extract_entities(name)
    if len(found) == 1 and found[0].start == 0 and found[0].end == len(name):
        return found[0].kind, found[0].name
    return "name", canonical(name)


def named_mentions(text: str, names: Iterable[str]) -> dict[str, tuple[str, list[str]]]:
    """Of the ``names`` an LLM's record gave, those ``text`` writes, as stored mentions:
    canonical name -> (kind, surfaces as ``text`` writes them, in order). A name is written when
    it, or its canonical form (a release also without its ``v``), is a whole word of ``text``
    in any case (:func:`_written`); names that name no one thing (:func:`names_no_one_thing`)
    are dropped."""
    found: dict[str, tuple[str, list[str]]] = {}
    lowered = text.lower()
    for given in names:
        name = _SPACES.sub(" ", str(given)).strip().strip("'\"`")
        if names_no_one_thing(name):
            continue
        kind, key = kind_of(name)
        if not key:
            continue
        forms = [name, key]
        if kind == "version" and key.startswith("v"):
            forms.append(key[1:])  # a release written without its v: 5.11.2
        spans: dict[int, str] = {}
        for form in dict.fromkeys(forms):
            if form.partition(" ")[0].lower() not in lowered:  # most names: not written at all
                continue
            for m in _written(form).finditer(text):
                spans.setdefault(m.start(), m.group())
        if not spans:
            continue
        _, surfaces = found.setdefault(key, (kind, []))
        for _, surface in sorted(spans.items()):
            if surface not in surfaces:
                surfaces.append(surface)
    return found
