"""Progress bars for long retrieval steps (tokenizing, embedding, indexing, searching).

Bars are drawn with rich on **stderr**, and only when stderr is a terminal and the
retriever's ``progress`` option is true; otherwise :func:`progress_bar` yields a no-op
bar, so pipelines and tests print nothing.
"""

from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import Iterator

__all__ = ["progress_bar"]


class _NullBar:
    def advance(self, n: int = 1) -> None:
        pass


class _RichBar:
    def __init__(self, progress, task) -> None:
        self._progress = progress
        self._task = task

    def advance(self, n: int = 1) -> None:
        self._progress.advance(self._task, n)


@contextmanager
def progress_bar(description: str, total: int, enabled: bool = True) -> Iterator[_NullBar | _RichBar]:
    """A bar for ``total`` units of work; ``bar.advance(n)`` after each batch.

    Disabled (a no-op) when ``enabled`` is false, ``total`` is 0, or stderr is not a TTY.
    The bar is transient: it disappears when the step finishes.
    """
    if not enabled or total <= 0 or not _stderr_is_tty():
        yield _NullBar()
        return
    from rich.console import Console
    from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                               TimeElapsedColumn, TimeRemainingColumn)

    console = Console(stderr=True)
    with Progress(TextColumn("[progress.description]{task.description}"), BarColumn(),
                  MofNCompleteColumn(), TimeElapsedColumn(), TimeRemainingColumn(),
                  console=console, transient=True) as progress:
        yield _RichBar(progress, progress.add_task(description, total=total))


def _stderr_is_tty() -> bool:
    try:
        return bool(sys.stderr.isatty())
    except (AttributeError, ValueError):
        return False
