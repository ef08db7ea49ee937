"""Logging: stderr and ``<data_dir>/logs/server.log`` (rotating); reading that file back."""

from __future__ import annotations

import io
import logging
import os
import sys
import time
from collections import deque
from collections.abc import Iterator
from logging.handlers import RotatingFileHandler
from pathlib import Path
from typing import TextIO

from .config import Config

FORMAT = "%(asctime)s %(levelname)-7s %(name)s: %(message)s"
MAX_BYTES = 5_000_000
BACKUPS = 3
# Chatty libraries stay at WARNING unless the daemon runs at debug level.
QUIET = ("mcp", "httpx", "httpcore", "LiteLLM", "litellm", "fastembed", "sse_starlette")


REPORTED = "reported_by_command"
"""``extra={REPORTED: True}`` marks a record whose error the command also tells the user (the
CLI's own message): the log file keeps it, the stderr of :func:`setup_logging` skips it."""


def _not_reported(record: logging.LogRecord) -> bool:
    return not getattr(record, REPORTED, False)


class PrivateRotatingFileHandler(RotatingFileHandler):
    """A rotating log whose files are readable by their owner only (``0600``)."""

    def _open(self) -> io.TextIOWrapper:
        stream = super()._open()
        os.fchmod(stream.fileno(), 0o600)
        return stream


def log_file(config: Config) -> Path:
    return config.data_path / "logs" / "server.log"


def setup_logging(level: str = "info", file: Path | None = None, *, stderr: bool = True) -> None:
    """Configure the root logger; calling it again replaces the handlers it added before."""
    root = logging.getLogger()
    for handler in [h for h in root.handlers if getattr(h, "tribalmemory", False)]:
        root.removeHandler(handler)
        handler.close()
    handlers: list[logging.Handler] = []
    if stderr:
        handlers.append(logging.StreamHandler(sys.stderr))
        handlers[-1].addFilter(_not_reported)
    if file is not None:
        file.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        handlers.append(
            PrivateRotatingFileHandler(
                file, maxBytes=MAX_BYTES, backupCount=BACKUPS, encoding="utf-8"
            )
        )
    formatter = logging.Formatter(FORMAT)
    for handler in handlers:
        handler.setFormatter(formatter)
        handler.tribalmemory = True  # type: ignore[attr-defined]
        root.addHandler(handler)
    numeric = logging.getLevelName(level.upper())
    root.setLevel(numeric)
    for name in QUIET:
        logging.getLogger(name).setLevel(numeric if numeric == logging.DEBUG else logging.WARNING)


def tail(path: Path, lines: int, grep: str | None = None) -> list[str]:
    """The last ``lines`` lines of ``path`` that contain ``grep`` (case-insensitive)."""
    needle = grep.lower() if grep else None
    kept: deque[str] = deque(maxlen=max(lines, 0))
    with path.open(encoding="utf-8", errors="replace") as handle:
        for line in handle:
            if needle is None or needle in line.lower():
                kept.append(line.rstrip("\n"))
    return list(kept)


def follow(path: Path, grep: str | None = None, poll: float = 0.5) -> Iterator[str | None]:
    """New complete lines appended to ``path`` from now on; None after each idle ``poll``.

    Survives rotation (the file replaced or truncated). Stop by closing the generator.
    """
    needle = grep.lower() if grep else None
    handle = path.open(encoding="utf-8", errors="replace")
    handle.seek(0, os.SEEK_END)
    pending = ""
    try:
        while True:
            chunk = handle.readline()
            if chunk:
                pending += chunk
                if pending.endswith("\n"):
                    line, pending = pending.rstrip("\n"), ""
                    if needle is None or needle in line.lower():
                        yield line
                continue
            if _replaced(path, handle):
                handle.close()
                handle = path.open(encoding="utf-8", errors="replace")
                pending = ""
                continue
            yield None
            time.sleep(poll)
    finally:
        handle.close()


def _replaced(path: Path, handle: TextIO) -> bool:
    """True when ``path`` is now another file, or shorter than what was read."""
    try:
        now = os.stat(path)
    except FileNotFoundError:
        return False
    opened = os.fstat(handle.fileno())
    return now.st_ino != opened.st_ino or now.st_size < handle.tell()
