"""The MCP tools: one typed function per tool, each calling one TribalAPI method.

Each parameter's JSON schema (type, enum, range, default, description) is the one of the same
field of a request model in :mod:`tribalmemory.shapes`, and each tool's ``output_schema`` is its
response model there. pydantic does not enforce the parameter schemas: every value reaches
:class:`~tribalmemory.api.TribalAPI` unchanged, which validates it with the same messages as
the HTTP API. An argument a tool does not declare is refused (:class:`ToolServer`).

To add a tool: add one decorated function to :func:`register_tools` whose parameters are
``Annotated[<type>, RAW, arg(<Request model>, "<field>")]``, whose return annotation is its
response model, and which returns ``await call("<api method>", ...)``. A tool given its request
model (``@tool(name, annotations, Model)``) that ends in ``**passed`` takes every other field of
the model as well, advertised with its schema and passed on unchanged (:func:`with_fields`): a
field added to the model reaches the tool without editing it.
"""

import inspect
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Annotated, Any

from mcp.server import MCPServer
from mcp.server.mcpserver.context import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.utilities.context_injection import find_context_parameter
from mcp_types import CLIENT_INFO_META_KEY, CallToolResult, InputRequiredResult, ToolAnnotations
from pydantic import Field, WrapValidator

from .. import shapes
from .. import validation as check
from ..errors import InvalidInput, TribalError

log = logging.getLogger("tribalmemory.mcp")

ApiProvider = Callable[[], Any]
"""Returns the object whose methods the tools call (TribalAPI or DaemonClient); may be async."""

# -- error text -----------------------------------------------------------------------------

HINTS = {
    "invalid_input": "Correct that argument and call the tool again.",
    "bad_query": "Correct that argument and call the tool again.",
    "bad_name": "Correct that argument and call the tool again.",
    "not_found": "Check the id: tribal_recall returns memory ids, tribal_episodes_list "
    "returns episode ids.",
    "conflict": "Get the episode again (tribal_episode_get) and retry with what it lists now.",
    "payload_too_large": "Shorten the text.",
    "feature_disabled": "This feature is turned off in the Tribal Memory configuration; "
    "tell the user.",
    "unavailable": "The memory server is busy or not reachable: wait a moment and retry; "
    "if it keeps failing, tell the user the Tribal Memory daemon is not running.",
    "unauthorized": "The Tribal Memory daemon wants an API token: tell the user to set "
    "TRIBAL_MEMORY_TOKEN for this MCP server (tribalmemory token generate).",
    "internal": "The memory daemon failed on this request (details are in its log). Retry "
    "once; if it fails again, tell the user.",
}
DEFAULT_HINT = "Check the arguments and call the tool again."
INTERNAL_ERROR = (
    "Tribal Memory hit an internal error (details are in the server log). "
    "Retry once; if it fails again, tell the user."
)


def error_text(exc: TribalError) -> str:
    """What the agent reads: the API's message plus what to do about it."""
    hint = exc.detail if isinstance(exc.detail, str) and exc.detail.strip() else None
    hint = hint or HINTS.get(exc.code, DEFAULT_HINT)
    return f"{exc.message}\nWhat to do: {hint}"


class ApiCaller:
    """Calls one API method; turns every failure into a :class:`ToolError` (``is_error``)."""

    def __init__(
        self, provider: ApiProvider, on_unavailable: Callable[[], None] | None = None
    ) -> None:
        self.provider = provider
        self.on_unavailable = on_unavailable

    async def __call__(self, method: str, **arguments: Any) -> dict[str, Any]:
        try:
            api = await _resolve(self.provider())
            result = await _resolve(getattr(api, method)(**arguments))
        except TribalError as exc:
            if exc.code == "unavailable" and self.on_unavailable is not None:
                self.on_unavailable()
            raise ToolError(error_text(exc)) from None
        except Exception as exc:
            log.exception("MCP tool call %s failed", method)
            raise ToolError(INTERNAL_ERROR) from exc
        if not isinstance(result, dict):
            log.error("API method %s returned %s, not a dict", method, type(result).__name__)
            raise ToolError(INTERNAL_ERROR)
        return result


