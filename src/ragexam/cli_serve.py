"""``ragexam serve``: the local web application (docs/serve.md), registered on the one application of
:mod:`ragexam.cli_options` (see :mod:`ragexam.cli_generate`).  Options in, the server of :mod:`ragexam.serve`
out; nothing is imported until the command runs."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from ragexam.cli_options import app, console, CorpusOpt, HistoryOpt

#: the packages ``ragexam serve`` needs (core dependencies; the ``serve`` extra names them)
WEB_PACKAGES = ("starlette", "uvicorn", "jinja2")


def _check_web_stack() -> None:
    """A one-line install instruction (:class:`~ragexam.errors.MissingDependencyError`) when an install left the
    web packages out."""
    from importlib.util import find_spec

    from ragexam.errors import MissingDependencyError

    for name in WEB_PACKAGES:
        if find_spec(name) is None:
            raise MissingDependencyError("ragexam serve", "serve", name)


@app.command("serve")
def serve_cmd(
    folders: Optional[List[Path]] = typer.Argument(None, help="Run or score folders to show (written by "
                                                                "`ragexam run --out` / `ragexam score --out`), "
                                                                "besides the history's records.", show_default=False),
    history: HistoryOpt = None,
    review: Optional[List[Path]] = typer.Option(None, "--review", help="A generated question set (JSONL) to review; "
                                                                       "its rejects, card and review sheet are read "
                                                                       "from beside it. Repeatable."),
    corpus: CorpusOpt = None,
    host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on. Anything but a loopback address "
                                                         "needs --token."),
    port: int = typer.Option(8765, "--port", help="Port to listen on (0: any free port)."),
    token: Optional[str] = typer.Option(None, "--token", envvar="RAGEXAM_SERVE_TOKEN", show_envvar=True,
                                        help="Access token (16+ characters) every request must carry; required "
                                             "for an address other than 127.0.0.1."),
    open_browser: bool = typer.Option(False, "--open", help="Open the home page in the web browser (with a "
                                                            "one-time sign-in code when a token is set, never the "
                                                            "token itself)."),
    lang: Optional[str] = typer.Option(None, "--lang", help="Language of the pages: ko or en (default: the "
                                                            "browser's, else the data's; a switch on every page "
                                                            "changes it)."),
) -> None:
    """Read results and review generated questions in the browser: the runs of the history and the named folders
    (tables with intervals, plots, missed questions with their retrieved chunks, scores with the judge's reasons,
    two runs compared); one generated question per screen with its passages and evidence marked, accept / reject /
    edit (re-checked at once) / rescue, every decision saved to the review sheet."""
    _check_web_stack()
    from ragexam.serve.app import Catalog, create_app
    from ragexam.serve.security import ServeOptions
    from ragexam.serve.server import bind, serve

    options = ServeOptions(host=host, port=port, token=token, lang=lang)
    catalog = Catalog.of(review or [], corpus, folders or [], history)
    _check_named(catalog)
    sock = bind(options)
    catalog.warm()
    out = console()

    def announce(url: str) -> None:
        out.print(f"ragexam serve: {url}" + ("  (open it once with ?token=YOUR_TOKEN)" if token else ""),
                  highlight=False, markup=False, soft_wrap=True)
        out.print(f"  runs: {url}runs (history {catalog.results.history.path})", highlight=False, markup=False,
                  soft_wrap=True)
        for key, folder in catalog.results.folder_keys():
            out.print(f"  {folder}: {url}run/{key}", highlight=False, markup=False, soft_wrap=True)
        for s in catalog.sets:
            out.print(f"  review {s.qa}: {url}review/{s.sid}", highlight=False, markup=False, soft_wrap=True)
        out.print("Ctrl+C stops it; every decision is already saved.", highlight=False, markup=False)

    serve(create_app(catalog, options), options, sock, open_browser=open_browser, announce=announce)


def _check_named(catalog) -> None:
    """Every named file exists before the server starts: a question set is a file, a result a run or score folder,
    the history a database file (:class:`~ragexam.errors.InputError` naming the option and the path as typed, what
    was expected and the fix; a folder whose files are bad is shown with the reason)."""
    from ragexam.errors import InputError

    for s in catalog.sets:
        if not s.qa.is_file():
            what = "no such file" if not s.qa.exists() else "is a folder"
            raise InputError(f"{what}; expected a question set (JSONL) that `ragexam generate`, `ragexam "
                             "locate-evidence` or `ragexam traces sample` wrote; check the path (its card and review "
                             "sheet are read from beside it)", source=f"--review {s.qa}")
    for _, folder in catalog.results.folder_keys():
        if not any((folder / name).is_file() for name in ("summary.json", "score.json")):
            what = ("no such folder" if not folder.exists() else "is a file" if folder.is_file()
                    else "has no summary.json or score.json")
            also = " (a question set to review goes after --review)" if folder.suffix.lower() == ".jsonl" else ""
            raise InputError(f"{what}; expected a run or score folder to show (written by `ragexam run --out DIR` "
                             "or `ragexam score --out DIR`); check the path, or leave it out: the history's runs are "
                             f"shown without it{also}", source=str(folder))
    path = catalog.results.history.path
    if path.is_dir():
        raise InputError(f"is a folder; expected the history database file, e.g. --history {path / 'history.sqlite3'}"
                         " (leave --history out for the default one)", source=f"--history {path}")
