"""The exceptions ragexam raises, as one hierarchy.

::

    RagexamError                     base of everything ragexam raises on purpose
    ├── InputError (ValueError)      bad user input: a file, a line, a field, a parameter
    │   └── MetricNameError          a metric name that does not parse
    └── MissingDependencyError (ImportError)
                                     an optional extra is needed; the message says which

Every message names where the problem is (file, line, field or parameter), what was
received, what was expected and, where there is one, the fix.  The CLI prints the message
and exits with status 2; nothing is silently skipped.
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
import math
import numbers
from typing import Iterable, Iterator, Optional, TypeVar

T = TypeVar("T")

__all__ = ["RagexamError", "InputError", "MetricNameError", "MissingDependencyError", "speaking_to", "audience",
           "setting", "option", "judge_needed", "command", "one_of", "integer_in", "number_in", "names", "did_you_mean"]

#: who reads the messages: ``python`` (the API, the default) or ``cli`` (set by the command line's entry point)
_AUDIENCE: ContextVar[str] = ContextVar("ragexam_audience", default="python")


@contextmanager
def speaking_to(who: str) -> Iterator[None]:
    """Messages raised inside speak to ``who`` (``cli`` or ``python``): :func:`setting` and :func:`command` name a
    fix in the reader's own syntax.  The command line's entry point wraps every command in ``speaking_to("cli")``."""
    token = _AUDIENCE.set(who)
    try:
        yield
    finally:
        _AUDIENCE.reset(token)


def audience() -> str:
    """``cli`` or ``python``: who the message being written is for (:func:`speaking_to`)."""
    return _AUDIENCE.get()


def setting(name: str, value: object = True) -> str:
    """How the reader sets ``name`` to ``value``: ``--relevance doc`` / ``--allow-grading-change`` on the command
    line, ``relevance='doc'`` / ``allow_grading_change=True`` in Python."""
    if audience() == "cli":
        flag = "--" + name.replace("_", "-")
        return flag if value is True else f"{flag} {value}"
    return f"{name}={value!r}"


def option(name: str, cli: Optional[str] = None) -> str:
    """The name of the setting ``name`` as the reader writes it: its flag on the command line (``--miss-k``, or
    ``cli`` when the flag is spelt otherwise: ``--metric`` for ``metrics``), the keyword in Python (``miss_k``)."""
    if audience() == "cli":
        return cli or "--" + name.replace("_", "-")
    return name


def judge_needed(what: str) -> str:
    """``what`` needs an LLM judge, and how the reader gives one: ``--judge-model MODEL`` on the command line,
    ``judge=LLMSettings('MODEL')`` in Python."""
    how = "pass --judge-model MODEL" if audience() == "cli" else "pass judge=LLMSettings('MODEL', ...)"
    return f"{what} applies to an LLM judge; {how} too"


def command(cli: str, python: str) -> str:
    """A step that is a command on the command line (``ragexam locate-evidence ...``) and a function in Python
    (``ragexam.api.locate_evidence(...)``): the one the reader uses."""
    return f"`{cli}`" if audience() == "cli" else f"`{python}`"


class RagexamError(Exception):
    """Base class of every error ragexam raises on purpose."""


class InputError(RagexamError, ValueError):
    """Bad user input.

    ``source`` is the file (or the parameter/object name), ``line`` the 1-based line number
    and ``field`` the field or column; any of them may be ``None`` when not applicable.
    ``str(err)`` renders them as ``source:line: field 'x': message``.
    """

    def __init__(self, message: str, *, source: str | None = None,
                 line: int | None = None, field: str | None = None) -> None:
        self.message = message
        self.source = source
        self.line = line
        self.field = field
        super().__init__(self._render())

    def _render(self) -> str:
        where = ""
        if self.source is not None:
            where = str(self.source)
            if self.line is not None:
                where += f":{self.line}"
            where += ": "
        elif self.line is not None:
            where = f"line {self.line}: "
        field = f"field '{self.field}': " if self.field is not None else ""
        return f"{where}{field}{self.message}"


def one_of(value: T, choices: Iterable[object], *, source: str | None = None, field: str | None = None,
           line: int | None = None, what: str | None = None) -> T:
    """``value`` when it is one of ``choices``; else an :class:`InputError` at ``source``/``line``/``field`` saying
    what was received (``unknown <what> 'x'`` when ``what`` names the kind of thing) and listing the choices."""
    listed = list(choices)
    if value in listed:
        return value
    received = f"unknown {what} {value!r}" if what else f"received {value!r}"
    raise InputError(f"{received}; expected one of {', '.join(map(str, listed))}.", source=source, line=line,
                     field=field)


def did_you_mean(name: str, known: Iterable[str], *, spell: str = "{}") -> str:
    """`` Did you mean 'x'?`` when ``name`` (not itself known) is a close spelling of a known one (difflib,
    ratio >= 0.6), else ``""``: the suffix of an "unknown ..." message.  ``spell`` writes the suggestion in full
    (``"{}:400"`` keeps the rest of a spec the user typed)."""
    import difflib

    listed = [str(k) for k in known]
    if name in listed:
        return ""
    hit = difflib.get_close_matches(name, listed, n=1) or difflib.get_close_matches(name.lower(), listed, n=1)
    return f" Did you mean {spell.format(hit[0])!r}?" if hit else ""


def integer_in(value: object, low: Optional[int] = None, high: Optional[int] = None, *, source: str | None = None,
               field: str | None = None, line: int | None = None, what: str | None = None) -> int:
    """``value`` as an ``int`` when it is a whole number (a Python or numpy integer, never a bool) from ``low`` to
    ``high`` (each optional); else an :class:`InputError` at ``source``/``line``/``field`` saying what was received
    and what was expected (``what`` the number means first: "the number of workers, an integer >= 1")."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool) and (low is None or value >= low) \
            and (high is None or value <= high):
        return int(value)
    bounds = (f"from {low} to {high}" if low is not None and high is not None else f">= {low}" if low is not None
              else f"<= {high}" if high is not None else "")
    expected = f"an integer {bounds}".rstrip()
    raise InputError(f"received {value!r}; expected {what + ', ' if what else ''}{expected}.", source=source,
                     line=line, field=field)


