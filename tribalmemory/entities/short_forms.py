"""The shorter ways a project writes a name of several words: its parts (:func:`short_forms`,
``Tagus`` of the ship ``Norvane Tagus``, ``ETS`` of ``EU ETS``) and its initials
(:func:`initials_of`, ``HVH`` of ``Harrow Vale Hospital``, ``CDA`` of ``Guidewire Cloud Data
Access``, and over its humps, :func:`hump_initials`: ``OCIO`` of ``OpenColorIO``); the other
number of a name (:func:`number_forms`, ``incoterm`` of ``Incoterms``) and the name with a
digit after it (:func:`numbered`, ``oauth2``); a repository's or file's shorter names
(:func:`path_ends`, ``sarek`` of ``nf-core/sarek``). Asking for the name counts the entities
stored under them too, when a part names a thing on its own (:func:`stands_alone`: ``Spring``
of ``Spring 2027`` is a word, not a name; ``Ingrid`` of ``Ingrid Sørensen`` is a name) and
initials are written in capitals. Some short forms are read in the memories' text, where the
extraction reads no name: a name's first or last word (:func:`first_word`, ``Gary phoned``;
:func:`last_word`, ``the Rave study``), a name in small letters (:func:`spelled_alone`, ``the
shelfdiff config``) and a standard's code (:func:`standard_code`, ``61850`` of ``IEC
61850``)."""

from __future__ import annotations

import re
from collections.abc import Iterable

from tribalmemory.entities.aliases import canonical
from tribalmemory.entities.short_names import MAKERS
from tribalmemory.entities.words import english_words

_CONNECTIVES = frozenset("a an and at by de for in of on the to &".split())
"""Words that join a name's parts (``Secretary of State``): no part, no initial."""
_NOT_WORDS = re.compile(r"[/\\._]")
"""A path, a dotted or an underscored name: one token, whose pieces are no short forms."""
_NOT_NAME = re.compile(r"[\\_]|(?<!\w)/|/(?!\w)|[A-Za-z]\.[a-z]")
"""A path, an underscored or a dotted name written in a name (``Fly.io``, ``api.v2``); a
number or an abbreviation with dots is a word (``Twist Exome 2.0``, ``Kievit Mobiel B.V.``),
and so is a slash inside a word (``SAP S/4HANA``, ``NetLine/Ops ++``)."""
_SLASHED = re.compile(r"[^\W\d_]{2,}(?:/[^\W\d_]{2,})+")
"""Words of letters joined by slashes (``NetLine/Ops``)."""
_HUMP = re.compile(r"[A-Z]{2,}(?![a-z])|[A-Z]?[a-z]+|\d+")
"""A word's humps: a run in capitals (``IO`` of ``OpenColorIO``), a word of small letters
capitalised or not (``Open``, ``Color``), a number."""
_ACRONYM = re.compile(r"[A-Z][A-Z0-9]+")
_INNER_CAPITAL = re.compile(r"[a-z][A-Z]")
"""A capital after a small letter: ``acQuire``, ``iPhone``, written so as a name only."""


MAX_WORDS = 8
"""A name of more words is a phrase, whose parts are not its short forms."""


def _words(written: str) -> list[str]:
    """The words of a name written with spaces; none for a single word, a phrase (more than
    :data:`MAX_WORDS`), a path or code."""
    words = written.split()
    if not 2 <= len(words) <= MAX_WORDS or _NOT_NAME.search(written):
        return []
    return words


def short_forms(written: str) -> list[str]:
    """The canonical names of ``written``'s parts: each run of its words in a row but the
    whole (``norvane``, ``tagus`` of ``Norvane Tagus``, ``twist-exome`` of ``Twist Exome
    2.0``), not beginning or ending with a connective, not a number alone (``2.0``, ``12``),
    and each word of letters a slash joins to another in its first word (``netline`` of
    ``NetLine/Ops ++``; not ``nfi`` of ``South Sudan Shelter/NFI Cluster``). A
    name with a slash inside a word has only the runs with such a word but its first alone
    (``blue/green`` of ``Amazon RDS Blue/Green Deployments``; not ``z/os`` of ``z/OS Connect
    Designer``, a name of its own). None for a name of one word, a path or code (its initials:
    :func:`initials_of`)."""
    words = _words(written)
    slashed_first = words and _SLASHED.fullmatch(words[0])
    forms = [canonical(w) for w in words[0].split("/")] if slashed_first else []
    slashed = {i for i, word in enumerate(words) if "/" in word}
    for first in range(len(words)):
        for last in range(first + 1, len(words) + 1):
            run = words[first:last]
            if len(run) == len(words) or run[0].lower() in _CONNECTIVES:
                continue
            if slashed and (not slashed & set(range(first, last)) or last == 1):
                continue
            if run[-1].lower() in _CONNECTIVES or not any(c.isalpha() for c in "".join(run)):
                continue
            forms.append(canonical(" ".join(run)))
    return list(dict.fromkeys(f for f in forms if f))


