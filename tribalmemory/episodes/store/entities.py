"""The ``entities`` and ``mentions`` tables: which memory names which entity.

``mentions`` is the record (one row per entity a memory names, with the surfaces it used and
its source: ``rules``, the extraction, or ``llm``, a name a summary's record gave that the text
writes);
``entities`` is derived from it, recomputed for the names a change touched (first/last seen,
aliases, mention count, kind), so that forgetting a memory takes away what only it supported.
The episodes of an entity come from a join with ``memberships``, never from a copy.
The acronyms each memory uses as a kind of thing (:mod:`.kind_words`) are written and forgotten
with its mentions, and passed to the extraction with the known names.
``reviewed`` holds the memories an LLM's final record read, with the names that record gave. An
entity no mention vouches for is *doubted* (:data:`DOUBTED`): left out of the list unless asked
for, still found by its name. A mention the rules found vouches when the extraction was sure of
it (``sure``: :mod:`tribalmemory.entities.confidence`) and, for a name, no record read its
memory without giving it; a mention a record gave vouches.
``entity_waiting`` holds the memories whose entities are still to be found (in arrival order;
see :mod:`..entity_work`): a memory leaves it in the transaction that writes its mentions, so a
memory naming nothing is done too."""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from collections.abc import Collection, Iterable

from ...entities.known import RELEASE
from ...entities.mentions import Found
from ...shapes.limits import ENTITY_KINDS
from .kind_words import KindWords
from .table import Table

KINDS = ENTITY_KINDS
"""The extraction's kinds, the more specific first (the order of its rules)."""

KNOWN_NAMES = 200
"""At most this many known names (the most mentioned) are passed to the extraction, and as
many known systems, paths and releases."""

DOUBTED = (
    "NOT EXISTS (SELECT 1 FROM mentions m "
    "LEFT JOIN reviewed r ON r.memory_id = m.memory_id "
    "WHERE m.project = entities.project AND m.name = entities.name AND (m.source != 'rules' "
    "OR EXISTS (SELECT 1 FROM json_each(r.names) g WHERE g.value = m.name) "
    "OR (m.sure AND (r.memory_id IS NULL OR entities.kind != 'name'))))"
)
"""SQL, true for the ``entities`` row when it is doubted: no mention vouches for it. Every
mention is one the rules found and either the extraction was unsure of it (on new domains a
fifth of what the rules find is no entity; the sure model keeps most of those out) or, for a
name (kind ``name``), an LLM's final record read its memory without giving it (the LLM,
reading the thread, did not list it). One mention the extraction was sure of in a memory no
record read, or that a record gave, keeps it. Kept in the row's ``doubted`` column, judged again
whenever the row or a verdict on one of its memories changes, so that the list reads it from
the row."""


Row = tuple[str, str, int, str]
"""An entity row as the known names see it: name, kind, mentions, aliases (JSON)."""


def main_kind(kinds: Counter[str]) -> str:
    """The kind most mentions have; on a tie the more specific (``system`` over ``name``)."""
    return min(kinds, key=lambda k: (-kinds[k], KINDS.index(k) if k in KINDS else len(KINDS)))


def is_known_path(name: str, kind: str) -> bool:
    """Whether an entity is a known path: one with a folder and a dot after it, as a file in a
    folder has (``engine/core/math.h``), whose bare file name then names it."""
    return kind == "path" and "." in name.partition("/")[2]


def is_known_release(name: str, kind: str) -> bool:
    """Whether an entity is a known release: one of three parts or four (``v5.12.0``), whose
    first two (``5.12``) then name a release too."""
    return kind == "version" and RELEASE.fullmatch(name) is not None


def is_known(row: Row | None) -> bool:
    """Whether an entity row is known to the extraction: a name (kind ``name``, in one memory
    or more), a system (``pw-api``, whose first part then starts kin systems: ``pw-fhir``), a
    file path (:func:`is_known_path`) or a release (:func:`is_known_release`)."""
    return row is not None and (
        row[1] in ("name", "system")
        or is_known_path(row[0], row[1])
        or is_known_release(row[0], row[1])
    )


