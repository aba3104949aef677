"""Korean or English: the one mechanism that puts ragexam's page texts in a language, from a catalogue.

A catalogue maps a key to ``(English, 한국어)`` or ``(English, 한국어, English when n is 1)``; a text is HTML written by
ragexam (it may hold ``<b>``, ``<code>``, a link) with ``{name}`` fields for values and ``{n:,}`` for numbers.
:class:`Lang` gives a text in one language with the values put in, each HTML-escaped (numbers formatted as
numbers), as an :class:`Html` string: a ``str`` that Jinja2 (and markupsafe) take as already safe.

The report's own sections (:mod:`ragexam.report.sections`) speak the language of :func:`current` -- English unless
a caller chose another with :func:`use` (``ragexam serve`` for each request, :func:`ragexam.report.html.render_report`
with its ``lang``) -- from the catalogue :data:`ragexam.report.strings.STRINGS`.  ``ragexam serve`` keeps its own
texts in :mod:`ragexam.serve.strings` and serves one catalogue of both (:mod:`ragexam.serve.i18n`).

This module lives in ``report`` because it is the lowest layer that shows a text to a reader in two languages; it
needs nothing but the standard library (markupsafe is not a dependency of the report).
"""

from __future__ import annotations

import contextvars
import html
import re
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping, Optional, Tuple

from ragexam.report.strings import STRINGS

__all__ = ["LANGS", "Html", "Lang", "escape", "current", "use", "speaking", "DEFAULT", "language"]

#: the languages of the catalogues
LANGS = ("ko", "en")
_TAG = re.compile(r"<!--.*?-->|<[^>]*>", re.S)


class Html(str):
    """A text of HTML written by ragexam: already safe (``__html__``, the protocol of Jinja2 and markupsafe)."""

    __slots__ = ()

    def __html__(self) -> str:
        return str(self)

    def striptags(self) -> str:
        """The text without tags and comments, entities read, whitespace collapsed (markupsafe's ``striptags``)."""
        return html.unescape(" ".join(_TAG.sub("", self).split()))


def escape(value: Any) -> Html:
    """``value`` as HTML text: its own HTML when it has some (``__html__``), else escaped (``&``, ``<``, ``>`` and
    both quotes: :func:`html.escape`, as every section of the report escapes)."""
    if hasattr(value, "__html__"):
        return Html(value.__html__())
    return Html(html.escape("" if value is None else str(value)))


@dataclass(frozen=True)
class Lang:
    """One language (``code``: ``ko`` or ``en``) of a catalogue (``strings``; default: the report's)."""

    code: str
    strings: Mapping[str, Tuple[str, ...]] = field(default_factory=lambda: STRINGS, compare=False, repr=False)

    def t(self, key: str, /, **values: Any) -> Html:
        """The text ``key`` in this language with ``values`` put in (``{name}``, ``{n:,}`` in the text; strings
        escaped, numbers formatted as numbers).  An English text with a singular form takes it when ``n`` is 1.
        A key the catalogue lacks raises ``KeyError`` (the tests read every template and section for them)."""
        entry = self.strings[key]
        if self.code == "ko":
            text = entry[1]
        else:
            text = entry[2] if len(entry) > 2 and values.get("n") == 1 else entry[0]
        if not values:
            return Html(text)
        safe = {k: v if isinstance(v, (int, float)) and not isinstance(v, bool) else escape(v)
                for k, v in values.items()}
        return Html(text.format(**safe))

    def text(self, key: str, /, **values: Any) -> str:
        """:meth:`t` as plain text (tags removed, entities read): for a header, a title or a log line."""
        return self.t(key, **values).striptags()

    def __str__(self) -> str:
        return self.code


def language(code: str) -> Lang:
    """The language ``code`` (``en`` or ``ko``) of the report's catalogue; :class:`~ragexam.errors.InputError` for
    any other (the fix in the reader's syntax: ``--lang ko`` or ``lang='ko'``)."""
    if code not in LANGS:
        from ragexam.errors import InputError, audience, setting

        raise InputError(f"received {code!r}; expected en or ko ({setting('lang', 'ko')} for Korean)",
                         source="--lang" if audience() == "cli" else "lang")
    return Lang(code)


#: English, with the report's catalogue: the language of everything outside a chosen one
DEFAULT = Lang("en")
_current: contextvars.ContextVar[Lang] = contextvars.ContextVar("ragexam_lang", default=DEFAULT)


def current() -> Lang:
    """The language of what is being rendered (:data:`DEFAULT` unless :func:`use` or :func:`speaking` chose one)."""
    return _current.get()


def use(lang: Lang) -> None:
    """Render the rest of this context in ``lang`` (``ragexam serve``: each request is a context of its own)."""
    _current.set(lang)


@contextmanager
def speaking(lang: Optional[Lang]) -> Iterator[Lang]:
    """Render in ``lang`` inside the ``with`` block (``None``: the current language), then as before."""
    token = _current.set(lang if lang is not None else _current.get())
    try:
        yield _current.get()
    finally:
        _current.reset(token)
