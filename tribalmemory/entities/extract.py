"""Entities a memory names (:func:`extract_entities`): patterns for links, tickets, versions,
paths and code names (the detector's identifier patterns among them), and capitalised names
inside sentences, minus a stop list."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass

from tribalmemory.entities.aliases import canonical
from tribalmemory.entities.patterns import CODE_NAME
from tribalmemory.entities.stoplist import STOP


@dataclass(frozen=True)
class Entity:
    """One mention: its ``kind``, the ``text`` as written, its span and :func:`canonical` name."""

    kind: str
    text: str
    start: int
    end: int
    name: str


_EXT = r"(?:py|go|rs|md|toml|h|hpp|c|cc|cpp|hlsl|cs|csv|log|json|ya?ml|js|ts|txt|tmp|bak|sh|sql)"
_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("url", re.compile(r"https?://[^\s)>\]]+|\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b")),
    ("url", re.compile(r"\b[\w-]+(?:\.[\w-]+)*\.(?:com|io|org|net|dev)\b")),
    ("ticket", re.compile(r"(?<![\w&])#\d{3,}\b")),
    ("ticket", re.compile(r"\b[A-Z][A-Z0-9]+-\d+\b")),
    ("version", re.compile(r"(?<![\w.])v\d+(?:\.\d+)+\b|(?<![\w.])\d+\.\d+\.\d+(?![\w.]*\w)")),
    ("path", re.compile(r"(?:\\\\|//)[\w.-]+(?:[\\/][\w.*-]+)*(?:/\.\.\.)?")),
    (
        "path",
        re.compile(r"(?<![\w/.])(?:/?[\w.*-]+/)+[\w.*-]*\w(?:/\*)?|(?<![\w/])/[\w-]+(?:/[\w*-]+)*"),
    ),
    ("path", re.compile(r"(?<![\w/])[\w-]+/(?=[\s,;:)]|$)")),
    ("path", re.compile(r"(?<![\w/])[\w*.-]*\." + _EXT + r"\b|(?<![\w.])\.[a-z][\w.-]*[a-z]\b")),
    ("identifier", re.compile(r"\b[A-Za-z_]\w*(?:::[A-Za-z_]\w*)+")),
    ("identifier", re.compile(r"(?<![\w-])--[a-z][\w-]*")),
    ("identifier", re.compile(r"(?<![\w#])#[a-z][a-z0-9]*(?:-[a-z0-9]+)+")),
    ("identifier", re.compile(r"@?\b[A-Za-z_]\w*(?=\(\))")),
    ("identifier", CODE_NAME),  # the detector's code names (features.identifiers)
    ("identifier", re.compile(r"\b0x[0-9A-Fa-f]{4,}\b")),
    ("system", re.compile(r"\b[a-z][a-z0-9]*(?:-[a-z0-9]+)+\b")),
)
_SYSTEM_SUFFIXES = frozenset(
    "service svc srv api job jobs db vault rates worker cli app web server client bot core sdk "
    "gateway proxy queue store site repo macros".split()
)


def _plausible(kind: str, surface: str) -> bool:
    """Whether a pattern's match names something: a hyphenated word names a system only with a
    system-like last part or a digit (``ledger-service``, ``parser-v2``, not ``sign-out``); a
    relative path needs two slashes, a trailing one or a file extension (not ``gain/loss``,
    ``2025/01/09``)."""
    if kind == "system":
        return surface.rsplit("-", 1)[-1] in _SYSTEM_SUFFIXES or any(c.isdigit() for c in surface)
    if kind == "path" and not surface.startswith(("/", "\\", ".")) and "/" in surface:
        parts = [p for p in surface.split("/") if p]
        if all(p.isdigit() for p in parts):
            return False
        if surface.count("/") == 1 and not surface.endswith("/") and "." not in surface:
            return False
    return True


_CAPITALISED = re.compile(r"\b[A-Z][\w&]*(?:[+#]+)?(?:\s(?:&\s)?[A-Z][\w]*)*")
_SENTENCE_END = frozenset(".!?:")


def _sentence_initial(text: str, start: int) -> bool:
    before = start - 1
    while before >= 0 and text[before] in " \t\n(\"'`*-":
        before -= 1
    return before < 0 or text[before] in _SENTENCE_END


def _names(text: str, known: frozenset[str]) -> Iterable[tuple[str, int, int]]:
    for match in _CAPITALISED.finditer(text):
        words = match.group().split()
        start = match.start()
        while words and (
            words[0].lower() in STOP
            or (
                start == match.start()
                and _sentence_initial(text, start)
                and canonical(words[0]) not in known
                and len(words) == 1
            )
        ):
            start += len(words[0]) + 1
            words = words[1:]
        while words and words[-1].lower() in STOP:
            words = words[:-1]
        if not words:
            continue
        surface = " ".join(words)
        if len(surface) < 2 or (surface.isupper() and not any(c.isdigit() for c in surface)):
            continue  # acronyms and units (GB, PAN, HMAC) name no one thing; PS5 does
            continue
        yield surface, start, start + len(surface)


def extract_entities(text: str, known: Iterable[str] = ()) -> list[Entity]:
    """The entities ``text`` names, in order, without overlap (an earlier rule wins, then the
    longer match). ``known``: names (any alias) already seen in the corpus, which are then also
    found as a sentence's first word."""
    taught_names = frozenset(known)  # the same object when given a frozenset
    known_names = _canonical_names(taught_names)
    found: list[Entity] = []
    taken: list[tuple[int, int]] = []

    def add(kind: str, surface: str, start: int, end: int) -> None:
        surface = surface.rstrip(".(")
        end = start + len(surface)
        if any(start < e and s < end for s, e in taken):
            return
        if kind == "identifier" and surface.lower() in STOP or not _plausible(kind, surface):
            return
        taken.append((start, end))
        found.append(Entity(kind, surface, start, end, canonical(surface)))

    for kind, pattern in _RULES:
        for m in pattern.finditer(text):
            add(kind, m.group(), m.start(), m.end())
    for surface, start, end in _names(text, known_names):
        add("name", surface, start, end)
    # names the corpus taught: as written (``Priya`` opening a sentence), and in any case when
    # taught in lower case (``uv``, ``pgbouncer``); the longer first where two overlap
    taught = [m for pattern in _known_patterns(taught_names) for m in pattern.finditer(text)]
    for m in sorted(taught, key=lambda m: (m.start() - m.end(), m.start())):
        add("name", m.group(), m.start(), m.end())
    return sorted(found, key=lambda e: e.start)


@functools.lru_cache(maxsize=64)
def _canonical_names(known: frozenset[str]) -> frozenset[str]:
    """The canonical names of a known set (kept, like its patterns)."""
    return frozenset(canonical(k) for k in known)


@functools.lru_cache(maxsize=64)
def _known_patterns(known: frozenset[str]) -> tuple[re.Pattern[str], ...]:
    """One pattern for the names taught as written and one, ignoring case, for those taught in
    lower case: each memory is scanned twice, not once a name (the known set of a project
    changes seldom, so the compiled patterns are kept)."""
    out = []
    for names, flags in (
        (sorted((n for n in known if n != n.lower()), key=len, reverse=True), 0),
        (sorted((n for n in known if n == n.lower()), key=len, reverse=True), re.I),
    ):
        if names:
            either = "|".join(re.escape(n) for n in names)
            out.append(re.compile(r"(?<![\w.-])(?:" + either + r")(?![\w-])", flags))
    return tuple(out)
