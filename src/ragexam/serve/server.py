"""Running the application: the listening socket (checked before anything else), uvicorn, the browser.

:func:`serve` blocks until Ctrl+C (the command line); :func:`start` runs the server in a thread and returns
a :class:`Running` handle (tests, notebooks).
"""

from __future__ import annotations

import socket
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Optional

from ragexam.errors import InputError
from ragexam.serve.security import ServeOptions

__all__ = ["bind", "serve", "start", "Running", "url_of", "browser_address"]


def bind(options: ServeOptions) -> socket.socket:
    """The listening socket for ``options`` (port 0: a free port; the port bound is kept in
    ``options.bound_port``: the access cookie is named after it); an :class:`InputError` naming ``--port`` or
    ``--host`` when it cannot be had."""
    try:
        infos = socket.getaddrinfo(options.host, options.port, type=socket.SOCK_STREAM)
    except socket.gaierror as err:
        raise InputError(f"cannot resolve {options.host!r}: {err.strerror}; expected an address such as 127.0.0.1",
                         source="--host", field="host") from None
    family, _, _, _, address = infos[0]
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
        sock.listen(128)
    except OSError as err:
        sock.close()
        raise InputError(f"cannot listen on {options.host}:{options.port}: {err.strerror}; pass another --port "
                         "(0 picks a free one)", source="--port", field="port") from None
    sock.set_inheritable(True)
    options.bound_port = sock.getsockname()[1]
    return sock


def url_of(options: ServeOptions, sock: socket.socket) -> str:
    port = sock.getsockname()[1]
    host = options.host if options.host not in ("0.0.0.0", "::", "") else socket.gethostname()
    return f"http://{'[' + host + ']' if ':' in host else host}:{port}/"


def browser_address(url: str, options: ServeOptions) -> str:
    """The address the browser is opened at: ``url``, with a one-time sign-in code when a token is needed (never
    the token itself: a browser's command line is in the process list, its address in the browser's history)."""
    return url + (f"?login={options.sign_in_code()}" if options.token else "")


def _server(app: Any, sock: socket.socket) -> Any:
    import uvicorn

    config = uvicorn.Config(app, log_level="warning", access_log=False, server_header=False, proxy_headers=False,
                            lifespan="off", timeout_graceful_shutdown=2)
    return uvicorn.Server(config)


def serve(app: Any, options: ServeOptions, sock: socket.socket, *, open_browser: bool = False,
          announce: Optional[Callable[[str], None]] = None) -> None:
    """Serve ``app`` on ``sock`` until interrupted; ``announce(url)`` once it listens."""
    server = _server(app, sock)
    url = url_of(options, sock)

    def when_up() -> None:
        while not server.started and not server.should_exit:
            time.sleep(0.05)
        if server.started:
            if announce is not None:
                announce(url)
            if open_browser:
                import webbrowser

                webbrowser.open(browser_address(url, options))

    threading.Thread(target=when_up, daemon=True).start()
    server.run(sockets=[sock])


@dataclass
class Running:
    """A server running in a thread: its ``url``; :meth:`stop` ends it."""

    url: str
    server: Any
    thread: threading.Thread

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)


def start(app: Any, options: ServeOptions, timeout: float = 20.0) -> Running:
    """Serve ``app`` in a thread (see :func:`serve`); returns once it listens."""
    sock = bind(options)
    server = _server(app, sock)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            server.should_exit = True
            raise RuntimeError(f"the server did not start within {timeout:g} s")
        time.sleep(0.02)
    return Running(url_of(options, sock), server, thread)
