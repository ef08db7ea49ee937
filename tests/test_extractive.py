"""The LLM-free fallback: titles, summaries and metadata from the memories themselves."""

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from tribalmemory.episodes import detector, extractive
from tribalmemory.episodes.distinctive import Background
from tribalmemory.models import Memory, SourceType

DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


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


def test_summary_gives_the_span_once_and_points_in_time_order_without_dates():
    """Issue 39: a date on every line made any question naming a month or a year pull the
    summary; the span is given once, in the first line."""
    mems = [
        memory(0, "Refresh tokens rotate on every use.", ["auth"]),
        memory(2, "Second tab presents a revoked token and kills the family.", ["auth", "bug"]),
        memory(5, "Added a 10 second grace window in `auth/tokens.py`.", ["auth"]),
    ]
    vectors = np.eye(3, dtype=np.float32)
    text = extractive.extractive_summary(mems, vectors)
    assert text.startswith("3 memories, 2025-03-03 to 2025-03-08.")
    assert "Tags: auth, bug" in text
    lines = text.splitlines()
    assert not any(DATE.search(line) for line in lines[1:]), text
    order = [next(i for i, line in enumerate(lines) if m.content in line) for m in mems]
    assert order == sorted(order)
    assert lines[-1] == "Latest: Added a 10 second grace window in `auth/tokens.py`."
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
    # header, About, Decided, the points, Latest
    assert len(text.splitlines()) <= 3 + extractive.MAX_POINTS + 1


# A thread of a chat (what the payouts job's lock did), among a stream of other talk by the
# same people. Written for this test.
THREAD = [
    "Ana: The nightly payouts batch is stuck again, it waits on an advisory lock.",
    "Ben: pg_stat_activity shows the advisory lock held by an idle pgbouncer connection.",
    "Ana: So pgbouncer in transaction mode hands the advisory lock to another client?",
    "Ben: Yes: advisory locks are session level and pgbouncer reuses the server connection.",
    "Ana: Decision: we use a lease row instead of the advisory lock for the payouts batch.",
    "Ben: Lease row shipped; the payouts batch ran at 02:10 last night.",
]
STREAM = [
    "Ana: Lunch at the new ramen place on Friday?",
    "Ben: Can you review my PR for the settings page before the standup?",
    "Ana: The settings page PR looks good, merged it.",
    "Ben: Friday works, the ramen place near the office.",
    "Ana: I am off on Monday, Ben takes the on-call.",
    "Ben: The standup moves to 10:00 next week.",
]


def chat(texts: list[str], start: int = 0) -> list[Memory]:
    return [memory(start + i, text, instance="chat-import") for i, text in enumerate(texts)]


def background(mems: list[Memory]) -> Background:
    """The project's running word counts after these memories, as the engine keeps them."""
    context = detector.DetectorContext()
    for m in mems:
        features = detector.MemoryFeatures.from_text(
            m.id, np.ones(2), m.content, m.tags, m.source_instance, m.created_at
        )
        detector.update_context(context, features)
    return Background.of(context, mems)


def test_title_and_summary_name_the_threads_distinctive_terms():
    """Issue 39: every title was a speaker's first name ("Ana"), cut at "Ana: "."""
    thread = chat(THREAD, 10)
    known = background(chat(STREAM) + thread)
    vectors = np.eye(len(thread), dtype=np.float32)
    title = extractive.keyword_title(thread, vectors, known)
    words = set(re.findall(r"[a-z_]+", title.lower()))
    assert {"advisory", "pgbouncer", "payouts"} & words, title
    assert not {"ana", "ben"} & words, title
    about = next(
        line
        for line in extractive.extractive_summary(thread, vectors, known).splitlines()
        if line.startswith("About: ")
    )
    for term in ("advisory lock", "pgbouncer", "payouts batch", "lease row"):
        assert term in about, about
    assert len(title) <= extractive.TITLE_CHARS


def test_a_decade_written_as_a_plural_is_a_term_like_any_other():
    """``1920s`` counts as ``1920``, which the background's tokens leave out when written
    alone: a new episode's title failed on it (max() of nothing), and with it the memory's
    episode."""
    thread = [memory(i, f"The 1920s mains on Elm Street burst again ({i}).") for i in range(3)]
    vectors = np.eye(len(thread), dtype=np.float32)
    title = extractive.keyword_title(thread, vectors, background(thread))
    assert "1920s" in title, title


