"""Where the time goes: wall-clock seconds per stage of a run, and where the work ran.

A run opens a :class:`StageTimes` with :func:`record_stages`; code anywhere below it marks its
work with :func:`stage`::

    with record_stages() as times:
        with stage("load"):
            ...
        with times.scope("bm25 | whole"):            # optional: also count per pipeline
            with stage("index"):
                with stage("tokenize"):              # nested: tokenize time is not counted in index
                    ...
    times.to_dict()   # {"wall_s": 12.3, "stages": {"load": 0.4, "index": 0.9, "tokenize": 8.1, ...},
                      #  "scopes": {"bm25 | whole": {"index": 0.9, "tokenize": 8.1}}}

Stages are **exclusive**: while a nested stage runs, the enclosing one's clock is paused, so the
stages add up to the time spent inside any stage (``covered_s``) and never count a second twice.
``wall_s`` is the whole time the recorder was open; ``wall_s − covered_s`` is time outside every
stage.  Outside :func:`record_stages`, :func:`stage` costs one context-variable lookup and records
nothing.  Stage names used by ragexam: ``load``, ``chunk``, ``evidence``, ``tokenize``, ``embed``,
``index``, ``search``, ``judge``, ``statistics``.  The recorder belongs to the thread (context)
that opened it; work handed to other threads or processes is counted in the stage that waits for it.

Placement: an executor that runs work elsewhere (Ray actors, worker processes) tells the open recorder
where each piece ran with :meth:`StageTimes.place`, under the stage that was running (``tokenize``,
``embed``, ``judge``, ...).  ``to_dict()`` then has a ``placement`` block (only when something was
placed)::

    "placement": {
      "nodes": {"5e1c0a7f9d2b": {"address": "10.0.0.5", "host": "ray-1 (head)"},
                "a93f11c27e40": {"address": "10.0.0.6", "host": "ray-2"}},
      "stages": {"tokenize": {"5e1c0a7f9d2b": {"actors": 1, "batches": 3, "items": 96},
                              "a93f11c27e40": {"actors": 1, "batches": 2, "items": 64}},
                 "judge":    {"5e1c0a7f9d2b": {"actors": 1, "calls": 36}, ...}},
      "retried_batches": 1,                  # batches run again elsewhere after their worker died
      "lost_workers": {"a93f11c27e40": 1}    # per node, workers (actors) that died during the run
    }

A node is a Ray node id (its first 12 hex digits) or ``local`` (this machine); counts are what
finished there (a batch lost with its node is counted where it ran again).
"""

from __future__ import annotations

import contextvars
import threading
import time
from contextlib import contextmanager
from typing import Dict, Iterator, List, Optional

from ragexam.exec import progress

__all__ = ["StageTimes", "record_stages", "stage", "current_stages", "STAGES", "COUNTS"]

#: The stage names ragexam records, in pipeline order (others may be added by callers).
STAGES = ("load", "chunk", "evidence", "tokenize", "embed", "index", "search", "judge", "statistics")
#: What :meth:`StageTimes.place` counts per node and stage.
COUNTS = ("actors", "batches", "items", "calls")

_CURRENT: contextvars.ContextVar[Optional["StageTimes"]] = contextvars.ContextVar("ragexam_stage_times",
                                                                                    default=None)


