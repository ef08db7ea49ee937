"""``tribalmemory doctor``: find damaged data files and repair what can be repaired.

Every check is the one start-up makes (``storage/integrity.py``, ``storage/edge/checks.py``,
the episode engine's reconcile rule); a :class:`Finding` says what is wrong and what the repair
does. Repairs never delete: damaged files are moved into ``<data_dir>/damaged-<UTC time>/``,
and what the store must drop (episode summaries a new episode database cannot account for) is
written there first. What each repair does:

- ``datafiles.json`` damaged: moved aside; written again from the files present.
- ``store.json`` damaged, missing or naming a missing shard: moved aside and written again for
  the shard folder holding the most memories (with the configured embedding model, if its
  dimension matches the shard's); other shard folders are moved aside.
- a shard that cannot be loaded: its damaged ``edge_config.json`` or segment folder (the one
  the error names) is moved aside; the memories of a moved segment are out of the store.
- segment folders missing, or fewer memories than at the last close: the store is accepted as
  it is (the lost memories cannot be rebuilt; restore the store from a backup to get them back).
- the store folder gone: start with an empty store (from a backup, if any, first).
- ``episodes.sqlite3`` damaged, emptied, or blank while the store holds episode summaries: the
  file is moved aside and the episode summary memories (and lessons and decisions) are
  exported to
  ``episode-summaries.jsonl`` beside it, then removed from the store. Episodes are not rebuilt
  from memories: every memory stays, unassigned; new memories form new episodes.
- ``ledger.sqlite3`` damaged or emptied: moved aside; a new ledger counts the current month as
  fully spent (the month's real spend is unknown, and the ceiling must hold), so LLM work waits
  for next month unless ``episodes.monthly_cost_ceiling`` is raised.
"""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..config import Config
from ..datafolder import FOLDER_MODE, write_private
from ..models import ENGINE_WRITTEN
from ..plural import counted
from ..timeutil import utc_now
from . import edge, integrity
from .base import DENSE, LAYOUT_KEY, MemoryFilter, StoreLockedError
from .integrity import DamagedDataError

WRITTEN = "episode summary, lesson and decision memories"
_SEGMENT = re.compile(r"segments/([0-9a-fA-F-]{36})")


class Aside:
    """``<data_dir>/damaged-<UTC time>/``, created when the first file is moved there."""

    def __init__(self, data: Path) -> None:
        self.folder = data / f"damaged-{utc_now().strftime('%Y%m%dT%H%M%SZ')}"

    def create(self) -> Path:
        self.folder.mkdir(mode=FOLDER_MODE, parents=True, exist_ok=True)
        return self.folder

    def move(self, path: Path) -> str:
        self.create()
        target = self.folder / path.name
        counter = 1
        while target.exists():
            counter += 1
            target = self.folder / f"{path.name}.{counter}"
        shutil.move(str(path), str(target))
        return f"moved {path} to {target}"

    def move_sqlite(self, path: Path) -> list[str]:
        """The database and its WAL and shared-memory files."""
        moved = []
        for extra in ("", "-wal", "-shm"):
            candidate = path.with_name(path.name + extra)
            if candidate.exists():
                moved.append(self.move(candidate))
        return moved


Fix = Callable[[Aside], list[str]]


@dataclass
class Finding:
    """One checked file: ``problem`` is None when it is fine."""

    path: Path
    problem: str | None
    note: str = ""  # what was found when fine (e.g. how many memories)
    repair: str = ""  # what --repair does
    fix: Fix | None = None


