"""The ``ragexam`` console script's first stop: ``ragexam evaluate`` without loading the full command line.

``ragexam evaluate`` is a one-shot command whose whole run on a 10k-query TREC pair takes a few tenths of a
second, so the start-up of the full CLI (typer, click, every command's options) is a large part of it.
:func:`main` reads an ``evaluate`` command line itself when it uses only the options below, calls the same
:func:`ragexam.api.evaluate_trec` and prints the same output as :func:`ragexam.cli.evaluate`; anything else
(another command, ``--help``, an unknown or malformed option, an error to report) goes to
:func:`ragexam.cli.main`, so help, messages and exit codes stay those of the full CLI.

Options read here: ``--qrels X``, ``--run X``, ``--metric/-m X`` (repeatable), ``--json``, ``--trec-compat``,
``--relevance-level/-l N`` (also as ``--opt=X``).
"""

from __future__ import annotations

import os
import sys
from typing import Dict, List, Optional

__all__ = ["main"]

_VALUE = {"--qrels": "qrels", "--run": "run", "--metric": "metric", "-m": "metric", "--relevance-level": "level",
          "-l": "level"}
_FLAG = {"--json": "json", "--trec-compat": "trec_compat"}


def _parse_evaluate(args: List[str]) -> Optional[Dict[str, object]]:
    """The options of an ``evaluate`` command line, or ``None`` when the full CLI must read it."""
    out: Dict[str, object] = {"metric": [], "json": False, "trec_compat": False, "level": 1}
    i = 0
    while i < len(args):
        arg = args[i]
        name, eq, value = arg.partition("=") if arg.startswith("--") else (arg, "", "")
        if name in _FLAG and not eq:
            out[_FLAG[name]] = True
        elif name in _VALUE:
            if not eq:
                i += 1
                if i >= len(args) or args[i].startswith("-"):
                    return None
                value = args[i]
            key = _VALUE[name]
            if key == "metric":
                out["metric"].append(value)  # type: ignore[union-attr]
            elif key == "level":
                try:
                    out["level"] = int(value)
                except ValueError:
                    return None
            elif key in out:
                return None  # given twice: the full CLI decides
            else:
                out[key] = value
        else:
            return None
        i += 1
    return out if "qrels" in out and "run" in out else None


def _evaluate(opts: Dict[str, object]) -> None:
    """:func:`ragexam.cli.evaluate`'s work and output (a :class:`RagexamError` propagates)."""
    # numpy's OpenBLAS starts a thread per core at import, and those threads spin for a while; evaluating
    # multiplies no matrices, and on 2 cores the spinning thread takes a core from the reader (0.03 s of a
    # 10k-query evaluation).  A user's own setting wins.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    from ragexam.api import evaluate_trec

    res = evaluate_trec(opts["qrels"], opts["run"], opts["metric"] or None, relevance_level=opts["level"],
                        trec_compat=opts["trec_compat"])
    for warning in res.warnings:
        sys.stderr.write(f"warning: {warning}\n")
    if opts["json"]:
        sys.stdout.write(res.to_json() + "\n")
        return
    from rich.console import Console

    from ragexam.report.console_data import print_ranking_result

    # the console of ragexam.cli_options.console(), made here so that typer is not imported
    print_ranking_result(res, f"{opts['run']} vs {opts['qrels']}", Console(soft_wrap=False))


def main(argv: Optional[List[str]] = None) -> None:
    """Console-script entry point (see the module docstring)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["evaluate"]:
        opts = _parse_evaluate(args[1:])
        if opts is not None:
            from ragexam.errors import RagexamError

            try:
                _evaluate(opts)
                return
            except RagexamError:
                pass  # the full CLI reports it, worded and coloured as for every command
    from ragexam.cli import main as full_main

    full_main(args)


if __name__ == "__main__":  # pragma: no cover
    main()
