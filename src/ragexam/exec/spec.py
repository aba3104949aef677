"""The executor setting, parsed in one place: ``local``, ``ray`` or ``ray://HOST:PORT`` (or an executor object).

:func:`parse_executor` is the one reader of the grammar; :func:`ragexam.exec.get_executor` builds an executor
from what it returns, and a run's settings check calls it to validate ``executor`` before any work starts::

    parse_executor(None)                  # ExecutorSpec(kind='local', address=None)
    parse_executor(" Ray ")               # ExecutorSpec(kind='ray', address=None): $RAY_ADDRESS or a new runtime
    parse_executor("ray://head:10001")    # ExecutorSpec(kind='ray', address='ray://head:10001'): Ray Client
    parse_executor("ray://head")          # InputError: the port is missing (Ray Client listens on 10001)

:func:`split_host_port` reads the ``HOST:PORT`` part (also of ``$RAY_ADDRESS``, which may be a plain
``HOST:PORT`` of a cluster's GCS), IPv6 hosts in brackets (``[::1]:10001``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Tuple, Union

from ragexam.errors import InputError

__all__ = ["ExecutorSpec", "parse_executor", "split_host_port", "EXECUTOR_FORMS", "CLIENT_PORT"]

EXECUTOR_FORMS = "local (this machine, the default), ray (Ray on this machine or $RAY_ADDRESS), ray://HOST:PORT"
#: The port ``ray start --head`` gives Ray Client by default.
CLIENT_PORT = 10001


@dataclass(frozen=True)
class ExecutorSpec:
    """A parsed executor setting: ``kind`` ``"local"`` or ``"ray"``; ``address`` ``"ray://HOST:PORT"`` or
    ``None`` (for Ray: ``$RAY_ADDRESS``, else a new runtime on this machine)."""

    kind: str
    address: Optional[str] = None

    def __str__(self) -> str:
        return self.address or self.kind


def split_host_port(text: str, *, what: str, source: str = "executor") -> Tuple[str, int]:
    """``"HOST:PORT"`` (``"[v6]:PORT"``) -> ``(host, port)``; :class:`InputError` naming ``what`` otherwise."""
    fix = f"expected HOST:PORT, e.g. head-node:{CLIENT_PORT}"
    host, sep, port = text.rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if not sep or not host or any(c in host for c in " /?#@") or (":" in host and not text.startswith("[")):
        raise InputError(f"received {what} {text!r}; {fix}.", source=source, field="executor")
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise InputError(f"received {what} {text!r} whose port {port!r} is not a number from 1 to 65535; {fix} "
                         f"(Ray Client listens on {CLIENT_PORT} unless the head was started with "
                         "--ray-client-server-port).", source=source, field="executor")
    return host, int(port)


def parse_executor(value: Any, *, source: str = "executor") -> Union[ExecutorSpec, Any]:
    """An :class:`ExecutorSpec` from ``None``/``"local"``, ``"ray"`` or ``"ray://HOST:PORT"`` (case and
    surrounding spaces ignored); an :class:`~ragexam.exec.base.Executor` object is returned unchanged.
    Anything else is an :class:`InputError` naming ``source``, what was received and the forms accepted."""
    from ragexam.exec.base import Executor

    if isinstance(value, Executor):
        return value
    if value is None:
        return ExecutorSpec("local")
    if isinstance(value, str):
        text = value.strip()
        low = text.lower()
        if low in ("local", "ray"):
            return ExecutorSpec(low)
        if low.startswith("ray://"):
            rest = text[len("ray://"):].rstrip("/")
            if not rest:
                raise InputError(f"received {value!r} without HOST:PORT; expected ray://HOST:PORT, e.g. "
                                 f"ray://head-node:{CLIENT_PORT}.", source=source, field="executor")
            if ":" not in rest.lstrip("[").split("]")[-1]:
                raise InputError(f"received {value!r} without a port; expected ray://HOST:PORT (Ray Client "
                                 f"listens on {CLIENT_PORT}: ray://{rest}:{CLIENT_PORT}).", source=source,
                                 field="executor")
            host, port = split_host_port(rest, what="the address", source=source)
            shown = f"[{host}]" if ":" in host else host
            return ExecutorSpec("ray", f"ray://{shown}:{port}")
    raise InputError(f"received {value!r}; expected one of: {EXECUTOR_FORMS}.", source=source, field="executor")