class StageTimes:
    """Exclusive wall-clock seconds per stage (and per scope); see the module docstring."""

    def __init__(self, clock=time.perf_counter) -> None:
        self._clock = clock
        self.started = clock()
        self.ended: Optional[float] = None
        self.stages: Dict[str, float] = {}
        self.scopes: Dict[str, Dict[str, float]] = {}
        self._stack: List[str] = []
        self._mark = 0.0
        self._scope: Optional[str] = None
        self._lock = threading.Lock()
        self.nodes: Dict[str, Dict[str, str]] = {}
        self.placed: Dict[str, Dict[str, Dict[str, int]]] = {}
        self.retried_batches = 0
        self.lost_workers: Dict[str, int] = {}

    def _charge(self, now: float) -> None:
        if self._stack:
            name = self._stack[-1]
            dt = now - self._mark
            self.stages[name] = self.stages.get(name, 0.0) + dt
            if self._scope is not None:
                per = self.scopes.setdefault(self._scope, {})
                per[name] = per.get(name, 0.0) + dt
        self._mark = now

    def enter(self, name: str) -> None:
        self._charge(self._clock())
        self._stack.append(name)

    def exit(self) -> None:
        self._charge(self._clock())
        self._stack.pop()

    @contextmanager
    def scope(self, name: str) -> Iterator[None]:
        """Also count the stages inside this block under ``scopes[name]`` (e.g. one pipeline)."""
        self._charge(self._clock())
        before, self._scope = self._scope, name
        try:
            yield
        finally:
            self._charge(self._clock())
            self._scope = before

    @property
    def current(self) -> Optional[str]:
        """The innermost open stage (``None`` outside every stage)."""
        return self._stack[-1] if self._stack else None

    def place(self, node: str, *, stage: Optional[str] = None, address: str = "", host: str = "",
              **counts: int) -> None:
        """Count work that ran on ``node`` under ``stage`` (default: the current stage, else ``"other"``);
        ``counts`` are among :data:`COUNTS`.  Safe to call from any thread."""
        bad = sorted(set(counts) - set(COUNTS))
        if bad:  # pragma: no cover - internal misuse
            raise ValueError(f"unknown placement counts {bad}; expected {COUNTS}")
        name = stage or self.current or "other"
        with self._lock:
            info = self.nodes.setdefault(node, {"address": address, "host": host})
            info["address"] = info["address"] or address
            info["host"] = info["host"] or host
            per = self.placed.setdefault(name, {}).setdefault(node, {})
            for k, v in counts.items():
                if v:
                    per[k] = per.get(k, 0) + int(v)

    def lost(self, node: str, workers: int = 0, retried_batches: int = 0) -> None:
        """Record ``workers`` that died on ``node`` and ``retried_batches`` of theirs that ran again elsewhere."""
        with self._lock:
            if workers:
                self.lost_workers[node] = self.lost_workers.get(node, 0) + workers
            self.retried_batches += retried_batches

    def placement(self) -> Dict[str, object]:
        """The ``placement`` block of :meth:`to_dict` (see the module docstring); ``{}`` when nothing was placed."""
        with self._lock:
            if not self.placed and not self.lost_workers:
                return {}
            stages = [s for s in STAGES if s in self.placed] + sorted(s for s in self.placed if s not in STAGES)
            return {"nodes": {k: dict(v) for k, v in self.nodes.items()},
                    "stages": {s: {n: {k: c[k] for k in COUNTS if k in c} for n, c in self.placed[s].items()}
                               for s in stages},
                    "retried_batches": self.retried_batches, "lost_workers": dict(self.lost_workers)}

    def stop(self) -> None:
        if self.ended is None:
            self.ended = self._clock()

    @property
    def wall_s(self) -> float:
        return (self.ended if self.ended is not None else self._clock()) - self.started

    def to_dict(self) -> Dict[str, object]:
        """``{"wall_s", "covered_s", "stages": {name: s}, "scopes": {scope: {name: s}}[, "placement": {...}]}``,
        seconds rounded to ms, stages in :data:`STAGES` order first; ``placement`` as in the module docstring."""
        def ordered(d: Dict[str, float]) -> Dict[str, float]:
            names = [s for s in STAGES if s in d] + sorted(s for s in d if s not in STAGES)
            return {s: round(d[s], 3) for s in names}

        out: Dict[str, object] = {"wall_s": round(self.wall_s, 3), "covered_s": round(sum(self.stages.values()), 3),
                                  "stages": ordered(self.stages),
                                  "scopes": {k: ordered(v) for k, v in self.scopes.items()}}
        placement = self.placement()
        if placement:
            out["placement"] = placement
        return out


@contextmanager
def record_stages() -> Iterator[StageTimes]:
    """Open a :class:`StageTimes` for the enclosed block (the current one for :func:`stage`)."""
    times = StageTimes()
    token = _CURRENT.set(times)
    try:
        yield times
    finally:
        times.stop()
        _CURRENT.reset(token)


def current_stages() -> Optional[StageTimes]:
    """The open recorder of this context, or ``None``."""
    return _CURRENT.get()


@contextmanager
def stage(name: str) -> Iterator[None]:
    """Count the enclosed block's wall time under ``name`` in the open recorder (if any), and name the stage in
    the command's progress lines (:mod:`ragexam.exec.progress`, if any)."""
    times = _CURRENT.get()
    lines = progress.active()  # a command's progress lines name the stage
    if times is None and lines is None:
        yield
        return
    if lines is not None:
        lines.enter_stage(name)
    if times is not None:
        times.enter(name)
    try:
        yield
    finally:
        if times is not None:
            times.exit()
        if lines is not None:
            lines.exit_stage(name)
