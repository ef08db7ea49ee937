"""A tracker's project keys written alone (``Jira: TRD trading, PLAT platform``, ``an FSW
ticket``, the prefix ``PAY-`` of ``PAY- payments``): they name a project of the tracker, no
ticket and, by the labelling guideline, no entity."""

from __future__ import annotations

import re

_TRACKER_LIST = re.compile(
    r"\b(?:Jira|Linear|YouTrack)(?: (?:projects?|keys?|boards?))?:? "
    r"((?:[A-Z][A-Z0-9]{1,9}\b[^,;.()\n]{0,40}?(?:, (?:and )?| and |(?=[.;\n)]|$)))+)"
)
"""A tracker's projects named by their keys (``Jira: TRD trading, PLAT platform``)."""
_KEY_TICKET = re.compile(r"\b([A-Z][A-Z0-9]{1,9}) tickets?\b")
"""A project key before the word ticket (``an FSW ticket``)."""
_LIST_ITEM = re.compile(r"(?:^|, (?:and )?| and )([A-Z][A-Z0-9]{1,9})\b")


def tracker_keys(text: str) -> set[int]:
    """Where ``text`` writes a tracker's project key alone (:data:`_TRACKER_LIST`,
    :data:`_KEY_TICKET`): no ticket and no name."""
    if "Jira" not in text and "Linear" not in text and "ticket" not in text:
        return set()
    keys = {m.start(1) for m in _KEY_TICKET.finditer(text)}
    for m in _TRACKER_LIST.finditer(text):
        keys.update(m.start(1) + i.start(1) for i in _LIST_ITEM.finditer(m.group(1)))
    return keys


KEY_PREFIX = re.compile(r"-(?=[\s,;)]|$)")
"""A hyphen ending a word: the prefix of a project's ticket keys (``PAY- payments``), no name."""
