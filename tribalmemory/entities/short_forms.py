"""The shorter ways a project writes a name of several words: its parts (:func:`short_forms`,
``Tagus`` of the ship ``Norvane Tagus``, ``ETS`` of ``EU ETS``) and its initials
(:func:`initials_of`, ``HVH`` of ``Harrow Vale Hospital``, ``CDA`` of ``Guidewire Cloud Data
Access``); and the other number of a name (:func:`number_forms`, ``incoterm`` of
``Incoterms``). Asking for the name counts the entities stored under them too, when a part
names a thing on its own (:func:`stands_alone`: ``Spring`` of ``Spring 2027`` is a word, not a
name; ``Ingrid`` of ``Ingrid Sørensen`` is a name) and initials are written in capitals."""

from __future__ import annotations

import re
from collections.abc import Iterable

from tribalmemory.entities.aliases import canonical
from tribalmemory.entities.short_names import MAKERS
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
    joins it (``SOS`` of ``Secretary of State``, besides ``SS``); then of each shorter run of
    three words or more in a row, not beginning or ending with a connective, of three letters
    or more (``CDA`` of ``Guidewire Cloud Data Access``, ``DOI`` of ``Division of Insurance``;
    two letters of a part would be too common). None for one word, a path or code."""
    words = _words(written)
    if not all(w[0].isalnum() for w in words):
        return []
    runs = [words]
    for first in range(len(words)):
        for last in range(first + 3, len(words) + 1):
            run = words[first:last]
            if len(run) < len(words) and not {run[0].lower(), run[-1].lower()} & _CONNECTIVES:
                runs.append(run)
    found = []
    for run in runs:
        kept = [w for w in run if w.lower() not in _CONNECTIVES]
        least = 2 if run is words else 3
        found += ["".join(w[0] for w in ws).upper() for ws in (kept, run) if len(ws) >= least]
    return list(dict.fromkeys(found))


def number_forms(name: str) -> list[str]:
    """The other number of a canonical name ending in a word of letters: ``incoterm`` of
    ``incoterms``, ``poll-pads`` of ``poll-pad``. None for a word of two letters, a word
    ending in ``ss`` (``access``), a number, a path or a dotted name."""
    last = name.rpartition("-")[2]
    if len(last) < 3 or not last.isalpha() or _NOT_WORDS.search(name) or last.endswith("ss"):
        return []
    return [name[:-1] if last.endswith("s") else name + "s"]


_CODE_PART = re.compile(r"(?=[a-z]*\d)(?=\d*[a-z])[a-z\d]{2,}")
"""A part of letters and digits both (``k11``, ``pos02``): a code's own number."""


def code_end(name: str) -> str | None:
    """The last part of a canonical code of hyphenated parts when it is letters and digits
    both, which a project writes alone for the whole (``k11`` of ``etch-k11``); None for other
    names (``orders-service``, ``skua-07``: a number alone names nothing)."""
    if _NOT_WORDS.search(name):
        return None
    first, _, last = name.rpartition("-")
    return last if first and _CODE_PART.fullmatch(last) else None


def proper_name(written: str) -> bool:
    """Whether ``written`` is a name of several capitalised words of letters (``Ingrid
    Sørensen``, ``Microsoft Teams``, ``Colorado Division of Insurance``): no number, no word
    in small letters but a connective (not ``Spring 2027`` nor ``Douglas sea scale``)."""
    words = _words(written)
    return bool(words) and all((w[0].isupper() and w.isalpha()) or w in _CONNECTIVES for w in words)


def stands_alone(name: str, aliases: Iterable[str], of: str = "") -> bool:
    """Whether a stored entity found as a part of a name (``of``, as written) names a thing
    on its own: several words, a digit, written in capitals (an acronym) or no English word
    (``tagus``, not ``spring``); or a word always written capitalised that is part of a
    proper name (:func:`proper_name`: ``Ingrid`` of ``Ingrid Sørensen``, ``Teams`` of
    ``Microsoft Teams``), unless it is a maker opening its products' names (``Microsoft``)."""
    written = list(aliases)
    if "-" in name or any(c.isdigit() for c in name):
        return True
    if any(_ACRONYM.fullmatch(a) for a in written):
        return True
    if name not in english_words():
        return True
    capitalised = bool(written) and all(a[:1].isupper() for a in written)
    return capitalised and proper_name(of) and name.title() not in MAKERS
