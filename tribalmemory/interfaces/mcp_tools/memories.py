"""The memory tools: remember, recall, forget, used, correct, ingest_conversation.

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
    MemoryId,
    arg,
)
from .sessions import session_key


def memory_tools(env: ToolEnv) -> list[Callable[..., Any]]:
    """The tools of this family, bound to ``env`` (the server's API call and defaults)."""
    call = env.call
    scope = env.scope
    read_scope = env.read_scope
    author = env.author
    default_session = env.session
    remember_arg = shapes.RememberRequest
    recall_arg = shapes.RecallRequest
    correct_arg = shapes.CorrectRequest
    ingest_arg = shapes.IngestConversationRequest

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

    async def forget(memory_id: MemoryId) -> shapes.ForgetResult:
        """Delete one memory for good, e.g. one that is wrong, obsolete or holds a secret.

        To fix a memory that is wrong or outdated, prefer tribal_correct so the team keeps
        the history.
        """
        return await call("forget", memory_id=memory_id)

    async def used(memory_id: MemoryId) -> shapes.UsedResult:
        """Tell the team's memory that a memory tribal_recall gave you actually helped.

        Call it once for each recalled memory you relied on (not for the ones you only
        read). Used memories stay fresh longer: their retrievability decays more slowly,
        and so does their episode's. Returns the memory's access_count and retrievability.
        """
        return await call("memory_used", memory_id=memory_id)

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

    async def ingest_conversation(
        conversation_id: Annotated[str, RAW, arg(ingest_arg, "conversation_id")],
        messages: Annotated[list[Any], RAW, arg(ingest_arg, "messages")],
        session: Annotated[str, RAW, arg(ingest_arg, "session", SESSION_DOC)] = "",
        project: Annotated[str, RAW, arg(ingest_arg, "project", PROJECT_DOC)] = "",
        ctx: Context[Any, Any] | None = None,
        **passed: Any,
    ) -> shapes.IngestConversationResult:
        """Store a whole conversation (a chat, a session transcript) in the team's memory.

        Send its messages ({role, content, timestamp?, name?}) in order; each turn becomes a
        memory, each sitting (turns at most an hour apart) is one episode, and system messages,
        tool output and bare acknowledgements are folded into the turn before. Send the same
        conversation_id again with more messages and only the new ones are stored; a long
        conversation goes in pages of up to 1000 messages (first_index: the position of the
        page's first message).
        """
        return await call(
            "ingest_conversation",
            conversation_id=conversation_id,
            messages=messages,
            source_instance=author(ctx),
            session=session_key(ctx, session, default_session),
            project=scope(project),
            **passed,
        )

    return [remember, recall, forget, used, correct, ingest_conversation]
