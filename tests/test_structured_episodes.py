"""Structured episodes end to end: extraction in the final summary call through the real
litellm client and the fake provider, validation, the fallback without an LLM, user edits,
lessons and decisions as memories, and the list filters."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from fakellm import FakeLLM, Recorded, Reply, default_reply
from helpers_runtime import settle

from tribalmemory.episodes import derived
from tribalmemory.errors import InvalidInput, NotFound, PayloadTooLarge
from tribalmemory.runtime import Runtime
from tribalmemory.timeutil import utc_now

STORY = [
    (
        "Users are logged out at random: 401 error after a token refresh in `auth/refresh.py`.",
        "2026-03-02T09:00:00Z",
    ),
    ("Root cause found: two tabs rotate the same refresh token at once.", "2026-03-02T11:00:00Z"),
    ("We decided to add a 10 s grace window because browser tabs race.", "2026-03-03T09:00:00Z"),
    (
        "Fixed: the grace window works now. Lesson learned: test multi-tab flows.",
        "2026-03-03T10:00:00Z",
    ),
]


@pytest.fixture
def no_llm(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_BASE"):
        monkeypatch.delenv(name, raising=False)


async def closed_episode(rt: Runtime, source: str = "codex") -> tuple[str, list[str]]:
    ids = []
    for text, at in STORY:
        result = await rt.api.remember(text, source_instance=source, tags=["auth"], created_at=at)
        ids.append(result["memory_id"])
    created = await rt.api.episode_create("Random logouts", ids)
    await settle(rt)
    await rt.api.episode_close(created["episode_id"])
    await settle(rt)
    return created["episode_id"], ids


async def lesson_hits(rt: Runtime, query: str) -> list[dict[str, Any]]:
    found = await rt.api.recall(query, limit=20, source_types=["LESSON", "DECISION"])
    return [hit["memory"] for hit in found["results"]]


async def test_closing_extracts_the_record_in_the_final_summary_call(
    engine_runtime, fake_llm_env: FakeLLM
) -> None:
    rt = await engine_runtime()
    episode_id, ids = await closed_episode(rt)
    # No extra call: every request is one of the summary purposes, one final for the close.
    purposes = [r.purpose for r in fake_llm_env.requests]
    assert set(purposes) <= {"classify", "merge", "update", "regenerate", "final"}
    assert purposes.count("final") == 1
    final = fake_llm_env.by_purpose("final")[0]
    assert '"structured"' in final.messages[0]["content"]
    episode = (await rt.api.episode_get(episode_id))["episode"]
    record = episode["structured"]
    assert record["source"] == "llm" and record["outcome"] == "success"
    assert episode["outcome"] == "success" and episode["task"] == "Random logouts"
    assert [e["type"] for e in record["events"]] == ["error", "discovery", "decision", "fix"]
    assert [e["memory_ids"] for e in record["events"]] == [[i] for i in ids]
    assert record["events"][0]["at"] == "2026-03-02T09:00:00Z"
    assert record["lessons"] == [{"text": STORY[3][0].split(". ")[0], "memory_ids": [ids[3]]}]
    assert record["metrics"]["participants"] == {"codex": 4}
    assert record["metrics"]["errors"] == 1 and record["metrics"]["fixes"] == 1
    assert record["metrics"]["active_days"] == 2
    decisions = await rt.api.episode_decisions(episode_id)
    assert decisions["count"] == 1 and decisions["decisions"][0]["memory_ids"] == [ids[2]]
    # The fake's metadata names no participant: the members' own instance is still there.
    assert episode["metadata"]["participants"] == ["codex"]
    listed = await rt.api.episodes_list(participant="codex", status="closed")
    assert [e["id"] for e in listed["episodes"]] == [episode_id]


async def test_invalid_parts_of_the_answer_are_dropped_with_a_warning(
    engine_runtime, fake_llm_env: FakeLLM, caplog: pytest.LogCaptureFixture
) -> None:
    def answer(request: Recorded) -> Reply:
        reply = default_reply(request)
        if request.purpose != "final":
            return reply
        data = json.loads(reply.content or "{}")
        data["structured"]["lessons"] = [{"text": "made up", "memory_ids": ["not-a-member"]}]
        data["structured"]["decisions"] = "we decided things"
        data["structured"]["outcome"] = "victory"
        return Reply.json(data)

    fake_llm_env.responder = answer
    rt = await engine_runtime()
    with caplog.at_level(logging.WARNING, logger="tribalmemory.episodes"):
        episode_id, ids = await closed_episode(rt)
    record = (await rt.api.episode_get(episode_id))["episode"]["structured"]
    assert record["lessons"] == []  # the invented citation dropped the lesson
    # The episode's record said "ongoing" before the close; the answer's outcome is invalid,
    # so the closed episode gets the rules' outcome (the last error/fix cue is a fix).
    assert record["outcome"] == "success"
    assert record["decisions"][0]["memory_ids"] == [ids[2]]  # kept from before, not half-parsed
    warnings = "\n".join(r.getMessage() for r in caplog.records if r.levelno == logging.WARNING)
    assert "not in the episode: not-a-member" in warnings
    assert "decisions must be a list (dropped)" in warnings
    assert "outcome must be one of" in warnings
    assert fake_llm_env.by_purpose("final") and len(fake_llm_env.by_purpose("final")) == 1


async def test_facts_the_llm_reads_off_an_episode_are_memories_of_their_own(
    engine_runtime, fake_llm_env: FakeLLM, caplog: pytest.LogCaptureFixture
) -> None:
    """mem0-style facts: the final summary's answer lists standalone facts, each a FACT
    memory that recall finds, never shown beside the memory it was read from, and gone with
    that memory; an invented citation drops the fact with a warning."""
    fact = "Refresh tokens of the web app live 14 days and rotate on every use."

    def answer(request: Recorded) -> Reply:
        reply = default_reply(request)
        if request.purpose != "final":
            return reply
        data = json.loads(reply.content or "{}")
        first = json.loads(json.dumps(data["structured"]["events"][0]["memory_ids"]))
        data["structured"]["facts"] = [
            {"text": fact, "memory_ids": first},
            {"text": "Made up.", "memory_ids": ["not-a-member"]},
        ]
        return Reply.json(data)

    fake_llm_env.responder = answer
    rt = await engine_runtime()
    with caplog.at_level(logging.WARNING, logger="tribalmemory.episodes"):
        episode_id, ids = await closed_episode(rt)
    record = (await rt.api.episode_get(episode_id))["episode"]["structured"]
    assert record["facts"] == [{"text": fact, "memory_ids": [ids[0]]}]
    assert "facts[1].memory_ids" in caplog.text and "not-a-member" in caplog.text
    found = await rt.api.recall("how long do refresh tokens live", source_types=["FACT"])
    facts = [h["memory"] for h in found["results"]]
    assert [m["content"] for m in facts] == [f"Fact (episode: Random logouts): {fact}"]
    assert facts[0]["episode_id"] == episode_id and facts[0]["episode_status"] == "fact"
    plain = await rt.api.recall("401 error after a token refresh auth/refresh.py", limit=10)
    shown = {h["memory"]["id"] for h in plain["results"]}
    assert ids[0] in shown and facts[0]["id"] not in shown  # not beside its source
    await rt.api.forget(ids[0])
    gone = await rt.api.recall("how long do refresh tokens live", source_types=["FACT"])
    assert gone["results"] == []
    assert (await rt.api.episode_get(episode_id))["episode"]["structured"]["facts"] == []


async def test_without_an_llm_the_cue_rules_fill_the_record(engine_runtime, no_llm) -> None:
    rt = await engine_runtime()
    assert rt.api.health()["llm"]["state"] != "ready"
    episode_id, ids = await closed_episode(rt)
    episode = (await rt.api.episode_get(episode_id))["episode"]
    record = episode["structured"]
    assert record["source"] == "extractive"
    assert [e["type"] for e in record["events"]] == ["error", "discovery", "decision", "fix"]
    assert record["outcome"] == "success"
    assert record["decisions"][0]["rationale"] == "browser tabs race."
    assert record["lessons"][0]["memory_ids"] == [ids[3]]
    listed = await rt.api.episodes_list(entity="auth/refresh.py", outcome="success")
    assert [e["id"] for e in listed["episodes"]] == [episode_id]


async def test_user_edits_survive_regeneration(engine_runtime, fake_llm_env: FakeLLM) -> None:
    rt = await engine_runtime()
    episode_id, ids = await closed_episode(rt)
    edit = {
        "task": "Stop multi-tab logouts",
        "lessons": [{"text": "Refresh tokens need a grace window", "memory_ids": [ids[1]]}],
    }
    answered = await rt.api.episode_update(episode_id, structured=edit)
    record = answered["episode"]["structured"]
    assert record["edited"] == ["lessons", "task"] and record["task"] == edit["task"]
    await rt.api.episode_regenerate(episode_id)
    await settle(rt)
    assert len(fake_llm_env.by_purpose("final")) == 2  # the regeneration did call the LLM
    record = (await rt.api.episode_get(episode_id))["episode"]["structured"]
    assert record["task"] == "Stop multi-tab logouts"
    assert [lesson["text"] for lesson in record["lessons"]] == [edit["lessons"][0]["text"]]
    assert [e["type"] for e in record["events"]][-1] == "fix"  # not edited: the LLM's
    found = await lesson_hits(rt, "grace window refresh tokens")
    assert any("Refresh tokens need a grace window" in m["content"] for m in found)
    assert not any("test multi-tab flows" in m["content"] for m in found)  # replaced


async def test_an_outcome_set_by_hand_drops_the_reason_given_for_the_old_one(
    engine_runtime, no_llm
) -> None:
    """The rules' reason ("the episode is still active") stood beside a user's "success"."""
    rt = await engine_runtime()
    stored = [(await rt.api.remember(text))["memory_id"] for text in ("Deploy failed.", "Fixed.")]
    episode_id = (await rt.api.episode_create("Deploy", stored))["episode_id"]
    await settle(rt)
    before = (await rt.api.episode_get(episode_id))["episode"]["structured"]
    assert before["outcome"] == "ongoing" and before["outcome_reason"]
    edited = await rt.api.episode_update(episode_id, structured={"outcome": "success"})
    record = edited["episode"]["structured"]
    assert (record["outcome"], record["outcome_reason"]) == ("success", None)
    both = {"outcome": "failure", "outcome_reason": "rolled back"}
    record = (await rt.api.episode_update(episode_id, structured=both))["episode"]["structured"]
    assert (record["outcome"], record["outcome_reason"]) == ("failure", "rolled back")
    await rt.api.episode_regenerate(episode_id)
    await settle(rt)
    record = (await rt.api.episode_get(episode_id))["episode"]["structured"]
    assert (record["outcome"], record["outcome_reason"]) == ("failure", "rolled back")


async def test_bad_edits_are_refused(engine_runtime, no_llm) -> None:
    rt = await engine_runtime()
    episode_id, _ = await closed_episode(rt)
    with pytest.raises(InvalidInput, match="not in the episode"):
        await rt.api.episode_update(
            episode_id, structured={"lessons": [{"text": "x", "memory_ids": ["nope"]}]}
        )
    with pytest.raises(InvalidInput, match="nothing to change"):
        await rt.api.episode_update(episode_id)
    with pytest.raises(NotFound):
        await rt.api.episode_update("ep-0000000000000000", structured={"task": "x"})


async def test_lessons_and_decisions_are_recalled_and_go_with_their_episode(
    engine_runtime, no_llm
) -> None:
    rt = await engine_runtime()
    episode_id, ids = await closed_episode(rt)
    found = await lesson_hits(rt, "test multi-tab flows lesson")
    kinds = {m["source_type"] for m in found}
    assert kinds == {"LESSON", "DECISION"}
    lesson = next(m for m in found if m["source_type"] == "LESSON")
    assert "episode:" + episode_id in lesson["tags"] and "auth" in lesson["tags"]
    assert lesson["episode_id"] == episode_id and lesson["episode_status"] == "lesson"
    plain = await rt.api.recall("lesson learned multi-tab flows", limit=10)
    shown = {h["memory"]["id"] for h in plain["results"]}
    # the memory the lesson was read from answers; the lesson is not shown beside it
    # (service/ranking.py); once that memory is gone, plain recall would show the lesson
    assert ids[3] in shown and lesson["id"] not in shown
    with pytest.raises(InvalidInput, match="is a lesson of episode") as caught:
        await rt.api.forget(lesson["id"])
    # what to do, at every door (the message named an HTTP route to agents and CLI users)
    assert caught.value.detail == (
        f"update: tribal_episode_update (structured), PATCH /v1/episodes/{episode_id} "
        f"(structured); delete: tribal_episode_delete, DELETE /v1/episodes/{episode_id}, "
        f"tribalmemory episodes delete {episode_id}"
    )
    # correcting it names the episode and its doors too (the hint had a literal {id})
    with pytest.raises(InvalidInput, match="is a lesson of episode") as caught:
        await rt.api.correct(lesson["id"], "test multi-tab flows in CI")
    assert caught.value.detail == (
        f"update: tribal_episode_update (structured), PATCH /v1/episodes/{episode_id} (structured)"
    )
    summary = (await rt.api.episode_get(episode_id))["episode"]["summary_memory_id"]
    with pytest.raises(InvalidInput, match="is the summary of episode") as caught:
        await rt.api.correct(summary, "a better summary")
    assert caught.value.detail == (
        f"regenerate: tribal_episode_regenerate, POST /v1/episodes/{episode_id}/regenerate, "
        f"tribalmemory episodes regenerate {episode_id}"
    )
    with pytest.raises(InvalidInput, match="is the summary of episode") as caught:
        await rt.api.forget(summary)
    regenerate = (
        f"regenerate: tribal_episode_regenerate, POST /v1/episodes/{episode_id}/regenerate, "
        f"tribalmemory episodes regenerate {episode_id}; delete: "
    )
    assert caught.value.detail.startswith(regenerate)
    # Forgetting the memory the lesson rests on removes the lesson at once.
    await rt.api.forget(ids[3])
    assert not [m for m in await lesson_hits(rt, "multi-tab flows") if m["source_type"] == "LESSON"]
    record = (await rt.api.episode_get(episode_id))["episode"]["structured"]
    assert record["lessons"] == [] and record["metrics"]["memory_count"] == 3
    # Deleting the episode removes its decisions too.
    await rt.api.episode_delete(episode_id)
    assert await lesson_hits(rt, "grace window decided") == []


async def test_a_merge_leaves_no_lesson_or_decision_of_the_absorbed_episode(
    engine_runtime, no_llm
) -> None:
    rt = await engine_runtime()
    episode_id, _ = await closed_episode(rt)
    absorbed = [m["id"] for m in await lesson_hits(rt, "grace window multi-tab lesson")]
    assert len(absorbed) == 2  # its lesson and its decision
    bigger = []
    for i in range(5):  # the larger episode survives the merge
        text = f"Checkout retries step {i}: the payment provider times out under load."
        stored = await rt.api.remember(text, created_at=f"2026-03-04T0{i}:00:00Z")
        bigger.append(stored["memory_id"])
    survivor = (await rt.api.episode_create("Checkout timeouts", bigger))["episode_id"]
    merged = await rt.api.episode_merge(episode_id, survivor)
    assert merged["episode_id"] == survivor and merged["absorbed_id"] == episode_id
    for memory_id in absorbed:  # no memory left pointing at an episode that is gone
        with pytest.raises(NotFound):
            await rt.api.get_memory(memory_id)
    await settle(rt)
    for hit in await lesson_hits(rt, "grace window multi-tab lesson"):
        assert hit["episode_id"] == survivor


async def test_a_crash_mid_rewrite_is_reconciled(engine_runtime, no_llm) -> None:
    """A lesson memory no record accounts for (a crash between writing and recording) is
    deleted at start; a missing one is written again by a queued summary job."""
    rt = await engine_runtime()
    episode_id, _ = await closed_episode(rt)
    row = rt.episodes.store.episodes.get(episode_id)
    expected = derived.expected_ids(episode_id, row.structured)
    stray = derived.derived_id(episode_id, "lessons", 7)
    host = rt.episodes.engine.state.host
    members = await host.get_memories(rt.episodes.store.memberships.member_ids(episode_id))
    stray_memory = derived.memories(row, row.structured, members, row.title, utc_now())[0]
    stray_memory.id = stray
    await host.write_owned([stray_memory])
    await host.delete_owned([expected[0]])
    await rt.episodes.engine.upkeep.reconcile()
    await settle(rt)
    present = {m.id for m in await host.get_memories([*expected, stray])}
    assert present == set(expected)


async def test_list_filters(engine_runtime, no_llm) -> None:
    rt = await engine_runtime()
    episode_id, _ = await closed_episode(rt)

    async def closed(**filters: Any) -> list[str]:
        # The detector's own episode of these memories was emptied by episode_create: only
        # the closed one counts here.
        found = await rt.api.episodes_list(status="closed", **filters)
        return [e["id"] for e in found["episodes"]]

    assert await closed(task="LOGGED out") == [episode_id]
    assert await closed(task="nothing like it") == []
    assert await closed(since="2026-03-03", until="2026-03-04") == [episode_id]
    assert await closed(since="2026-03-04") == []
    assert await closed(until="2026-03-01") == []
    assert await closed(tag="auth") == [episode_id]
    assert await closed(participant="claude") == []
    assert await closed(tool="pytest") == []
    assert await closed(outcome="failure") == []
    with pytest.raises(InvalidInput, match="outcome must be one of success, failure"):
        await rt.api.episodes_list(outcome="won")
    with pytest.raises(InvalidInput, match="since must not be after until"):
        await rt.api.episodes_list(since="2026-03-05", until="2026-03-01")
    with pytest.raises(InvalidInput, match="since"):
        await rt.api.episodes_list(since="yesterday")


FAILED_STORY = [
    ("Postgres migration: copy job started for the billing tables.", "2026-03-05T09:00:00Z"),
    ("Lesson learned: never run the copy job without a statement timeout.", "2026-03-05T10:00:00Z"),
    (
        "The copy job failed again with a lock timeout error; migration abandoned.",
        "2026-03-05T11:00:00Z",
    ),
]


async def context_world(rt: Runtime) -> tuple[str, str, str]:
    """A closed successful episode, a closed failed one and an active one."""
    good, _ = await closed_episode(rt)
    ids = [
        (await rt.api.remember(t, tags=["db"], created_at=at))["memory_id"]
        for t, at in FAILED_STORY
    ]
    failed = (await rt.api.episode_create("Postgres migration", ids))["episode_id"]
    await settle(rt)
    await rt.api.episode_close(failed)
    await settle(rt)
    memory = await rt.api.remember("We decided to use feature flags for the new checkout.")
    active = (await rt.api.episode_create("New checkout", [memory["memory_id"]]))["episode_id"]
    await settle(rt)
    return good, failed, active


async def test_context_holds_active_failed_and_relevant_lessons(engine_runtime, no_llm) -> None:
    from tribalmemory.llm.client import load_litellm

    rt = await engine_runtime()
    good, failed, active = await context_world(rt)
    found = await rt.api.context(query="copy job statement timeout", budget_tokens=2000)
    assert found["truncated"] is False and found["token_model"] == "openai/gpt-4o-mini"
    assert active in [a["id"] for a in found["active"]]
    checkout = next(a for a in found["active"] if a["id"] == active)
    assert checkout["last_decision"].startswith("We decided to use feature flags")
    assert [f["id"] for f in found["failed"]] == [failed]
    assert found["failed"][0]["lessons"] == [FAILED_STORY[1][0]]
    assert found["lessons"][0]["episode_id"] == failed  # the most relevant lesson first
    assert found["lessons"][0]["relevance"] > 0
    assert "Recently failed:\n- Postgres migration" in found["text"]
    # Counted with litellm's counter for the model, as the answer says.
    counted = load_litellm().token_counter(model=found["token_model"], text=found["text"])
    assert counted <= found["used_tokens"] <= 2000


async def test_context_stays_within_a_tight_budget(engine_runtime, no_llm) -> None:
    from tribalmemory.llm.client import load_litellm

    rt = await engine_runtime()
    await context_world(rt)
    full = await rt.api.context(budget_tokens=2000)
    tight = await rt.api.context(budget_tokens=60)
    assert tight["truncated"] is True and tight["used_tokens"] <= 60
    shown = len(tight["active"]) + len(tight["failed"]) + len(tight["lessons"])
    assert 0 < shown < len(full["active"]) + len(full["failed"]) + len(full["lessons"])
    counter = load_litellm().token_counter
    assert counter(model=tight["token_model"], text=tight["text"]) <= 60
    assert full["lessons"] and all(item["relevance"] is None for item in full["lessons"])
    for bad, fragment in ((10, "budget_tokens"), (20001, "budget_tokens"), ("x", "integer")):
        with pytest.raises(InvalidInput, match=fragment):
            await rt.api.context(budget_tokens=bad)
    with pytest.raises(PayloadTooLarge, match="query has 2001 characters"):
        await rt.api.context(query="x" * 2001)


PATTERN_SET = [
    # (title, outcome, lessons, decisions): three successes teach the same lesson; a retry
    # decision failed twice out of three; one unrelated episode.
    ("Orders table migration", "success", ["Set a statement timeout on database migrations"], []),
    ("Users table migration", "success", ["Always set a statement timeout for DB migrations"], []),
    ("Billing table migration", "success", ["Database migrations need a statement timeout"], []),
    ("Flaky CI on the cache step", "failure", [], ["Retry the flaky CI job until it passes"]),
    ("Flaky CI on the lint step", "failure", [], ["Retry the flaky CI job until it is green"]),
    ("Flaky CI on the deploy step", "success", [], ["Retry flaky CI jobs until they pass"]),
    ("Office coffee machine", "success", ["Descale the coffee machine every Friday"], []),
]


async def pattern_world(rt: Runtime) -> dict[str, str]:
    ids = {}
    for index, (title, outcome, lessons, decisions) in enumerate(PATTERN_SET):
        memory = await rt.api.remember(f"Notes on {title.lower()}, part {index}.")
        eid = (await rt.api.episode_create(title, [memory["memory_id"]]))["episode_id"]
        await settle(rt)
        await rt.api.episode_close(eid)
        await settle(rt)
        edit: dict[str, Any] = {"outcome": outcome, "lessons": [{"text": t} for t in lessons]}
        edit["decisions"] = [{"chosen": c, "context": "a flaky CI job"} for c in decisions]
        await rt.api.episode_update(eid, structured=edit)
        ids[title] = eid
    return ids


async def test_patterns_group_lessons_and_decisions_with_success_rates(
    engine_runtime, no_llm
) -> None:
    rt = await engine_runtime()
    ids = await pattern_world(rt)
    found = (await rt.api.patterns())["patterns"]
    by_titles = {frozenset(e["title"] for e in p["episodes"]): p for p in found}
    migrations = by_titles[frozenset(t for t, *_ in PATTERN_SET[:3])]
    assert migrations["kind"] == "pattern"
    assert (migrations["success"], migrations["failure"], migrations["success_rate"]) == (3, 0, 1.0)
    assert "statement timeout" in migrations["statement"].lower()
    retry = by_titles[frozenset(t for t, *_ in PATTERN_SET[3:6])]
    assert retry["kind"] == "antipattern" and retry["success_rate"] == 0.3333  # rounded to 4 places
    assert retry["trigger"] == "a flaky CI job" and retry["action"].startswith("Retry")
    assert len(found) == 2  # the coffee lesson rests on one episode: no pattern
    anti = await rt.api.patterns(kind="antipattern")
    assert [p["id"] for p in anti["patterns"]] == [retry["id"]]
    relevant = await rt.api.patterns(query="migration statement timeout", limit=1)
    assert [p["id"] for p in relevant["patterns"]] == [migrations["id"]]
    assert relevant["patterns"][0]["relevance"] > 0
    context = await rt.api.context(query="migration statement timeout")
    assert context["patterns"][0]["id"] == migrations["id"]
    assert "- Pattern: " in context["text"] and "success 100% over 3 episodes" in context["text"]
    # Patterns follow the episodes: a deleted one leaves its pattern's evidence.
    await rt.api.episode_delete(ids["Billing table migration"])
    after = {
        frozenset(e["id"] for e in p["episodes"]) for p in (await rt.api.patterns())["patterns"]
    }
    assert frozenset({ids["Orders table migration"], ids["Users table migration"]}) in after
    for bad, fragment in (({"kind": "rule"}, "kind must be one of"), ({"limit": 0}, "limit")):
        with pytest.raises(InvalidInput, match=fragment):
            await rt.api.patterns(**bad)
