"""The episode tools: list, read, edit, declare and search threads of work.

Each function is one tool; its name, annotations and request model are in :data:`.table.TOOLS`.
"""

from collections.abc import Callable
from typing import Annotated, Any

from mcp.server.mcpserver.context import Context

from ... import shapes
from .env import ToolEnv
from .params import (
    PROJECT_DOC,
    PROJECT_READ_DOC,
    RAW,
    SESSION_DOC,
    EpisodeId,
    MemoryId,
    arg,
)
from .sessions import session_key


def episode_tools(env: ToolEnv) -> list[Callable[..., Any]]:
    """The tools of this family, bound to ``env`` (the server's API call and defaults)."""
    call = env.call
    scope = env.scope
    read_scope = env.read_scope
    default_session = env.session
    search_arg = shapes.EpisodesSearchRequest
    list_arg = shapes.EpisodesListQuery

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

    async def episode_get(
        episode_id: EpisodeId,
        include_timeline: Annotated[
            bool | None, RAW, arg(shapes.EpisodeGetQuery, "include_timeline")
        ] = None,
        include_entities: Annotated[
            bool | None, RAW, arg(shapes.EpisodeGetQuery, "include_entities")
        ] = None,
    ) -> shapes.EpisodeGetResult:
        """One episode in full: title, summary, status, dates, metadata and its memory_ids.

        Use it to catch up on a thread of work before continuing it.
        """
        return await call(
            "episode_get",
            episode_id=episode_id,
            include_timeline=include_timeline,
            include_entities=include_entities,
        )

    async def episode_decisions(episode_id: EpisodeId) -> shapes.EpisodeDecisions:
        """The decisions of an episode in time order: context, options, what was chosen, why,
        how it turned out and the memories it rests on. Read it before revisiting a choice."""
        return await call("episode_decisions", episode_id=episode_id)

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

    async def episode_add(episode_id: EpisodeId, memory_id: MemoryId) -> shapes.EpisodeAddResult:
        """Add an existing memory to an episode (e.g. one that was filed in the wrong thread),
        moving it out of the one it was in: added is false when it was a member already."""
        return await call("episode_add", episode_id=episode_id, memory_id=memory_id)

    async def episode_remove(episode_id: EpisodeId, memory_id: MemoryId) -> shapes.Success:
        """Take a memory out of an episode; the memory itself is kept."""
        return await call("episode_remove", episode_id=episode_id, memory_id=memory_id)

    async def episode_close(episode_id: EpisodeId) -> shapes.Success:
        """Mark an episode as finished, so new memories stop joining it."""
        return await call("episode_close", episode_id=episode_id)

    async def episode_regenerate(episode_id: EpisodeId) -> shapes.Success:
        """Rebuild an episode's summary from all of its memories (one LLM call, when configured)."""
        return await call("episode_regenerate", episode_id=episode_id)

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

    async def episode_current(
        session: Annotated[str, RAW, arg(shapes.EpisodeCurrentQuery, "session", SESSION_DOC)] = "",
        ctx: Context[Any, Any] | None = None,
    ) -> shapes.EpisodeCurrent:
        """The episode you declared with tribal_episode_start in this session (null if none)."""
        return await call("episode_current", session=session_key(ctx, session, default_session))

    async def episode_update(episode_id: EpisodeId, **passed: Any) -> shapes.EpisodeGetResult:
        """Rename an episode, close or reopen it, set metadata fields, or correct its
        structured record (task, outcome, outcome_reason, decisions, events, lessons; each
        field you send replaces the stored one; memory_ids must be members).

        Changes made here are kept: later summaries do not overwrite the title or the fields
        you set. Returns the episode as tribal_episode_get does, with its history.
        """
        return await call("episode_update", episode_id=episode_id, **passed)

    async def episode_merge(
        episode_id: EpisodeId,
        other_id: Annotated[str, RAW, arg(shapes.EpisodeMergeRequest, "other_id")],
    ) -> shapes.EpisodeMergeResult:
        """Merge two episodes that are really one thread of work.

        The episode with more memories keeps its id; the other one is gone afterwards.
        """
        return await call("episode_merge", episode_id=episode_id, other_id=other_id)

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

    async def episode_delete(episode_id: EpisodeId) -> shapes.Success:
        """Delete an episode and its summary; its memories are kept, in no episode."""
        return await call("episode_delete", episode_id=episode_id)

    async def episode_chain(episode_id: EpisodeId) -> shapes.EpisodeChain:
        """The chain of episodes this one belongs to, root first.

        A follow-up thread (e.g. the iOS fix after the web fix of the same bug) is linked to
        the episode it continues. Use it to read a multi-day story from its beginning.
        """
        return await call("episode_chain", episode_id=episode_id)

    async def episode_replay(
        topic: Annotated[str, RAW, arg(shapes.EpisodesReplayRequest, "topic")],
        limit: Annotated[int | None, RAW, arg(shapes.EpisodesReplayRequest, "limit")] = None,
        project: Annotated[
            str, RAW, arg(shapes.EpisodesReplayRequest, "project", PROJECT_READ_DOC)
        ] = "",
        **passed: Any,
    ) -> shapes.Replay:
        """Replay the history of a topic: the relevant episodes in chronological order.

        Use it for questions like "what happened the last times we touched X?". Each episode
        comes with its date range, title, a marker when it continues an earlier episode, a
        short summary, tags and outcome; `text` is the same as a readable story.
        """
        return await call(
            "episodes_replay", topic=topic, limit=limit, project=read_scope(project), **passed
        )

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

    return [
        episodes_list,
        episode_get,
        episode_decisions,
        episode_create,
        episode_add,
        episode_remove,
        episode_close,
        episode_regenerate,
        episode_start,
        episode_current,
        episode_update,
        episode_merge,
        episode_split,
        episode_delete,
        episode_chain,
        episode_replay,
        episodes_search,
    ]
