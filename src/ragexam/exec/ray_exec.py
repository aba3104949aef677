"""The Ray executor: batches on a pool of Ray actors, LLM calls on async actors (``ragexam[ray]``).

::

    ragexam run ... --executor ray                   # a Ray runtime on this machine (or $RAY_ADDRESS)
    ragexam run ... --executor ray://head:10001      # a remote cluster through Ray Client

What runs where
---------------
* **Batches** (tokenizing, embedding): a pool of actors, spread over the cluster's nodes (Ray's ``SPREAD``
  scheduling), each building its worker once from the factory (so a model is loaded once per actor).  A
  factory that asks for GPUs (``factory.gpus``) gets ``num_gpus`` per actor when the cluster has GPUs, and
  the pool has one actor per GPU; otherwise one actor per CPU (``workers``), each told to use one thread.
  The driver hands each actor at most two batches at a time, as actors free up, and yields the results
  in input order; the caller writes them to its cache on the driver, under the same content keys a local
  run uses, so a cluster run fills the cache a local run reads.  The pool is kept while the same factory
  is used again (tokenizing the chunks, then the questions) and replaced for another.
* **Calls** (LLM requests): async actors, pinned round robin to the live nodes, each run up to ``concurrency / actors``
  calls in threads; every call first asks one named limiter actor (``ragexam-limit:<name>``, shared by the
  whole cluster) for a slot, so the rate limit is global (:mod:`ragexam.exec.calls` has the rule).

Where the work ran: every batch and call is counted per node and stage in the open
:class:`~ragexam.exec.timing.StageTimes` (``summary.json``'s ``timing.placement``).

A node lost mid-run: the batches its actors held run again on the surviving actors (counted in
``retried_batches``; the dead workers counted per node in ``lost_workers``), so the results are the same; when no actor
survives the run stops with an error naming the lost nodes (finished batches are already cached).  A call
whose actor died is sent again to a live call actor (an LLM call in flight on a lost node may thus be made
twice; its result is cached once).  A worker that
cannot start (ragexam or a model package missing on a node) stops the run with the node's error.

Lifecycle: if Ray is already initialized in this process it is used as it is (and left running);
otherwise :class:`RayExecutor` checks that the address answers (a TCP connection within
``CONNECT_TIMEOUT`` seconds, naming the address when it does not) and calls ``ray.init(address=...)``
(``None``: ``$RAY_ADDRESS`` or a new local runtime) without the dashboard, with Ray's own log lines at
warning level and without the workers' output (their errors reach the driver as exceptions); :meth:`RayExecutor.close` shuts down what it started.  Every node needs the same Python, Ray
and ragexam (and model packages) as the driver.
"""

from __future__ import annotations

import math
import os
from collections import Counter, deque
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ragexam.errors import InputError, MissingDependencyError, RagexamError
from ragexam.exec.base import (Batches, Executor, WorkerFactory, check_batch, check_batch_size, check_mode,
                               check_workers, with_threads)

__all__ = ["RayExecutor", "CONNECT_TIMEOUT"]

#: Seconds to wait for the Ray address to accept a TCP connection before ``ray.init`` is tried.
CONNECT_TIMEOUT = 10.0
#: Batches handed to one actor at a time (one running, one queued behind it).
_IN_FLIGHT = 2
_FIX = ("Fix: start the cluster (ray start --head) or correct the address (ray://HOST:10001 for Ray Client, "
        "HOST:6379 for the head's GCS in $RAY_ADDRESS), or unset RAY_ADDRESS to start Ray on this machine.")


def _import_ray():
    try:
        import ray
    except ImportError:
        raise MissingDependencyError("The Ray executor (--executor ray)", "ray", "ray[client]") from None
    return ray


#: a Ray Client server that could not start the per-connection server in time: the next connection usually can
_CLIENT_START_FAILED = "Starting Ray client server failed"
#: seconds to wait before each new attempt when a Ray Client server failed to start (then the error is reported)
CLIENT_START_RETRIES = (2.0, 5.0)


