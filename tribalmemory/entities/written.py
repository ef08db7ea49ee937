"""A name as the memories write it, word for word: how an entity read answers for a name the
extraction never stored (``bookings``, ``heron``, ``EX``)."""

from __future__ import annotations

import re
from functools import lru_cache

from tribalmemory.entities.aliases import PRE_RELEASE, RELEASE

SNAPSHOT = re.compile(r"v?(\d+(?:\.\d+){1,3}-snapshot)")
"""A snapshot build's version (``v4.0-SNAPSHOT``), in small letters; group 1 without its ``v``,
which a project writes or leaves out as it does a release's."""


def version(name: str) -> re.Match[str] | None:
    """``name`` read as a release or a snapshot's version (group 1: without its ``v``)."""
    written = name.strip().lower()
    return RELEASE.fullmatch(written) or SNAPSHOT.fullmatch(written)


@lru_cache(maxsize=256)
def _pattern(name: str) -> re.Pattern[str] | None:
    words = name.split()
    if not words:
        return None
    flags = 0 if any(w[1:] != w[1:].lower() for w in words) else re.IGNORECASE
    release = version(name)
    if release:  # with its v or without, as canonical() reads a release
        flags, written = re.IGNORECASE, "v?" + re.escape(release.group(1))
        written += "" if "-" in release.group(1) else f"(?!{PRE_RELEASE})"  # not its rc
    else:
        written = r"\s+".join(re.escape(w) for w in words)
    # not inside a longer word, nor a part of a longer release (v4 of v4.1, 2.4 of 1.2.4)
    return re.compile(r"(?<!\w)(?<!\d\.)" + written + r"(?!\w|\.\d)", flags)


def written_forms(text: str, name: str) -> list[str]:
    """The ways ``text`` writes ``name`` word for word, each as written, in order of first
    appearance; empty when it does not. The name is matched whole: no letter, digit or
    underscore on either side, nor a longer release (``v4`` is not in ``v4.1``); its words
    may be parted by any run of spaces. A name with a capital after a word's first letter is
    matched with its capitals (``EX`` is not ``ex``, ``iOS`` not ``ios``); others in any case
    (``heron`` is also ``Heron``, ``Bookings`` also ``bookings``). A release is matched with
    its ``v`` or without (``v4.8.0`` and ``4.8.0``, as :func:`~.aliases.canonical` reads
    them). Other spellings (``orders service`` of ``orders-svc``) are the stored entities'
    aliases, not this."""
    pattern = _pattern(name)
    if pattern is None:
        return []
    return list(dict.fromkeys(m.group(0) for m in pattern.finditer(text)))


@lru_cache(maxsize=256)
def _alone(word: str) -> re.Pattern[str]:
    return re.compile(r"(?<![\w./\\-])" + re.escape(word) + r"(?![\w/\\-]|\.\w)")


def written_alone(texts: list[str], word: str) -> list[int]:
    """The indexes of ``texts`` that write ``word`` as written, alone: not inside a longer
    word, path, code or name of hyphenated words (``sarek``, ``sarek's``; not
    ``nf-core/sarek``, ``sarek.nf``, ``ingress-sarek``)."""
    alone = _alone(word)
    return [i for i, text in enumerate(texts) if alone.search(text)]


_BEFORE = re.compile(r"([\w'+-]+) $")
_AFTER = re.compile(r" ([\w'+-]+)")


def written_apart(texts: list[str], word: str, other: str) -> list[int]:
    """The indexes of ``texts`` that write the capitalised ``word``, a word of a name of two,
    alone (:func:`written_alone`; none when the project writes it in small letters, a word of
    its prose then: ``applied`` of ``Applied Materials``) or beside the name's ``other`` word,
    and not beside another capitalised word, which makes it part of another name (``Play`` of
    ``Google Play``, ``Epic`` of ``Epic Games``; not in ``Play Console``, ``SQL Server`` nor
    ``Epic Online Services``)."""
    if written_alone(texts, word.lower()):
        return []
    alone = _alone(word)

    def named(beside: re.Match[str] | None) -> bool:  # capitalised, not as a sentence's first
        if beside is None or not beside.group(1)[0].isupper() or beside.group(1) == other:
            return False
        return beside.string[: beside.start(1)].rstrip()[-1:] not in ("", ".", "!", "?", ":")

    def apart(text: str, start: int, end: int) -> bool:
        return not named(_BEFORE.search(text, 0, start)) and not named(_AFTER.match(text, end))

    return [
        i
        for i, text in enumerate(texts)
        if any(apart(text, m.start(), m.end()) for m in alone.finditer(text))
    ]


def search_text(name: str) -> str:
    """What to look ``name`` up by in a word index: the name, and a release also without its
    ``v`` (``v4.8.0 4.8.0``: an index reads ``v4`` and ``4`` as two words)."""
    release = version(name)
    return f"v{release.group(1)} {release.group(1)}" if release else name
