"""Folders written as a unit: a run or score folder is never half old, half new.

:func:`folder_writer` hands out a temporary sibling of the target folder to fill; when the block ends without an
error the filled folder takes the target's place in one step (Linux ``renameat2(RENAME_EXCHANGE)`` swaps the two
atomically; elsewhere two renames, the old folder kept aside until the new one is in place), and the old folder
is removed.  When the block raises, or the process is killed, the target is untouched: a killed writer leaves only
its temporary sibling (``.NAME.ragexam-tmp-PID-…``), which the next write to the same target removes.

:func:`check_replaceable` says up front whether a folder may be replaced: a missing or empty folder, or one
holding only the files ragexam writes into a folder of that kind.  A folder with anything else in it (the user's
own files) is refused before any work starts, so replacing it can never delete them.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import secrets
import shutil
import stat
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Iterator, Optional, Sequence, Union

from ragexam.errors import InputError

__all__ = ["folder_writer", "file_writer", "write_file", "write_target", "StreamedFile", "check_replaceable",
           "FOLDER_FILES", "pid_alive"]

PathLike = Union[str, "os.PathLike[str]"]

#: what ragexam writes into a folder of each kind (anything else in a folder is the user's)
FOLDER_FILES = {
    "run": ("summary.json", "per_question.csv", "chunks.jsonl", "runs", "report.html"),
    "score": ("score.json", "per_answer.csv", "judgments.jsonl", "report.html"),
}
_TMP = ".ragexam-tmp-"
_OLD = ".ragexam-old-"


def pid_alive(pid: int) -> bool:
    """False only when no process ``pid`` exists (a claim or a temporary folder it left can be taken over); on
    Windows, where ``os.kill(pid, 0)`` would end the process, always True."""
    if os.name == "nt":
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # PermissionError included: the process exists
        return True
    return True


def _foreign(folder: Path, kind: str) -> Sequence[str]:
    """The entries of ``folder`` that a folder of ``kind`` does not hold."""
    ours = set(FOLDER_FILES[kind])
    return sorted(p.name for p in folder.iterdir() if p.name not in ours and not p.name.endswith(".tmp"))


def check_replaceable(path: PathLike, kind: str, *, option: str = "--out") -> Path:
    """``path`` as a Path, after checking that a ``kind`` (``run`` or ``score``) folder may be written there:
    it does not exist, is empty, or holds only what ragexam writes into a ``kind`` folder.  Otherwise
    :class:`~ragexam.errors.InputError` names the folder, what it holds, and the fix."""
    p = Path(path).expanduser()
    if not p.is_dir():
        return p
    foreign = _foreign(p, kind)
    if not foreign:
        return p
    other = next((k for k in FOLDER_FILES if k != kind and not _foreign(p, k)), None)
    shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
    what = (f"is a {other} folder ({shown})" if other is not None else f"holds files ragexam did not write ({shown})")
    raise InputError(f"{str(p)!r} {what}; writing the {kind} there would replace them. Fix: choose a new folder "
                     f"(or one a previous `ragexam {kind}` wrote).", source=option, field=option.lstrip("-"))


def _remove_stale(target: Path) -> None:
    """Temporary siblings of ``target`` left by writers that are no longer running."""
    prefix_tmp, prefix_old = f".{target.name}{_TMP}", f".{target.name}{_OLD}"
    for sib in target.parent.glob(f".{target.name}.ragexam-*"):
        name = sib.name
        rest = name[len(prefix_tmp):] if name.startswith(prefix_tmp) else (
            name[len(prefix_old):] if name.startswith(prefix_old) else None)
        if rest is None:
            continue
        pid = rest.split("-", 1)[0]
        if pid.isdigit() and not pid_alive(int(pid)):
            shutil.rmtree(sib, ignore_errors=True)


_RENAME_EXCHANGE = 2
_libc: Optional[ctypes.CDLL] = None


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths atomically (Linux ``renameat2`` with ``RENAME_EXCHANGE``); False where unsupported."""
    global _libc
    if not hasattr(os, "uname") or os.uname().sysname != "Linux":
        return False
    try:
        if _libc is None:
            _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        fn = _libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd = -100
    rc = fn(at_fdcwd, os.fsencode(str(a)), at_fdcwd, os.fsencode(str(b)), _RENAME_EXCHANGE)
    return rc == 0


