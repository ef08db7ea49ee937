"""Memory per request is bounded (issue 18, point 7): texts are embedded in runs of a bounded
number of tokens, and only a few batches run at once (429 with Retry-After beyond)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
from helpers_http import LOCAL, start_daemon

from tribalmemory.config import config_from_dict
from tribalmemory.embeddings.embedder import (
    BUNDLED_DIM,
    BUNDLED_MAX_TOKENS,
    BUNDLED_MODEL,
    TOKEN_BUDGET,
    Embedder,
    estimated_tokens,
    load_embedder,
    plan_runs,
    token_counter,
)
from tribalmemory.errors import Busy
from tribalmemory.runtime import start_runtime
from tribalmemory.service.remembering import BATCH_RETRY_AFTER, MAX_CONCURRENT_BATCHES


@pytest.fixture
async def service(tmp_path: Path) -> AsyncIterator[Any]:
    """The memory service of a runtime with episodes off, in this test's event loop."""
    config = config_from_dict({"data_dir": str(tmp_path / "data"), "episodes": {"enabled": False}})
    runtime = await start_runtime(config)
    yield runtime.service
    await runtime.stop()


LONG = "the refresh token rotation race needs a grace window " * 370  # 19.6k characters


class RecordingModel:
    """The real fastembed model; records the texts of every ONNX run."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self.runs: list[list[str]] = []

    def embed(self, texts: list[str], batch_size: int) -> Any:
        self.runs.append(list(texts))
        return self.model.embed(texts, batch_size=batch_size)


def test_plan_runs_keeps_each_run_within_the_budget() -> None:
    tokens = sorted([10] * 100 + [100] * 30 + [256] * 20)
    runs = plan_runs(tokens, max_batch=64, budget=2048)
    assert [i for run in runs for i in run] == list(range(len(tokens)))
    for run in runs:
        assert len(run) <= 64
        assert len(run) == 1 or len(run) * tokens[run.stop - 1] <= 2048
    assert [len(r) for r in runs if tokens[r.start] == 256] == [8, 8, 4]
    assert plan_runs([5000], 64, 2048) == [range(0, 1)]  # one text always makes a run


def test_long_texts_are_embedded_in_small_runs_with_the_same_vectors() -> None:
    real = load_embedder()
    recording = RecordingModel(real._model)
    count = token_counter(real._model)
    assert count is not None
    embedder = Embedder(BUNDLED_MODEL, recording, BUNDLED_DIM, BUNDLED_MAX_TOKENS, count)
    texts = [f"{i} {LONG}" for i in range(20)] + [f"short memory number {i}" for i in range(40)]
    vectors = embedder.embed(texts)
    assert vectors.shape == (60, BUNDLED_DIM)
    for run in recording.runs:
        assert len(run) * max(count(run)) <= TOKEN_BUDGET, [len(t) for t in run]
    assert sum(len(run) for run in recording.runs) == 60
    assert max(len(run) for run in recording.runs) > 8  # short texts still share a run
    # without the model's tokenizer, runs are planned on a generous estimate
    guessing = Embedder(BUNDLED_MODEL, RecordingModel(real._model), BUNDLED_DIM, BUNDLED_MAX_TOKENS)
    guessing.embed(texts)
    for run in guessing._model.runs:
        longest = max(estimated_tokens(t, BUNDLED_MAX_TOKENS) for t in run)
        assert len(run) * longest <= TOKEN_BUDGET, [len(t) for t in run]
    # The same vectors as one text at a time; tolerance: padding inside a run changes the
    # float sums in the last bits (measured differences ~1e-7).
    alone = np.stack([real.embed([t])[0] for t in texts[::7]])
    np.testing.assert_allclose(vectors[::7], alone, atol=1e-5)


async def wait_until(condition: Any, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        await asyncio.sleep(0.01)


async def test_a_batch_beyond_the_concurrent_limit_is_refused(service: Any) -> None:
    def batch(tag: str) -> list[dict[str, Any]]:
        return [{"content": f"{tag} {i} {LONG}", "skip_dedup": True} for i in range(8)]

    running = [asyncio.create_task(service.remember_batch(batch(f"b{i}"))) for i in range(2)]
    await wait_until(lambda: service.batches_in_flight == MAX_CONCURRENT_BATCHES, 30, "2 batches")
    with pytest.raises(Busy) as refused:
        await service.remember_batch(batch("third"))
    assert refused.value.status == 429 and refused.value.retry_after == BATCH_RETRY_AFTER
    assert "retry in" in refused.value.message
    stored = await asyncio.gather(*running)
    assert all(r.success for results in stored for r in results)
    assert service.batches_in_flight == 0
    after = await service.remember_batch(batch("later"))  # the slots are free again
    assert all(r.success for r in after)


def test_daemon_answers_429_with_retry_after(tmp_path: Any) -> None:
    daemon = start_daemon(tmp_path)
    try:
        answers: list[httpx.Response] = []

        def post(tag: str) -> None:
            items = [{"content": f"{tag} {i} {LONG}", "skip_dedup": True} for i in range(12)]
            answers.append(
                LOCAL.post(f"{daemon.url}/v1/remember/batch", json={"memories": items}, timeout=300)
            )

        threads = [threading.Thread(target=post, args=(f"b{i}",)) for i in range(2)]
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 60
        while LOCAL.get(f"{daemon.url}/v1/health").json()["batches"]["in_flight"] < 2:
            assert time.monotonic() < deadline, "the two batches never ran at once"
            time.sleep(0.02)
        third = LOCAL.post(
            f"{daemon.url}/v1/remember/batch",
            json={"memories": [{"content": "one more"}]},
            timeout=30,
        )
        for thread in threads:
            thread.join(300)
        assert third.status_code == 429
        assert third.headers["Retry-After"] == "2"
        assert "retry in 2 s" in third.json()["error"]
        assert [a.status_code for a in answers] == [200, 200]
        assert LOCAL.get(f"{daemon.url}/v1/health").json()["batches"]["in_flight"] == 0
    finally:
        daemon.stop()
