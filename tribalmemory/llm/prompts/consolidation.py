"""Consolidation checks: is an episode the same thread as another (merge), or two (split)?"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from .answers import exact_keys
from .limits import (
    LIST_ANSWER_TOKENS,
    MAX_BATCH,
    MAX_CANDIDATES,
    MAX_TOKENS,
    SNIPPET_CHARS,
    SNIPPETS_PER_CHECK,
)
from .render import EpisodeText, MemoryText, Prompt, attr, episode_block, episode_head, render_all
from .system import messages

T = TypeVar("T")


@dataclass(frozen=True)
class MergeCheck:
    """One episode and the candidates it may be the same thread as (``merge``)."""

    episode: EpisodeText
    candidates: tuple[EpisodeText, ...]


@dataclass(frozen=True)
class SplitCheck:
    """Two parts of one episode that may be two threads (``split``): what each shows."""

    episode_id: str
    title: str
    first: tuple[MemoryText, ...]
    second: tuple[MemoryText, ...]


def check_blocks(checks: Sequence[MergeCheck]) -> str:
    """``<check episode_id="..">``: each checked episode and its candidates."""
    blocks = []
    for check in checks:
        shown = [episode_block(c, SNIPPETS_PER_CHECK) for c in check.candidates[:MAX_CANDIDATES]]
        blocks.append(
            f'<check episode_id="{attr(check.episode.id)}">\n'
            + episode_block(check.episode, SNIPPETS_PER_CHECK)
            + "\n<candidates>\n"
            + "\n".join(shown)
            + "\n</candidates>\n</check>"
        )
    return "\n".join(blocks)


def merge_allowed(checks: Sequence[MergeCheck]) -> dict[str, frozenset[str]]:
    """The candidate ids each checked episode may be answered with."""
    return {c.episode.id: frozenset(x.id for x in c.candidates) for c in checks}


def build_merge(checks: Sequence[MergeCheck]) -> Prompt[dict[str, str | None]]:
    """Is each checked episode the same thread as one of its candidates? One call for several
    checks (when no review call comes to carry them); an answer may only name one of that
    check's own candidates."""
    checks = list(checks)[:MAX_BATCH]
    if not checks:
        raise ValueError("merge needs at least one check")
    user = "Checks:\n" + check_blocks(checks)
    allowed = merge_allowed(checks)
    return Prompt(
        "merge",
        messages("merge", user),
        lambda data: validate_merge(data, allowed),
        LIST_ANSWER_TOKENS + MAX_TOKENS["merge"] * len(checks),
    )


def build_split(checks: Sequence[SplitCheck]) -> Prompt[dict[str, bool]]:
    """Are the two parts of each checked episode two threads? One call for several checks."""
    checks = list(checks)[:MAX_BATCH]
    if not checks:
        raise ValueError("split needs at least one check")
    blocks = []
    for check in checks:
        parts = [
            f'<part id="{name}">\n{render_all(part[:SNIPPETS_PER_CHECK], SNIPPET_CHARS)}\n</part>'
            for name, part in (("a", check.first), ("b", check.second))
        ]
        blocks.append(
            f'<check episode_id="{attr(check.episode_id)}">\n'
            + episode_head(check.title)
            + "\n"
            + "\n".join(parts)
            + "\n</check>"
        )
    user = "Checks:\n" + "\n".join(blocks)
    ids = frozenset(c.episode_id for c in checks)
    return Prompt(
        "split",
        messages("split", user),
        lambda data: validate_split(data, ids),
        LIST_ANSWER_TOKENS + MAX_TOKENS["split"] * len(checks),
    )


def _per_check(
    data: Any, name: str, field: str, checked: Iterable[str], value: Callable[[str, Any], T]
) -> dict[str, T]:
    """``{name: [{"episode_id", field}, ...]}`` with one item for every checked episode:
    ``value(episode_id, answer)`` of each (it raises ``ValueError`` for a wrong answer)."""
    items = exact_keys(data, {name})[name]
    if not isinstance(items, list):
        raise ValueError(f"{name} must be a list")
    wanted = list(checked)
    out: dict[str, T] = {}
    for item in items:
        item = exact_keys(item, {"episode_id", field})
        episode_id = item["episode_id"]
        if episode_id not in wanted:
            raise ValueError(f"episode_id {episode_id!r} is not one of the checked episodes")
        if episode_id in out:
            raise ValueError(f"two answers for episode {episode_id!r}")
        out[episode_id] = value(episode_id, item[field])
    missing = [e for e in wanted if e not in out]
    if missing:
        raise ValueError(f"no answer for episodes {missing}")
    return out


def validate_merge(data: Any, allowed: dict[str, frozenset[str]]) -> dict[str, str | None]:
    """``{"merges": [...]}``: for each checked episode, one of its candidates or null."""

    def same_as(episode_id: str, answer: Any) -> str | None:
        if answer is not None and answer not in allowed[episode_id]:
            raise ValueError(f"same_as {answer!r} is not a candidate of {episode_id!r}")
        return answer

    return _per_check(data, "merges", "same_as", allowed, same_as)


def validate_split(data: Any, checked: frozenset[str]) -> dict[str, bool]:
    """``{"splits": [...]}``: for each checked episode, whether its parts are two threads."""

    def two_threads(episode_id: str, answer: Any) -> bool:
        if not isinstance(answer, bool):
            raise ValueError(f"two_threads of {episode_id!r} must be true or false")
        return answer

    return _per_check(data, "splits", "two_threads", sorted(checked), two_threads)
