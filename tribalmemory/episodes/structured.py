"""The structured episode record: validation, the deterministic fallback, metrics, merging.

Pure functions only. A record is a JSON object::

    {"task", "outcome", "outcome_reason", "decisions", "events", "lessons", "facts",
     "metrics", "source": "llm" | "extractive", "edited": [field names the user set]}

- :func:`from_llm` validates each part of the LLM's ``structured`` answer on its own and drops
  an invalid part (a wrong type, an over-long text or list, a memory id not in the episode),
  returning a message naming each dropped part (the caller logs them as WARNINGs). Nothing is
  stored half-parsed: a list item is kept whole or dropped whole, an over-long list is dropped.
- :func:`fallback` reads the same fields off the memories without an LLM (rules below).
- :func:`finish` merges with the previous record (user-edited fields are kept), drops items
  that cite memories no longer in the episode, orders by time and computes ``metrics``.
- :func:`from_user` validates a user's edit strictly (an error names the field).

A decision has a ``type`` (technical, process, product, other: ``other`` when not given) and
``effects`` (short texts); an event may have ``caused_by`` / ``leads_to``: ids of the episode's
members (the memories other events rest on), from which :mod:`.causes` derives causal links. In
the LLM's answer an invalid ``caused_by`` / ``leads_to`` is dropped alone (the event is kept).

Fallback rules (one event per memory). A memory that states a decision in one of the explicit
forms of :mod:`.statements` ("Decision: ...", "We decided to ...") gives a ``decision`` event
and a decision record (chosen: that sentence; rationale: the words after "because" or
"since"). Else the first matching cue wins, in this order: ``fix`` (fixed, resolved, solved,
works now, patched, workaround), ``blocker`` (blocked, stuck, waiting on), ``handoff``
(handoff, handed over, taking over), ``error`` (error, exception, failed, failure, crash,
broken, bug, regression, traceback, timeout), ``discovery`` (found, discovered, turns out, root
cause, realised/realized, noticed), ``milestone`` (done, shipped, released, merged, deployed,
completed, finished). A memory that states a lesson in an explicit form ("Lesson: ...", "Next
time ...", "lesson learned") gives a lesson (that sentence): a cue word in passing ("always",
"never", "agreed", "a big decision") gives neither a decision nor a lesson.
Facts come only from an LLM: the fallback gives none (a fact stated in passing cannot be told
from chatter by cue words).
Outcome: ``ongoing`` while the episode is active; else ``success`` when the last
error/fix event is a fix or there are milestones and no error, ``failure`` when it is an error,
``unknown`` otherwise.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from .. import shapes
from ..models import Memory
from ..shapes import (
    DECISION_TYPES,
    EVENT_TYPES,
    MAX_DECISIONS,
    MAX_EFFECT_CHARS,
    MAX_EFFECTS,
    MAX_EVENTS,
    MAX_FACTS,
    MAX_LESSONS,
    MAX_OPTIONS,
    OUTCOMES,
)
from ..timeutil import to_iso
from . import statements
from .readings import by_text

EDITABLE = ("task", "outcome", "outcome_reason", "decisions", "events", "lessons", "facts")
TASK_MAX = shapes.MAX_TASK_CHARS
REASON_MAX = TEXT_MAX = shapes.MAX_ITEM_CHARS
OPTION_MAX = shapes.MAX_OPTION_CHARS
MAX_IDS = shapes.MAX_CITED_IDS
LIMITS = {
    "decisions": MAX_DECISIONS,
    "events": MAX_EVENTS,
    "lessons": MAX_LESSONS,
    "facts": MAX_FACTS,
}

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")

CUES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (kind, re.compile(rf"\b(?:{words})\b", re.I))
    for kind, words in (
        ("fix", r"fix(?:ed|es)?|resolved|solved|works now|patched|workaround"),
        ("blocker", r"blocked|blocker|stuck|waiting on"),
        ("handoff", r"hand(?:ed)? ?off|handoff|handed over|handing over|taking over"),
        (
            "error",
            r"errors?|exceptions?|fail(?:ed|s|ure|ing)?|crash(?:ed|es)?|broken|bugs?"
            r"|regression|traceback|time[d ]?out",
        ),
        ("discovery", r"found|discovered|turns out|root cause|reali[sz]ed|noticed"),
        ("milestone", r"done|shipped|released|merged|deployed|completed|finished"),
    )
)
BECAUSE = re.compile(r"\b(?:because|since)\b\s*(.+)", re.I)


class InvalidPart(ValueError):
    """One part of a record is invalid; the message names it."""


# ---------------------------------------------------------------- small checks


def _text(value: Any, name: str, limit: int, *, allow_empty: bool = False) -> str:
    if not isinstance(value, str):
        raise InvalidPart(f"{name} must be a string")
    text = " ".join(value.split())
    if not text and not allow_empty:
        raise InvalidPart(f"{name} is empty")
    if len(text) > limit:
        raise InvalidPart(f"{name} is {len(text)} characters; at most {limit}")
    return text


def _ids(value: Any, name: str, members: set[str], required: bool) -> list[str]:
    if value is None and not required:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InvalidPart(f"{name} must be a list of memory ids")
    if len(value) > MAX_IDS:
        raise InvalidPart(f"{name} has {len(value)} ids; at most {MAX_IDS}")
    unknown = [v for v in value if v not in members]
    if unknown:
        raise InvalidPart(f"{name} names memories not in the episode: {', '.join(unknown[:3])}")
    if required and not value:
        raise InvalidPart(f"{name} is empty; name the memories it rests on")
    return list(dict.fromkeys(value))


def _keys(value: Any, name: str, required: set[str], optional: set[str]) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise InvalidPart(f"{name} must be an object")
    missing = required - value.keys()
    extra = value.keys() - required - optional
    if missing or extra:
        raise InvalidPart(f"{name}: missing {sorted(missing)}, unexpected {sorted(extra)}")
    return value


def _outcome(value: Any, name: str = "outcome") -> str:
    if value not in OUTCOMES:
        raise InvalidPart(f"{name} must be one of {', '.join(OUTCOMES)}, got {value!r}")
    return str(value)


# ---------------------------------------------------------------- items


def _links(
    data: dict[str, Any], key: str, name: str, members: set[str], dropped: list[str] | None
) -> list[str]:
    """An event's ``caused_by`` / ``leads_to``: members of the episode. Invalid: an error for a
    user's edit (``dropped`` None); the LLM's is dropped alone, its reason added to ``dropped``."""
    try:
        return _ids(data.get(key), f"{name}.{key}", members, False)
    except InvalidPart as exc:
        if dropped is None:
            raise
        dropped.append(f"{exc} ({key} dropped)")
        return []


def _decision_type(value: Any, name: str) -> str:
    if value is None:
        return "other"
    if value not in DECISION_TYPES:
        raise InvalidPart(f"{name}.type must be one of {', '.join(DECISION_TYPES)}, got {value!r}")
    return str(value)


def _effects(value: Any, name: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or len(value) > MAX_EFFECTS:
        raise InvalidPart(f"{name}.effects must be a list of at most {MAX_EFFECTS} strings")
    return [_text(e, f"{name}.effects item", MAX_EFFECT_CHARS) for e in value]


READ_ONLY = frozenset({"links"})
"""What a read adds to a decision or an event (its causal links, kept in their own table):
accepted back in an edit or an import, and ignored, so a record read can be sent back."""


def decision_item(
    value: Any,
    name: str,
    members: set[str],
    *,
    strict_ids: bool,
    dropped: list[str] | None = None,
) -> dict[str, Any]:
    data = _keys(
        value,
        name,
        {"chosen"},
        {"at", "context", "options", "rationale", "outcome", "memory_ids", "type", "effects"}
        | READ_ONLY,
    )
    options = data.get("options") or []
    if not isinstance(options, list) or len(options) > MAX_OPTIONS:
        raise InvalidPart(f"{name}.options must be a list of at most {MAX_OPTIONS} strings")
    return {
        "at": None,
        "context": _text(data.get("context") or "", f"{name}.context", TEXT_MAX, allow_empty=True),
        "options": [_text(o, f"{name}.options item", OPTION_MAX) for o in options],
        "chosen": _text(data["chosen"], f"{name}.chosen", TEXT_MAX),
        "rationale": _text(
            data.get("rationale") or "", f"{name}.rationale", TEXT_MAX, allow_empty=True
        ),
        "outcome": _text(data.get("outcome") or "", f"{name}.outcome", TEXT_MAX, allow_empty=True)
        or None,
        "memory_ids": _ids(data.get("memory_ids"), f"{name}.memory_ids", members, strict_ids),
        "type": _decision_type(data.get("type"), name),
        "effects": _effects(data.get("effects"), name),
    }


def event_item(
    value: Any,
    name: str,
    members: set[str],
    *,
    strict_ids: bool,
    dropped: list[str] | None = None,
) -> dict[str, Any]:
    data = _keys(
        value, name, {"type", "text"}, {"at", "memory_ids", "caused_by", "leads_to"} | READ_ONLY
    )
    if data["type"] not in EVENT_TYPES:
        raise InvalidPart(f"{name}.type must be one of {', '.join(EVENT_TYPES)}")
    return {
        "at": None,
        "type": data["type"],
        "text": _text(data["text"], f"{name}.text", TEXT_MAX),
        "memory_ids": _ids(data.get("memory_ids"), f"{name}.memory_ids", members, strict_ids),
        "caused_by": _links(data, "caused_by", name, members, dropped),
        "leads_to": _links(data, "leads_to", name, members, dropped),
    }


def lesson_item(
    value: Any,
    name: str,
    members: set[str],
    *,
    strict_ids: bool,
    dropped: list[str] | None = None,
) -> dict[str, Any]:
    data = _keys(value, name, {"text"}, {"memory_ids"})
    return {
        "text": _text(data["text"], f"{name}.text", TEXT_MAX),
        "memory_ids": _ids(data.get("memory_ids"), f"{name}.memory_ids", members, strict_ids),
    }


ITEMS = {
    "decisions": decision_item,
    "events": event_item,
    "lessons": lesson_item,
    "facts": lesson_item,  # the same parts: a text and the memories it rests on
}


# ---------------------------------------------------------------- LLM answer


def from_llm(answer: Any, member_ids: Iterable[str]) -> tuple[dict[str, Any], list[str]]:
    """The valid parts of the LLM's ``structured`` object, and what was dropped and why."""
    members = set(member_ids)
    dropped: list[str] = []
    if not isinstance(answer, dict):
        return {}, ["structured: not an object (all of it dropped)"]
    out: dict[str, Any] = {}
    unknown = sorted(answer.keys() - {"task", "outcome", "outcome_reason", *ITEMS})
    if unknown:
        dropped.append(f"structured: unexpected keys {unknown} ignored")
    for key, check in (
        ("task", lambda v: _text(v, "task", TASK_MAX)),
        ("outcome", _outcome),
        ("outcome_reason", lambda v: _text(v, "outcome_reason", REASON_MAX)),
    ):
        if key in answer:
            try:
                out[key] = check(answer[key])
            except InvalidPart as exc:
                dropped.append(str(exc))
    for key, item in ITEMS.items():
        if key not in answer:
            continue
        value = answer[key]
        if not isinstance(value, list):
            dropped.append(f"{key} must be a list (dropped)")
            continue
        if len(value) > LIMITS[key]:
            dropped.append(f"{key} has {len(value)} items; at most {LIMITS[key]} (dropped)")
            continue
        kept = []
        for index, entry in enumerate(value):
            try:
                kept.append(
                    item(entry, f"{key}[{index}]", members, strict_ids=True, dropped=dropped)
                )
            except InvalidPart as exc:
                dropped.append(f"{exc} (item dropped)")
        out[key] = kept
    return out, dropped


