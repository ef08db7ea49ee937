"""Capitalised names: runs of capitalised words inside sentences, cut around acronyms and trimmed
of sentence openers and ordinary words, minus the runs that name no one thing."""

from __future__ import annotations

import re
from collections.abc import Iterable

from tribalmemory.entities.acronyms import (
    ACRONYM,
    MODEL,
    PLURAL_ACRONYM,
    acronym_in_code,
    counted,
    generic_acronym,
    generic_with_digits,
    named_acronym,
)
from tribalmemory.entities.code import CODE_SPAN
from tribalmemory.entities.stoplist import (
    ALONE,
    GENERIC_ACRONYMS,
    GROUPS,
    NATIONALITY_ADJECTIVES,
    RANKS,
    STOP,
    STREETS,
)
from tribalmemory.entities.tools import AMBIGUOUS_TOOLS, TOOLS
from tribalmemory.entities.trackers import KEY_PREFIX, tracker_keys
from tribalmemory.entities.words import english_words

_PARTICLE = r"(?:&|de|del|della|di|do|dos|da|das|du|van|von|der|den)\s"
"""A small word inside a name (``Casa do Rio``, ``Ana de Souza``, ``Ludwig van Beethoven``)."""
_SYLLABLE = (
    "(?:ae|bin|bo|byung|chae|chan|chang|cheol|chul|dae|dong|eun|gi|gyu|ha|hae|han|hee|ho|hoon"
    "|hun|hwa|hwan|hye|hyo|hyuk|hyun|hyung|il|in|jae|je|jeong|ji|jin|jong|joo|ju|jun|jung|kang"
    "|ki|kwang|kyu|kyung|mi|min|myung|na|nam|rae|sang|se|seo|seok|seon|seong|seung|shin|sik|so"
    "|soo|suk|sun|sung|tae|won|woo|woong|ye|yeon|yeong|yong|yoon|young|yu|yun)"
)
_TWO_SYLLABLES = rf"(?=(?i:{_SYLLABLE})-{_SYLLABLE}\b(?!-))[A-Z][a-z]+-[a-z]+"
"""A given name of two romanised Korean syllables joined by a hyphen (``Jae-won``,
``Hyun-woo``), one word; not an English compound (``Sign-in``, ``Go-live``)."""
_CAPITALISED = re.compile(
    rf"\b(?:{_TWO_SYLLABLES}|[A-Z](?:'[A-Z])?[\w&]*(?:[+#]+(?!\w))?)"
    rf"(?:\s(?:{_PARTICLE})?(?:{_TWO_SYLLABLES}|[A-Z](?:'[A-Z])?[\w]*))*"
)
_SENTENCE_END = frozenset(".!?:\n")
_ACRONYM_VERB = re.compile(r"[A-Z]{2,}(?:i[sz](?:ed|es|ing|ation)|ed|ing)")
"""An acronym made a verb or a noun of doing (``CMORised``, ``OOMed``, ``SSHing``): no name."""
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
        if (
            ACRONYM.fullmatch(item[0])
            or PLURAL_ACRONYM.fullmatch(item[0])
            or (_NUMBERED_CODE.fullmatch(item[0]) and not _model_suffix(match, word.end()))
        ):
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
        if joined and (
            _opens_a_name(match.string, joined[-1], part, known)
            or (len(part) == 1 and part[0][0] in _LEGAL_FORMS and len(joined[-1]) > 1)
            or ([w for w, _ in part] == ["API"] and _names_an_interface(joined[-1], known))
        ):
            joined[-1] = joined[-1] + part
        else:
            joined.append(part)
    return joined


_NUMBERED_CODE = re.compile(r"[A-Z]{1,4}\d{2,}")
"""A code of capitals and a number of two digits or more (``S022``, ``TMF620``, ``E10``): it
stands alone before capitalised words (``S022 Bristol Harbourside`` is a store's code and its
place), unless a model's suffix follows it (``P400 Plus``)."""
_MODEL_SUFFIX = re.compile(r" (?:Plus|Pro|Max|Mini|Ultra|Lite|Air|Edge|SE)\b")
"""A model's suffix after its number (``P400 Plus``, ``M2 Pro``)."""


