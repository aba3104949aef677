"""``ragexam serve``: a local web application to read results and review generated question sets (docs/serve.md).

An interface layer beside the command line: it may import :mod:`ragexam.api` and everything below it, and
nothing imports it but ``ragexam.cli_serve``.

=====================  ======================================================================================
module                 what it holds
=====================  ======================================================================================
:mod:`.security`       the listening rule (loopback, or a token), the token, host and CSRF checks, headers,
                       the request's language chosen before anything is rendered
:mod:`.i18n`           Korean or English: which one a request gets, ``t()`` for a text of the catalogue
:mod:`.strings`        the catalogue: every label, button, message and error page in English and Korean
:mod:`.reviewing`      the review of one set: items, filters, checks, decisions written to the review sheet
:mod:`.results`        the runs and scores it may show (named folders, history records), loaded and kept
:mod:`.results_pages`  the runs list, a run, a missed question, a score, compare (the report's sections)
:mod:`.app`            the Starlette application: routes, Jinja2 pages, error pages, the named files
:mod:`.server`         the listening socket, uvicorn, opening the browser
``templates/``         the pages (Jinja2, autoescaped)
``static/``            ``serve.css`` (the report's Korean font stack) and ``serve.js`` (keyboard shortcuts); the
                       report's ``report.css`` and ``report.js`` are served from :mod:`ragexam.report.html`
=====================  ======================================================================================

::

    from ragexam.serve import Catalog, ServeOptions, create_app, start

    running = start(create_app(Catalog.of(["qa.jsonl"]), opts := ServeOptions(port=0)), opts)
    print(running.url)          # http://127.0.0.1:PORT/
    running.stop()
"""

from __future__ import annotations

from ragexam.serve.app import Catalog, create_app
from ragexam.serve.security import ServeOptions, check_bind
from ragexam.serve.server import bind, serve, start

__all__ = ["create_app", "Catalog", "ServeOptions", "start", "serve", "bind", "check_bind"]