# ---------------------------------------------------------------- user edits


def from_user(patch: Any, member_ids: Iterable[str]) -> dict[str, Any]:
    """A user's edit of editable fields, validated strictly; raises :class:`InvalidPart`."""
    members = set(member_ids)
    if not isinstance(patch, dict) or not patch:
        raise InvalidPart(f"structured must be an object with some of: {', '.join(EDITABLE)}")
    unknown = sorted(patch.keys() - set(EDITABLE))
    if unknown:
        raise InvalidPart(
            f"structured: unknown field(s) {', '.join(unknown)}; editable: {', '.join(EDITABLE)}"
        )
    out: dict[str, Any] = {}
    if "task" in patch:
        out["task"] = _text(patch["task"], "structured.task", TASK_MAX)
    if "outcome" in patch:
        out["outcome"] = _outcome(patch["outcome"], "structured.outcome")
        out["outcome_reason"] = None  # the reason given for the outcome replaced, unless sent
    if "outcome_reason" in patch:
        out["outcome_reason"] = _text(
            patch["outcome_reason"], "structured.outcome_reason", REASON_MAX, allow_empty=True
        )
    for key, item in ITEMS.items():
        if key not in patch:
            continue
        value = patch[key]
        if not isinstance(value, list) or len(value) > LIMITS[key]:
            raise InvalidPart(f"structured.{key} must be a list of at most {LIMITS[key]} items")
        out[key] = [
            item(entry, f"structured.{key}[{i}]", members, strict_ids=False)
            for i, entry in enumerate(value)
        ]
    return out


