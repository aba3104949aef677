"""Running many calls (LLM requests) under one rate limit: the call pools of the executors.

A *call pool* runs ``fn(arg)`` for many args, ``concurrency`` at a time, and hands back a
:class:`concurrent.futures.Future` per call::

    pool = executor.call_pool(call_one, concurrency=32, limit=RateLimit(per_second=20, name=endpoint))
    futures = [pool.submit(task) for task in tasks]
    ...
    pool.close()

It only runs calls: caching, de-duplication, retries and the redaction of secrets stay with the
caller (:mod:`ragexam.llm`), on the caller's side, so a cluster run fills the same cache a local run
reads.

The limit is *global*: every pool given a :class:`RateLimit` with the same ``name`` shares one
limiter -- per process with the local executor, per cluster with Ray (one named actor) -- so ten
pools (or ten machines) calling one endpoint together never exceed its ``per_second`` or
``concurrency``.

Rate rule (exact): calls start at least ``1 / per_second`` seconds apart (the n-th call of a limiter
starts no earlier than ``t0 + (n - 1) / per_second``, where ``t0`` is its first call); at most
``concurrency`` calls of a limiter run at once.  ``None`` means no limit on that axis.
"""

from __future__ import annotations

import math
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, Iterator, Optional, Protocol

from ragexam.errors import integer_in, number_in

__all__ = ["RateLimit", "RateLimiter", "CallPool", "LocalCallPool", "limiter_for"]


@dataclass(frozen=True)
class RateLimit:
    """At most ``per_second`` call starts per second and ``concurrency`` calls at once, shared by
    every pool using the same ``name`` (e.g. the endpoint).  ``None``: no limit on that axis."""

    per_second: Optional[float] = None
    concurrency: Optional[int] = None
    name: str = "default"

    def __post_init__(self) -> None:
        ps = self.per_second
        if ps is not None:
            number_in(ps, 0.0, above=True, source="rate limit", field="per_second",
                      what="a number of calls per second (or nothing for no limit)")
        c = self.concurrency
        if c is not None:
            integer_in(c, 1, source="rate limit", field="concurrency",
                       what="a number of requests at once (or nothing for no limit)")


class RateLimiter:
    """The thread-safe limiter behind a :class:`RateLimit` (see the module docstring for the rule)."""

    def __init__(self, limit: RateLimit, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.limit = limit
        self._interval = 1.0 / limit.per_second if limit.per_second else 0.0
        self._next = -math.inf
        self._lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(limit.concurrency) if limit.concurrency else None
        self._clock = clock
        self._sleep = sleep

    def reserve(self) -> float:
        """Reserve the next start time (clock seconds) and return how long to wait for it."""
        with self._lock:
            now = self._clock()
            at = max(now, self._next)
            self._next = at + self._interval
            return at - now

    def acquire(self) -> None:
        if self._slots is not None:
            self._slots.acquire()
        if self._interval:
            wait = self.reserve()
            if wait > 0:
                self._sleep(wait)

    def release(self) -> None:
        if self._slots is not None:
            self._slots.release()


_LIMITERS: Dict[RateLimit, RateLimiter] = {}
_LIMITERS_LOCK = threading.Lock()


def limiter_for(limit: Optional[RateLimit]) -> Optional[RateLimiter]:
    """The process-wide :class:`RateLimiter` of ``limit`` (one per distinct limit), or ``None``."""
    if limit is None:
        return None
    with _LIMITERS_LOCK:
        found = _LIMITERS.get(limit)
        if found is None:
            found = _LIMITERS[limit] = RateLimiter(limit)
        return found


class CallPool(Protocol):
    """What :meth:`ragexam.exec.base.Executor.call_pool` returns."""

    concurrency: int

    def submit(self, arg: Any) -> "Future[Any]": ...

    def map(self, args: Iterable[Any]) -> Iterator[Any]: ...

    def close(self, cancel: bool = False) -> None: ...


def _check_concurrency(concurrency: Any) -> int:
    return integer_in(concurrency, 1, source="call pool", field="concurrency")


class LocalCallPool:
    """``concurrency`` threads in this process (HTTP calls release the GIL) under the process-wide limiter."""

    def __init__(self, fn: Callable[[Any], Any], *, concurrency: int, limit: Optional[RateLimit] = None) -> None:
        self.fn = fn
        self.concurrency = _check_concurrency(concurrency)
        self._limiter = limiter_for(limit)
        self._pool = ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="ragexam-call")

    def _limited(self, arg: Any) -> Any:
        lim = self._limiter
        if lim is None:
            return self.fn(arg)
        lim.acquire()
        try:
            return self.fn(arg)
        finally:
            lim.release()

    def submit(self, arg: Any) -> "Future[Any]":
        return self._pool.submit(self._limited, arg)

    def map(self, args: Iterable[Any]) -> Iterator[Any]:
        """Results of ``fn`` over ``args``, in order (at most ``2 × concurrency`` calls submitted ahead)."""
        from collections import deque

        pending: deque = deque()
        it = iter(args)
        for arg in it:
            pending.append(self.submit(arg))
            if len(pending) >= 2 * self.concurrency:
                break
        while pending:
            out = pending.popleft().result()
            nxt = next(it, _END)
            if nxt is not _END:
                pending.append(self.submit(nxt))
            yield out

    def close(self, cancel: bool = False) -> None:
        self._pool.shutdown(wait=True, cancel_futures=cancel)

    def __enter__(self) -> "LocalCallPool":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close(cancel=exc[0] is not None)


_END = object()
