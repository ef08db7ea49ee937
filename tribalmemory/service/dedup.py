"""Is a near-duplicate the same fact? Pure decisions for remember()'s duplicate check.

Two texts whose embeddings are nearly identical can still state different facts: "rate limit
100 requests per minute" and "rate limit 1000 requests per minute" embed almost the same. A
near-duplicate is only a real duplicate when its *fact tokens* agree: numbers, versions and
dates, names (capitalised words other than common sentence openers like "The" or "We",
identifiers such as ``snake_case``, ``camelCase``, ``file.py`` or ``a/b``) and negations. A fact
token counts as changed only when the other text does not contain it in any case.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

_WORD = re.compile(r"[^\s]+")
_STRIP = "\"'`.,;:!?()[]{}<>«»“”‘’*"
_SENTENCE_END = re.compile(r"[.!?:]$")
# Capitalised at a sentence's start, these are not names.
OPENERS = frozenset(
    "a an the we i it its this that these those our my your their he she they you in on at "
    "for to from and but or if when while after before since as so then there here all each "
    "every some any most note please also use do does did is are was were be".split()
)
_IDENTIFIER = re.compile(r"[a-z][A-Z]|[_/\\@#]|\w\.\w")
_THOUSANDS = re.compile(r"^\d{1,3}(,\d{3})+$")
NEGATIONS = frozenset(
    {"not", "no", "never", "none", "nothing", "neither", "nor", "without", "cannot", "nobody"}
)


@dataclass(frozen=True)
class NearDuplicate:
    """A stored memory whose embedding is at or above the duplicate threshold."""

    memory_id: str
    content: str


@dataclass(frozen=True)
class DedupDecision:
    """``duplicate_of``: do not store; else store, with ``supersedes`` (an updated fact) or
    nothing (no near-duplicate)."""

    duplicate_of: str | None = None
    supersedes: str | None = None


def _words(text: str) -> list[tuple[str, bool]]:
    """(word stripped of surrounding punctuation, starts a sentence) in order."""
    out: list[tuple[str, bool]] = []
    starts = True
    for raw in _WORD.findall(text):
        word = raw.strip(_STRIP)
        if word:
            out.append((word, starts))
        starts = bool(_SENTENCE_END.search(raw))
    return out


def _is_fact(word: str, sentence_start: bool) -> bool:
    if any(c.isdigit() for c in word) or _IDENTIFIER.search(word):
        return True
    return word[0].isupper() and not (sentence_start and word.lower() in OPENERS)


def _normal(word: str) -> str:
    word = word.lower()
    return word.replace(",", "") if _THOUSANDS.match(word) else word


def fact_tokens(text: str) -> set[str]:
    """Numbers, versions, dates, names and identifiers of ``text``, lower-cased."""
    return {_normal(w) for w, start in _words(text) if _is_fact(w, start)}


def negations(text: str) -> Counter[str]:
    """Negation words of ``text`` (``don't`` counts as ``not``)."""
    found: Counter[str] = Counter()
    for word, _ in _words(text):
        lower = word.lower().replace("’", "'")
        if lower.endswith("n't"):
            found["not"] += 1
        elif lower in NEGATIONS:
            found[lower] += 1
    return found


def differences(new: str, old: str) -> list[str]:
    """What makes ``new`` a different fact from ``old``: fact tokens one has and the other
    does not mention at all (in any case), and a change of negation. Empty: the same fact."""
    new_words = {_normal(w) for w, _ in _words(new)}
    old_words = {_normal(w) for w, _ in _words(old)}
    changed = sorted(
        {t for t in fact_tokens(new) if t not in old_words}
        | {t for t in fact_tokens(old) if t not in new_words}
    )
    if negations(new) != negations(old):
        changed.append("negation")
    return changed


def is_same_fact(new: str, old: str) -> bool:
    """True when ``new`` only restates ``old`` (a real duplicate), False when it updates it."""
    return not differences(new, old)


def decide(new: str, candidates: list[NearDuplicate]) -> DedupDecision:
    """Of the near-duplicates (nearest first): the first one stating the same fact makes
    ``new`` a duplicate; otherwise ``new`` is stored and supersedes the nearest one."""
    for candidate in candidates:
        if is_same_fact(new, candidate.content):
            return DedupDecision(duplicate_of=candidate.memory_id)
    if candidates:
        return DedupDecision(supersedes=candidates[0].memory_id)
    return DedupDecision()


def duplicate_message(duplicate_of: str) -> str:
    """The error of a remember() that stored nothing: names the API field and the CLI flag."""
    return (
        f"near-duplicate of memory {duplicate_of} (same numbers, names and negations); nothing "
        "stored. To store it anyway send skip_dedup: true (REST and MCP) or use "
        "`tribalmemory remember --force`"
    )
