"""The Ray executor: batches as Ray Data on an actor pool, LLM calls on async actors (``ragexam[ray]``).

::

    ragexam run ... --executor ray                   # a Ray runtime on this machine (or $RAY_ADDRESS)
    ragexam run ... --executor ray://head:10001      # a remote cluster through Ray Client

What runs where
---------------
* **Batches** (tokenizing, embedding): the items become a Ray Dataset (``from_items``, blocks of a few
  batches);
  ``map_batches`` runs them on an :class:`ray.data.ActorPoolStrategy` pool, one worker built per
  actor from the factory (so a model is loaded once per actor).  A factory that asks for GPUs
  (``factory.gpus``) gets ``num_gpus`` per actor when the cluster has GPUs, and the pool has one actor
  per GPU; otherwise one actor per CPU, each told to use one thread.  Results travel back pickled,
  one row per batch, and are yielded in input order; the caller writes them to its cache on the driver,
  under the same content keys a local run uses, so a cluster run fills the cache a local run reads.
* **Calls** (LLM requests): async actors each run up to ``concurrency / actors`` calls in threads; every
  call first asks one named limiter actor (``ragexam-limit:<name>``, shared by the whole cluster) for a
  slot, so the rate limit is global (:mod:`ragexam.exec.calls` has the rule).

Lifecycle: if Ray is already initialized in this process it is used as it is (and left running);
otherwise :class:`RayExecutor` calls ``ray.init(address=...)`` (``None``: ``$RAY_ADDRESS`` or a new
local runtime) without the dashboard, and :meth:`RayExecutor.close` shuts down what it started.
Every node needs the same ragexam (and model packages) installed as the driver.
"""

from __future__ import annotations

import math
import pickle
from typing import Any, Callable, Dict, Optional, Sequence

from ragexam.errors import InputError, MissingDependencyError, RagexamError
from ragexam.exec.base import (Batches, Executor, WorkerFactory, check_batch, check_batch_size, check_mode,
                               check_workers, with_threads)

__all__ = ["RayExecutor"]

#: Rows per Arrow block of the input dataset, in batches (several blocks per actor keep the pool busy).
_BATCHES_PER_BLOCK = 4


def _import_ray():
    try:
        import ray
    except ImportError:
        raise MissingDependencyError("The Ray executor (--executor ray)", "ray", "ray[data]") from None
    return ray


class _BatchActor:
    """One Ray Data actor: builds its worker once, then runs it on each batch."""

    def __init__(self, factory: WorkerFactory) -> None:
        self.worker = factory()
        self.where = getattr(factory, "name", type(factory).__name__)

    def __call__(self, batch: Any) -> Dict[str, list]:
        idx = batch.column("i").to_pylist()
        items = batch.column("x").to_pylist()
        out = self.worker(items)
        check_batch(out, len(items), self.where)
        return {"idx": [pickle.dumps(idx)], "out": [pickle.dumps(out, protocol=pickle.HIGHEST_PROTOCOL)]}


class _LimiterActor:
    """The cluster-wide limiter of one :class:`~ragexam.exec.calls.RateLimit` (an async actor)."""

    def __init__(self, per_second: Optional[float], concurrency: Optional[int]) -> None:
        import asyncio

        self._interval = 1.0 / per_second if per_second else 0.0
        self._next = -math.inf
        self._slots = asyncio.Semaphore(concurrency) if concurrency else None

    async def acquire(self) -> None:
        import asyncio
        import time

        if self._slots is not None:
            await self._slots.acquire()
        if self._interval:
            now = time.monotonic()
            at = max(now, self._next)
            self._next = at + self._interval
            if at > now:
                await asyncio.sleep(at - now)

    async def release(self) -> None:
        if self._slots is not None:
            self._slots.release()


class _CallActor:
    """An async actor running ``fn(arg)`` in threads, each call inside a limiter slot."""

    def __init__(self, fn: Callable[[Any], Any], limiter: Any, threads: int) -> None:
        from concurrent.futures import ThreadPoolExecutor

        self.fn = fn
        self.limiter = limiter
        self.pool = ThreadPoolExecutor(max_workers=threads)

    async def call(self, arg: Any) -> Any:
        import asyncio

        if self.limiter is not None:
            await self.limiter.acquire.remote()
        try:
            return await asyncio.get_running_loop().run_in_executor(self.pool, self.fn, arg)
        finally:
            if self.limiter is not None:
                await self.limiter.release.remote()


class RayCallPool:
    """Calls on ``actors`` async actors (see the module docstring); ``submit(arg)`` returns a Future."""

    def __init__(self, fn: Callable[[Any], Any], *, concurrency: int, limit: Any, actors: int) -> None:
        ray = _import_ray()
        from ragexam.exec.calls import _check_concurrency

        self.concurrency = _check_concurrency(concurrency)
        n = max(1, min(actors, self.concurrency))
        per_actor = math.ceil(self.concurrency / n)
        limiter = None
        if limit is not None:
            limiter = ray.remote(num_cpus=0, max_concurrency=10_000)(_LimiterActor).options(
                name=f"ragexam-limit:{limit.name}", namespace="ragexam", get_if_exists=True,
                lifetime=None).remote(limit.per_second, limit.concurrency)
        fn_ref = ray.put(fn)
        cls = ray.remote(num_cpus=0, max_concurrency=per_actor)(_CallActor)
        self._actors = [cls.remote(fn_ref, limiter, per_actor) for _ in range(n)]
        self._limiter = limiter
        self._next = 0

    def submit(self, arg: Any):
        actor = self._actors[self._next % len(self._actors)]
        self._next += 1
        return actor.call.remote(arg).future()

    def map(self, args):
        from collections import deque

        pending: deque = deque()
        for arg in args:
            pending.append(self.submit(arg))
            while len(pending) >= 2 * self.concurrency:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()

    def close(self, cancel: bool = False) -> None:
        ray = _import_ray()
        for a in self._actors:
            ray.kill(a)
        self._actors = []

    def __enter__(self) -> "RayCallPool":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close(cancel=exc[0] is not None)


