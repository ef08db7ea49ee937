"""BM25 sparse vectors, computed locally by ``qdrant_edge.Bm25`` (no model download).

Documents get term-frequency weights; queries get weight 1 per distinct term. The store's
sparse vector field carries the IDF modifier, so Qdrant applies inverse document frequency
over the stored collection at query time. Text is lower-cased, English stop words are dropped
and words are stemmed (Snowball), so "deploying" matches "deployed".

Layout: one index space (a term's index is its hash, ``qdrant_edge.Bm25``), two sparse fields
(``storage/base.py``: :func:`~.base.sparse_field`). A memory users or agents wrote keeps its
vector in ``bm25``, one the engine wrote (episode summary, lesson, decision) in
``bm25_engine``. A field's IDF counts its own points only, so the memories users wrote are
scored exactly as if no engine-written memory were stored, and a search asks each field with
the same query vector. (Two index spaces of one field would not do: the IDF's number of
documents counts every point with a vector in the field, whatever its terms.)
"""

from __future__ import annotations

from functools import lru_cache

from qdrant_edge import Bm25, Bm25Config, SparseVector

# Memories are short: a sentence or three. avg_len is BM25's expected document length in
# tokens (the default, 256, suits web pages) and drives length normalisation.
AVG_LEN = 32.0
K1 = 1.2
B = 0.75
SIGNATURE = f"bm25:english:k={K1}:b={B}:avg_len={AVG_LEN:g}"  # recorded in the store


@lru_cache(maxsize=1)
def _model() -> Bm25:
    return Bm25(Bm25Config(k=K1, b=B, avg_len=AVG_LEN, language="english"))


def document_vector(text: str) -> SparseVector:
    """Term weights of a stored memory (may be empty, e.g. only stop words)."""
    return _model().embed_document(text or "")


def query_vector(text: str) -> SparseVector | None:
    """Terms of a query, or None when nothing is left after stop words."""
    vector = _model().embed_query(text or "")
    return vector if vector.indices else None
