"""Default locations of ragexam's files, and the check of an output path before work starts.

Locations (first match wins):

* cache directory (retrieval token/embedding cache, LLM-call cache): ``$RAGEXAM_CACHE_DIR``, else
  ``$XDG_CACHE_HOME/ragexam``, else ``~/.cache/ragexam``;
* run history database: ``$RAGEXAM_HISTORY``, else ``$RAGEXAM_HOME/history.sqlite3``, else
  ``$XDG_DATA_HOME/ragexam/history.sqlite3``, else ``~/.local/share/ragexam/history.sqlite3``.

:func:`check_output_file` and :func:`check_output_dir` are called by every command that writes a file or a
folder, *before* it retrieves, embeds or calls a model, so a bad ``--out``/``--report`` path fails in a
second instead of after the paid work.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional, Union

from ragexam.errors import InputError

__all__ = ["cache_dir", "history_path", "check_output_file", "check_output_dir"]

PathLike = Union[str, "os.PathLike[str]"]


def _env_path(name: str) -> Optional[Path]:
    """``$name`` as a path (``~`` expanded), or ``None`` when it is unset or empty."""
    value = os.environ.get(name)
    return Path(value).expanduser() if value else None


def cache_dir() -> Path:
    """``$RAGEXAM_CACHE_DIR``, else ``$XDG_CACHE_HOME/ragexam``, else ``~/.cache/ragexam``."""
    return _env_path("RAGEXAM_CACHE_DIR") or (_env_path("XDG_CACHE_HOME") or Path.home() / ".cache") / "ragexam"


def history_path() -> Path:
    """``$RAGEXAM_HISTORY``, else ``$RAGEXAM_HOME/history.sqlite3``, else
    ``$XDG_DATA_HOME/ragexam/history.sqlite3``, else ``~/.local/share/ragexam/history.sqlite3``."""
    return _env_path("RAGEXAM_HISTORY") or (
        _env_path("RAGEXAM_HOME") or (_env_path("XDG_DATA_HOME") or Path.home() / ".local" / "share") / "ragexam"
    ) / "history.sqlite3"


def _blocking_parent(path: Path) -> Union[Path, None]:
    """The first ancestor of ``path`` that exists and is not a directory (so no folder can be made there)."""
    for parent in reversed(path.absolute().parents):
        if parent.exists() and not parent.is_dir():
            return parent
    return None


def check_output_file(path: PathLike, *, option: str) -> Path:
    """``path`` as a Path, after checking a file can be written there; raises
    :class:`~ragexam.errors.InputError` naming ``option`` (e.g. ``--report``) when it is an existing
    directory, when one of its parents is a file, or when its existing parent folder is not writable.
    Nothing is created."""
    p = Path(path).expanduser()
    if p.is_dir():
        raise InputError(f"{str(p)!r} is a directory; expected a file path, e.g. {str(p / 'report.html')!r}.",
                         source=option, field=option.lstrip("-"))
    block = _blocking_parent(p)
    if block is not None:
        raise InputError(f"cannot create {str(p)!r}: {str(block)!r} is a file, not a folder; choose another "
                         "path.", source=option, field=option.lstrip("-"))
    _check_writable(p, option)
    return p


def check_output_dir(path: PathLike, *, option: str) -> Path:
    """``path`` as a Path, after checking a folder can be created or written there; raises
    :class:`~ragexam.errors.InputError` naming ``option`` (e.g. ``--out``) when it is an existing file, when
    one of its parents is a file, or when the folder it would go in is not writable.  Nothing is created."""
    p = Path(path).expanduser()
    if p.exists() and not p.is_dir():
        raise InputError(f"{str(p)!r} is a file; expected a folder (it is created if missing).",
                         source=option, field=option.lstrip("-"))
    block = _blocking_parent(p)
    if block is not None:
        raise InputError(f"cannot create the folder {str(p)!r}: {str(block)!r} is a file; choose another path.",
                         source=option, field=option.lstrip("-"))
    _check_writable(p / "_" if p.is_dir() else p, option)
    return p


def _check_writable(p: Path, option: str) -> None:
    existing = next((a for a in p.absolute().parents if a.exists()), None)
    if existing is not None and not os.access(existing, os.W_OK | os.X_OK):
        raise InputError(f"cannot write into {str(existing)!r} (permission denied); choose another path.",
                         source=option, field=option.lstrip("-"))