# ---------------------------------------------------------------- fallback


def _sentence(text: str, pattern: re.Pattern[str]) -> str:
    for part in re.split(r"(?<=[.!?])\s+|\n+", text):
        if pattern.search(part):
            return _clip(part)
    return _clip(text)


def _clip(text: str, limit: int = TEXT_MAX) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


@by_text()
def event_type(text: str) -> str | None:
    """The first cue (in :data:`CUES` order) that ``text`` matches."""
    return next((kind for kind, pattern in CUES if pattern.search(text)), None)


def fallback(memories: Sequence[Memory], status: str) -> dict[str, Any]:
    """The structured fields read off the memories by the documented cue rules."""
    ordered = sorted(memories, key=lambda m: m.created_at)
    events: list[dict[str, Any]] = []
    decisions: list[dict[str, Any]] = []
    lessons: list[dict[str, Any]] = []
    for memory in ordered:
        chosen = statements.decision(memory.content)
        kind = "decision" if chosen else event_type(memory.content)
        if chosen:
            text = _clip(chosen)
            events.append({"at": None, "type": kind, "text": text, "memory_ids": [memory.id]})
            why = BECAUSE.search(text)
            decisions.append(
                {
                    "at": None,
                    "context": "",
                    "options": [],
                    "chosen": text,
                    "rationale": _clip(why.group(1)) if why else "",
                    "outcome": None,
                    "memory_ids": [memory.id],
                    "type": "other",
                    "effects": [],
                }
            )
        elif kind is not None:
            text = _sentence(memory.content, dict(CUES)[kind])
            events.append({"at": None, "type": kind, "text": text, "memory_ids": [memory.id]})
        learned = statements.lesson(memory.content)
        if learned and len(lessons) < MAX_LESSONS:
            lessons.append({"text": _clip(learned), "memory_ids": [memory.id]})
    outcome, reason = fallback_outcome(events, status)
    first = ordered[0].content if ordered else ""
    task = re.split(r"(?<=[.!?])\s|\n", first.strip(), maxsplit=1)[0] if first else ""
    return {
        "task": _clip(task, TASK_MAX) or None,
        "outcome": outcome,
        "outcome_reason": reason,
        "decisions": decisions[-MAX_DECISIONS:],
        "events": events[-MAX_EVENTS:],
        "lessons": lessons,
    }


