"""``ragexam serve``: the local web application (docs/serve.md), registered on the one application of
:mod:`ragexam.cli_options` (see :mod:`ragexam.cli_generate`).  Options in, the server of :mod:`ragexam.serve`
out; nothing is imported until the command runs."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from ragexam.cli_options import app, console, CorpusOpt

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
    open_browser: bool = typer.Option(False, "--open", help="Open the home page in the web browser."),
) -> None:
    """Review generated questions in the browser: one question per screen with its passages and evidence marked,
    accept / reject / edit (re-checked at once) / rescue, every decision saved to the review sheet."""
    _check_web_stack()
    from ragexam.serve.app import Catalog, create_app
    from ragexam.serve.security import ServeOptions
    from ragexam.serve.server import bind, serve

    options = ServeOptions(host=host, port=port, token=token)
    catalog = Catalog.of(review or [], corpus)
    for s in catalog.sets:
        if not s.qa.is_file():
            from ragexam.errors import InputError

            raise InputError("no such file" if not s.qa.exists() else "is not a file; expected the question set "
                             "(JSONL) ragexam generate wrote", source=str(s.qa), field="review")
    sock = bind(options)
    catalog.warm()
    out = console()

    def announce(url: str) -> None:
        out.print(f"ragexam serve: {url}" + ("  (open it once with ?token=YOUR_TOKEN)" if token else ""),
                  highlight=False, markup=False, soft_wrap=True)
        for s in catalog.sets:
            out.print(f"  review {s.qa}: {url}review/{s.sid}", highlight=False, markup=False, soft_wrap=True)
        out.print("Ctrl+C stops it; every decision is already saved.", highlight=False, markup=False)

    serve(create_app(catalog, options), options, sock, open_browser=open_browser, announce=announce)
