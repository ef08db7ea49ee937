"""Names written as code: the tokens and programs in backticks, the words that keep their
small letters opening a sentence, and the team's components listed in small letters."""

from __future__ import annotations

import re
from collections.abc import Iterable

from tribalmemory.entities.stoplist import STOP
from tribalmemory.entities.words import english_words

CODE_SPAN = re.compile(r"`([^`\n]*)`")
"""Code in backticks, each opening backtick paired with the next (not a closing one with the
next opening: `` `a`: `b` ``)."""
_TOKEN = re.compile(r"[A-Za-z_$][\w.$+-]*\w")
_WHOLE = re.compile(r"\d{7,}|[a-z][\w-]*:[A-Za-z][\w-]*")
"""Code that is one identifier whole though no token of :data:`_TOKEN`: a long number
(`` `9781837470129` ``, an ISBN; `` `8214573` ``) or a name in its namespace (`` `xml:lang` ``,
`` `w:ins` ``, `` `status:COMP` ``)."""
_KEYWORDS = frozenset(
    "if else elif for while do new static const let var export import from return await async "
    "def class fn func function public private void true false null none nil select insert "
    "update delete with as in is not and or set echo export unset source eval exec printf cd "
    "alias where using use join on order group having limit values returning case when".split()
)
"""Words of programming languages that open code, not a command (the shell's own builtins
among them: `` `set -x` ``, `` `echo $X` ``, and SQL's clauses: `` `where x > 1` ``)."""


_WORD_PROGRAMS = frozenset(
    "make go run test find sort cut head tail watch touch kill date time open less more top "
    "file type wait sleep join split read cat diff patch install apply sync mail ping "
    "module".split()
)
"""Programs named by an English word (`` `make lint` ``, `` `go test` ``): found in backticks,
never taught, or every sentence using the word would name them."""


_SHORT_FLAG = re.compile(r"(?<![\w/.:=+-])-[A-Za-z]\w*(?![\w/-])")
"""A flag of one dash in a command (`` `go test -run X -count=1` ``, `` `rsync -a` ``): written as
code only (in prose a dash before a word is punctuation)."""


_MESSAGE_WORD = re.compile(r" (?:not|is|are|was|were|has|have|had|the|a|an|to|of|no|for)\b")
"""A function word after the first word of code: a message (`` `version not supported` ``,
`` `file has changed` ``), not a command."""


_COMPONENT = r"[a-z][a-z0-9]{2,}"
"""A word in small letters that may name a component of the team (`marquee`, `labsync`)."""
_DECLARED_NAME = re.compile(_COMPONENT)
"""A word in small letters in backticks (`` `marquee` ``, `` `labsync` ``)."""
_DESCRIBED = re.compile(r" \((?!(?:the|a|an) )\.?[A-Za-z]")
"""A description in brackets after code (`` `marquee` (Next.js site on ECS) ``, not `` `employees`
(the person) ``): the word in backticks is the name of the team's component, then known and
found in prose too."""


_ASSIGNED = re.compile(r" ?=(?!=)(?!.*\()")
"""A value given to the first word of code (`` `revalidate = 60` ``, `` `timezone=UTC` ``): the
word is a setting's key, an identifier (not a statement's variable given a call's result:
`` `client = Client()` ``)."""
_KEY_VALUE = re.compile(r": \S+")
"""One value after a key and a colon, the whole code (`` `verify: on_change` ``,
`` `cellular: true` ``): a setting as YAML writes it; its key is an identifier (not a keyword of
code: `` `for: 15m` ``)."""
_OPERATOR = re.compile(r"\s*(?:[-+*/%&|^<>!:=]?=|=>|->|\.|\[)")
"""What follows a variable in a statement (`` `client = Client()` ``, `` `x += 1` ``): code,
not a command."""


def code_spans(text: str) -> Iterable[tuple[str, int, int]]:
    """Code in backticks: a lone token is a code name (`` `sizes` ``, `` `fb` ``); the first
    word of a command is its program (`` `adb shell ...` ``), unless a language keyword opens
    it or it reads as a message (``: `` inside), and its flags of one dash are identifiers
    (:data:`_SHORT_FLAG`). A program is a name, then known to the project and found in its
    prose too (``brew first``), unless an English word names it (:data:`_WORD_PROGRAMS`)."""
    for span in CODE_SPAN.finditer(text):
        code, start = span.group(1), span.start(1)
        for flag in _SHORT_FLAG.finditer(code) if " -" in code else ():
            yield "identifier", start + flag.start(), start + flag.end()
        if _WHOLE.fullmatch(code):
            yield "identifier", start, span.end(1)
            continue
        token = _TOKEN.match(code)
        if token is None:
            continue
        if token.end() == len(code):
            declared = _DECLARED_NAME.fullmatch(code) and _DESCRIBED.match(text, span.end())
            yield "name" if declared else "identifier", start, start + token.end()
        elif (
            _ASSIGNED.match(code, token.end()) or _KEY_VALUE.fullmatch(code, token.end())
        ) and token.group() not in _KEYWORDS:
            yield "identifier", start, start + token.end()  # a setting: `revalidate = 60`
        elif (
            code[token.end()] == " "
            and code[0].islower()
            and token.group() not in _KEYWORDS
            and ": " not in code
            and not _OPERATOR.match(code, token.end())
            and not _MESSAGE_WORD.search(code, token.end())
        ):
            program = token.group()
            yield (
                "identifier" if program in _WORD_PROGRAMS else "name",
                start,
                start + token.end(),
            )


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
CODE_SHAPED = re.compile(r"[-_\d]")
"""A hyphen, an underscore or a digit: a word no English sentence writes in small letters
(``edge-gw``, ``min16float``), unlike a plain one (``go``, ``lerp``)."""


def lower_openers(text: str) -> Iterable[tuple[int, int]]:
    """Words in small letters that open a sentence: a sentence opens with a capital, so a word
    that keeps its small letters there is a name written its own way (``edge-gw is down``,
    ``commercetools already holds``); not a stop word, nor after an abbreviation (``e.g.``).
    A code-shaped one (:data:`CODE_SHAPED`) is a name, then known to the project and found
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
            or not (capitals or CODE_SHAPED.search(word))
        ):
            continue
        before = text[: m.start(1)].rstrip()
        last = before.rsplit(None, 1)[-1] if before else ""
        if last.count(".") > 1 or last[:-1].isdigit() or last.lower() in _ABBREVIATIONS:
            continue
        yield m.start(1), m.end(1)


_LISTED = re.compile(rf"(?:^|(?<=[:;,] )|(?<= and ))({_COMPONENT}) \([^()\n]{{3,120}}\)")
"""An item of a list in small letters with its description in brackets (``bidgen (day-ahead
bids)``)."""


def listed_components(text: str) -> Iterable[tuple[int, int]]:
    """The team's components that a text lists in small letters, each with a description in
    brackets, two or more (``bidgen (day-ahead bids), nomi (gas nominations), ...``): names,
    then known and found in the project's prose too. One item alone may be a common word
    glossed (``capacity (60 MW)``), and so may an English word (:func:`.words.english_words`:
    ``desktop (Ryzen 7)``)."""
    items = [m for m in _LISTED.finditer(text) if m.group(1) not in STOP]
    if len(items) < 2:
        return  # the vocabulary is read only for a list
    names = [m.span(1) for m in items if m.group(1) not in english_words()]
    if len(names) > 1:
        yield from names
