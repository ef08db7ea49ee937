"""Printing for the CLI: JSON for scripts, short tables and key/value lines for people.

Memories and titles are written by agents (and, through them, by whatever they read), so
everything the CLI prints from the daemon passes :func:`clean`: control characters, terminal
escape sequences and bidirectional overrides are shown as escapes (``\\x1b``), never sent to the
terminal, where they could clear the screen, rewrite the clipboard or disguise text.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from collections.abc import Sequence
from typing import Any, TextIO

# C0 controls but tab and newline, DEL, C1 controls, bidi and line/paragraph separators.
UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]")
# The same inside JSON text, where json.dumps already escaped the C0 controls.
UNSAFE_IN_JSON = re.compile("[\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def clean(text: Any) -> str:
    """``text`` safe to print on a terminal (see the module docstring)."""
    return UNSAFE.sub(_escape, str(text))


class CliError(Exception):
    """A message for the user and the exit code (1 = failed, 2 = usage or configuration)."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


def print_json(data: Any) -> None:
    text = json.dumps(data, indent=2, ensure_ascii=False)
    print(UNSAFE_IN_JSON.sub(lambda m: f"\\u{ord(m.group()):04x}", text))


def shorten(text: str, width: int) -> str:
    """One line of at most ``width`` characters, cleaned."""
    text = " ".join(clean(text).split())
    return text if len(text) <= width else text[: max(width - 1, 0)] + "…"


def indented(text: str, margin: str = "   ") -> str:
    """The whole of ``text``, cleaned, its line breaks kept, each line after ``margin`` (a
    memory read in full: recall's answer is the text an agent stored, not a preview)."""
    return "\n".join(margin + line.rstrip() for line in clean(text).strip().splitlines())


def width() -> int:
    return max(shutil.get_terminal_size((100, 24)).columns, 60)


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """Columns padded to their widest cell; the last column takes what is left."""
    cells = [[str(h) for h in headers]] + [
        ["" if c is None else " ".join(clean(c).split()) for c in r] for r in rows
    ]
    sizes = [max(len(row[i]) for row in cells) for i in range(len(headers) - 1)]
    room = max(width() - sum(sizes) - 2 * len(sizes), 20)
    lines = []
    for row in cells:
        head = "  ".join(cell.ljust(size) for cell, size in zip(row, sizes, strict=False))
        lines.append((head + "  " if sizes else "") + shorten(row[-1], room))
    return "\n".join(lines)


def print_mapping(data: dict[str, Any], indent: int = 0, out: TextIO | None = None) -> None:
    """Nested ``key: value`` lines."""
    stream = out or sys.stdout
    for line in mapping_lines(data, indent):
        print(line, file=stream)


def mapping_lines(data: dict[str, Any], indent: int = 0) -> list[str]:
    """Nested ``key: value`` lines (cleaned), ``indent`` levels of two spaces in."""
    pad = "  " * indent
    lines: list[str] = []
    for key, value in data.items():
        if isinstance(value, dict):
            lines.append(f"{pad}{clean(key)}:" + ("" if value else " {}"))
            lines.extend(mapping_lines(value, indent + 1))
        elif isinstance(value, list) and any(isinstance(v, dict | list) for v in value):
            lines.append(f"{pad}{clean(key)}:")
            for item in value:
                text = json.dumps(item, ensure_ascii=False)
                lines.append(f"{pad}  - {clean(text)}")
        elif isinstance(value, list):
            lines.append(f"{pad}{clean(key)}: {clean(', '.join(map(str, value))) or '[]'}")
        else:
            lines.append(f"{pad}{clean(key)}: {'-' if value is None else clean(value)}")
    return lines
