"""The language of ``ragexam serve``'s pages: Korean or English, every label, button, message and error page from
one catalogue -- serve's texts (:mod:`ragexam.serve.strings`) with the report's (:mod:`ragexam.report.strings`),
through the one mechanism of :mod:`ragexam.report.i18n` (so the report's sections on a page speak its language).

Which language a request gets (the first that applies):

1. the page's language switch (``?lang=ko`` / ``?lang=en`` on any address: kept in the ``ragexam_lang`` cookie);
2. ``ragexam serve --lang ko|en``;
3. the browser's ``Accept-Language`` (its first of Korean and English, by preference);
4. the data's language (:meth:`ragexam.serve.app.Catalog.language`: a set's corpus language, Hangul in a run).

:class:`~ragexam.serve.security.Guard` chooses it for each request (:func:`use`) before anything is rendered, so
pages and refusals alike call :func:`current`.  Templates call ``t("key", name=value)``; Python code
``current().t(...)``.  A catalogue text is HTML written by ragexam (it may hold ``<b>``, ``<code>``, a link); the
values put into it are escaped, so a run id or a question cannot inject markup.
"""

from __future__ import annotations

import contextvars
import re
from typing import Dict, Optional, Tuple

from ragexam.report import i18n as _report
from ragexam.report.i18n import LANGS, Html, Lang
from ragexam.report.strings import STRINGS as REPORT_STRINGS
from ragexam.serve.strings import STRINGS

__all__ = ["LANGS", "LANG_COOKIE", "LANG_NAMES", "Lang", "Html", "CATALOGUE", "choose", "from_accept_language",
           "current", "use", "switch_href", "has_hangul"]

#: the cookie the language switch sets
LANG_COOKIE = "ragexam_lang"
#: each language by its own name (the switch's labels)
LANG_NAMES = {"ko": "한국어", "en": "English"}
#: every text a page of the server shows: its own and the report's sections' (a key is in one of the two)
CATALOGUE: Dict[str, Tuple[str, ...]] = {**REPORT_STRINGS, **STRINGS}
_HANGUL = re.compile("[\uac00-\ud7a3]")


def lang(code: str) -> Lang:
    """The language ``code`` of the server's catalogue."""
    return Lang(code, CATALOGUE)


def from_accept_language(header: Optional[str]) -> Optional[str]:
    """The language of :data:`LANGS` an ``Accept-Language`` header prefers (``ko-KR,ko;q=0.9,en;q=0.8``:
    ``ko``), or ``None`` when it names neither."""
    best, best_q = None, 0.0
    for order, part in enumerate((header or "").split(",")):
        tag, _, params = part.strip().partition(";")
        code = tag.strip().split("-")[0].lower()
        if code not in LANGS:
            continue
        q = 1.0
        for p in params.split(";"):
            name, _, value = p.strip().partition("=")
            if name.strip() == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        if q > best_q:  # the first of equal preference wins
            best, best_q = code, q
    return best


def choose(*, asked: Optional[str] = None, cookie: Optional[str] = None, option: Optional[str] = None,
           accept: Optional[str] = None, data: str = "ko") -> Lang:
    """The language of a request (the order of the module docstring): ``asked`` by the switch (``?lang=``), the
    switch's ``cookie``, the ``option`` ``--lang``, the ``accept`` header, else the ``data``'s."""
    for code in (asked, cookie, option, from_accept_language(accept), data):
        if code in LANGS:
            return lang(code)
    return lang("ko")


_address: contextvars.ContextVar[str] = contextvars.ContextVar("ragexam_serve_address", default="/")


def current() -> Lang:
    """The language of the request being served, with the server's catalogue (English outside a request)."""
    found = _report.current()
    return found if found.strings is CATALOGUE else lang(found.code)


def use(chosen: Lang, address: str = "/") -> None:
    """Serve the rest of this request in ``chosen`` (the report's sections too); ``address``: the page's path and
    query (the switch links to it).  Set in the request's own context (each request is a task of its own)."""
    _report.use(chosen if chosen.strings is CATALOGUE else lang(chosen.code))
    _address.set(address)


def switch_href(code: str) -> str:
    """The address of this page in the language ``code`` (``?lang=`` added; the server keeps the choice)."""
    path, _, query = _address.get().partition("?")
    kept = "&".join(p for p in query.split("&") if p and not p.startswith("lang="))
    return f"{path}?{kept + '&' if kept else ''}lang={code}"


def has_hangul(text: str) -> bool:
    """Whether ``text`` holds a Hangul syllable (the data's language is then Korean)."""
    return _HANGUL.search(text) is not None
