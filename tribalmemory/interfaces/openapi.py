"""The HTTP API as a route table; the OpenAPI 3.1 document is generated from it and the shapes.

The router (:mod:`.http`), the daemon client (:mod:`tribalmemory.client`) and the document
served at ``/openapi.json`` all read :data:`ROUTES`. Request bodies, query parameters and
responses are the models of :mod:`tribalmemory.shapes`. To add a route, append one :class:`Op`
naming the :class:`~tribalmemory.api.TribalAPI` method it calls and its models.
"""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from .. import shapes
from .. import validation as check
from ..shapes import Request

REF_TEMPLATE = "#/components/schemas/{model}"


# -- the route table ------------------------------------------------------------------------------

PATH_PARAMS: dict[str, tuple[dict[str, Any], Callable[[Any], str]]] = {
    "memory_id": (shapes.ForgetRequest.argument_schema("memory_id"), check.memory_id),
    "episode_id": (shapes.EpisodeRef.argument_schema("episode_id"), check.episode_id),
    "name": (shapes.EntityRef.argument_schema("name"), check.entity_name),
    "link_id": (shapes.CauseRef.argument_schema("link_id"), check.link_id),
}
"""Every path parameter name, with its schema and the shared check that cleans it."""

SLASHED_PARAMS = ("name",)
"""Path parameters whose value may hold ``/`` (sent as ``%2F``, decoded before routing)."""


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
    response: type[BaseModel]
    body: type[Request] | None = None
    query_model: type[Request] | None = None
    auth: bool = True

    @property
    def path_params(self) -> list[str]:
        return re.findall(r"{(\w+)}", self.path)

    @property
    def route_path(self) -> str:
        """The path as the router matches it: a parameter of :data:`SLASHED_PARAMS` takes the
        rest of the path, slashes included (an entity named ``src/app.py``)."""
        path = self.path
        for name in SLASHED_PARAMS:
            path = path.replace(f"{{{name}}}", f"{{{name}:path}}")
        return path

    @property
    def query(self) -> tuple[Param, ...]:
        model = self.query_model
        if model is None:
            return ()
        return tuple(
            Param(name, model.argument_schema(name), field.description or "")
            for name, field in model.model_fields.items()
        )

    @property
    def arguments(self) -> tuple[str, ...]:
        """The operation's arguments: its path parameters, then the fields of its body or
        query model in the model's order (the order of ``TribalAPI.<call>``'s parameters)."""
        model = self.body or self.query_model
        names = list(self.path_params)
        if model is not None:
            names += [name for name in model.model_fields if name not in names]
        return tuple(names)

    @property
    def required(self) -> tuple[str, ...]:
        """The arguments a call must give: the path's and the body's required fields. A query
        parameter may be left out of the call (as of the query string): the API refuses a
        missing required one with a message naming it (a 400)."""
        given = set(self.path_params) | set(self.body.required_names() if self.body else ())
        return tuple(name for name in self.arguments if name in given)

    def signature(self) -> inspect.Signature:
        """``TribalAPI.<call>``'s parameters (without ``self``) as the route table declares
        them: the required ones, then the others defaulting to None."""
        kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
        return inspect.Signature(
            [
                inspect.Parameter(
                    name,
                    kind,
                    annotation=Any,
                    default=inspect.Parameter.empty if name in self.required else None,
                )
                for name in self.arguments
            ]
        )

    @property
    def tag(self) -> str:
        if self.path.startswith("/v1/entities"):
            return "entities"
        if self.path.startswith(("/v1/causes", "/v1/causal-path")):
            return "causes"
        episodes = self.path.startswith(("/v1/episodes", "/v1/context", "/v1/patterns"))
        return "episodes" if episodes else "memories"


