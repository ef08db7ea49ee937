"""Entities a memory names (:func:`extract_entities`): patterns for links, tickets, versions,
paths and code names (the detector's identifier patterns among them), and capitalised names
inside sentences, minus a stop list."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from tribalmemory.entities.aliases import canonical
from tribalmemory.entities.known import FILE, Taught, taught, taught_spans
from tribalmemory.entities.patterns import CODE_NAME
from tribalmemory.entities.stoplist import (
    ACRONYMS,
    CAPITALISED_WORDS,
    GENERIC_ACRONYMS,
    MONTHS,
    STOP,
    WEEKDAYS,
)


@dataclass(frozen=True)
class Entity:
    """One mention: its ``kind``, the ``text`` as written, its span and :func:`canonical` name."""

    kind: str
    text: str
    start: int
    end: int
    name: str


_EXT = (
    r"(?:py|pyi|go|rs|md|rst|toml|ini|cfg|conf|h|hpp|c|cc|cpp|hlsl|cs|csproj|sln|java|kt|kts|"
    r"swift|rb|php|scala|csv|log|json|ya?ml|xml|html?|css|scss|js|jsx|mjs|ts|tsx|vue|txt|tmp|"
    r"bak|sh|ps1|bat|sql|lock|proto|tf|gradle|plist|ipynb|pdf|png|jpe?g|svg|zip|gz|tar|pkg|dll|"
    r"exe|wasm)"
)
_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    (  # any scheme (gs://, oci://, s3://), a mailbox
        "url",
        re.compile(
            r"\b(?:https?|[a-z][a-z0-9+]*)://[^\s)>\]]+"
            r"|\b[\w.+-]+@[\w-]+(?:\.[\w-]+)*\.[A-Za-z]{2,}\b"
        ),
    ),
    (  # a host, with its path (golang.org/x/net) and an image's tag (ghcr.io/o/img:1.2); not
        # the first part of a longer name (api.stripe.com.svc.cluster.local)
        "url",
        re.compile(
            r"\b[\w-]+(?:\.[\w-]+)*\.(?:com|io|org|net|dev)\b(?!\.\w)"
            r"(?:(?:/[\w.~%+-]*[\w~%+-])+(?::\w[\w.-]*\w)?)?"
        ),
    ),
    ("url", re.compile(r"(?<![\w.])[a-z][\w-]*(?:\.[a-z][\w-]*)+:\d{2,5}\b")),  # host:port
    (
        "ticket",
        re.compile(r"(?<![\w&])#\d{3,}\b|\b[a-z][\w.-]*/?[\w.-]*\w#\d+\b(?!\.\d)"),
    ),  # repo#12
    ("ticket", re.compile(r"\b[A-Z][A-Z0-9]+-\d{2,}(?:-\d+)*\b")),  # not UTC-3; BF-2025-08
    (
        "version",
        re.compile(
            r"(?:(?<![\w.])|(?<=\.\.))v\d+(?:\.\d+)+\b"  # v2.88, and v2.88 of v2.87..v2.88
            r"|(?<![\w.])\d+\.\d+\.\d+(?![\w.]*\w)"
        ),
    ),
    (  # a time zone of the tz database: Europe/Dublin, America/Argentina/Buenos_Aires
        "identifier",
        re.compile(
            r"\b(?:Africa|America|Antarctica|Arctic|Asia|Atlantic|Australia|Europe|Indian|"
            r"Pacific|Etc)(?:/[A-Z][\w+-]*)+"
        ),
    ),
    ("path", re.compile(r"(?:\\\\|//)[\w.-]+(?:[\\/][\w.*-]+)*(?:/\.\.\.)?")),
    (  # Windows: C:\Program Files\x.exe (a space before a capital, inside), Engine\Core
        "path",
        re.compile(
            r"\b[A-Za-z]:\\(?:[\w.-]+(?: [A-Z0-9][\w.-]*)*\\)*[\w.-]*"
            r"|(?<![\w\\/])[\w.-]+(?:\\[\w.*-]+)+\\?"
        ),
    ),
    (  # slash paths (a trailing / kept, [segments] of routes), routes with {parameters},
        # home paths
        "path",
        re.compile(
            r"(?<![\w/.$\[@])~?(?:/?(?:[\w.*-]+|\[[\w.]+\]|\{[\w.]+\})/)+"
            r"(?:[\w.*-]*\w|\{[\w.]+\})(?:/\*|/(?!\w))?"
            r"|(?<![\w/$)~])/[\w-]+(?:/[\w*-]+)*"  # not after a call: a()/b(); a home: ~/x
            r"|~/(?:[\w.*-]+/)*[\w.*-]*\w/?"
        ),
    ),
    ("path", re.compile(r"(?<![\w/])[\w-]+/(?=[\s,;:)]|\.(?:\s|$)|$)")),
    ("path", re.compile(r"(?<![\w/])\*\.[A-Za-z0-9]+\b")),  # globs: *.pkg
    (
        "path",
        re.compile(
            r"(?<![\w/])[\w*.-]*\." + _EXT + r"\b(?!\.\w|-\w)|(?<![\w.])\.[a-z][\w.-]*[a-z]\b"
        ),
    ),
    ("path", re.compile(r"(?<![\w/.])[A-Z][a-z]+(?:/[A-Z][a-z]+)+(?![\w/])")),  # Engine/Physics
    ("identifier", re.compile(r"\b[A-Za-z_]\w*(?:::[A-Za-z_]\w*)+(?:\.[A-Za-z_]\w*)*")),
    ("identifier", re.compile(r"(?<![\w-])--[a-z][\w-]*")),
    ("identifier", re.compile(r"(?<![\w#&])#[a-z][a-z0-9]+(?:-[a-z0-9]+)*")),  # channels, tags
    (  # calls: json.dumps(), max(updated_at); not a plural's (s): PR(s)
        "identifier",
        re.compile(r"@?\b[A-Za-z_][\w.]*(?<=\w)(?=\((?:\)|(?!s\))[^\s)]))"),
    ),
    (  # dotted names before humps (a rule id's hyphens after three parts), a glob: a.b.*
        "identifier",
        re.compile(r"\b[A-Za-z_]\w*(?:(?:\.[A-Za-z_]\w+)+(?:-[a-z0-9]+)*(?:\.\*)?|\.\*)"),
    ),
    ("identifier", re.compile(r"(?<![\w@/])@[a-z][\w.-]*/[a-z0-9][\w.-]*\w")),  # @scope/pkg
    (  # a code name in a namespace: android:foregroundServiceType, logs:GetLogEvents
        "identifier",
        re.compile(r"\b[a-z][\w-]*:(?:[a-z]+|[A-Z][a-z0-9]+)(?:[A-Z][a-z0-9]*)+\b"),
    ),
    (  # a key and its value written as code, a digit, * or + in the value: ndots:5,
        # render:v2:*, state:modified+ (not two words: sim:real)
        "identifier",
        re.compile(r"(?<![\w/.:@-])[a-z][\w-]*:(?=[\w:*+-]*[\d*+])[\w*+-]+(?::[\w*+-]+)*(?![\w/])"),
    ),
    ("identifier", CODE_NAME),  # the detector's code names (features.identifiers)
    ("identifier", re.compile(r"(?<![\w.$])_[a-z][a-z0-9]*(?:_[a-z0-9]+)*\b")),  # _private
    (  # a log level in capitals: a setting (DEBUG on in prod)
        "identifier",
        re.compile(r"\b(?:TRACE|DEBUG|INFO|NOTICE|WARN|WARNING|ERROR|FATAL|CRITICAL)\b"),
    ),
    ("identifier", re.compile(r"\b0x[0-9A-Fa-f]{4,}\b")),
    ("identifier", re.compile(r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b")),  # hashes
    (  # a host numbered from a zero (gpu02, node01), a range of them (gpu01-04)
        "identifier",
        re.compile(r"\b[a-z]{2,}0\d(?:-\d\d)?\b(?![.-]\w)"),
    ),
    (  # headers: Idempotency-Key, X-Kyrio-Signature
        "identifier",
        re.compile(r"\b(?:X-)?[A-Z][a-z]+(?:-[A-Z][a-z]+)+\b"),
    ),
    (  # a package with its release: tenant-operator-0.9.0
        "identifier",
        re.compile(r"\b[a-z][a-z0-9]*(?:-[a-z0-9]+)*-v?\d+(?:\.\d+){2,}\b(?![.-]\w)"),
    ),
    ("system", re.compile(r"\b[a-z][a-z0-9]*(?:-[a-z0-9]+)+\b(?:-\*)?")),  # and a glob: x-*
)
_NEEDLES: tuple[str | None, ...] = (
    *(None, ".", ":", "#", "-", "."),  # links, hosts, hosts with a port, tickets, keys, versions
    "/",  # time zones
    *(None, "\\", "/", "/", "*.", ".", "/"),  # paths
    *("::", "--", "#", "(", ".", "@", ":", ":", None, "_", None, "0x", None, "0", "-", "."),
    "-",  # systems
)
"""What a text holds for each rule of :data:`_RULES` to match (None: no test): a text without
it skips the rule."""
_SYSTEM_SUFFIXES = frozenset(
    "service svc srv api job jobs db vault rates worker cli app web server client bot core sdk "
    "gateway proxy queue store site repo macros prod staging stg dev".split()
)
"""Last parts that make a hyphenated word a system: a kind of software, or the environment a
deployment of it runs in (``loki-prod``, ``norrland-staging``)."""

_FILE_LINE = re.compile(r"\." + _EXT + r":\d+$")
"""A file and a line (``app.py:42``): no host and port."""

_SHORT_TICKET = re.compile(r"(?<![\w&])#\d{1,2}\b(?![.\w])")
"""``#7``, ``#42``: a rank as often as a ticket (``Front page #6``)."""
_TICKET_WORD = re.compile(
    r"\b(?:PRs?|pull requests?|MRs?|issues?|bugs?|tickets?|fix(?:es|ed)?|clos(?:es|ed)|"
    r"resolv(?:es|ed)|merged|reverts?|reverted)\s+$",
    re.IGNORECASE,
)
"""The word before a short number that makes it a ticket (``PR #12``, ``closes #7``)."""

