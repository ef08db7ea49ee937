"""Entities a memory names (:func:`extract_entities`): the rules' patterns for links, tickets,
versions, paths and code names (:mod:`.rules`), kept when plausible (:mod:`.filters`), numbers
that are releases or tickets (:mod:`.versions`), code in backticks and sentences opened in
small letters (:mod:`.code`), capitalised names inside sentences (:mod:`.names`) and tools
written in small letters (:mod:`.tools`), minus a stop list."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from tribalmemory.entities.acronyms import generic_with_digits
from tribalmemory.entities.aliases import canonical
from tribalmemory.entities.code import CODE_SHAPED, code_spans, listed_components, lower_openers
from tribalmemory.entities.filters import (
    TEMPLATE,
    placeholder,
    plausible,
    shared_owners,
    stop_pair,
)
from tribalmemory.entities.known import taught, taught_spans
from tribalmemory.entities.names import SAINT, capitalised_names, in_a_name, plural
from tribalmemory.entities.patterns import CODE_NAME
from tribalmemory.entities.products import model_spans, product_spans
from tribalmemory.entities.rules import DOTTED_NAME, NEEDLES, RULES, dotted_name
from tribalmemory.entities.short_names import defined_initials, full_name
from tribalmemory.entities.stoplist import BUILT_IN_TYPES, STOP
from tribalmemory.entities.tools import tool_spans
from tribalmemory.entities.versions import (
    FOUR_PARTS,
    RELEASE_WORD,
    SHORT_TICKET,
    TICKET_WORD,
    TWO_PARTS,
    another_release,
)

_WORD_OF_CODE = re.compile(r"(?<![\w.-])[A-Z0-9][A-Z0-9-]*(?![\w-]|\.\w)")
"""A word of capitals, digits and hyphens: maybe a known model number alone (``NX-7``)."""
_RANGE_END = re.compile(r"\.\.(?:[A-Z0-9](?:[A-Z0-9-]*[A-Z-])?)?\d+\b(?![.-]\w)")
"""The end of a range after a numbered name: ``..24`` of ``enc-cpu-01..24``, ``..E04`` of
``PVD-E02..E04``, ``..SKUA-18`` of ``SKUA-01..SKUA-18``."""
_PLUS = re.compile(r"\+(?![\w+`])")
_PLUS_NAME = re.compile(r"[A-Za-z][A-Za-z0-9 ]*[A-Za-z0-9]")
"""A name of letters and digits, and a plus after it that joins nothing to it: the plus is
the name's (``SolarAPP+``, ``Livewire+``, ``kdb+``); not a selector written as code
(``model_name+``)."""
_QUERY = re.compile(r"\?(?=[\w{\[])[\w=&%{}\[\].:*+-]*")
"""A route's query string (``?limit=5``, ``?postcode=&dateOfBirth=``), not a question mark."""
_DOTTED_END = re.compile(r" (?:[A-Za-z]\.){2,}$")
"""A name ending in a legal form written with dots (``Brannock Trading B.V.``): its last dot
is the form's."""
_JOB_WORD = re.compile(r"\b(?:jobs?|builds?|runs?|pipelines?)\s$", re.IGNORECASE)
"""The word before the number of a job, a build or a run (``HIL job #5512``): no ticket."""


@dataclass(frozen=True)
class Entity:
    """One mention: its ``kind``, the ``text`` as written, its span and :func:`canonical` name."""

    kind: str
    text: str
    start: int
    end: int
    name: str


