"""``tribalmemory episodes show`` as text for people: the episode's fields, its summary with its
line breaks, and its structured record (task, outcome, decisions, events, lessons, metrics)
as readable lines instead of JSON. Pure: every function returns lines; all text is cleaned."""

from __future__ import annotations

from typing import Any

from ..plural import counted
from .output import clean, indented, mapping_lines, shorten, width

MARGIN = "    "  # under an item of a list


def _day(moment: Any) -> str:
    return clean(str(moment)[:10]) if moment else "----------"


def _ids(item: dict[str, Any]) -> str:
    ids = item.get("memory_ids") or []
    return f"{MARGIN}memories: {clean(', '.join(ids))}" if ids else ""


def decision_lines(decision: dict[str, Any]) -> list[str]:
    """``- <day>  <chosen>`` then its rationale, options, context and outcome, indented."""
    lines = [f"  - {_day(decision.get('at'))}  {clean(decision.get('chosen', ''))}"]
    for label, key in (("because", "rationale"), ("context", "context"), ("outcome", "outcome")):
        if decision.get(key):
            lines.append(f"{MARGIN}{label}: {clean(decision[key])}")
    if decision.get("options"):
        lines.append(f"{MARGIN}options: {clean(', '.join(decision['options']))}")
    return [*lines, _ids(decision)]


def event_lines(event: dict[str, Any]) -> list[str]:
    """``- <day>  <type>: <text>``."""
    head = f"  - {_day(event.get('at'))}  {clean(event.get('type', ''))}: "
    return [head + clean(event.get("text", "")), _ids(event)]


def lesson_lines(lesson: dict[str, Any]) -> list[str]:
    return [f"  - {clean(lesson.get('text', ''))}", _ids(lesson)]


def structured_lines(record: dict[str, Any] | None) -> list[str]:
    """The structured record as headed lists (empty lists are left out); none without one."""
    if not record:
        return []
    edited = record.get("edited") or []
    by = f", edited by a user: {', '.join(edited)}" if edited else ""
    lines = [f"structured ({clean(record.get('source', '?'))}{clean(by)}):"]
    if record.get("task"):
        lines.append(f"  task: {clean(record['task'])}")
    reason = f" ({clean(record['outcome_reason'])})" if record.get("outcome_reason") else ""
    lines.append(f"  outcome: {clean(record.get('outcome', 'unknown'))}{reason}")
    for title, key, render in (
        ("decisions", "decisions", decision_lines),
        ("events", "events", event_lines),
        ("lessons", "lessons", lesson_lines),
    ):
        items = record.get(key) or []
        if items:
            lines.append(f"{title}:")
            for item in items:
                lines.extend(line for line in render(item) if line)
    if record.get("metrics"):
        lines.append("metrics:")
        lines.extend(mapping_lines(record["metrics"], 1))
    return lines


def episode_lines(result: dict[str, Any]) -> list[str]:
    """The whole ``episodes show`` text of an ``episode_get`` answer."""
    episode = dict(result.get("episode", {}))
    summary = episode.pop("summary", None)
    record = episode.pop("structured", None)
    lines = mapping_lines(episode)
    if summary:
        lines += ["", "summary:", indented(summary, "  ")]
    if record:
        lines += ["", *structured_lines(record)]
    if result.get("entities"):
        lines += ["", "entities:"]
        lines += [
            f"  {clean(e['name'])} ({clean(e['kind'])}, {counted(e['mentions'], 'memory')}"
            + (", doubted)" if e.get("doubted") else ")")
            for e in result["entities"]
        ]
    if result.get("timeline"):
        lines += ["", "timeline:"]
        for item in result["timeline"]:
            mark = "*" if item.get("key_moment") else " "
            lines.append(
                f"{mark} {clean(str(item.get('created_at'))[:16])}  "
                f"{clean(item.get('memory_id'))}  {shorten(item.get('content', ''), width() - 60)}"
            )
    elif result.get("memory_ids"):
        lines += ["", f"memory_ids: {clean(', '.join(result['memory_ids']))}"]
    return lines
