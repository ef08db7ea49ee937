"""An episode in a line: what recall attaches to its best results as their thread's context."""

from __future__ import annotations

import re

from .extractive import clip

GIST_CHARS = 160
"""Title and gist together: about one memory's worth of text, so the thread of the best
results fits beside them without crowding them out."""

_HEADER = re.compile(r"^\d[\d,]* memor(?:y|ies), ")  # the extractive summary's size-and-span line


def gist(title: str, summary: str, limit: int = GIST_CHARS) -> str:
    """What an episode is about, in at most ``limit`` characters together with ``title``:
    its summary without the extractive summary's size-and-span line, on one line, cut at a
    word. Empty when the summary says nothing more or the title leaves no room."""
    lines = [line for line in summary.splitlines() if line.strip()]
    if lines and _HEADER.match(lines[0]):
        lines = lines[1:]
    room = limit - len(title) - 2  # "title: gist" as a reader sees them together
    if room < 20 or not lines:
        return ""
    return clip(" ".join(lines), room)
