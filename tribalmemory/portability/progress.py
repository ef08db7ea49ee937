"""Progress bars (``rich``) on a terminal; nothing when quiet or not a TTY."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any


def wanted(json_output: bool) -> bool:
    """Bars only for a person at a terminal: not with ``--json``, not into a pipe or file."""
    return not json_output and sys.stderr.isatty()


@contextmanager
def bar(label: str, total: int | None, show: bool) -> Iterator[Callable[[int], None]]:
    """Yield ``advance(n)``; draws a bar with count, rate and ETA on stderr when ``show``."""
    if not show:
        yield lambda _n: None
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
        yield lambda n: progress.advance(task, n)
