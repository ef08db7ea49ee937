"""The shared builders: what a prompt shows of memories and episodes, escaped as data."""

from __future__ import annotations

import html
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, TypeVar

from ...plural import counted
from ...timeutil import to_iso
from .limits import (
    CANDIDATE_SUMMARY_CHARS,
    CONTROL,
    HEAD_MEMORIES,
    MAX_MEMORIES,
    MEMORY_CHARS,
    SNIPPET_CHARS,
    SNIPPETS_PER_CANDIDATE,
    SUMMARY_MAX,
    TITLE_MAX,
)

T = TypeVar("T")


@dataclass(frozen=True)
class MemoryText:
    """The part of a memory a prompt shows."""

    id: str
    content: str
    time: str = ""
    source: str = ""


@dataclass(frozen=True)
class EpisodeText:
    """An active episode offered to ``classify``."""

    id: str
    title: str
    summary: str = ""
    recent: tuple[MemoryText, ...] = ()


@dataclass(frozen=True)
class Prompt(Generic[T]):
    """Messages to send, and how to check the answer."""

    purpose: str
    messages: list[dict[str, str]]
    validate: Callable[[Any], T]
    max_tokens: int


def _time_text(value: Any) -> str:
    if isinstance(value, datetime):
        return to_iso(value.replace(microsecond=0))
    return str(value or "")


def as_memory(obj: Any) -> MemoryText:
    """A :class:`MemoryText` from a MemoryText, a Memory-like object, a dict or a string."""
    if isinstance(obj, MemoryText):
        return obj
    if isinstance(obj, str):
        return MemoryText(id="", content=obj)
    get = obj.get if isinstance(obj, dict) else lambda k, d=None: getattr(obj, k, d)
    moment = get("time") or get("created_at") or get("timestamp")
    source = get("source") or get("source_instance") or ""
    return MemoryText(
        id=str(get("id") or ""),
        content=str(get("content") or ""),
        time=_time_text(moment),
        source=str(source),
    )


def as_episode_text(obj: Any) -> EpisodeText:
    """An :class:`EpisodeText` from one or from a dict with id, title, summary, recent."""
    if isinstance(obj, EpisodeText):
        return obj
    get = obj.get if isinstance(obj, dict) else lambda k, d=None: getattr(obj, k, d)
    recent = get("recent") or get("memories") or get("snippets") or ()
    return EpisodeText(
        id=str(get("id")),
        title=str(get("title") or ""),
        summary=str(get("summary") or ""),
        recent=tuple(as_memory(m) for m in recent),
    )


def clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, ending in an ellipsis when cut."""
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def esc(text: str) -> str:
    """Text escaped as element content."""
    return html.escape(text, quote=False)


def attr(text: str) -> str:
    """Text escaped as a one-line attribute value."""
    return html.escape(CONTROL.sub(" ", text), quote=True)


def render_memory(memory: MemoryText, limit: int = MEMORY_CHARS) -> str:
    """``<memory id=".." time=".." source="..">escaped text</memory>``."""
    attrs = f' id="{attr(memory.id)}"' if memory.id else ""
    if memory.time:
        attrs += f' time="{attr(memory.time)}"'
    if memory.source:
        attrs += f' source="{attr(memory.source)}"'
    return f"<memory{attrs}>{esc(clip(memory.content, limit))}</memory>"


def render_all(memories: Sequence[MemoryText], limit: int = MEMORY_CHARS) -> str:
    """Memories rendered one a line."""
    return "\n".join(render_memory(m, limit) for m in memories)


def select_memories(
    memories: Sequence[T], cap: int = MAX_MEMORIES, head: int = HEAD_MEMORIES
) -> tuple[list[T], int]:
    """At most ``cap`` memories: the first ``head`` and the most recent rest; and the omitted
    count (the memories a summary prompt shows, in the order given)."""
    items = list(memories)
    if len(items) <= cap:
        return items, 0
    return items[:head] + items[len(items) - (cap - head) :], len(items) - cap


def memories_block(memories: Iterable[Any]) -> str:
    """An episode's memories within :data:`~.limits.MAX_MEMORIES`, the omitted ones noted."""
    items = [as_memory(m) for m in memories]
    chosen, omitted = select_memories(items)
    if not omitted:
        return render_all(chosen)
    head, tail = chosen[:HEAD_MEMORIES], chosen[HEAD_MEMORIES:]
    note = f"[{counted(omitted, 'memory')} in between omitted]"
    return "\n".join([render_all(head), note, render_all(tail)])


def episode_head(
    title: str, summary: str | None = None, summary_chars: int = SUMMARY_MAX + 300
) -> str:
    """``<title>`` and, when given, ``<summary>`` of an episode."""
    head = f"<title>{esc(clip(title, TITLE_MAX))}</title>"
    if summary is not None:
        head += f"\n<summary>{esc(clip(summary, summary_chars))}</summary>"
    return head


def episode_block(cand: EpisodeText, snippets: int = SNIPPETS_PER_CANDIDATE) -> str:
    """``<episode id="..">``: a candidate's title, summary and most recent memories."""
    recent = [render_memory(m, SNIPPET_CHARS) for m in cand.recent[-snippets:]]
    head = episode_head(cand.title, cand.summary, CANDIDATE_SUMMARY_CHARS)
    return f'<episode id="{attr(cand.id)}">\n' + "\n".join([head, *recent]) + "\n</episode>"
