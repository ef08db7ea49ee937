"""An episode's distinctive terms: used in several of its members, rare in the project's stream.

Pure functions. A term is a word or a two-word phrase of the members' text, weighted by how
many members use it times its inverse document frequency in a :class:`Background` (the
project's running word counts, :class:`.detector.DetectorContext`, which include the episode's
own members). Never a term: stop words, numbers, words under three letters, and the names of
the speakers: the members' source instances and the ``Name:`` prefixes of chat turns
("Caroline: ..."), where a prefix is a name when it is a source instance's or when two or more
members begin with it (labels such as "Decision:" or "Lesson:" excepted, and a prefix with a
digit, a dot or ``_``, which names a thing: ``PAY-142:``, ``auth.py:``). What titles and
extractive summaries say an episode is about (:mod:`.extractive`).
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from ..models import Memory
from .detector import DetectorContext, tokenize

# Common English function words and chat filler: on a young stream (few memories counted) the
# background cannot tell them from content yet.
STOP_WORDS = frozenset(
    """
    about above after again against all almost also although always among and another any
    anyone anything anyway are aren around because been before being below between both but
    can cannot could couldn did didn does doesn doing done don down during each either else
    even ever every everyone everything few for from further get gets getting got gotten had
    hadn has hasn have haven having her here hers herself him himself his how however into
    isn its itself just keep kept know let like lot lots made make makes making many may
    maybe might mine more most much must myself need needs never new next nor not nothing now
    off often once one only onto other others our ours ourselves out over own per perhaps
    quite rather really said same say says see seem seems shall she should shouldn since
    some someone something sometimes still such sure than that the their theirs them
    themselves then there these they thing things think this those though through thus till
    too took under until upon use used uses using very via want wants was wasn way ways well
    went were weren what whatever when where whether which while who whom whose why will with
    within without won would wouldn yet you your yours yourself yourselves
    yes yeah yep nope okay hey hi hello thanks thank please sorry wow cool great awesome
    amazing nice good glad happy love loved lovely fun really totally definitely absolutely
    super pretty kind sounds sound feel feels felt feeling tell told going gonna wanna
    day days time times today yesterday tomorrow week weeks year years last first
    btw lol omg haha along stuff bit guess cause gotta
    """.split()
)

_STOP = STOP_WORDS | {key for word in STOP_WORDS for key in tokenize(word)}  # "always" -> "alway"

LABELS = frozenset(
    """
    decision decided lesson lessons learned takeaway note notes gotcha todo fix fixed update
    status summary context error result issue question answer outcome root cause why next
    done blocked blocker follow followup plan idea tip warning fyi
    """.split()
)
"""Words that begin a memory as a label, not as a speaker ("Decision: ...")."""

_PREFIX = re.compile(r"^\s*([A-Za-z][\w.'-]*(?: [A-Za-z][\w.'-]*){0,2}):\s+")
_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_./-]*[A-Za-z0-9]|[A-Za-z0-9]")
_GAP = re.compile(r"^[\s\"'`()]*$")  # what may stand between the two words of a phrase

_CODE_MARK = re.compile(r"[\d._]")
"""What no speaker's name holds: a prefix with it names a thing (``PAY-142:``, ``auth.py:``)."""


PHRASE_BONUS = 1.25
"""A phrase's weight over its words' mean: "advisory lock" says more than "advisory"."""


@dataclass(frozen=True)
class Background:
    """How many memories of the stream were counted, and how many of them use each term."""

    doc_count: int = 0
    doc_freq: Mapping[str, int] = field(default_factory=dict)

    def idf(self, key: str) -> float:
        return math.log((self.doc_count + 1.0) / (self.doc_freq.get(key, 0) + 0.5))

    @classmethod
    def of(cls, context: DetectorContext, memories: Iterable[Memory]) -> Background:
        """A snapshot of ``context`` for the terms of ``memories`` only (cheap, and safe to
        hand to a thread while the context keeps counting)."""
        keys: set[str] = set()
        for memory in memories:
            keys |= tokenize(memory.content)
        freq = context.doc_freq
        return cls(context.doc_count, {k: freq[k] for k in keys if k in freq})


def speaker_prefix(content: str) -> str | None:
    """The ``Name`` of a memory written ``Name: text``, or None."""
    match = _PREFIX.match(content)
    return match.group(1) if match else None


def speaker_names(memories: Sequence[Memory]) -> frozenset[str]:
    """The speakers' names (as :func:`.detector.tokenize` spells terms): the members' source
    instances, and prefixes that are a source instance's or begin two or more members."""
    names: set[str] = set()
    for memory in memories:
        names |= tokenize(memory.source_instance)
    prefixes = Counter(p for m in memories if (p := speaker_prefix(m.content)))
    for prefix, count in prefixes.items():
        if _CODE_MARK.search(prefix):  # a ticket or a file, however often it leads
            continue
        words = tokenize(prefix)
        if words & names or (count >= 2 and not words & LABELS):
            names |= words
    return frozenset(names)


