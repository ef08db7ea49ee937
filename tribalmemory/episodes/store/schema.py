"""The episode database's tables (DDL) and the migration of an older database at open."""

from __future__ import annotations

import sqlite3

SCHEMA = """
CREATE TABLE IF NOT EXISTS episodes (
    id TEXT PRIMARY KEY,
    title TEXT NOT NULL,
    title_source TEXT NOT NULL,            -- keyword | llm | user
    summary TEXT NOT NULL DEFAULT '',
    summary_kind TEXT NOT NULL DEFAULT 'extractive',   -- llm | extractive
    summary_status TEXT NOT NULL DEFAULT 'current',    -- current | pending
    summary_memory_id TEXT,
    llm_summary TEXT NOT NULL DEFAULT '',  -- last LLM summary (base of cheap updates)
    llm_summary_mark INTEGER,              -- membership rowid covered by the last LLM summary
    needs_full INTEGER NOT NULL DEFAULT 0, -- a removal made the LLM summary stale
    since_regen INTEGER NOT NULL DEFAULT 0,-- memories added since the last full regeneration
    status TEXT NOT NULL,                  -- active | closed | archived
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    closed_at REAL,
    last_activity REAL NOT NULL,           -- newest member's created_at (memory time)
    parent_episode_id TEXT,
    metadata TEXT NOT NULL DEFAULT '{}',
    user_metadata TEXT NOT NULL DEFAULT '{}',  -- fields set by PATCH: kept over engine metadata
    structured TEXT NOT NULL DEFAULT '{}', -- task, outcome, decisions, events, lessons, metrics
    project TEXT NOT NULL DEFAULT 'default' -- the project of every member
);
CREATE INDEX IF NOT EXISTS episodes_status ON episodes(status, last_activity);
CREATE INDEX IF NOT EXISTS episodes_project ON episodes(project, last_activity);
CREATE TABLE IF NOT EXISTS memberships (
    memory_id TEXT PRIMARY KEY,            -- a memory is in at most one episode
    episode_id TEXT NOT NULL REFERENCES episodes(id) ON DELETE CASCADE,
    memory_time REAL NOT NULL,             -- the memory's created_at
    joined_at REAL NOT NULL,
    score REAL,                            -- detector score when it joined (null: manual)
    surprise REAL
);
CREATE INDEX IF NOT EXISTS memberships_episode ON memberships(episode_id, memory_time);
CREATE TABLE IF NOT EXISTS detections (
    memory_id TEXT PRIMARY KEY,
    state TEXT NOT NULL,                   -- pending | seed | standalone | assigned
    memory_time REAL NOT NULL,
    hint TEXT                              -- LLM title suggestion for a seed
);
CREATE INDEX IF NOT EXISTS detections_state ON detections(state, memory_time);
CREATE TABLE IF NOT EXISTS jobs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL,                    -- detect | classify | summary | link
    key TEXT NOT NULL,                     -- memory id or episode id
    payload TEXT NOT NULL DEFAULT '{}',
    not_before REAL NOT NULL,
    created_at REAL NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    gen INTEGER NOT NULL DEFAULT 0         -- bumped when the job is re-armed while queued
);
CREATE UNIQUE INDEX IF NOT EXISTS jobs_unique ON jobs(kind, key);
CREATE INDEX IF NOT EXISTS jobs_due ON jobs(not_before);
CREATE INDEX IF NOT EXISTS jobs_kind_due ON jobs(kind, not_before);  -- a kind's jobs not yet due
CREATE TABLE IF NOT EXISTS job_counts (    -- jobs per kind, kept by the triggers below: the
    kind TEXT PRIMARY KEY,                 -- write path reads a count without walking a
    n INTEGER NOT NULL                     -- backlog of queued jobs (recounted at open)
) WITHOUT ROWID;
CREATE TRIGGER IF NOT EXISTS job_counts_insert AFTER INSERT ON jobs BEGIN
    INSERT INTO job_counts VALUES (NEW.kind, 1) ON CONFLICT(kind) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER IF NOT EXISTS job_counts_delete AFTER DELETE ON jobs BEGIN
    UPDATE job_counts SET n = n - 1 WHERE kind = OLD.kind;
END;
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS term_counts (   -- the detector's word counts (online IDF)
    project TEXT NOT NULL,
    term TEXT NOT NULL,
    count INTEGER NOT NULL,
    PRIMARY KEY (project, term)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS history (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    episode_id TEXT NOT NULL,              -- kept after the episode is merged or deleted
    at REAL NOT NULL,
    actor TEXT NOT NULL,                   -- user | detector | consolidation
    action TEXT NOT NULL,
    details TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX IF NOT EXISTS history_episode ON history(episode_id, id);
CREATE TABLE IF NOT EXISTS pins (
    memory_id TEXT NOT NULL,
    episode_id TEXT NOT NULL,
    kind TEXT NOT NULL,                    -- in (placed by the user) | out (removed by the user)
    at REAL NOT NULL,
    PRIMARY KEY (memory_id, episode_id)
);
CREATE INDEX IF NOT EXISTS pins_episode ON pins(episode_id);
CREATE TABLE IF NOT EXISTS sessions (
    session TEXT PRIMARY KEY,              -- a client session (MCP session, REST session field)
    episode_id TEXT NOT NULL,
    topic TEXT NOT NULL,
    started_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS conversations ( -- each ingested conversation's latest turn (sittings)
    project TEXT NOT NULL,
    conversation TEXT NOT NULL,
    memory_id TEXT NOT NULL,
    memory_time REAL NOT NULL,
    PRIMARY KEY (project, conversation)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS conversations_memory ON conversations(memory_id);
CREATE TABLE IF NOT EXISTS entities (     -- derived from mentions (store/entities.py)
    project TEXT NOT NULL,
    name TEXT NOT NULL,                    -- canonical name (entities.canonical)
    kind TEXT NOT NULL,                    -- the kind most mentions have
    first_seen REAL NOT NULL,              -- memory time of the first and last mention
    last_seen REAL NOT NULL,
    aliases TEXT NOT NULL DEFAULT '[]',    -- the surfaces seen, as written
    mentions INTEGER NOT NULL,             -- memories naming it
    doubted INTEGER NOT NULL DEFAULT 0,    -- 1: a name the LLM's records left out (DOUBTED)
    PRIMARY KEY (project, name)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS entities_mentions ON entities(project, mentions DESC, name);
CREATE TABLE IF NOT EXISTS mentions (      -- each entity a memory names
    project TEXT NOT NULL,
    name TEXT NOT NULL,
    memory_id TEXT NOT NULL,
    memory_time REAL NOT NULL,
    kind TEXT NOT NULL,
    surfaces TEXT NOT NULL DEFAULT '[]',   -- as written in this memory
    source TEXT NOT NULL DEFAULT 'rules',  -- rules (the extraction) | llm (a summary's record)
    sure INTEGER NOT NULL DEFAULT 1,       -- 0: the extraction was unsure of it (confidence.py)
    PRIMARY KEY (project, name, memory_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS mentions_memory ON mentions(memory_id);
CREATE TABLE IF NOT EXISTS reviewed (      -- what an LLM's final record read (store/entities.py)
    memory_id TEXT PRIMARY KEY,
    names TEXT NOT NULL DEFAULT '[]'       -- the canonical names that record gave (JSON)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS kind_words (   -- acronyms a memory uses as a kind of thing (NRFs)
    project TEXT NOT NULL,
    word TEXT NOT NULL,                    -- the acronym (NRF): it names nothing alone
    memory_id TEXT NOT NULL,
    PRIMARY KEY (project, word, memory_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS kind_words_memory ON kind_words(memory_id);
CREATE TABLE IF NOT EXISTS entity_waiting ( -- memories whose entities are still to be found
    seq INTEGER PRIMARY KEY,               -- arrival order: the order they are found in
    memory_id TEXT NOT NULL UNIQUE
);
CREATE TABLE IF NOT EXISTS causal_links ( -- what led to what (store/causes.py, docs/causes.md)
    id TEXT PRIMARY KEY,                   -- cl-<12 hex>
    project TEXT NOT NULL,
    cause TEXT NOT NULL,                   -- episode:<id> | memory:<id>
    effect TEXT NOT NULL,
    confidence REAL NOT NULL,              -- 0..1
    source TEXT NOT NULL,                  -- llm | reference | order | user
    note TEXT NOT NULL DEFAULT '',
    owner TEXT,                            -- the episode that derived it (null: a user's link)
    created_at REAL NOT NULL,
    UNIQUE (project, cause, effect, source)
);
CREATE INDEX IF NOT EXISTS causal_links_cause ON causal_links(cause);
CREATE INDEX IF NOT EXISTS causal_links_effect ON causal_links(effect);
CREATE INDEX IF NOT EXISTS causal_links_owner ON causal_links(owner);
CREATE TABLE IF NOT EXISTS sittings (      -- episodes that are a conversation's sittings
    episode_id TEXT PRIMARY KEY REFERENCES episodes(id) ON DELETE CASCADE
) WITHOUT ROWID;
"""

