"""Default locations of ragexam's files, and the check of an output path before work starts.

Locations (first match wins):

* cache directory (retrieval token/embedding cache, LLM-call cache): ``$RAGEXAM_CACHE_DIR``, else
  ``$XDG_CACHE_HOME/ragexam``, else ``~/.cache/ragexam``;
* run history database: ``$RAGEXAM_HISTORY``, else ``$RAGEXAM_HOME/history.sqlite3``, else
  ``$XDG_DATA_HOME/ragexam/history.sqlite3``, else ``~/.local/share/ragexam/history.sqlite3``.

:func:`check_output_file` and :func:`check_output_dir` are called by every command that writes a file or a
folder, *before* it retrieves, embeds or calls a model, so a bad ``--out``/``--report`` path fails in a
second instead of after the paid work.  :func:`check_outputs` is the one rule every writing command applies to
all its paths at once: each output is checked as above, and no output may write over a file the command reads
(compared by resolved real path, symlinks and hard links included), over a file inside a run or score folder it
reads, or replace a folder that holds one of its inputs; two outputs may not be one path or one inside the other,
except a file written into a run or score folder the command writes first, under a name none of its data has
(``--out RUN --report RUN/report.html``: where ``ragexam report`` writes by default).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import List, Optional, Sequence, Tuple, Union

from ragexam.errors import InputError

__all__ = ["cache_dir", "history_path", "check_output_file", "check_output_dir", "check_outputs", "Out", "In"]

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
    from ragexam.storage.atomic import write_target

    p = Path(path).expanduser()
    if p.is_dir():
        raise InputError(f"{str(p)!r} is a directory; expected the path of a file (a name inside it, for one).",
                         source=option, field=option.lstrip("-"))
    block = _blocking_parent(p)
    if block is not None:
        raise InputError(f"cannot create {str(p)!r}: {str(block)!r} is a file, not a folder; choose another "
                         "path.", source=option, field=option.lstrip("-"))
    _check_writable(write_target(p, option), option)
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
    """The nearest existing folder ``p`` would be written in takes a new file: asked of the permissions, then
    tried (a file made and removed at once), since a read-only mount or ``/proc`` refuses even root."""
    import tempfile

    existing = next((a for a in p.absolute().parents if a.exists()), None)
    if existing is None:
        return
    if not os.access(existing, os.W_OK | os.X_OK):
        raise InputError(f"cannot write into {str(existing)!r} (permission denied); choose another path.",
                         source=option, field=option.lstrip("-"))
    try:
        fd, probe = tempfile.mkstemp(prefix=".ragexam-probe-", dir=existing)
    except OSError as err:
        raise InputError(f"cannot write into {str(existing)!r} ({err.strerror or err}); choose another path.",
                         source=option, field=option.lstrip("-")) from None
    os.close(fd)
    os.unlink(probe)


# -- outputs against inputs ------------------------------------------------------------------------------------

#: the files of a run or score folder a command reads (an output may not replace them; ``report.html`` may be)
_FOLDER_DATA = ("summary.json", "per_question.csv", "chunks.jsonl", "runs", "score.json", "per_answer.csv",
                "judgments.jsonl")


class Out:
    """An output of a command: its ``path``, the ``option`` that named it and its ``kind``: ``file``, or a folder
    written as a unit (``run`` / ``score``: see :mod:`ragexam.storage.atomic`; ``folder``: any other folder)."""

    def __init__(self, path: Optional[PathLike], option: str, kind: str = "file") -> None:
        self.path, self.option, self.kind = path, option, kind


class In:
    """An input of a command: its ``path`` (a file, a folder such as a run folder or a BEIR folder, or a name that
    is not a path, e.g. a bundled set, which is skipped) and the ``option`` that named it."""

    def __init__(self, path: object, option: str) -> None:
        self.path, self.option = path, option


def _real(path: PathLike) -> Path:
    return Path(os.path.realpath(Path(path).expanduser()))


def _same_file(a: Path, b: Path) -> bool:
    if a == b:
        return True
    try:
        sa, sb = a.stat(), b.stat()
    except OSError:
        return False
    return (sa.st_ino, sa.st_dev) == (sb.st_ino, sb.st_dev)


def _inside(child: Path, parent: Path) -> bool:
    return child == parent or parent in child.parents


def _protected(inp: In) -> List[Tuple[Path, bool]]:
    """``[(path, is_folder)]`` an output must not write over: the input file itself; for a folder, the folder (an
    output folder may not replace or contain it) and, for a run or score folder, its data files."""
    p = Path(str(inp.path)).expanduser()
    if not p.exists():
        return []
    real = _real(p)
    if not real.is_dir():
        return [(real, False)]
    out = [(real, True)]
    out.extend((real / name, (real / name).is_dir()) for name in _FOLDER_DATA if (real / name).exists())
    return out


def _clash(out: Out, inputs: Sequence[In]) -> Optional[str]:
    target = _real(out.path)  # type: ignore[arg-type]
    folder_out = out.kind != "file"
    for inp in inputs:
        if inp.path is None or not isinstance(inp.path, (str, os.PathLike)):
            continue
        for path, is_folder in _protected(inp):
            top = path == _real(Path(str(inp.path)))
            if folder_out and (_inside(path, target) or (top and is_folder and _inside(target, path)
                                                          and out.kind != "folder")):
                what = "folder" if is_folder else "file"
                return (f"{out.option} {str(out.path)!r} would replace the {what} {str(inp.path)!r} that "
                        f"{inp.option} reads" + (f" ({path.name})" if not top else ""))
            if not folder_out:
                if top and is_folder:
                    continue  # a file may be written beside a folder's data (e.g. RUN/report.html)
                if (is_folder and _inside(target, path)) or (not is_folder and _same_file(target, path)):
                    where = str(inp.path) if top else f"{path} (in the folder {inp.option} reads)"
                    return (f"{out.option} {str(out.path)!r} is the {'file' if top else 'data'} {where!r} that "
                            f"{inp.option} reads")
    return None


def _beside_data(folder: Out, folder_path: Path, file: Out, file_path: Path) -> bool:
    """A file written straight into a run or score folder that is written first (``--report RUN/report.html``, the
    path ``ragexam report`` writes by default), under a name that is none of the folder's data."""
    return (folder.kind in ("run", "score") and file.kind == "file" and file_path.parent == folder_path
            and file_path.name not in _FOLDER_DATA)


