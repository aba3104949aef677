"""The one console factory every command prints with."""

from __future__ import annotations

__all__ = ["console", "PIPE_WIDTH"]

#: the width of a console that is not a terminal and has no ``COLUMNS``
PIPE_WIDTH = 132


def console(stderr: bool = False):
    """The one console every command prints with: ``$COLUMNS`` wide when it is set (on a terminal or not),
    else the terminal's width, else :data:`PIPE_WIDTH` columns; long lines are not wrapped into the next column,
    and nothing is highlighted."""
    import os
    import sys

    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    cols = os.environ.get("COLUMNS", "").strip()
    width = int(cols) if cols.isdigit() and int(cols) > 0 else (None if stream.isatty() else PIPE_WIDTH)
    return Console(file=stream, soft_wrap=False, width=width, highlight=False)