ADDED_COLUMNS = {
    "episodes": {
        "user_metadata": "TEXT NOT NULL DEFAULT '{}'",
        "structured": "TEXT NOT NULL DEFAULT '{}'",
        "project": "TEXT NOT NULL DEFAULT 'default'",  # episodes from before projects
    },
    "mentions": {
        "source": "TEXT NOT NULL DEFAULT 'rules'",  # mentions from before the LLM's
        "sure": "INTEGER NOT NULL DEFAULT 1",  # found before the sure model: as before, sure
    },
    "entities": {"doubted": "INTEGER NOT NULL DEFAULT 0"},  # no record had read them
}
"""Columns added after the first release: a database that lacks one gets it at open
(``ALTER TABLE ... ADD COLUMN`` with its default), before the schema's indexes are used."""


def migrate(db: sqlite3.Connection) -> None:
    """Add the :data:`ADDED_COLUMNS` an older database lacks (its tables exist already)."""
    for table, columns in ADDED_COLUMNS.items():
        present = {r[1] for r in db.execute(f"PRAGMA table_info({table})")}
        if not present:  # a new database: the schema creates the table whole
            continue
        for name, definition in columns.items():
            if name not in present:
                db.execute(f"ALTER TABLE {table} ADD COLUMN {name} {definition}")
