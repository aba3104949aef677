"""The ``ragexam`` command line: a thin shell over the Python API.

Every command imports what it needs inside its body, so ``ragexam --help`` stays fast.
Errors ragexam raises on purpose (:class:`ragexam.errors.RagexamError`) are printed as one
clear message on stderr and exit with status 2; anything else is a bug and keeps its
traceback.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import List, Optional

import typer

app = typer.Typer(
    name="ragexam",
    help="Grade retrieval-augmented generation pipelines like a mock exam.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _stdout():
    from rich.console import Console

    return Console(soft_wrap=False)


def _print_json(obj) -> None:
    import json

    sys.stdout.write(json.dumps(obj, ensure_ascii=False, indent=2, allow_nan=False) + "\n")


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", help="Print the version and exit.", is_eager=True),
) -> None:
    if version:
        from ragexam import __version__

        typer.echo(f"ragexam {__version__}")
        raise typer.Exit()


# --- commands: ranking metrics -------------------------------------------------------------

# --- commands: question sets ---------------------------------------------------------------

# --- commands: text metrics ----------------------------------------------------------------

# --- commands: retrieval runs --------------------------------------------------------------


def main(argv: Optional[List[str]] = None) -> None:
    """Console-script entry point."""
    from ragexam.errors import RagexamError

    try:
        app(args=argv, prog_name="ragexam")
    except RagexamError as err:
        from rich.console import Console

        Console(stderr=True, soft_wrap=True).print(f"[bold red]error:[/] {err}", highlight=False, markup=True)
        sys.exit(2)


if __name__ == "__main__":  # pragma: no cover
    main()
