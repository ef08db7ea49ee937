"""Progress bars (``rich``) on a terminal; nothing when quiet or not a TTY."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


def wanted(json_output: bool) -> bool:
    """Bars only for a person at a terminal: not with ``--json``, not into a pipe or file."""
    return not json_output and sys.stderr.isatty()


@contextmanager
def bar(label: str, total: int | None, show: bool) -> Iterator[Any]:
    """Yield ``advance(n, total=None)``; draws a bar with count, rate and time left on stderr
    when ``show`` (``total`` corrects the expected count when it becomes known)."""
    if not show:
        yield lambda _n, total=None: None
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        ProgressColumn,
        TextColumn,
        TimeRemainingColumn,
    )
    from rich.text import Text

    class Rate(ProgressColumn):
        def render(self, task: Any) -> Text:
            return Text(f"{task.speed:,.0f}/s" if task.speed else "")

    columns = [
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        Rate(),
        TimeRemainingColumn(),
    ]
    with Progress(*columns, console=Console(stderr=True)) as progress:
        task = progress.add_task(label, total=total)

        def advance(n: int, total: int | None = None) -> None:
            progress.update(task, advance=n, total=total or None)

        yield advance
