"""Whether a rule's match names something: plausibility of systems, paths and links, and the
code names, ranges and templates that name no one thing."""

from __future__ import annotations

import os
import re

from tribalmemory.entities.acronyms import generic_with_digits
from tribalmemory.entities.aliases import canonical
from tribalmemory.entities.known import FILE, Taught
from tribalmemory.entities.names import PERIOD_OR_RANK
from tribalmemory.entities.rules import EXT, RANGE
from tribalmemory.entities.stoplist import (
    ACRONYMS,
    GENERIC_ACRONYMS,
    MONTHS,
    RANKS,
    STOP,
    UNITS,
    WEEKDAYS,
)

_SYSTEM_SUFFIXES = frozenset(
    "service svc srv api job jobs db vault rates worker cli app web server client bot core sdk "
    "gateway proxy queue store site repo macros prod staging stg dev".split()
)
"""Last parts that make a hyphenated word a system: a kind of software, or the environment a
deployment of it runs in (``loki-prod``, ``norrland-staging``)."""
_RANK_WITH_NUMBER = re.compile(rf"(?:{'|'.join(sorted(RANKS | {'top', 'rank', 'n', 'k'}))})-\d+")
"""A word that ranks or measures joined to its number (``top-1``, ``round-2``, ``n-1``): a
rank, no system, as a capitalised one is (``Phase 3``)."""
_LOCAL_HOST = re.compile(r"(?:localhost|127\.0\.0\.1)(?::\d+)?$")
"""This machine, with a port or without (``localhost:5000``): every machine's, no thing."""
_MIXED_CASE = re.compile(r"[A-Za-z][a-z]*[A-Z][A-Za-z]*")
"""A word with a capital after its first letter and a small one (``IdP``, ``vCPU``)."""
_ENVIRONMENT_FIRST = frozenset("staging prod production stg uat preprod".split())
"""First parts that make a hyphenated word a system: an environment and what runs in it
(``staging-perf``, ``prod-admin``)."""

_FILE_LINE = re.compile(r"\." + EXT + r":\d+$")
"""A file and a line (``app.py:42``): no host and port."""
_FILE_NAME = re.compile(r"^[^:@/]+\." + EXT + r"$")
"""A file's name, no host's (``my-file.tar.gz``)."""

_FOLDERS = re.compile(r"[A-Z][a-z]+(?:/[A-Z][a-z]+)+")
"""Capitalised folder names (``Engine/Physics``): one path rather than two names, when the
first is a known folder (two capitalised words with a slash are more often a pair:
``Kotlin/Spring``, ``Date/Time``)."""
TEMPLATE = re.compile(r"[\w.-]*<")
"""What follows a path that runs on into a placeholder: a template, naming no one thing (as
is a path that runs on from one, after its ``>``)."""
_BRANCH_KINDS = frozenset("feat feature fix bugfix hotfix chore release refactor perf".split())
"""The first part of a conventional branch name (``chore/next-15``, ``fix/login-loop``)."""
_VERSION_END = re.compile(r"^[^/]*[a-z][^/]*/v?\d+(?:\.\d+)+$")
"""A branch of a release (``release/5.12``; not a protocol's version, ``HTTP/1.1``)."""


_PER_UNIT = re.compile(
    r"/(?:s|sec|second|min|minute|h|hr|hour|d|day|wk|week|mo|month|y|yr|year|seat|user)s?"
)
"""A rate's unit (``8867-4 /min``, ``$25/seat``): no path."""
_UNIT = r"(?:[munµk]?(?:g|L|l|m|m2|m3|s|mol|W|V|A|Pa|Hz)|dL|mL|h|min|d|bar|K|°C|ppm)"
_UNIT_RATIO = re.compile(rf"{_UNIT}/{_UNIT}")
"""A measure's unit over another (``g/L``, ``g/mol``, ``W/m3``, ``mg/kg``): no path."""


_PAIR = re.compile(r"(?<![\w/.@~-])([a-z][\w-]*)(/[a-z][\w.-]*[a-z0-9])(?![\w/])")
"""A pair of words in small letters joined by a slash: an owner and a repository
(``quoin/tessera``), a folder and a file, or a rate (``credits/day``)."""


def shared_owners(text: str) -> frozenset[str]:
    """The first parts of pairs that open two or more of the text's pairs
    (``quoin/pointmap``, ``quoin/tessera``): an organisation's repositories or a folder's
    files, each a path."""
    if "/" not in text:
        return frozenset()
    owners = [m.group(1) for m in _PAIR.finditer(text) if not _PER_UNIT.fullmatch(m.group(2))]
    return frozenset(o for o in owners if owners.count(o) > 1)


