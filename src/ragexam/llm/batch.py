"""Running many LLM calls: de-duplicated, cached, resumable, concurrent, shared across processes.

:func:`run_calls` is the one loop every LLM task uses (the judge, answer generation, later the
question generator and LLM rerankers).  Given ``(key, task)`` pairs and a function that makes one
call, it:

1. drops repeated keys (two tasks with the same prompt share one call);
2. reads the cache (:class:`~ragexam.llm.cache.LLMCache`): a stored result that the task's
   ``usable`` accepts is not called again;
3. runs the rest ``concurrency`` at a time: in threads of this process, or on the call pool of an
   ``executor`` (:mod:`ragexam.exec`: the local one, or Ray actors under one cluster-wide ``limit``;
   the call then runs remotely and everything below stays in this process).  Before a call it *claims* the key; a key
   another live process has claimed is not called but waited for, polling every ``poll`` seconds,
   and read from the cache when that process stores it; if the claim is released without a
   result (that call failed) it is claimed and called here; after ``claim_wait`` seconds of
   waiting it is taken over.  A killed process's claims are stale at once on the same host;
4. stores each result (redacted by ``redact``) in its own transaction as soon as it is known,
   releasing the claim in the same transaction; results the task marks ``store=False``
   (transport failures, which the next run should try again) are not stored;
5. reports progress as ``progress(done, total)`` (``total``: keys not read from the cache at the
   start) and sums the :class:`~ragexam.llm.cost.Usage`.

An exception in a call (e.g. :class:`~ragexam.llm.transport.EndpointError`) stops the run: calls
already in flight finish and are stored, the rest are not started, every claim is released, and
the exception propagates.

:func:`plan_calls` is the matching dry run: calls to make, cached, shared and skipped tasks, and
the estimated tokens and cost (:mod:`ragexam.llm.cost`); nothing is sent or claimed.
"""

from __future__ import annotations

import os
import socket
import sqlite3
import time
import uuid
from collections import deque
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import (Any, Callable, Dict, Iterable, List, Optional, Sequence, Set, Tuple, TypeVar,
                    Union)

from ragexam.errors import integer_in
from ragexam.llm.cache import ClaimResult, LLMCache, utc_now
from ragexam.llm.cost import Usage, cost_usd, estimate_tokens

__all__ = ["Outcome", "Batch", "Store", "run_calls", "PlannedCall", "CallPlan", "plan_calls"]

T = TypeVar("T")


def _always(value: Dict[str, Any]) -> bool:
    return True


def _same(value: Any) -> Any:
    return value


@dataclass(frozen=True)
class Outcome:
    """What one call produced: the JSON-able ``value`` to keep, whether to ``store`` it in the cache,
    the HTTP ``requests`` spent, the ``replies`` received and the tokens the endpoint reported
    (``None``: not reported)."""

    value: Dict[str, Any]
    store: bool = True
    requests: int = 0
    replies: int = 0
    prompt_tokens: Optional[int] = None
    completion_tokens: Optional[int] = None


@dataclass(frozen=True)
class Store:
    """Where :func:`run_calls` keeps results: the ``cache`` (``None``: no reading, storing or claiming) and, stored
    beside each result for inspection, the task's ``kind``, the ``model`` and the ``endpoint``."""

    cache: Optional[LLMCache]
    kind: str
    model: str
    endpoint: str


@dataclass
class Batch:
    """The result of :func:`run_calls`: ``values`` (every key -> its redacted value), ``fresh``
    (keys called in this run), ``from_cache`` (keys read from the cache, including results another
    process finished during the run) and the ``usage``."""

    values: Dict[str, Dict[str, Any]]
    fresh: Set[str]
    from_cache: Set[str]
    usage: Usage
    outcomes: Dict[str, Outcome] = field(default_factory=dict)


def _check_count(name: str, value: Any, low: int) -> None:
    integer_in(value, low, source="--" + name.replace("_", "-"), field=name)


def run_calls(calls: Iterable[Tuple[str, T]], call: Callable[[T], Outcome], *, store: Store, concurrency: int = 4,
              usable: Callable[[Dict[str, Any]], bool] = _always, redact: Callable[[Any], Any] = _same,
              progress: Optional[Callable[[int, int], None]] = None, claim_wait: float = 300.0,
              poll: float = 0.25, executor: Any = None, limit: Any = None) -> Batch:
    """Run ``call`` on each distinct key's task (see the module docstring).

    :param calls: ``(key, task)`` pairs; a repeated key is called once (its first task).
    :param call: makes one call; returns an :class:`Outcome`.
    :param store: the cache (or ``None``) and the labels stored beside each result (:class:`Store`).
    :param usable: whether a stored value answers the task (e.g. not an old failure to redo).
    :param redact: applied to every value before it is stored or returned.
    :param executor: an executor of :mod:`ragexam.exec` (anything with ``call_pool(fn, concurrency=, limit=)``)
        to run the calls on, e.g. Ray actors; ``call`` must then be picklable.  Default: threads here.
    :param limit: a :class:`ragexam.exec.calls.RateLimit` shared by every pool of that name (with an executor).
    """
    _check_count("concurrency", concurrency, 1)
    pairs = list(calls)
    runner = _Runner(pairs, call, store, concurrency, usable, redact, progress, claim_wait, poll)
    runner.read_cache()
    if runner.total:
        runner.run(executor, limit)
    usage = runner.usage
    usage.calls = len(runner.fresh)
    usage.waited = len(runner.waited)
    usage.took_over = len(runner.waited_for & runner.fresh)
    usage.cached = sum(1 for k, _ in pairs if k in runner.from_cache)
    return Batch(runner.values, runner.fresh, runner.from_cache, usage, runner.outcomes)


