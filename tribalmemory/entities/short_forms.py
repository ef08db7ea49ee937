"""The shorter ways a project writes a name of several words: its parts (:func:`short_forms`,
``Tagus`` of the ship ``Norvane Tagus``, ``ETS`` of ``EU ETS``) and its initials
(:func:`initials_of`, ``HVH`` of ``Harrow Vale Hospital``). Asking for the name counts the
entities stored under them too, when a part names a thing on its own (:func:`stands_alone`:
``Spring`` of ``Spring 2027`` is a word, not a name) and initials are written in capitals."""

from __future__ import annotations

import re
from collections.abc import Iterable

from tribalmemory.entities.aliases import canonical
from tribalmemory.entities.words import english_words

_CONNECTIVES = frozenset("a an and at by de for in of on the to &".split())
"""Words that join a name's parts (``Secretary of State``): no part, no initial."""
_NOT_WORDS = re.compile(r"[/\\._]")
"""A path, a dotted or an underscored name: one token, whose pieces are no short forms."""
_ACRONYM = re.compile(r"[A-Z][A-Z0-9]+")


MAX_WORDS = 8
"""A name of more words is a phrase, whose parts are not its short forms."""


def _words(written: str) -> list[str]:
    """The words of a name written with spaces; none for a single word, a phrase (more than
    :data:`MAX_WORDS`), a path or code."""
    words = written.split()
    if not 2 <= len(words) <= MAX_WORDS or _NOT_WORDS.search(written):
        return []
    return words


def short_forms(written: str) -> list[str]:
    """The canonical names of ``written``'s parts: each run of its words in a row but the
    whole (``norvane``, ``tagus`` of ``Norvane Tagus``), not beginning or ending with a
    connective. None for a name of one word, a path or code (its initials:
    :func:`initials_of`)."""
    words = _words(written)
    forms: list[str] = []
    for first in range(len(words)):
        for last in range(first + 1, len(words) + 1):
            run = words[first:last]
            if len(run) == len(words) or run[0].lower() in _CONNECTIVES:
                continue
            if run[-1].lower() in _CONNECTIVES:
                continue
            forms.append(canonical(" ".join(run)))
    return list(dict.fromkeys(f for f in forms if f))


def initials_of(written: str) -> list[str]:
    """The initials of a name of two words or more, in capitals: of its words but the
    connectives (``HVH`` of ``Harrow Vale Hospital``), then of them all when a connective
    joins it (``SOS`` of ``Secretary of State``, besides ``SS``). None for one word, a path
    or code."""
    words = _words(written)
    if not all(w[0].isalnum() for w in words):
        return []
    kept = [w for w in words if w.lower() not in _CONNECTIVES]
    found = ["".join(w[0] for w in ws).upper() for ws in (kept, words) if len(ws) >= 2]
    return list(dict.fromkeys(found))


def stands_alone(name: str, aliases: Iterable[str]) -> bool:
    """Whether a stored entity found as a part of a name names a thing on its own: several
    words, a digit, written in capitals (an acronym) or no English word (``tagus``, not
    ``spring``)."""
    written = list(aliases)
    if "-" in name or any(c.isdigit() for c in name):
        return True
    if any(_ACRONYM.fullmatch(a) for a in written):
        return True
    return name not in english_words()
