"""The daemon's health and the store's counts (``/v1/health``, ``/v1/stats``)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from .base import (
    OpenResponse,
    Response,
)
from .llm import (
    LlmStatus,
)


class AccessInfo(Response):
    state: Literal["ok", "unavailable"] = Field(
        description="unavailable: access.sqlite3 cannot be used; recall is not re-ranked and "
        "the access fields are null."
    )
    reason: str


class StoreInfo(Response):
    backend: str
    location: str


class EmbeddingInfo(Response):
    model: str
    dim: int
    request_cpus: list[int] | None = Field(
        None,
        description="The CPUs requests' embeddings and store calls run on, beside "
        "onnxruntime's pinned threads, and the daemon's event loop once warmed up (null: any "
        "CPU, or none run yet).",
    )


class DetectorModelInfo(Response):
    name: str = Field(description="join-trees or join-logistic: the fitted join model's kind.")
    digest: str = Field(description="Hash of the model's parameters.")
    threshold: float = Field(description="P(joins) at or above which a memory joins.")
    features: int = Field(description="How many features the model reads.")
    fitted_by: str | None = Field(None, description="The fitting script's version.")
    data_hash: str | None = Field(None, description="Hash of the data it was fitted on.")


class EpisodeQueue(OpenResponse):
    queue_depth: int
    oldest_pending_age_seconds: float
    active_episodes: int
    detector_strategy: str
    detector_model: DetectorModelInfo | None = Field(
        None, description="The fitted model behind detection decisions (docs/detection.md)."
    )
    classify_calls: int = Field(
        description="Detector calls made to the LLM so far: reviews, merge and split checks."
    )
    classified_memories: int = Field(description="Memories those calls decided (batched).")
    classify_calls_per_memory: float = Field(
        description="Classification calls per memory decided (the budget is "
        "episodes.classify_calls_per_memory)."
    )
    classify_waiting: int = Field(description="Doubtful memories waiting for the LLM.")
    merge_waiting: int = Field(
        description="Episodes waiting for the LLM's check that they are not one thread with "
        "another (episodes.merge_checks)."
    )
    entities_waiting: int = Field(
        0,
        description="Memories whose entities are still to be found: they are found in the "
        "background right after each memory's episode decision (and, once, for the memories "
        "of an earlier version's database); 0 when done, docs/entities.md.",
    )
    entities_error: str | None = Field(
        None,
        description="Why finding those entities stopped (tried again at the next decision or "
        "within 30 s; a WARNING says it too); null when the last pass did not stop.",
    )
    merge_unanswered: int = Field(
        0,
        description="Merge checks that rode along in a review call whose answer placed its "
        "memories but left the checks out or invalid, since the daemon started (a WARNING "
        "says why; they are asked again when their episodes reach the next check size).",
    )
    split_waiting: int = Field(
        description="Episodes waiting for a look at whether they mix two threads "
        "(episodes.split_checks)."
    )
    classify_budget_left: int = Field(
        description="Calls the budget allows now; at 0 the embedding decision stands."
    )


class BatchesInfo(Response):
    in_flight: int = Field(description="Batches being stored now.")
    max: int = Field(description="At most this many at once; one more gets 429.")


class DiskInfo(Response):
    state: Literal["ok", "full", "unknown"] = Field(
        description="full: less than storage.min_free_mb is free, writes get 507."
    )
    free_mb: int | None = None
    reserve_mb: int | None = None
    writes_refused: int | None = None
    error: str | None = Field(None, description="Why the free space is unknown.")


class BackgroundEmbeddings(Response):
    priority: str = Field(description="idle, nice 19, normal, or not started.")
    model: str = Field(
        description="loaded or not loaded: its single-threaded copy of the model (loaded by "
        "the daemon before it answers, when episodes are on; else on first use)."
    )
    deadline_seconds: float = Field(
        description="Seconds a text waits for an idle core, while the daemon's own requests "
        "leave the CPU free, before it runs at normal priority."
    )
    max_wait_seconds: float = Field(
        description="Seconds a text waits in all, however busy the daemon's requests keep it."
    )
    calls: int
    ran_at_normal_priority: int = Field(
        description="Calls that waited deadline_seconds (or max_wait_seconds) and ran at "
        "normal priority."
    )


class WarmUp(Response):
    seconds: float = Field(description="How long the daemon's warm-up took, before it answered.")
    done: list[str] = Field(
        description="What was loaded before the first request: request model, background "
        "model, litellm."
    )
    failed: dict[str, str] = Field(
        description="What failed to load, with the reason (loaded again on first use)."
    )


class DataFolderInfo(Response):
    id: str = Field(description="The data folder's public id (identity.json).")
    path: str | None = Field(
        None, description="Where it is on disk (authenticated callers only; else absent)."
    )


class Health(OpenResponse):
    status: str
    version: str
    uptime_seconds: float
    store: StoreInfo
    embedding: EmbeddingInfo
    batches: BatchesInfo
    disk: DiskInfo | None = Field(None, description="Free disk space (null: not checked).")
    background_embeddings: BackgroundEmbeddings | None = None
    warm_up: WarmUp | None = Field(
        None, description="What the daemon loaded before answering (null: not a daemon)."
    )
    access: AccessInfo | None = Field(None, description="The access statistics' state.")
    llm: LlmStatus | None = Field(None, description="The LLM's state (episode engine only).")
    episodes: EpisodeQueue | None = Field(
        None, description="The episode engine's background work (null when it is off)."
    )
    data_folder: DataFolderInfo | None = Field(
        None,
        description="The daemon's data folder, added by the HTTP server (null in process).",
    )


class EpisodeCounts(Response):
    active: int
    closed: int
    archived: int


class Stats(OpenResponse):
    total_memories: int
    by_source_type: dict[str, int]
    embedding_model: str
    episodes: EpisodeCounts | None = Field(None, description="null when episodes are off.")