def extract_entities(text: str, known: Iterable[str] = ()) -> list[Entity]:
    """The entities ``text`` names, in order, without overlap (an earlier rule wins, then the
    longer match). ``known``: names (any alias) already seen in the corpus, which are then also
    found as a sentence's first word; and paths of files (with a folder), whose bare file name
    then names the path (``Math.h`` -> ``engine/core/math.h``) when only one ends in it."""
    corpus = taught(frozenset(known))  # kept per known set (the same object when given one)
    found: list[Entity] = []
    taken: list[tuple[int, int]] = []
    owners = shared_owners(text)

    def add(kind: str, surface: str, start: int, end: int) -> None:
        if kind in ("system", "identifier", "ticket") and (upto := _RANGE_END.match(text, end)):
            surface += upto.group()  # a range of hosts is one: enc-cpu-01..24
        if (
            kind in ("name", "identifier")
            and _PLUS.match(text, end)
            and _PLUS_NAME.fullmatch(surface)
        ):
            surface += "+"  # a name with its plus: SolarAPP+, kdb+
        if kind == "path" and "/" in surface and (query := _QUERY.match(text, end)):
            surface += query.group()  # a route with its query: /v1/spend?campaign=&day=
        if not surface.endswith(("/...", "=...")) and not _DOTTED_END.search(surface):
            surface = surface.rstrip(".,;:!?'\"(" if kind == "url" else ".(")
        end = start + len(surface)
        if any(start < e and s < end for s, e in taken):
            return
        if surface.endswith("_") and not surface.startswith("__") and text[end : end + 1] != "*":
            return  # a template's first part: DEV_<USER>, Cloud_ of Cloud_[section]
        if kind == "identifier" and (
            surface.lower() in STOP or surface.lower() in BUILT_IN_TYPES or stop_pair(surface)
        ):
            return
        if not plausible(kind, surface, corpus, owners):
            return
        if kind in ("ticket", "identifier", "name", "system") and generic_with_digits(surface):
            return  # UTF-16, I2C, AV1, utf-8 (also once known from a longer name)
        if kind == "name" and surface in corpus.kinds:
            return  # an acronym the project writes as a kind of thing: NRF of "each NRF"
        if kind == "ticket" and _JOB_WORD.search(text, max(0, start - 12), start):
            return  # a job's or a build's number: HIL job #5512
        if kind == "version" and another_release(text, start, end, surface, names, corpus):
            return
        if kind == "identifier" and placeholder(text, start, end):
            return
        if kind == "identifier" and surface in corpus.models:
            return  # a known model number alone: its hardware's name (below)
        if kind == "path" and (TEMPLATE.match(text, end) or text[start - 1 : start] == ">"):
            return  # a template's path: ~/clients/<name>/, feat/SF-<ticket>, <cluster>/apps
        taken.append((start, end))
        name = canonical(surface)
        for sign in "#!" if kind == "ticket" else ():
            if sign in surface[1:]:  # a PR or an MR with its repository: #12 of repo#12, !57
                name = sign + surface.rpartition(sign)[2]
        if kind == "path" and "/" not in name:
            name = corpus.files.get(name, name)
        if kind == "name" and corpus.exact:
            name = (
                corpus.models.get(surface)
                or corpus.initials.get(surface)
                or full_name(surface, corpus)
                or name
            )
        found.append(Entity(kind, surface, start, end, name))

    names = list(capitalised_names(text, corpus.lower))
    for start, end in product_spans(text):  # SQL Server, ASP.NET Core: before their parts
        add("name", text[start:end], start, end)
    for start, end in model_spans(text, names):  # Arista 7050SX3-48YC8: before its parts
        add("name", text[start:end], start, end)
    for (kind, pattern), needle in zip(RULES, NEEDLES, strict=True):
        if needle is None or needle in text:
            for m in pattern.finditer(text):
                if pattern is CODE_NAME and (len(m.group()) < 3 or in_a_name(m, names)):
                    continue  # two letters with a hump are a unit: pH, mS, kW
                surface = dotted_name(m.group()) if pattern is DOTTED_NAME else m.group()
                add(kind, surface, m.start(), m.end())
    if "#" in text:  # a short number is a ticket after a ticket's word or beside a ticket
        for m in SHORT_TICKET.finditer(text):
            if TICKET_WORD.search(text, max(0, m.start() - 24), m.start()) or any(
                e.kind == "ticket" and (e.end + 2 == m.start() or m.end() + 2 == e.start)
                for e in found
            ):
                add("ticket", m.group(), m.start(), m.end())
    if "." in text:  # ``5.12`` once ``5.12.0`` is known, or after ``release``: a release
        for m in TWO_PARTS.finditer(text):
            if m.group() in corpus.releases or RELEASE_WORD.search(
                text, max(0, m.start() - 8), m.start()
            ):
                add("version", m.group(), m.start(), m.end())
    if corpus.releases and "." in text:
        for m in FOUR_PARTS.finditer(text):  # ``0.9.4.1`` once ``0.9.4`` is: its hotfix
            if "v" + m.group(1) in corpus.whole_releases:
                add("version", m.group(), m.start(), m.end())
    for kind, start, end in code_spans(text):
        add(kind, text[start:end], start, end)
    if "St" in text or "Mt. " in text or "Ft. " in text:
        for m in SAINT.finditer(text):
            add("name", m.group(), m.start(), m.end())
    for surface, start, end in names:
        add("name", surface, start, end)
    for start, end in tool_spans(text):  # tools in small letters: vitest, pgbouncer
        add("name", text[start:end], start, end)
    for start, end in listed_components(text) if " (" in text else ():
        add("name", text[start:end], start, end)
    for start, end in lower_openers(text):
        word = text[start:end]
        add("name" if CODE_SHAPED.search(word) else "identifier", word, start, end)
    # names the corpus taught: as written (``Priya`` opening a sentence), and in any case when
    # taught in lower case (``uv``, ``pgbouncer``); the longer first where two overlap
    for start, end in sorted(taught_spans(text, corpus), key=lambda m: (m[0] - m[1], m[0])):
        surface = text[start:end]
        if canonical(surface) in corpus.systems and surface.lower() not in corpus.lower:
            add("system", surface, start, end)  # spelled out: orders service, orders svc
        elif not plural(surface, corpus.lower):
            add("name", surface, start, end)
    for start, end in defined_initials(text) if " (" in text else ():
        add("name", text[start:end], start, end)  # Kestrel Peak (KP, ...): KP names a thing
    # a known model number alone (NX-7 of Norrvik NX-7), last: not inside its whole name
    for m in _WORD_OF_CODE.finditer(text) if corpus.models else ():
        if m.group() in corpus.models:
            add("name", m.group(), m.start(), m.end())
    return sorted(found, key=lambda e: e.start)
