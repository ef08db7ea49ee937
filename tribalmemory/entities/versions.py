"""Numbers: which short ``#`` numbers are tickets, which two- and four-part numbers are the
team's releases, and which versions are no release of the team's (a section, a dependency,
another product)."""

from __future__ import annotations

import re
from collections.abc import Iterable

from tribalmemory.entities.acronyms import ACRONYM
from tribalmemory.entities.aliases import canonical
from tribalmemory.entities.filters import plausible
from tribalmemory.entities.known import Taught
from tribalmemory.entities.stoplist import STOP
from tribalmemory.entities.tools import AMBIGUOUS_TOOLS, TOOLS

SHORT_TICKET = re.compile(r"(?<![\w&])#\d{1,2}\b(?![.\w])")
"""``#7``, ``#42``: a rank as often as a ticket (``Front page #6``)."""
TICKET_WORD = re.compile(
    r"\b(?:PRs?|pull requests?|MRs?|issues?|bugs?|tickets?|fix(?:es|ed)?|clos(?:es|ed)|"
    r"resolv(?:es|ed)|merged|reverts?|reverted)\s+$",
    re.IGNORECASE,
)
"""The word before a short number that makes it a ticket (``PR #12``, ``closes #7``)."""

TWO_PARTS = re.compile(r"(?<![\w.])\d+\.\d+(?![\w.]*\w)")
"""A two-part number (``5.12``): a release when a known release starts with it."""
RELEASE_WORD = re.compile(r"\brelease\s$", re.IGNORECASE)
"""The word before a two-part number that makes it the team's release (``release 2026.3``)
before any release of three parts starting with it is known."""

FOUR_PARTS = re.compile(r"(?<![\w.])(\d+\.\d+\.\d+)\.\d+(?![\w.]*\w)")
"""A four-part number (``0.9.4.1``): an address as often (``10.0.0.1``), a release when a
known release is its first three parts (a hotfix of ``0.9.4``)."""


_SECTION = re.compile(
    r"(?:\b(?:req|requirement|section|sec|clause|guideline|article|art|chapter|ch|rule|para|"
    r"paragraph|control|criterion)\.?|§)\s*$",
    re.IGNORECASE,
)
"""The word before a numbered section of a document (``Req 10.5.1``, ``guideline 3.1.1``,
``§ 4.2.1``): its number is no release."""


def _section_number(text: str, start: int) -> bool:
    """Whether the number at ``start`` follows a section word (:data:`_SECTION`)."""
    return bool(_SECTION.search(text, max(0, start - 16), start))


_MODULE_PATH = r"(?<![^\s`])[\w.-]+(?:/[\w.-]+)*/[\w.-]*\w`?\s"
"""A module's path before its version, written as code or not (``x/net``,
`` `github.com/coder/websocket` ``)."""
_DEPENDENCY = re.compile(
    r"(?:~>|(?<![-=])[<>]=?|[=!]=|[~^@#])\s?$"
    rf"|{_MODULE_PATH}(?:(?:to|from|between)\s)?$"
    rf"|{_MODULE_PATH}(?:between|from)\s\S+\s(?:and|to)\s$"
)
"""What comes before the version of a dependency: a version constraint (``~> 7.1.5``,
``>=2.0.1``, ``react@18.2.0``, ``hl7.fhir.us.core#6.1.0``) or a module path, written as code
or not (``x/net v0.38.0``, `` `github.com/coder/websocket` v1.8.12``, ``x/net to v0.38.0``,
both ends of ``x/net between v0.21.0 and v0.33.0``); it is another project's release, not the
team's."""


def _dependency_version(text: str, start: int) -> bool:
    """Whether the number at ``start`` is a dependency's version (:data:`_DEPENDENCY`)."""
    return bool(_DEPENDENCY.search(text, max(0, start - 64), start))


_WORD_BEFORE = re.compile(r"([A-Za-z][\w+#.-]*\w|[A-Za-z])\s$")
"""The word right before a release, one space between them."""
_PART_OF_A_TOKEN = re.compile(r"[\w.]-$|:$")
"""What comes right before a release written inside a longer token: a chart's package
(``tenant-operator-0.9.0``), an image's tag (``dbt-runner:1.8.2``)."""
_TOKEN_GOES_ON = re.compile(r"-\w|\.[xX*]\b")
"""What follows a release inside a longer token (``1.8.2-2``) or a range of them (``v1.18.x``)."""


_PACKAGE = re.compile(r"[A-Za-z]\w*(?:\.[A-Za-z]\w*)+")
"""A dotted package name (``System.Text.Json``, ``com.google.guava``): a library."""


def _product_version(
    text: str, start: int, surface: str, names: Iterable[tuple[str, int, int]], corpus: Taught
) -> bool:
    """Whether the release at ``start`` is another product's: it follows that product's name
    (``Airflow 2.9.1``, ``Mirth Connect 4.4.2``, ``HL7 v2.5.1``, ``ESO 0.9.13``: a name of the
    text, an acronym, or a known name not written as a system) and is no known release of the
    team (``Android 5.12.0`` once ``5.12.0`` is known on its own); a package in small letters
    that is no system of the team's names a product too (``astronomer-cosmos 1.4.3``), and so
    does a listed tool (``redis 7.2.4``, ``celery 5.3.1``, :mod:`.tools`) and a dotted package
    (``System.Text.Json 8.0.4``)."""
    m = _WORD_BEFORE.search(text, max(0, start - 48), start)
    if m is None:
        return False
    word = m.group(1)
    named = (
        any(e == m.end(1) for _, _, e in names)
        or bool(ACRONYM.fullmatch(word))
        or ("-" not in word and word.lower() in corpus.lower and word.lower() not in STOP)
        or ("-" in word and word.islower() and not plausible("system", word, corpus))
        or word in TOOLS
        or word in AMBIGUOUS_TOOLS
        or bool(_PACKAGE.fullmatch(word))
    )
    return named and canonical(surface) not in corpus.whole_releases


_UPGRADE = re.compile(r"(?<![\w.])(v?\d+(?:\.\d+)+)\s?(?:->|\u2192|=>|to)\s?$")
"""A release and an arrow before another (``zephyr v3.7.1 -> v4.1.0``): both ends of one
upgrade, of one product."""


def another_release(
    text: str,
    start: int,
    end: int,
    surface: str,
    names: Iterable[tuple[str, int, int]],
    corpus: Taught,
) -> bool:
    """Whether the version ``surface`` at ``start``..``end`` is no release of the team's: a
    section's number, a dependency's version, a part of a longer token or another product's."""
    return bool(
        _section_number(text, start)
        or _dependency_version(text, start)
        or _PART_OF_A_TOKEN.search(text, max(0, start - 2), start)
        or _TOKEN_GOES_ON.match(text, end)
        or _product_version(text, start, surface, names, corpus)
        or _upgraded_from_another(text, start, names, corpus)
    )


def _upgraded_from_another(
    text: str, start: int, names: Iterable[tuple[str, int, int]], corpus: Taught
) -> bool:
    """Whether the release at ``start`` ends an upgrade from another product's release
    (:data:`_UPGRADE`): the product's too."""
    m = _UPGRADE.search(text, max(0, start - 32), start)
    if m is None:
        return False
    return another_release(text, m.start(1), m.end(1), m.group(1), names, corpus)