_TWO_PARTS = re.compile(r"(?<![\w.])\d+\.\d+(?![\w.]*\w)")
"""A two-part number (``5.12``): a release when a known release starts with it."""
_RELEASE_WORD = re.compile(r"\brelease\s$", re.IGNORECASE)
"""The word before a two-part number that makes it the team's release (``release 2026.3``)
before any release of three parts starting with it is known."""

_FOUR_PARTS = re.compile(r"(?<![\w.])(\d+\.\d+\.\d+)\.\d+(?![\w.]*\w)")
"""A four-part number (``0.9.4.1``): an address as often (``10.0.0.1``), a release when a
known release is its first three parts (a hotfix of ``0.9.4``)."""

_FOLDERS = re.compile(r"[A-Z][a-z]+(?:/[A-Z][a-z]+)+")
"""Capitalised folder names (``Engine/Physics``): one path rather than two names, when the
first is a known folder (two capitalised words with a slash are more often a pair:
``Kotlin/Spring``, ``Date/Time``)."""
_TEMPLATE = re.compile(r"[\w.-]*<")
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


def _plausible(kind: str, surface: str, corpus: Taught) -> bool:
    """Whether a pattern's match names something: a hyphenated word names a system only with a
    system-like last part or a digit (``ledger-service``, ``parser-v2``, not ``sign-out``) or
    a part the project knows (:func:`_kin`); a path is not only numbers (``2025/01/09``,
    ``/24``), and a relative one needs two slashes, a trailing one, a file extension,
    capitalised folders starting with a known folder or a release (not ``gain/loss``,
    ``3.1k/month``, ``HTTP/1.1``)."""
    folders = corpus.folders
    if kind == "system":
        return (
            not _compound(surface)
            and not _PERIOD_OR_RANK.fullmatch(surface)
            and (
                surface.rsplit("-", 1)[-1] in _SYSTEM_SUFFIXES
                or any(c.isdigit() for c in surface)
                or _kin(surface, corpus)
                or _long_name(surface)
                or any(_NO_VOWEL.fullmatch(p) for p in surface.split("-"))
            )
        )
    if kind == "url" and _FILE_LINE.search(surface):
        return False
    if kind == "path" and "\\" in surface and "/" not in surface and surface[1:2] != ":":
        return surface.count("\\") > 1 or surface.endswith("\\") or bool(FILE.search(surface))
    if kind == "path" and _PER_UNIT.fullmatch(surface):
        return False
    if kind == "path" and "/" in surface and not surface.startswith(("//", "\\")):
        parts = [p for p in re.split(r"[/*]+", surface) if p]
        if all(p.isdigit() for p in parts):
            return False
        if (
            not surface.startswith(("/", "."))
            and surface.count("/") == 1
            and not surface.endswith("/")
            and not FILE.search(surface)
            and not (_FOLDERS.fullmatch(surface) and surface.split("/")[0].lower() in folders)
            and not _VERSION_END.search(surface)
            and surface.split("/")[0] not in _BRANCH_KINDS
            and not _repository(surface, corpus)
        ):
            return False
        if not surface.startswith(("/", ".", "~")) and all(p in STOP for p in parts):
            return False  # words in a row: one/few/many/other
    return True


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
        (parts[0] in STOP and parts[0] not in ACRONYMS)
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


