"""An episode that mixes two threads is split when the LLM says so twice (``split_checks``).

Through the real engine, model and litellm client against the fake LLM server. Reviews are off
(``llm_doubt_share`` 0): the detector decides by embeddings, and its LLM calls are merge and
split checks. Two threads (auth tokens, a database migration) are merged early by a scripted
merge check; both keep growing in the merged episode; the split check that looks at it then
cuts it by embeddings, and the scripted LLM decides whether the parts are two threads.
"""

from __future__ import annotations

from fakellm import Recorded, Reply, default_reply, merge_checks, merges, split_parts, splits
from test_episodes_compose import runtime_factory  # noqa: F401
from test_episodes_engine import remember, settle

SETTINGS = {
    "detector_strategy": "hybrid",
    "llm_doubt_share": 0.0,
    "classify_calls_per_memory": 1.0,
    "classify_batch_wait_seconds": 0,
    "merge_checks": True,
    "split_checks": True,
}

AUTH = [
    "Customers are logged out at random when the web app is open in several tabs; Sentry "
    "shows 401 'refresh token revoked' right after a refresh.",
    "Refresh tokens rotate on every use, and a reused refresh token revokes the whole token "
    "family, which logs the user out everywhere.",
    "Two browser tabs call /auth/refresh at the same moment: the second presents the already "
    "rotated refresh token and triggers the reuse detection logout.",
    "Fix for the multi-tab logout: accept the previous refresh token for a 10 second grace "
    "window after rotation.",
    "Refresh token grace window deployed; the 401 refresh token revoked errors in Sentry "
    "dropped to zero for multi-tab users.",
]
DB = [
    "Planning the migration of the main database from MySQL 8 to PostgreSQL 16 with pgloader.",
    "pgloader rehearsal of the MySQL to Postgres migration: 3 tables failed on zero dates.",
    "Postgres migration: rewrote the MySQL specific GROUP_CONCAT queries for PostgreSQL.",
    "MySQL to PostgreSQL cutover scheduled for Saturday; the pgloader run takes 40 minutes.",
    "PostgreSQL cutover done: pgloader copied all MySQL tables, replication lag zero.",
    "After the Postgres migration, VACUUM ANALYZE on the big tables and the MySQL box retired.",
]


class Script:
    """The scripted LLM: the auth and database episodes are one thread (merge checks, either
    way round); a split check's parts are two threads when one part holds only auth notes and
    the other only database notes (``two_when_clean``), else one thread."""

    def __init__(self, two_when_clean: bool = True, confirm: bool = True) -> None:
        self.pair: list[str] = []
        self.auth: set[str] = set()
        self.db: set[str] = set()
        self.two_when_clean = two_when_clean
        self.confirm = confirm
        self.split_calls = 0

    def clean(self, first: list[str], second: list[str]) -> bool:
        sides = {frozenset(first) <= self.auth, frozenset(second) <= self.auth}
        others = {frozenset(first) <= self.db, frozenset(second) <= self.db}
        return sides == {True, False} and others == {True, False}

    def __call__(self, request: Recorded) -> Reply:
        if request.purpose == "merge":
            found = []
            for checked in merge_checks(request.text):
                pair = self.pair
                other = pair[1] if checked == pair[0] else pair[0] if checked == pair[1] else None
                found.append((checked, other))
            return Reply.json(merges(*found))
        if request.purpose == "split":
            self.split_calls += 1
            answer = self.two_when_clean and (self.split_calls == 1 or self.confirm)
            parts = split_parts(request.text)
            return Reply.json(splits(*((e, answer and self.clean(*p)) for e, p in parts.items())))
        return default_reply(request)


async def merged_early(rt, script: Script) -> tuple[str, list[str]]:  # noqa: ANN001
    """Three auth notes and four database notes, merged into one episode by the merge check
    when the database episode reaches 4. The merged episode and the database notes."""
    for i, text in enumerate(AUTH[:3]):
        script.auth.add((await remember(rt, text, 3, 9 + i))["memory_id"])
    script.pair.append((await rt.api.get_memory(next(iter(script.auth))))["episode_id"])
    db = [(await remember(rt, text, 3, 12 + i))["memory_id"] for i, text in enumerate(DB[:4])]
    script.db.update(db)
    db_episode = (await rt.api.get_memory(db[0]))["episode_id"]
    script.pair.append(db_episode)
    await settle(rt)
    episodes = (await rt.api.episodes_list())["episodes"]
    assert [(e["id"], e["memory_count"]) for e in episodes] == [(db_episode, 7)]  # merged
    return db_episode, db


async def both_grow(rt, script: Script) -> None:  # noqa: ANN001
    """Two more auth notes and two more database notes, interleaved, the same day."""
    for i, (auth, db) in enumerate(zip(AUTH[3:], DB[4:], strict=True)):
        script.auth.add((await remember(rt, auth, 3, 16 + 2 * i))["memory_id"])
        script.db.add((await remember(rt, db, 3, 17 + 2 * i))["memory_id"])


async def merged_then_grown(rt, script: Script) -> str:  # noqa: ANN001
    """Both threads merged early, then both grow in the merged episode. The merged episode."""
    merged, _ = await merged_early(rt, script)
    await both_grow(rt, script)
    return merged