def plausible(
    kind: str, surface: str, corpus: Taught, owners: frozenset[str] = frozenset()
) -> bool:
    """Whether a pattern's match names something: a hyphenated word names a system only with a
    system-like last part or a digit (``ledger-service``, ``parser-v2``, not ``sign-out``) or
    a part the project knows (:func:`_kin`), and not as a rank with its number (``top-1``); a
    path is not only numbers (``2025/01/09``,
    ``/24``), and a relative one needs two slashes, a trailing one, a file extension,
    capitalised folders starting with a known folder or a release, or a repository (its owner
    may open other pairs of the text: ``owners``, :func:`shared_owners`) (not ``gain/loss``,
    ``3.1k/month``, ``HTTP/1.1``)."""
    folders = corpus.folders
    if kind == "system" and canonical(surface) in corpus.systems:
        return True  # a known system, however written: orders service, orders svc
    if kind == "system":
        return (
            not _compound(surface)
            and not PERIOD_OR_RANK.fullmatch(surface)
            and not _RANK_WITH_NUMBER.fullmatch(surface)
            and (
                surface.rsplit("-", 1)[-1] in _SYSTEM_SUFFIXES
                or surface.split("-", 1)[0] in _ENVIRONMENT_FIRST
                or any(c.isdigit() for c in surface)
                or _kin(surface, corpus)
                or _long_name(surface)
                or any(_NO_VOWEL.fullmatch(p) for p in surface.split("-"))
            )
        )
    if kind == "url" and (_FILE_LINE.search(surface) or _FILE_NAME.search(surface)):
        return False
    if kind in ("identifier", "url") and _LOCAL_HOST.match(surface):
        return False
    if kind == "identifier" and surface[0].isupper() and "-" in surface[1:]:
        if surface.replace("-", "").upper() in GENERIC_ACRONYMS:
            return False  # Wi-Fi
    if kind in ("identifier", "name") and _MIXED_CASE.fullmatch(surface):
        if surface.upper() in GENERIC_ACRONYMS:
            return False  # a generic acronym in mixed case: IdP, vCPU, QoS, mTLS (not Sam)
    if kind == "identifier" and surface.isupper() and "-" in surface and not RANGE.match(surface):
        return not all(p in GENERIC_ACRONYMS or generic_with_digits(p) for p in surface.split("-"))
    if kind == "path" and "\\" in surface and "/" not in surface and surface[1:2] != ":":
        return surface.count("\\") > 1 or surface.endswith("\\") or bool(FILE.search(surface))
    if kind == "path" and (_PER_UNIT.fullmatch(surface) or _UNIT_RATIO.fullmatch(surface)):
        return False
    if kind == "path" and "/" in surface and not surface.startswith(("//", "\\")):
        parts = [p for p in re.split(r"[/*]+", surface) if p]
        if all(p.isdigit() for p in parts):
            return False
        if (
            not surface.startswith(("/", "."))
            and surface.count("/") == 1
            and not surface.endswith("/")
            and not FILE.search(surface.partition("#")[0])  # a page's anchor: a.md#b
            and not (_FOLDERS.fullmatch(surface) and surface.split("/")[0].lower() in folders)
            and not _VERSION_END.search(surface)
            and surface.split("/")[0] not in _BRANCH_KINDS
            and not _repository(surface, corpus, owners)
        ):
            return False
        if not surface.startswith(("/", ".", "~")) and all(p.lower() in STOP for p in parts):
            return False  # words in a row: one/few/many/other
        if not surface.startswith(("/", ".", "~")) and _alternatives(surface.split("/")):
            return False  # two of a kind: mlb-spine1/mlb-spine2, each found on its own
    return True


def _alternatives(parts: list[str]) -> bool:
    """Whether slash-separated parts are names of one kind side by side (``mlb-spine1/mlb-spine2``,
    ``cr1.hfd/cr1.crn``): as long as each other, the same but for their last three characters at
    most, and sharing three at least."""
    if len(parts) < 2 or len({len(p) for p in parts}) != 1:
        return False
    shared = len(os.path.commonprefix(parts))
    return shared >= 3 and shared >= len(parts[0]) - 3