def fallback_outcome(events: Sequence[dict[str, Any]], status: str) -> tuple[str, str]:
    if status == "active":
        return "ongoing", "the episode is still active"
    last = next((e for e in reversed(events) if e["type"] in ("error", "fix")), None)
    if last is not None and last["type"] == "fix":
        return "success", "the last error/fix event is a fix"
    if last is not None:
        return "failure", "the last error/fix event is an error"
    if any(e["type"] == "milestone" for e in events):
        return "success", "milestones and no error"
    return "unknown", "no error, fix or milestone cue in the memories"


# ---------------------------------------------------------------- merging and metrics


def _times(memories: Sequence[Memory]) -> dict[str, datetime]:
    return {m.id: m.created_at for m in memories}


def _stamp(items: list[dict[str, Any]], times: dict[str, datetime]) -> list[dict[str, Any]]:
    """Give each item ``at`` (its earliest memory's time) and order them by it."""
    for item in items:
        cited = [times[i] for i in item.get("memory_ids", []) if i in times]
        if cited:
            item["at"] = to_iso(min(cited))
    far = "9999"
    return sorted(items, key=lambda item: item.get("at") or far)


def metrics(memories: Sequence[Memory], record: dict[str, Any]) -> dict[str, Any]:
    """Computed, never guessed: from the memories and the record's events."""
    times = sorted(m.created_at for m in memories)
    events = record.get("events") or []
    kinds = Counter(e["type"] for e in events)
    tags = Counter(t for m in memories for t in m.tags)
    return {
        "duration_seconds": round((times[-1] - times[0]).total_seconds(), 3) if times else 0.0,
        "active_days": len({t.date() for t in times}),
        "memory_count": len(memories),
        "participants": dict(sorted(Counter(m.source_instance for m in memories).items())),
        "tags": [t for t, _ in tags.most_common(12)],
        "errors": kinds.get("error", 0),
        "fixes": kinds.get("fix", 0),
        "decisions": len(record.get("decisions") or []),
        "lessons": len(record.get("lessons") or []),
        "first_memory_at": to_iso(times[0]) if times else None,
        "last_memory_at": to_iso(times[-1]) if times else None,
    }


