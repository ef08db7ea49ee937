"""What a project taught the extraction (:func:`taught`): its known names, found again where a
text writes them (:func:`taught_spans`), even opening a sentence; its known file paths, which a
bare file name then names, and their first folders, which a pair of capitalised folders
(``Engine/Physics``) then starts; and its known releases (``v5.12.0``), whose two-part number
(``5.12``) is then a release too; and the acronyms it uses as a kind of thing, written as their
plural (``NRFs``: :func:`.acronyms.kind_words`), which then name nothing alone.
Pure functions over the ``known`` set the caller keeps."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

from tribalmemory.entities.acronyms import LETTER_ACRONYM
from tribalmemory.entities.aliases import canonical
from tribalmemory.entities.products import model_of

FILE = re.compile(r"\.[A-Za-z]\w*$")
"""A path's last part has an extension."""
_WORD = re.compile(r"[\w&]+[+#]*")
"""The words a known name is matched by (its separators must match as written)."""
RELEASE = re.compile(r"v(\d+\.\d+)\.\d+(?:\.\d+)?")
"""A known release of three parts or four (canonical, ``v5.12.0``): its first two parts."""
KIND = re.compile(rf"({LETTER_ACRONYM})s")
"""A known entry that is an acronym's plural (``NRFs``): the acronym names a kind of thing."""

Index = dict[str, list[tuple[list[str], list[str]]]]
"""First word -> the known names starting with it, as words and the separators between them,
the longest first."""


@dataclass(frozen=True)
class Taught:
    """A known set, ready for the extraction."""

    lower: frozenset[str]
    """Every known name in lower case (a sentence's first word is known in any case)."""
    exact: Index
    """The names taught as written (``Priya``)."""
    any_case: Index
    """The names taught in lower case, found in any case (``uv``, ``pgbouncer``)."""
    files: dict[str, str]
    """Bare file name -> the one known path ending in it (canonical)."""
    releases: frozenset[str] = frozenset()
    """The first two parts of the known releases (``5.12`` of ``v5.12.0``)."""
    folders: frozenset[str] = frozenset()
    """The first folder of each known path (``engine`` of ``engine/core/math.h``)."""
    families: frozenset[str] = frozenset()
    """The first part of each known hyphenated name in small letters (``pw`` of ``pw-api``)."""
    whole_releases: frozenset[str] = frozenset()
    """The known releases whole (``v5.12.0``)."""
    models: dict[str, str] = field(default_factory=dict)
    """Model number -> the one known hardware name ending in it (canonical): ``NX-7`` ->
    ``norrvik-nx-7`` once ``Norrvik NX-7`` is known."""
    kinds: frozenset[str] = frozenset()
    """The acronyms the project uses as a kind of thing (``NRF`` of the known ``NRFs``)."""
    systems: frozenset[str] = frozenset()
    """The known hyphenated names in small letters (``orders-service``), also found written
    with spaces and with ``svc`` / ``srv`` for ``service`` (``orders service``, ``orders svc``):
    :func:`spelled_out`."""
    initials: dict[str, str] = field(default_factory=dict)
    """Known initials -> the one known name of two to four capitalised words they are the
    initials of (canonical): ``KP`` -> ``kestrel-peak`` once ``Kestrel Peak`` and ``KP`` are
    known (``KP`` is known once a memory defines it: ``Kestrel Peak (KP)``)."""


@functools.lru_cache(maxsize=64)
def taught(known: frozenset[str]) -> Taught:
    """The known set indexed, in one pass. A dictionary, not a pattern: a project's known set
    changes with each new name, and compiling a pattern of hundreds of names each time would
    cost more than the extraction (each entry is read once, :func:`_entry`)."""
    lower = set()
    exact: Index = {}
    any_case: Index = {}
    paths: dict[str, set[str]] = {}
    releases = set()
    whole = set()
    folders = set()
    families = set()
    models: dict[str, set[str]] = {}
    kinds = set()
    systems = set()
    for entry in known:
        parsed = _entry(entry)
        if parsed[0] == "kind":
            kinds.add(parsed[1])
            continue
        if parsed[0] == "release":
            releases.add(parsed[1])
            whole.add(entry)
            continue
        if parsed[0] == "path":
            if parsed[2]:
                paths.setdefault(parsed[2], set()).add(parsed[1])
            folder = re.split(r"[\\/]", parsed[1].lstrip("/\\"), maxsplit=1)
            if len(folder) > 1 and folder[0]:
                folders.add(folder[0])
            continue
        lower.add(entry.lower())
        if (model := model_of(entry)) is not None:
            models.setdefault(model, set()).add(canonical(entry))
        if entry.islower() and "-" in entry.strip("-"):
            families.add(entry.split("-", 1)[0])
        if parsed[0] == "name":
            _, is_lower, words, seps = parsed
            (any_case if is_lower else exact).setdefault(words[0], []).append((words, seps))
            if is_lower and seps and set(seps) == {"-"}:
                systems.add(entry)
                for variant in spelled_out(words):
                    any_case.setdefault(variant[0][0], []).append(variant)
    initials: dict[str, set[str]] = {}
    for names in exact.values():
        for words, seps in names:
            if 2 <= len(words) <= 4 and set(seps) == {" "} and all(map(capitalised, words)):
                letters = "".join(w[0] for w in words)
                if letters in exact and [letters] in (w for w, _ in exact[letters]):
                    initials.setdefault(letters, set()).add(canonical(" ".join(words)))
    for index in (exact, any_case):
        for names in index.values():
            if len(names) > 1:
                names.sort(key=lambda n: -len(n[0]))
    files = {base: next(iter(p)) for base, p in paths.items() if len(p) == 1}
    return Taught(
        frozenset(lower),
        exact,
        any_case,
        files,
        frozenset(releases),
        frozenset(folders),
        frozenset(families),
        frozenset(whole),
        {model: next(iter(n)) for model, n in models.items() if len(n) == 1},
        frozenset(kinds),
        frozenset(systems),
        {letters: next(iter(n)) for letters, n in initials.items() if len(n) == 1},
    )