def initials_of(written: str) -> list[str]:
    """The initials of a name of two words or more, in capitals: of its words but the
    connectives (``HVH`` of ``Harrow Vale Hospital``), then of them all when a connective
    joins it (``SOS`` of ``Secretary of State``, besides ``SS``); then of each shorter run of
    three words or more in a row, not beginning or ending with a connective, of three letters
    or more (``CDA`` of ``Guidewire Cloud Data Access``, ``DOI`` of ``Division of Insurance``;
    two letters of a part would be too common). None for one word, a path or code."""
    words = _words(written)
    if not all(w[0].isalnum() for w in words):
        return []
    runs = [words]
    for first in range(len(words)):
        for last in range(first + 3, len(words) + 1):
            run = words[first:last]
            if len(run) < len(words) and not {run[0].lower(), run[-1].lower()} & _CONNECTIVES:
                runs.append(run)
    found = []
    for run in runs:
        kept = [w for w in run if w.lower() not in _CONNECTIVES]
        least = 2 if run is words else 3
        found += ["".join(w[0] for w in ws).upper() for ws in (kept, run) if len(ws) >= least]
    return list(dict.fromkeys(found))


def hump_initials(written: str) -> list[str]:
    """The short forms of a name made of its humps (:data:`_HUMP`), from a word's first hump to
    a word's last, three characters or more of which two letters: a capitalised hump's
    initial, a hump in capitals and a number whole (``OCIO`` of ``OpenColorIO``, ``CSK`` of
    ``ConnectSmart Kitchen``, ``APIM`` of ``Azure API Management``, ``MR911`` of ``Merritt
    Regional 911``; not ``W26`` of ``Winter 26``). None for a phrase, a path or code."""
    words = written.split()
    if not 1 <= len(words) <= MAX_WORDS or _NOT_NAME.search(written) or "/" in written:
        return []
    words = [w for w in words if w.lower() not in _CONNECTIVES]
    humps = [
        [h if h.isdigit() or h.isupper() else h[0].upper() for h in _HUMP.findall(w)] for w in words
    ]
    found = []
    for first in range(len(humps)):
        for last in range(first, len(humps)):
            run = [h for word in humps[first : last + 1] for h in word]
            short = "".join(run)
            letters = sum(c.isalpha() for c in short)
            if len(run) >= 2 and len(short) >= 3 and letters >= 2 and short != written:
                found.append(short)
    return list(dict.fromkeys(found))


def hump_initial(written: str) -> str:
    """The initials of a word's humps (:data:`_HUMP`), each in capitals: ``TS`` of
    ``TypeScript``, ``JS`` of ``JavaScript``, ``T`` of ``Golang``."""
    return "".join(h[0].upper() for h in _HUMP.findall(written))


_BRANCHES = frozenset(
    "bugfix chore dependabot feat feature fix hotfix release renovate wip".split()
)
"""A branch's prefix (``hotfix/login``): no repository's owner."""
_FILE = re.compile(r"([^./]+)(\.[a-z][a-z0-9]*)+")
"""A file's name: a stem and its extensions (``rig-b.toml``, ``clinvar.vcf.gz``)."""