def check_outputs(outputs: Sequence[Out], inputs: Sequence[In] = ()) -> None:
    """The one output-path rule (module docstring), applied before any work starts: every output of ``outputs``
    (``None`` paths are skipped) can be written, two outputs are not the same path, and none writes over an
    input; else :class:`~ragexam.errors.InputError` names both paths and the fix."""
    from ragexam.storage.atomic import check_replaceable

    given = [o for o in outputs if o.path is not None]
    for o in given:
        why = _clash(o, inputs)
        if why is not None:
            raise InputError(f"{why}; writing there would destroy an input. Fix: choose another path for "
                             f"{o.option}.", source=o.option, field=o.option.lstrip("-"))
        if o.kind == "file":
            check_output_file(o.path, option=o.option)  # type: ignore[arg-type]
        else:
            check_output_dir(o.path, option=o.option)  # type: ignore[arg-type]
            if o.kind in ("run", "score"):
                check_replaceable(o.path, o.kind, option=o.option)  # type: ignore[arg-type]
    for i, a in enumerate(given):
        for b in given[i + 1:]:
            ra, rb = _real(a.path), _real(b.path)  # type: ignore[arg-type]
            if _beside_data(a, ra, b, rb) or _beside_data(b, rb, a, ra):
                continue
            if ra == rb or (a.kind != "file" and _inside(rb, ra)) or (b.kind != "file" and _inside(ra, rb)):
                raise InputError(f"{a.option} {str(a.path)!r} and {b.option} {str(b.path)!r} are the same path (or "
                                 "one is inside the other); give each output its own path.", source=b.option,
                                 field=b.option.lstrip("-"))
