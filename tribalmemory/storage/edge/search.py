"""Search on the shard: a MemoryFilter as a Qdrant Edge filter, and the query requests."""

from __future__ import annotations

from typing import Any

import numpy as np
import qdrant_edge as qe

from ...timeutil import to_epoch
from .. import lexical
from ..base import (
    DENSE,
    HNSW_EF,
    SPARSE,
    MemoryFilter,
    metadata_field,
    point_ids,
    project_conditions,
    source_values,
)

OVERSAMPLING = 2.0  # int8 candidates per wanted hit, rescored with the float vectors
# hnsw_ef only matters for HNSW segments of stores optimized by older versions, until their
# first optimize() converts them.
_PARAMS = qe.SearchParams(
    hnsw_ef=HNSW_EF,
    quantization=qe.QuantizationSearchParams(rescore=True, oversampling=OVERSAMPLING),
)


def edge_filter(where: MemoryFilter | None) -> qe.Filter | None:
    """MemoryFilter as a Qdrant Edge filter (None when it has no condition)."""
    if where is None:
        return None
    must: list[Any] = []
    must_not: list[Any] = []
    if where.ids is not None:
        must.append(qe.HasIdCondition(set(point_ids(where.ids))))
    if where.tags_any:
        must.append(qe.FieldCondition("tags", match=qe.MatchAny(list(where.tags_any))))
    if where.source_types:
        must.append(
            qe.FieldCondition("source_type", match=qe.MatchAny(source_values(where.source_types)))
        )
    if where.exclude_source_types:
        must_not.append(
            qe.FieldCondition(
                "source_type", match=qe.MatchAny(source_values(where.exclude_source_types))
            )
        )
    if where.after is not None or where.before is not None:
        must.append(
            qe.FieldCondition(
                "created_ts",
                range=qe.RangeFloat(
                    gte=to_epoch(where.after) if where.after else None,
                    lt=to_epoch(where.before) if where.before else None,
                ),
            )
        )
    for key, value in where.metadata_equals.items():
        must.append(qe.FieldCondition(metadata_field(key), match=qe.MatchValue(value)))
    for key in where.metadata_present:
        must_not.append(qe.IsEmptyCondition(metadata_field(key)))
    if where.source_instance is not None:
        must.append(
            qe.FieldCondition("source_instance", match=qe.MatchValue(where.source_instance))
        )
    if where.exclude_superseded:
        must.append(qe.IsEmptyCondition("superseded_by"))
    for key, values in project_conditions(where):
        must.append(qe.FieldCondition(key, match=qe.MatchAny(values)))
    if not must and not must_not:
        return None
    return qe.Filter(must=must or None, must_not=must_not or None)


def dense(vector: Any) -> np.ndarray:
    """The dense part of a returned point's vectors."""
    return np.asarray(vector[DENSE], dtype=np.float32)


def hybrid_requests(
    query: np.ndarray, text: str, flt: qe.Filter | None, depths: dict[str, int]
) -> list[qe.QueryRequest]:
    """A hybrid search's requests, ids and scores only, ``depths[field]`` candidates each:
    the dense one (``dense``, first), and when ``text`` has terms one BM25 request for each
    sparse field ``depths`` names (``bm25``, ``bm25_engine``: see ``storage/lexical.py``)."""
    requests = [
        qe.QueryRequest(
            limit=depths[DENSE],
            query=qe.Query.Nearest(query.tolist(), using=DENSE),
            filter=flt,
            params=_PARAMS,
            with_payload=False,
            with_vector=False,
        )
    ]
    sparse = lexical.query_vector(text)
    if sparse is not None:
        requests += [
            qe.QueryRequest(
                limit=limit,
                query=qe.Query.Nearest(sparse, using=field),
                filter=flt,
                with_payload=False,
                with_vector=False,
            )
            for field, limit in depths.items()
            if field != DENSE
        ]
    return requests


def term_request(sparse: qe.SparseVector, limit: int, flt: qe.Filter | None) -> qe.QueryRequest:
    """The ``limit`` written memories best scored by BM25 on ``sparse``, with their payload."""
    return qe.QueryRequest(
        limit=limit,
        query=qe.Query.Nearest(sparse, using=SPARSE),
        filter=flt,
        with_payload=True,
        with_vector=False,
    )


def dense_request(query: np.ndarray, limit: int, flt: qe.Filter | None) -> qe.QueryRequest:
    """The ``limit`` nearest memories by cosine, with their payload."""
    return qe.QueryRequest(
        limit=limit,
        query=qe.Query.Nearest(query.tolist(), using=DENSE),
        filter=flt,
        params=_PARAMS,
        with_payload=True,
        with_vector=False,
    )
