"""The episode engine's use of the LLM layer: classification and summaries, with fallbacks.

Every method returns ``None`` when the LLM cannot be used (no key, ceiling reached, call cap,
provider down, invalid answers after retries); the engine then falls back to the embedding
decision or an extractive summary. The reason is logged by the LLM client (once per state
change) and shown in ``/v1/health``.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

from ..llm import (
    EpisodeText,
    LLMClient,
    LLMUnavailable,
    MemoryText,
    MergeCheck,
    SplitCheck,
    Verdicts,
    build_classify,
    build_final,
    build_merge,
    build_regenerate,
    build_split,
    build_update,
)
from ..models import Memory
from ..timeutil import to_iso
from .store import EpisodeRow

log = logging.getLogger("tribalmemory.episodes")

NO_LLM_NOTE = (
    "without an LLM, episodes use embedding-only detection and extractive summaries; "
    "an LLM adds classification of doubtful memories, readable titles, narrative "
    "summaries and structured metadata"
)


@dataclass
class SummaryOutcome:
    title: str
    summary: str
    metadata: dict[str, Any] | None
    structured: Any = None  # the LLM's raw structured object (validated by .structured)


def memory_text(memory: Memory) -> MemoryText:
    return MemoryText(
        id=memory.id,
        content=memory.content,
        time=to_iso(memory.created_at),
        source=memory.source_instance,
    )


class Summariser:
    """Classification and summaries through :class:`LLMClient`; ``None`` means fall back."""

    def __init__(self, client: LLMClient | None, checked_at_start: bool = True) -> None:
        self.client = client
        self.checked = client is None
        self.checked_at_start = checked_at_start
        """False (a command without the daemon): nothing checks the LLM at start, so
        :meth:`status` checks it when first asked (no network call)."""

    async def check(self) -> dict[str, Any]:
        """Import litellm and check key/model once (off the start-up path)."""
        if self.client is None:
            return {"state": "disabled", "reason": "LLM features are off"}
        status = await self.client.acheck_startup()
        if not self.checked:
            status = await asyncio.to_thread(self.client.probe)
        self.checked = True
        return status

    def configured(self) -> bool:
        """True when an LLM is configured and passed the start-up check (it may still be out
        for a while: down, degraded, over the ceiling)."""
        return self.client is not None and self.client.configured()

    def possible(self) -> bool:
        """False once the start-up check found that no LLM can be called (offline, disabled,
        unpriced): work only an LLM can do is then not queued. True before the check."""
        return self.client is not None and (not self.checked or self.client.configured())

    def ready(self) -> bool:
        """True once the start-up check passed, the ceiling is not reached and the provider is
        not failing (or it is due for a re-probe: the next call is that probe)."""
        return self.client is not None and self.checked and self.client.available()

    def outage_probe_in(self) -> float | None:
        """Seconds until a failed provider's re-probe is due; None when no outage."""
        return None if self.client is None else self.client.outage_probe_in()

    def retry_now(self) -> None:
        """An explicit request (regenerate): a provider that failed is probed by the next call
        instead of at its scheduled re-probe."""
        if self.client is not None:
            self.client.retry_now()

    def status(self) -> dict[str, Any]:
        if self.client is None:
            return {"state": "disabled", "reason": "LLM features are off"}
        if not self.checked and self.checked_at_start:
            return {"state": "starting", "reason": "checking the LLM configuration"}
        status = self.client.status()  # checks key, model and price first if not yet done
        if status["state"] != "ready":
            status["fallback"] = NO_LLM_NOTE
        return status

    async def classify(
        self,
        memories: list[Memory],
        candidates: list[EpisodeText],
        checks: list[MergeCheck] | None = None,
    ) -> Verdicts | None:
        """Each memory's decision (one call for the batch), and the answers to the merge
        ``checks`` riding along; ``None`` when the LLM cannot answer."""
        if self.client is None:
            return None
        await self.check()
        prompt = build_classify([memory_text(m) for m in memories], candidates, checks or ())
        try:
            return await self.client.run(prompt, memory_id=memories[0].id)
        except LLMUnavailable as exc:
            ids = ", ".join(m.id for m in memories)
            log.info("classification of %s falls back to embeddings: %s", ids, exc)
            return None

    async def merge(self, checks: list[MergeCheck]) -> dict[str, str | None] | None:
        """For each checked episode, the candidate it is the same thread as (or ``None``);
        ``None`` overall when the LLM cannot answer."""
        if self.client is None or not checks:
            return None
        await self.check()
        try:
            return await self.client.run(build_merge(checks), episode_id=checks[0].episode.id)
        except LLMUnavailable as exc:
            ids = ", ".join(c.episode.id for c in checks)
            log.info("merge check of %s skipped: %s", ids, exc)
            return None

    async def split(self, checks: list[SplitCheck]) -> dict[str, bool] | None:
        """For each checked episode, whether its two parts are two threads; ``None`` when the
        LLM cannot answer."""
        if self.client is None or not checks:
            return None
        await self.check()
        try:
            return await self.client.run(build_split(checks), episode_id=checks[0].episode_id)
        except LLMUnavailable as exc:
            ids = ", ".join(c.episode_id for c in checks)
            log.info("split check of %s skipped: %s", ids, exc)
            return None

    async def summarise(
        self,
        plan: str,
        row: EpisodeRow,
        memories: list[Memory],
        new_memories: list[Memory],
        trigger: str | None,
    ) -> SummaryOutcome | None:
        """Run the planned summary: ``update``, ``final``, else ``regenerate``."""
        if self.client is None or len(memories) < 1:
            return None
        await self.check()
        if not self.ready():
            return None
        texts = [memory_text(m) for m in memories]
        if plan == "update" and new_memories:
            prompt = build_update(
                row.title, row.llm_summary, [memory_text(m) for m in new_memories]
            )
        elif plan == "final":
            prompt = build_final(row.title, texts)
        else:
            prompt = build_regenerate(row.title, texts)
        try:
            result = await self.client.run(prompt, episode_id=row.id, memory_id=trigger)
        except LLMUnavailable as exc:
            log.info("summary of %s falls back to extractive: %s", row.id, exc)
            return None
        metadata = result.metadata.to_json() if result.metadata is not None else None
        if metadata is not None:
            metadata["source"] = "llm"
        return SummaryOutcome(
            title=result.title,
            summary=result.summary,
            metadata=metadata,
            structured=result.structured,
        )

    def episode_cost(self, episode_id: str) -> float:
        if self.client is None:
            return 0.0
        return self.client.ledger.episode_cost(episode_id)

    def costs(self) -> dict[str, Any]:
        if self.client is None:
            return {"llm": self.status(), "spend_usd": 0.0, "calls": 0}
        data = self.client.ledger.summary()
        data["llm"] = self.status()
        return data
