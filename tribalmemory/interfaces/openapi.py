"""The HTTP API described once: a route table with request and response schemas.

The router (:mod:`.http`), the daemon client (:mod:`tribalmemory.client`) and the OpenAPI 3.1
document served at ``/openapi.json`` all read :data:`ROUTES`. To add a route, append one
:class:`Op` naming the :class:`~tribalmemory.api.TribalAPI` method it calls.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .. import validation as check
from ..api import EPISODE_STATUSES
from ..models import SourceType

# -- schema helpers ---------------------------------------------------------------------------

STRING: dict[str, Any] = {"type": "string"}
BOOLEAN: dict[str, Any] = {"type": "boolean"}
INTEGER: dict[str, Any] = {"type": "integer"}
NUMBER: dict[str, Any] = {"type": "number"}
TIMESTAMP: dict[str, Any] = {
    "type": "string",
    "format": "date-time",
    "description": "ISO 8601; without a zone it is UTC",
}
MEMORY_ID: dict[str, Any] = {"type": "string", "format": "uuid"}
EPISODE_ID: dict[str, Any] = {"type": "string", "pattern": check.EPISODE_ID.pattern}
TAGS: dict[str, Any] = {"type": "array", "items": STRING, "maxItems": check.MAX_TAGS}
SOURCE_TYPE: dict[str, Any] = {"type": "string", "enum": [s.json_name for s in SourceType]}


def nullable(schema: dict[str, Any]) -> dict[str, Any]:
    return {"anyOf": [schema, {"type": "null"}]}


def obj(
    properties: dict[str, Any], required: tuple[str, ...] = (), *, closed: bool = False
) -> dict[str, Any]:
    """An object schema; ``closed`` objects (request bodies) reject unknown fields."""
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = list(required)
    if closed:
        schema["additionalProperties"] = False
    return schema


def ref(name: str) -> dict[str, Any]:
    return {"$ref": f"#/components/schemas/{name}"}


# -- shared schemas (components) ----------------------------------------------------------------

REMEMBER_FIELDS: dict[str, Any] = {
    "content": STRING,
    "source_type": SOURCE_TYPE,
    "source_instance": STRING,
    "tags": TAGS,
    "context": STRING,
    "created_at": TIMESTAMP,
    "skip_dedup": BOOLEAN,
}

SCHEMAS: dict[str, dict[str, Any]] = {
    "Error": obj({"error": STRING, "detail": {}}, ("error", "detail")),
    "Memory": obj(
        {
            "id": MEMORY_ID,
            "content": STRING,
            "source_type": SOURCE_TYPE,
            "source_instance": STRING,
            "tags": TAGS,
            "context": nullable(STRING),
            "created_at": TIMESTAMP,
            "updated_at": TIMESTAMP,
            "supersedes": nullable(MEMORY_ID),
            "metadata": {"type": "object"},
        },
        ("id", "content", "source_type", "source_instance", "tags", "created_at"),
    ),
    "RememberResult": obj(
        {
            "success": BOOLEAN,
            "memory_id": nullable(MEMORY_ID),
            "duplicate_of": nullable(MEMORY_ID),
            "episode_id": nullable(STRING),
            "error": nullable(STRING),
        },
        ("success", "memory_id"),
    ),
    "RememberRequest": obj(REMEMBER_FIELDS, ("content",), closed=True),
    "Episode": obj(
        {
            "id": EPISODE_ID,
            "title": STRING,
            "summary": nullable(STRING),
            "status": {"type": "string", "enum": list(EPISODE_STATUSES)},
            "memory_count": INTEGER,
        },
        ("id", "title", "status"),
    ),
    "Success": obj({"success": BOOLEAN}, ("success",)),
}

# -- the route table ------------------------------------------------------------------------------

PATH_PARAMS: dict[str, tuple[dict[str, Any], Callable[[Any], str]]] = {
    "memory_id": (MEMORY_ID, check.memory_id),
    "episode_id": (EPISODE_ID, check.episode_id),
}
"""Every path parameter name, with its schema and the shared check that cleans it."""


@dataclass(frozen=True)
class Param:
    """A query-string parameter; its schema's ``type`` says how the text is converted."""

    name: str
    schema: dict[str, Any]
    doc: str


@dataclass(frozen=True)
class Op:
    """One route: parse the transport, call ``TribalAPI.<call>``, answer its dict as JSON."""

    method: str
    path: str
    call: str
    summary: str
    response: dict[str, Any]
    body: dict[str, Any] | None = None
    query: tuple[Param, ...] = ()
    auth: bool = True

    @property
    def path_params(self) -> list[str]:
        return re.findall(r"{(\w+)}", self.path)

    @property
    def tag(self) -> str:
        return "episodes" if self.path.startswith("/v1/episodes") else "memories"


