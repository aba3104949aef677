"""ragexam.exec: where work runs (this machine or a Ray cluster), and where the time goes.

::

    from ragexam.exec import get_executor

    with get_executor("local", workers=4) as ex:       # or "ray", "ray://head:10001"
        for start, tokens in ex.map_batches(factory, texts, batch_size=1024):
            ...

Modules: :mod:`~ragexam.exec.base` (the :class:`Executor` interface and the batch-worker
contract), :mod:`~ragexam.exec.local` (:class:`LocalExecutor`, the default),
:mod:`~ragexam.exec.ray_exec` (:class:`RayExecutor`, ``pip install 'ragexam[ray]'``),
:mod:`~ragexam.exec.calls` (call pools and the global :class:`RateLimit` for LLM requests),
:mod:`~ragexam.exec.timing` (seconds per stage of a run, and where the work ran),
:mod:`~ragexam.exec.spec` (the one reader of the executor setting).

This layer imports nothing of ragexam above ``errors``; the data, retrieval and analysis layers use it.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator, Optional

from ragexam._lazy import by_module, lazy_exports

_LAZY = by_module({
    ".base": "Executor default_workers", ".local": "LocalExecutor", ".ray_exec": "RayExecutor", ".calls": "RateLimit",
    ".timing": "stage record_stages", ".spec": "ExecutorSpec parse_executor EXECUTOR_FORMS",
})

__all__ = ["get_executor", "calls_executor", *_LAZY]


def get_executor(executor: Any = None, workers: Optional[int] = None):
    """An :class:`Executor` from ``None``/``"local"``, ``"ray"``, ``"ray://HOST:PORT"`` or an executor object.

    ``workers``: local threads/processes (default every core) or Ray actors (default the cluster's
    CPUs).  An executor object is returned unchanged (``workers`` must then be ``None``).  The setting is read
    by :func:`~ragexam.exec.spec.parse_executor` (an :class:`~ragexam.errors.InputError` for anything else);
    ``ray`` without the extra raises :class:`~ragexam.errors.MissingDependencyError`.
    """
    from ragexam.errors import InputError
    from ragexam.exec.base import Executor, check_workers
    from ragexam.exec.spec import parse_executor

    workers = check_workers(workers)
    spec = parse_executor(executor)
    if isinstance(spec, Executor):
        if workers is not None and workers != spec.workers:
            raise InputError(f"workers={workers} was given with an executor object that has {spec.workers}; "
                             "set the workers when you build the executor.", source="executor", field="workers")
        return spec
    if spec.kind == "local":
        from ragexam.exec.local import LocalExecutor

        return LocalExecutor(workers)
    from ragexam.exec.ray_exec import RayExecutor

    return RayExecutor(spec.address, workers=workers)


@contextmanager
def calls_executor(executor: Any = None) -> Iterator[Any]:
    """Where LLM calls run: ``None`` when ``executor`` is ``None`` (threads of this process, the callers'
    default), else :func:`get_executor`'s executor -- closed on exit when it was built here from a name."""
    if executor is None:
        yield None
        return
    from ragexam.exec.base import Executor

    ex = get_executor(executor)
    try:
        yield ex
    finally:
        if not isinstance(executor, Executor):
            ex.close()


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())
