"""What the detector knows of a memory and of an episode: pure functions, no I/O.

A memory's terms (:func:`tokenize`, :func:`identifiers`, :func:`terms_of`), the names it uses
(:func:`proper_names`) and its size (:func:`content_size`) make its :class:`MemoryFeatures`;
an episode's :class:`EpisodeFeatures` are kept up to date member by member
(:func:`add_member`) or rebuilt from its stored members (:func:`build_episode`).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import cached_property
from typing import Any

import numpy as np

from tribalmemory.entities.patterns import CODE_NAME, NUMBER_REF, PATH, TICKET

_WORD = re.compile(r"[a-z0-9]+")


def tokenize(text: str) -> frozenset[str]:
    """Content terms used for the rare-term evidence: lower-case alphanumeric runs of 3+
    characters that are not pure numbers, with a trailing plural ``s`` removed from words
    longer than four letters. Language- and domain-neutral on purpose: no stop list (rare-ness
    comes from the online IDF), no keywords."""
    out = set()
    for tok in _WORD.findall(text.lower()):
        if len(tok) < 3 or tok.isdigit():
            continue
        if len(tok) > 4 and tok.endswith("s") and not tok.endswith("ss"):
            tok = tok[:-1]
        out.add(tok)
    return frozenset(out)


_RUN = re.compile(r"\w+")


def content_size(content: str) -> int:
    """How many words ``content`` has, in any script: runs of three or more letters or digits
    that are not a number, and in scripts written without spaces (wide characters: Chinese,
    Japanese) a word per two characters. What :attr:`MemoryFeatures.says_little` counts;
    unlike :func:`tokenize`, which reads Latin letters only, it knows Cyrillic or Greek."""
    size = 0
    for run in _RUN.findall(content):
        if run.isdigit():
            continue
        # no ASCII character is wide: most runs need no look-up per character
        wide = (
            0 if run.isascii() else sum(1 for ch in run if unicodedata.east_asian_width(ch) in "WF")
        )
        size += wide // 2 + (1 if len(run) - wide >= 3 else 0)
    return size


FEW_WORDS = 3
"""A memory with at most this many words (:func:`content_size`) says too little to be placed
by them (:attr:`MemoryFeatures.says_little`); it leans to the episode its author wrote in last
(:func:`own_thread`, the join model's ``own_thread`` feature)."""


_CAPITALISED = re.compile(r"[A-Z][A-Za-z0-9]{2,}")
_SENTENCE_END = frozenset(".!?")


def proper_names(content: str) -> frozenset[str]:
    """The words of ``content`` written with a capital inside a sentence (not its first word):
    the people, places and things it names, as :func:`tokenize` spells terms. Languages that
    capitalise nouns or sentences only add words; text in lower case names none."""
    out: set[str] = set()
    for match in _CAPITALISED.finditer(content):
        start = match.start()
        if start and content[start - 1].isalnum():
            continue  # inside a word (camelCase)
        before = start - 1
        while before >= 0 and content[before].isspace():
            before -= 1
        if before < 0 or content[before] in _SENTENCE_END:
            continue  # a sentence's first word is capitalised whatever it is
        out |= tokenize(match.group())
    return frozenset(out)


IDENTIFIER_MARK = "#"
"""Prefix of the identifier terms (:func:`identifiers`), which :func:`tokenize` never makes."""

_IDENTIFIER_PATTERNS: tuple[tuple[re.Pattern[str], re.Pattern[str] | None], ...] = (
    (NUMBER_REF, re.compile(r"\d{3}")),
    (TICKET, re.compile(r"-\d")),
    (PATH, re.compile("/")),
    (CODE_NAME, None),
)
"""The identifier patterns, each with a cheap pattern that every match of it contains (a
scan without backtracking: a memory without three digits in a row, a dash before a digit or
a slash skips the pattern)."""


def identifiers(content: str) -> frozenset[str]:
    """The identifiers ``content`` names, as terms marked with :data:`IDENTIFIER_MARK`: numbers
    of three digits or more (``#26160``, ``PR 4521``), ticket keys (``PAY-1234``), paths
    (``src/ledger/recon.py``) and code names (``broadcast_shapes``, ``refreshToken``,
    ``np.broadcast_arrays``), lower-cased. :func:`tokenize` breaks them into words or drops
    them (numbers); kept whole they are the strongest lexical tie between two memories."""
    out: set[str] = set()
    for pattern, needs in _IDENTIFIER_PATTERNS:
        if needs is not None and needs.search(content) is None:
            continue  # what every match of the pattern holds is not there: none can match
        for match in pattern.finditer(content):
            out.add(IDENTIFIER_MARK + match.group(1).lower().rstrip("."))
    return frozenset(out)


def terms_of(content: str, source_instance: str = "") -> frozenset[str]:
    """:func:`tokenize` of the content, its :func:`identifiers`, and the tokens of its author
    (the source instance). Authorship is evidence like a rare word, and on purpose the same term
    as the name written in text: a speaker who talks in one thread ties its memories together,
    a reply that names its addressee ties to the addressee's memories, and an agent that writes
    everything weighs ~0 through the IDF."""
    return tokenize(content) | identifiers(content) | tokenize(source_instance)


def unit(vector: Any) -> np.ndarray:
    v = np.asarray(vector, dtype=np.float32).reshape(-1)
    norm = float(np.linalg.norm(v))
    return v / norm if norm > 0 else v


@dataclass(frozen=True)
class MemoryFeatures:
    """What the detector knows about one memory. ``vector`` is a unit vector (normalised here
    if it is not); ``terms`` is :func:`tokenize` of the content (empty = no lexical evidence)."""

    id: str
    vector: np.ndarray
    tags: frozenset[str]
    source_instance: str
    created_at: datetime
    terms: frozenset[str] = frozenset()
    names: frozenset[str] = frozenset()
    """:func:`proper_names` of the content (a subset of ``terms``)."""
    words: int | None = None
    """How many words the content has (:func:`content_size`); None: not known, so the memory
    is not taken to say little."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "vector", unit(self.vector))
        object.__setattr__(self, "tags", frozenset(self.tags))
        object.__setattr__(self, "terms", frozenset(self.terms))
        object.__setattr__(self, "names", frozenset(self.names))

    @classmethod
    def from_text(
        cls,
        id: str,
        vector: Any,
        content: str,
        tags: Iterable[str] = (),
        source_instance: str = "",
        created_at: datetime | None = None,
    ) -> MemoryFeatures:
        if created_at is None:
            raise ValueError("created_at is required")
        return cls(
            id,
            vector,
            frozenset(tags),
            source_instance,
            created_at,
            terms_of(content, source_instance),
            proper_names(content),
            content_size(content),
        )

    @property
    def says_little(self) -> bool:
        """Too few words (:data:`FEW_WORDS`) to be placed by them: "ok", "yes, thanks", "did
        that"."""
        return self.words is not None and self.words <= FEW_WORDS


@dataclass(frozen=True)
class EpisodeFeatures:
    """Incrementally maintained summary of one episode.

    ``vectors`` keeps the ``max_recent`` most recent member vectors (rows, oldest first);
    ``vector_sum`` sums *all* member vectors (its direction is the centroid). Counters are plain
    dicts and are never mutated after construction (:func:`add_member` returns a new object)."""

    id: str
    vectors: np.ndarray
    vector_sum: np.ndarray
    tag_counts: Mapping[str, int]
    term_counts: Mapping[str, int]
    source_counts: Mapping[str, int]
    first_activity: datetime
    last_activity: datetime
    memory_count: int
    member_ids: tuple[str, ...] = ()
    max_recent: int = 32
    name_counts: Mapping[str, int] = field(default_factory=dict)
    """How many members name each proper name (:attr:`MemoryFeatures.names`)."""
    source_last: Mapping[str, datetime] = field(default_factory=dict)
    """When each source instance (author) last wrote in the episode."""

    @cached_property
    def centroid(self) -> np.ndarray:
        """The unit mean of the members (computed once per object: features never change)."""
        return unit(self.vector_sum)

    @cached_property
    def sorted_terms(self) -> tuple[str, ...]:
        """The terms of ``term_counts`` in sorted order (computed once per object), the order
        in which :func:`.scoring.lexical_overlap` sums their weights."""
        return tuple(sorted(self.term_counts))


def _count_in(
    memory: MemoryFeatures,
    tags: dict[str, int],
    terms: dict[str, int],
    sources: dict[str, int],
    names: dict[str, int],
    last: dict[str, datetime],
) -> None:
    """Add ``memory`` to an episode's counters, in place: its tags, terms, proper names and
    author, and when its author last wrote."""
    for counts, keys in ((tags, memory.tags), (terms, memory.terms), (names, memory.names)):
        for key in keys:
            counts[key] = counts.get(key, 0) + 1
    author = memory.source_instance
    sources[author] = sources.get(author, 0) + 1
    if author not in last or last[author] < memory.created_at:
        last[author] = memory.created_at


def add_member(episode: EpisodeFeatures, memory: MemoryFeatures) -> EpisodeFeatures:
    """A new :class:`EpisodeFeatures` with ``memory`` added (the argument is not modified).
    Members are expected in time order; an out-of-order member only widens the time span."""
    vectors = np.vstack([episode.vectors, memory.vector[None, :]])[-episode.max_recent :]
    tags, terms = dict(episode.tag_counts), dict(episode.term_counts)
    sources, names = dict(episode.source_counts), dict(episode.name_counts)
    last = dict(episode.source_last)
    _count_in(memory, tags, terms, sources, names, last)
    return replace(
        episode,
        vectors=vectors,
        vector_sum=episode.vector_sum + memory.vector,
        tag_counts=tags,
        term_counts=terms,
        source_counts=sources,
        first_activity=min(episode.first_activity, memory.created_at),
        last_activity=max(episode.last_activity, memory.created_at),
        memory_count=episode.memory_count + 1,
        member_ids=episode.member_ids + (memory.id,),
        name_counts=names,
        source_last=last,
    )


def new_episode(id: str, first: MemoryFeatures, max_recent: int = 32) -> EpisodeFeatures:
    """A one-member episode (also how a seed is scored)."""
    return build_episode(id, [first], max_recent)


def build_episode(
    id: str, members: Sequence[MemoryFeatures], max_recent: int = 32
) -> EpisodeFeatures:
    """Rebuild an episode from its stored members (e.g. at start-up); equal to adding them one
    by one. Members are sorted by ``created_at`` first."""
    if not members:
        raise ValueError("an episode needs at least one member")
    ordered = sorted(members, key=lambda m: m.created_at)
    # One pass with mutable counters: folding add_member copies every counter per member,
    # quadratic in the episode's size (a rebuild runs under the detect lock).
    first = ordered[0]
    vector_sum = first.vector.astype(np.float64)
    for member in ordered[1:]:
        vector_sum = vector_sum + member.vector  # in add_member's order: the same sum, bit for bit
    tags: dict[str, int] = {}
    terms: dict[str, int] = {}
    sources: dict[str, int] = {}
    names: dict[str, int] = {}
    last: dict[str, datetime] = {}
    for member in ordered:
        _count_in(member, tags, terms, sources, names, last)
    return EpisodeFeatures(
        id=id,
        vectors=np.vstack([m.vector[None, :] for m in ordered[-max_recent:]]),
        vector_sum=vector_sum,
        tag_counts=tags,
        term_counts=terms,
        source_counts=sources,
        first_activity=first.created_at,
        last_activity=ordered[-1].created_at,
        memory_count=len(ordered),
        member_ids=tuple(m.id for m in ordered),
        max_recent=max_recent,
        name_counts=names,
        source_last=last,
    )


def representatives(members: Sequence[tuple[str, Any]], k: int) -> list[str]:
    """The ids of the ``k`` members (id, vector) nearest their centroid: what an episode is
    mostly about, for a prompt that must judge the whole episode."""
    if len(members) <= k:
        return [m for m, _ in members]
    vectors = np.stack([unit(v) for _, v in members])
    closeness = vectors @ unit(vectors.sum(axis=0))
    best = np.argsort(-closeness, kind="stable")[:k]
    return [members[i][0] for i in sorted(best.tolist())]