ROUTES: list[Op] = [
    Op(
        "POST",
        "/v1/remember",
        "remember",
        "Store one memory",
        ref("RememberResult"),
        body=ref("RememberRequest"),
    ),
    Op(
        "POST",
        "/v1/remember/batch",
        "remember_batch",
        "Store 1–1000 memories (all validated before any is stored)",
        obj(
            {
                "results": {"type": "array", "items": ref("RememberResult")},
                "count": INTEGER,
                "stored": INTEGER,
            },
            ("results", "count", "stored"),
        ),
        body=obj(
            {
                "memories": {
                    "type": "array",
                    "items": ref("RememberRequest"),
                    "minItems": 1,
                    "maxItems": 1000,
                }
            },
            ("memories",),
            closed=True,
        ),
    ),
    Op(
        "POST",
        "/v1/recall",
        "recall",
        "Hybrid search, best first",
        obj(
            {
                "results": {
                    "type": "array",
                    "items": obj(
                        {
                            "memory_id": MEMORY_ID,
                            "similarity_score": NUMBER,
                            "memory": ref("Memory"),
                        },
                        ("memory_id", "similarity_score", "memory"),
                    ),
                },
                "query": STRING,
                "count": INTEGER,
            },
            ("results", "query", "count"),
        ),
        body=obj(
            {
                "query": STRING,
                "limit": {"type": "integer", "minimum": 1, "maximum": 50},
                "min_relevance": {"type": "number", "minimum": 0, "maximum": 1},
                "tags": TAGS,
                "source_types": {"type": "array", "items": SOURCE_TYPE},
                "after": TIMESTAMP,
                "before": TIMESTAMP,
            },
            ("query",),
            closed=True,
        ),
    ),
    Op("GET", "/v1/memory/{memory_id}", "get_memory", "One memory by id", ref("Memory")),
    Op(
        "DELETE",
        "/v1/forget/{memory_id}",
        "forget",
        "Delete a memory",
        obj({"success": BOOLEAN, "memory_id": MEMORY_ID}, ("success", "memory_id")),
    ),
    Op(
        "POST",
        "/v1/correct",
        "correct",
        "Store a CORRECTION that supersedes a memory (the old one is kept as history)",
        ref("RememberResult"),
        body=obj(
            {
                "memory_id": MEMORY_ID,
                "content": STRING,
                "source_instance": STRING,
                "tags": TAGS,
                "context": STRING,
            },
            ("memory_id", "content"),
            closed=True,
        ),
    ),
    Op(
        "GET",
        "/v1/health",
        "health",
        "Liveness, version, store and plugin state (no auth)",
        obj(
            {
                "status": STRING,
                "version": STRING,
                "uptime_seconds": NUMBER,
                "store": {"type": "object"},
                "embedding": {"type": "object"},
            },
            ("status", "version"),
        ),
        auth=False,
    ),
    Op(
        "GET",
        "/v1/stats",
        "stats",
        "Memory counts by source type",
        obj(
            {
                "total_memories": INTEGER,
                "by_source_type": {"type": "object"},
                "embedding_model": STRING,
            },
            ("total_memories", "by_source_type"),
        ),
    ),
    Op(
        "GET",
        "/v1/episodes",
        "episodes_list",
        "List episodes, most recently active first",
        obj(
            {
                "episodes": {"type": "array", "items": ref("Episode")},
                "count": INTEGER,
                "status": nullable(STRING),
            },
            ("episodes", "count"),
        ),
        query=(
            Param(
                "status",
                {"type": "string", "enum": list(EPISODE_STATUSES)},
                "Only episodes with this status",
            ),
            Param(
                "limit", {"type": "integer", "minimum": 1, "maximum": 100}, "Page size (default 50)"
            ),
            Param("offset", {"type": "integer", "minimum": 0}, "Episodes to skip"),
            Param("outcome", STRING, "Only episodes with this outcome"),
            Param("tag", STRING, "Only episodes with this tag"),
            Param("participant", STRING, "Only episodes with this source_instance"),
        ),
    ),
    Op(
        "GET",
        "/v1/episodes/costs",
        "episode_costs",
        "LLM spend of the episode engine",
        {"type": "object"},
    ),
    Op(
        "POST",
        "/v1/episodes/search",
        "episodes_search",
        "Episodes matching a query, with time and status filters (recent ones boosted)",
        obj(
            {
                "query": STRING,
                "episodes": {"type": "array", "items": ref("Episode")},
                "count": INTEGER,
            },
            ("query", "episodes", "count"),
        ),
        body=obj(
            {
                "query": STRING,
                "time_start": TIMESTAMP,
                "time_end": TIMESTAMP,
                "status": {"type": "string", "enum": list(EPISODE_STATUSES)},
                "limit": {"type": "integer", "minimum": 1, "maximum": 50},
            },
            ("query",),
            closed=True,
        ),
    ),
    Op(
        "POST",
        "/v1/episodes/replay",
        "episodes_replay",
        "The episodes about a topic, oldest first, as JSON and as text",
        obj(
            {
                "topic": STRING,
                "episodes": {"type": "array", "items": {"type": "object"}},
                "count": INTEGER,
                "text": STRING,
            },
            ("topic", "episodes", "count", "text"),
        ),
        body=obj(
            {"topic": STRING, "limit": {"type": "integer", "minimum": 1, "maximum": 20}},
            ("topic",),
            closed=True,
        ),
    ),
    Op(
        "GET",
        "/v1/episodes/{episode_id}",
        "episode_get",
        "One episode (and its timeline)",
        obj(
            {
                "episode": ref("Episode"),
                "memory_ids": {"type": "array", "items": MEMORY_ID},
                "timeline": {"type": "array", "items": {"type": "object"}},
            },
            ("episode",),
        ),
        query=(Param("include_timeline", BOOLEAN, "Add the member memories in time order"),),
    ),
    Op(
        "GET",
        "/v1/episodes/{episode_id}/chain",
        "episode_chain",
        "The chain of episodes this one belongs to (continues / continued by), root first",
        obj(
            {
                "episode_id": EPISODE_ID,
                "root_id": EPISODE_ID,
                "chain": {"type": "array", "items": ref("Episode")},
                "count": INTEGER,
            },
            ("episode_id", "root_id", "chain", "count"),
        ),
    ),
    Op(
        "POST",
        "/v1/episodes",
        "episode_create",
        "Create an episode from memories",
        obj(
            {"success": BOOLEAN, "episode_id": EPISODE_ID, "memory_count": INTEGER},
            ("success", "episode_id", "memory_count"),
        ),
        body=obj(
            {
                "title": STRING,
                "memory_ids": {"type": "array", "items": MEMORY_ID, "minItems": 1},
                "parent_episode_id": EPISODE_ID,
            },
            ("title", "memory_ids"),
            closed=True,
        ),
    ),
    Op(
        "POST",
        "/v1/episodes/{episode_id}/memories",
        "episode_add",
        "Add a memory to an episode",
        ref("Success"),
        body=obj({"memory_id": MEMORY_ID}, ("memory_id",), closed=True),
    ),
    Op(
        "DELETE",
        "/v1/episodes/{episode_id}/memories/{memory_id}",
        "episode_remove",
        "Remove a memory from an episode",
        ref("Success"),
    ),
    Op(
        "POST",
        "/v1/episodes/{episode_id}/close",
        "episode_close",
        "Close an episode",
        ref("Success"),
    ),
    Op(
        "POST",
        "/v1/episodes/{episode_id}/regenerate",
        "episode_regenerate",
        "Queue a full summary regeneration",
        ref("Success"),
    ),
    Op(
        "DELETE",
        "/v1/episodes/{episode_id}",
        "episode_delete",
        "Delete an episode (its memories stay)",
        ref("Success"),
    ),
]

