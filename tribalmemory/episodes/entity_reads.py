"""The entity reads: a project's entities, one entity with its episodes and memories, the
entities of episodes (one or a page of them), and the memories naming an entity (recall's
``entity`` filter). Each first waits for the entities of the memories acknowledged before it
(:meth:`.EntityWork.settle`)."""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Callable
from functools import partial
from typing import Any

from ..entities import canonical
from ..entities.aliases import RELEASE
from ..entities.short_forms import (
    code_end,
    code_range,
    coded,
    first_word,
    host_label,
    hump_initial,
    hump_initials,
    initials_of,
    last_word,
    number_forms,
    numbered,
    path_ends,
    proper_name,
    short_forms,
    spelled_alone,
    standard_code,
    stands_alone,
)
from ..entities.tools import same_tool
from ..entities.words import english_words
from ..entities.written import (
    search_text,
    version,
    written_alone,
    written_apart,
    written_forms,
)
from ..errors import NotFound
from ..models import Memory
from ..timeutil import from_epoch, to_iso
from .doors import doors
from .entity_work import EntityWork
from .state import EngineState

CO_OCCURRING = 10
"""How many co-occurring entities one entity lists."""
WRITTEN_CANDIDATES = 1000
"""How many memories sharing a search term with a name never stored are read to find those
that write it (the best by BM25 first): all of them unless more share one."""


def _iso(epoch: float) -> str:
    return to_iso(from_epoch(epoch))


def entity_json(row: sqlite3.Row) -> dict[str, Any]:
    return {
        "name": row["name"],
        "kind": row["kind"],
        "aliases": json.loads(row["aliases"]),
        "first_seen_at": _iso(row["first_seen"]),
        "last_seen_at": _iso(row["last_seen"]),
        "mentions": row["mentions"],
        "doubted": bool(row["doubted"]),
    }


def memory_json(memory: Memory, episode_of: dict[str, str]) -> dict[str, Any]:
    """One of an entity's memories as the answer lists it."""
    return {
        "memory_id": memory.id,
        "content": memory.content,
        "created_at": to_iso(memory.created_at),
        "episode_id": episode_of.get(memory.id),
    }


def episode_json(
    episode_id: str, title: str, first_at: str, last_at: str, mentions: int
) -> dict[str, Any]:
    """An episode whose memories name the entity: its first and last mention (timestamps) and
    how many of its memories name it."""
    return {
        "episode_id": episode_id,
        "title": title,
        "first_mention_at": first_at,
        "last_mention_at": last_at,
        "mentions": mentions,
    }


def detail(
    entity: dict[str, Any],
    names: list[str],
    project: str,
    episodes: list[dict[str, Any]],
    memories: list[dict[str, Any]],
    memory_count: int,
    co: list[tuple[str, int]],
) -> dict[str, Any]:
    """One entity's answer (``shapes.EntityDetail``): ``names`` are the stored entities the
    name asked for names, the first the one answered; ``co`` the names seen with them."""
    return {
        "entity": entity,
        "also_written_as": names[1:],
        "project": project,
        "episodes": episodes,
        "memories": memories,
        "memory_count": memory_count,
        "co_occurring": [{"name": n, "mentions": c} for n, c in co],
    }


def _forms(name: str, rows: list[sqlite3.Row]) -> list[str]:
    """How a name is written: as asked, then the aliases of the entity it names best."""
    return [name, *(a for r in rows[:1] for a in json.loads(r["aliases"]))]


_PRE_RELEASE_TAG = re.compile(r"-((?:rc|beta|alpha)\d+)$")
"""A release's numbered pre-release tag (``rc3`` of ``v2.4.0-rc3``), written alone for it."""


_COMPANY = frozenset("games research materials systems labs technologies software group".split())
"""A company's last word: its first word alone is the company, which its products' names open
with (``Epic`` of ``Epic Games`` beside ``Epic Online Services``)."""