def _aliases(before: sqlite3.Row | None, surfaces: list[str]) -> set[str]:
    """The stored row's aliases and ``surfaces``."""
    return set(json.loads(before[3]) if before is not None else []) | set(surfaces)


def changes_known(before: Row | None, after: Row | None, full: bool) -> bool:
    """Whether a change of one entity row can change the project's known names: it becomes or
    stops being one, or a known name's aliases change; when the known names are ``full`` (the
    :data:`KNOWN_NAMES` limit cut them), a known name's mention count too (the ranking)."""
    was, now = is_known(before), is_known(after)
    if was != now:
        return True
    if not was or before is None or after is None:
        return False
    if before[1] != after[1]:
        return True
    return (after[1] == "name" and before[3] != after[3]) or (full and before[2] != after[2])


class Entities(Table):
    """Reads and writes of the ``entities``, ``mentions`` and ``entity_waiting`` tables. The
    known names of each project are kept in memory (:meth:`known`) and dropped when a change
    can alter them (:func:`changes_known`)."""

    def __init__(self, db: sqlite3.Connection) -> None:
        super().__init__(db)
        self._known: dict[str, tuple[frozenset[str], bool]] = {}
        """project -> (its known names, whether the limit cut them)."""
        self.kind_words = KindWords(db)
        self._reviewing = db.execute("SELECT EXISTS (SELECT 1 FROM reviewed)").fetchone()[0] == 1
        """Whether an LLM's record has read a memory yet: until then a new mention's verdict is
        enough to judge its entity (it vouches, or the entity keeps its verdict), without reading
        the entity's other mentions."""

    # -- writes ------------------------------------------------------------------------------

    def record_memory(
        self,
        db: sqlite3.Connection,
        project: str,
        memory_id: str,
        memory_time: float,
        found: Found,
        kinds: Iterable[str] = (),
        unsure: Collection[str] = (),
    ) -> None:
        """Replace the memory's mentions found by the rules with ``found`` (``unsure``: the
        names of it the extraction was not sure of) and its acronyms used as a kind of thing
        with ``kinds`` (idempotent: a resumed job writes the same rows again) and refresh the
        entities either side names.
        A mention an LLM's record gave (:meth:`add_named`) stays, unless the rules now find
        that name: then theirs replaces it."""
        self._kinds_changed(
            db, project, self.kind_words.replace(db, project, memory_id, set(kinds))
        )
        sources = self.sources_of(memory_id, db)
        before = set(sources)
        rules = {key for key, source in sources.items() if source == "rules"}
        db.execute("DELETE FROM mentions WHERE memory_id = ? AND source = 'rules'", (memory_id,))
        db.executemany(
            "DELETE FROM mentions WHERE memory_id = ? AND project = ? AND name = ?",
            [(memory_id, project, name) for name in found if (project, name) in before],
        )
        self._insert(db, project, memory_id, memory_time, found, "rules", unsure)
        added = {(project, n): (kind, surfaces) for n, (kind, surfaces) in found.items()}
        for key in sorted(set(added) | rules):
            if key in before:  # written again: it may have dropped surfaces, count again
                self._refresh(db, key, None)
            else:
                self._add(db, key, *added[key], memory_time, sure=key[1] not in unsure)

    def _kinds_changed(self, db: sqlite3.Connection, project: str, words: set[str]) -> None:
        """``words`` were added to or taken from the project's acronyms used as a kind of thing
        by one memory: its known set is read again if one of them is now used by that memory
        alone, or by none, or when the limit cut them (the ranking may change)."""
        cached = self._known.get(project)
        if cached is None or not words:
            return
        if cached[1] or any(self.kind_words.uses(db, project, w) <= 1 for w in words):
            del self._known[project]

    def add_named(
        self,
        db: sqlite3.Connection,
        project: str,
        memory_id: str,
        memory_time: float,
        found: Found,
    ) -> None:
        """Mentions an LLM's record gave (source ``llm``): those of ``found`` the memory does
        not mention yet (by the rules or an earlier record); each entity's row updated as a
        new mention updates it."""
        before = self.names_of(memory_id, db)
        new = {n: v for n, v in found.items() if (project, n) not in before}
        self._insert(db, project, memory_id, memory_time, new, "llm")
        for name, (kind, surfaces) in sorted(new.items()):
            self._add(db, (project, name), kind, surfaces, memory_time)

    @staticmethod
    def _insert(
        db: sqlite3.Connection,
        project: str,
        memory_id: str,
        memory_time: float,
        found: Found,
        source: str,
        unsure: Collection[str] = (),
    ) -> None:
        db.executemany(
            "INSERT INTO mentions (project, name, memory_id, memory_time, kind, surfaces, "
            "source, sure) VALUES (?,?,?,?,?,?,?,?)",
            [
                (
                    project,
                    name,
                    memory_id,
                    memory_time,
                    kind,
                    json.dumps(surfaces),
                    source,
                    int(name not in unsure),
                )
                for name, (kind, surfaces) in found.items()
            ],
        )

    def _add(
        self,
        db: sqlite3.Connection,
        key: tuple[str, str],
        kind: str,
        surfaces: list[str],
        memory_time: float,
        sure: bool = True,
    ) -> None:
        """One new mention of the entity (``sure``: the extraction was sure of it, or it is no
        mention of the rules): its row updated from the stored one, without reading the entity's
        other mentions (their count grows with the project). A mention of another kind than the
        entity's may change its kind: then the row is recomputed."""
        before = db.execute(
            "SELECT name, kind, mentions, aliases, first_seen, last_seen, doubted FROM entities "
            "WHERE project = ? AND name = ?",
            key,
        ).fetchone()
        if before is not None and before[1] != kind:
            self._refresh(db, key, surfaces)
            return
        if before is None:
            count, first, last = 1, memory_time, memory_time
        else:
            count = before[2] + 1
            first, last = min(before[4], memory_time), max(before[5], memory_time)
        self._write(db, key, before, (kind, count, first, last), _aliases(before, surfaces), sure)

    def review(self, db: sqlite3.Connection, reviewed: dict[str, list[str]]) -> None:
        """An LLM's final record read these memories and gave each the names listed (memory id
        -> canonical names): it replaces what an earlier record said of them, and the entities
        they name are judged again (:data:`DOUBTED`)."""
        if not reviewed:
            return
        db.executemany(
            "INSERT INTO reviewed VALUES (?, ?) ON CONFLICT(memory_id) DO UPDATE "
            "SET names = excluded.names",
            [(memory_id, json.dumps(names)) for memory_id, names in sorted(reviewed.items())],
        )
        self._reviewing = True  # (kept if the transaction rolls back: it only costs judging)
        named = set().union(*(self.names_of(memory_id, db) for memory_id in reviewed))
        for key in sorted(named):
            self._judge(db, key)

    def _judge(self, db: sqlite3.Connection, key: tuple[str, str]) -> None:
        """Whether the entity is doubted, from its mentions and the verdicts on their
        memories, into its row."""
        sql = f"UPDATE entities SET doubted = ({DOUBTED}) WHERE project = ? AND name = ?"
        db.execute(sql, key)

    def forget_memory(self, db: sqlite3.Connection, memory_id: str) -> None:
        """A forgotten memory's mentions go (and its wait for them, what a record said of it,
        and its acronyms used as a kind of thing); an entity no memory mentions any more
        goes."""
        db.execute("DELETE FROM entity_waiting WHERE memory_id = ?", (memory_id,))
        db.execute("DELETE FROM reviewed WHERE memory_id = ?", (memory_id,))
        kinds = self.kind_words.forget(db, memory_id)
        for project in {p for p, _ in kinds}:
            self._kinds_changed(db, project, {w for p, w in kinds if p == project})
        for key in sorted(self.names_of(memory_id, db)):
            db.execute(
                "DELETE FROM mentions WHERE memory_id = ? AND project = ? AND name = ?",
                (memory_id, *key),
            )
            self._refresh(db, key, None)

    def _refresh(
        self, db: sqlite3.Connection, key: tuple[str, str], new_surfaces: list[str] | None
    ) -> None:
        """Recompute the entity's row from its mentions (counts and times in SQL). Its aliases:
        the stored ones and ``new_surfaces``, or (None) every mention's surfaces again."""
        before = db.execute(
            "SELECT name, kind, mentions, aliases FROM entities WHERE project = ? AND name = ?",
            key,
        ).fetchone()
        kinds = Counter(
            dict(
                db.execute(
                    "SELECT kind, COUNT(*) FROM mentions WHERE project = ? AND name = ? "
                    "GROUP BY kind",
                    key,
                ).fetchall()
            )
        )
        if not kinds:
            db.execute("DELETE FROM entities WHERE project = ? AND name = ?", key)
            self._changed(key[0], before, None)
            return
        first, last = db.execute(
            "SELECT MIN(memory_time), MAX(memory_time) FROM mentions "
            "WHERE project = ? AND name = ?",
            key,
        ).fetchone()
        if new_surfaces is not None:
            aliases = _aliases(before, new_surfaces)
        else:
            rows = db.execute(
                "SELECT surfaces FROM mentions WHERE project = ? AND name = ?", key
            ).fetchall()
            aliases = {s for r in rows for s in json.loads(r[0])}
        self._write(db, key, before, (main_kind(kinds), kinds.total(), first, last), aliases)

    def _write(
        self,
        db: sqlite3.Connection,
        key: tuple[str, str],
        before: sqlite3.Row | None,
        counted: tuple[str, int, float, float],
        aliases: set[str],
        vouched: bool | None = None,
    ) -> None:
        """Store the entity's row (``counted``: kind, mentions, first and last seen), judge it
        (``vouched``: the change is one new mention, which vouches for the entity or not; None:
        from all its mentions) and note whether the change may alter the project's known
        names."""
        kind, count, first, last = counted
        after: Row = (key[1], kind, count, json.dumps(sorted(aliases)))
        db.execute(
            "INSERT INTO entities (project, name, kind, first_seen, last_seen, aliases, "
            "mentions) VALUES (?,?,?,?,?,?,?) ON CONFLICT(project, name) DO UPDATE "
            "SET kind = excluded.kind, first_seen = excluded.first_seen, "
            "last_seen = excluded.last_seen, aliases = excluded.aliases, "
            "mentions = excluded.mentions",
            (*key, kind, first, last, after[3], count),
        )
        if vouched is None or self._reviewing:
            self._judge(db, key)
        elif (before is None and not vouched) or (
            vouched and before is not None and before["doubted"]
        ):
            # before any record, one new mention changes the verdict only when it starts the
            # entity without vouching for it (a new row is written not doubted) or vouches for
            # a doubted one
            db.execute(
                "UPDATE entities SET doubted = ? WHERE project = ? AND name = ?",
                (not vouched, *key),
            )
        self._changed(key[0], before, after)  # a new name or known path, a new alias

    def _changed(self, project: str, before: sqlite3.Row | None, after: Row | None) -> None:
        """An entity row of ``project`` changed: its known names are read again if it may
        change them (a rolled-back change only costs that read)."""
        cached = self._known.get(project)
        old = None if before is None else (before[0], before[1], before[2], before[3])
        if cached is not None and changes_known(old, after, cached[1]):
            del self._known[project]

    # -- the memories waiting for their entities ---------------------------------------------

    def wait(self, db: sqlite3.Connection, memory_id: str) -> None:
        """The memory's entities are to be found (after its decision)."""
        db.execute("INSERT OR IGNORE INTO entity_waiting (memory_id) VALUES (?)", (memory_id,))

    def take(self, db: sqlite3.Connection, memory_id: str) -> bool:
        """The memory no longer waits; False when it did not (forgotten meanwhile)."""
        gone = db.execute("DELETE FROM entity_waiting WHERE memory_id = ?", (memory_id,))
        return gone.rowcount > 0

    def wait_untracked(self, db: sqlite3.Connection, decided_too: bool) -> int:
        """A database from an earlier version: its memories not yet decided wait for their
        entities, and (``decided_too``: from before entities were stored) those decided that
        name nothing stored, oldest first. Returns how many now wait."""
        sql = (
            "INSERT OR IGNORE INTO entity_waiting (memory_id) SELECT memory_id FROM detections "
            "WHERE state = 'pending'"
        )
        if decided_too:
            sql += " OR memory_id NOT IN (SELECT memory_id FROM mentions)"
        return db.execute(sql + " ORDER BY memory_time, memory_id").rowcount

    def waiting_page(self, limit: int, up_to: int | None = None) -> list[str]:
        """The first ``limit`` memories waiting for their entities that are decided (or were
        never to be: members of an imported episode), in arrival order (``up_to``: those that
        arrived at or before that place only)."""
        sql = (
            "SELECT w.memory_id FROM entity_waiting w LEFT JOIN detections d "
            "ON d.memory_id = w.memory_id WHERE d.state IS NULL OR d.state != 'pending'"
        )
        args: list[int] = []
        if up_to is not None:
            sql += " AND w.seq <= ?"
            args.append(up_to)
        args.append(limit)
        return [r[0] for r in self.db.execute(sql + " ORDER BY w.seq LIMIT ?", args)]

    def waiting(self) -> int:
        """How many memories wait for their entities."""
        return int(self.db.execute("SELECT COUNT(*) FROM entity_waiting").fetchone()[0])

    def last_waiting(self) -> int:
        """The place of the latest memory waiting (0: none waits)."""
        return int(
            self.db.execute("SELECT COALESCE(MAX(seq), 0) FROM entity_waiting").fetchone()[0]
        )

    # -- reads -------------------------------------------------------------------------------

    def names_of(
        self, memory_id: str, db: sqlite3.Connection | None = None
    ) -> set[tuple[str, str]]:
        """(project, name) of every entity the memory names."""
        return set(self.sources_of(memory_id, db))

    def sources_of(
        self, memory_id: str, db: sqlite3.Connection | None = None
    ) -> dict[tuple[str, str], str]:
        """(project, name) -> source (``rules`` or ``llm``) of every entity the memory names."""
        rows = (db or self.db).execute(
            "SELECT project, name, source FROM mentions WHERE memory_id = ?", (memory_id,)
        )
        return {(r[0], r[1]): r[2] for r in rows}

    def known(self, project: str) -> frozenset[str]:
        """What the extraction is taught of the project: its capitalised names (all their
        aliases), then also found opening a sentence, its systems (canonical, ``pw-api``), whose
        first part then starts kin systems (``pw-fhir``), its file paths (canonical), then also
        named by their bare file name, and its releases of three parts or more (canonical,
        ``v5.12.0``), whose two-part number then names a release, and the acronyms its memories use
        as a kind of thing, as their plural (``NRFs``), which then name nothing alone; the
        :data:`KNOWN_NAMES` most mentioned of each.
        Bounded, so a memory's extraction costs the same in a project of any age. Read once
        and kept until a change may alter them (see :meth:`_changed`)."""
        cached = self._known.get(project)
        if cached is None:
            names = self.db.execute(
                "SELECT aliases FROM entities WHERE project = ? AND kind = 'name' "
                "ORDER BY mentions DESC, name LIMIT ?",
                (project, KNOWN_NAMES),
            ).fetchall()
            systems = self.db.execute(
                "SELECT name FROM entities WHERE project = ? AND kind = 'system' "
                "ORDER BY mentions DESC, name LIMIT ?",
                (project, KNOWN_NAMES),
            ).fetchall()
            paths = self.db.execute(
                "SELECT name FROM entities WHERE project = ? AND kind = 'path' "
                "AND name LIKE '%/%.%' ORDER BY mentions DESC, name LIMIT ?",
                (project, KNOWN_NAMES),
            ).fetchall()
            releases = self.db.execute(
                "SELECT name FROM entities WHERE project = ? AND kind = 'version' "
                "AND name LIKE 'v%.%.%' ORDER BY mentions DESC, name LIMIT ?",
                (project, KNOWN_NAMES),
            ).fetchall()
            kinds = self.kind_words.most_used(project, KNOWN_NAMES)
            known = frozenset(a for r in names for a in json.loads(r[0]))
            known |= frozenset(word + "s" for word in kinds)
            known |= frozenset(r[0] for r in systems)
            known |= frozenset(r[0] for r in paths)
            known |= frozenset(r[0] for r in releases if is_known_release(r[0], "version"))
            full = (
                len(names) >= KNOWN_NAMES
                or len(systems) >= KNOWN_NAMES
                or len(paths) >= KNOWN_NAMES
                or len(releases) >= KNOWN_NAMES
                or len(kinds) >= KNOWN_NAMES
            )
            cached = self._known[project] = (known, full)
        return cached[0]

    def get(self, project: str, name: str) -> sqlite3.Row | None:
        return self.db.execute(
            "SELECT * FROM entities WHERE project = ? AND name = ?", (project, name)
        ).fetchone()

    def by_alias(self, project: str | None, surface: str) -> list[str]:
        """The entities (of ``project``; None: any) one of whose aliases is ``surface`` in any
        case, most mentioned first: a name stored under another (``Math.h`` under
        ``engine/core/math.h``)."""
        sql = (
            "SELECT DISTINCT e.name, e.mentions FROM entities e, json_each(e.aliases) a "
            "WHERE lower(a.value) = lower(?)"
        )
        args: list[str] = [surface.strip()]
        if project is not None:
            sql += " AND e.project = ?"
            args.append(project)
        rows = self.db.execute(sql + " ORDER BY e.mentions DESC, e.name", args).fetchall()
        return list(dict.fromkeys(r[0] for r in rows))

    def listing(
        self,
        project: str,
        kind: str | None,
        limit: int | None = None,
        include_doubted: bool = False,
    ) -> list[sqlite3.Row]:
        """The project's entities (of ``kind``), most mentioned first, ties by name; the doubted
        ones (:data:`DOUBTED`) only when ``include_doubted``; the first ``limit`` (None:
        all)."""
        sql = "SELECT * FROM entities WHERE project = ?"
        args: list[str | int] = [project]
        if kind is not None:
            sql += " AND kind = ?"
            args.append(kind)
        if not include_doubted:
            sql += " AND NOT doubted"
        sql += " ORDER BY mentions DESC, name"
        if limit is not None:
            sql += " LIMIT ?"
            args.append(limit)
        return list(self.db.execute(sql, args))

    def memory_ids(self, project: str, names: list[str], limit: int | None = None) -> list[str]:
        """The memories that name any of the entities ``names``, newest first."""
        where, named = _named_in(project, names)
        sql = (
            f"SELECT memory_id, MAX(memory_time) AS at FROM mentions {where} "
            "GROUP BY memory_id ORDER BY at DESC, memory_id"
        )
        args: list[object] = [*named]
        if limit is not None:
            sql += " LIMIT ?"
            args.append(limit)
        return [r[0] for r in self.db.execute(sql, args)]

    def memory_count(self, project: str, names: list[str]) -> int:
        """How many memories name any of the entities ``names``, each once."""
        where, args = _named_in(project, names)
        sql = f"SELECT COUNT(DISTINCT memory_id) FROM mentions {where}"
        return int(self.db.execute(sql, args).fetchone()[0])

    def naming(self, project: str | None, names: list[str]) -> list[str]:
        """Every memory naming any of the entities ``names`` in ``project`` (None: in any
        project), once."""
        where, args = _named_in(project, names)
        return [
            r[0] for r in self.db.execute(f"SELECT DISTINCT memory_id FROM mentions {where}", args)
        ]

    def episodes(self, project: str, names: list[str]) -> list[sqlite3.Row]:
        """The episodes whose memories name any of the entities ``names`` (a join with
        ``memberships``): id, title, first and last mention, mentions (memories); newest
        mention first."""
        return list(
            self.db.execute(
                "SELECT e.id, e.title, MIN(m.memory_time) AS first_mention, "
                "MAX(m.memory_time) AS last_mention, COUNT(DISTINCT m.memory_id) AS mentions "
                "FROM mentions m JOIN memberships b ON b.memory_id = m.memory_id "
                "JOIN episodes e ON e.id = b.episode_id "
                f"WHERE m.project = ? AND m.name IN ({_marks(names)}) GROUP BY e.id "
                "ORDER BY last_mention DESC, e.id",
                (project, *names),
            )
        )

    def co_occurring(self, project: str, names: list[str], limit: int) -> list[tuple[str, int]]:
        """The other entities named in the memories that name any of ``names``, by how many
        memories they share."""
        marks = _marks(names)
        rows = self.db.execute(
            "SELECT o.name, COUNT(DISTINCT o.memory_id) AS together FROM mentions m "
            "JOIN mentions o ON o.memory_id = m.memory_id AND o.project = m.project "
            f"WHERE m.project = ? AND m.name IN ({marks}) AND o.name NOT IN ({marks}) "
            "GROUP BY o.name ORDER BY together DESC, o.name LIMIT ?",
            (project, *names, *names, limit),
        )
        return [(r[0], r[1]) for r in rows]

    def named_in(self, project: str, memory_ids: list[str], limit: int) -> list[tuple[str, int]]:
        """The entities named in the memories ``memory_ids`` of ``project``, by how many of
        them name each."""
        rows = self.db.execute(
            "SELECT name, COUNT(DISTINCT memory_id) AS together FROM mentions "
            f"WHERE project = ? AND memory_id IN ({_marks(memory_ids)}) "
            "GROUP BY name ORDER BY together DESC, name LIMIT ?",
            (project, *memory_ids, limit),
        )
        return [(r[0], r[1]) for r in rows]

    def _names_like(self, project: str | None, where: str, args: list[str]) -> list[str]:
        """The names of the entities (of ``project``; None: any) ``where`` keeps, once each."""
        if project is not None:
            where += " AND project = ?"
            args = [*args, project]
        rows = self.db.execute(f"SELECT name FROM entities WHERE {where}", args)
        return list(dict.fromkeys(r[0] for r in rows))

    def with_word(self, project: str | None, word: str) -> list[str]:
        """The entities of several words (of ``project``; None: any) one of whose words is
        ``word`` (a canonical word of letters): ``dana-whitlock`` and ``dana-whitfield`` of
        ``dana``."""
        where = "(name LIKE ? OR name LIKE ? OR name LIKE ?) AND name NOT LIKE '%/%'"
        return self._names_like(project, where, [f"{word}-%", f"%-{word}", f"%-{word}-%"])

    def ending_in(self, project: str | None, last: str) -> list[str]:
        """The dotted names (of ``project``; None: any) whose last part is ``last`` in small
        letters: ``analytics.access.gate_scans`` of ``gate_scans``."""
        where = "name LIKE ? ESCAPE '!' AND name NOT LIKE '%/%'"
        return self._names_like(project, where, [f"%.{_escaped(last.lower())}"])

    def path_ending(self, project: str | None, end: str) -> list[str]:
        """The paths and repositories (of ``project``; None: any) that end in ``/end``:
        ``nf-core/sarek`` of ``sarek``; not routes nor addresses (``/v2/sarek``,
        ``s3://b/sarek``)."""
        where = "name LIKE ? ESCAPE '!' AND name NOT LIKE '/%' AND name NOT LIKE '%://%'"
        return self._names_like(project, where, [f"%/{_escaped(end)}"])

    def rows_named(self, project: str | None, names: list[str]) -> list[sqlite3.Row]:
        """The stored rows of the entities ``names`` (of ``project``; None: any), most mentioned
        first."""
        where, args = _named_in(project, names)
        return list(
            self.db.execute(f"SELECT * FROM entities {where} ORDER BY mentions DESC, name", args)
        )


def _escaped(text: str) -> str:
    """``text`` for a ``LIKE ? ESCAPE '!'``: its ``!``, ``%`` and ``_`` taken as written."""
    return text.replace("!", "!!").replace("%", "!%").replace("_", "!_")


def _marks(names: list[str]) -> str:
    """The ``?`` of an ``IN (...)`` of ``names`` (at least one)."""
    if not names:
        raise ValueError("no entity names")
    return ", ".join("?" * len(names))


def _named_in(project: str | None, names: list[str]) -> tuple[str, list[str]]:
    """The ``WHERE`` of the rows of ``names`` in ``project`` (None: any), and its arguments."""
    if project is None:
        return f"WHERE name IN ({_marks(names)})", list(names)
    return f"WHERE project = ? AND name IN ({_marks(names)})", [project, *names]
