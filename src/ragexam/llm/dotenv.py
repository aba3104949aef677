"""Reading ``OPENAI_API_KEY`` / ``OPENAI_BASE_URL`` from a ``.env`` file (no dependency).

Precedence, for each of the two settings separately (first match wins):

1. the explicit value: a keyword argument or a command-line flag (``--api-key``, ``--base-url``);
2. the environment variable (``OPENAI_API_KEY``, ``OPENAI_BASE_URL``); an empty one counts as unset;
3. the same name in a file ``.env`` in the **current directory** (parent directories are not
   searched).

The file is read only when a setting is not found in 1 or 2.  Its format, the common subset of
the dotenv tools: one ``NAME=value`` per line, ``#`` starts a comment line, an optional
``export`` before the name, spaces around ``=`` ignored; a value may be quoted with ``"..."``
(escapes ``\\n``, ``\\t``, ``\\"``, ``\\\\``) or ``'...'`` (taken literally); an unquoted value
ends at `` #``.  Not supported: variable expansion (``${VAR}``) and values over several lines.
Lines that are not ``NAME=value`` are left alone (the file may be meant for other tools), but a
line that sets one of ragexam's names and cannot be read is an :class:`~ragexam.errors.InputError`
naming the file and line.  Nothing read here is ever printed.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Dict, Optional, Tuple

from ragexam.errors import InputError

__all__ = ["DOTENV_NAME", "read_dotenv", "lookup"]

DOTENV_NAME = ".env"
_LINE = re.compile(r"^(?:export\s+)?([A-Za-z_][A-Za-z0-9_.]*)\s*=\s*(.*)$")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\"}


def _double_quoted(rest: str) -> Optional[Tuple[str, str]]:
    out, i = [], 1
    while i < len(rest):
        ch = rest[i]
        if ch == "\\" and i + 1 < len(rest):
            out.append(_ESCAPES.get(rest[i + 1], "\\" + rest[i + 1]))
            i += 2
            continue
        if ch == '"':
            return "".join(out), rest[i + 1:]
        out.append(ch)
        i += 1
    return None


def read_dotenv(path: "str | os.PathLike[str]", names: Optional[Tuple[str, ...]] = None) -> Dict[str, str]:
    """``{name: value}`` from the dotenv file at ``path`` (``{}`` when there is none).

    ``names`` are the names the caller relies on: a line setting one of them that cannot be
    parsed raises :class:`~ragexam.errors.InputError`; other unreadable lines are skipped.
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        return {}
    except IsADirectoryError:
        return {}
    except OSError as err:
        raise InputError(f"cannot read: {err.strerror or err}; fix its permissions or remove it",
                         source=str(p)) from None
    except UnicodeDecodeError:
        raise InputError("not valid UTF-8; expected NAME=value lines", source=str(p)) from None
    ours = set(names or ())
    out: Dict[str, str] = {}
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        m = _LINE.match(line)
        if not m:
            word = re.split(r"[\s=]", line.removeprefix("export ").strip(), maxsplit=1)[0]
            if word in ours:
                raise InputError(f"expected {word}=value, received a line without '='", source=str(p),
                                 line=lineno, field=word)
            continue
        name, rest = m.group(1), m.group(2)
        if rest.startswith('"'):
            parsed = _double_quoted(rest)
            if parsed is None:
                if name in ours:
                    raise InputError("the value opens a double quote that this line does not close "
                                     "(values over several lines are not supported)", source=str(p),
                                     line=lineno, field=name)
                continue
            value = parsed[0]
        elif rest.startswith("'"):
            end = rest.find("'", 1)
            if end < 0:
                if name in ours:
                    raise InputError("the value opens a single quote that this line does not close",
                                     source=str(p), line=lineno, field=name)
                continue
            value = rest[1:end]
        else:
            value = re.split(r"\s+#", rest, maxsplit=1)[0].strip()
        out[name] = value
    return out


def lookup(name: str, explicit: Optional[str] = None, *, directory: "str | os.PathLike[str] | None" = None
           ) -> Tuple[Optional[str], Optional[str]]:
    """``(value, source)`` of setting ``name`` by the precedence above; ``source`` is
    ``"argument"``, ``"environment"``, the ``.env`` file's path, or ``None`` when not found.
    ``directory`` is where ``.env`` is looked for (default: the current directory)."""
    if explicit:
        return explicit, "argument"
    env = os.environ.get(name)
    if env:
        return env, "environment"
    path = Path(directory if directory is not None else os.getcwd()) / DOTENV_NAME
    value = read_dotenv(path, (name,)).get(name)
    if value:
        return value, str(path)
    return None, None