def _init_with_retries(ray: Any, target: Optional[str], kwargs: Dict[str, Any]) -> None:
    """``ray.init(address=target, **kwargs)``; when a ``ray://`` server reports that it could not start its client
    server (a transient failure on a busy head node), try again after each wait of :data:`CLIENT_START_RETRIES`.
    Any other error, or the same one after the last wait, propagates."""
    import time

    for wait in (*CLIENT_START_RETRIES, None):
        try:
            ray.init(address=target, **kwargs)
            return
        except (RuntimeError, ConnectionError) as err:  # Ray Client: ConnectionAbortedError with the server's trace
            if wait is None or not (target or "").startswith("ray://") or _CLIENT_START_FAILED not in str(err):
                raise
            if ray.is_initialized():  # pragma: no cover - a half-made connection: start clean
                ray.shutdown()
            time.sleep(wait)


def _target(address: Optional[str]) -> Tuple[Optional[str], str]:
    """``(address for ray.init, how messages name it)``: ``address``, else ``$RAY_ADDRESS``, else ``None``
    (a new runtime on this machine); a ``HOST:PORT`` or ``ray://HOST:PORT`` is checked to answer first."""
    from ragexam.exec.spec import split_host_port

    named = address
    if address is None:
        env = os.environ.get("RAY_ADDRESS", "").strip()
        if not env:
            return None, "this machine"
        address, named = env, f"RAY_ADDRESS={env}"
    if address.lower() in ("auto", "local"):
        return address, named
    rest = address[len("ray://"):] if address.lower().startswith("ray://") else address
    host, port = split_host_port(rest.rstrip("/"), what=named, source="--executor")
    _probe(host, port, named)
    return address, named


def _probe(host: str, port: int, named: str, timeout: float = CONNECT_TIMEOUT) -> None:
    """A TCP connection to ``host:port`` within ``timeout`` seconds, else an :class:`InputError` naming ``named``
    (Ray itself retries an unreachable address for minutes)."""
    import socket

    try:
        socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as err:
        raise InputError(f"cannot reach Ray at {named}: the host {host!r} does not resolve ({err.strerror or err}). "
                         + _FIX, source="--executor", field="executor") from None
    try:
        with socket.create_connection((host, port), timeout=timeout):
            pass
    except OSError as err:
        why = "no answer" if isinstance(err, socket.timeout) else (err.strerror or str(err))
        raise InputError(f"cannot reach Ray at {named}: {why} within {timeout:g} s. " + _FIX, source="--executor",
                         field="executor") from None


def _node_info() -> Dict[str, str]:
    """Where the calling Ray worker runs: node id (12 hex digits), IP address, host name (``(head)`` appended on
    the head node), process id."""
    import socket

    import ray

    node = ray.get_runtime_context().get_node_id()
    head = any(n["NodeID"] == node and "node:__internal_head__" in n.get("Resources", {}) for n in ray.nodes())
    return {"node": node[:12], "address": ray.util.get_node_ip_address(),
            "host": socket.gethostname() + (" (head)" if head else ""), "pid": str(os.getpid())}


def _server_errors_only(record: Any) -> bool:
    return record.levelno >= 40  # logging.ERROR


def _quiet_client_and_read_auth_env() -> None:
    """Before ``ray.init``: Ray Client prints the warnings of its server-side session on this terminal (e.g.
    "SIGTERM handler is not set ..."): keep its errors only; and Ray reads ``RAY_AUTH_MODE``/``RAY_AUTH_TOKEN``
    when it is imported, so a token set after ``import ray`` would not be sent: read the environment again."""
    import logging

    log = logging.getLogger("ray.util.client.logsclient")
    if _server_errors_only not in log.filters:
        log.addFilter(_server_errors_only)
    try:
        from ray._raylet import Config

        Config.initialize("")
    except Exception:  # pragma: no cover - a Ray without this (private) hook reads the environment itself
        pass


class _BatchActor:
    """One pool actor: builds its worker once, then runs it on each batch it is handed."""

    def __init__(self, factory: WorkerFactory) -> None:
        self.worker = factory()
        self.where = getattr(factory, "name", type(factory).__name__)

    def node(self) -> Dict[str, str]:
        return _node_info()

    def run(self, items: list) -> Any:
        out = self.worker(items)
        check_batch(out, len(items), self.where)
        return out


def _first_line(err: BaseException) -> str:
    cause = getattr(err, "cause", None)
    lines = [ln.strip() for ln in str(cause if cause is not None else err).splitlines() if ln.strip()]
    useful = [ln for ln in lines if not ln.startswith(("Traceback", "File ", "ray::", "^"))]
    return (useful[-1] if useful else lines[0] if lines else type(err).__name__)[:500]


