"""The MCP tools: one typed function per tool, each calling one TribalAPI method.

Parameters are declared for the JSON schema agents read (types, enums, ranges, descriptions),
but pydantic does not enforce them: every value reaches :class:`~tribalmemory.api.TribalAPI`
unchanged, which validates it with the same messages as the HTTP API. Results are the API's
dicts; their TypedDicts below become each tool's ``output_schema`` (extra keys allowed).

To add a tool: declare its result TypedDict and add one decorated function to
:func:`register_tools` that returns ``await call("<api method>", ...)``.
"""

import inspect
import logging
from collections.abc import Awaitable, Callable
from typing import Annotated, Any

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations
from pydantic import ConfigDict, Field, WrapValidator, with_config
from typing_extensions import TypedDict

from ..api import EPISODE_STATUSES
from ..errors import TribalError
from ..models import SourceType
from ..service.memory_service import MAX_RECALL
from ..validation import MAX_CONTEXT_CHARS, MAX_TAGS

log = logging.getLogger("tribalmemory.mcp")

ApiProvider = Callable[[], Any]
"""Returns the object whose methods the tools call (TribalAPI or DaemonClient); may be async."""

# -- error text -----------------------------------------------------------------------------

HINTS = {
    "invalid_input": "Correct that argument and call the tool again.",
    "bad_query": "Correct that argument and call the tool again.",
    "not_found": "Check the id: tribal_recall returns memory ids, tribal_episodes_list "
    "returns episode ids.",
    "payload_too_large": "Shorten the text, or split it into several smaller memories.",
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


# -- parameters -----------------------------------------------------------------------------


def _unchecked(value: Any, _handler: Any) -> Any:
    """Pass the raw value on: TribalAPI validates it (one set of messages for every interface)."""
    return value


RAW = WrapValidator(_unchecked)


def arg(description: str, **schema: Any) -> Any:
    """Field metadata: a description and JSON-schema keywords, advertised but not enforced here."""

    def finish(generated: dict[str, Any]) -> None:
        # "X | None" → plain X: an optional parameter is one the agent leaves out.
        kept = [b for b in generated.get("anyOf", []) if b != {"type": "null"}]
        if len(kept) == 1:
            del generated["anyOf"]
            generated.update(kept[0])
        if generated.get("default", 0) in (None, ""):
            del generated["default"]
        generated.update(schema)

    return Field(description=description, json_schema_extra=finish)


# A required or defaulted ``str`` stays a string: the SDK JSON-decodes string values only for
# parameters not annotated ``str`` (which helps clients that send lists as JSON text).
MemoryId = Annotated[
    str,
    RAW,
    arg("Id of a memory (a UUID), as returned by tribal_remember or tribal_recall.", format="uuid"),
]
EpisodeId = Annotated[
    str,
    RAW,
    arg(
        "Id of an episode, like 'ep-1a2b3c4d5e6f', as returned by tribal_episodes_list or "
        "tribal_episode_create."
    ),
]
Tags = Annotated[
    list[str] | None,
    RAW,
    arg(f'Optional labels, e.g. ["auth", "deploy"]; at most {MAX_TAGS} tags.', maxItems=MAX_TAGS),
]
WHEN = "an ISO 8601 date or time, e.g. 2025-03-01 or 2025-03-01T09:00:00Z (no zone means UTC)"
After = Annotated[str | None, RAW, arg(f"Only memories created at or after this time: {WHEN}.")]
Before = Annotated[str | None, RAW, arg(f"Only memories created before this time: {WHEN}.")]

SOURCE_TYPES = [t.name for t in SourceType if t is not SourceType.EPISODE_SUMMARY]

# -- results (output schemas) ---------------------------------------------------------------

OPEN = ConfigDict(extra="allow")


@with_config(OPEN)
class RememberResult(TypedDict):
    success: bool
    memory_id: str | None
    duplicate_of: str | None
    episode_id: str | None
    error: str | None


@with_config(OPEN)
class MemoryJson(TypedDict):
    id: str
    content: str
    source_type: str
    source_instance: str
    tags: list[str]
    context: str | None
    created_at: str
    updated_at: str
    supersedes: str | None
    metadata: dict[str, Any]


@with_config(OPEN)
class RecallHit(TypedDict):
    memory_id: str
    similarity_score: float
    memory: MemoryJson


@with_config(OPEN)
class RecallResult(TypedDict):
    results: list[RecallHit]
    query: str
    count: int


@with_config(OPEN)
class ForgetResult(TypedDict):
    success: bool
    memory_id: str


@with_config(OPEN)
class StatsResult(TypedDict):
    total_memories: int
    by_source_type: dict[str, int]
    embedding_model: str


@with_config(OPEN)
class EpisodeListItem(TypedDict):
    id: str
    title: str
    summary: str | None
    status: str
    memory_count: int
    created_at: str
    updated_at: str
    closed_at: str | None


@with_config(OPEN)
class EpisodeListResult(TypedDict):
    episodes: list[EpisodeListItem]
    count: int
    status: str | None


@with_config(OPEN)
class EpisodeDetail(TypedDict):
    id: str
    title: str
    summary: str | None
    summary_memory_id: str | None
    status: str
    memory_count: int
    created_at: str
    updated_at: str
    closed_at: str | None
    metadata: dict[str, Any]


@with_config(OPEN)
class EpisodeGetResult(TypedDict):
    episode: EpisodeDetail
    memory_ids: list[str]


@with_config(OPEN)
class EpisodeCreateResult(TypedDict):
    success: bool
    episode_id: str
    memory_count: int


@with_config(OPEN)
class SuccessResult(TypedDict):
    success: bool


@with_config(OPEN)
class EpisodeChainResult(TypedDict):
    episode_id: str
    root_id: str
    chain: list[EpisodeListItem]
    count: int


@with_config(OPEN)
class ReplayItem(TypedDict):
    id: str
    title: str
    start: str
    end: str
    continues: str | None
    summary: str
    tags: list[str]
    outcome: str | None


@with_config(OPEN)
class ReplayResult(TypedDict):
    topic: str
    episodes: list[ReplayItem]
    count: int
    text: str


@with_config(OPEN)
class EpisodeSearchResult(TypedDict):
    query: str
    episodes: list[EpisodeListItem]
    count: int


# -- tools ----------------------------------------------------------------------------------

READ = ToolAnnotations(read_only_hint=True, open_world_hint=False)
WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)
DELETE = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
)