@functools.lru_cache(maxsize=1 << 16)
def _parts(token: str) -> frozenset[str]:
    """:func:`tokenize` of one word or compound (read for every word of every member each time
    an episode's terms are ranked)."""
    return tokenize(token)


def _key(token: str, names: frozenset[str]) -> str | None:
    """How a word is counted, or None when it is no content word. A word is spelt as the
    background spells terms (:func:`.detector.tokenize`); a compound ("ledger_entries",
    "auth/tokens.py") is kept whole, lower case, unless all its parts are stop words."""
    parts = _parts(token)
    if not parts or parts & names or parts <= _STOP:
        return None
    if len(parts) == 1 and re.fullmatch(r"[A-Za-z0-9]+", token):
        return next(iter(parts))
    return token.lower().strip("./-_")


def _idf(key: str, background: Background) -> float:
    """A word's inverse document frequency; a compound's is its rarest part's. A word the
    background's tokens leave out when written alone (``1920`` of ``1920s``, whose plural
    ``s`` made it one) is its own part."""
    return max(background.idf(part) for part in _parts(key) or {key})


def _body(content: str) -> str:
    """``content`` without its ``Name:`` or label prefix; a prefix that names a thing (a
    ticket, a file) stays: it is what the memory is about."""
    match = _PREFIX.match(content)
    if match is None or _CODE_MARK.search(match.group(1)):
        return content
    return content[match.end() :]


@dataclass
class _Tally:
    members: set[int] = field(default_factory=set)
    surfaces: Counter[str] = field(default_factory=Counter)


def _tally(memories: Sequence[Memory], names: frozenset[str]) -> dict[tuple[str, ...], _Tally]:
    """Per word and two-word phrase: the members using it and how it is written."""
    tally: dict[tuple[str, ...], _Tally] = defaultdict(_Tally)
    for index, memory in enumerate(memories):
        body = _body(memory.content)
        previous: tuple[str, str, int] | None = None  # key, surface, end
        for match in _TOKEN.finditer(body):
            surface = match.group().strip("./-_")
            key = _key(surface, names)
            if key is None:
                previous = None
                continue
            one = tally[(key,)]
            one.members.add(index)
            one.surfaces[surface] += 1
            if previous is not None and _GAP.match(body[previous[2] : match.start()]):
                two = tally[(previous[0], key)]
                two.members.add(index)
                two.surfaces[f"{previous[1]} {surface}"] += 1
            previous = (key, surface, match.end())
    return tally


def _surface(surfaces: Counter[str]) -> str:
    """How a term is mostly written; in lower case when it is also written so (a capital
    that only begins sentences is no name)."""
    surface = surfaces.most_common(1)[0][0]
    return surface.lower() if surface.lower() in surfaces else surface


Ranked = list[tuple[str, tuple[str, ...]]]
"""An episode's candidate terms, best first: each as the members write it, and its key (a word,
or two for a phrase)."""


def ranked(memories: Sequence[Memory], background: Background | None = None) -> Ranked:
    """Every candidate term of ``memories``, best first (:func:`best` picks from them). With
    three or more members a term must be used by two of them (a thread's terms recur)."""
    if not memories:
        return []
    background = background or Background()
    tally = _tally(memories, speaker_names(memories))
    least = 2 if len(memories) >= 3 else 1
    scored: list[tuple[float, str, tuple[str, ...]]] = []
    for key, seen in tally.items():
        if len(seen.members) < least or (len(key) == 2 and key[0] == key[1]):
            continue
        idf = sum(_idf(k, background) for k in key) / len(key)
        weight = len(seen.members) * idf * (PHRASE_BONUS if len(key) == 2 else 1.0)
        surface = _surface(seen.surfaces)
        scored.append((weight, surface, key))
    scored.sort(key=lambda item: (-item[0], item[1].lower()))
    return [(surface, key) for _, surface, key in scored]


def best(candidates: Ranked, limit: int) -> list[str]:
    """Up to ``limit`` of the ranked ``candidates``: a phrase is taken only when it adds a
    word, and replaces the word it contains."""
    picked: Ranked = []
    covered: set[str] = set()
    for surface, key in candidates:
        if set(key) <= covered:
            continue
        inside = [i for i, (_, k) in enumerate(picked) if len(k) == 1 and k[0] in key]
        if inside:
            picked[inside[0]] = (surface, key)
            picked = [p for i, p in enumerate(picked) if i not in inside[1:]]
        else:
            picked.append((surface, key))
        covered |= set(key)
        if len(picked) >= limit:
            break
    return [surface for surface, _ in picked]