class _ActorPool:
    """The batch actors of one factory (see the module docstring); :meth:`run` yields ``(start, results)``."""

    def __init__(self, ray: Any, factory: WorkerFactory, size: int, remote: Dict[str, Any]) -> None:
        self.ray = ray
        self.where = getattr(factory, "name", type(factory).__name__)
        cls = ray.remote(max_restarts=0, max_task_retries=0, **remote)(_BatchActor)
        self.actors = [cls.options(scheduling_strategy="SPREAD").remote(factory) for _ in range(size)]
        self.starting = {a.node.remote(): a for a in self.actors}
        self.nodes: Dict[Any, Dict[str, str]] = {}
        self.dead: List[Any] = []

    def _ready(self) -> List[Any]:
        return [a for a in self.actors if a in self.nodes and a not in self.dead]

    def _started(self, ref: Any, times: Any) -> None:
        actor = self.starting.pop(ref)
        try:
            self.nodes[actor] = self.ray.get(ref)
        except self.ray.exceptions.RayActorError as err:
            self._died(actor, err, times)

    def _died(self, actor: Any, err: BaseException, times: Any) -> None:
        if getattr(err, "actor_init_failed", False):
            raise RagexamError(f"a Ray worker of {self.where!r} could not start: {_first_line(err)}. Every node needs "
                               "the same Python, Ray, ragexam and model packages as the driver (docs/scale.md).") from None
        if actor not in self.dead:
            self.dead.append(actor)
            try:
                self.ray.kill(actor, no_restart=True)
            except Exception:  # pragma: no cover - already gone with its node
                pass
            if times is not None:
                times.lost(self.nodes.get(actor, {}).get("node", "?"), workers=1)

    def run(self, items: list, batch_size: int, times: Any) -> Batches:
        ray = self.ray
        n = len(items)
        todo = deque(range(0, n, batch_size))
        inflight: Dict[Any, Tuple[Any, int]] = {}
        load: Counter = Counter()
        done: Dict[int, Any] = {}
        ran: Dict[Any, Counter] = {}
        nxt = 0
        while nxt < n:
            for actor in self._ready():
                while todo and load[actor] < _IN_FLIGHT:
                    s = todo.popleft()
                    inflight[actor.run.remote(items[s:s + batch_size])] = (actor, s)
                    load[actor] += 1
            waiting = list(inflight) + list(self.starting)
            if not waiting:
                lost = sorted({self.nodes.get(a, {}).get("node", "?") for a in self.dead})
                raise RagexamError(f"every Ray worker of {self.where!r} died (on node(s) {', '.join(lost) or '?'}); "
                                   f"{nxt} of {n} items had finished (the caller caches finished batches). Rerun "
                                   "when the cluster is healthy.")
            ref = ray.wait(waiting, num_returns=1)[0][0]
            if ref in self.starting:
                self._started(ref, times)
                continue
            actor, s = inflight.pop(ref)
            load[actor] -= 1
            try:
                out = ray.get(ref)
            except ray.exceptions.RayActorError as err:
                self._died(actor, err, times)
                todo.appendleft(s)
                if times is not None:
                    times.lost(self.nodes.get(actor, {}).get("node", "?"), retried_batches=1)
                continue
            except ray.exceptions.RayError as err:
                cause = getattr(err, "cause", None)
                if isinstance(cause, RagexamError):
                    raise cause from None
                raise RagexamError(f"a Ray worker of {self.where!r} failed: {_first_line(err)}. Every node needs the "
                                   "same ragexam and model packages as the driver (docs/scale.md).") from err
            ran.setdefault(actor, Counter()).update(batches=1, items=len(out))
            done[s] = out
            while nxt in done:
                part = done.pop(nxt)
                yield nxt, part
                nxt += len(part)
        if times is not None:
            for actor, c in ran.items():
                info = self.nodes[actor]
                times.place(info["node"], address=info["address"], host=info["host"], actors=1, **c)

    def close(self) -> None:
        for a in self.actors:
            try:
                self.ray.kill(a, no_restart=True)
            except Exception:  # pragma: no cover - the actor or its node is already gone
                pass
        self.actors = []


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

    async def node(self) -> Dict[str, str]:
        return _node_info()

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
    """Calls on ``actors`` async actors (see the module docstring); ``submit(arg)`` returns a Future.

    The actors are pinned round robin to the live nodes (Ray's ``SPREAD`` does not spread actors that ask for
    no CPU).  A call whose actor died (its node lost) is sent again to a live actor; when none is left the call
    fails with a :class:`~ragexam.errors.RagexamError`.  The calls that finished on each node are counted in
    the :class:`~ragexam.exec.timing.StageTimes` open when the pool was made (under its current stage, else
    ``calls``) when the pool closes."""

    def __init__(self, fn: Callable[[Any], Any], *, concurrency: int, limit: Any, actors: int) -> None:
        import threading

        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        from ragexam.exec.calls import _check_concurrency
        from ragexam.exec.timing import current_stages

        ray = self._ray = _import_ray()
        self.concurrency = _check_concurrency(concurrency)
        n = max(1, min(actors, self.concurrency))
        per_actor = math.ceil(self.concurrency / n)
        limiter = None
        if limit is not None:
            limiter = ray.remote(num_cpus=0, max_concurrency=10_000, max_restarts=-1)(_LimiterActor).options(
                name=f"ragexam-limit:{limit.name}", namespace="ragexam", get_if_exists=True,
                lifetime=None).remote(limit.per_second, limit.concurrency)
        nodes = sorted((nd for nd in ray.nodes() if nd.get("Alive")), key=lambda nd: nd["NodeID"])
        self._nodes = [{"node": nd["NodeID"][:12], "address": nd.get("NodeManagerAddress", ""),
                        "host": nd.get("NodeManagerHostname", "") + (
                            " (head)" if "node:__internal_head__" in nd.get("Resources", {}) else "")}
                       for nd in nodes]
        cls = ray.remote(num_cpus=0, max_concurrency=per_actor, max_restarts=0, max_task_retries=0)(_CallActor)
        self._actors = [cls.options(scheduling_strategy=NodeAffinitySchedulingStrategy(
            nodes[i % len(nodes)]["NodeID"], soft=False) if nodes else "SPREAD").remote(fn, limiter, per_actor)
            for i in range(n)]
        self._calls: Counter = Counter()
        self._dead: set = set()
        self._lock = threading.Lock()
        self._times = current_stages()
        self._stage = (self._times.current if self._times is not None else None) or "calls"
        self._limiter = limiter
        self._next = 0

    def _where(self, i: int) -> Dict[str, str]:
        return self._nodes[i % len(self._nodes)] if self._nodes else {"node": "?", "address": "", "host": ""}

    def submit(self, arg: Any):
        from concurrent.futures import Future

        out: Future = Future()
        self._send(arg, out)
        return out

    def _send(self, arg: Any, out: Any) -> None:
        with self._lock:
            live = [i for i in range(len(self._actors)) if i not in self._dead]
            if not live:
                lost = sorted({self._where(i)["node"] for i in self._dead})
                out.set_exception(RagexamError(f"every Ray call actor died (on node(s) {', '.join(lost) or '?'}); "
                                               "rerun when the cluster is healthy (finished calls are cached)."))
                return
            i = live[self._next % len(live)]
            self._next += 1
            actor = self._actors[i]
        actor.call.remote(arg).future().add_done_callback(lambda f: self._finished(f, i, arg, out))

    def _finished(self, fut: Any, i: int, arg: Any, out: Any) -> None:
        try:
            result = fut.result()
        except self._ray.exceptions.RayActorError:
            with self._lock:
                first = i not in self._dead
                self._dead.add(i)
            if first and self._times is not None:
                self._times.lost(self._where(i)["node"], workers=1)
            self._send(arg, out)  # again, on a live actor
            return
        except BaseException as err:  # the call's own error, for the caller
            out.set_exception(err)
            return
        with self._lock:
            self._calls[i] += 1
        out.set_result(result)

    def map(self, args):
        pending: deque = deque()
        for arg in args:
            pending.append(self.submit(arg))
            while len(pending) >= 2 * self.concurrency:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()

    def placement(self) -> List[Dict[str, Any]]:
        """Per actor that finished calls: ``{"node", "address", "host", "calls"}``."""
        with self._lock:
            return [{**self._where(i), "calls": c} for i, c in sorted(self._calls.items()) if c]

    def close(self, cancel: bool = False) -> None:
        if self._actors and self._times is not None:
            for p in self.placement():
                self._times.place(p["node"], stage=self._stage, address=p["address"], host=p["host"], actors=1,
                                  calls=p["calls"])
        for a in self._actors:
            try:
                self._ray.kill(a, no_restart=True)
            except Exception:  # pragma: no cover - gone with its node
                pass
        self._actors = []

    def __enter__(self) -> "RayCallPool":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close(cancel=exc[0] is not None)