def _model_suffix(match: re.Match[str], end: int) -> bool:
    """Whether a model's suffix follows the word ending at ``end`` of a capitalised run."""
    return bool(_MODEL_SUFFIX.match(match.group(), end))


_DOTTED_FORM = re.compile(r"(?:\.[A-Za-z])+\.")
"""The rest of a legal form written with dots after its first letter (``.V.`` of ``B.V.``)."""
_LEGAL_FORMS = frozenset("LLP LLC PLC AS ASA AG SA NV BV AB KG SE SpA".split())
"""A company's legal form in capitals, the last word of its name (``Pellow & Hart LLP``,
``Helgar Energy AS``) after two words or more."""
_NAME_ENDS = _LEGAL_FORMS | {"API"}
"""Ordinary words that end a name once joined to it (a legal form; ``API`` of ``Collections
API``, a vendor's named interface)."""


def _names_an_interface(words: list[Word], known: frozenset[str]) -> bool:
    """Whether capitalised words before ``API`` name a vendor's interface with it (``PI Web
    API``, ``Collections API``): not a known name alone (``Zendesk API`` is Zendesk's), nor
    ending in an acronym or an ordinary word."""
    last = words[-1][0]
    if ACRONYM.fullmatch(last) or _ordinary(last):
        return False
    return len(words) > 1 or last.lower() not in known


def _opens_a_name(text: str, before: list[Word], part: list[Word], known: frozenset[str]) -> bool:
    """Whether an acronym (``before``) opens the name of the capitalised words after it: inside
    a sentence, before a word that is neither ordinary nor an acronym, which together are no
    known name of their own (``AWS Secrets Manager``, ``the UK Sanctions List``, ``US Core``;
    not ``RDS Postgres`` with ``Postgres`` known)."""
    acronym, start = before[0]
    first = part[0][0]
    if len(before) > 1 or not ACRONYM.fullmatch(acronym) or _NUMBERED_CODE.fullmatch(acronym):
        return False
    if ACRONYM.fullmatch(first):
        return len(part) == 1 and named_acronym(acronym) and named_acronym(first)
    if PLURAL_ACRONYM.fullmatch(first) or _ordinary(first) or _sentence_initial(text, start):
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