def number_in(value: object, low: Optional[float] = None, high: Optional[float] = None, *, above: bool = False,
              below: bool = False, source: str | None = None, field: str | None = None, line: int | None = None,
              what: str = "a number", fix: str = "") -> float:
    """``value`` as a ``float`` when it is a finite real number (Python or numpy, never a bool) from ``low`` to
    ``high`` (each optional; ``above``/``below``: the bound itself is excluded); else an :class:`InputError` at
    ``source``/``line``/``field`` saying what was received and what was expected (``what``: "a number of
    seconds"), then ``fix``."""
    if isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value):
        x = float(value)
        if (low is None or (x > low if above else x >= low)) and (high is None or (x < high if below else x <= high)):
            return x
    if low is not None and high is not None:
        bounds = (f"from {low:g} to {high:g}" if not (above or below) else
                  f"in {'(' if above else '['}{low:g}, {high:g}{')' if below else ']'}")
    elif low is not None:
        bounds = f"{'>' if above else '>='} {low:g}"
    elif high is not None:
        bounds = f"{'<' if below else '<='} {high:g}"
    else:
        bounds = ""
    expected = f"{what} {bounds}" if bounds else "a finite number" if what == "a number" else what
    raise InputError(f"received {value!r}; expected {expected}.{' ' + fix if fix else ''}", source=source, line=line,
                     field=field)


def names(value: object, *, source: str | None = None, field: str | None = None,
          what: str = "a name") -> Optional[list]:
    """One name or several as a list: a string is one name (never read one character at a time), a list, tuple or
    other iterable of strings is its names; ``None`` stays ``None``; anything else is an :class:`InputError` at
    ``source``/``field`` saying what was received and that ``what`` or a list of them was expected."""
    if value is None:
        return None
    if isinstance(value, str):
        return [value]
    if isinstance(value, Iterable) and not isinstance(value, (bytes, dict)):
        items = list(value)  # type: ignore[arg-type]
        if all(isinstance(x, str) for x in items):
            return items
        bad = next(x for x in items if not isinstance(x, str))
        raise InputError(f"received {bad!r} among the items; expected {what} (a string) or a list of them.",
                         source=source, field=field)
    raise InputError(f"received {value!r}; expected {what} (a string) or a list of them.", source=source,
                     field=field)


class MetricNameError(InputError):
    """A metric name that ragexam does not know; the message lists the valid forms."""


class MissingDependencyError(RagexamError, ImportError):
    """An optional dependency is not installed; the message gives the pip command."""

    def __init__(self, what: str, extra: str, package: str) -> None:
        msg = (f"{what} needs the optional dependency '{package}', which is not installed.\n"
               f"Install it with:\n\n    pip install 'ragexam[{extra}]'\n")
        super().__init__(msg)
