"""Work beside this process: one function run in a fresh Python process while this process goes on (waits on
HTTP calls, say), its result collected later -- or computed here when that process could not run.

::

    from ragexam.exec.beside import Beside

    job = Beside(text_statistics, hyps, refs, "ko-kiwi", "ko-kiwi")   # started now
    ...                                                               # the judge's calls
    stats = job.result()                                              # the child's result, or computed here

Why another process and not a thread: work that holds the GIL for long (Kiwi's model load holds it for more than a
second) would stall this process's threads instead of overlapping them.  Why not :mod:`multiprocessing`: its
``spawn`` imports the caller's ``__main__`` again, so a user's script without a main guard would run twice.  The
child here is a plain interpreter running :mod:`ragexam.exec._beside_child`, which takes this process's
``sys.path`` (so it imports the same ragexam, whatever made it importable here), the function (by reference) and
its arguments from a pipe and writes the pickled result to another: no temporary file, no environment change.

If the child cannot start, fails, or its result cannot be read, :meth:`Beside.result` calls the function here:
the result is the same, only later.  A job dropped before its result (an exception in between, Ctrl-C) stops its
child.
"""

from __future__ import annotations

import pickle
import subprocess
import sys
import threading
import weakref
from pathlib import Path
from typing import Any, Callable, Dict, Optional

__all__ = ["Beside"]

_CHILD = str(Path(__file__).with_name("_beside_child.py"))


def _exchange(proc: subprocess.Popen, payload: bytes, box: Dict[str, bytes]) -> None:
    """Send the payload and keep what the child wrote (a thread of its own: the caller goes on meanwhile; it
    holds no reference to the job, so a dropped job is collected and its child stopped)."""
    try:
        box["out"], _ = proc.communicate(payload)
    except (OSError, ValueError):
        pass


def _stop(proc: Optional[subprocess.Popen]) -> None:
    """Stop the child (when still running)."""
    if proc is not None and proc.poll() is None:
        proc.kill()
        proc.wait()


class Beside:
    """``fn(*args)`` in a child Python process, started now (module docstring).

    ``fn`` and ``args`` must pickle (``fn`` a module-level function); ``start=False`` runs nothing beside (the
    result is computed here, by :meth:`result`).  After :meth:`result`, :attr:`where` says where it was computed:
    ``"beside"`` or ``"here"``."""

    def __init__(self, fn: Callable[..., object], *args: object, start: bool = True) -> None:
        self.fn, self.args = fn, args
        self.where: Optional[str] = None
        self._proc: Optional[subprocess.Popen] = None
        self._box: Dict[str, bytes] = {}
        self._talk: Optional[threading.Thread] = None
        if start:
            self._start()
        self._stop = weakref.finalize(self, _stop, self._proc)

    @property
    def started(self) -> bool:
        """Whether a child process is computing the result."""
        return self._proc is not None

    def _start(self) -> None:
        try:
            payload = pickle.dumps(list(sys.path)) + pickle.dumps((self.fn, self.args))
            self._proc = subprocess.Popen([sys.executable, _CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                          stderr=subprocess.DEVNULL)
        except (OSError, ValueError, pickle.PicklingError, AttributeError, TypeError):
            self._proc = None  # no interpreter, or a function or argument that does not pickle
            return
        self._talk = threading.Thread(target=_exchange, args=(self._proc, payload, self._box), name="ragexam-beside",
                                      daemon=True)
        self._talk.start()

    def _collect(self) -> Any:
        """The child's result; raises ``LookupError`` when there is none."""
        if self._proc is None or self._talk is None:
            raise LookupError("not started")
        self._talk.join()
        try:
            out = self._box.get("out")
            if self._proc.returncode != 0 or not out:
                raise LookupError(f"the child exited with {self._proc.returncode}")
            return pickle.loads(out)
        except (pickle.UnpicklingError, EOFError, AttributeError, ImportError, ValueError) as err:
            raise LookupError(str(err)) from None
        finally:
            self._stop()

    def result(self) -> Any:
        """The child's result, or ``fn(*args)`` computed here when there is none."""
        try:
            out = self._collect()
            self.where = "beside"
        except LookupError:
            out = self.fn(*self.args)
            self.where = "here"
        return out
