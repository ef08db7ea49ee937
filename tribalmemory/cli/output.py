"""Printing for the CLI: JSON for scripts, short tables and key/value lines for people."""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Sequence
from typing import Any, TextIO


class CliError(Exception):
    """A message for the user and the exit code (1 = failed, 2 = usage or configuration)."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


def print_json(data: Any) -> None:
    print(json.dumps(data, indent=2, ensure_ascii=False))


def shorten(text: str, width: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[: max(width - 1, 0)] + "…"


def width() -> int:
    return max(shutil.get_terminal_size((100, 24)).columns, 60)


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """Columns padded to their widest cell; the last column takes what is left."""
    cells = [[str(h) for h in headers]] + [["" if c is None else str(c) for c in r] for r in rows]
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
    pad = "  " * indent
    for key, value in data.items():
        if isinstance(value, dict):
            print(f"{pad}{key}:" + ("" if value else " {}"), file=stream)
            print_mapping(value, indent + 1, stream)
        elif isinstance(value, list) and any(isinstance(v, dict | list) for v in value):
            print(f"{pad}{key}:", file=stream)
            for item in value:
                print(f"{pad}  - {json.dumps(item, ensure_ascii=False)}", file=stream)
        elif isinstance(value, list):
            print(f"{pad}{key}: {', '.join(map(str, value)) or '[]'}", file=stream)
        else:
            print(f"{pad}{key}: {'-' if value is None else value}", file=stream)


class ProgressBar:
    """``[#####.....] 512/1000`` on stderr; plain lines every 10 % when stderr is not a tty."""

    def __init__(self, label: str, stream: TextIO | None = None) -> None:
        self.label = label
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self._last_decile = -1

    def __call__(self, done: int, total: int | None) -> None:
        if not total:
            self._write(f"{self.label}: {done}")
            return
        fraction = min(max(done / total, 0.0), 1.0)
        if self.tty:
            filled = int(fraction * 30)
            self.stream.write(
                f"\r{self.label} [{'#' * filled}{'.' * (30 - filled)}] {done}/{total}"
            )
            self.stream.flush()
        elif int(fraction * 10) != self._last_decile:
            self._last_decile = int(fraction * 10)
            self._write(f"{self.label}: {done}/{total}")

    def _write(self, text: str) -> None:
        print(
            ("\r" if self.tty else "") + text,
            file=self.stream,
            end="" if self.tty else "\n",
            flush=True,
        )

    def finish(self) -> None:
        if self.tty:
            print(file=self.stream)