async def _resolve(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


# -- the server ----------------------------------------------------------------------------


class ToolServer(MCPServer):
    """An MCPServer whose tools refuse arguments they do not declare, and missing ones.

    The SDK would drop an unknown argument silently (a misspelled ``limt`` would fall back to
    the default limit); here it is a tool error naming the allowed arguments.
    """

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.tool_arguments: dict[str, tuple[list[str], list[str]]] = {}

    def add_checked_tool(self, fn: Callable[..., Any], name: str, **options: Any) -> None:
        """Add ``fn`` as tool ``name``, remembering its declared and required arguments."""
        context = find_context_parameter(fn)
        params = [p for p in inspect.signature(fn).parameters.values() if p.name != context]
        required = [p.name for p in params if p.default is inspect.Parameter.empty]
        self.tool_arguments[name] = ([p.name for p in params], required)
        self.add_tool(fn, name=name, **options)

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        declared = self.tool_arguments.get(name)
        if declared is not None:
            try:
                check.names(arguments, declared[0], declared[1], noun="argument")
            except InvalidInput as exc:
                raise ToolError(error_text(exc)) from None
        return await super().call_tool(name, arguments, context)


# -- the client session ---------------------------------------------------------------

SESSION_HEADER = "mcp-session-id"
#: Longest client name and version kept in a client's session name (a session name has at most
#: shapes.MAX_SESSION_CHARS characters).
CLIENT_PART_CHARS = 64


def session_key(ctx: Context[Any, Any] | None, given: str, fallback: str | None) -> str | None:
    """The name of the agent's session: the one the call gives, else the Streamable HTTP
    session id, else ``fallback`` (one name per server: a ``tribalmemory mcp`` process serves
    one agent), else the client's own name (:func:`client_session`). None only outside a
    request."""
    if given:
        return given
    try:
        headers = ctx.headers if ctx is not None else None
    except (LookupError, ValueError, AttributeError):
        headers = None
    header = headers.get(SESSION_HEADER) if headers else None
    if header:
        return f"mcp-{header}"
    return fallback or client_session(ctx)


def client_session(ctx: Context[Any, Any] | None) -> str | None:
    """The session of a client whose transport has none: ``mcp-client:<name>/<version>@<host>``
    from the clientInfo it sends and its address. Over HTTP, protocol 2026-07-28 has no session
    id (every request stands alone), nor has a client that keeps no session: their calls are one
    session per client program and machine. None outside a request."""
    found = client_info(ctx)
    if found is None:
        return None
    name, version, host = found
    return f"mcp-client:{name or 'unnamed'}/{version}@{host}"


def client_name(ctx: Context[Any, Any] | None) -> str | None:
    """The name the MCP client gives itself (its clientInfo ``name``, e.g. ``claude-code``),
    printable, at most :data:`CLIENT_PART_CHARS` characters: who stores a memory when the
    server was given no name. None when it sends none, or outside a request."""
    found = client_info(ctx)
    return (found[0] or None) if found is not None else None


def client_info(ctx: Context[Any, Any] | None) -> tuple[str, str, str] | None:
    """The client's name and version (its clientInfo: in each request's ``_meta`` under
    protocol 2026-07-28, else from the initialize handshake) and its host (``local`` over
    stdio), printable and cut to :data:`CLIENT_PART_CHARS`; "" for what it does not send.
    None outside a request."""
    try:
        request = ctx.request_context if ctx is not None else None
    except (LookupError, ValueError, AttributeError):
        request = None
    if request is None:
        return None
    meta = request.meta if isinstance(request.meta, Mapping) else {}
    info: Any = meta.get(CLIENT_INFO_META_KEY)
    if not isinstance(info, Mapping):  # the handshake's clientInfo
        found = getattr(getattr(request.session, "client_params", None), "client_info", None)
        info = {"name": getattr(found, "name", None), "version": getattr(found, "version", None)}
    peer = getattr(getattr(request.request, "client", None), "host", None)
    parts = [info.get("name") or "", info.get("version") or "", peer or "local"]
    name, version, host = (_printable(str(part))[:CLIENT_PART_CHARS] for part in parts)
    return name, version, host


def _printable(text: str) -> str:
    return "".join(c for c in text if c.isprintable()).strip()


# -- parameters -----------------------------------------------------------------------------


def _unchecked(value: Any, _handler: Any) -> Any:
    """Pass the raw value on: TribalAPI validates it (one set of messages for every interface)."""
    return value


RAW = WrapValidator(_unchecked)


def arg(request: type[shapes.Request], name: str, description: str | None = None) -> Any:
    """A parameter advertised with the schema of field ``name`` of ``request`` (not enforced).

    ``description`` replaces the field's own when agents need tool-specific wording.
    """
    schema = request.argument_schema(name)
    if description is not None:
        schema["description"] = description

    def advertise(generated: dict[str, Any]) -> None:
        generated.clear()
        generated.update(schema)

    return Field(json_schema_extra=advertise)


SERVER_FILLED = frozenset({"source_instance"})
"""Fields no tool offers: the server fills them (who stores: ``--source-instance``, else the
client's name)."""

_PYTHON_TYPES: dict[str, Any] = {
    "string": str,
    "integer": int,
    "number": float,
    "boolean": bool,
    "array": list[Any],
    "object": dict[str, Any],
}


def with_fields(fn: Callable[..., Any], request: type[shapes.Request]) -> inspect.Signature:
    """``fn``'s signature with its ``**passed`` replaced by the fields of ``request`` it does
    not name (but :data:`SERVER_FILLED`), in the model's order, all keyword-only: each
    advertised with the field's schema (:func:`arg`) and passed on raw, optional ones
    defaulting to None. A required text field is plain ``str`` (never JSON-decoded)."""
    own = inspect.signature(fn)
    named = {
        name: p.replace(kind=inspect.Parameter.KEYWORD_ONLY)
        for name, p in own.parameters.items()
        if p.kind is not inspect.Parameter.VAR_KEYWORD
    }
    required = set(request.required_names())
    params = [p for name, p in named.items() if name not in request.model_fields]
    for name in request.model_fields:
        if name in named:
            params.append(named[name])
            continue
        if name in SERVER_FILLED:
            continue
        kind = _PYTHON_TYPES.get(str(request.argument_schema(name).get("type")), object)
        annotation: Any = Annotated[kind, RAW, arg(request, name)]
        default: Any = inspect.Parameter.empty
        if name not in required:
            annotation, default = Annotated[kind | None, RAW, arg(request, name)], None
        params.append(
            inspect.Parameter(
                name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation
            )
        )
    return own.replace(parameters=params)


# Text parameters are annotated plain ``str`` (with "" for "not given"): the SDK JSON-decodes
# string values only for parameters not annotated ``str`` (which helps clients that send
# lists as JSON text), and text such as content must stay text even when it is JSON.
MemoryId = Annotated[
    str,
    RAW,
    arg(
        shapes.ForgetRequest,
        "memory_id",
        "Id of a memory (a UUID), as returned by tribal_remember or tribal_recall.",
    ),
]
EpisodeId = Annotated[
    str,
    RAW,
    arg(
        shapes.EpisodeRef,
        "episode_id",
        "Id of an episode, like 'ep-1a2b3c4d5e6f', as returned by tribal_episodes_list or "
        "tribal_episode_create.",
    ),
]

SESSION_DOC = (
    "Leave it out: your MCP connection names the session. Give one only when your client "
    "reconnects for every call (then use the same name with tribal_episode_start and "
    "tribal_remember)."
)

PROJECT_DOC = (
    "The project this belongs to (a short name: letters, digits, '-', '_', '.'). Leave it out: "
    "the server picks the project of your working directory (stdio) or 'default'. Give one "
    "only to work on another project ('*', all projects, is only for reads)."
)
PROJECT_READ_DOC = (
    "Only this project's memories (and the shared ones) or episodes; '*': every project's "
    "(tribal_projects lists them). Leave it out: the server picks the project of your working "
    "directory (stdio) or 'default'."
)

# -- tools ----------------------------------------------------------------------------------

READ = ToolAnnotations(read_only_hint=True, open_world_hint=False)
WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)
DELETE = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
)

