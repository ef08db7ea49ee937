"""Identifier patterns shared by the entity extraction and the episode detector's features
(:func:`tribalmemory.episodes.detector.features.identifiers`): the same compiled patterns, so
the detector's terms do not change when the extraction does."""

from __future__ import annotations

import re

NUMBER_REF = re.compile(r"(?<![\w.])#?(\d{3,})(?![\w.])")
TICKET = re.compile(r"\b([A-Za-z][A-Za-z0-9]*-\d+)\b")
PATH = re.compile(r"(?<![\w/])((?:[\w.-]+/)+[\w.-]*\w)")
CODE_NAME = re.compile(
    r"\b([A-Za-z]\w*_\w+"  # snake_case, _private
    r"|[a-z]+(?:[A-Z][a-z0-9]*)+"  # camelCase
    r"|[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+"  # PascalCase with two humps or more
    r"|[A-Za-z_]\w+(?:\.[A-Za-z_]\w+)+)"  # dotted.names (two letters a part at least)
    r"\(?"
)