def _repository(surface: str, corpus: Taught) -> bool:
    """Whether ``owner/name`` names a repository, an API's version or a resource of a group: its
    name is a system (``ferrow/ferrow-cli``, ``forkbase/homebrew-tap`` once Homebrew is known),
    or a part is written as code (:func:`_code_part`: ``marten-lab/marten_ws``,
    ``autoscaling/v2``, ``velero/streaming-daily``), which no pair of words is (``gain/loss``)."""
    owner, _, name = surface.partition("/")
    if not owner:
        return False
    return ("-" in name and _plausible("system", name, corpus)) or any(
        _code_part(p) for p in (owner, name)
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


_DEPENDENCY = re.compile(
    r"(?:~>|(?<![-=])[<>]=?|[=!]=|[~^@#])\s?$|(?<!\S)[\w.-]+/[\w.-]*\w\s(?:(?:to|from|between)\s)?$"
    r"|(?<!\S)[\w.-]+/[\w.-]*\w\s(?:between|from)\s\S+\s(?:and|to)\s$"
)
"""What comes before the version of a dependency: a version constraint (``~> 7.1.5``,
``>=2.0.1``, ``react@18.2.0``, ``hl7.fhir.us.core#6.1.0``) or a module path (``x/net
v0.38.0``, ``x/net to v0.38.0``, both ends of ``x/net between v0.21.0 and v0.33.0``); it is
another project's release, not the team's."""


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


def _product_version(
    text: str, start: int, surface: str, names: Iterable[tuple[str, int, int]], corpus: Taught
) -> bool:
    """Whether the release at ``start`` is another product's: it follows that product's name
    (``Airflow 2.9.1``, ``Mirth Connect 4.4.2``, ``HL7 v2.5.1``, ``ESO 0.9.13``: a name of the
    text, an acronym, or a known name not written as a system) and is no known release of the
    team (``Android 5.12.0`` once ``5.12.0`` is known on its own); a package in small letters
    that is no system of the team's names a product too (``astronomer-cosmos 1.4.3``)."""
    m = _WORD_BEFORE.search(text, max(0, start - 48), start)
    if m is None:
        return False
    word = m.group(1)
    named = (
        any(e == m.end(1) for _, _, e in names)
        or bool(_ACRONYM.fullmatch(word))
        or ("-" not in word and word.lower() in corpus.lower and word.lower() not in STOP)
        or ("-" in word and word.islower() and not _plausible("system", word, corpus))
    )
    return named and canonical(surface) not in corpus.whole_releases


_CAPITALISED = re.compile(r"\b[A-Z][\w&]*(?:[+#]+)?(?:\s(?:&\s)?[A-Z][\w]*)*")
_ACRONYM = re.compile(r"[A-Z0-9&]*[A-Z][A-Z0-9&]*[A-Z][A-Z0-9&]*")
"""Two capitals or more and no small letter: ``PS5``, ``GPU``; such a word stands alone,
never ends a name (``Hollowmere PS5``, ``Linux VM``), and opens one only inside a sentence
(:func:`_opens_a_name`)."""
_PLURAL_ACRONYM = re.compile(r"[A-Z0-9&]*[A-Z][A-Z0-9&]*[A-Z0-9][A-Z0-9&]*(?:s|'s|\u2019s)")
"""An acronym's plural (``APIs``, ``SKUs``, ``P1s``): a kind of thing, never one thing; it
stands alone as an acronym does."""
_SENTENCE_END = frozenset(".!?:\n")
_ADJECTIVE = re.compile(r"[A-Z][a-z]+(?:ish|ese)")
"""A language or a nationality (``Polish``, ``English``, ``British``, ``Portuguese``): said of
things, it names none; trimmed from a run's edges as a stop word is."""
_QUOTES = frozenset("\"'`\u2018\u201c")
_HUMPED = re.compile(r"[a-z][A-Z]")
"""A capital after a small letter: a word with humps (``GitHub``, ``OfflineMapService``), no
sentence's ordinary word; it does not keep a sentence opener before it (``Drop
OfflineMapService``)."""
_IRREGULAR = frozenset(
    "told sent made got ran put kept left took gave saw said went came wrote built brought "
    "bought thought felt held met paid sold spent chose began broke drove forgot knew led "
    "meant spoke stood taught threw understood woke using having being doing".split()
)
"""Past tenses that do not end in -ed, and short gerunds, opening a sentence (``Told Bram``,
``Using Vite``): a verb, not part of the name after it."""
_INFLECTED = re.compile(r"[A-Z][a-z]{2,}(?:ed|ing)")
"""A past-tense verb or a gerund opening a sentence (``Asked Daan``, ``Reviewed Rosa``,
``Checking Kenji``, ``Existing EU customers``)."""


def _placeholder(text: str, start: int, end: int) -> bool:
    """Whether a code name fills angle brackets (``<we_id>`` of ``resend <evt>``): a
    placeholder of a template, naming no one thing (a file there is one: ``<windows.h>``)."""
    return text[start - 1 : start] == "<" and text[end : end + 1] == ">"


def _sentence_initial(text: str, start: int) -> bool:
    """Whether ``start`` opens a sentence: the text's start, after ``.!?:`` (not the period of
    a title: ``Dr. Ames``), a line break or an opening quote (a quoted title or message)."""
    before = start - 1
    while before >= 0 and text[before] in " \t(*-":
        before -= 1
    if before >= 0 and text[before] in _QUOTES:
        ahead = before - 1  # an opening quote: at the start, or after a space or a bracket
        if ahead < 0 or text[ahead] in " \t\n([":
            return True
        while before >= 0 and text[before] in " \t(*-\"'`":
            before -= 1
    if before > 0 and text[before] == "." and _TITLE.search(text, max(0, before - 5), before):
        return False
    return before < 0 or text[before] in _SENTENCE_END


_TITLE = re.compile(r"\b(?:Mr|Mrs|Ms|Dr|Prof)$")
"""A title before a name, whose period ends no sentence."""

Word = tuple[str, int]
"""A word of a capitalised run and where it starts."""


def _segments(match: re.Match[str], known: frozenset[str]) -> list[list[Word]]:
    """A run of capitalised words cut around its acronyms, except an acronym that opens a
    name inside a sentence (:func:`_opens_a_name`)."""
    parts: list[list[Word]] = []
    part: list[Word] = []
    for word in re.finditer(r"\S+", match.group()):
        item = (word.group(), match.start() + word.start())
        if _ACRONYM.fullmatch(item[0]) or _PLURAL_ACRONYM.fullmatch(item[0]):
            if part:
                parts.append(part)
            parts.append([item])
            part = []
        else:
            part.append(item)
    if part:
        parts.append(part)
    joined: list[list[Word]] = []
    for part in parts:
        if joined and _opens_a_name(match.string, joined[-1], part, known):
            joined[-1] = joined[-1] + part
        else:
            joined.append(part)
    return joined


def _opens_a_name(text: str, before: list[Word], part: list[Word], known: frozenset[str]) -> bool:
    """Whether an acronym (``before``) opens the name of the capitalised words after it: inside
    a sentence, before a word that is neither ordinary nor an acronym, which together are no
    known name of their own (``AWS Secrets Manager``, ``the UK Sanctions List``, ``US Core``;
    not ``RDS Postgres`` with ``Postgres`` known)."""
    acronym, start = before[0]
    first = part[0][0]
    if len(before) > 1 or not _ACRONYM.fullmatch(acronym):
        return False
    if _ACRONYM.fullmatch(first):
        return len(part) == 1 and _named_acronym(acronym) and _named_acronym(first)
    if _PLURAL_ACRONYM.fullmatch(first) or _ordinary(first) or _sentence_initial(text, start):
        return False
    return text[part[0][1] : part[-1][1] + len(part[-1][0])].lower() not in known


def _quoted_whole(text: str, start: int, end: int) -> bool:
    """Whether the span fills a quoted text (``'Beta Club'``): a title, not a name."""
    return (
        start > 0
        and end < len(text)
        and text[start - 1] in _QUOTES
        and text[end] in _QUOTES | {"\u2019", "\u201d"}
    )


_MENU = re.compile(r"(?<![-=>])>\s?$|\u203a\s?$")
"""The separator before a step of a menu path (``Settings > Apple ID``, ``Billing \u203a
Plans``); not an arrow (``->``, ``=>``), which leads to a thing."""


def _menu_step(text: str, start: int) -> bool:
    """Whether a run at ``start`` is a step of a menu path (:data:`_MENU`): the label of a
    screen or a section, not a name; the first step is left to the other rules (``Play
    Console > App integrity``)."""
    return bool(_MENU.search(text, max(0, start - 3), start))


_PERIOD_OR_RANK = re.compile(r"(?:Q[1-4]|H[12]|P[0-4]|FY\d{2,4}|(?i:sev)-?\d)")
"""A quarter, a half, a priority, a severity or a fiscal year (``Q1``, ``H2``, ``P1``,
``SEV1``, ``sev-2``, ``FY26``): a time or a rank, like a date, not a thing."""
_STATUS_CODE = re.compile(r"\b[1-5]\d\d\s$")
"""An HTTP status code, before its reason phrase (``429 Too Many Requests``)."""


def _reason_phrase(text: str, start: int) -> bool:
    """Whether a run at ``start`` follows an HTTP status code: its reason phrase, a message
    (``410 Unregistered``), not a name."""
    return bool(_STATUS_CODE.search(text, max(0, start - 4), start))


_CLOCK = re.compile(r"\b\d{1,2}(?::\d{2}|(?::\d{2})?\s?[ap]m)\s$")
_ZONE_AFTER = re.compile(r"\s(?:local\s)?time\b|\s\((?:UTC|GMT)\b")
"""A clock time before a place, or ``time`` / a UTC offset after it: the place names a time
zone (``09:45 London``, ``Dublin local time``, ``Buenos Aires (UTC-3)``)."""


def _time_place(text: str, start: int, end: int) -> bool:
    """Whether a run names the place of a time zone (:data:`_CLOCK`, :data:`_ZONE_AFTER`): a
    place that is not the team's own."""
    return bool(_CLOCK.search(text, max(0, start - 12), start) or _ZONE_AFTER.match(text, end))


_SMALL = r"-(?:to|in|of|and|by|on|for)-"
_COMPOUND_START = re.compile(_SMALL)
_COMPOUND_END = re.compile(_SMALL + "$")


def _in_a_compound(text: str, start: int, end: int) -> bool:
    """Whether a capitalised word is a part of a compound over a small word (``Site-to-Site``,
    ``End-to-End``): English, not a name."""
    return bool(
        _COMPOUND_START.match(text, end) or _COMPOUND_END.search(text, max(0, start - 5), start)
    )


def _ordinary(word: str) -> bool:
    """Whether a capitalised word is an ordinary one at a run's edge: a stop word or an
    adjective of a language or a nationality (:data:`_ADJECTIVE`)."""
    return word.lower() in STOP or bool(_ADJECTIVE.fullmatch(word))


def _names(text: str, known: frozenset[str]) -> Iterable[tuple[str, int, int]]:
    for match in _CAPITALISED.finditer(text):
        for words in _segments(match, known):
            # a sentence's first word is kept when more capitalised words follow it in its
            # segment (an acronym after it is no part of its name: ``Quarterly ASV scan``)
            alone = len([w for w, _ in words if not _ordinary(w) and not _HUMPED.search(w)]) <= 1
            opens = _sentence_initial(text, words[0][1])
            first = words[0][1]
            while words and (
                _ordinary(words[0][0])
                or (
                    opens
                    and words[0][0].lower() not in known
                    and _opener(text, words, alone, known)
                )
            ):
                words = words[1:]
                opens = False
            while words and _ordinary(words[-1][0]):
                words = words[:-1]
            if not words:
                continue
            start, end = words[0][1], words[-1][1] + len(words[-1][0])
            surface = text[start:end]
            if len(surface) < 2 or _PLURAL_ACRONYM.fullmatch(surface):
                continue  # acronyms and units (GB, PAN, HMAC) name no one thing; PS5, EKS do
            if _quoted_whole(text, start, end) or _menu_step(text, start):
                continue
            if _PERIOD_OR_RANK.fullmatch(surface) or _reason_phrase(text, first):
                continue
            if _time_place(text, start, end) or _in_a_compound(text, start, end):
                continue
            if _plural(surface, known):
                continue
            if _ACRONYM.fullmatch(surface) and not any(c.isdigit() for c in surface):
                model = _MODEL.match(text, end) if surface.isalpha() else None
                if model:  # a model: RTX 3070, RX 6600
                    end = model.end()
                    surface = text[start:end]
                elif (
                    _generic_acronym(surface)
                    or _acronym_in_code(text, start, end)
                    or _counted(text, start, end)
                ):
                    continue
            yield surface, start, end


_ROMAN = re.compile(r"M{0,3}(?:C[MD]|D?C{0,3})(?:X[CL]|L?X{0,3})(?:I[XV]|V?I{0,3})")
"""A Roman numeral (``Type II``, ``Phase IV``): a number, no name."""


def _generic_acronym(surface: str) -> bool:
    """Whether an acronym without a digit names a kind of thing, not one: on the list of
    generic acronyms (:data:`GENERIC_ACRONYMS`: ``API``, ``DNS``, ``KPI``), a Roman numeral,
    longer than six letters (``HTTPS`` is listed, a longer one is a word in capitals) or with an
    ``&`` (``R&D``, ``Q&A``)."""
    return (
        surface in GENERIC_ACRONYMS
        or "&" in surface
        or not 2 < len(surface) <= 6
        or bool(_ROMAN.fullmatch(surface))
    )


_CODE_BEFORE = re.compile(r"(?:[<|^~_=]|\w-)$")
_CODE_AFTER = re.compile(r"[>|^~_=]|-[\dA-Z*<]")
"""What joins an acronym to a longer token written as code, before it and after it."""
_SYNTAX_BEFORE = re.compile(r"\b([A-Z]+)(?: \+)? $")
_SYNTAX_AFTER = re.compile(r"(?: \+)? ([A-Z]+)\b")
"""A word in capitals right before or after another (one space, or `` + ``)."""
_ARTICLE = re.compile(r"(?:^|\s)an? $", re.IGNORECASE)
_NO_NOUN_AFTER = re.compile(r"\s*(?:[^\w\s]|$)|\s+([a-z]+)\b")
"""What follows an acronym counted with an article when no noun follows it (``an SAQ.``, ``a
TIA before``): punctuation, the end, or a small word."""


_MODEL = re.compile(
    r" \d+(?![\w.:/%-]|,\d| ?(?:[kKmM]?[bB]|h|hrs?|min|s|ms|x|k|m|d)\b)(?: [A-Z]{2,3}\b)?"
)
"""A model number after an acronym (``RTX 3070``, ``RX 5700 XT``, ``ROS 2``): a whole number,
no release (``RDS 16.4``), measure nor time, with a short suffix in capitals."""


def _counted(text: str, start: int, end: int) -> bool:
    """Whether an acronym is counted with an article and no noun after it (``an SAQ``, ``a TIA
    before``; not ``a ZFS snapshot``): a common noun, one of a kind of thing."""
    if not _ARTICLE.search(text, max(0, start - 4), start):
        return False
    after = _NO_NOUN_AFTER.match(text, end)
    return after is not None and (after.group(1) is None or after.group(1) in STOP)


def _named_acronym(word: str) -> bool:
    """Whether a word is an acronym of letters that names one thing (``AWS``, ``DMS``): not a
    generic one (:func:`_generic_acronym`)."""
    return word.isalpha() and not _generic_acronym(word)


def _acronym_in_code(text: str, start: int, end: int) -> bool:
    """Whether an acronym is a part of a longer token written as code: a placeholder
    (``<CLIENT>``), a field of a message (``MRN^^^NRH``, ``ZPV|1``), a setting's value
    (``=ROW``), a key with a number or a code after its hyphen (``PID-3``, ``HF-RPM``,
    ``COMP-*``), or after a word and a hyphen (``pt-BR``); not an English compound after it
    (``AWS-managed``)."""
    if _CODE_BEFORE.search(text, max(0, start - 2), start) or _CODE_AFTER.match(text, end):
        return True
    return any(
        m is not None and (m.group(1) in CAPITALISED_WORDS or len(m.group(1)) > 6)
        for m in (
            _SYNTAX_BEFORE.search(text, max(0, start - 16), start),
            _SYNTAX_AFTER.match(text, end),
        )
    )


def _plural(surface: str, known: frozenset[str]) -> bool:
    """Whether a capitalised word is a known name's plural (``Observations``, ``Androids``):
    a kind of thing, not one."""
    return (
        surface[:1].isupper()
        and surface.endswith("s")
        and " " not in surface
        and surface[:-1].lower() in known
    )


def _opener(text: str, words: list[Word], alone: bool, known: frozenset[str]) -> bool:
    """Whether a sentence's first capitalised word is an ordinary word: when ``alone`` (no
    other capitalised word follows) unless a possessive follows (``Lena's``) or it has a letter
    English words do not (``Tomás``); a past-tense verb or a gerund always (``Reviewed
    Rosa``, ``Told Bram``, ``Using Vite``); and, itself unknown, when what follows it is a
    known name (``Needs Rutger`` with ``Rutger`` known: the name starts after it)."""
    word, start = words[0]
    if _INFLECTED.fullmatch(word) or word.lower() in _IRREGULAR:
        return True
    if not word.isascii() or _HUMPED.search(word):
        return False  # no English word has a capital inside (``NodeLocal DNSCache``)
    if len(words) > 1 and text[words[1][1] : words[-1][1] + len(words[-1][0])].lower() in known:
        return True
    return alone and text[start + len(word) : start + len(word) + 2] not in ("'s", "\u2019s")


_CODE_SPAN = re.compile(r"`([^`\n]+)`")
_TOKEN = re.compile(r"[A-Za-z_$][\w.$-]*\w")
_KEYWORDS = frozenset(
    "if else elif for while do new static const let var export import from return await async "
    "def class fn func function public private void true false null none nil select insert "
    "update delete with as in is not and or set echo export unset source eval exec printf cd "
    "alias where using join on order group having limit values returning case when".split()
)
"""Words of programming languages that open code, not a command (the shell's own builtins
among them: `` `set -x` ``, `` `echo $X` ``, and SQL's clauses: `` `where x > 1` ``)."""


_WORD_PROGRAMS = frozenset(
    "make go run test find sort cut head tail watch touch kill date time open less more top "
    "file type wait sleep join split read cat diff patch install apply sync mail ping".split()
)
"""Programs named by an English word (`` `make lint` ``, `` `go test` ``): found in backticks,
never taught, or every sentence using the word would name them."""


_OPERATOR = re.compile(r"\s*(?:[-+*/%&|^<>!:=]?=|=>|->|\.|\[)")
"""What follows a variable in a statement (`` `client = Client()` ``, `` `x += 1` ``): code,
not a command."""


def _code_spans(text: str) -> Iterable[tuple[str, int, int]]:
    """Code in backticks: a lone token is a code name (`` `sizes` ``, `` `fb` ``); the first
    word of a command is its program (`` `adb shell ...` ``), unless a language keyword opens
    it or it reads as a message (``: `` inside). A program is a name, then known to the
    project and found in its prose too (``brew first``), unless an English word names it
    (:data:`_WORD_PROGRAMS`)."""
    for span in _CODE_SPAN.finditer(text):
        code, start = span.group(1), span.start(1)
        token = _TOKEN.match(code)
        if token is None:
            continue
        if token.end() == len(code):
            yield "identifier", start, start + token.end()
        elif (
            code[token.end()] == " "
            and code[0].islower()
            and token.group() not in _KEYWORDS
            and ": " not in code
            and not _OPERATOR.match(code, token.end())
        ):
            program = token.group()
            yield (
                "identifier" if program in _WORD_PROGRAMS else "name",
                start,
                start + token.end(),
            )


_DATES = frozenset(WEEKDAYS | MONTHS)


def _stop_pair(surface: str) -> bool:
    """Whether a capitalised hyphenated word joins days or months (``Monday-Tuesday``,
    ``Jan-Mar``): a range, not a header's name."""
    return surface[:1].isupper() and any(p.lower() in _DATES for p in surface.split("-"))


_LOWER_OPENER = re.compile(r"(?:^|(?<=[^.\s][.!?])\s+|\n\s*)([a-z][\w-]*\w)(?![\w.(/@-])")
"""A word in small letters opening a sentence (at the start, after ``. ``, ``! ``, ``? `` or
a line break; not after an ellipsis, a list's number, ``3. auth callback``, nor a colon:
``Plan: non-blocking ...``)."""
_OPENER = re.compile(r"(?:^|(?<=[^.\s][.!?])\s+|\n\s*)(\w+)")
"""The first word of each sentence, as :data:`_LOWER_OPENER` finds them."""
_ABBREVIATIONS = frozenset(("vs.", "etc.", "approx.", "cf."))
"""Abbreviations whose period ends no sentence."""
_PERCENTILE = re.compile(r"p\d{2,3}(?:\.\d+)?")
"""A percentile (``p99 went to 5 s``): a measure, no thing."""
_CODE_SHAPED = re.compile(r"[-_\d]")
"""A hyphen, an underscore or a digit: a word no English sentence writes in small letters
(``edge-gw``, ``min16float``), unlike a plain one (``go``, ``lerp``)."""


def _lower_openers(text: str) -> Iterable[tuple[int, int]]:
    """Words in small letters that open a sentence: a sentence opens with a capital, so a word
    that keeps its small letters there is a name written its own way (``edge-gw is down``,
    ``commercetools already holds``); not a stop word, nor after an abbreviation (``e.g.``).
    A code-shaped one (:data:`_CODE_SHAPED`) is a name, then known to the project and found
    wherever it is written; a plain word is an identifier, found there only (it may be an
    English word too: ``go list`` and ``to go``), and only in a text whose other sentences
    open with a capital (a writer who never does: ``lunch is at noon.``)."""
    openers = list(_LOWER_OPENER.finditer(text))
    capitals = any(m.group(1)[:1].isupper() for m in _OPENER.finditer(text))
    for m in openers:
        word = m.group(1)
        if (
            word in STOP
            or _PERCENTILE.fullmatch(word)
            or not (capitals or _CODE_SHAPED.search(word))
        ):
            continue
        before = text[: m.start(1)].rstrip()
        last = before.rsplit(None, 1)[-1] if before else ""
        if last.count(".") > 1 or last[:-1].isdigit() or last.lower() in _ABBREVIATIONS:
            continue
        yield m.start(1), m.end(1)


_SAINT = re.compile(r"\b(?:St|Mt|Ft)\. [A-Z][a-z]+(?:(?:'|\u2019)s)?")
"""A place named for a saint, a mount or a fort: one name with its abbreviation and its
``'s`` (``St. Brennan's``, ``Mt. Hood``), not two."""


_HUMPS = re.compile(r"[A-Z][A-Za-z0-9]*")
"""A capitalised word of letters and digits only (``GitHub``, ``DevTools``)."""


def _in_a_name(match: re.Match[str], names: list[tuple[str, int, int]]) -> bool:
    """Whether a code name with humps is the one such word of a run of capitalised words
    (``GitHub Actions``, ``CloudWatch Logs``): the run is a product's name, not code; two
    of them side by side stay two (``WorkOS AuthKit``)."""
    if not _HUMPS.fullmatch(match.group()):
        return False
    start, end = match.span()
    return any(
        s <= start and end <= e and " " in n and len(_HUMPED.findall(n)) == 1 for n, s, e in names
    )


def extract_entities(text: str, known: Iterable[str] = ()) -> list[Entity]:
    """The entities ``text`` names, in order, without overlap (an earlier rule wins, then the
    longer match). ``known``: names (any alias) already seen in the corpus, which are then also
    found as a sentence's first word; and paths of files (with a folder), whose bare file name
    then names the path (``Math.h`` -> ``engine/core/math.h``) when only one ends in it."""
    corpus = taught(frozenset(known))  # kept per known set (the same object when given one)
    found: list[Entity] = []
    taken: list[tuple[int, int]] = []

    def add(kind: str, surface: str, start: int, end: int) -> None:
        if kind == "identifier" and surface.count(".") == 1 and "-" in surface.partition(".")[2]:
            surface = surface.partition("-")[0]  # hyphens only in a rule id: node.js-based
        if not surface.endswith("/..."):
            surface = surface.rstrip(".,;:!?'\"(" if kind == "url" else ".(")
        end = start + len(surface)
        if any(start < e and s < end for s, e in taken):
            return
        if kind == "identifier" and (surface.lower() in STOP or _stop_pair(surface)):
            return
        if not _plausible(kind, surface, corpus):
            return
        if kind == "version" and (
            _section_number(text, start)
            or _dependency_version(text, start)
            or _PART_OF_A_TOKEN.search(text, max(0, start - 2), start)
            or _TOKEN_GOES_ON.match(text, end)
            or _product_version(text, start, surface, names, corpus)
        ):
            return
        if kind == "identifier" and _placeholder(text, start, end):
            return
        if kind == "path" and (_TEMPLATE.match(text, end) or text[start - 1 : start] == ">"):
            return  # a template's path: ~/clients/<name>/, feat/SF-<ticket>, <cluster>/apps
        taken.append((start, end))
        name = canonical(surface)
        if kind == "ticket" and "#" in surface[1:]:  # a PR with its repository: its number
            name = "#" + surface.rpartition("#")[2]
        if kind == "path" and "/" not in name:
            name = corpus.files.get(name, name)
        found.append(Entity(kind, surface, start, end, name))

    names = list(_names(text, corpus.lower))
    for (kind, pattern), needle in zip(_RULES, _NEEDLES, strict=True):
        if needle is None or needle in text:
            for m in pattern.finditer(text):
                if pattern is CODE_NAME and (len(m.group()) < 3 or _in_a_name(m, names)):
                    continue  # two letters with a hump are a unit: pH, mS, kW
                add(kind, m.group(), m.start(), m.end())
    if "#" in text:  # a short number is a ticket after a ticket's word or beside a ticket
        for m in _SHORT_TICKET.finditer(text):
            if _TICKET_WORD.search(text, max(0, m.start() - 24), m.start()) or any(
                e.kind == "ticket" and (e.end + 2 == m.start() or m.end() + 2 == e.start)
                for e in found
            ):
                add("ticket", m.group(), m.start(), m.end())
    if "." in text:  # ``5.12`` once ``5.12.0`` is known, or after ``release``: a release
        for m in _TWO_PARTS.finditer(text):
            if m.group() in corpus.releases or _RELEASE_WORD.search(
                text, max(0, m.start() - 8), m.start()
            ):
                add("version", m.group(), m.start(), m.end())
    if corpus.releases and "." in text:
        for m in _FOUR_PARTS.finditer(text):  # ``0.9.4.1`` once ``0.9.4`` is: its hotfix
            if "v" + m.group(1) in corpus.whole_releases:
                add("version", m.group(), m.start(), m.end())
    for kind, start, end in _code_spans(text):
        add(kind, text[start:end], start, end)
    if ". " in text:
        for m in _SAINT.finditer(text):
            add("name", m.group(), m.start(), m.end())
    for surface, start, end in names:
        add("name", surface, start, end)
    for start, end in _lower_openers(text):
        word = text[start:end]
        add("name" if _CODE_SHAPED.search(word) else "identifier", word, start, end)
    # names the corpus taught: as written (``Priya`` opening a sentence), and in any case when
    # taught in lower case (``uv``, ``pgbouncer``); the longer first where two overlap
    for start, end in sorted(taught_spans(text, corpus), key=lambda m: (m[0] - m[1], m[0])):
        if not _plural(text[start:end], corpus.lower):
            add("name", text[start:end], start, end)
    return sorted(found, key=lambda e: e.start)