class _Runner:
    """The state of one :func:`run_calls`: what is done, waited for, running; and the loop's steps."""

    def __init__(self, pairs: List[Tuple[str, Any]], call: Callable[[Any], Outcome], store: Store,
                 concurrency: int, usable: Callable[[Dict[str, Any]], bool],
                 redact: Callable[[Any], Any], progress: Optional[Callable[[int, int], None]], claim_wait: float,
                 poll: float) -> None:
        self.task_of: Dict[str, Any] = {}
        for k, t in pairs:
            self.task_of.setdefault(k, t)
        self.call, self.cache, self.kind, self.model, self.endpoint = (call, store.cache, store.kind, store.model,
                                                                      store.endpoint)
        self.concurrency, self.usable, self.redact, self.progress = concurrency, usable, redact, progress
        self.claim_wait, self.poll = claim_wait, poll
        self.values: Dict[str, Dict[str, Any]] = {}
        self.from_cache: Set[str] = set()
        self.fresh: Set[str] = set()
        self.outcomes: Dict[str, Outcome] = {}
        self.waited: Set[str] = set()  # results another process finished while this run waited for them
        self.waited_for: Set[str] = set()  # keys ever seen busy (claimed by another live process)
        self.usage = Usage()
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"
        self.since = utc_now()
        self.total = self.done = 0
        self.pending: deque = deque()
        self.waiting: Dict[str, float] = {}  # key -> monotonic time we started waiting for it
        self.running: Dict[Future, str] = {}
        self.next_poll = 0.0

    def tick(self) -> None:
        self.done += 1
        if self.progress is not None:
            self.progress(self.done, self.total)

    def read_cache(self) -> None:
        """Take the stored usable results; the rest is to do."""
        order = list(self.task_of)
        if self.cache is not None and order:
            for k, v in self.cache.get_many(order).items():
                if self.usable(v):
                    self.values[k] = v
                    self.from_cache.add(k)
        todo = [k for k in order if k not in self.values]
        self.total = len(todo)
        self.pending = deque(todo)
        if self.progress is not None:
            self.progress(0, self.total)

    def keep(self, key: str, out: Outcome) -> Dict[str, Any]:
        """Redact and store one finished call (in this process, whichever pool ran it)."""
        value = self.redact(out.value)
        if self.cache is not None:
            if out.store:
                self.cache.put(key, self.kind, self.model, self.endpoint, value, owner=self.owner)
            else:
                self.cache.release(self.owner, [key])
        return value

    def claim(self, keys: Sequence[str], limit: int, force: Set[str]) -> ClaimResult:
        if self.cache is None:
            return ClaimResult(mine=list(keys[:limit]), later=list(keys[limit:]))
        return self.cache.claim(keys, self.owner, usable=self.usable, fresh_since=self.since,
                                stale_after=self.claim_wait, force=force, limit=limit)

    def start_calls(self, submit: Callable[[Any], Future]) -> bool:
        """Claim what fits in the free slots (pending keys, and waited-for keys when a poll is due), start the
        calls claimed here; ``True`` when the loop should look again at once."""
        free = self.concurrency - len(self.running)
        now = time.monotonic()
        poll_due = bool(self.waiting) and now >= self.next_poll
        if free <= 0 or not (self.pending or poll_due):
            return False
        from_waiting: List[str] = []
        force: Set[str] = set()
        if poll_due:
            from_waiting = list(self.waiting)
            force = {k for k in from_waiting if now - self.waiting[k] >= self.claim_wait}
            self.next_poll = now + self.poll
        from_pending = [self.pending.popleft() for _ in range(min(len(self.pending), free))]
        res = self.claim(from_waiting + from_pending, free, force)
        for k, v in res.done.items():
            self.values[k] = v
            self.from_cache.add(k)
            self.waited.add(k)
            self.waiting.pop(k, None)
            self.tick()
        for k in res.busy:
            self.waiting.setdefault(k, now)
            self.waited_for.add(k)
        self.waited_for.update(res.taken)  # a live owner's claim, stale or forced: taken over
        for k in res.mine:
            self.waiting.pop(k, None)
            self.running[submit(self.task_of[k])] = k
        back = [k for k in res.later if k not in self.waiting]
        self.pending.extendleft(reversed(back))
        # slots may be free, or everything looked at was busy: look further
        return bool(res.done or res.mine or (self.pending and len(self.running) < self.concurrency))

    def collect(self) -> None:
        """Wait for a running call to finish (or for the next poll of waited-for keys) and keep what finished."""
        timeout = max(0.0, self.next_poll - time.monotonic()) if self.waiting else None
        if self.running:
            finished, _ = wait(list(self.running), timeout=timeout, return_when=FIRST_COMPLETED)
            for f in finished:
                k = self.running.pop(f)
                out = f.result()  # re-raises the call's exception
                self.values[k] = self.keep(k, out)
                self.fresh.add(k)
                self.outcomes[k] = out
                u = self.usage
                u.requests += out.requests
                u.prompt_tokens += out.prompt_tokens or 0
                u.completion_tokens += out.completion_tokens or 0
                if out.replies and out.prompt_tokens is None:
                    u.usage_missing += 1
                self.tick()
        elif self.waiting and timeout:
            time.sleep(timeout)

    def run(self, executor: Any, limit: Any) -> None:
        """The loop: start calls, collect them, until nothing is pending, waited for or running.  On an exception
        the calls in flight finish and are kept, the rest are not started, every claim is released."""
        width = max(1, min(self.concurrency, self.total))
        if executor is not None:
            pool: Any = executor.call_pool(self.call, concurrency=width, limit=limit)
            submit = pool.submit
        else:
            pool = ThreadPoolExecutor(max_workers=width)

            def submit(task: Any) -> Future:
                return pool.submit(self.call, task)
        try:
            while self.pending or self.waiting or self.running:
                if self.start_calls(submit):
                    continue
                self.collect()
        finally:
            if executor is not None:
                pool.close(cancel=True)
            else:
                pool.shutdown(wait=True, cancel_futures=True)
            for f, k in self.running.items():  # a call failed: keep what the calls in flight brought back
                if f.done() and not f.cancelled() and f.exception() is None:
                    try:
                        self.keep(k, f.result())
                    except sqlite3.Error:  # pragma: no cover - e.g. a full disk; the next run calls again
                        pass
            if self.cache is not None:
                try:
                    self.cache.release(self.owner)
                except sqlite3.Error:  # e.g. a full disk: the claims go stale when this process ends
                    pass