def path_ends(name: str) -> list[str]:
    """The shorter names a canonical repository or file path ends in, longest first: a
    repository's name after its owner (``sarek`` of ``nf-core/sarek``; not when the owner is
    an English word, a folder or a branch: ``board/rev-c``, ``config/gendata``) and a file's
    shorter paths (``deploy/asj-2b.toml`` and ``asj-2b.toml`` of
    ``fieldsim/deploy/asj-2b.toml``; not a file whose stem is an English word: ``app.log``).
    None for other paths, a route or an address (``kv/agc/lims-bridge``, ``/v2/accounts``,
    ``s3://…``)."""
    if name.startswith(("/", ".")) or ":" in name:
        return []
    parts = name.split("/")
    words = english_words()
    file = _FILE.fullmatch(parts[-1])
    if file and len(parts) >= 2 and file.group(1) not in words:
        return ["/".join(parts[i:]) for i in range(1, len(parts))]
    owner, repository = parts[0], parts[-1]
    if len(parts) == 2 and not file and owner not in words and owner not in _BRANCHES:
        short = len(repository) < 3 or repository in words or repository.isdigit()
        return [] if short else [repository]
    return []


_HOST = re.compile(r"([a-z][a-z0-9-]*)\.[a-z][a-z0-9-]*\.(?:io|com|net|org|dev|ai|app|co)")
"""A host's name: a label before a domain (``rs2.svix.net``)."""


def host_label(name: str) -> list[str]:
    """The first label of a canonical host name, which a project writes alone for the host
    (``rs2`` of ``rs2.svix.net``); none for other names, a domain alone too (``github`` of
    ``github.com`` is the product as often)."""
    host = _HOST.fullmatch(name)
    return [host.group(1)] if host else []


_CODE_NUMBER = re.compile(r"[a-z]+\d+")
"""A code of letters then digits (``a100``, ``mk4``), whose other number ends in ``s``."""


def coded(written: str) -> bool:
    """Whether ``written`` has a digit or a word in capitals of two letters or no English word
    (``A100``, ``Elastic IP``, ``Intel NUC``; not ``Claim``, ``FLOW``): its plural is written
    from it (``A100s``), where an English word's is another word of prose."""
    words = written.split()
    return any(c.isdigit() for c in written) or any(
        _ACRONYM.fullmatch(w) and (len(w) == 2 or w.lower() not in english_words()) for w in words
    )


def number_forms(name: str) -> list[str]:
    """The other number of a canonical name ending in a word of letters or a code of letters
    then digits: ``incoterm`` of ``incoterms``, ``poll-pads`` of ``poll-pad``, ``a100s`` of
    ``a100``, ``elastic-ips`` of ``elastic-ip``. None for a word of two letters alone, a word
    ending in ``ss`` (``access``), a number, a path or a dotted name."""
    last = name.rpartition("-")[2]
    if _NOT_WORDS.search(name) or last.endswith("ss"):
        return []
    if _CODE_NUMBER.fullmatch(last):
        return [name + "s"]
    if _CODE_NUMBER.fullmatch(last[:-1]) and last.endswith("s"):
        return [name[:-1]]
    if not last.isalpha() or len(last) < (2 if "-" in name else 3):
        return []
    return [name[:-1] if last.endswith("s") else name + "s"]


def numbered(name: str) -> list[str]:
    """The names of ``name`` (a canonical word of four letters or more, no English word) with
    a digit after it, which a project writes for one version of the thing (``oauth2`` of
    ``oauth``; not ``unit2`` of ``unit``)."""
    if len(name) < 4 or not name.isalpha() or name in english_words():
        return []
    return [f"{name}{d}" for d in range(1, 10)]


_CODE_PART = re.compile(r"(?=[a-z]*\d)(?=\d*[a-z])[a-z\d]{2,}")
"""A part of letters and digits both (``k11``, ``pos02``): a code's own number."""


_RANGE = re.compile(r"([a-z]+)(\d+)-\1(\d+)")
"""Two codes of the same letters joined by a hyphen: a range (``k11-k14``)."""


def code_range(name: str) -> bool:
    """Whether the canonical ``name`` is a range of codes of the same letters (``k11-k14``,
    ``mtrc1488-mtrc1497``), which spans codes rather than being another one."""
    return bool(_RANGE.fullmatch(name))


def code_end(name: str) -> str | None:
    """The last part of a canonical code of hyphenated parts when it is letters and digits
    both, which a project writes alone for the whole (``k11`` of ``etch-k11``); None for other
    names (``orders-service``, ``skua-07``: a number alone names nothing) and for a range
    (:func:`code_range`: ``qc04`` of ``qc01-qc04`` is one code it spans)."""
    if _NOT_WORDS.search(name) or code_range(name):
        return None
    first, _, last = name.rpartition("-")
    return last if first and _CODE_PART.fullmatch(last) else None