def _swap_in(tmp: Path, target: Path) -> None:
    if not target.exists():
        os.rename(tmp, target)
        return
    if _exchange(tmp, target):  # tmp now holds the old folder
        shutil.rmtree(tmp, ignore_errors=True)
        return
    old = target.with_name(f".{target.name}{_OLD}{os.getpid()}-{secrets.token_hex(3)}")
    os.rename(target, old)
    os.rename(tmp, target)
    shutil.rmtree(old, ignore_errors=True)


@contextmanager
def folder_writer(directory: PathLike, kind: str) -> Iterator[Path]:
    """Yield a temporary folder to write a ``kind`` folder into; on success it replaces ``directory`` as a
    unit (see the module docstring), on an error it is removed and ``directory`` is left as it was."""
    target = Path(directory).expanduser()
    check_replaceable(target, kind)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise InputError(f"cannot create the output directory: {err.strerror or err}.", source=str(target),
                         field="out") from None
    _remove_stale(target)
    tmp = target.with_name(f".{target.name}{_TMP}{os.getpid()}-{secrets.token_hex(3)}")
    try:
        tmp.mkdir()
    except OSError as err:
        raise InputError(f"cannot create the output directory: {err.strerror or err}.", source=str(target),
                         field="out") from None
    try:
        yield tmp
        _swap_in(tmp, target)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


class StreamedFile:
    """The file :func:`file_writer` yields: ``write(text)``, and ``discard()`` to leave nothing behind."""

    def __init__(self, fh: IO[str]) -> None:
        self._fh = fh
        self.keep = True

    def write(self, text: str) -> None:
        self._fh.write(text)

    def discard(self) -> None:
        self.keep = False


def write_target(path: PathLike, option: str = "--out") -> Path:
    """The file a write to ``path`` replaces: ``path`` itself, or for a symbolic link the file it points to (the
    link stays a link and its target is updated).  An existing target that is not a regular file (a device such
    as ``/dev/null``, a FIFO, a socket) is refused: a write replaces the file whole, so it would replace the
    device."""
    p = Path(path).expanduser()
    target = Path(os.path.realpath(p)) if p.is_symlink() else p
    if target.exists() and not target.is_file() and not target.is_dir():
        kind = ("a FIFO (named pipe)" if stat.S_ISFIFO(target.stat().st_mode) else
                "a socket" if stat.S_ISSOCK(target.stat().st_mode) else "a device")
        raise InputError(f"{str(p)!r} is {kind}, not a regular file; ragexam writes a file whole (a new file "
                         "renamed into place), which would replace it. Fix: give a regular file's path.",
                         source=option, field=option.lstrip("-"))
    return target


@contextmanager
def file_writer(path: PathLike) -> Iterator[StreamedFile]:
    """Yield a text file (UTF-8, ``\\n`` line ends) to stream lines into; it is written to a temporary sibling
    (``.NAME.ragexam-tmp-PID-…``) and renamed onto ``path`` when the block ends without an error; on an error, or
    when the block calls :meth:`StreamedFile.discard`, nothing is left and ``path`` is untouched.  A ``path``
    that is a symbolic link updates the file it points to (:func:`write_target`)."""
    target = write_target(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}{_TMP}{os.getpid()}-{secrets.token_hex(3)}")
    fh = open(tmp, "w", encoding="utf-8", newline="\n")
    out = StreamedFile(fh)
    try:
        yield out
        fh.close()
        if out.keep:
            os.replace(tmp, target)
    finally:
        if not fh.closed:
            fh.close()
        if tmp.exists():
            tmp.unlink()


def write_file(path: PathLike, text: str) -> None:
    """Write ``text`` to ``path`` as :func:`file_writer` does: whole or not at all."""
    with file_writer(path) as fh:
        fh.write(text)