Caller = Callable[..., Awaitable[Any]]


def register_tools(server: MCPServer, call: Caller) -> None:
    """Add every Tribal Memory tool to ``server``; ``call(method, **args)`` runs the API."""

    def tool(name: str, annotations: ToolAnnotations) -> Callable[[Any], Any]:
        def add(fn: Any) -> Any:
            server.add_tool(
                fn,
                name=name,
                description=inspect.cleandoc(fn.__doc__ or ""),
                annotations=annotations,
                structured_output=True,
            )
            return fn

        return add

    @tool("tribal_remember", WRITE)
    async def remember(
        content: Annotated[
            str,
            RAW,
            arg(
                "The knowledge to store, self-contained: readable later without this conversation. "
                "Name the files, services, commands or errors someone would search for."
            ),
        ],
        source_type: Annotated[
            str | None,
            RAW,
            arg(
                "Where it came from: USER_EXPLICIT (the user told you; the default), AUTO_CAPTURE "
                "(you noticed it yourself), CORRECTION (it corrects earlier knowledge), "
                "CROSS_INSTANCE, LEGACY or UNKNOWN.",
                enum=SOURCE_TYPES,
            ),
        ] = None,
        context: Annotated[
            str,
            RAW,
            arg(
                "Optional short note on where this was learned (task, repository, file), "
                f"up to {MAX_CONTEXT_CHARS} characters."
            ),
        ] = "",
        tags: Tags = None,
        skip_dedup: Annotated[
            bool,
            RAW,
            arg(
                "Store it even when a near-identical memory exists. Use only when the text "
                "really says something new."
            ),
        ] = False,
    ) -> RememberResult:
        """Save one durable piece of knowledge to the memory shared by every agent of the team.

        Use it when you learn something a teammate or a future session should know: a decision
        and its reason, the fix for a tricky error, a convention, a gotcha, a user preference.
        Store one self-contained fact per call. Never store secrets (passwords, tokens, keys).

        If a near-identical memory exists, nothing is stored: success is false, duplicate_of
        names the existing memory and error explains. episode_id is the work thread (episode)
        the memory joined, when episodes are enabled.
        """
        return await call(
            "remember",
            content=content,
            source_type=source_type,
            context=context,
            tags=tags,
            skip_dedup=skip_dedup,
        )

    @tool("tribal_recall", READ)
    async def recall(
        query: Annotated[
            str,
            RAW,
            arg(
                "What you want to know, as a question or keywords, e.g. 'how do we deploy the "
                "billing service' or 'pytest fixture timeout error'."
            ),
        ],
        limit: Annotated[
            int,
            RAW,
            arg(f"Maximum number of results, 1 to {MAX_RECALL}.", minimum=1, maximum=MAX_RECALL),
        ] = 5,
        min_relevance: Annotated[
            float,
            RAW,
            arg(
                "Drop results whose similarity_score is below this (0 to 1). Good matches often "
                "score only 0.3 to 0.6, so keep it low (0 keeps all).",
                minimum=0.0,
                maximum=1.0,
            ),
        ] = 0.0,
        tags: Annotated[
            list[str] | None,
            RAW,
            arg("Only memories carrying at least one of these tags.", maxItems=MAX_TAGS),
        ] = None,
        after: After = None,
        before: Before = None,
    ) -> RecallResult:
        """Search the team's shared memory: what other agents and earlier sessions learned.

        Use it before starting a task, before making a decision and when you hit an error,
        to find what the team already knows (decisions, fixes, conventions, gotchas) instead
        of rediscovering it. Results come best first (semantic + keyword search); each has
        the memory_id, a similarity_score from 0 to 1 and the memory itself (content, tags,
        source_type, created_at, ...).
        """
        return await call(
            "recall",
            query=query,
            limit=limit,
            min_relevance=min_relevance,
            tags=tags,
            after=after,
            before=before,
        )

    @tool("tribal_forget", DELETE)
    async def forget(memory_id: MemoryId) -> ForgetResult:
        """Delete one memory for good, e.g. one that is wrong, obsolete or holds a secret.

        To fix a memory that is only partly wrong, prefer tribal_remember with
        source_type CORRECTION so the team keeps the history.
        """
        return await call("forget", memory_id=memory_id)

    @tool("tribal_stats", READ)
    async def stats() -> StatsResult:
        """Counts of stored memories (total and by source_type) and the embedding model used."""
        return await call("stats")

    @tool("tribal_episodes_list", READ)
    async def episodes_list(
        status: Annotated[
            str | None,
            RAW,
            arg(
                "Only episodes in this state: active (still growing), closed (finished) or "
                "archived (old). Omit for all.",
                enum=list(EPISODE_STATUSES),
            ),
        ] = None,
        limit: Annotated[
            int, RAW, arg("Maximum number of episodes, 1 to 100.", minimum=1, maximum=100)
        ] = 50,
    ) -> EpisodeListResult:
        """List episodes: threads of related memories (one bug hunt, one feature, one migration).

        Each episode has a title, a progressive summary of what happened, its status and its
        memory_count. Use it to see what the team has been working on; open one with
        tribal_episode_get.
        """
        return await call("episodes_list", status=status, limit=limit)

    @tool("tribal_episode_get", READ)
    async def episode_get(
        episode_id: EpisodeId,
        include_timeline: Annotated[
            bool, RAW, arg("Also return the episode's memories in time order.")
        ] = False,
    ) -> EpisodeGetResult:
        """One episode in full: title, summary, status, dates, metadata and its memory_ids.

        Use it to catch up on a thread of work before continuing it.
        """
        return await call("episode_get", episode_id=episode_id, include_timeline=include_timeline)

    @tool("tribal_episode_create", WRITE)
    async def episode_create(
        title: Annotated[
            str, RAW, arg("A short title naming the thread of work, up to 200 characters.")
        ],
        memory_ids: Annotated[
            list[str], RAW, arg("Ids of the memories that belong to it (at least one).", minItems=1)
        ],
    ) -> EpisodeCreateResult:
        """Group existing memories into a new episode by hand.

        Episodes are normally detected automatically when memories are stored; use this
        when you know several memories belong to one piece of work.
        """
        return await call("episode_create", title=title, memory_ids=memory_ids)

    @tool("tribal_episode_add", WRITE)
    async def episode_add(episode_id: EpisodeId, memory_id: MemoryId) -> SuccessResult:
        """Add an existing memory to an episode (e.g. one that was filed in the wrong thread)."""
        return await call("episode_add", episode_id=episode_id, memory_id=memory_id)

    @tool("tribal_episode_remove", WRITE)
    async def episode_remove(episode_id: EpisodeId, memory_id: MemoryId) -> SuccessResult:
        """Take a memory out of an episode; the memory itself is kept."""
        return await call("episode_remove", episode_id=episode_id, memory_id=memory_id)

    @tool("tribal_episode_close", WRITE)
    async def episode_close(episode_id: EpisodeId) -> SuccessResult:
        """Mark an episode as finished, so new memories stop joining it."""
        return await call("episode_close", episode_id=episode_id)

    @tool("tribal_episode_regenerate", WRITE)
    async def episode_regenerate(episode_id: EpisodeId) -> SuccessResult:
        """Rebuild an episode's summary from all of its memories (one LLM call, when configured)."""
        return await call("episode_regenerate", episode_id=episode_id)

    @tool("tribal_episode_chain", READ)
    async def episode_chain(episode_id: EpisodeId) -> EpisodeChainResult:
        """The chain of episodes this one belongs to, root first.

        A follow-up thread (e.g. the iOS fix after the web fix of the same bug) is linked to
        the episode it continues. Use it to read a multi-day story from its beginning.
        """
        return await call("episode_chain", episode_id=episode_id)

    @tool("tribal_episode_replay", READ)
    async def episode_replay(
        topic: Annotated[
            str,
            RAW,
            arg(
                "What happened with…: a subject such as 'refresh token logouts' or 'the Postgres "
                "migration'."
            ),
        ],
        limit: Annotated[
            int, RAW, arg("Maximum number of episodes, 1 to 20.", minimum=1, maximum=20)
        ] = 5,
    ) -> ReplayResult:
        """Replay the history of a topic: the relevant episodes in chronological order.

        Use it for questions like "what happened the last times we touched X?". Each episode
        comes with its date range, title, a marker when it continues an earlier episode, a
        short summary, tags and outcome; `text` is the same as a readable story.
        """
        return await call("episodes_replay", topic=topic, limit=limit)

    @tool("tribal_episodes_search", READ)
    async def episodes_search(
        query: Annotated[str, RAW, arg("What to look for in episode titles and summaries.")],
        time_start: Annotated[
            str | None,
            RAW,
            arg("Only episodes active at or after this time (ISO 8601; no zone means UTC)."),
        ] = None,
        time_end: Annotated[
            str | None,
            RAW,
            arg("Only episodes active at or before this time (ISO 8601; no zone means UTC)."),
        ] = None,
        status: Annotated[
            str | None, RAW, arg("Only episodes in this state.", enum=list(EPISODE_STATUSES))
        ] = None,
        limit: Annotated[
            int, RAW, arg("Maximum number of episodes, 1 to 50.", minimum=1, maximum=50)
        ] = 10,
    ) -> EpisodeSearchResult:
        """Search episodes (threads of work) by meaning and keywords, optionally in a time range.

        Recent episodes get a small boost. Summaries in results are cut to 500 characters;
        open one with tribal_episode_get for the whole story.
        """
        return await call(
            "episodes_search",
            query=query,
            time_start=time_start,
            time_end=time_end,
            status=status,
            limit=limit,
        )
