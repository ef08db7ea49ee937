"""Decisions and lessons a memory states, read without an LLM: explicit forms only.

Pure functions. Precision over recall: a cue word in passing ("always", "never", "agreed",
"a big decision") states nothing, so only these forms count, each in one sentence of the
memory (a chat turn's ``Name:`` prefix is looked through):

- a **decision**: a sentence that begins ``Decision:``, ``Decided:``, ``Decision with X:``
  (also "Pricing decision:", "Limits decided:"),
  ``Decided with X:``, ``Decided on``, ``Decided to`` or ``Going with``; or says that *we* or
  *the team* (or a named person, of *we*) decided, agreed or settled, e.g. "We decided to add a
  grace window", "Fiona decided we absorb the loss", "we're going with Postgres", "we will use
  Postgres";
- a **lesson**: a sentence that begins ``Lesson:`` (also "Lesson learned:", "Lesson from X:",
  "Lesson for X:"), ``Takeaway:``, ``Note to self:``, ``Gotcha:``, ``TIL:`` or ``Next time``;
  or says "lesson learned", "same lesson", "the lesson is/was", "we learned that" or "learned
  the hard way".

Never: a question, or a sentence that says the decision is still open ("decision deferred",
"not decided", "no decision", "undecided", "to be decided", "TBD").
"""

from __future__ import annotations

import re

from .readings import by_text

_NAME = r"[A-Z][\w.'-]*(?: [A-Z][\w.'-]*){0,2}"
_SPEAKER = re.compile(rf"^\s*{_NAME}:\s+")
_SENTENCES = re.compile(r"(?<=[.!?])\s+|\n+")

DECISION_FORMS = (
    re.compile(
        r"^(?:[\w-]+\s+){0,2}?(?:decision|decided)(?:\s+(?:with|by)\s+[^:]{1,60})?\s*:"
        r"|^decided\s+(?:on|to|that)\b|^going with\b",
        re.I,
    ),
    re.compile(
        r"\b(?:we|we've|we have|the team|team)\s+(?:have\s+|all\s+|finally\s+)?"
        r"(?:decided|agreed|settled)\s+(?:to|on|that|we)\b"
        r"|\bwe(?:'re| are)\s+going with\b|\bwe(?:'ll| will)\s+(?:use|go with|adopt|switch to)\b",
        re.I,
    ),
    re.compile(rf"\b{_NAME}\s+(?:decided|agreed)\s+(?:that\s+)?we\b"),
)
LESSON_FORMS = (
    re.compile(
        r"^(?:lessons?(?:\s+(?:learned|learnt))?(?:\s+(?:from|for)\s+[^:]{1,60})?"
        r"|takeaway|note to self|gotcha|til)\s*:|^next time\b",
        re.I,
    ),
    re.compile(
        r"\blessons? (?:learned|learnt)\b|\bsame lesson\b|\bthe lesson (?:is|was|here)\b"
        r"|\bwe(?:'ve| have)? learn(?:ed|t) that\b"
        r"|\blearn(?:ed|t) (?:that |this |it )?the hard way\b",
        re.I,
    ),
)
OPEN = re.compile(
    r"\b(?:deferred|postponed|undecided|not (?:yet )?decided|no decision|to be decided|tbd"
    r"|(?:haven't|have not|hasn't|has not|didn't|did not) (?:yet )?(?:decided|agreed))\b",
    re.I,
)


def sentences(text: str) -> list[str]:
    """The sentences of ``text``, whitespace collapsed."""
    return [" ".join(part.split()) for part in _SENTENCES.split(text) if part.strip()]


def without_speaker(content: str) -> str:
    """``content`` without a chat turn's leading ``Name:``."""
    return _SPEAKER.sub("", content.strip(), count=1)


def _stated(text: str, forms: tuple[re.Pattern[str], ...]) -> str | None:
    for sentence in sentences(text):
        if sentence.endswith("?") or OPEN.search(sentence):
            continue
        bare = _SPEAKER.sub("", sentence, count=1)
        if any(form.search(s) for form in forms for s in (sentence, bare)):
            return sentence if any(form.search(sentence) for form in forms[:1]) else bare
    return None


@by_text()
def decision(text: str) -> str | None:
    """The first sentence of ``text`` that states a decision (without a chat turn's
    ``Name:``), or None."""
    return _stated(text, DECISION_FORMS)


@by_text()
def lesson(text: str) -> str | None:
    """The first sentence of ``text`` that states a lesson (without a chat turn's ``Name:``),
    or None."""
    return _stated(text, LESSON_FORMS)
