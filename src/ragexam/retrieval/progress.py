"""Progress bars for long retrieval steps (tokenizing, embedding, indexing, searching).

Bars are drawn with rich on **stderr** when stderr is a terminal and the retriever's ``progress``
option is true.  When stderr is not a terminal the same counts go to the command's progress lines
(:mod:`ragexam.exec.progress`: a line at most every 10 s in a log), and a library call without a
reporter prints nothing.
"""

from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import Any, Iterator

__all__ = ["progress_bar"]


class _NullBar:
    def advance(self, n: int = 1) -> None:
        pass

    def skip(self, n: int) -> None:
        pass


class _RichBar:
    def __init__(self, progress, task) -> None:
        self._progress = progress
        self._task = task

    def advance(self, n: int = 1) -> None:
        self._progress.advance(self._task, n)

    def skip(self, n: int) -> None:  # found in a cache: rich's bar counts it done (its estimate is its own)
        self._progress.advance(self._task, n)


@contextmanager
def progress_bar(description: str, total: int, enabled: bool = True) -> Iterator[Any]:
    """A bar for ``total`` units of work; ``bar.advance(n)`` after each batch, ``bar.skip(n)`` for units a cache
    held (done, but not in the progress lines' rate).

    Disabled (a no-op) when ``enabled`` is false or ``total`` is 0; when stderr is not a TTY the counts
    feed the command's progress lines (:func:`ragexam.exec.progress.task`).  The bar is transient: it
    disappears when the step finishes.
    """
    if not enabled or total <= 0:
        yield _NullBar()
        return
    if not _stderr_is_tty():  # a log: the command's progress lines count it (if it has them)
        from ragexam.exec.progress import task

        with task(description, total) as counted:
            yield counted
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
