"""Progress lines for long commands whose stderr is not a terminal (a log file, CI, a pipe): no silent waits.

A terminal gets live bars (:mod:`ragexam.retrieval.progress`, the CLI's callbacks).  A log gets, from the one
:class:`ProgressLines` reporter of the command, a line at most every ``interval`` seconds -- and one every
``interval`` while the command works, even when a single step takes minutes -- saying what runs::

    ragexam run · embed · embedding 2,422 passages (e5) 1,200/2,422 (50%) · 43.1/s · ETA 28 s · 1 min 05 s
    ragexam judge-check · judging 12/40 (30%) · 0.4/s · ETA 1 min 10 s · 31 s
    ragexam run · chunk · 12 s

that is: the command, the stage (:func:`ragexam.exec.timing.stage` names it), the counted work when there is
some (done/total, the rate since it started and the time left at that rate; no rate before the first item is
done), and the time since the command started.  With ``$RAGEXAM_LANG`` ``ko`` (or, when it is unset,
``LC_ALL``/``LC_MESSAGES``/``LANG`` naming Korean, ``ko_KR.UTF-8``) the words of the line are Korean
(``초당 43.1 · 남은 시간 28초 · 1분 05초``).

The interval is ``$RAGEXAM_PROGRESS_INTERVAL`` seconds (default :data:`INTERVAL`, 10; ``0`` turns the lines
off).  Code that counts work reports it without knowing whether anyone listens:

* :func:`task` -- ``with task("embedding 2,422 passages", 2422) as t: t.advance(32)`` (the retrieval bars do;
  ``t.skip(n)`` counts items a cache already held, left out of the rate and the time left);
* :func:`callback` -- a ``progress(done, total)`` function for the APIs that take one (LLM batches);
* :func:`enter_stage` / :func:`exit_stage` -- called by :func:`ragexam.exec.timing.stage`.

All of them cost one global lookup when no reporter is active (:func:`active`): the CLI starts one per long
command (:func:`progress_lines`), a library call has none.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterator, List, Optional, TextIO

from ragexam.errors import InputError

__all__ = ["ProgressLines", "progress_lines", "active", "task", "callback", "enter_stage", "exit_stage",
           "interval_from_env", "duration", "INTERVAL", "ENV"]

#: seconds between two lines (at most one line per interval)
INTERVAL = 10.0
#: the environment variable that sets the interval (``0``: no lines)
ENV = "RAGEXAM_PROGRESS_INTERVAL"

_WORDS = {
    "en": {"per_s": "{rate}/s", "eta": "ETA {t}", "waiting": "waiting for the first", "h": "h", "min": "min",
           "s": "s"},
    "ko": {"per_s": "초당 {rate}", "eta": "남은 시간 {t}", "waiting": "첫 항목 처리 중", "h": "시간", "min": "분",
           "s": "초"},
}


def interval_from_env() -> float:
    """``$RAGEXAM_PROGRESS_INTERVAL`` as seconds (default :data:`INTERVAL`); :class:`InputError` for a value
    that is not a number >= 0."""
    raw = os.environ.get(ENV, "").strip()
    if not raw:
        return INTERVAL
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value >= 0 or value == float("inf"):
        raise InputError(f"received {raw!r}; expected the seconds between two progress lines, a number >= 0 "
                         f"(default {INTERVAL:g}; 0 turns the lines off). Fix: export {ENV}=10, or unset it.",
                         source=ENV, field=ENV)
    return value


def _lang() -> str:
    for name in ("RAGEXAM_LANG", "LC_ALL", "LC_MESSAGES", "LANG"):
        value = os.environ.get(name, "")
        if value:
            return "ko" if value.lower().startswith("ko") else "en"
    return "en"


def duration(seconds: float, lang: str = "en") -> str:
    """``28 s``, ``1 min 05 s``, ``2 h 03 min`` (``28초``, ``1분 05초``, ``2시간 03분`` in Korean)."""
    w = _WORDS[lang]
    sep = " " if lang == "en" else ""
    s = int(round(max(0.0, seconds)))
    if s < 60:
        return f"{s}{sep}{w['s']}"
    if s < 3600:
        return f"{s // 60}{sep}{w['min']} {s % 60:02d}{sep}{w['s']}"
    return f"{s // 3600}{sep}{w['h']} {s % 3600 // 60:02d}{sep}{w['min']}"


def _rate(r: float) -> str:
    return f"{r:,.0f}" if r >= 100 else f"{r:.1f}" if r >= 1 else f"{r:.2f}"


@dataclass
class _Task:
    label: str
    total: int
    done: int
    started: float
    skipped: int = 0  # of ``done``: found done (a cache), not worked on -- left out of the rate


class ProgressLines:
    """The reporter of one command (see the module docstring): ``stream`` (default stderr) gets a line every
    ``interval`` seconds from a daemon thread while :meth:`start`-ed; ``clock`` is for tests."""

    def __init__(self, command: str, *, interval: float = INTERVAL, stream: Optional[TextIO] = None,
                 clock: Callable[[], float] = time.monotonic, lang: Optional[str] = None) -> None:
        self.command = command
        self.interval = float(interval)
        self.stream = stream
        self.clock = clock
        self.lang = lang or _lang()
        self.started = clock()
        self.lines = 0
        self._stages: List[str] = []
        self._tasks: List[_Task] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None

    # -- what runs -------------------------------------------------------------------------------------------
    def enter_stage(self, name: str) -> None:
        with self._lock:
            self._stages.append(name)

    def exit_stage(self, name: str) -> None:
        with self._lock:
            for i in range(len(self._stages) - 1, -1, -1):
                if self._stages[i] == name:
                    del self._stages[i]
                    break

    @property
    def stage(self) -> Optional[str]:
        """The innermost open stage (``None`` outside every stage)."""
        return self._stages[-1] if self._stages else None

    def begin(self, label: str, total: int) -> _Task:
        t = _Task(label, int(total), 0, self.clock())
        with self._lock:
            self._tasks.append(t)
        return t

    def end(self, t: _Task) -> None:
        with self._lock:
            if t in self._tasks:
                self._tasks.remove(t)

    def update(self, t: _Task, done: int, total: Optional[int] = None, *, skipped: int = 0) -> None:
        with self._lock:
            t.done = int(done)
            t.skipped += int(skipped)
            if total is not None:
                t.total = int(total)

    def _counts(self, t: _Task, now: float, timed: bool) -> List[str]:
        """``label done/total (pct)`` and, when ``timed``, the rate of the items worked on (those found done
        apart) and the time left at it."""
        w = _WORDS[self.lang]
        pct = f" ({100.0 * t.done / t.total:.0f}%)" if t.total else ""
        out = [f"{t.label} {t.done:,}/{t.total:,}{pct}"]
        if not timed:
            return out
        made, spent = t.done - t.skipped, now - t.started
        if made > 0 and spent > 0:
            rate = made / spent
            out.append(w["per_s"].format(rate=_rate(rate)))
            if t.total > t.done:
                out.append(w["eta"].format(t=duration((t.total - t.done) / rate, self.lang)))
        elif t.total > t.done:
            out.append(w["waiting"])
        return out

    # -- the line --------------------------------------------------------------------------------------------
    def line(self) -> str:
        """The progress line now (see the module docstring); work counted inside other counted work (documents
        split in batches, each batch's sentences) shows the outermost count with its rate and time left, then the
        innermost's count."""
        now = self.clock()
        with self._lock:
            parts = [f"ragexam {self.command}"]
            if self._stages:
                parts.append(self._stages[-1])
            if self._tasks:
                parts.extend(self._counts(self._tasks[0], now, True))
                if len(self._tasks) > 1:
                    parts.extend(self._counts(self._tasks[-1], now, False))
            parts.append(duration(now - self.started, self.lang))
        return " · ".join(parts)

    def emit(self) -> None:
        """Write :meth:`line` to the stream now."""
        stream = self.stream if self.stream is not None else sys.stderr
        try:
            stream.write(self.line() + "\n")
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: the command goes on without its log
            return
        self.lines += 1

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.emit()

    def start(self) -> "ProgressLines":
        if self._thread is None and self.interval > 0:
            self._thread = threading.Thread(target=self._run, name="ragexam-progress", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=1.0)

    def elapsed(self) -> float:
        return self.clock() - self.started


_ACTIVE: Optional[ProgressLines] = None


def active() -> Optional[ProgressLines]:
    """The reporter of the running command, or ``None`` (a library call, a terminal, or lines turned off)."""
    return _ACTIVE


def _stderr_is_tty() -> bool:
    try:
        return bool(sys.stderr.isatty())
    except (AttributeError, ValueError):
        return False


@contextmanager
def progress_lines(command: str, *, interval: Optional[float] = None, force: bool = False,
                   stream: Optional[TextIO] = None) -> Iterator[Optional[ProgressLines]]:
    """The reporter of ``command`` for the enclosed block, when stderr is not a terminal (or ``force``) and the
    interval (default :func:`interval_from_env`) is above 0; else ``None`` and nothing is printed."""
    global _ACTIVE
    seconds = interval_from_env() if interval is None else interval
    if seconds <= 0 or (_stderr_is_tty() and not force) or _ACTIVE is not None:
        yield _ACTIVE
        return
    reporter = ProgressLines(command, interval=seconds, stream=stream).start()
    _ACTIVE = reporter
    try:
        yield reporter
    finally:
        _ACTIVE = None
        reporter.stop()


class _Counted:
    """What :func:`task` yields: ``advance(n)`` adds ``n`` done."""

    def __init__(self, reporter: Optional[ProgressLines], t: Optional[_Task]) -> None:
        self._reporter, self._task = reporter, t

    def advance(self, n: int = 1) -> None:
        if self._reporter is not None and self._task is not None:
            self._reporter.update(self._task, self._task.done + n)

    def skip(self, n: int) -> None:
        """``n`` items found done (e.g. in a cache): counted done, left out of the rate and the time left."""
        if self._reporter is not None and self._task is not None and n:
            self._reporter.update(self._task, self._task.done + n, skipped=n)


@contextmanager
def task(label: str, total: int) -> Iterator[_Counted]:
    """Counted work of ``total`` items for the active reporter's line (a no-op without one)."""
    reporter = _ACTIVE
    if reporter is None or total <= 0:
        yield _Counted(None, None)
        return
    t = reporter.begin(label, total)
    try:
        yield _Counted(reporter, t)
    finally:
        reporter.end(t)


def callback(label: str) -> Optional[Callable[[int, int], None]]:
    """A ``progress(done, total)`` function feeding the active reporter's line under ``label`` (``None`` without
    a reporter): the form the LLM batches report in.  The work counts as running from the first call until
    ``done == total``."""
    reporter = _ACTIVE
    if reporter is None:
        return None
    state: dict = {}

    def cb(done: int, total: int) -> None:
        if not total:  # nothing to count: no "0/0" on the line
            return
        t = state.get("task")
        if t is None:
            t = state["task"] = reporter.begin(label, total)
        reporter.update(t, done, total)
        if total and done >= total:
            reporter.end(t)
            state.pop("task", None)

    return cb


def enter_stage(name: str) -> None:
    """The active reporter's stage is ``name`` until :func:`exit_stage` (called by ``exec.timing.stage``)."""
    reporter = _ACTIVE
    if reporter is not None:
        reporter.enter_stage(name)


def exit_stage(name: str) -> None:
    reporter = _ACTIVE
    if reporter is not None:
        reporter.exit_stage(name)
