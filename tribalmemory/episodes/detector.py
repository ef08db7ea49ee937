"""Embedding-path episode detector: pure functions, no I/O.

A memory arrives (in time order); :func:`decide` compares it with the *active* episodes and with
the *seeds* (earlier memories that joined nothing) and returns one :class:`Decision`:

* :class:`Join`            -- add the memory to an active episode;
* :class:`StartFromSeed`   -- open a new episode made of a seed and this memory;
* :class:`Ambiguous`       -- (strategy ``hybrid``/``llm`` only) ask the LLM classifier;
* :class:`NewSeed`         -- no match: the memory becomes a seed itself.

Everything the detector needs is passed in: :class:`MemoryFeatures`, :class:`EpisodeFeatures`
(maintained incrementally with :func:`add_member`, or rebuilt from stored vectors with
:func:`build_episode`), a :class:`DetectorContext` of background statistics (updated with
:func:`update_context`, JSON-serialisable) and :class:`DetectorParams` (from ``EpisodesConfig``).

The match score (:attr:`Evidence.score`) is P(the memory joins the candidate) from the fitted
join model (:mod:`.join_model`, ``docs/detection.md``): each candidate gets a row of
:data:`FEATURES` computed from the past only -- similarity as z-scores against the stream's own
background of cosines, shared rare terms and identifiers, the gap in the stream's own pace,
authorship against how much of the stream its author writes, tags, the candidate's size and
age, the margins to the other candidates -- and the model, fitted on a wide labelled corpus by
``benchmarks/fit_detector.py``, turns it into a probability. Each decision also has a
:func:`confidence`; in ``hybrid`` the least confident share of decisions goes to the LLM.
"""

from __future__ import annotations

import math
import re
import statistics
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from functools import cached_property
from typing import Any

import numpy as np

from ..timeutil import parse_iso, to_iso
from .join_model import JoinModel, check_features, load_join_model

# --------------------------------------------------------------------------------------------
# Features
# --------------------------------------------------------------------------------------------

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
        wide = sum(1 for ch in run if unicodedata.east_asian_width(ch) in "WF")
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

_NUMBER_REF = re.compile(r"(?<![\w.])#?(\d{3,})(?![\w.])")
_TICKET = re.compile(r"\b([A-Za-z][A-Za-z0-9]*-\d+)\b")
_PATH = re.compile(r"(?<![\w/])((?:[\w.-]+/)+[\w.-]*\w)")
_CODE_NAME = re.compile(
    r"\b([A-Za-z]\w*_\w+"  # snake_case, _private
    r"|[a-z]+(?:[A-Z][a-z0-9]*)+"  # camelCase
    r"|[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+"  # PascalCase with two humps or more
    r"|[A-Za-z_]\w+(?:\.[A-Za-z_]\w+)+)"  # dotted.names (two letters a part at least)
    r"\(?"
)


def identifiers(content: str) -> frozenset[str]:
    """The identifiers ``content`` names, as terms marked with :data:`IDENTIFIER_MARK`: numbers
    of three digits or more (``#26160``, ``PR 4521``), ticket keys (``PAY-1234``), paths
    (``src/ledger/recon.py``) and code names (``broadcast_shapes``, ``refreshToken``,
    ``np.broadcast_arrays``), lower-cased. :func:`tokenize` breaks them into words or drops
    them (numbers); kept whole they are the strongest lexical tie between two memories."""
    out: set[str] = set()
    for pattern in (_NUMBER_REF, _TICKET, _PATH, _CODE_NAME):
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


def _unit(vector: Any) -> np.ndarray:
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
        object.__setattr__(self, "vector", _unit(self.vector))
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
        return _unit(self.vector_sum)


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


# --------------------------------------------------------------------------------------------
# Background statistics (the "context")
# --------------------------------------------------------------------------------------------


PACE_WINDOW = 64
"""Gaps kept to measure the stream's pace: enough for a stable median, short enough to follow
a stream that speeds up or slows down."""
PRIOR_PACE = 3600.0
"""Pace assumed (seconds) before :data:`MIN_GAPS` gaps are known: one memory an hour."""
MIN_GAPS = 3
CONFIDENCE_WINDOW = 200
"""Recent decisions whose confidences set the doubt threshold."""
MIN_CONFIDENCES = 20