def capitalised(word: str) -> bool:
    """A word of letters written capitalised, not in capitals (``Kestrel``, ``InterCivic``;
    not ``IHC``)."""
    return word.isalpha() and word[0].isupper() and not word.isupper()


SPELLED_OUT = frozenset("service svc srv api app worker gateway proxy bot sdk cli db".split())
"""The last words of the known hyphenated names also found written with spaces: a kind of
software (``orders service``, ``talus app``); not a number (``line 2`` is not ``line-2``) nor
words prose often puts side by side (``store server``, ``prod manifest``)."""


def spelled_out(words: list[str]) -> list[tuple[list[str], list[str]]]:
    """The other ways prose writes a known hyphenated name of ``words`` in letters ending in
    a kind of software (:data:`SPELLED_OUT`): with spaces (``orders service`` of
    ``orders-service``), and, ending in ``service``, with ``svc`` or ``srv`` (``orders svc``,
    ``orders-svc``), each as words and the separators between them."""
    if words[-1] not in SPELLED_OUT or not all(w.isalpha() for w in words):
        return []
    ends = [words[-1]]
    if words[-1] == "service":
        ends += ["svc", "srv"]
    forms = []
    for end in ends:
        parts = [*words[:-1], end]
        forms.append((parts, [" "] * (len(words) - 1)))
        if end != words[-1]:
            forms.append((parts, ["-"] * (len(words) - 1)))
    return forms


@functools.lru_cache(maxsize=8192)
def _entry(entry: str) -> tuple:  # type: ignore[type-arg]
    """One known entry read: ``("path", canonical name, file name or "")``, ``("release",
    its first two parts)``, ``("kind", the acronym)``, ``("name", in lower case, words,
    separators)``, or ``("other",)`` (a name not made of whole words)."""
    kind = KIND.fullmatch(entry)
    if kind:
        return ("kind", kind.group(1))
    release = RELEASE.fullmatch(entry)
    if release:
        return ("release", release.group(1))
    if "/" in entry or "\\" in entry:
        name = canonical(entry)
        base = re.split(r"[\\/]", name)[-1]
        return ("path", name, base if FILE.search(base) else "")
    words = list(_WORD.finditer(entry))
    if not words or words[0].start() or words[-1].end() != len(entry):
        return ("other",)
    seps = [entry[a.end() : b.start()] for a, b in zip(words, words[1:], strict=False)]
    is_lower = entry == entry.lower()
    return ("name", is_lower, [w.group().lower() if is_lower else w.group() for w in words], seps)


def taught_spans(text: str, known: Taught) -> list[tuple[int, int]]:
    """Where ``text`` writes a known name: its words in a row (in any case for a name taught
    in lower case), with its separators, the longest first where two start together."""
    if not known.exact and not known.any_case:
        return []
    matches = list(_WORD.finditer(text))
    words = [m.group() for m in matches]
    lowered = [w.lower() for w in words] if known.any_case else []
    spans = []
    for index, seen in ((known.exact, words), (known.any_case, lowered)):
        for i, word in enumerate(seen):
            for parts, seps in index.get(word, ()):
                last = i + len(parts) - 1
                if seen[i : last + 1] == parts and _joined(text, matches, i, last, seps):
                    spans.append((matches[i].start(), matches[last].end()))
    return spans


def _joined(
    text: str, matches: list[re.Match[str]], first: int, last: int, seps: list[str]
) -> bool:
    """Whether words ``first`` to ``last`` are written with ``seps`` between them, and whole
    (not inside a dotted or hyphenated name)."""
    start, end = matches[first].start(), matches[last].end()
    if (start and text[start - 1] in ".-") or (end < len(text) and text[end] == "-"):
        return False
    return all(
        text[matches[k].end() : matches[k + 1].start()] == sep
        for k, sep in zip(range(first, last), seps, strict=True)
    )
