"""Reading a settings file the user wrote (a run config, a judge rubric): JSON, YAML or TOML, chosen by its
extension, with every failure an :class:`~ragexam.errors.InputError` naming the file (and the line, where the
parser says which) and, for a missing file, the option that named it.  Size and nesting are bounded as for every
file ragexam reads back (:mod:`ragexam.storage.readback`).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Optional, Sequence, Union

from ragexam.errors import InputError, MissingDependencyError
from ragexam.storage import safejson
from ragexam.storage.readback import MAX_FILE_BYTES, parse_json

__all__ = ["read_settings_file"]

_KINDS = {".json": "JSON", ".yaml": "YAML", ".yml": "YAML", ".toml": "TOML"}
_TOML_LINE = re.compile(r"\(at line (\d+)")


def read_settings_file(path: Union[str, Path], *, what: str, suffixes: Sequence[str], field: Optional[str] = None,
                       see: str = "") -> Any:
    """The parsed content of ``path`` (``None`` for an empty YAML file), by its extension, one of ``suffixes``
    (``.json``, ``.yaml``, ``.yml``, ``.toml``).

    ``what`` names the file in messages (``"rubric file"``), ``field`` the option that gave it (for a missing
    file) and ``see`` is appended to that message (``" (see docs/judge.md)"``).  Raises
    :class:`~ragexam.errors.InputError` for a missing or unreadable file, bytes that are not UTF-8 (naming the
    byte), another extension, or text the parser rejects (with its line), and
    :class:`~ragexam.errors.MissingDependencyError` for YAML without PyYAML.
    """
    p = Path(path)
    src = str(p)
    expected = ", ".join(suffixes[:-1]) + f" or {suffixes[-1]}" if len(suffixes) > 1 else suffixes[0]
    if not p.is_file():
        raise InputError(f"no such {what}; expected a {expected} file{see}", source=src, field=field)
    try:
        if p.stat().st_size > MAX_FILE_BYTES:
            raise InputError(f"has {p.stat().st_size:,} bytes; expected a {what} of at most {MAX_FILE_BYTES:,} "
                             "bytes (is it the right file?)", source=src)
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise InputError(f"is not UTF-8 text ({err.reason} at byte {err.start})", source=src) from None
    except OSError as err:
        raise InputError(f"cannot read the {what}: {err.strerror or err}.", source=src) from None
    suffix = p.suffix.lower()
    kind = _KINDS.get(suffix) if suffix in suffixes else None
    if kind is None:
        raise InputError(f"has the extension {p.suffix or '(none)'!r}; expected {expected}", source=src)
    if kind == "JSON":
        return parse_json(text, source=src, fix=f"expected a {what}{see}")
    try:
        return safejson.check_depth(_parse(text, kind, what, src))
    except (RecursionError, safejson.TooDeep):
        raise InputError(f"received a value {safejson.TooDeep()}; expected a {what}{see}", source=src) from None


def _parse(text: str, kind: str, what: str, src: str) -> Any:
    """TOML or YAML ``text`` parsed (an :class:`InputError` naming the line the parser names)."""
    if kind == "TOML":
        import tomllib

        try:
            return tomllib.loads(text)
        except tomllib.TOMLDecodeError as err:
            at = _TOML_LINE.search(str(err))
            raise InputError(f"is not valid TOML: {err}", source=src,
                             line=int(at.group(1)) if at else None) from None
    try:
        import yaml
    except ImportError:  # pragma: no cover - PyYAML is common but optional
        raise MissingDependencyError(f"a YAML {what}", "yaml", "pyyaml") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        raise InputError(f"is not valid YAML: {getattr(err, 'problem', None) or err}", source=src,
                         line=mark.line + 1 if mark is not None else None) from None
