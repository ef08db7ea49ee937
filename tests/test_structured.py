"""The structured episode record's pure rules: LLM validation, the cue-word fallback, merging
user edits, metrics, and the derived lesson/decision memories."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tribalmemory.episodes import derived, structured
from tribalmemory.episodes.store import EpisodeRow
from tribalmemory.models import Memory, SourceType

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def memory(mid: str, content: str, hours: float = 0, source: str = "codex") -> Memory:
    at = T0 + timedelta(hours=hours)
    return Memory(mid, content, SourceType.AUTO_CAPTURE, source, ["auth"], None, at, at)


MEMS = [
    memory("m1", "Users are logged out at random: 401 error after refresh.", 0),
    memory("m2", "Root cause found: two tabs rotate the same refresh token.", 2, "claude"),
    memory("m3", "We decided to add a 10 s grace window because tabs race.", 26),
    memory("m4", "Fixed: grace window shipped. Lesson: test multi-tab flows.", 27),
]
IDS = [m.id for m in MEMS]


def test_valid_llm_parts_are_kept_whole() -> None:
    answer = {
        "task": "Stop random logouts",
        "outcome": "success",
        "outcome_reason": "the fix shipped",
        "decisions": [{"chosen": "grace window", "rationale": "tabs race", "memory_ids": ["m3"]}],
        "events": [{"type": "error", "text": "401s", "memory_ids": ["m1"]}],
        "lessons": [{"text": "Test multi-tab flows", "memory_ids": ["m4"]}],
    }
    parts, dropped = structured.from_llm(answer, IDS)
    assert dropped == []
    assert parts["task"] == "Stop random logouts" and parts["outcome"] == "success"
    assert parts["decisions"][0]["chosen"] == "grace window"
    assert parts["decisions"][0]["options"] == [] and parts["decisions"][0]["context"] == ""
    assert parts["lessons"] == [{"text": "Test multi-tab flows", "memory_ids": ["m4"]}]


def test_invalid_llm_parts_are_dropped_and_named() -> None:
    answer = {
        "task": 42,  # wrong type
        "outcome": "great",  # not an outcome
        "decisions": [
            {"chosen": "ok", "memory_ids": ["m3"]},
            {"chosen": "invented", "memory_ids": ["m-invented"]},  # not in the episode
            {"chosen": "uncited", "memory_ids": []},  # rests on nothing
        ],
        "events": [{"type": "party", "text": "x", "memory_ids": ["m1"]}],  # unknown type
        "lessons": [{"text": f"lesson {i}", "memory_ids": ["m4"]} for i in range(13)],  # > 12
        "mood": "happy",
    }
    parts, dropped = structured.from_llm(answer, IDS)
    assert "task" not in parts and "outcome" not in parts and "lessons" not in parts
    assert [d["chosen"] for d in parts["decisions"]] == ["ok"]
    assert parts["events"] == []
    text = "\n".join(dropped)
    for fragment in (
        "task must be a string",
        "outcome must be one of",
        "decisions[1].memory_ids names memories not in the episode: m-invented",
        "decisions[2].memory_ids is empty",
        "events[0].type must be one of",
        "lessons has 13 items; at most 12",
        "unexpected keys ['mood']",
    ):
        assert fragment in text
    assert structured.from_llm("nonsense", IDS) == (
        {},
        ["structured: not an object (all of it dropped)"],
    )


def test_an_over_long_text_drops_its_item() -> None:
    answer = {
        "lessons": [{"text": "x" * 301, "memory_ids": ["m1"]}, {"text": "ok", "memory_ids": ["m1"]}]
    }
    parts, dropped = structured.from_llm(answer, IDS)
    assert parts["lessons"] == [{"text": "ok", "memory_ids": ["m1"]}]
    assert "lessons[0].text is 301 characters; at most 300" in dropped[0]


def test_fallback_reads_the_documented_cues() -> None:
    record = structured.fallback(MEMS, "closed")
    assert [(e["type"], e["memory_ids"]) for e in record["events"]] == [
        ("error", ["m1"]),
        ("discovery", ["m2"]),
        ("decision", ["m3"]),
        ("fix", ["m4"]),  # "fixed" wins over "shipped" (milestone)
    ]
    assert record["decisions"][0]["rationale"] == "tabs race."
    assert record["lessons"] == [{"text": "Lesson: test multi-tab flows.", "memory_ids": ["m4"]}]
    assert (record["outcome"], record["outcome_reason"]) == (
        "success",
        "the last error/fix event is a fix",
    )
    assert record["task"] == "Users are logged out at random: 401 error after refresh."
    assert structured.fallback(MEMS, "active")["outcome"] == "ongoing"
    assert structured.fallback(MEMS[:1], "closed")["outcome"] == "failure"
    assert structured.fallback([memory("q", "Some plain note.")], "closed")["outcome"] == "unknown"


CHAT = [  # chit-chat with the old cue words in passing: none of it states a decision or lesson
    "Caroline: I'll always remember our camping trip, we never want to miss the stars.",
    "Melanie: Agreed, Caroline! It's a big decision, but I think I'm ready.",
    "Melanie: Sharing our experiences isn't always easy. What do you hope to do next time?",
    "Tom: I chose the blue one because it matches the couch.",
    "Decision deferred to after the scope call with Marek.",
    "Lesson learned? Not sure yet, we haven't decided anything.",
]


def test_chit_chat_with_cue_words_gives_no_lesson_and_no_decision() -> None:
    """Issue 39: "always", "never", "agreed" read off chit-chat made 402 lesson and decision
    memories of which 34 were of use."""
    mems = [memory(f"c{i}", text, i) for i, text in enumerate(CHAT)]
    record = structured.fallback(mems, "closed")
    assert record["lessons"] == [] and record["decisions"] == []
    assert all(e["type"] != "decision" for e in record["events"])


@pytest.mark.parametrize(
    ("text", "kind", "said"),
    [
        ("Decision: we use Postgres.", "decisions", "Decision: we use Postgres."),
        ("Ana: Decision: we use Postgres.", "decisions", "Decision: we use Postgres."),
        ("Decided with Tom: convert once, in payments-api.", "decisions", None),
        ("Fiona decided we absorb the loss.", "decisions", None),
        ("We're going with Redis for the limiter.", "decisions", None),
        ("Lesson: signature checks must see the raw bytes.", "lessons", None),
        (
            "Deployed. Next time run the migration first.",
            "lessons",
            "Next time run the migration first.",
        ),
        ("Same lesson as in May: one place converts.", "lessons", None),
    ],
)
def test_a_stated_decision_or_lesson_gives_one(text: str, kind: str, said: str | None) -> None:
    record = structured.fallback([memory("s1", text)], "closed")
    other = "lessons" if kind == "decisions" else "decisions"
    assert len(record[kind]) == 1 and record[other] == []
    item = record[kind][0]
    assert item["chosen" if kind == "decisions" else "text"] == (said or text)
    assert item["memory_ids"] == ["s1"]
    if kind == "decisions":
        assert record["events"][0]["type"] == "decision"


def test_metrics_are_computed_from_memories_and_events() -> None:
    record = structured.finish(structured.fallback(MEMS, "closed"), None, MEMS, "extractive")
    assert record["metrics"] == {
        "duration_seconds": 27 * 3600.0,
        "active_days": 2,
        "memory_count": 4,
        "participants": {"claude": 1, "codex": 3},
        "tags": ["auth"],
        "errors": 1,
        "fixes": 1,
        "decisions": 1,
        "lessons": 1,
        "first_memory_at": "2026-03-02T09:00:00Z",
        "last_memory_at": "2026-03-03T12:00:00Z",
    }
    # Items are timed by the first memory they cite, and ordered by it.
    assert [e["at"] for e in record["events"]][:2] == [
        "2026-03-02T09:00:00Z",
        "2026-03-02T11:00:00Z",
    ]


def test_user_edits_survive_a_fresh_record_and_removed_memories_drop_items() -> None:
    first = structured.finish(structured.fallback(MEMS, "closed"), None, MEMS, "extractive")
    edit = structured.from_user({"lessons": [{"text": "Mine", "memory_ids": ["m2"]}]}, IDS)
    edited = structured.finish(edit, first, MEMS, "extractive", edited=edit)
    assert edited["lessons"] == [{"text": "Mine", "memory_ids": ["m2"]}]
    assert edited["edited"] == ["lessons"]
    llm = {"lessons": [{"text": "LLM lesson", "memory_ids": ["m4"]}], "task": "LLM task"}
    regenerated = structured.finish(llm, edited, MEMS, "llm")
    assert regenerated["lessons"] == [{"text": "Mine", "memory_ids": ["m2"]}]  # kept
    assert regenerated["task"] == "LLM task" and regenerated["source"] == "llm"
    without_m2 = [m for m in MEMS if m.id != "m2"]
    pruned = structured.finish({}, regenerated, without_m2, "llm")
    assert pruned["lessons"] == [] and pruned["metrics"]["lessons"] == 0
    assert all("m2" not in e["memory_ids"] for e in pruned["events"])


def test_a_record_as_read_can_be_sent_back_as_an_edit() -> None:
    """A read gives each decision and event its causal ``links``: sent back in an edit (a
    client's read-modify-write) they are accepted and left out, never stored in the record."""
    link = {"id": "cl-1", "cause": "memory:m1", "effect": "memory:m3", "source": "user"}
    read = {
        "decisions": [{"chosen": "Grace window", "memory_ids": ["m3"], "links": [link]}],
        "events": [{"type": "fix", "text": "Fixed", "memory_ids": ["m4"], "links": []}],
    }
    edit = structured.from_user(read, IDS)
    assert "links" not in edit["decisions"][0] and "links" not in edit["events"][0]
    assert edit["decisions"][0]["chosen"] == "Grace window"


@pytest.mark.parametrize(
    ("patch", "fragment"),
    [
        ({}, "structured must be an object with some of"),
        ({"mood": "x"}, "unknown field(s) mood"),
        ({"outcome": "meh"}, "structured.outcome must be one of"),
        ({"task": ""}, "structured.task is empty"),
        ({"lessons": [{"text": "x", "memory_ids": ["nope"]}]}, "not in the episode: nope"),
        ({"events": [{"type": "error"}]}, "missing ['text']"),
        ({"decisions": "yes"}, "structured.decisions must be a list"),
    ],
)
def test_user_edits_are_validated_strictly(patch: dict, fragment: str) -> None:
    with pytest.raises(structured.InvalidPart) as caught:
        structured.from_user(patch, IDS)
    assert fragment in str(caught.value)


def row(episode_id: str = "ep-1") -> EpisodeRow:
    return EpisodeRow(
        episode_id,
        "Logouts",
        "user",
        "",
        "extractive",
        "current",
        None,
        "",
        None,
        False,
        0,
        "closed",
        0.0,
        0.0,
        None,
        0.0,
        None,
        first_activity=T0.timestamp(),
    )


def test_derived_memories_have_stable_ids_and_episode_tags() -> None:
    record = structured.finish(structured.fallback(MEMS, "closed"), None, MEMS, "extractive")
    made = derived.memories(row(), record, MEMS, "Logouts", T0)
    assert [m.source_type for m in made] == [SourceType.LESSON, SourceType.DECISION]
    assert [m.id for m in made] == derived.expected_ids("ep-1", record)
    assert made[0].content == "Lesson (episode: Logouts): Lesson: test multi-tab flows."
    assert made[1].content.startswith("Decision (episode: Logouts): We decided")
    assert made[0].tags == ["auth", "episode:ep-1"] and made[0].metadata["episode_id"] == "ep-1"
    assert made[0].created_at == MEMS[3].created_at
    assert derived.derived_id("ep-1", "lessons", 0) != derived.derived_id("ep-2", "lessons", 0)
    shorter = dict(record, lessons=[])
    assert derived.stale_ids("ep-1", record, shorter) == [derived.derived_id("ep-1", "lessons", 0)]