def test_a_title_is_never_a_speakers_name_nor_the_first_clause():
    """Each memory is "Name: text" (chat turns, the speaker as source instance or only in the
    text): the names never make the title, even without a background."""
    turns = [
        ("Caroline", "Caroline: I signed up for a pottery class, the clay is so calming."),
        ("Melanie", "Melanie: A pottery class! Did you make a bowl on the wheel?"),
        ("Caroline", "Caroline: A clay bowl, yes, it goes into the kiln on Tuesday."),
    ]
    for by_instance in (True, False):
        mems = [
            memory(i, text, instance=who if by_instance else "import")
            for i, (who, text) in enumerate(turns)
        ]
        title = extractive.keyword_title(mems, np.eye(3, dtype=np.float32))
        assert title not in ("Caroline", "Melanie", "Untitled episode")
        assert not {"caroline", "melanie"} & set(title.lower().replace(",", " ").split())
        assert "pottery" in title.lower() and "clay" in title.lower(), title
    assert len(extractive.keyword_title([memory(0, "x " * 200)], np.ones((1, 2)))) <= 80


def test_a_prefix_naming_a_ticket_or_a_file_is_a_term_not_a_speaker():
    """ "PAY-142: ..." is about PAY-142: the ticket both memories name leads the title (it
    was cut off as if a speaker said the rest)."""
    texts = [
        "We decided to move the payments queue from RabbitMQ to SQS; PAY-142 tracks it.",
        "PAY-142: dead-letter queue configured, retries 5, visibility timeout 60s.",
    ]
    mems = [memory(i, text) for i, text in enumerate(texts)]
    title = extractive.keyword_title(mems, np.eye(2, dtype=np.float32))
    assert title.startswith("PAY-142"), title
    texts.append("PAY-142: cut over to SQS on Tuesday, RabbitMQ queue drained.")  # leads twice
    mems = [memory(i, text) for i, text in enumerate(texts)]
    title = extractive.keyword_title(mems, np.eye(3, dtype=np.float32))
    assert title.startswith("PAY-142"), title


def test_the_example_of_docs_episodes_md_is_what_the_fixture_gives():
    doc = (Path(__file__).parent.parent / "docs" / "episodes.md").read_text(encoding="utf-8")
    block = doc.split("tests/test_extractive.py`", 1)[1].split("```text\n", 1)[1]
    shown = [line.strip() for line in block.split("```", 1)[0].splitlines() if line.strip()]
    thread = chat(THREAD, 10)
    known = background(chat(STREAM) + thread)
    vectors = np.eye(len(thread), dtype=np.float32)
    assert extractive.extractive_summary(thread, vectors, known).splitlines() == shown
    assert f'titled\n  "{extractive.keyword_title(thread, vectors, known)}"' in doc


def test_summary_says_what_was_decided_and_how_it_ended():
    thread = chat(THREAD, 10)
    text = extractive.extractive_summary(
        thread, np.eye(len(thread), dtype=np.float32), background(chat(STREAM) + thread)
    )
    lines = text.splitlines()
    assert "Decided: we use a lease row instead of the advisory lock" in text
    assert lines[-1] == "Latest: " + THREAD[-1]
    assert sum(1 for line in lines if DATE.search(line)) == 1  # the span, once
    assert "\n- " + THREAD[-1] not in text  # the latest memory is not told twice


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
    assert lines[1] == "New since this summary (2025-03-07 to 2025-03-08):"
    assert lines[2:] == [
        "- Deployed the grace window fix to production.",
        "- Error rate back to normal.",
    ]


def test_a_title_keeps_a_name_in_code_as_written_and_capitalises_a_word():
    """``query_tag`` opening a title stayed ``Query_tag``: a name in code keeps its case; a
    word opening one takes a capital. In each thread only that term recurs."""
    code = [
        "Nightly models now set query_tag.",
        "Finance reads query_tag from the bill.",
        "Three ad hoc jobs lack query_tag.",
    ]
    words = [
        "Checkout spent its retry budget.",
        "Raised the retry budget to five.",
        "Payments never hit the retry budget.",
    ]
    for texts, opening in ((code, "query_tag"), (words, "Retry budget")):
        thread = [memory(i, text) for i, text in enumerate(texts)]
        vectors = np.eye(len(thread), dtype=np.float32)
        title = extractive.keyword_title(thread, vectors, background(thread))
        assert title.startswith(opening), title