ROUTES: list[Op] = [
    Op(
        "POST",
        "/v1/remember",
        "remember",
        "Store one memory",
        shapes.RememberResult,
        body=shapes.RememberRequest,
    ),
    Op(
        "POST",
        "/v1/remember/batch",
        "remember_batch",
        "Store 1–1000 memories (all validated before any is stored)",
        shapes.RememberBatchResult,
        body=shapes.RememberBatchRequest,
    ),
    Op(
        "POST",
        "/v1/conversations",
        "ingest_conversation",
        "Store a conversation's messages, a memory per turn (idempotent by message position)",
        shapes.IngestConversationResult,
        body=shapes.IngestConversationRequest,
    ),
    Op(
        "POST",
        "/v1/recall",
        "recall",
        "Hybrid search, best first",
        shapes.RecallResult,
        body=shapes.RecallRequest,
    ),
    Op(
        "GET",
        "/v1/memories",
        "memories_list",
        "Memories without a query, newest first, a page at a time",
        shapes.MemoryList,
        query_model=shapes.MemoriesListQuery,
    ),
    Op("GET", "/v1/memory/{memory_id}", "get_memory", "One memory by id", shapes.Memory),
    Op("DELETE", "/v1/forget/{memory_id}", "forget", "Delete a memory", shapes.ForgetResult),
    Op(
        "POST",
        "/v1/memories/{memory_id}/used",
        "memory_used",
        "Record that a recalled memory was used (its retrievability grows)",
        shapes.UsedResult,
    ),
    Op(
        "POST",
        "/v1/correct",
        "correct",
        "Store a CORRECTION that supersedes a memory (the old one is kept as history)",
        shapes.RememberResult,
        body=shapes.CorrectRequest,
    ),
    Op(
        "GET",
        "/v1/health",
        "health",
        "Liveness, version, store and plugin state (no auth)",
        shapes.Health,
        auth=False,
    ),
    Op("GET", "/v1/stats", "stats", "Memory counts by source type", shapes.Stats),
    Op(
        "GET",
        "/v1/projects",
        "projects",
        "Every project with its memory and episode counts, most recently active first",
        shapes.ProjectList,
    ),
    Op(
        "GET",
        "/v1/sessions",
        "sessions",
        "The client sessions of a project (their memories' session), newest activity first",
        shapes.SessionList,
        query_model=shapes.SessionsQuery,
    ),
    Op(
        "GET",
        "/v1/episodes",
        "episodes_list",
        "List episodes, most recently active first",
        shapes.EpisodeList,
        query_model=shapes.EpisodesListQuery,
    ),
    Op(
        "GET",
        "/v1/entities",
        "entities_list",
        "A project's entities (services, files, tickets, people), most mentioned first",
        shapes.EntityList,
        query_model=shapes.EntitiesListQuery,
    ),
    Op(
        "GET",
        "/v1/entities/{name}",
        "entity_get",
        "One entity (by any alias): its episodes, latest memories and co-occurring entities",
        shapes.EntityDetail,
        query_model=shapes.EntityGetQuery,
    ),
    Op(
        "GET",
        "/v1/causes",
        "causes_list",
        "A node's causal links (an episode or a memory, as cause or effect), strongest first",
        shapes.CauseList,
        query_model=shapes.CausesQuery,
    ),
    Op(
        "POST",
        "/v1/causes",
        "cause_add",
        "Link a cause to its effect by hand (kept when episodes are regenerated)",
        shapes.CauseAddResult,
        body=shapes.CauseAddRequest,
    ),
    Op(
        "DELETE",
        "/v1/causes/{link_id}",
        "cause_remove",
        "Remove a causal link",
        shapes.Success,
        query_model=shapes.CauseRemoveQuery,
    ),
    Op(
        "GET",
        "/v1/causal-path",
        "causal_path",
        "The shortest chain of causal links from one node to another, or why none is known",
        shapes.CausalPath,
        query_model=shapes.CausalPathQuery,
    ),
    Op(
        "GET",
        "/v1/episodes/costs",
        "episode_costs",
        "LLM spend of the episode engine",
        shapes.Costs,
    ),
    Op(
        "POST",
        "/v1/episodes/search",
        "episodes_search",
        "Episodes matching a query, with time and status filters (recent ones boosted)",
        shapes.EpisodeSearch,
        body=shapes.EpisodesSearchRequest,
    ),
    Op(
        "POST",
        "/v1/episodes/replay",
        "episodes_replay",
        "The episodes about a topic, oldest first, as JSON and as text",
        shapes.Replay,
        body=shapes.EpisodesReplayRequest,
    ),
    Op(
        "POST",
        "/v1/episodes/start",
        "episode_start",
        "Start an empty episode that the session's next memories join when they fit",
        shapes.EpisodeStartResult,
        body=shapes.EpisodeStartRequest,
    ),
    Op(
        "GET",
        "/v1/episodes/current",
        "episode_current",
        "The episode a session declared with /v1/episodes/start",
        shapes.EpisodeCurrent,
        query_model=shapes.EpisodeCurrentQuery,
    ),
    Op(
        "GET",
        "/v1/context",
        "context",
        "What to read before starting: active episodes, recent failures, relevant lessons",
        shapes.Context,
        query_model=shapes.ContextQuery,
    ),
    Op(
        "GET",
        "/v1/patterns",
        "patterns",
        "Patterns and anti-patterns across closed episodes, with their evidence",
        shapes.Patterns,
        query_model=shapes.PatternsQuery,
    ),
    Op(
        "GET",
        "/v1/episodes/{episode_id}",
        "episode_get",
        "One episode (and its timeline)",
        shapes.EpisodeGetResult,
        query_model=shapes.EpisodeGetQuery,
    ),
    Op(
        "GET",
        "/v1/episodes/{episode_id}/decisions",
        "episode_decisions",
        "The episode's decisions in time order",
        shapes.EpisodeDecisions,
    ),
    Op(
        "GET",
        "/v1/episodes/{episode_id}/chain",
        "episode_chain",
        "The chain of episodes this one belongs to (continues / continued by), root first",
        shapes.EpisodeChain,
    ),
    Op(
        "POST",
        "/v1/episodes",
        "episode_create",
        "Create an episode from memories",
        shapes.EpisodeCreateResult,
        body=shapes.EpisodeCreateRequest,
    ),
    Op(
        "POST",
        "/v1/episodes/{episode_id}/memories",
        "episode_add",
        "Add a memory to an episode",
        shapes.EpisodeAddResult,
        body=shapes.EpisodeMemoryRequest,
    ),
    Op(
        "DELETE",
        "/v1/episodes/{episode_id}/memories/{memory_id}",
        "episode_remove",
        "Remove a memory from an episode",
        shapes.Success,
    ),
    Op(
        "POST",
        "/v1/episodes/{episode_id}/close",
        "episode_close",
        "Close an episode",
        shapes.Success,
    ),
    Op(
        "POST",
        "/v1/episodes/{episode_id}/regenerate",
        "episode_regenerate",
        "Queue a full summary regeneration",
        shapes.Success,
    ),
    Op(
        "PATCH",
        "/v1/episodes/{episode_id}",
        "episode_update",
        "Rename, close or reopen an episode, set metadata or structured fields (the episode after)",
        shapes.EpisodeGetResult,
        body=shapes.EpisodeUpdateRequest,
    ),
    Op(
        "POST",
        "/v1/episodes/{episode_id}/merge",
        "episode_merge",
        "Merge another episode with this one (the larger keeps its id)",
        shapes.EpisodeMergeResult,
        body=shapes.EpisodeMergeRequest,
    ),
    Op(
        "POST",
        "/v1/episodes/{episode_id}/split",
        "episode_split",
        "Move some members into a new episode",
        shapes.EpisodeSplitResult,
        body=shapes.EpisodeSplitRequest,
    ),
    Op(
        "DELETE",
        "/v1/episodes/{episode_id}",
        "episode_delete",
        "Delete an episode (its memories stay)",
        shapes.Success,
    ),
]

