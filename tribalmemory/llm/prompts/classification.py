"""Classification: where each new memory belongs (join, create or none), in one call for several."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from .answers import exact_keys, validate_title_text
from .consolidation import MergeCheck, check_blocks, merge_allowed, validate_merge
from .limits import LIST_ANSWER_TOKENS, MAX_BATCH, MAX_CANDIDATES, MAX_TOKENS, NEW_MEMORY_CHARS
from .render import Prompt, as_episode_text, as_memory, episode_block, render_memory
from .system import messages


@dataclass(frozen=True)
class Classification:
    action: Literal["join", "create", "none"]
    episode_id: str | None = None
    title: str | None = None


class Verdicts(dict[str, Classification]):
    """A classify answer: each new memory's :class:`Classification` by memory id, and in
    :attr:`merges` the answer to each merge check the call carried (checked episode id ->
    the candidate it is the same thread as, or ``None``). :attr:`checks_error`: why the
    answer's ``"merges"`` were missing or invalid (the decisions stand; the checks have no
    answer)."""

    def __init__(
        self,
        decisions: dict[str, Classification] | None = None,
        merges: dict[str, str | None] | None = None,
        checks_error: str | None = None,
    ) -> None:
        super().__init__(decisions or {})
        self.merges: dict[str, str | None] = dict(merges or {})
        self.checks_error = checks_error


def build_classify(
    memories: Sequence[Any], candidates: Sequence[Any], checks: Sequence[MergeCheck] = ()
) -> Prompt[Verdicts]:
    """Where each new memory belongs: join a candidate, create a thread, or none; one call for
    several memories that share candidates. Merge ``checks`` waiting at the time ride along in
    the same call (see :func:`build_merge`). Only the memories', candidates' and checks' own
    ids validate."""
    news = [as_memory(m) for m in memories][:MAX_BATCH]
    if not news:
        raise ValueError("classify needs at least one memory")
    cands = [as_episode_text(c) for c in candidates][:MAX_CANDIDATES]
    checks = list(checks)[:MAX_BATCH]
    blocks = [episode_block(cand) for cand in cands]
    limit = max(500, NEW_MEMORY_CHARS // len(news))
    user = (
        "New memories:\n<new>\n"
        + "\n".join(render_memory(m, limit) for m in news)
        + "\n</new>\n\nCandidate episodes (active):\n<candidates>\n"
        + ("\n".join(blocks) if blocks else "(none)")
        + "\n</candidates>"
    )
    if checks:
        user += "\n\nMerge checks:\n<checks>\n" + check_blocks(checks) + "\n</checks>"
    ids = frozenset(c.id for c in cands)
    memory_ids = tuple(m.id for m in news)
    allowed = merge_allowed(checks)
    return Prompt(
        "classify",
        messages("classify", user),
        lambda data: validate_classify(data, ids, memory_ids, allowed),
        LIST_ANSWER_TOKENS * (2 if checks else 1)
        + MAX_TOKENS["classify"] * len(news)
        + MAX_TOKENS["merge"] * len(checks),
    )


def validate_classification(data: Any, candidate_ids: Iterable[str]) -> Classification:
    """One decision: exactly one of join (a candidate id), create (a title) or none."""
    if not isinstance(data, dict):
        raise ValueError("expected a JSON object")
    data = {k: v for k, v in data.items() if k != "memory_id"}
    action = data.get("action")
    if action == "join":
        exact_keys(data, {"action", "episode_id"})
        episode_id = data["episode_id"]
        if not isinstance(episode_id, str) or episode_id not in set(candidate_ids):
            raise ValueError(f"episode_id {episode_id!r} is not one of the candidates")
        return Classification("join", episode_id=episode_id)
    if action == "create":
        exact_keys(data, {"action", "title"})
        return Classification("create", title=validate_title_text(data["title"]))
    if action == "none":
        exact_keys(data, {"action"})
        return Classification("none")
    raise ValueError(f"action must be join, create or none, got {action!r}")


def validate_classify(
    data: Any,
    candidate_ids: Iterable[str],
    memory_ids: Sequence[str],
    checks: dict[str, frozenset[str]] | None = None,
) -> Verdicts:
    """``{"decisions": [...]}``: one valid decision for each of ``memory_ids``, no other; with
    ``checks``, also ``"merges"`` as :func:`validate_merge` checks them; missing or invalid
    ones leave the checks unanswered (:attr:`Verdicts.checks_error`), not the decisions, which
    are the call's purpose (a retry for the checks' sake would cost a second call). For a
    single memory, a bare decision (``{"action": ...}``, the form of a one-memory prompt) is
    taken as that memory's decision."""
    if isinstance(data, dict) and "action" in data and len(memory_ids) == 1:
        merges = {"merges": data["merges"]} if "merges" in data else {}
        bare = {k: v for k, v in data.items() if k != "merges"}
        data = {"decisions": [{"memory_id": memory_ids[0], **bare}], **merges}
    data = exact_keys(data, {"decisions"}, frozenset({"merges"}) if checks else frozenset())
    decisions = data["decisions"]
    if not isinstance(decisions, list):
        raise ValueError("decisions must be a list")
    out: dict[str, Classification] = {}
    for item in decisions:
        memory_id = item.get("memory_id") if isinstance(item, dict) else None
        if not isinstance(memory_id, str) or memory_id not in memory_ids:
            raise ValueError(f"memory_id {memory_id!r} is not one of the new memories")
        if memory_id in out:
            raise ValueError(f"two decisions for memory {memory_id!r}")
        out[memory_id] = validate_classification(item, candidate_ids)
    missing = [m for m in memory_ids if m not in out]
    if missing:
        raise ValueError(f"no decision for memories {missing}")
    if not checks:
        return Verdicts(out)
    if "merges" not in data:
        return Verdicts(out, checks_error="the answer has no merges")
    try:
        return Verdicts(out, validate_merge({"merges": data["merges"]}, checks))
    except ValueError as exc:
        return Verdicts(out, checks_error=str(exc))