Caller = Callable[..., Awaitable[Any]]


def register_tools(
    server: ToolServer,
    call: Caller,
    session: str | None = None,
    project: str | None = None,
    source_instance: str | None = None,
    read_project: str | None = None,
) -> None:
    """Add every Tribal Memory tool to ``server``; ``call(method, **args)`` runs the API.
    ``session`` names the agent's session when the transport has no session id; ``project``
    is the project of calls that give none (stdio: the agent's working directory; None: the
    API's default); ``source_instance`` names who stores the memories (``tribalmemory mcp
    --source-instance``; None: the client's clientInfo name, else the API's default);
    ``read_project``, when given, the project of reads that give none (``*``: every
    project)."""

    def tool(
        name: str, annotations: ToolAnnotations, request: type[shapes.Request] | None = None
    ) -> Callable[[Any], Any]:
        def add(fn: Any) -> Any:
            if request is not None:
                fn.__signature__ = with_fields(fn, request)
            server.add_checked_tool(
                fn,
                name,
                description=inspect.cleandoc(fn.__doc__ or ""),
                annotations=annotations,
                structured_output=True,
            )
            return fn

        return add

    remember_arg = shapes.RememberRequest
    default_session = session
    default_project = project

    default_reads = read_project or project

    def scope(given: str) -> str | None:
        """The call's project, else the server's."""
        return given if given else default_project

    def read_scope(given: str) -> str | None:
        """A read's project: the call's, else the server's for reads."""
        return given if given else default_reads

    def author(ctx: Context[Any, Any] | None) -> str | None:
        """Who stores a memory: the server's name for its agent, else the client's own
        name (clientInfo), else None (the API's memory.default_source_instance)."""
        return source_instance or client_name(ctx)

    recall_arg = shapes.RecallRequest
    search_arg = shapes.EpisodesSearchRequest

    @tool("tribal_remember", WRITE, remember_arg)
    async def remember(
        content: Annotated[str, RAW, arg(remember_arg, "content")],
        context: Annotated[str, RAW, arg(remember_arg, "context")] = "",
        session: Annotated[str, RAW, arg(remember_arg, "session", SESSION_DOC)] = "",
        project: Annotated[str, RAW, arg(remember_arg, "project", PROJECT_DOC)] = "",
        ctx: Context[Any, Any] | None = None,
        **passed: Any,
    ) -> shapes.RememberResult:
        """Save one durable piece of knowledge to the memory shared by every agent of the team.

        Use it when you learn something a teammate or a future session should know: a decision
        and its reason, the fix for a tricky error, a convention, a gotcha, a user preference.
        Store one self-contained fact per call. Never store secrets (passwords, tokens, keys).

        If a near-identical memory states the same fact, nothing is stored: success is false,
        duplicate_of names the existing memory and error explains (skip_dedup stores it
        anyway). One that changes a number, version, date, name or negation is stored as an
        update. To fix a wrong memory, use tribal_correct. episode_id is the work thread (episode)
        the memory joined, when episodes are enabled (after tribal_episode_start, the one you
        started, when the memory fits it).
        """
        return await call(
            "remember",
            content=content,
            source_instance=author(ctx),
            context=context,
            session=session_key(ctx, session, default_session),
            project=scope(project),
            **passed,
        )

    @tool("tribal_recall", READ, recall_arg)
    async def recall(
        query: Annotated[str, RAW, arg(recall_arg, "query")],
        project: Annotated[str, RAW, arg(recall_arg, "project", PROJECT_READ_DOC)] = "",
        **passed: Any,
    ) -> shapes.RecallResult:
        """Search the team's shared memory: what other agents and earlier sessions learned.

        Use it before starting a task, before making a decision and when you hit an error,
        to find what the team already knows (decisions, fixes, conventions, gotchas) instead
        of rediscovering it. Results come best first (semantic + keyword search); each has
        the memory_id, a similarity_score from 0 to 1 and the memory itself (content, tags,
        source_type, created_at, ...). Memories a correction superseded are left out unless
        include_superseded is true.
        """
        return await call("recall", query=query, project=read_scope(project), **passed)

    @tool("tribal_forget", DELETE)
    async def forget(memory_id: MemoryId) -> shapes.ForgetResult:
        """Delete one memory for good, e.g. one that is wrong, obsolete or holds a secret.

        To fix a memory that is wrong or outdated, prefer tribal_correct so the team keeps
        the history.
        """
        return await call("forget", memory_id=memory_id)

    @tool("tribal_used", WRITE)
    async def used(memory_id: MemoryId) -> shapes.UsedResult:
        """Tell the team's memory that a memory tribal_recall gave you actually helped.

        Call it once for each recalled memory you relied on (not for the ones you only
        read). Used memories stay fresh longer: their retrievability decays more slowly,
        and so does their episode's. Returns the memory's access_count and retrievability.
        """
        return await call("memory_used", memory_id=memory_id)

    correct_arg = shapes.CorrectRequest

    @tool("tribal_correct", WRITE, correct_arg)
    async def correct(
        memory_id: MemoryId,
        content: Annotated[str, RAW, arg(correct_arg, "content")],
        ctx: Context[Any, Any] | None = None,
        **passed: Any,
    ) -> shapes.RememberResult:
        """Correct a memory that is wrong or outdated: store the right knowledge in its place.

        The correction is stored as a CORRECTION memory that supersedes memory_id; the old
        memory is kept as history but left out of recall (unless include_superseded) and of
        episode summaries. Give the corrected knowledge in full, self-contained.
        """
        return await call(
            "correct",
            memory_id=memory_id,
            content=content,
            source_instance=author(ctx),
            **passed,
        )

    @tool("tribal_stats", READ)
    async def stats() -> shapes.Stats:
        """Counts of stored memories (total and by source_type) and the embedding model used."""
        return await call("stats")

    list_arg = shapes.EpisodesListQuery

    @tool("tribal_episodes_list", READ, list_arg)
    async def episodes_list(
        project: Annotated[str, RAW, arg(list_arg, "project", PROJECT_READ_DOC)] = "",
        **passed: Any,
    ) -> shapes.EpisodeList:
        """List episodes: threads of related memories (one bug hunt, one feature, one migration).

        Each episode has a title, a progressive summary of what happened, its task, outcome,
        status and memory_count. Filter by outcome (e.g. failure), task text, participant,
        tool, entity, tag or time. Open one with tribal_episode_get.
        """
        return await call("episodes_list", project=read_scope(project), **passed)

    @tool("tribal_episode_get", READ)
    async def episode_get(
        episode_id: EpisodeId,
        include_timeline: Annotated[
            bool | None, RAW, arg(shapes.EpisodeGetQuery, "include_timeline")
        ] = None,
    ) -> shapes.EpisodeGetResult:
        """One episode in full: title, summary, status, dates, metadata and its memory_ids.

        Use it to catch up on a thread of work before continuing it.
        """
        return await call("episode_get", episode_id=episode_id, include_timeline=include_timeline)

    @tool("tribal_context", READ)
    async def context(
        query: Annotated[str, RAW, arg(shapes.ContextQuery, "query")] = "",
        budget_tokens: Annotated[int | None, RAW, arg(shapes.ContextQuery, "budget_tokens")] = None,
        project: Annotated[str, RAW, arg(shapes.ContextQuery, "project", PROJECT_READ_DOC)] = "",
    ) -> shapes.Context:
        """Read this at the start of a session: the team's active threads of work (with their
        last decision), recently failed episodes with their lessons, and the lessons most
        relevant to what you are about to do (query), within budget_tokens. `text` is the
        readable form; the lists hold the same items."""
        return await call(
            "context", query=query or None, budget_tokens=budget_tokens, project=read_scope(project)
        )

    @tool("tribal_patterns", READ)
    async def patterns(
        kind: Annotated[str | None, RAW, arg(shapes.PatternsQuery, "kind")] = None,
        query: Annotated[str, RAW, arg(shapes.PatternsQuery, "query")] = "",
        limit: Annotated[int | None, RAW, arg(shapes.PatternsQuery, "limit")] = None,
        project: Annotated[str, RAW, arg(shapes.PatternsQuery, "project", PROJECT_READ_DOC)] = "",
    ) -> shapes.Patterns:
        """What the team's closed episodes teach: recurring lessons and decisions grouped into
        patterns (what mostly worked) and anti-patterns (what mostly failed), each with its
        trigger, action, success rate and the episodes it rests on. Check it before choosing
        an approach."""
        return await call(
            "patterns", kind=kind, query=query or None, limit=limit, project=read_scope(project)
        )

    @tool("tribal_episode_decisions", READ)
    async def episode_decisions(episode_id: EpisodeId) -> shapes.EpisodeDecisions:
        """The decisions of an episode in time order: context, options, what was chosen, why,
        how it turned out and the memories it rests on. Read it before revisiting a choice."""
        return await call("episode_decisions", episode_id=episode_id)

    @tool("tribal_episode_create", WRITE, shapes.EpisodeCreateRequest)
    async def episode_create(
        title: Annotated[str, RAW, arg(shapes.EpisodeCreateRequest, "title")],
        memory_ids: Annotated[list[str], RAW, arg(shapes.EpisodeCreateRequest, "memory_ids")],
        **passed: Any,
    ) -> shapes.EpisodeCreateResult:
        """Group existing memories into a new episode by hand.

        Episodes are normally detected automatically when memories are stored; use this
        when you know several memories belong to one piece of work.
        """
        return await call("episode_create", title=title, memory_ids=memory_ids, **passed)

    @tool("tribal_episode_add", WRITE)
    async def episode_add(episode_id: EpisodeId, memory_id: MemoryId) -> shapes.Success:
        """Add an existing memory to an episode (e.g. one that was filed in the wrong thread)."""
        return await call("episode_add", episode_id=episode_id, memory_id=memory_id)

    @tool("tribal_episode_remove", WRITE)
    async def episode_remove(episode_id: EpisodeId, memory_id: MemoryId) -> shapes.Success:
        """Take a memory out of an episode; the memory itself is kept."""
        return await call("episode_remove", episode_id=episode_id, memory_id=memory_id)

    @tool("tribal_episode_close", WRITE)
    async def episode_close(episode_id: EpisodeId) -> shapes.Success:
        """Mark an episode as finished, so new memories stop joining it."""
        return await call("episode_close", episode_id=episode_id)

    @tool("tribal_episode_regenerate", WRITE)
    async def episode_regenerate(episode_id: EpisodeId) -> shapes.Success:
        """Rebuild an episode's summary from all of its memories (one LLM call, when configured)."""
        return await call("episode_regenerate", episode_id=episode_id)

    @tool("tribal_episode_start", WRITE)
    async def episode_start(
        topic: Annotated[str, RAW, arg(shapes.EpisodeStartRequest, "topic")],
        session: Annotated[str, RAW, arg(shapes.EpisodeStartRequest, "session", SESSION_DOC)] = "",
        project: Annotated[str, RAW, arg(shapes.EpisodeStartRequest, "project", PROJECT_DOC)] = "",
        ctx: Context[Any, Any] | None = None,
    ) -> shapes.EpisodeStartResult:
        """Declare the thread of work you are starting (e.g. "Fix the multi-tab logout").

        Creates an empty episode titled with the topic; the memories you store next in this
        session join it when they fit the topic (unrelated ones are grouped as usual).
        Starting another topic replaces it for the memories that follow.
        """
        return await call(
            "episode_start",
            topic=topic,
            session=session_key(ctx, session, default_session),
            project=scope(project),
        )

    @tool("tribal_episode_current", READ)
    async def episode_current(
        session: Annotated[str, RAW, arg(shapes.EpisodeCurrentQuery, "session", SESSION_DOC)] = "",
        ctx: Context[Any, Any] | None = None,
    ) -> shapes.EpisodeCurrent:
        """The episode you declared with tribal_episode_start in this session (null if none)."""
        return await call("episode_current", session=session_key(ctx, session, default_session))

    @tool("tribal_episode_update", WRITE, shapes.EpisodeUpdateRequest)
    async def episode_update(episode_id: EpisodeId, **passed: Any) -> shapes.EpisodeGetResult:
        """Rename an episode, close or reopen it, set metadata fields, or correct its
        structured record (task, outcome, outcome_reason, decisions, events, lessons; each
        field you send replaces the stored one; memory_ids must be members).

        Changes made here are kept: later summaries do not overwrite the title or the fields
        you set. Returns the episode as tribal_episode_get does, with its history.
        """
        return await call("episode_update", episode_id=episode_id, **passed)

    @tool("tribal_episode_merge", WRITE)
    async def episode_merge(
        episode_id: EpisodeId,
        other_id: Annotated[str, RAW, arg(shapes.EpisodeMergeRequest, "other_id")],
    ) -> shapes.EpisodeMergeResult:
        """Merge two episodes that are really one thread of work.

        The episode with more memories keeps its id; the other one is gone afterwards.
        """
        return await call("episode_merge", episode_id=episode_id, other_id=other_id)

    @tool("tribal_episode_split", WRITE)
    async def episode_split(
        episode_id: EpisodeId,
        memory_ids: Annotated[list[str], RAW, arg(shapes.EpisodeSplitRequest, "memory_ids")],
        title: Annotated[str | None, RAW, arg(shapes.EpisodeSplitRequest, "title")] = None,
    ) -> shapes.EpisodeSplitResult:
        """Move some memories of an episode into a new episode (two threads were mixed up).

        memory_ids must be members of the episode, and not all of them.
        """
        return await call(
            "episode_split", episode_id=episode_id, memory_ids=memory_ids, title=title
        )

    @tool("tribal_episode_delete", DELETE)
    async def episode_delete(episode_id: EpisodeId) -> shapes.Success:
        """Delete an episode and its summary; its memories are kept, in no episode."""
        return await call("episode_delete", episode_id=episode_id)

    @tool("tribal_episode_chain", READ)
    async def episode_chain(episode_id: EpisodeId) -> shapes.EpisodeChain:
        """The chain of episodes this one belongs to, root first.

        A follow-up thread (e.g. the iOS fix after the web fix of the same bug) is linked to
        the episode it continues. Use it to read a multi-day story from its beginning.
        """
        return await call("episode_chain", episode_id=episode_id)

    @tool("tribal_episode_replay", READ)
    async def episode_replay(
        topic: Annotated[str, RAW, arg(shapes.EpisodesReplayRequest, "topic")],
        limit: Annotated[int | None, RAW, arg(shapes.EpisodesReplayRequest, "limit")] = None,
        project: Annotated[
            str, RAW, arg(shapes.EpisodesReplayRequest, "project", PROJECT_READ_DOC)
        ] = "",
    ) -> shapes.Replay:
        """Replay the history of a topic: the relevant episodes in chronological order.

        Use it for questions like "what happened the last times we touched X?". Each episode
        comes with its date range, title, a marker when it continues an earlier episode, a
        short summary, tags and outcome; `text` is the same as a readable story.
        """
        return await call("episodes_replay", topic=topic, limit=limit, project=read_scope(project))

    @tool("tribal_episodes_search", READ, search_arg)
    async def episodes_search(
        query: Annotated[str, RAW, arg(search_arg, "query")],
        project: Annotated[str, RAW, arg(search_arg, "project", PROJECT_READ_DOC)] = "",
        **passed: Any,
    ) -> shapes.EpisodeSearch:
        """Search episodes (threads of work) by meaning and keywords, optionally in a time range.

        Recent episodes get a small boost. Summaries in results are cut to 500 characters;
        open one with tribal_episode_get for the whole story.
        """
        return await call("episodes_search", query=query, project=read_scope(project), **passed)

    @tool("tribal_projects", READ)
    async def projects() -> shapes.ProjectList:
        """The projects memories are kept in (one per repository or folder the agents work
        in), with their memory and episode counts and last activity, most recent first."""
        return await call("projects")
