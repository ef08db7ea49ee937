"""Builders of the episode detector's features for tests: memories and episodes on hand-made
vectors, at times counted from :data:`T0`. Plain functions, imported where they are used."""

from __future__ import annotations

import math
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np

from tribalmemory.episodes.detector import (
    EpisodeFeatures,
    MemoryFeatures,
    build_episode,
    tokenize,
)

T0 = datetime(2025, 3, 3, 9, 0, tzinfo=UTC)
DIM = 8


def basis(i: int, dim: int = DIM) -> np.ndarray:
    """The unit vector along axis ``i``."""
    v = np.zeros(dim, dtype=np.float32)
    v[i] = 1.0
    return v


def vec_at(cos: float, axis: int = 0, other: int = 1, dim: int = DIM) -> np.ndarray:
    """A unit vector with cosine ``cos`` to basis vector ``axis`` (the rest along ``other``)."""
    v = np.zeros(dim, dtype=np.float32)
    v[axis] = cos
    v[other] = math.sqrt(max(0.0, 1 - cos * cos))
    return v


def mem(
    id: str,
    vector: Any,
    hours: float = 0.0,
    tags: Iterable[str] = (),
    source: str = "a",
    text: str = "",
    *,
    terms: Iterable[str] | None = None,
    words: int | None = 12,
) -> MemoryFeatures:
    """A memory ``hours`` after :data:`T0` whose terms are :func:`tokenize` of ``text`` (or
    ``terms``). By default it stands for a text of a dozen ``words`` (what a memory typically
    has: the model weighs a short text's similarity less); None: not known."""
    return MemoryFeatures(
        id,
        np.asarray(vector, dtype=np.float32),
        frozenset(tags),
        source,
        T0 + timedelta(hours=hours),
        tokenize(text) if terms is None else frozenset(terms),
        words=words,
    )


def said(
    id: str,
    source: str,
    minutes: float,
    content: str,
    axis: int = 0,
    tags: Iterable[str] = (),
    *,
    vector: Any = None,
) -> MemoryFeatures:
    """A memory as the engine builds it from its text (:meth:`MemoryFeatures.from_text`: its
    terms, names and words), by ``source``, ``minutes`` after :data:`T0`, on ``basis(axis)``
    (or ``vector``)."""
    return MemoryFeatures.from_text(
        id,
        basis(axis) if vector is None else vector,
        content,
        tags,
        source,
        T0 + timedelta(minutes=minutes),
    )


def episode_on(
    axis: int, id: str = "E", hours: float = 0.0, n: int = 3, text: str = ""
) -> EpisodeFeatures:
    """An episode of ``n`` memories on ``basis(axis)`` an hour apart, the last ``hours`` after
    :data:`T0`."""
    members = [mem(f"{id}{k}", basis(axis), hours=hours - (n - 1 - k), text=text) for k in range(n)]
    return build_episode(id, members)