class Doctor:
    """Checks the data folder of ``config``; the embedded store is opened (so the daemon must
    be stopped: StoreLockedError otherwise) and closed by :meth:`close`."""

    def __init__(self, config: Config, model_name: str, dim: int) -> None:
        self.config = config
        self.data = config.data_path
        self.model_name = model_name
        self.dim = dim
        self.store: Any = None
        self.embedded = not config.storage.qdrant_url

    def close(self) -> None:
        if self.store is not None:
            self.store.close()
            self.store = None

    # -- the checks -----------------------------------------------------------------------

    def diagnose(self) -> list[Finding]:
        self.close()
        findings = [self._manifest()]
        manifest = {} if findings[0].problem else integrity.read_manifest(self.data)
        findings.append(self._store(manifest))
        if self.config.episodes.enabled or (self.data / integrity.EPISODES_DB.name).exists():
            findings.append(self._episodes(manifest))
            findings.append(self._ledger(manifest))
        return findings

    def _manifest(self) -> Finding:
        path = self.data / integrity.MANIFEST
        try:
            integrity.read_manifest(self.data)
        except DamagedDataError as exc:
            return Finding(
                path,
                exc.problem,
                repair="move it aside; it is written again from the files present",
                fix=lambda aside: [aside.move(path)],
            )
        return Finding(path, None, "lists the files created so far" if path.exists() else "")

    def _store(self, manifest: dict[str, Any]) -> Finding:
        from .factory import open_store

        root = self.config.store_path
        if not self.embedded:
            try:
                self.store = open_store(self.config, self.model_name, self.dim, check_model=False)
            except StoreLockedError:
                raise
            except Exception as exc:  # a server is out of reach: nothing to repair here
                return Finding(Path(str(self.config.storage.qdrant_url)), str(exc))
            location = Path(self.store.info.location)
            return Finding(location, None, counted(self.store.count(), "memory"))
        try:
            integrity.check_store_present(manifest, self.data, root)
            self.store = edge.EdgeStore.open(root, self.model_name, self.dim, check_model=False)
        except DamagedDataError as exc:
            return self._store_damage(root, exc)
        count = self.store.count()
        return Finding(root, None, f"{counted(count, 'memory')} in {self.store._shard_name}")

    def _store_damage(self, root: Path, exc: DamagedDataError) -> Finding:
        meta_path = root / edge.META_FILE
        shards = _shard_folders(root)
        if exc.path in (root, meta_path):
            if not shards:
                return Finding(
                    exc.path,
                    exc.problem,
                    repair="start with an empty store: every memory is gone (restore the store "
                    "folder from a backup first if you have one)",
                    fix=lambda aside: self._forget_store(),
                )
            return Finding(
                exc.path,
                exc.problem,
                repair=f"write {meta_path.name} again (a damaged one is moved aside) for the "
                "shard folder holding the most memories, with the configured embedding model; "
                "other shard folders are moved aside",
                fix=lambda aside: self._rebuild_meta(root, shards, aside),
            )
        if "edge_config.json" in exc.problem and "cannot be loaded" in exc.problem:
            config_file = exc.path / "edge_config.json"
            return Finding(
                exc.path,
                exc.problem,
                repair="move its edge_config.json aside (the shard loads with the settings "
                "Tribal Memory gives it)",
                fix=lambda aside: [aside.move(config_file)],
            )
        segment = _SEGMENT.search(exc.problem)
        if "cannot be loaded" in exc.problem and segment:
            folder = exc.path / "segments" / segment.group(1)
            return Finding(
                exc.path,
                exc.problem,
                repair=f"move the damaged segment {segment.group(1)} aside: the memories in it "
                "leave the store (they stay in the moved folder)",
                fix=lambda aside: [aside.move(folder), *self._clear_state(root)],
            )
        if "without their version.info" in exc.problem or "has a segment folder (" in exc.problem:
            unfinished = [exc.path / "segments" / n for n in edge.incomplete_segments(exc.path)]
            return Finding(
                exc.path,
                exc.problem,
                repair="move those segment folders aside: the memories in them leave the store",
                fix=lambda aside: [*map(aside.move, unfinished), *self._clear_state(root)],
            )
        if "lacks" in exc.problem or "when it was closed" in exc.problem:
            return Finding(
                exc.path,
                exc.problem,
                repair="accept the store as it is now: the lost memories cannot be rebuilt "
                "(restore the store folder from a backup to get them back)",
                fix=lambda aside: self._clear_state(root),
            )
        return Finding(
            exc.path,
            exc.problem,
            repair="none automatic: restore the store folder from a backup",
        )

    def _episodes(self, manifest: dict[str, Any]) -> Finding:
        sqlite_file = integrity.EPISODES_DB
        path = self.data / sqlite_file.name
        known = sqlite_file.name in manifest.get("files", {})
        problem = integrity.sqlite_problem(path, sqlite_file.table, known)
        summaries = self._summary_count()
        if problem is None and summaries and (not path.exists() or _blank_episodes(path)):
            what = "holds no episode at all" if path.exists() else "is missing"
            problem = (
                f"{what}, but the store holds {summaries} {WRITTEN} (the database was lost, "
                "truncated or replaced)"
            )
        if problem is None:
            return Finding(path, None, "" if path.exists() else "not created yet")
        repair = "move it aside"
        if summaries:
            repair += (
                f"; export the {summaries} {WRITTEN} to episode-summaries.jsonl beside it"
                " and remove them from the store. Episodes are not rebuilt: every "
                "memory stays, unassigned, and new memories form new episodes"
            )
        return Finding(path, problem, repair=repair, fix=lambda aside: self._new_episodes(aside))

    def _ledger(self, manifest: dict[str, Any]) -> Finding:
        sqlite_file = integrity.LEDGER_DB
        path = self.data / sqlite_file.name
        known = sqlite_file.name in manifest.get("files", {})
        problem = integrity.sqlite_problem(path, sqlite_file.table, known)
        if problem is None:
            return Finding(path, None, "" if path.exists() else "not created yet")
        ceiling = self.config.episodes.monthly_cost_ceiling
        return Finding(
            path,
            problem,
            repair=f"move it aside; a new ledger counts this month as fully spent (${ceiling:g}, "
            "the month's real spend being unknown) so the ceiling holds: raise "
            "episodes.monthly_cost_ceiling to allow LLM work before next month",
            fix=lambda aside: self._new_ledger(path, aside),
        )

    # -- the repairs ----------------------------------------------------------------------

    def _unlist(self, name: str) -> None:
        """Take ``name`` off the manifest: the next start creates it anew, as intended."""
        manifest = integrity.read_manifest(self.data)
        if manifest.get("files", {}).pop(name, None) is not None:
            integrity.write_json_atomically(self.data / integrity.MANIFEST, manifest)

    def _forget_store(self) -> list[str]:
        self._unlist("store")
        return ["the store will start empty"]

    def _rebuild_meta(self, root: Path, shards: list[str], aside: Aside) -> list[str]:
        dims = {name: _shard_dim(root / name) for name in shards}
        wrong = {name: d for name, d in dims.items() if d is not None and d != self.dim}
        if wrong:
            raise RepairError(
                f"shard folder(s) of {root} hold {sorted(set(wrong.values()))}-dimension "
                f"vectors, but embedding.model {self.model_name!r} has {self.dim}: set "
                "embedding.model to the model that wrote the store and run doctor again"
            )
        counts = {name: _shard_points(root / name, self.dim) for name in shards}
        readable = {name: n for name, n in counts.items() if n is not None}
        if not readable:
            raise RepairError(
                f"no shard folder of {root} can be loaded with dimension {self.dim} "
                f"({', '.join(shards)}): restore the store from a backup"
            )
        best = max(readable, key=lambda name: (readable[name], name))
        done = []
        if (root / edge.META_FILE).exists():
            done.append(aside.move(root / edge.META_FILE))
        for name in shards:
            if name != best:
                done.append(aside.move(root / name))
        edge.write_meta(root, self.model_name, self.dim, best)
        done.append(f"wrote {root / edge.META_FILE}: {best}, {counted(readable[best], 'memory')}")
        return done

    def _clear_state(self, root: Path) -> list[str]:
        """Rewrite store.json without the recorded state: the next open records it anew."""
        meta = json.loads((root / edge.META_FILE).read_text(encoding="utf-8"))
        edge.write_meta(
            root,
            meta["model_name"],
            int(meta["dim"]),
            meta["shard"],
            layout=meta.get(LAYOUT_KEY),
        )
        return [f"{root / edge.META_FILE}: the store is accepted as it is now"]

    def _summary_count(self) -> int:
        if self.store is None:
            return 0
        return int(self.store.count(MemoryFilter(source_types=sorted(ENGINE_WRITTEN))))

    def _new_episodes(self, aside: Aside) -> list[str]:
        path = self.data / integrity.EPISODES_DB.name
        done = aside.move_sqlite(path)
        self._unlist(path.name)
        if self.store is not None:
            where = MemoryFilter(source_types=sorted(ENGINE_WRITTEN))
            summaries = list(self.store.scroll(where))
            if summaries:
                export = aside.create() / "episode-summaries.jsonl"
                lines = [json.dumps(m.to_json(), ensure_ascii=False) + "\n" for m in summaries]
                write_private(export, "".join(lines))  # memory text: 0600
                self.store.delete([m.id for m in summaries])
                done.append(
                    f"exported {len(summaries)} episode summary memories to {export} and "
                    "removed them from the store"
                )
        return done

    def _new_ledger(self, path: Path, aside: Aside) -> list[str]:
        from ..llm.ledger import Ledger

        seen = _month_spend(path)
        done = aside.move_sqlite(path)
        ceiling = self.config.episodes.monthly_cost_ceiling
        ledger = Ledger(path, monthly_cost_ceiling=ceiling)
        try:
            if ceiling > 0:
                call_id = f"doctor-{utc_now().strftime('%Y%m%dT%H%M%SZ')}"
                granted = ledger.reserve(
                    purpose="carried_over", model="doctor", reserved_usd=ceiling, call_id=call_id
                )
                if granted.id is None:
                    raise RepairError(f"the new ledger refused the carried-over spend: {granted}")
                ledger.settle(
                    granted.id,
                    outcome="carried_over",
                    cost_usd=ceiling,
                    detail="this month's spend was lost with a damaged ledger "
                    f"(the damaged file showed ${seen:.4f}); counted as the whole ceiling"
                    if seen is not None
                    else "this month's spend was lost with a damaged ledger; counted as the "
                    "whole ceiling",
                )
        finally:
            ledger.close()
        shown = "unreadable" if seen is None else f"${seen:.4f}"
        done.append(
            f"new ledger {path}: this month counted as spent (${ceiling:g}; the damaged file "
            f"showed {shown})"
        )
        return done

    def rewrite_manifest(self) -> None:
        """The manifest after repairs: exactly the files present now."""
        store = self.config.store_path if self.embedded else None
        manifest = {
            "files": integrity.present_files(self.data, store),
            "updated_at": utc_now().isoformat().replace("+00:00", "Z"),
        }
        integrity.write_json_atomically(self.data / integrity.MANIFEST, manifest)


