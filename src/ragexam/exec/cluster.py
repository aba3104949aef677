"""A Ray cluster of several nodes on this machine, started as on real machines (``ray start``).

::

    from ragexam.exec.cluster import LocalCluster

    with LocalCluster(cpus=(1, 1)) as cluster:           # a head and one worker node, one CPU each
        env = cluster.env                                 # RAY_AUTH_MODE=token and the cluster's token
        # ragexam run ... --executor {cluster.client_address}   (with env)
        cluster.kill_node(1)                              # SIGKILL the worker node's processes

Each node is ``ray start --block`` in a process group of its own (the head with ``--head``, each worker with
``--address`` set to the address the head prints), so :meth:`LocalCluster.kill_node` and
:meth:`LocalCluster.stop` end exactly that node's processes and nothing else of the machine's (no
``ray stop``, which ends every Ray process of the user).  Token authentication is on (``RAY_AUTH_MODE=token``,
Ray 2.60's default for new clusters) with a fresh token given to every node and driver through
``RAY_AUTH_TOKEN``; every port is chosen free, so two clusters (or another Ray runtime) can share the machine.
Used by the two-node tests (``tests/test_exec_ray_cluster.py``) and ``benchmarks/bench_ray_cluster.py``.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from ragexam.errors import RagexamError

__all__ = ["LocalCluster"]

_ADDRESS_LINE = re.compile(r"ray start --address='([^']+)'")


def _free_ports(n: int) -> List[int]:
    socks, ports = [], []
    for _ in range(n):
        s = socket.socket()
        s.bind(("", 0))
        socks.append(s)
        ports.append(s.getsockname()[1])
    for s in socks:
        s.close()
    return ports


class _Node:
    """One ``ray start --block`` process group and the lines it printed."""

    def __init__(self, args: List[str], env: Dict[str, str], ready: str = "Ray runtime started") -> None:
        self.args = args
        self.ready = re.compile(ready)
        self.lines: List[str] = []
        self.started = threading.Event()
        self.proc = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                     start_new_session=True)
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip())
            if self.ready.search(line):
                self.started.set()
        self.started.set()  # the process ended: wait() sees it

    def wait(self, timeout: float) -> None:
        if not self.started.wait(timeout) or self.proc.poll() is not None:
            tail = "\n".join(self.lines[-15:])
            raise RagexamError(f"`{' '.join(self.args[:3])} ...` did not start a Ray node within {timeout:g} s:\n{tail}")

    def kill(self, sig: int = signal.SIGKILL) -> None:
        try:
            os.killpg(self.proc.pid, sig)
        except ProcessLookupError:
            pass

    def stop(self) -> None:
        self.kill(signal.SIGTERM)
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            pass
        self.kill(signal.SIGKILL)
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:  # pragma: no cover
            pass


class LocalCluster:
    """A head and ``len(cpus) - 1`` worker nodes on this machine (see the module docstring).

    :param cpus: CPUs each node offers (the head first).
    :param object_store_mb: object store size of each node.
    :param start_timeout: seconds to wait for each node to start.
    :param node_env: more environment variables of the nodes' processes (e.g. ``PYTHONPATH``).
    """

    def __init__(self, cpus: Sequence[int] = (1, 1), *, object_store_mb: int = 200, start_timeout: float = 120,
                 node_env: Optional[Dict[str, str]] = None) -> None:
        if len(cpus) < 1 or any(int(c) < 0 for c in cpus):
            raise ValueError(f"cpus must list the CPUs of each node (the head first), received {cpus!r}")
        self.cpus = [int(c) for c in cpus]
        self.object_store_mb = object_store_mb
        self.start_timeout = start_timeout
        self.token = secrets.token_hex(32)
        self.node_env = dict(node_env or {})
        self.nodes: List[_Node] = []
        self.address = ""          # the head's GCS address, HOST:PORT (what `ray start --address` takes)
        self.client_address = ""   # ray://HOST:PORT (Ray Client)
        self._tmp: Optional[str] = None

    @property
    def env(self) -> Dict[str, str]:
        """This process's environment plus the cluster's token authentication (give it to drivers)."""
        return {**os.environ, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": self.token}

    def _ray(self) -> str:
        script = Path(sys.executable).with_name("ray")
        return str(script) if script.exists() else (shutil.which("ray") or "ray")

    def _common(self, node: int) -> List[str]:
        agent, = _free_ports(1)
        return ["--block", f"--num-cpus={self.cpus[node]}", f"--object-store-memory={self.object_store_mb << 20}",
                "--disable-usage-stats", f"--dashboard-agent-listen-port={agent}", f"--temp-dir={self._tmp}"]

    def start(self) -> "LocalCluster":
        # a short folder: Ray's socket paths live under it (a Unix socket path has at most 107 bytes)
        self._tmp = tempfile.mkdtemp(prefix="rx-", dir="/tmp" if os.path.isdir("/tmp") else None)
        gcs, client, dash = _free_ports(3)
        try:
            head = _Node([self._ray(), "start", "--head", f"--port={gcs}", f"--ray-client-server-port={client}",
                          "--include-dashboard=false", f"--dashboard-port={dash}", *self._common(0)],
                         {**self.env, **self.node_env}, ready=_ADDRESS_LINE.pattern)
            self.nodes.append(head)
            head.wait(self.start_timeout)
            self.address = next(m.group(1) for line in head.lines for m in [_ADDRESS_LINE.search(line)] if m)
            host = self.address.rsplit(":", 1)[0]
            self.client_address = f"ray://{host}:{client}"
            for i in range(1, len(self.cpus)):
                node = _Node([self._ray(), "start", f"--address={self.address}", *self._common(i)],
                             {**self.env, **self.node_env})
                self.nodes.append(node)
                node.wait(self.start_timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def log_tail(self, pattern: str = "ray_client_server*.err", lines: int = 30) -> str:
        """The last ``lines`` lines of each of the cluster's log files matching ``pattern`` (the head's Ray Client
        server logs by default: what a failed ``ray://`` connection tells only there), each under its name."""
        if not self._tmp:
            return ""
        out = []
        for path in sorted(Path(self._tmp).glob(f"session_*/logs/{pattern}")):
            if path.parent.parent.is_symlink():  # session_latest points at the session itself
                continue
            text = path.read_text(encoding="utf-8", errors="replace").splitlines()
            out.append(f"== {path.name} ==\n" + "\n".join(text[-lines:]))
        return "\n".join(out)

    def kill_node(self, index: int) -> None:
        """SIGKILL every process of node ``index`` (0 is the head) at once, as a machine that fails."""
        self.nodes[index].kill(signal.SIGKILL)

    def stop(self) -> None:
        for node in reversed(self.nodes):
            node.stop()
        self.nodes = []
        if self._tmp:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    def __enter__(self) -> "LocalCluster":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