OPERATIONS: dict[str, Op] = {op.call: op for op in ROUTES}
CONFLICTS = {
    "episode_split": "A memory is not a member of the episode, or the split would empty it",
    "episode_create": "The memories belong to several projects",
    "episode_add": "The memory belongs to another project than the episode",
    "episode_merge": "The episodes belong to different projects",
}
"""The routes that answer 409, and why."""
PUBLIC_PATHS = frozenset(op.path for op in ROUTES if not op.auth)


# -- the OpenAPI document -------------------------------------------------------------------------


Mode = Literal["validation", "serialization"]


def _models() -> list[tuple[type[BaseModel], Mode]]:
    """Every model the document names: responses as answered, request bodies as accepted."""
    found: list[tuple[type[BaseModel], Mode]] = [(shapes.Error, "serialization")]
    for op in ROUTES:
        found.append((op.response, "serialization"))
        if op.body is not None:
            found.append((op.body, "validation"))
    return list(dict.fromkeys(found))


def components() -> tuple[dict[type[BaseModel], dict[str, Any]], dict[str, Any]]:
    """The ``$ref`` of each model and the JSON schemas of all of them, keyed by name."""
    refs, schema = models_json_schema(_models(), ref_template=REF_TEMPLATE)
    by_model = {model: ref for (model, _), ref in refs.items() if issubclass(model, BaseModel)}
    return by_model, dict(sorted(schema["$defs"].items()))