OPERATIONS: dict[str, Op] = {op.call: op for op in ROUTES}
PUBLIC_PATHS = frozenset(op.path for op in ROUTES if not op.auth)


def body_fields(op: Op) -> tuple[dict[str, Any], list[str]]:
    """The properties and required names of a route's request body."""
    schema = op.body or {}
    if "$ref" in schema:
        schema = SCHEMAS[schema["$ref"].rsplit("/", 1)[1]]
    return schema.get("properties", {}), schema.get("required", [])


# -- the OpenAPI document -------------------------------------------------------------------------


def _responses(op: Op) -> dict[str, Any]:
    error = {"content": {"application/json": {"schema": ref("Error")}}}
    codes = {"400": "Malformed request, path id or query parameter"}
    if op.auth:
        codes["401"] = "Missing or wrong bearer token (only once a token exists)"
    codes["404"] = "Unknown id or route"
    if op.body is not None:
        codes["413"] = "Body or a text field too large"
        codes["422"] = "A body field has the wrong type, is missing, unknown or out of range"
    if op.tag == "episodes":
        codes["501"] = "Episode feature not enabled"
    codes["503"] = "Store or dependency unavailable"
    out: dict[str, Any] = {
        "200": {"description": "OK", "content": {"application/json": {"schema": op.response}}}
    }
    out.update({code: {"description": text, **error} for code, text in codes.items()})
    return out


def _operation(op: Op) -> dict[str, Any]:
    params = [
        {"name": name, "in": "path", "required": True, "schema": PATH_PARAMS[name][0]}
        for name in op.path_params
    ]
    params += [
        {"name": p.name, "in": "query", "required": False, "schema": p.schema, "description": p.doc}
        for p in op.query
    ]
    data: dict[str, Any] = {
        "operationId": op.call,
        "summary": op.summary,
        "tags": [op.tag],
        "responses": _responses(op),
    }
    if params:
        data["parameters"] = params
    if op.body is not None:
        data["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": op.body}},
        }
    data["security"] = [{"bearer": []}] if op.auth else []
    return data


def openapi_document(version: str) -> dict[str, Any]:
    """The OpenAPI 3.1 description of every route in :data:`ROUTES`."""
    paths: dict[str, dict[str, Any]] = {}
    for op in ROUTES:
        paths.setdefault(op.path, {})[op.method.lower()] = _operation(op)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Tribal Memory",
            "version": version,
            "description": "Shared memory for AI agents. Errors are "
            '{"error": message, "detail": ...}.',
        },
        "servers": [{"url": "http://127.0.0.1:18790"}],
        "paths": paths,
        "components": {
            "schemas": SCHEMAS,
            "securitySchemes": {
                "bearer": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "tribalmemory token show --reveal",
                }
            },
        },
    }