class RayExecutor(Executor):
    """Runs batch workers as Ray Data on an actor pool and calls on async actors (module docstring).

    :param address: ``None`` (``$RAY_ADDRESS``, else a new local Ray runtime), ``"auto"`` (a running
        local cluster) or ``"ray://HOST:PORT"`` (Ray Client).
    :param workers: actors in a CPU pool (default: the cluster's CPUs).
    :param init_kwargs: more ``ray.init`` arguments (e.g. ``num_cpus``, ``object_store_memory``,
        ``runtime_env``) when this executor starts Ray.
    """

    name = "ray"

    def __init__(self, address: Optional[str] = None, *, workers: Optional[int] = None,
                 init_kwargs: Optional[Dict[str, Any]] = None) -> None:
        ray = _import_ray()
        self._workers_set = check_workers(workers)
        self.address = address
        self._started = False
        if not ray.is_initialized():
            kwargs = {"include_dashboard": False, "logging_level": "warning", **(init_kwargs or {})}
            try:
                ray.init(address=address, **kwargs)
            except (ConnectionError, RuntimeError, ValueError) as err:
                raise InputError(f"cannot start or reach Ray at {address or 'this machine'}: {err}. Check the "
                                 "address (ray://HOST:10001 for Ray Client) and that the cluster runs the same "
                                 "Ray and Python versions.", source="--executor", field="executor") from None
            self._started = True
        from ray.data import DataContext

        ctx = DataContext.get_current()
        ctx.enable_progress_bars = False
        ctx.print_on_execution_start = False

    def __repr__(self) -> str:
        return f"RayExecutor(address={self.address!r}, workers={self.workers})"

    def _resources(self) -> Dict[str, float]:
        return dict(_import_ray().cluster_resources())

    @property
    def workers(self) -> int:
        if self._workers_set is not None:
            return self._workers_set
        return max(1, int(self._resources().get("CPU", 1)))

    @property
    def gpus(self) -> int:
        """GPUs in the cluster."""
        return int(self._resources().get("GPU", 0))

    def describe(self) -> dict:
        return {"executor": "ray", "workers": self.workers, "gpus": self.gpus}

    def map_batches(self, factory: WorkerFactory, items: Sequence[str], *, batch_size: int,
                    mode: str = "inline") -> Batches:
        check_mode(mode)
        check_batch_size(batch_size)
        items = items if isinstance(items, list) else list(items)
        if not items:
            return
        ray = _import_ray()
        n = len(items)
        n_batches = math.ceil(n / batch_size)
        want_gpus = float(getattr(factory, "gpus", 0) or 0)
        gpus = self.gpus if want_gpus else 0
        if gpus:
            size, remote = max(1, min(gpus, n_batches)), {"num_gpus": want_gpus, "num_cpus": 1}
        else:
            size, remote = max(1, min(self.workers, n_batches)), {"num_cpus": 1}
            factory = with_threads(factory, 1)
        # at least one block per actor, else a few batches per block; from_items builds the blocks here
        # (from_arrow computes their metadata in remote tasks, which crashed a worker with pyarrow 26 here)
        blocks = min(n_batches, max(size, math.ceil(n_batches / _BATCHES_PER_BLOCK)))
        ds = ray.data.from_items([{"i": i, "x": x} for i, x in enumerate(items)],
                                 override_num_blocks=blocks).map_batches(
            _BatchActor, fn_constructor_kwargs={"factory": factory}, batch_size=batch_size,
            batch_format="pyarrow", compute=ray.data.ActorPoolStrategy(size=size), **remote)
        done: Dict[int, Any] = {}
        nxt = 0
        try:
            for row in ds.iter_rows():
                idx = pickle.loads(row["idx"])
                out = pickle.loads(row["out"])
                for i, r in zip(idx, out):
                    done[i] = r
                start, run = nxt, []
                while nxt in done:
                    run.append(done.pop(nxt))
                    nxt += 1
                if run:
                    yield start, run
        except ray.exceptions.RayError as err:
            cause = getattr(err, "cause", None)
            if isinstance(cause, RagexamError):
                raise cause from None
            first = str(cause if cause is not None else err).strip().splitlines()
            raise RagexamError(f"a Ray worker of {getattr(factory, 'name', 'the batch job')!r} failed: "
                               f"{first[0] if first else type(err).__name__}. Every node needs the same ragexam "
                               "and model packages as the driver (docs/scale.md).") from err
        if nxt != n:  # pragma: no cover - Ray lost rows
            raise RagexamError(f"the Ray dataset returned {nxt} of {n} results; rerun (finished batches are cached).")

    def call_pool(self, fn: Callable[[Any], Any], *, concurrency: int, limit: Any = None) -> RayCallPool:
        return RayCallPool(fn, concurrency=concurrency, limit=limit, actors=self.workers)

    def close(self) -> None:
        if self._started:
            ray = _import_ray()
            if ray.is_initialized():
                ray.shutdown()
            self._started = False