PERIOD_OR_RANK = re.compile(
    r"(?:Q[1-4]|H[12]|P[0-4]|FY\d{2,4}|(?i:sev)-?\d"
    r"|Gen\d{1,2}|Ph[1-4]|(?:ASIL|DAL|SIL) [A-E0-4])"
)
"""A quarter, a half, a priority, a severity or a fiscal year (``Q1``, ``H2``, ``P1``,
``SEV1``, ``sev-2``, ``FY26``), a generation or a trial's phase (``Gen4``, ``Ph3``; a round,
``Round-2``, is a word joined to its number: :data:`_NUMBER_GLUED`), a safety integrity level
(``ASIL B``, ``DAL C``): a time or a rank, like a date, not a thing."""
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
    adjective of a language or a nationality ending in -ish or -ese (``Polish``, said of things,
    names none: :data:`.stoplist.NATIONALITY_ADJECTIVES`) or an acronym made a verb
    (:data:`_ACRONYM_VERB`)."""
    return (
        word.lower() in STOP
        or (word.istitle() and word.lower() in NATIONALITY_ADJECTIVES)
        or bool(_ACRONYM_VERB.fullmatch(word))
    )


def capitalised_names(text: str, known: frozenset[str]) -> Iterable[tuple[str, int, int]]:
    """The names ``text`` writes in capitals, each with its span (``known``: the names the
    corpus taught, in small letters)."""
    code = [m.span(1) for m in CODE_SPAN.finditer(text) if " " in m.group(1)] if "`" in text else []
    keys = tracker_keys(text)
    for match in _CAPITALISED.finditer(text):
        if any(s <= match.start() < e for s, e in code):
            continue  # a word of a command, a log line or a message in backticks
        for words in _segments(match, known):
            # a sentence's first word is kept when more capitalised words follow it in its
            # segment (an acronym after it is no part of its name: ``Quarterly ASV scan``)
            alone = len([w for w, _ in words if not _ordinary(w) and not _HUMPED.search(w)]) <= 1
            opens = _sentence_initial(text, words[0][1])
            first = words[0][1]
            while words and (
                _ordinary(words[0][0])
                or _unit_letter(text, words[0])
                or (
                    opens
                    and words[0][0].lower() not in known
                    and _opener(text, words, alone, known)
                )
            ):
                words = words[1:]
                opens = False
            while words and (
                (_ordinary(words[-1][0]) and words[-1][0] not in _NAME_ENDS)
                or _NUMBER_GLUED.match(text, words[-1][1] + len(words[-1][0]))
                or _ranked(text, words[-1][0], words[-1][1] + len(words[-1][0]))
            ):
                words = words[:-1]
            if not words:
                continue
            start, end = words[0][1], words[-1][1] + len(words[-1][0])
            form = _DOTTED_FORM.match(text, end) if len(words[-1][0]) == 1 else None
            if form and len(words) > 1:
                end = form.end()  # a legal form written with dots: Brannock Trading B.V.
            surface = text[start:end]
            if len(surface) < 2 or PLURAL_ACRONYM.fullmatch(surface):
                continue  # acronyms and units (GB, PAN, HMAC) name no one thing; PS5, EKS do
            if _quoted_whole(text, start, end) or _menu_step(text, start):
                continue
            if PERIOD_OR_RANK.fullmatch(surface) or _reason_phrase(text, first):
                continue
            if surface.lower() in ALONE:
                continue
            if generic_with_digits(surface) or surface.rsplit(" ", 1)[-1].lower() in STREETS:
                continue
            if _time_place(text, start, end) or _in_a_compound(text, start, end):
                continue
            if plural(surface, known) or KEY_PREFIX.match(text, end) or start in keys:
                continue
            if any(c.isdigit() for c in surface) and _glued(text, start, end):
                continue  # a part of a longer code: FCC-R2, 23.4R2-S3, pin X1.34
            if (number := _numbered_word(text, surface, end, known)) is not None:
                end = number
                surface = text[start:end]
            if ACRONYM.fullmatch(surface) and not any(c.isdigit() for c in surface):
                model = MODEL.match(text, end) if surface.isalpha() else None
                if model and surface in GENERIC_ACRONYMS and len(model.group().split()[0]) > 2:
                    model = None  # a value numbered after a kind of thing: VLAN 2120
                if model:  # a model: RTX 3070, RX 6600; SOC 2
                    end = model.end()
                    surface = text[start:end]
                elif (
                    generic_acronym(surface)
                    or acronym_in_code(text, start, end)
                    or counted(text, start, end)
                ):
                    continue
            yield surface, start, end


_NUMBER_BEFORE = re.compile(r"\d ?$")


def _unit_letter(text: str, word: Word) -> bool:
    """Whether a capital letter alone after a number is its unit (``2,000 L HyPerforma``,
    ``12 V Battery``), no part of the name after it."""
    return len(word[0]) == 1 and bool(_NUMBER_BEFORE.search(text[max(0, word[1] - 3) : word[1]]))


_NUMBER_AFTER = re.compile(r" \d+\b")
_SMALL_NUMBER = re.compile(
    r" \d{1,2}\b(?![\w.:/%,-]| ?(?:h|s|ms|min|mins|GB|MB|TB|kB|days?|weeks?|hours?)\b)"
)


def _numbered_word(text: str, surface: str, end: int, known: frozenset[str]) -> int | None:
    """Where a name ends that an English word opens with its small number (``Hangar 5``,
    ``District 4``, ``Form 1``): the word alone is no name the project knows (``Java 21`` is
    Java's release)."""
    last = surface.rsplit(" ", 1)[-1]
    word = last.lower()
    if not last.istitle() or word not in english_words():
        return None
    if word in TOOLS or word in AMBIGUOUS_TOOLS:
        return None  # a product's release: Java 21, React 18
    if surface.lower() in known or not (number := _SMALL_NUMBER.match(text, end)):
        return None
    return number.end()


_NUMBER_GLUED = re.compile(r"-\d")
"""A number joined by a hyphen after a word (``Cal-27``, ``Q4-26``): a code, no name."""
_GLUED_BEFORE = re.compile(r"\w[-.]$")
_GLUED_AFTER = re.compile(r"\.\w|-(?![a-z]{2})\w")


def _glued(text: str, start: int, end: int) -> bool:
    """Whether a hyphen or a dot joins a word to the token before it or after it (not an
    English compound after it: ``PS5-only``)."""
    return bool(
        _GLUED_BEFORE.search(text, max(0, start - 2), start) or _GLUED_AFTER.match(text, end)
    )


def _ranked(text: str, surface: str, end: int) -> bool:
    """Whether a word is a rank before its number (``Tier 2``, ``Phase 3``: :data:`RANKS`)."""
    return surface.lower() in RANKS and bool(_NUMBER_AFTER.match(text, end))


def plural(surface: str, known: frozenset[str]) -> bool:
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
    other capitalised word follows) unless a possessive follows (``Lena's``), something said
    of a person (``Priya prefers``, ``Aisha and Lukas`` with ``Lukas`` known; not of a role,
    ``User prefers``), or it has a letter English words do not (``Tomás``) or is a listed
    tool (``Pytest``); a past-tense verb or a gerund always (``Reviewed Rosa``, ``Told Bram``,
    ``Using Vite``); and, itself unknown, when what follows it is a known name (``Needs
    Rutger`` with ``Rutger`` known: the name starts after it)."""
    word, start = words[0]
    if _INFLECTED.fullmatch(word) or word.lower() in _IRREGULAR:
        return True
    if not word.isascii() or _HUMPED.search(word) or word.lower() in TOOLS:
        return False  # no English word has a capital inside (``NodeLocal DNSCache``), nor
        # is a tool's name (``Pytest flaked again``)
    if len(words) > 1 and text[words[1][1] : words[-1][1] + len(words[-1][0])].lower() in known:
        return True
    if not alone:
        return False
    end = start + len(word)
    if word.lower() not in GROUPS and _SAID_OF_A_PERSON.match(text, end):
        return False
    if (pair := _AND_NAME.match(text, end)) and pair.group(1).lower() in known:
        return False
    return text[end : end + 2] not in ("'s", "\u2019s")


_SAID_OF_A_PERSON = re.compile(
    r" (?:prefers|approved|reviewed|reviews|confirmed|owns|onboarded|agreed|suggested|asked"
    r"|thinks|wants|to review|is out|primary|secondary)\b"
    r"| off (?:on |until |till )?(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun|today|tomorrow|next|this)"
)
"""What follows a person's name opening a sentence (``Priya prefers``, ``Tomasz approved``,
``Oskar primary``, ``Wen off Friday``): a verb said of people, not of things, so the word
before it is a name even where the stream has not yet written it inside a sentence."""
_AND_NAME = re.compile(rf" and ({_TWO_SYLLABLES}|[A-Z][a-z]+)\b")
"""``Aisha and Lukas``: a sentence's first word joined to a known name is one too."""


SAINT = re.compile(
    r"\b(?:St|Mt|Ft)\. [A-Z][a-z]+(?:(?:'|\u2019)s)?"
    r"|\b(?:[A-Z][a-z]+ )?St [A-Z][a-z]+(?:'|\u2019)s(?: [A-Z][a-z]+)?"
)
"""A place named for a saint, a mount or a fort: one name with its abbreviation and its
``'s`` (``St. Brennan's``, ``Mt. Hood``), not two; without the dot, with the words around it
(``Cardiff St Mary's``, ``St Anne's Primary``)."""


_HUMPS = re.compile(r"[A-Z][A-Za-z0-9]*")
"""A capitalised word of letters and digits only (``GitHub``, ``DevTools``)."""


def in_a_name(match: re.Match[str], names: list[tuple[str, int, int]]) -> bool:
    """Whether a code name with humps is the one such word of a run of capitalised words
    (``GitHub Actions``, ``CloudWatch Logs``): the run is a product's name, not code; two
    of them side by side stay two (``WorkOS AuthKit``)."""
    if not _HUMPS.fullmatch(match.group()):
        return False
    start, end = match.span()
    return any(
        s <= start and end <= e and " " in n and len(_HUMPED.findall(n)) == 1 for n, s, e in names
    )