def proper_name(written: str) -> bool:
    """Whether ``written`` is a name of several capitalised words of letters (``Ingrid
    Sørensen``, ``Microsoft Teams``, ``Colorado Division of Insurance``): no number, no word
    in small letters but a connective (not ``Spring 2027`` nor ``Douglas sea scale``)."""
    words = _words(written)
    return bool(words) and all((w[0].isupper() and w.isalpha()) or w in _CONNECTIVES for w in words)


def first_word(written: str) -> str | None:
    """The first word of a name of two capitalised words of letters (:func:`proper_name`),
    which a project may write alone for the whole, at a sentence's opening too (``Gary`` of
    ``Gary Schroeder``, ``Hart`` of ``Hart InterCivic``); None for other names, a word of two
    letters, in capitals, or a maker (``Intel`` of ``Intel NUC``)."""
    words = written.split()
    if len(words) != 2 or not proper_name(written) or words[0].lower() in _CONNECTIVES:
        return None
    first = words[0]
    return None if len(first) < 3 or first.isupper() or first in MAKERS else first


def last_word(written: str) -> str | None:
    """The last word of a name of two capitalised words of letters (:func:`proper_name`),
    which a project may write alone for the whole (``Rave`` of ``Medidata Rave``, ``Hub`` of
    ``ArcGIS Hub``, ``Schroeder`` of ``Gary Schroeder``), or an acronym of two letters or more
    (``MQ`` of ``IBM MQ``, ``ECS`` of ``Amazon ECS``); None for other names and a capitalised
    word of two letters."""
    words = written.split()
    if len(words) != 2 or not proper_name(written) or words[1].lower() in _CONNECTIVES:
        return None
    last = words[1]
    return last if len(last) >= 3 or (len(last) == 2 and last.isupper()) else None


def spelled_alone(name: str, written: Iterable[str]) -> bool:
    """Whether the canonical ``name`` is one word of four letters or more, no English word,
    always ``written`` in small letters: prose writes it as it is without the extraction
    reading a name (``shelfdiff`` in ``the shelfdiff config``), and the memories writing it
    word for word name it (not ``Tagus``, which ``Norvane Tagus`` writes too)."""
    if len(name) < 4 or not name.isalpha() or name in english_words():
        return False
    return all(w == w.lower() for w in written)


def standard_code(written: str) -> str | None:
    """The code of a standard or model written after its body's or maker's name in capitals,
    which a project writes alone (``61850`` of ``IEC 61850``, ``E90`` of ``SEMI E90``, ``z16``
    of ``IBM z16``, ``615A`` of ``ARINC 615A``): letters and digits with a letter, or a number
    of five digits or more; None for other names, a shorter number (``429`` of ``ARINC 429``:
    a status, a port) or a release (``TLS 1.3``)."""
    words = written.split()
    if len(words) != 2 or not (words[0].isalpha() and words[0].isupper() and len(words[0]) >= 3):
        return None
    code = words[1]
    if not code.isalnum() or not any(c.isdigit() for c in code):
        return None
    return code if len(code) >= 5 or (len(code) >= 3 and not code.isdigit()) else None


def stands_alone(name: str, aliases: Iterable[str], of: str = "") -> bool:
    """Whether a stored entity found as a part of a name (``of``, as written) names a thing
    on its own: several words, a digit, written in capitals (an acronym) or with a capital
    inside (``acQuire``), or no English word (``tagus``, not ``spring``); or a word always
    written capitalised that is part of a proper name (:func:`proper_name`: ``Ingrid`` of
    ``Ingrid Sørensen``, ``Teams`` of ``Microsoft Teams``), unless it is a maker opening its
    products' names (``Microsoft``)."""
    written = list(aliases)
    if "-" in name or any(c.isdigit() for c in name):
        return True
    if any(_ACRONYM.fullmatch(a) for a in written):
        return True
    if written and all(_INNER_CAPITAL.search(a) for a in written):
        return True
    if name not in english_words():
        return True
    capitalised = bool(written) and all(a[:1].isupper() for a in written)
    return capitalised and proper_name(of) and name.title() not in MAKERS