# -- dry run ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PlannedCall:
    """One task of a dry run: its cache ``key`` (``None``: nothing to send, e.g. a missing input),
    its ``prompt`` text (tokens are estimated from its length), the ``completion`` token allowance,
    and the ``group`` it is counted under (e.g. the metric)."""

    key: Optional[str]
    prompt: str = ""
    completion: int = 0
    group: str = ""


@dataclass
class CallPlan:
    """What a run would do: tasks in ``total``, already ``cached``, ``shared`` (same key as an
    earlier task: one call serves both), ``skipped`` (nothing to send), ``calls`` to make, and the
    estimated tokens and cost of those calls; ``total = cached + shared + skipped + calls``, also
    per group in ``by_group``."""

    total: int = 0
    cached: int = 0
    shared: int = 0
    skipped: int = 0
    calls: int = 0
    est_prompt_tokens: int = 0
    est_completion_tokens: int = 0
    est_cost: Union[float, str] = "unknown"
    by_group: Dict[str, Dict[str, int]] = field(default_factory=dict)

    def to_dict(self) -> Dict[str, Any]:
        return {"total": self.total, "cached": self.cached, "shared": self.shared, "skipped": self.skipped,
                "calls": self.calls, "est_prompt_tokens": self.est_prompt_tokens,
                "est_completion_tokens": self.est_completion_tokens, "est_cost_usd": self.est_cost,
                "by_group": self.by_group}


def plan_calls(calls: Iterable[PlannedCall], cache: Optional[LLMCache], *,
               usable: Callable[[Dict[str, Any]], bool] = _always,
               price: Optional[Tuple[float, float]] = None) -> CallPlan:
    """Count the calls a :func:`run_calls` over these tasks would make and estimate their tokens
    (:func:`~ragexam.llm.cost.estimate_tokens` of each prompt plus its completion allowance)."""
    calls = list(calls)
    hits = cache.get_many(c.key for c in calls if c.key is not None) if cache is not None else {}
    plan = CallPlan()
    seen: Set[str] = set()
    for c in calls:
        g = plan.by_group.setdefault(c.group, {"total": 0, "cached": 0, "shared": 0, "skipped": 0, "calls": 0,
                                               "est_prompt_tokens": 0, "est_completion_tokens": 0})
        plan.total += 1
        g["total"] += 1
        if c.key is None:
            what = "skipped"
        elif c.key in hits and usable(hits[c.key]):
            what = "cached"
        elif c.key in seen:
            what = "shared"
        else:
            seen.add(c.key)
            what = "calls"
            p = estimate_tokens(c.prompt)
            g["est_prompt_tokens"] += p
            g["est_completion_tokens"] += c.completion
            plan.est_prompt_tokens += p
            plan.est_completion_tokens += c.completion
        g[what] += 1
        setattr(plan, what, getattr(plan, what) + 1)
    plan.est_cost = cost_usd(plan.est_prompt_tokens, plan.est_completion_tokens, price)
    return plan
