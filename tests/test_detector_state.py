"""The detector's running statistics on disk: the word counts sit in a table of their own and
are written by the change, so a save costs the words of the last decisions, not the whole
vocabulary; they survive a restart and a forgotten memory's words leave the file."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path

from tribalmemory.config import config_from_dict
from tribalmemory.episodes.state import DETECTOR_SAVE_EVERY
from tribalmemory.episodes.store import EpisodeStore
from tribalmemory.runtime import Runtime, start_runtime

NOTES = [
    "Kestrel deploys fail when the artifact bucket quota is exhausted.",
    "Raised the artifact bucket quota for kestrel deploys to two terabytes.",
    "Zanzibarite is the codename of the new billing export.",
]


async def start(data: Path) -> Runtime:
    config = config_from_dict(
        {"data_dir": str(data), "episodes": {"detector_strategy": "embedding"}}
    )
    return await start_runtime(config, run_scheduler=False)


def saved(data: Path) -> tuple[dict, dict[str, int]]:
    db = sqlite3.connect(data / "episodes.sqlite3")
    try:
        row = db.execute("SELECT value FROM meta WHERE key = 'detector_context'").fetchone()
        rows = db.execute("SELECT term, count FROM term_counts WHERE project = 'default'")
        return json.loads(row[0]), dict(rows.fetchall())
    finally:
        db.close()


async def test_word_counts_survive_a_restart_in_their_own_table(tmp_path: Path) -> None:
    data = tmp_path / "data"
    rt = await start(data)
    ids = [(await rt.api.remember(text))["memory_id"] for text in NOTES]
    counts = dict(rt.episodes.engine.state.matcher.context().doc_freq)
    await rt.stop()

    meta, table = saved(data)
    assert "doc_freq" not in meta["projects"]["default"]  # the small part only
    assert table == counts and table["kestrel"] == 2 and table["zanzibarite"] == 1

    again = await start(data)
    try:
        assert again.episodes.engine.state.matcher.context().doc_freq == counts
        await again.api.forget(ids[2])  # its rare word leaves the statistics and the file
    finally:
        await again.stop()
    _, table = saved(data)
    assert "zanzibarite" not in table and table["kestrel"] == 2


async def test_a_store_that_kept_the_counts_in_the_context_moves_them_to_the_table(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    rt = await start(data)
    await rt.api.remember(NOTES[0])
    counts = dict(rt.episodes.engine.state.matcher.context().doc_freq)
    await rt.stop()
    meta, _ = saved(data)
    meta["projects"]["default"]["doc_freq"] = counts  # as an older version saved it
    db = sqlite3.connect(data / "episodes.sqlite3")
    with db:  # a word only the table has (written by a newer version before a downgrade) goes
        db.execute("INSERT INTO term_counts VALUES ('default', 'stale', 3)")
        db.execute("UPDATE meta SET value = ? WHERE key = 'detector_context'", (json.dumps(meta),))
    db.close()

    again = await start(data)
    assert again.episodes.engine.state.matcher.context().doc_freq == counts
    await again.stop()
    meta, table = saved(data)
    assert "doc_freq" not in meta["projects"]["default"] and table == counts


async def test_the_statistics_are_saved_at_a_background_turn_not_in_the_request(
    tmp_path: Path,
) -> None:
    """Every 25 decisions the statistics are saved, no longer inside the request that made the
    25th: at the next background turn. A request in flight throughout (and no forced turn)
    holds the save back; once requests stop, it is written. A daemon stopped while it waits
    saves at stop."""
    data = tmp_path / "data"
    rt = await start(data)
    state = rt.episodes.engine.state
    activity = rt.service.activity
    activity.busy_interval = 3600.0  # no turn forced under load during the test
    with activity.request():
        for index in range(DETECTOR_SAVE_EVERY):
            await rt.api.remember(f"Note {index}: the {WORDS[index]} dashboard moved to v{index}.")
        assert state.matcher.updates == DETECTOR_SAVE_EVERY
        pending = state.pending_save
        assert pending is not None and not pending.done()
        assert saved_counts(data) == {}  # not written by the requests
    await asyncio.wait_for(pending, 30)  # the first quiet moment gives the turn
    assert saved_counts(data) == dict(state.matcher.context().doc_freq)

    with activity.request():  # 25 more, and a stop before any turn
        for index in range(DETECTOR_SAVE_EVERY):
            await rt.api.remember(f"Again {index}: {WORDS[index]} alerts page the on-call.")
        assert state.pending_save is not None
        counts = dict(state.matcher.context().doc_freq)
        await rt.stop()
    assert saved_counts(data) == counts


WORDS = (
    "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november "
    "oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee"
).split()


def saved_counts(data: Path) -> dict[str, int]:
    db = sqlite3.connect(data / "episodes.sqlite3")
    try:
        return dict(db.execute("SELECT term, count FROM term_counts WHERE project = 'default'"))
    finally:
        db.close()


def test_word_counts_are_written_and_deleted_whatever_the_word(tmp_path: Path) -> None:
    """All the words of a save go in one statement as JSON: words JSON must escape (quotes,
    backslashes, other scripts), words that read as numbers, and a count of 0 deleting the
    word, each project apart."""
    store = EpisodeStore(tmp_path / "episodes.sqlite3")
    words = {'say "hi"': 2, "back\\slash": 1, "naïve": 3, "数据库": 4, "42": 5, "null": 6}
    try:
        with store.transaction() as db:
            store.terms.write(db, "default", words)
            store.terms.write(db, "other", {"naïve": 7})
        assert store.terms.counts() == {"default": words, "other": {"naïve": 7}}
        with store.transaction() as db:
            store.terms.write(db, "default", {"naïve": 0, "42": 9, "数据库": 0, "new": 1})
        assert store.terms.counts() == {
            "default": {'say "hi"': 2, "back\\slash": 1, "42": 9, "null": 6, "new": 1},
            "other": {"naïve": 7},
        }
    finally:
        store.close()