def _responses(op: Op, refs: dict[type[BaseModel], dict[str, Any]]) -> dict[str, Any]:
    error = {"content": {"application/json": {"schema": refs[shapes.Error]}}}
    codes = {"400": "Malformed request, path id or query parameter"}
    if op.auth:
        codes["401"] = "Missing or wrong bearer token (only once a token exists)"
    codes["404"] = "Unknown id or route"
    if op.body is not None:
        codes["413"] = "Body or a text field too large"
        codes["422"] = "A body field has the wrong type, is missing, unknown or out of range"
    if op.call in CONFLICTS:
        codes["409"] = CONFLICTS[op.call]
    if op.call == "remember_batch":
        codes["429"] = "Two batches are being stored already (Retry-After header)"
    if op.tag in ("episodes", "entities", "causes"):
        codes["501"] = "Episode feature not enabled"
    if op.call in ("recall", "memories_list"):
        codes["501"] = "episode_id is given and the episode feature is not enabled"
    codes["503"] = "Store or dependency unavailable"
    if op.call in ("remember", "remember_batch", "correct", "ingest_conversation"):
        codes["507"] = "The disk is nearly full (storage.min_free_mb): nothing was stored"
    out: dict[str, Any] = {
        "200": {"description": "OK", "content": {"application/json": {"schema": refs[op.response]}}}
    }
    out.update({code: {"description": text, **error} for code, text in codes.items()})
    return out


def _operation(op: Op, refs: dict[type[BaseModel], dict[str, Any]]) -> dict[str, Any]:
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
        "responses": _responses(op, refs),
    }
    if params:
        data["parameters"] = params
    if op.body is not None:
        data["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": refs[op.body]}},
        }
    data["security"] = [{"bearer": []}] if op.auth else []
    return data


@functools.cache
def openapi_document(version: str) -> dict[str, Any]:
    """The OpenAPI 3.1 description of every route in :data:`ROUTES`, built once per process,
    when first asked for (the routes never change; building it takes a tenth of a second of
    CPU, which every app and daemon paid at its creation) and so shared: read it, never
    change it."""
    refs, schemas = components()
    paths: dict[str, dict[str, Any]] = {}
    for op in ROUTES:
        paths.setdefault(op.path, {})[op.method.lower()] = _operation(op, refs)
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
            "schemas": schemas,
            "securitySchemes": {
                "bearer": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "tribalmemory token show --reveal",
                }
            },
        },
    }