def quantile(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile of ``values`` by linear interpolation (numpy's default method),
    in plain Python: for the few hundred values of a window, numpy's call overhead is most
    of the cost (~65 µs against ~10 µs)."""
    ordered = sorted(values)
    position = (len(ordered) - 1) * q
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    a, b, t = ordered[low], ordered[high], position - low
    return a + (b - a) * t if t < 0.5 else b - (b - a) * (1 - t)


@dataclass(eq=True)
class DetectorContext:
    """Running statistics of the stream, updated after every memory with :func:`update_context`.

    * cosine background: count / mean / M2 of the cosines between each new memory and the
      candidate members it was compared with, started from a weak prior;
    * document frequencies of terms over all memories seen (for online IDF);
    * the newest ``created_at`` seen and the last gaps between memories (the stream's
      :attr:`pace`, against which recency is measured).

    **Mutable**: :func:`update_context` updates the context *in place* (O(terms of the memory),
    not O(vocabulary)) and returns it. Copy it (``from_json(to_json())``) to keep a snapshot.
    ``to_json``/``from_json`` round-trip it so the engine can persist it."""

    cos_count: float = 50.0
    cos_mean: float = 0.15
    cos_m2: float = 50.0 * 0.12**2
    doc_count: int = 0
    doc_freq: dict[str, int] = field(default_factory=dict)
    newest: datetime | None = None
    gaps: list[float] = field(default_factory=list)
    confidences: list[float] = field(default_factory=list)
    authors: list[str] = field(default_factory=list)
    """The authors (source instances) of the last :data:`PACE_WINDOW` memories: how much of
    the stream each one writes (:meth:`author_share`)."""
    _pace: float | None = field(default=None, compare=False, repr=False)
    """:attr:`pace` cached until :func:`update_context` changes ``gaps``."""

    @property
    def cos_std(self) -> float:
        return max(math.sqrt(self.cos_m2 / self.cos_count), 0.02) if self.cos_count > 0 else 0.12

    @property
    def pace(self) -> float:
        """The stream's own pace: the median gap in seconds between consecutive memories (memory
        time) over the last :data:`PACE_WINDOW`, :data:`PRIOR_PACE` until
        :data:`MIN_GAPS` gaps are known, never below one second. Only memories newer than all
        before them count (concurrent writers and imports deliver some out of order; equal
        timestamps say nothing about the pace either)."""
        if self._pace is None:
            enough = len(self.gaps) >= MIN_GAPS
            self._pace = max(statistics.median(self.gaps), 1.0) if enough else PRIOR_PACE
        return self._pace

    def doubt_threshold(self, share: float) -> float:
        """The confidence below which a decision is doubtful, chosen so that about ``share`` of
        the stream's recent decisions (:data:`CONFIDENCE_WINDOW`) fall below it: the stream
        calibrates its own doubt, whatever the absolute scale of its confidences. Until
        :data:`MIN_CONFIDENCES` are known, ``share`` itself is the threshold."""
        if share <= 0:
            return 0.0
        if share >= 1:
            return math.inf
        if len(self.confidences) < MIN_CONFIDENCES:
            return share
        return quantile(self.confidences, share)

    def paces(self, earlier: datetime, later: datetime) -> float:
        """The time from ``earlier`` to ``later`` in units of :attr:`pace` (0 if not later)."""
        return max(0.0, (later - earlier).total_seconds()) / self.pace

    def author_share(self, author: str) -> float:
        """The share of the recent memories (:attr:`authors`) that ``author`` wrote: near 1
        when one agent writes everything (authorship then tells threads apart by nothing).
        1 before the stream has shown any author: until then authorship tells nothing either."""
        return self.authors.count(author) / len(self.authors) if self.authors else 1.0

    def idf(self, term: str) -> float:
        return math.log((self.doc_count + 1.0) / (self.doc_freq.get(term, 0) + 0.5))

    def idf_weights(self, terms: Iterable[str]) -> dict[str, float]:
        """:meth:`idf` of each of ``terms`` (a memory's, weighed once for many candidates)."""
        return {t: self.idf(t) for t in terms}

    def to_json(self, terms: bool = True) -> dict[str, Any]:
        """Everything, or without ``doc_freq`` (``terms=False``: the engine keeps the term
        counts in a table of their own, written by the change)."""
        out: dict[str, Any] = {
            "cos_count": self.cos_count,
            "cos_mean": self.cos_mean,
            "cos_m2": self.cos_m2,
            "doc_count": self.doc_count,
            "newest": to_iso(self.newest) if self.newest else None,
            "gaps": list(self.gaps),
            "confidences": list(self.confidences),
            "authors": list(self.authors),
        }
        if terms:
            out["doc_freq"] = dict(self.doc_freq)
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> DetectorContext:
        return cls(
            float(data["cos_count"]),
            float(data["cos_mean"]),
            float(data["cos_m2"]),
            int(data["doc_count"]),
            {str(k): int(v) for k, v in data.get("doc_freq", {}).items()},
            parse_iso(data["newest"]) if data.get("newest") else None,
            [float(g) for g in data.get("gaps", ())],
            [float(c) for c in data.get("confidences", ())],
            [str(a) for a in data.get("authors", ())],
        )


def update_context(
    context: DetectorContext,
    memory: MemoryFeatures,
    cosines: Iterable[float] = (),
    max_cos_count: float = 20000.0,
    confidence: float | None = None,
) -> DetectorContext:
    """Fold ``memory`` into ``context`` **in place** and return it. ``cosines``: the memory's
    cosines to the candidate members it was compared with (:attr:`Decision.background`), merged
    as one batch (Chan et al.'s parallel mean/variance update, vectorised). The cosine statistics
    forget once ``max_cos_count`` is reached (the past is down-weighted so that past + batch
    weigh ``max_cos_count``), so they follow drift. ``confidence``: the decision's
    :func:`confidence`, remembered for :meth:`DetectorContext.doubt_threshold`.
    Cost: O(len(cosines) + terms of memory)."""
    c = np.asarray(
        cosines if isinstance(cosines, np.ndarray) else list(cosines), dtype=np.float64
    ).reshape(-1)
    k = float(c.size)
    if k:
        n, mean, m2 = context.cos_count, context.cos_mean, context.cos_m2
        bmean = float(c.mean())
        bm2 = float(((c - bmean) ** 2).sum())
        if k >= max_cos_count:  # the batch alone fills the window
            n, m2, scale_b = 0.0, 0.0, max_cos_count / k
        else:
            scale_b = 1.0
            if n + k > max_cos_count:  # keep the weight of the past bounded
                s = (max_cos_count - k) / n
                n, m2 = n * s, m2 * s
        kb, bm2 = k * scale_b, bm2 * scale_b
        total = n + kb
        delta = bmean - mean
        context.cos_mean = mean + delta * kb / total
        context.cos_m2 = m2 + bm2 + delta * delta * n * kb / total
        context.cos_count = total
    freq = context.doc_freq
    for t in memory.terms:
        freq[t] = freq.get(t, 0) + 1
    context.doc_count += 1
    if context.newest is None or memory.created_at > context.newest:
        if context.newest is not None:  # a memory older than the newest tells no pace
            context.gaps.append((memory.created_at - context.newest).total_seconds())
            del context.gaps[:-PACE_WINDOW]
            context._pace = None
        context.newest = memory.created_at
    context.authors.append(memory.source_instance)
    del context.authors[:-PACE_WINDOW]
    if confidence is not None:
        context.confidences.append(confidence)
        del context.confidences[:-CONFIDENCE_WINDOW]
    return context


def forget_terms(context: DetectorContext, terms: Iterable[str]) -> DetectorContext:
    """Take a forgotten memory's ``terms`` out of ``context`` **in place** (the inverse of the
    term counting in :func:`update_context`): a term no other memory has leaves it."""
    freq = context.doc_freq
    for t in terms:
        left = freq.get(t, 0) - 1
        if left > 0:
            freq[t] = left
        else:
            freq.pop(t, None)
    context.doc_count = max(0, context.doc_count - 1)
    return context


# --------------------------------------------------------------------------------------------
# Score
# --------------------------------------------------------------------------------------------


FEATURES = (
    "z_max",
    "z_centroid",
    "z_last",
    "lexical",
    "identifiers",
    "shares_identifier",
    "shares_tag",
    "gap_paces",
    "age_paces",
    "size",
    "seed",
    "author_share",
    "author_lift",
    "author_last",
    "author_base",
    "z_centroid_by_author_base",
    "names_author",
    "own_thread",
    "says_little",
    "words",
    "z_centroid_by_words",
    "pace",
    "z_margin",
    "lexical_margin",
    "candidates",
    "cosine",
    "seen",
)
"""The join model's inputs, one row per candidate (:func:`candidate_row`, :func:`fill_margins`):

* ``z_max`` / ``z_centroid`` / ``z_last``: cosine to the nearest of the candidate's last 32
  members, to its centroid and to its last member, as z-scores against the cosines the
  detector has seen in this stream (the model's and the domain's scale removed);
* ``lexical``: share of the memory's rare-term mass (online IDF) found in the candidate's terms;
  ``identifiers`` the same over identifiers alone (ticket and PR numbers, paths, code names:
  :func:`identifiers`), ``shares_identifier`` whether any is shared; ``shares_tag``;
* ``gap_paces``: ln(1 + time since the candidate's last memory in the stream's own pace),
  ``age_paces`` since its first memory (in hours the same gap means one thing in a chat and
  another in a team's notes, so no feature reads it); ``size``: ln members;
  ``seed``: the candidate is a single earlier memory;
* ``author_share``: share of its members the memory's author wrote, ``author_lift`` the same
  minus ``author_base``, the share of the stream's recent memories that author wrote (an
  author who writes everything tells nothing), ``z_centroid_by_author_base`` their product
  with ``z_centroid`` (similarity must decide where authorship cannot),
  ``author_last``: the author wrote its last member, ``names_author``: the memory names
  another of its authors;
  ``own_thread``: the memory says little and this is where its author wrote last,
  ``says_little``; ``words``: ln(1 + the memory's words), ``z_centroid_by_words`` its product
  with ``z_centroid`` (a long text's similarity says more); ``pace``: ln(the stream's pace in
  seconds), which tells a chat from a team's notes;
* ``z_margin`` / ``lexical_margin``: the candidate's ``z_max`` / ``lexical`` minus the best
  other candidate's; ``candidates``: ln(1 + number of candidates);
* ``cosine``: the raw cosine to the nearest member (near-duplicates are one thread whatever
  the stream's background); ``seen``: ln(1 + memories the stream has shown), which tells a
  cold start, whose statistics are still priors, from a stream in its stride."""
_Z_MAX, _LEXICAL = FEATURES.index("z_max"), FEATURES.index("lexical")
_Z_MARGIN, _LEXICAL_MARGIN = FEATURES.index("z_margin"), FEATURES.index("lexical_margin")
_CANDIDATES = FEATURES.index("candidates")

DEFAULT_MODEL = load_join_model()
check_features(DEFAULT_MODEL, FEATURES)


@dataclass(frozen=True)
class Evidence:
    """The components behind one score (for logs, the LLM prompt and tests)."""

    max_cosine: float
    centroid_cosine: float
    similarity: float
    z: float
    lexical: float
    hours_since_last: float
    paces_since_last: float
    utility: float
    score: float


def _sigmoid(x: float) -> float:
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


def lexical_overlap(
    terms: Iterable[str], bag: Mapping[str, int] | Iterable[str], context: DetectorContext
) -> float:
    """Rare-term coverage (0..1): the share of the memory's IDF mass (its content terms) that
    also occurs in the candidate's term bag. Common words weigh ~0, rare shared terms dominate.
    O(terms of the memory)."""
    return weighted_overlap(context.idf_weights(terms), bag)


def weighted_overlap(weights: Mapping[str, float], bag: Mapping[str, int] | Iterable[str]) -> float:
    """:func:`lexical_overlap` with the memory's term weights (IDF) computed once, for
    scoring one memory against many candidates."""
    total = 0.0
    shared = 0.0
    for t, w in weights.items():
        total += w
        if t in bag:
            shared += w
    return shared / total if total > 0 else 0.0


def hours_between(earlier: datetime, later: datetime) -> float:
    return max(0.0, (later - earlier).total_seconds() / 3600.0)


def _log1p(x: float) -> float:
    return math.log1p(max(x, 0.0))


def candidate_row(
    memory: MemoryFeatures,
    episode: EpisodeFeatures,
    context: DetectorContext,
    *,
    cos: np.ndarray | None = None,
    idf: Mapping[str, float] | None = None,
    is_seed: bool = False,
    own_thread: bool = False,
) -> tuple[list[float], Evidence]:
    """The feature row (:data:`FEATURES` order, margins and the candidate count left 0 for
    :func:`rank_candidates` to fill) of "``memory`` continues ``episode``", and the raw
    evidence behind it. Past only: everything comes from ``memory``, ``episode`` and the
    ``context`` as they are when the memory arrives. A caller scoring one memory against many
    candidates may pass what does not depend on the candidate: ``cos`` (the memory against
    ``episode.vectors``) and ``idf`` (the memory's term weights)."""
    if cos is None:
        cos = episode.vectors @ memory.vector
    if idf is None:
        idf = context.idf_weights(memory.terms)
    s_max = float(cos.max())
    s_last = float(cos[-1])
    s_cent = s_max if is_seed else float(episode.centroid @ memory.vector)
    mean, std = context.cos_mean, context.cos_std
    z_max, z_cent, z_last = (s_max - mean) / std, (s_cent - mean) / std, (s_last - mean) / std
    bag = episode.term_counts
    lex = weighted_overlap(idf, bag)
    ident_total = ident_shared = 0.0
    for term, weight in idf.items():
        if term.startswith(IDENTIFIER_MARK):
            ident_total += weight
            if term in bag:
                ident_shared += weight
    now = memory.created_at
    gap = context.paces(episode.last_activity, now)
    hours = hours_between(episode.last_activity, now)
    author = memory.source_instance
    size = max(episode.memory_count, 1)
    # A seed is scored without its author: two memories that share only who wrote them (an
    # agent's note on billing, its note on lunch) never start a thread; authorship only extends
    # one (the short replies rule, docs/detection.md).
    author_last = not is_seed and episode.source_last.get(author) == episode.last_activity
    author_share = 0.0 if is_seed else episode.source_counts.get(author, 0) / size
    author_base = context.author_share(author)
    words = _log1p(memory.words or 0)
    others = [] if is_seed else [a for a in episode.source_counts if a != author]
    names_author = any(tokenize(a) & memory.terms for a in others) if others else False
    row = [
        z_max,
        z_cent,
        z_last,
        lex,
        ident_shared / ident_total if ident_total > 0 else 0.0,
        1.0 if ident_shared > 0 else 0.0,
        1.0 if any(t in episode.tag_counts for t in memory.tags) else 0.0,
        _log1p(gap),
        _log1p(context.paces(episode.first_activity, now)),
        math.log(size),
        1.0 if is_seed else 0.0,
        author_share,
        author_share - author_base,
        1.0 if author_last else 0.0,
        author_base,
        z_cent * author_base,
        1.0 if names_author else 0.0,
        1.0 if own_thread else 0.0,
        1.0 if memory.says_little else 0.0,
        words,
        z_cent * words,
        math.log(context.pace),
        0.0,  # z_margin, filled by rank_candidates
        0.0,  # lexical_margin, filled by rank_candidates
        0.0,  # candidates, filled by rank_candidates
        s_max,
        _log1p(context.doc_count),
    ]
    sim = (s_max + 0.5 * s_cent + 0.2 * s_last) / 1.7
    return row, Evidence(s_max, s_cent, sim, z_max, lex, hours, gap, 0.0, 0.0)


def fill_margins(rows: np.ndarray) -> np.ndarray:
    """Fill the columns that compare a candidate with the others, **in place**: its z-similarity
    and lexical coverage minus the best of the *other* candidates' (minus 0, the background
    and no overlap, when it is alone), and how many candidates there are (log)."""
    n = rows.shape[0]
    rows[:, _CANDIDATES] = math.log1p(n)
    for column, margin in ((_Z_MAX, _Z_MARGIN), (_LEXICAL, _LEXICAL_MARGIN)):
        values = rows[:, column]
        if n == 1:
            rows[:, margin] = values
            continue
        order = np.argsort(-values, kind="stable")
        best, second = values[order[0]], values[order[1]]
        others_best = np.full(n, best)
        others_best[order[0]] = second
        rows[:, margin] = values - others_best
    return rows


def evidence(
    memory: MemoryFeatures,
    episode: EpisodeFeatures,
    context: DetectorContext,
    model: JoinModel = DEFAULT_MODEL,
    is_seed: bool = False,
    *,
    cos: np.ndarray | None = None,
    idf: Mapping[str, float] | None = None,
    own_thread: bool = False,
) -> Evidence:
    """All evidence for "``memory`` continues ``episode``" with the model's probability,
    ``episode`` scored as the only candidate (:func:`rank_candidates` scores candidates
    against each other)."""
    row, ev = candidate_row(
        memory, episode, context, cos=cos, idf=idf, is_seed=is_seed, own_thread=own_thread
    )
    u = float(model.logits(fill_margins(np.asarray([row], dtype=np.float64)))[0])
    return replace(ev, utility=u, score=_sigmoid(u))


# --------------------------------------------------------------------------------------------
# Decision
# --------------------------------------------------------------------------------------------

COLD_START = 10
COLD_START_THRESHOLD = 0.30
"""Until a stream (a project) has shown :data:`COLD_START` memories, a join needs P(joins) of
at least :data:`COLD_START_THRESHOLD` (or the threshold, if higher): its background, its rare
words, its pace and its authors are still priors, and a wrong join among a new user's first
memories is the one they see. Chosen on the validation streams (docs/detection.md), where it
costs no source kind any pairwise F1."""


MAX_SEEDS = 1024
"""The most recent eligible seeds a decision scores (keeps :func:`decide` ~2 ms); the engine's
seed pool hands it no more (:meth:`tribalmemory.episodes.seeds.SeedPool.recent`)."""


@dataclass(frozen=True)
class DetectorParams:
    """Thresholds and limits (normally from ``EpisodesConfig``).

    ``doubt_share``: in ``hybrid``, about this share of the decisions -- the least confident
    ones (:func:`confidence`, :meth:`DetectorContext.doubt_threshold`) -- are :class:`Ambiguous`
    and go to the LLM; 0 sends none."""

    threshold: float = DEFAULT_MODEL.threshold
    doubt_share: float = 0.45
    strategy: str = "hybrid"
    active_window_days: float = 14.0
    max_active_episodes: int = 20
    max_llm_candidates: int = 5
    max_seeds: int = MAX_SEEDS  # most recent eligible seeds scored
    model: JoinModel = DEFAULT_MODEL

    @classmethod
    def from_config(
        cls, config: Any, model: JoinModel = DEFAULT_MODEL, doubt_share: float | None = None
    ) -> DetectorParams:
        """From an ``EpisodesConfig`` (or anything with the same attribute names);
        ``doubt_share`` overrides ``config.llm_doubt_share`` (e.g. to stay in a call budget)."""
        return cls(
            threshold=(
                model.threshold
                if config.embedding_similarity_threshold is None
                else config.embedding_similarity_threshold
            ),
            doubt_share=config.llm_doubt_share if doubt_share is None else doubt_share,
            strategy=config.detector_strategy,
            active_window_days=config.active_window_days,
            max_active_episodes=config.max_active_episodes,
            model=model,
        )


@dataclass(frozen=True)
class Candidate:
    kind: str  # "episode" or "seed"
    id: str
    score: float
    evidence: Evidence


@dataclass(frozen=True)
class Join:
    episode_id: str
    score: float
    background: tuple[float, ...] = ()
    confidence: float = 1.0


@dataclass(frozen=True)
class StartFromSeed:
    seed_id: str
    score: float
    background: tuple[float, ...] = ()
    confidence: float = 1.0


@dataclass(frozen=True)
class Ambiguous:
    candidates: tuple[Candidate, ...]  # best first; kind tells episode or seed
    background: tuple[float, ...] = ()
    confidence: float = 0.0
    embedded: Join | StartFromSeed | NewSeed | None = None
    """What the embedding path decides (the decision that stands until the LLM answers)."""


@dataclass(frozen=True)
class NewSeed:
    best_score: float = 0.0
    background: tuple[float, ...] = ()
    confidence: float = 1.0


Decision = Join | StartFromSeed | Ambiguous | NewSeed


def _logit(p: float) -> float:
    p = min(max(p, 1e-9), 1 - 1e-9)
    return math.log(p / (1 - p))


def confidence(ranked: Sequence[Candidate], threshold: float) -> float:
    """How sure the embedding decision is, in (0, 1]: the probability of the chosen option in
    a softmax over every candidate's utility and a "no match" option whose utility is the
    threshold's (``logit(threshold)``). Low when the best candidate barely beats the second,
    when a join barely clears the threshold, and when a "no" has a candidate close to it; 1
    when there is no candidate at all."""
    if not ranked:
        return 1.0
    logits = np.array([c.evidence.utility for c in ranked] + [_logit(threshold)])
    weights = np.exp(logits - logits.max())
    probs = weights / weights.sum()
    chosen = 0 if ranked[0].score >= threshold else len(ranked)
    return float(probs[chosen])


def eligible_episodes(
    episodes: Iterable[EpisodeFeatures], now: datetime, active_window_days: float, max_active: int
) -> list[EpisodeFeatures]:
    """Episodes a memory created at ``now`` may join: last memory at most
    ``active_window_days`` before ``now`` (memory time, not wall-clock), and only the
    ``max_active`` most recently active of them."""
    window = timedelta(days=active_window_days)
    ok = [e for e in episodes if now - e.last_activity <= window]
    ok.sort(key=lambda e: e.last_activity, reverse=True)
    return ok[:max_active]


def eligible_seeds(
    seeds: Iterable[MemoryFeatures], now: datetime, active_window_days: float
) -> list[MemoryFeatures]:
    """Seeds no older than the active window (a seed older than that can no longer start an
    episode)."""
    window = timedelta(days=active_window_days)
    return [s for s in seeds if abs(now - s.created_at) <= window]


class SeedRows:
    """The seeds' vectors as rows of one matrix kept from one decision to the next, so that a
    memory's cosines to a thousand seeds are one product: stacking their vectors anew for each
    memory took ~0.65 ms, most of a decision. A seed keeps its row while its features object
    is the same; rows of seeds no longer asked about are dropped once they outnumber the live
    ones (they only make the product a little longer until then)."""

    def __init__(self) -> None:
        self._clear()

    def _clear(self) -> None:
        self._row: dict[str, int] = {}
        self._owner: list[MemoryFeatures] = []
        self._matrix = np.empty((0, 0), dtype=np.float32)

    def cosines(self, vector: np.ndarray, seeds: Sequence[MemoryFeatures]) -> np.ndarray:
        """``seed.vector @ vector`` for each of ``seeds``, in their order."""
        if len(self._owner) > 2 * len(seeds) + 1024:
            self._clear()
        rows = [self._row_of(seed) for seed in seeds]
        return (self._matrix[: len(self._owner)] @ vector)[rows]

    def _row_of(self, seed: MemoryFeatures) -> int:
        row = self._row.get(seed.id)
        if row is not None and self._owner[row] is seed:
            return row
        if row is None:
            row = self._row[seed.id] = len(self._owner)
            self._owner.append(seed)
            if row >= len(self._matrix):
                grown = np.empty((max(64, 2 * row), seed.vector.shape[0]), dtype=np.float32)
                if row:
                    grown[:row] = self._matrix[:row]
                self._matrix = grown
        else:
            self._owner[row] = seed
        self._matrix[row] = seed.vector
        return row


SEED_SHORTLIST = 32
"""Seeds beyond the 32 nearest by cosine only feed the background statistics: lexical and tag
evidence (at most ~1.3 z) rarely lifts a seed past 32 closer ones, and this keeps
:func:`decide` at O(seeds) numpy work plus O(32) Python work."""


def own_thread(memory: MemoryFeatures, episodes: Sequence[EpisodeFeatures]) -> str | None:
    """The episode among ``episodes`` where the author of ``memory`` wrote last before it: the
    thread a memory that says little continues. None if the memory says enough to be placed by
    its words, or if its author wrote in none of them. Seeds do not count: the rule extends a
    thread, it never makes one of two memories that share only their author."""
    if not memory.says_little:
        return None
    author, now = memory.source_instance, memory.created_at
    best: tuple[datetime, str] | None = None
    for ep in episodes:
        when = ep.source_last.get(author)
        if when is not None and when <= now and (best is None or when > best[0]):
            best = (when, ep.id)
    return None if best is None else best[1]


def rank_candidates(
    memory: MemoryFeatures,
    episodes: Sequence[EpisodeFeatures],
    seeds: Sequence[MemoryFeatures],
    context: DetectorContext,
    model: JoinModel = DEFAULT_MODEL,
    seed_rows: SeedRows | None = None,
    rows_out: list[np.ndarray] | None = None,
) -> tuple[list[Candidate], list[float]]:
    """Score every (already eligible) candidate with the join model, best first: each gets
    its feature row (:func:`candidate_row`), the rows are compared (:func:`fill_margins`) and
    the model turns each into P(joins). Also returns the background cosines (memory vs each
    candidate's recent members) for :func:`update_context`. Seeds' cosines are one matrix
    product (with ``seed_rows``, kept from one call to the next); only the
    :data:`SEED_SHORTLIST` nearest are scored. ``rows_out``: the feature matrix is appended
    to it (candidates in the returned order), for fitting the model."""
    seeds = [s for s in seeds if s.id != memory.id]
    found: list[tuple[str, str, Evidence]] = []
    rows: list[list[float]] = []
    background: list[np.ndarray] = []
    idf = context.idf_weights(memory.terms)
    own = own_thread(memory, episodes)
    for ep in episodes:
        episode_cos = ep.vectors @ memory.vector
        row, ev = candidate_row(
            memory, ep, context, cos=episode_cos, idf=idf, own_thread=own == ep.id
        )
        rows.append(row)
        found.append(("episode", ep.id, ev))
        background.append(episode_cos)
    if seeds:
        if seed_rows is not None:
            cos = seed_rows.cosines(memory.vector, seeds)
        else:
            cos = np.stack([s.vector for s in seeds]) @ memory.vector
        background.append(cos)
        shortlist = range(len(seeds))
        if len(seeds) > SEED_SHORTLIST:  # only the nearest seeds by cosine get full evidence
            shortlist = np.argpartition(-cos, SEED_SHORTLIST)[:SEED_SHORTLIST].tolist()
        for j in shortlist:
            seed = _seed_episode(seeds[j])
            row, ev = candidate_row(
                memory, seed, context, cos=cos[j : j + 1], idf=idf, is_seed=True
            )
            rows.append(row)
            found.append(("seed", seed.id, ev))
    if not found:
        return [], []
    matrix = fill_margins(np.asarray(rows, dtype=np.float64))
    logits = model.logits(matrix)
    out = []
    for (kind, cid, ev), u in zip(found, logits.tolist(), strict=True):
        out.append(Candidate(kind, cid, _sigmoid(u), replace(ev, utility=u, score=_sigmoid(u))))
    order = sorted(range(len(out)), key=lambda i: out[i].score, reverse=True)
    if rows_out is not None:
        rows_out.append(matrix[order])
    bg = np.concatenate(background).tolist() if background else []
    return [out[i] for i in order], bg


def _seed_episode(seed: MemoryFeatures) -> EpisodeFeatures:
    """A seed seen as a one-member episode, cheaply (no counters are copied)."""
    terms = dict.fromkeys(seed.terms, 1)
    return EpisodeFeatures(
        id=seed.id,
        vectors=seed.vector[None, :],
        vector_sum=seed.vector,
        tag_counts=dict.fromkeys(seed.tags, 1),
        term_counts=terms,
        source_counts={seed.source_instance: 1},
        first_activity=seed.created_at,
        last_activity=seed.created_at,
        memory_count=1,
        member_ids=(seed.id,),
        source_last={seed.source_instance: seed.created_at},
    )


def decide(
    memory: MemoryFeatures,
    active_episodes: Iterable[EpisodeFeatures],
    seeds: Iterable[MemoryFeatures],
    context: DetectorContext,
    params: DetectorParams = DetectorParams(),
    seed_rows: SeedRows | None = None,
) -> Decision:
    """Decide what to do with ``memory`` (see the module docstring); ``seed_rows`` keeps the
    seeds' vectors from one call to the next (see :class:`SeedRows`).

    * ``embedding``: best score >= threshold -> Join / StartFromSeed, else NewSeed;
    * ``hybrid``: as embedding, but a decision whose :func:`confidence` is below the stream's
      doubt threshold for ``params.doubt_share`` -> Ambiguous;
    * ``llm``: any candidate -> Ambiguous (top ``max_llm_candidates``), none -> NewSeed.

    Every decision carries its confidence, which the caller folds into the context with
    :func:`update_context` (that is how the doubt threshold follows the stream).
    """
    now = memory.created_at
    episodes = eligible_episodes(
        active_episodes, now, params.active_window_days, params.max_active_episodes
    )
    seed_list = eligible_seeds(seeds, now, params.active_window_days)
    if len(seed_list) > params.max_seeds:  # the most recent ones
        seed_list = sorted(seed_list, key=lambda s: s.created_at)[-params.max_seeds :]
    ranked, background = rank_candidates(
        memory, episodes, seed_list, context, params.model, seed_rows
    )
    bg = tuple(background)
    if not ranked:
        return NewSeed(0.0, bg)
    best = ranked[0]
    threshold = params.threshold
    if context.doc_count < COLD_START:
        threshold = max(threshold, COLD_START_THRESHOLD)
    sure = confidence(ranked, threshold)
    top = tuple(ranked[: params.max_llm_candidates])
    embedded: Join | StartFromSeed | NewSeed = NewSeed(best.score, bg, sure)
    if best.score >= threshold:
        if best.kind == "episode":
            embedded = Join(best.id, best.score, bg, sure)
        else:
            embedded = StartFromSeed(best.id, best.score, bg, sure)
    if params.strategy == "llm" or (
        params.strategy == "hybrid" and sure < context.doubt_threshold(params.doubt_share)
    ):
        return Ambiguous(top, bg, sure, embedded)
    return embedded


# --------------------------------------------------------------------------------------------
# Chaining
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ChainModel:
    """``u = z(centroid cosine) + lexical_weight * lexical``, ``score = sigmoid(u - midpoint)``."""

    lexical_weight: float = 2.0
    midpoint: float = 2.0


DEFAULT_CHAIN_MODEL = ChainModel()


def chain_score(
    new_episode: EpisodeFeatures,
    closed_episode: EpisodeFeatures,
    context: DetectorContext,
    model: ChainModel = DEFAULT_CHAIN_MODEL,
) -> float:
    """Calibrated [0, 1] score that ``new_episode`` continues ``closed_episode``; same
    z-scale as :func:`score`. The time rule (closed at most ``chain_window_hours`` before the
    new episode started) is applied by the caller, not here."""
    sim = float(new_episode.centroid @ closed_episode.centroid)
    z = (sim - context.cos_mean) / context.cos_std
    bag_terms = frozenset(new_episode.term_counts)
    lex = lexical_overlap(bag_terms, closed_episode.term_counts, context)
    return _sigmoid(z + model.lexical_weight * lex - model.midpoint)


# --------------------------------------------------------------------------------------------
# Consolidation: one thread split in two
# --------------------------------------------------------------------------------------------

MERGE_CHECK_SIZES = (4, 8, 16, 32)
"""An episode is checked for a twin when the detector grows it to one of these sizes: by 4
members it says what it is about, and each doubling gives a twin that grew since another look.
Chosen leave-one-stream-out with a perfect classifier (``detector_sim.MERGE_GRID``: first check
at 4 or 8, then 0, 1 or 3 doublings, 2 to 5 candidates; docs/detection.md): every fold and the
fit on all three start at 4 and take three doublings."""
MERGE_CANDIDATES = 4
"""Candidates shown to the LLM per check: two folds of three, and the fit on all three, pick 4
(the third ties 3 and 4 on its two streams and takes the first)."""


def merge_affinity(
    episode: EpisodeFeatures, other: EpisodeFeatures, context: DetectorContext
) -> float:
    """How alike two episodes are, to rank merge candidates: centroid cosine plus the share of
    the episode's rare-term mass the other one shares (both 0..1). Only a ranking: the LLM
    decides whether they are one thread."""
    cosine = float(episode.centroid @ other.centroid)
    return cosine + lexical_overlap(episode.term_counts, other.term_counts, context)


def merge_candidates(
    episode: EpisodeFeatures,
    others: Iterable[EpisodeFeatures],
    context: DetectorContext,
    k: int = MERGE_CANDIDATES,
) -> list[EpisodeFeatures]:
    """The ``k`` episodes most like ``episode`` (:func:`merge_affinity`), best first."""
    pool = [o for o in others if o.id != episode.id]
    pool.sort(key=lambda o: merge_affinity(episode, o, context), reverse=True)
    return pool[:k]


def confirm_candidates(
    episode: EpisodeFeatures,
    others: Sequence[EpisodeFeatures],
    twin: str,
    context: DetectorContext,
    k: int = MERGE_CANDIDATES,
) -> list[EpisodeFeatures]:
    """A confirming check's candidates: as :func:`merge_candidates`, with ``twin`` (the episode
    an earlier answer said this one is) among them in place of the least like one. Asked among
    others, not alone, the second answer is a check of its own: a "yes" to a single named
    episode is the answer a wrong one most often is."""
    ranked = merge_candidates(episode, others, context, k=len(others))
    rank = next((i for i, o in enumerate(ranked) if o.id == twin), None)
    if rank is None:  # merged, closed or edited meanwhile: nothing to confirm
        return []
    return ranked[:k] if rank < k else [*ranked[: max(k - 1, 0)], ranked[rank]]


def representatives(members: Sequence[tuple[str, Any]], k: int) -> list[str]:
    """The ids of the ``k`` members (id, vector) nearest their centroid: what an episode is
    mostly about, for a prompt that must judge the whole episode."""
    if len(members) <= k:
        return [m for m, _ in members]
    vectors = np.stack([_unit(v) for _, v in members])
    closeness = vectors @ _unit(vectors.sum(axis=0))
    best = np.argsort(-closeness, kind="stable")[:k]
    return [members[i][0] for i in sorted(best.tolist())]