async def test_two_threads_merged_early_are_split_once_both_have_grown(
    runtime_factory,  # noqa: F811
    fake_llm_env,
) -> None:
    rt = await runtime_factory(**SETTINGS)
    script = Script()
    fake_llm_env.responder = script
    merged = await merged_then_grown(rt, script)
    grown = (await rt.api.episode_get(merged))["episode"]["memory_count"]
    assert grown == len(AUTH) + len(DB)  # both threads grew in the merged episode
    await settle(rt)
    first, second = fake_llm_env.by_purpose("split")
    assert list(split_parts(first.text)) == [merged] == list(split_parts(second.text))
    (keep, move), (again_a, again_b) = (
        split_parts(first.text)[merged],
        split_parts(second.text)[merged],
    )
    assert set(keep) <= script.db and set(move) <= script.auth
    assert set(again_a) <= script.auth and set(again_b) <= script.db  # asked the other way round
    # the larger part (six database notes) keeps the id; the auth notes are a new episode
    episodes = {e["id"]: e for e in (await rt.api.episodes_list())["episodes"]}
    assert len(episodes) == 2
    (split_off,) = set(episodes) - {merged}
    for memory_id in script.db:
        assert (await rt.api.get_memory(memory_id))["episode_id"] == merged
    for memory_id in script.auth:
        assert (await rt.api.get_memory(memory_id))["episode_id"] == split_off
    # the history of both sides
    old = await rt.api.episode_get(merged)
    (split,) = [h for h in old["history"] if h["action"] == "split"]
    assert split["actor"] == "consolidation"
    assert split["details"]["episode_id"] == split_off
    assert set(split["details"]["memory_ids"]) == script.auth
    new = await rt.api.episode_get(split_off)
    assert [(h["action"], h["details"]) for h in new["history"]][:1] == [
        ("split_from", {"episode_id": merged})
    ]
    # both summaries were written again from their own memories only
    assert "refresh" not in old["episode"]["summary"].lower()
    assert "refresh" in new["episode"]["summary"].lower()
    assert "pgloader" not in new["episode"]["summary"].lower()
    found = await rt.api.recall("refresh token logout", limit=50, source_types=["episode_summary"])
    summaries = {r["memory"]["metadata"]["episode_id"] for r in found["results"]}
    assert summaries == {merged, split_off}  # one summary memory each, no orphan
    health = rt.api.health()["episodes"]
    assert health["split_waiting"] == 0


async def test_a_two_threads_answer_that_the_confirmation_denies_splits_nothing(
    runtime_factory,  # noqa: F811
    fake_llm_env,
) -> None:
    rt = await runtime_factory(**SETTINGS)
    script = Script(confirm=False)
    fake_llm_env.responder = script
    merged = await merged_then_grown(rt, script)
    await settle(rt)
    assert len(fake_llm_env.by_purpose("split")) == 2  # asked again, and denied
    (episode,) = (await rt.api.episodes_list())["episodes"]
    assert (episode["id"], episode["memory_count"]) == (merged, len(AUTH) + len(DB))
    assert rt.api.health()["episodes"]["split_waiting"] == 0


async def test_an_episode_the_user_edited_is_never_split(
    runtime_factory,  # noqa: F811
    fake_llm_env,
) -> None:
    """A user edit pins the episode's shape: its split check asks nothing. The user takes a
    database note out of the merged episode (7 -> 6 members); both threads then grow it past 8,
    the size at which it is checked, with parts the LLM would split."""
    rt = await runtime_factory(**SETTINGS)
    script = Script()
    fake_llm_env.responder = script
    merged, db = await merged_early(rt, script)
    await rt.api.episode_remove(merged, db[3])  # the user's edit
    script.db.discard(db[3])
    await both_grow(rt, script)
    await settle(rt)
    (grown,) = (await rt.api.episodes_list())["episodes"]
    assert (grown["id"], grown["memory_count"]) == (merged, 10)
    assert fake_llm_env.by_purpose("split") == []


async def test_a_confirmation_waiting_at_a_restart_is_asked_after_it(
    runtime_factory,  # noqa: F811
    fake_llm_env,
) -> None:
    """The first "two threads" is on disk: the engine stops before the confirmation falls due,
    and the next engine on the same data folder asks it and splits."""
    settings = {**SETTINGS, "classify_batch_wait_seconds": 3600}
    rt = await runtime_factory(**settings)
    script = Script()
    fake_llm_env.responder = script
    await merged_early(rt, script)  # its settle flushes the merge check and its confirmation
    await both_grow(rt, script)
    assert await rt.episodes.worker.drain(30, due_only=True)
    assert len(fake_llm_env.by_purpose("split")) == 1  # the first answer
    assert rt.api.health()["episodes"]["split_waiting"] == 1  # its confirmation waits an hour
    await rt.stop()
    again = await runtime_factory(**settings)
    await settle(again)  # flushes the waiting confirmation
    assert len(fake_llm_env.by_purpose("split")) == 2
    assert len((await again.api.episodes_list())["episodes"]) == 2
    for memory_id in script.auth:
        assert (await again.api.get_memory(memory_id))["episode_id"] not in script.pair
