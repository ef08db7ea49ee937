"""Pure lifecycle rules: summary cadence, idle close, the active cap, archiving, surprise."""

from tribalmemory.episodes import lifecycle
from tribalmemory.episodes.lifecycle import DAY, Activity


def plan(**kw):
    base = dict(status="active", since_regen=1, interval=10, needs_full=False, has_llm_summary=True)
    base.update(kw)
    return lifecycle.plan_summary(**base)


def test_cheap_update_between_regenerations():
    assert plan(since_regen=1) == "update"
    assert plan(since_regen=9) == "update"


def test_full_regeneration_every_interval_and_never_skipped():
    assert plan(since_regen=10) == "regenerate"
    # the counter only grows between regenerations, so overshooting still regenerates
    assert plan(since_regen=13) == "regenerate"


def test_first_summary_and_stale_summary_are_full():
    assert plan(has_llm_summary=False) == "regenerate"
    assert plan(needs_full=True) == "regenerate"
    # a small new episode waits for update_every memories before its first LLM summary
    assert plan(has_llm_summary=False, new_memories=2, update_every=4) == "interim"
    assert plan(has_llm_summary=False, new_memories=4, update_every=4) == "regenerate"
    assert (
        plan(has_llm_summary=False, new_memories=2, update_every=4, needs_full=True) == "regenerate"
    )


def test_closed_episodes_get_a_final_summary():
    assert plan(status="closed") == "final"
    assert plan(status="archived", since_regen=0) == "final"


def test_idle_uses_the_window():
    now = 100 * DAY
    episodes = [
        Activity("a", "active", now - 15 * DAY),
        Activity("b", "active", now - 13 * DAY),
        Activity("c", "closed", now - 30 * DAY),
    ]
    assert lifecycle.idle(episodes, now, 14) == ["a"]
    assert lifecycle.idle(episodes, now, 12) == ["a", "b"]


def test_tick_closes_only_what_is_quiet_in_memory_time_and_in_arrival_time():
    now = 400 * DAY  # the wall clock
    episodes = [
        # live, quiet for 15 days: its memories are old and none was added since
        Activity("quiet", "active", now - 15 * DAY, last_added=now - 15 * DAY),
        # imported a minute ago from a year back: left to the write-time rule
        Activity("importing", "active", now - 365 * DAY, last_added=now - 60.0),
        # added 20 days ago with a memory dated 10 days ago (a late back-fill): not idle yet
        Activity("backfilled", "active", now - 10 * DAY, last_added=now - 20 * DAY),
        Activity("shut", "closed", now - 30 * DAY, last_added=now - 30 * DAY),
    ]
    assert lifecycle.idle_on_tick(episodes, now, 14) == ["quiet"]
    # at write time only memory time counts: the imported episode is idle for a memory of now
    assert lifecycle.idle(episodes, now, 14) == ["quiet", "importing"]
    assert lifecycle.idle_on_tick(episodes, now + 14 * DAY, 14) == [
        "quiet",
        "importing",
        "backfilled",
    ]


def test_chain_horizon_is_the_active_window_plus_the_chain_window_before_the_start():
    # the parent went idle (window after its last memory) at most 48 h before the child began
    assert lifecycle.chain_horizon(100 * DAY, 14, 48) == 84 * DAY
    assert lifecycle.chain_horizon(100 * DAY, 14, 0) == 86 * DAY


def test_over_cap_closes_least_recently_active():
    active = [Activity(f"e{i}", "active", float(i)) for i in range(5)]
    assert lifecycle.over_cap(active, cap=5) == ["e0"]
    assert lifecycle.over_cap(active, cap=3) == ["e0", "e1", "e2"]
    assert lifecycle.over_cap(active, cap=6) == []


def test_archivable_only_closed_and_old_enough():
    now = 200 * DAY
    episodes = [
        Activity("old", "closed", 0, closed_at=now - 91 * DAY),
        Activity("young", "closed", 0, closed_at=now - 10 * DAY),
        Activity("active", "active", 0, closed_at=None),
    ]
    assert lifecycle.archivable(episodes, now, 90) == ["old"]


def test_surprise_is_one_minus_similarity_clamped():
    assert lifecycle.surprise(0.25) == 0.75
    assert lifecycle.surprise(1.3) == 0.0
    assert lifecycle.surprise(-0.5) == 1.0


def test_llm_updates_are_batched_with_interim_summaries_between():
    assert plan(new_memories=1, update_every=3) == "interim"
    assert plan(new_memories=2, update_every=3) == "interim"
    assert plan(new_memories=3, update_every=3) == "update"
    # a full regeneration or a final summary is never postponed by the batching
    assert plan(new_memories=1, update_every=3, since_regen=10) == "regenerate"
    assert plan(new_memories=1, update_every=3, needs_full=True) == "regenerate"
    assert plan(new_memories=0, update_every=3, status="closed") == "final"
