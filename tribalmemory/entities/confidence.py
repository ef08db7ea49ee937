"""How sure the extraction is of one found entity (:func:`span_features`, :class:`SureModel`).

The rules find more than entities: on a domain they were not written for, about a quarter of
what they find is the trade's vocabulary (``an SLA``, ``Backfill`` opening a sentence). A
model fitted on the hand-labelled streams (``benchmarks/fit_entity_confidence.py``, shipped
as ``sure_model.json`` beside this module) scores each found span from its shape and its
surroundings in the memory; a span under the model's threshold is *unsure*: still a mention
(its memory is found by the entity's name) but it does not put its entity in the list alone.
Pure: no I/O beyond reading that file once."""

from __future__ import annotations

import functools
import json
import math
import re
import zlib
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from importlib.resources import files
from typing import Any

import numpy as np

from tribalmemory.entities.extract import Entity
from tribalmemory.entities.words import english_words
from tribalmemory.trees import Trees

MODEL_FILE = "sure_model.json"
KINDS = ("name", "identifier", "system", "path", "url", "version", "ticket")
SHAPES = (
    ("acronym", re.compile(r"[A-Z]{2,6}")),
    ("acronym with digits", re.compile(r"[A-Z][A-Z0-9]*\d[A-Z0-9]*")),
    ("capitalised word", re.compile(r"[A-Z][a-z]+")),
    ("capitalised words", re.compile(r"[A-Z][a-z]+(?: [A-Z][a-z]+)+")),
    ("small letters", re.compile(r"[a-z]+")),
    ("snake case", re.compile(r"[a-z][a-z0-9_]*_[a-z0-9_]*")),
    ("capitals snake case", re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")),
    ("humps", re.compile(r"[A-Za-z]*[a-z][A-Z]\w*")),
)
DETERMINERS = frozenset("the a an our per each every no any all their its this that new".split())
_SENTENCE_START = re.compile(r"(?:^|[.!?:\n]\s*|^\s*[-*]\s*)$")
_WORD_BEFORE = re.compile(r"([\w'-]+)\W{0,3}$")
_WORD_AFTER = re.compile(r"^\W{0,3}([\w'-]+)")
CONTEXT_BUCKETS = 48
"""The word before and the word after a span, each hashed into this many features."""
_PARTS = re.compile(r"[\s/_.-]+")
_KIND_VALUES = {k: [float(k == other) for other in KINDS] for k in KINDS}
_SHAPE_VALUES = {
    name: [float(name == other) for other, _ in SHAPES] + [float(name == "other")]
    for name in [*(n for n, _ in SHAPES), "other"]
}


def _shape(surface: str) -> str:
    return next((name for name, rx in SHAPES if rx.fullmatch(surface)), "other")


def _wordy(char: str) -> bool:
    """A word character as ``re``'s ``\\w`` sees one (``""``: the text's edge, none)."""
    return char.isalnum() or char == "_"


def whole_word(word: str, text: str) -> bool:
    """Whether ``text`` holds ``word`` between word boundaries (``re``'s ``\\b``) at both ends."""
    first, last = _wordy(word[:1]), _wordy(word[-1:])
    at = text.find(word)
    while at >= 0:
        end = at + len(word)
        if _wordy(text[at - 1 : at]) != first and _wordy(text[end : end + 1]) != last:
            return True
        at = text.find(word, at + 1)
    return False


def _bucket(word: str) -> int:
    return zlib.crc32(word.encode()) % CONTEXT_BUCKETS


def feature_names() -> tuple[str, ...]:
    """The names of :func:`span_features`' values, in order."""
    fixed = (
        *(f"kind {k}" for k in KINDS),
        *(f"shape {name}" for name, _ in SHAPES),
        "shape other",
        "in backticks",
        "in quotes",
        "log length",
        "words",
        "opens a sentence",
        "English words",
        "first word English",
        "after a determiner",
        "alone in brackets",
        "before a bracket",
        "digit",
        "hyphen",
        "dot",
        "slash",
        "underscore",
        "possessive",
        "acronym then s",
        "known name",
        "again in the memory",
        "small letters elsewhere in the memory",
        "capitalised word before",
        "capitalised word after",
        "acronym in backticks",
        "acronym English",
        "acronym opens a sentence",
        "acronym after a determiner",
        "acronym known",
        "capitalised word English",
        "capitalised word opens a sentence",
        "capitalised word known",
    )
    before = tuple(f"word before #{i}" for i in range(CONTEXT_BUCKETS))
    after = tuple(f"word after #{i}" for i in range(CONTEXT_BUCKETS))
    return fixed + before + after


def span_features(text: str, entity: Entity, known: Collection[str] = ()) -> list[float]:
    """The values of :func:`feature_names` for one found span of ``text``; ``known``: the
    names the project taught the extraction (a name seen in an earlier memory)."""
    surface, start, end = entity.text, entity.start, entity.end
    before, after = text[max(0, start - 40) : start], text[end : end + 40]
    shape = _shape(surface)
    words = [w for w in _PARTS.split(surface) if w]
    english = english_words()
    alpha = [w.lower() for w in words if w.isalpha()]
    all_english = bool(alpha) and all(w in english for w in alpha)
    opens = bool(_SENTENCE_START.search(before))
    prev = _WORD_BEFORE.search(before)
    nxt = _WORD_AFTER.search(after)
    prev_word = prev.group(1) if prev else ""
    next_word = nxt.group(1) if nxt else ""
    determiner = prev_word.lower() in DETERMINERS
    ticks = before.endswith("`") and after.startswith("`")
    is_known = surface in known or entity.name in known
    acronym = shape == "acronym"
    capitalised = shape == "capitalised word"
    lowered = surface.lower()
    values = [
        *_KIND_VALUES.get(entity.kind, [0.0] * len(KINDS)),
        *_SHAPE_VALUES[shape],
        float(ticks),
        float(before[-1:] in "\"'" and after[:1] in "\"'" and before[-1:] != ""),
        math.log(len(surface)),
        min(len(surface.split()), 4) / 4,
        float(opens),
        float(all_english),
        float(bool(alpha) and alpha[0] in english),
        float(determiner),
        float(before.endswith("(") and after[:1] in "),"),
        float(after.startswith(" (")),
        float(any(c.isdigit() for c in surface)),
        float("-" in surface),
        float("." in surface),
        float("/" in surface),
        float("_" in surface),
        float(after[:1] == "'"),
        float(acronym and after.startswith("s ")),
        float(is_known),
        float(text.count(surface) > 1),
        float(lowered != surface and whole_word(lowered, text)),
        float(prev_word[:1].isupper() and not opens),
        float(next_word[:1].isupper()),
        float(acronym and ticks),
        float(acronym and all_english),
        float(acronym and opens),
        float(acronym and determiner),
        float(acronym and is_known),
        float(capitalised and all_english),
        float(capitalised and opens),
        float(capitalised and is_known),
    ]
    context = [0.0] * (2 * CONTEXT_BUCKETS)
    if prev_word:
        context[_bucket(prev_word.lower())] = 1.0
    if next_word:
        context[CONTEXT_BUCKETS + _bucket(next_word.lower())] = 1.0
    return values + context


@dataclass(frozen=True)
class SureModel:
    """Boosted trees over :func:`span_features` (a logit: ``baseline`` plus the trees' sum) and
    the probability at or above which a span is sure (chosen on validation streams). ``meta``:
    how and on what it was fitted."""

    features: tuple[str, ...]
    trees: Trees
    baseline: float
    threshold: float
    meta: Mapping[str, Any] = field(default_factory=dict)

    def probabilities(self, rows: np.ndarray) -> np.ndarray:
        logits = self.baseline + self.trees.predict(rows)
        return 1.0 / (1.0 + np.exp(-logits))

    def sure(
        self, text: str, entities: Sequence[Entity], known: Collection[str] = ()
    ) -> list[bool]:
        """For each of ``entities`` (found in ``text``), whether the extraction is sure of it."""
        if not entities:
            return []
        rows = np.array([span_features(text, e, known) for e in entities], dtype=np.float64)
        return [bool(p >= self.threshold) for p in self.probabilities(rows)]

    def to_json(self) -> dict[str, Any]:
        return {
            "features": list(self.features),
            "baseline": self.baseline,
            "threshold": self.threshold,
            "meta": dict(self.meta),
            "trees": self.trees.to_json(),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SureModel:
        names = tuple(str(f) for f in data["features"])
        if names != feature_names():
            raise ValueError(f"{MODEL_FILE} was fitted on other features; fit it again")
        return cls(
            names,
            Trees.from_json(data["trees"]),
            float(data["baseline"]),
            float(data["threshold"]),
            dict(data.get("meta", {})),
        )


@functools.cache
def sure_model() -> SureModel:
    """The shipped model: ``sure_model.json``, fitted by ``benchmarks/fit_entity_confidence.py``."""
    text = files("tribalmemory.entities").joinpath(MODEL_FILE).read_text("utf-8")
    return SureModel.from_json(json.loads(text))