_PREFIXES = frozenset(
    "non pre post re self multi cross co anti sub semi over under out de un mis inter intra "
    "bi tri mid ex per half well".split()
)
"""English prefixes a compound word opens with (``self-serve``, ``per-site``)."""
_COMPOUND_ENDS = frozenset(
    "only like style based heavy facing scoped wide free friendly aware specific compatible "
    "related driven powered native level side time up down in out on off over back away".split()
)
"""English words a compound adjective ends with (``gmail-like``, ``tools-only``), and the
particles of a phrasal verb's noun (``sign-up``, ``add-on``, ``roll-out``)."""


def _compound(surface: str) -> bool:
    """Whether a hyphenated word in small letters is an English compound (:data:`_PREFIXES`,
    :data:`_COMPOUND_ENDS`, a stop word first: ``per-site``, ``r52-based``, ``tools-only``; not
    an acronym first, which no English word is: ``api-gateway``)."""
    parts = surface.split("-")
    return (
        (parts[0] in STOP and parts[0] not in ACRONYMS and parts[0] not in UNITS)
        or parts[0] in _PREFIXES
        or parts[-1] in _COMPOUND_ENDS
    )


_NO_VOWEL = re.compile(r"[b-df-hj-np-tv-xz]{2,}")
"""A part of two letters or more without a vowel (``bff``, ``gw``, ``ng``, ``db``): an
abbreviation, no English word, so the hyphenated word is a name (``mobile-bff``,
``stress-ng``, ``db-migrate``)."""


def _long_name(surface: str) -> bool:
    """Whether a hyphenated word in small letters has three parts or more, none a small word:
    a name (``hook-delete-policy``, ``ebs-csi-controller``), as English joins three words
    only over one (``up-to-date``, ``end-to-end``)."""
    parts = surface.split("-")
    return len(parts) > 2 and all(len(p) > 1 and p not in STOP for p in parts)


def _repository(surface: str, corpus: Taught, owners: frozenset[str]) -> bool:
    """Whether ``owner/name`` names a repository, an API's version or a resource of a group: its
    name is a system (``ferrow/ferrow-cli``, ``forkbase/homebrew-tap`` once Homebrew is known),
    a part is written as code (:func:`_code_part`: ``marten-lab/marten_ws``,
    ``autoscaling/v2``, ``velero/streaming-daily``), which no pair of words is (``gain/loss``),
    or its owner opens other pairs of the text (``owners``: ``quoin/pointmap``,
    ``quoin/tessera``)."""
    owner, _, name = surface.partition("/")
    if not owner:
        return False
    return (
        owner in owners
        or ("-" in name and plausible("system", name, corpus))
        or any(_code_part(p) for p in (owner, name))
    )


_LETTERS_THEN_DIGITS = re.compile(r"[a-z]+\d+[a-z\d]*")


def _code_part(part: str) -> bool:
    """Whether a part of a path in small letters is written as code: with an underscore,
    letters then digits (``v2``, ``v2beta2``), or hyphens that join no English compound."""
    if not part.islower() and not part.isdigit():
        return False
    return (
        "_" in part.strip("_")
        or bool(_LETTERS_THEN_DIGITS.fullmatch(part))
        or ("-" in part.strip("-") and not _compound(part))
    )


def _kin(surface: str, corpus: Taught) -> bool:
    """Whether a hyphenated word in small letters is kin to what the project knows: its first
    part starts a known system (``pw-fhir`` once ``pw-api`` is known), or one of its parts of
    three letters or more is a known name (``okta-admins`` once ``Okta`` is, ``pw-mirth``
    once ``Mirth`` is; not ``go-live`` with ``Go`` known)."""
    parts = surface.split("-")
    return parts[0] in corpus.families or any(
        len(p) > 2 and p in corpus.lower and p not in STOP for p in parts
    )


def placeholder(text: str, start: int, end: int) -> bool:
    """Whether a code name fills angle brackets (``<we_id>`` of ``resend <evt>``): a
    placeholder of a template, naming no one thing (a file there is one: ``<windows.h>``)."""
    return text[start - 1 : start] == "<" and text[end : end + 1] == ">"


_DATES = frozenset(WEEKDAYS | MONTHS)


def stop_pair(surface: str) -> bool:
    """Whether a capitalised hyphenated word joins days or months (``Monday-Tuesday``,
    ``Jan-Mar``): a range, not a header's name."""
    return surface[:1].isupper() and any(p.lower() in _DATES for p in surface.split("-"))
