"""The LLM-free fallback: titles, summaries and metadata from the memories themselves."""

from datetime import UTC, datetime, timedelta

import numpy as np

from tribalmemory.episodes import extractive
from tribalmemory.models import Memory, SourceType


def memory(i: int, content: str, tags=(), instance="codex") -> Memory:
    at = datetime(2025, 3, 3, 9, tzinfo=UTC) + timedelta(days=i)
    return Memory(
        id=f"m{i}",
        content=content,
        source_type=SourceType.AUTO_CAPTURE,
        source_instance=instance,
        tags=list(tags),
        context=None,
        created_at=at,
        updated_at=at,
    )


def test_summary_has_range_tags_and_time_ordered_points():
    mems = [
        memory(0, "Refresh tokens rotate on every use.", ["auth"]),
        memory(2, "Second tab presents a revoked token and kills the family.", ["auth", "bug"]),
        memory(5, "Added a 10 second grace window in `auth/tokens.py`.", ["auth"]),
    ]
    vectors = np.eye(3, dtype=np.float32)
    text = extractive.extractive_summary(mems, vectors)
    assert text.startswith("3 memories, 2025-03-03 to 2025-03-08.")
    assert "Tags: auth, bug" in text
    lines = text.splitlines()[1:]
    assert [line[2:12] for line in lines] == ["2025-03-03", "2025-03-05", "2025-03-08"]
    assert len(text) <= extractive.SUMMARY_CHARS


def test_summary_of_one_memory_counts_one_memory():
    """Issue 40.10: a one-memory summary began "1 memories"."""
    text = extractive.extractive_summary([memory(0, "Deploys go out on Tuesdays.")], np.eye(1))
    assert text.splitlines()[0] == "1 memory, 2025-03-03."


def test_summary_is_bounded_for_long_memories():
    mems = [memory(i, "word " * 400) for i in range(20)]
    vectors = np.random.default_rng(0).normal(size=(20, 8)).astype(np.float32)
    text = extractive.extractive_summary(mems, vectors)
    assert len(text) <= extractive.SUMMARY_CHARS
    assert len(text.splitlines()) <= 1 + extractive.MAX_POINTS


def test_keyword_title_is_the_most_representative_first_sentence():
    mems = [
        memory(0, "Celery queue backlog delays digests. More text follows."),
        memory(1, "Unrelated."),
        memory(2, "Celery queue backlog again."),
    ]
    vectors = np.array([[1, 0], [0, 1], [0.95, 0.05]], dtype=np.float32)
    title = extractive.keyword_title(mems, vectors)
    assert title in ("Celery queue backlog delays digests.", "Celery queue backlog again.")
    assert len(extractive.keyword_title([memory(0, "x " * 200)], np.ones((1, 2)))) <= 80


def test_fallback_metadata_reads_participants_entities_and_tags():
    mems = [
        memory(
            0, "See `rotate_refresh` in auth/tokens.py for ticket #4471", ["auth"], "claude-code"
        ),
        memory(1, "Deployed", ["auth", "deploy"], "codex"),
    ]
    meta = extractive.fallback_metadata(mems, "closed")
    assert meta["participants"] == ["claude-code", "codex"]
    assert {"rotate_refresh", "auth/tokens.py", "#4471"} <= set(meta["entities"])
    assert meta["tags"][0] == "auth"
    assert meta["outcome"] == "unknown"
    assert extractive.fallback_metadata(mems, "active")["outcome"] == "ongoing"


def test_interim_summary_keeps_the_llm_text_and_lists_new_memories():
    mems = [
        memory(4, "Deployed the grace window fix to production."),
        memory(5, "Error rate back to normal."),
    ]
    text = extractive.interim_summary("The multi-tab logout came from token reuse.", mems)
    lines = text.splitlines()
    assert lines[0] == "The multi-tab logout came from token reuse."
    assert lines[1] == "New since this summary:"
    assert lines[2:] == [
        "- 2025-03-07: Deployed the grace window fix to production.",
        "- 2025-03-08: Error rate back to normal.",
    ]
