"""The detector's running statistics on disk: the word counts sit in a table of their own and
are written by the change, so a save costs the words of the last decisions, not the whole
vocabulary; they survive a restart and a forgotten memory's words leave the file."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from tribalmemory.config import config_from_dict
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