class RepairError(RuntimeError):
    """A repair cannot be done automatically; the message says what to do."""


def _shard_folders(root: Path) -> list[str]:
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if p.is_dir() and edge.SHARD_DIR.match(p.name))


def _shard_dim(path: Path) -> int | None:
    """The dense dimension a shard's edge_config.json records, if readable."""
    try:
        config = json.loads((path / "edge_config.json").read_text(encoding="utf-8"))
        return int(config["vectors"][DENSE]["size"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _shard_points(path: Path, dim: int) -> int | None:
    """How many memories a shard folder holds, or None if it cannot be loaded."""
    import qdrant_edge as qe

    if not (path.is_dir() and any(path.iterdir())):
        return None  # nothing to load (open_shard would create a shard)
    try:  # with the fields it has: counting must not add the engine's BM25 field to it
        engine_field = not edge.lacks_engine_field(path)
        shard = qe.EdgeShard.load(str(path), edge.shard_config(dim, engine_field=engine_field))
    except Exception:
        return None
    try:
        return int(shard.count(qe.CountRequest(exact=True)))
    finally:
        shard.close()


def _blank_episodes(path: Path) -> bool:
    """The episode database is blank (``integrity.BLANK_EPISODES``, the rule of reconcile()),
    read without changing the file."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        present = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
        return all(
            conn.execute(sql).fetchone() is None
            for table, sql in integrity.BLANK_EPISODES.items()
            if table in present
        )
    finally:
        conn.close()


def _month_spend(path: Path) -> float | None:
    """This month's spend (USD) that a damaged ledger still shows, or None if unreadable."""
    from ..llm import ledger_math as lm

    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            row = conn.execute(
                "SELECT COALESCE(SUM(CASE WHEN outcome = 'reserved' THEN reserved_nano "
                "ELSE cost_nano END), 0) FROM calls WHERE month = ?",
                (lm.month_key(utc_now()),),
            ).fetchone()
        finally:
            conn.close()
    except sqlite3.Error:
        return None
    return lm.nano_to_usd(int(row[0]))