def empty() -> dict[str, Any]:
    return {
        "task": None,
        "outcome": "unknown",
        "outcome_reason": None,
        "decisions": [],
        "events": [],
        "lessons": [],
        "facts": [],
    }


def finish(
    fresh: dict[str, Any],
    previous: dict[str, Any] | None,
    memories: Sequence[Memory],
    source: str,
    edited: Iterable[str] = (),
) -> dict[str, Any]:
    """The record to store: ``fresh`` parts over ``previous``, user-edited fields kept from
    ``previous`` (or taken from ``fresh`` when ``edited`` names them: a user's edit), items
    citing memories gone from the episode dropped, ``at`` and order from memory time, metrics."""
    previous = previous or {}
    pinned = set(previous.get("edited") or [])
    new_edits = set(edited)
    record = empty()
    for key in EDITABLE:
        if key in previous:
            record[key] = previous[key]
        if key in fresh and (key not in pinned or key in new_edits):
            record[key] = fresh[key]
    members = {m.id for m in memories}
    times = _times(memories)
    for key in ITEMS:
        kept = [
            dict(item)
            for item in record[key] or []
            if all(i in members for i in item.get("memory_ids", []))
        ]
        record[key] = _stamp(kept, times) if key in ("decisions", "events") else kept
    for event in record["events"]:  # a link to a memory gone from the episode goes
        for key in ("caused_by", "leads_to"):
            if key in event:
                event[key] = [i for i in event[key] if i in members]
    record["metrics"] = metrics(memories, record)
    record["source"] = source
    record["edited"] = sorted(pinned | new_edits)
    return record