class RayExecutor(Executor):
    """Runs batch workers on a pool of Ray actors and calls on async actors (module docstring).

    :param address: ``None`` (``$RAY_ADDRESS``, else a new local Ray runtime), ``"auto"`` (a running
        local cluster) or ``"ray://HOST:PORT"`` (Ray Client).  An address that does not accept a
        connection within :data:`CONNECT_TIMEOUT` seconds is an :class:`~ragexam.errors.InputError` naming it.
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
        self._pool: Optional[Tuple[bytes, _ActorPool]] = None
        if not ray.is_initialized():
            target, named = _target(address)
            _quiet_client_and_read_auth_env()
            kwargs = {"include_dashboard": False, "logging_level": "warning", "log_to_driver": False,
                      **(init_kwargs or {})}
            try:
                _init_with_retries(ray, target, kwargs)
            except ValueError as err:
                if "ray[client]" in str(err):
                    raise MissingDependencyError("Ray Client (--executor ray://HOST:PORT)", "ray",
                                                 "ray[client]") from None
                raise self._unreachable(named, err) from None
            except (ConnectionError, RuntimeError, ray.exceptions.RayError) as err:
                raise self._unreachable(named, err) from None
            self._started = True

    @staticmethod
    def _unreachable(named: str, err: BaseException) -> InputError:
        auth = ""
        if "auth" in str(err).lower() or "token" in str(err).lower():
            auth = (" A cluster started with RAY_AUTH_MODE=token needs the same RAY_AUTH_MODE=token and its token "
                    "(RAY_AUTH_TOKEN, or ~/.ray/auth_token from `ray get-auth-token`) here.")
        return InputError(f"cannot start or reach Ray at {named}: {_first_line(err).rstrip('.')}.{auth} Check the address "
                          "(ray://HOST:10001 for Ray Client) and that the cluster runs the same Ray and Python "
                          "versions.", source="--executor", field="executor")

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

    @property
    def nodes(self) -> int:
        """Nodes of the cluster that are alive."""
        return sum(1 for n in _import_ray().nodes() if n.get("Alive"))

    def describe(self) -> dict:
        """``{"executor": "ray", "workers", "gpus", "nodes"}`` (where each piece of work ran is in the
        run's ``timing.placement``)."""
        return {"executor": "ray", "workers": self.workers, "gpus": self.gpus, "nodes": self.nodes}

    def _actor_pool(self, factory: WorkerFactory, size: int, remote: Dict[str, Any]) -> _ActorPool:
        """The pool of ``factory``'s actors: kept while the same factory (equal pickled bytes) comes back, else
        the old pool is released (its CPUs) and a new one started."""
        import pickle

        key = pickle.dumps((factory, size, sorted(remote.items())))
        if self._pool is not None and self._pool[0] == key and len(self._pool[1]._ready()) + len(
                self._pool[1].starting):
            return self._pool[1]
        self._release_pool()
        pool = _ActorPool(_import_ray(), factory, size, remote)
        self._pool = (key, pool)
        return pool

    def _release_pool(self) -> None:
        if self._pool is not None:
            self._pool[1].close()
            self._pool = None

    def map_batches(self, factory: WorkerFactory, items: Sequence[str], *, batch_size: int,
                    mode: str = "inline") -> Batches:
        from ragexam.exec.timing import current_stages

        check_mode(mode)
        check_batch_size(batch_size)
        items = items if isinstance(items, list) else list(items)
        if not items:
            return
        n_batches = math.ceil(len(items) / batch_size)
        want_gpus = float(getattr(factory, "gpus", 0) or 0)
        gpus = self.gpus if want_gpus else 0
        if gpus:
            size, remote = max(1, min(gpus, n_batches)), {"num_gpus": want_gpus, "num_cpus": 1}
        else:
            size, remote = max(1, min(self.workers, n_batches)), {"num_cpus": 1}
            factory = with_threads(factory, 1)
        pool = self._actor_pool(factory, size, remote)
        yield from pool.run(items, batch_size, current_stages())

    def call_pool(self, fn: Callable[[Any], Any], *, concurrency: int, limit: Any = None) -> RayCallPool:
        return RayCallPool(fn, concurrency=concurrency, limit=limit, actors=self.workers)

    def close(self) -> None:
        ray = _import_ray()
        if ray.is_initialized():
            self._release_pool()
        if self._started:
            if ray.is_initialized():
                ray.shutdown()
            self._started = False