def matches(query: str, row: sqlite3.Row) -> bool:
    """``query`` is in the entity's name or one of its aliases (both compared canonically,
    and the aliases also as written, in any case)."""
    wanted = canonical(query)
    if wanted and wanted in row["name"]:
        return True
    lowered = query.strip().lower()
    return any(lowered in alias.lower() for alias in json.loads(row["aliases"]))


class EntityReads:
    """Reads of the ``entities`` and ``mentions`` tables, as the API answers them."""

    def __init__(self, state: EngineState, work: EntityWork) -> None:
        self.state = state
        self.store = state.store
        self.work = work

    async def entities(
        self,
        project: str,
        query: str | None,
        kind: str | None,
        limit: int,
        include_doubted: bool = False,
    ) -> list[dict[str, Any]]:
        await self.work.settle()
        listing = self.store.entities.listing
        if query is None:  # the page alone, from the index on (project, mentions, name)
            rows = listing(project, kind, limit, include_doubted)
        else:  # names and aliases matched here: every entity of the project read
            rows = [r for r in listing(project, kind, None, include_doubted) if matches(query, r)]
        return [entity_json(r) for r in rows[:limit]]

    def _named(self, project: str | None, name: str) -> tuple[list[sqlite3.Row], bool]:
        """The entities ``name`` names, the one it names best first: the entity of its
        canonical name, else the most mentioned one written so (an alias); then the others
        written so (``Greg`` stored under ``greg-mallory`` once ``Greg Mallory`` was known),
        the entities stored under its other number (``incoterm`` of ``Incoterms``), its
        tool's other names (``postgres`` of ``PostgreSQL``) or its code's end (``k11`` of
        ``ETCH-K11``, when no other code ends so), under its short forms that name a
        thing on their own and under its initials (:mod:`tribalmemory.entities.short_forms`:
        ``tagus`` of ``Norvane Tagus``, ``KP`` of ``Kestrel Peak``), and the dotted names ending
        in it when it is a name in snake case (``analytics.access.gate_scans`` of
        ``GATE_SCANS``). Empty when it names none. Second, whether the memories that write
        ``name`` word for word count too: when no entity is stored under it or as an alias."""
        entities = self.store.entities
        key = canonical(name)
        rows = entities.rows_named(project, [key])
        aliased = entities.by_alias(project, name)
        rows += entities.rows_named(project, aliased) if aliased else []
        by_text = not rows
        written = set(_forms(name, rows))
        parts = {f for form in written for f in short_forms(form)}
        parts |= {v for part in parts for v in number_forms(part)}
        initials = {a for form in written for a in (*initials_of(form), *hump_initials(form))}
        others = {*number_forms(key), *same_tool(key), *numbered(key)}
        end = code_end(key)
        if end and not self._shared(project, end, {key}, inner=True):  # not s063-pos02's pos02
            others.add(end)
        others |= self._paths(project, key, written)
        others |= set(host_label(key))
        short = sorted(parts | others | {a.lower() for a in initials})
        whole = max(written, key=proper_name)
        for row in entities.rows_named(project, short) if short else []:
            aliases = json.loads(row["aliases"])
            part = row["name"] in parts and stands_alone(row["name"], aliases, whole)
            if part and "-" not in row["name"] and row["name"] in english_words():
                # play of google-play, cosmos of azure-cosmos-db; not dana of dana-whitlock
                inner = not key.startswith(f"{row['name']}-")
                part = not self._shared(project, row["name"], {key, *parts}, inner)
            if (
                part
                or row["name"] in others
                or any(a in aliases for a in initials if a.lower() == row["name"])
            ):
                rows.append(row)
        if "_" in name and not {".", "/"} & set(name):
            dotted = entities.ending_in(project, name)
            rows += entities.rows_named(project, dotted) if dotted else []
        return list({(r["project"], r["name"]): r for r in rows}.values()), by_text

    def _shared(self, project: str | None, word: str, own: set[str], inner: bool = False) -> bool:
        """Whether an entity of several words other than ``own`` has ``word`` among its words:
        then ``word`` alone is no short form of one of them (``Dana`` of two Danas). When the
        word is not the name's first (``inner``: ``Play`` of ``Google Play``, ``Cosmos`` of
        ``Azure Cosmos DB``), the names opening with it are named after it and share nothing
        (``Play Console``, ``Rave Coder`` of ``Medidata Rave``; ``K12_MAIN_v3`` of
        ``ETCH-K12``), as a range of codes shares nothing with the codes it spans
        (``K11-K14``), unlike another name ending with it (``SQL Server`` beside ``ArcGIS
        Server``, ``S094-POS02`` beside ``S063-POS02``)."""
        others = set(self.store.entities.with_word(project, word)) - own
        if inner:
            others = {o for o in others if not o.startswith(f"{word}-") and not code_range(o)}
        return bool(others)

    def _paths(self, project: str | None, key: str, written: set[str]) -> set[str]:
        """The names a repository or file ``key`` (:func:`.path_ends`) is also written as: the
        shorter paths it ends in no other path ends in (``sarek`` of ``nf-core/sarek``, not
        ``signals.yaml`` of ``data/ASJ/signals.yaml`` beside ``data/KBJ/signals.yaml``), and
        the one repository or file path ending in ``key`` (``quoin/tessera`` of ``tessera``).
        None for a folder (written with a slash at its end, ``gen/kcg/``)."""
        if any(w.endswith(("/", "\\")) for w in written):
            return set()
        ending, ends = self.store.entities.path_ending, path_ends(key)
        found = {end for end in ends if set(ending(project, end)) <= {key, *ends}}
        longer = [n for n in ending(project, key) if n != key and key in path_ends(n)]
        return found | set(longer if len(longer) == 1 else ())

    async def _writing(self, project: str | None, name: str) -> list[tuple[Memory, list[str]]]:
        """The memories of ``project`` (None: of every project) that write ``name`` word for
        word, each with the ways it writes it
        (:func:`~tribalmemory.entities.written.written_forms`), newest first."""
        found = await self.state.host.term_search(search_text(name), project, WRITTEN_CANDIDATES)
        writing = [(m, forms) for m in found if (forms := written_forms(m.content, name))]
        return sorted(writing, key=lambda pair: (pair[0].created_at, pair[0].id), reverse=True)

    async def entity(self, project: str, name: str, limit: int) -> dict[str, Any]:
        await self.work.settle()
        rows, by_text = self._named(project, name)
        alone = await self._alone(project, name, rows)
        if by_text or alone:
            return await self._written(project, name, limit, rows, alone, by_text)
        row, names = rows[0], [r["name"] for r in rows]
        entities = self.store.entities
        ids = entities.memory_ids(project, names, limit)
        found = {m.id: m for m in await self.state.host.get_memories(ids)}
        episode_of = self.store.memberships.episodes_of(ids) if ids else {}
        memories = [memory_json(found[i], episode_of) for i in ids if i in found]
        episodes = [
            episode_json(
                r["id"],
                r["title"],
                _iso(r["first_mention"]),
                _iso(r["last_mention"]),
                r["mentions"],
            )
            for r in entities.episodes(project, names)
        ]
        return detail(
            entity_json(row),
            names,
            project,
            episodes,
            memories,
            entities.memory_count(project, names),
            entities.co_occurring(project, names, CO_OCCURRING),
        )

    async def _written(
        self,
        project: str,
        name: str,
        limit: int,
        rows: list[sqlite3.Row],
        alone: list[Memory],
        by_text: bool,
    ) -> dict[str, Any]:
        """The answer counting memories no entity row holds: those that write the name
        (``by_text``, :meth:`_named`) and those :meth:`_alone` finds (``alone``), with those of
        the entities of ``rows`` (the first is the entity answered); without
        rows, as an entity of kind ``written`` (doubted: nothing vouches for it)."""
        found = await self._writing(project, name) if by_text else []
        writing = await self._with_rows(project, [*(m for m, _ in found), *alone], rows)
        if not writing:
            raise NotFound(
                f"no entity {name!r} in project {project}, and no memory of the project "
                "writes the name (memories other projects share are not read); list the "
                "project's entities to find its name",
                doors("list the entities"),
            )
        ids = [m.id for m in writing]
        episode_of = self.store.memberships.episodes_of(ids)
        touched: dict[str, list[Memory]] = {}
        for memory in writing:
            if memory.id in episode_of:
                touched.setdefault(episode_of[memory.id], []).append(memory)
        titles = self.store.episodes.titles(list(touched))
        episodes = [
            episode_json(
                episode_id,
                titles.get(episode_id, ""),
                to_iso(members[-1].created_at),
                to_iso(members[0].created_at),
                len(members),
            )
            for episode_id, members in touched.items()
        ]
        co = self.store.entities.named_in(project, ids, CO_OCCURRING)
        names = [r["name"] for r in rows]
        co = [(n, c) for n, c in co if n not in names]
        written = {
            "name": canonical(name) or name,
            "kind": "written",
            "aliases": sorted({form for _, forms in found for form in forms}),
            "first_seen_at": to_iso(writing[-1].created_at),
            "last_seen_at": to_iso(writing[0].created_at),
            "mentions": len(writing),
            "doubted": True,
        }
        return detail(
            entity_json(rows[0]) if rows else written,
            names,
            project,
            episodes,
            [memory_json(m, episode_of) for m in writing[:limit]],
            len(writing),
            co,
        )

    async def memory_ids(self, project: str | None, name: str) -> list[str]:
        """The memories naming the entities ``name`` names in ``project`` (None: every
        project; :meth:`_named`), and those that write ``name`` word for word when they count
        too, or write it or its first word alone (:meth:`_alone`)."""
        await self.work.settle()
        rows, by_text = self._named(project, name)
        names = list(dict.fromkeys(r["name"] for r in rows))
        ids = self.store.entities.naming(project, names) if names else []
        alone = [m.id for m in await self._alone(project, name, rows)]
        writing = [m.id for m, _ in await self._writing(project, name)] if by_text else []
        return list(dict.fromkeys([*writing, *ids, *alone]))

    async def _alone(self, project: str | None, name: str, rows: list[sqlite3.Row]) -> list[Memory]:
        """The memories writing alone, where the extraction reads no name, a stored name of
        one word always written in small letters (:func:`.spelled_alone`: ``shelfdiff`` in
        ``the shelfdiff config``; not in a path or a longer name, :func:`.written_alone`), a
        standard's code (:func:`.standard_code`: ``61850`` of ``IEC 61850``), or the name's
        first or last word (:meth:`_words_alone`), a release (:meth:`_releases_written`), a
        coded name's plural (:func:`.coded`: ``A100s``), the name with a digit after it
        (:func:`.numbered`: ``OAuth2``) and a tool's other name made of its humps' initials, in
        capitals (``TS`` of ``TypeScript``, :data:`.SAME_TOOL`; :func:`.hump_initial`)."""
        forms = _forms(name, rows)
        key = canonical(name)
        if rows and spelled_alone(key, forms[1:]):
            return await self._written_alone(project, key)
        code = next((c for form in forms if (c := standard_code(form))), None)
        if code is not None:
            return await self._written_alone(project, code)
        own = {canonical(f) for f in forms} | {r["name"] for r in rows}
        found = await self._words_alone(project, forms, own)
        found += await self._releases_written(project, name, key, bool(rows), own)
        if coded(name) and number_forms(key) == [f"{key}s"]:  # A100s of A100
            found += [m for m, _ in await self._writing(project, f"{name}s")]
        if numbered(key):  # OAuth2 of OAuth
            versions = [f"{name}{digit}" for digit in range(1, 10)]
            writing = await self.state.host.term_search(
                " ".join(versions), project, WRITTEN_CANDIDATES
            )
            found += [m for m in writing if any(written_forms(m.content, v) for v in versions)]
        stored = {r["name"] for r in rows}
        for other in same_tool(key):
            if other not in stored and any(other.upper() == hump_initial(f) for f in forms):
                found += await self._written_alone(project, other.upper())
        return list({m.id: m for m in found}.values())

    async def _words_alone(
        self, project: str | None, forms: list[str], own: set[str]
    ) -> list[Memory]:
        """The memories writing alone a name's first or last word (:func:`.first_word`,
        :func:`.last_word`: ``Gary`` of ``Gary Schroeder``, at a sentence's opening too;
        ``Rave`` of ``Medidata Rave``, ``MQ`` of ``IBM MQ``), not beside another capitalised
        word, when the project never writes it in small letters (:func:`.written_apart`) and
        no other known name of several words shares it (``Dana`` of two Danas; a company's
        first word is shared by none of its products' names: ``Epic`` of ``Epic Games``
        beside ``Epic Online Services``)."""
        found: list[Memory] = []
        opening = next((form for form in forms if first_word(form)), None)
        first = first_word(opening) if opening else None
        if opening and first:
            company = opening.split()[-1].lower() in _COMPANY
            if not self._shared(project, canonical(first), own, company):
                pick = partial(written_apart, other=opening.split()[1])
                found += await self._written_alone(project, first, pick)
        whole = next((form for form in forms if last_word(form)), None)
        if whole is not None:
            before, last = whole.split()
            if not self._shared(project, canonical(last), own, inner=True):
                pick = partial(written_apart, other=before)
                found += await self._written_alone(project, last, pick)
        return found

    async def _releases_written(
        self, project: str | None, name: str, key: str, stored: bool, own: set[str]
    ) -> list[Memory]:
        """The memories writing a release or a snapshot's version word for word (with its
        ``v`` or without: :func:`.written_forms`) where the extraction read none, when it is
        ``stored`` (else :meth:`_writing` reads them already: ``OFP 2.4.0-rc3``,
        ``4.0-SNAPSHOT``; of two parts only with its ``v``: ``2.6`` is a measure as often),
        and a pre-release tag alone when no other known name has it (``rc3``)."""
        found: list[Memory] = []
        written = version(key)
        if written and stored:
            bare = written.group(1).count(".") > 1 or "-" in written.group(1)
            writing = await self._writing(project, name)
            found += [m for m, forms in writing if bare or any(f[:1] in "vV" for f in forms)]
        tag = _PRE_RELEASE_TAG.search(key) if RELEASE.fullmatch(key) else None
        if tag and not self._shared(project, tag.group(1), own):
            found += await self._written_alone(project, tag.group(1))
        return found

    async def _written_alone(
        self,
        project: str | None,
        word: str,
        pick: Callable[[list[str], str], list[int]] = written_alone,
    ) -> list[Memory]:
        """The memories of ``project`` writing ``word`` alone, as written (``pick``:
        :func:`.written_alone`, or another picker of :mod:`.written`)."""
        found = await self.state.host.term_search(word, project, WRITTEN_CANDIDATES)
        return [found[i] for i in pick([m.content for m in found], word)]

    async def _with_rows(
        self, project: str | None, writing: list[Memory], rows: list[sqlite3.Row]
    ) -> list[Memory]:
        """``writing`` and the memories naming the entities of ``rows``, each once, newest
        first."""
        known = {m.id: m for m in writing}
        ids = self.store.entities.naming(project, [r["name"] for r in rows]) if rows else []
        fetched = await self.state.host.get_memories([i for i in ids if i not in known])
        known |= {m.id: m for m in fetched}
        return sorted(known.values(), key=lambda m: (m.created_at, m.id), reverse=True)

    async def of_episode(self, episode_id: str) -> list[dict[str, Any]]:
        self.state.episode(episode_id)
        return (await self.of_episodes([episode_id]))[episode_id]

    async def of_episodes(self, episode_ids: list[str]) -> dict[str, list[dict[str, Any]]]:
        """The entities of each episode of ``episode_ids`` (a page of a list), one query."""
        await self.work.settle()
        found = self.store.episode_entities.of_episodes(episode_ids)
        return {
            episode_id: [
                {"name": n, "kind": k, "mentions": c, "doubted": d} for n, k, c, d in named
            ]
            for episode_id, named in found.items()
        }
