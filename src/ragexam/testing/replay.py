"""Real replies, recorded once and replayed in CI: a recording proxy and a replaying endpoint on 127.0.0.1.

:class:`RecordingProxy` stands between ragexam and a real OpenAI-compatible endpoint: every
``POST /v1/chat/completions`` is forwarded as it is, and the request with the endpoint's reply -- token
log-probabilities included -- is appended to a JSON Lines file (gzip when it ends in ``.gz``).
:class:`ReplayEndpoint` serves such a file: a request gets the reply recorded for the same request (the body
without ``model``, compared as canonical JSON), so a test runs the judge end to end on a real model's replies
without the model.  A request that was never recorded gets HTTP 500 ``no recorded reply`` (the judge records it
as ``server_error``; a test asserts there is none) and is kept in ``missed``.

    ragexam judge-check ... --base-url http://127.0.0.1:PORT/v1   # with RecordingProxy(URL, "replies.jsonl.gz")

Only the chat path is recorded; keys never are (the ``Authorization`` header is not forwarded into the file).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import threading
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Union

from ragexam.testing.stub import LoopbackHTTPServer

__all__ = ["RecordingProxy", "ReplayEndpoint", "request_id", "read_records"]

_IGNORED = ("model", "stream")


def request_id(body: Dict[str, Any]) -> str:
    """The identity of a chat request for replay: SHA-256 of its canonical JSON without ``model``."""
    kept = {k: v for k, v in body.items() if k not in _IGNORED}
    blob = json.dumps(kept, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def _open(path: Path, mode: str):
    return gzip.open(path, mode + "t", encoding="utf-8") if path.suffix == ".gz" else open(path, mode, encoding="utf-8")


def read_records(path: Union[str, Path]) -> List[Dict[str, Any]]:
    """The ``{"request", "response"}`` records of a recording."""
    with _open(Path(path), "r") as fh:
        return [json.loads(line) for line in fh if line.strip()]


class _Server:
    def __init__(self, port: int = 0) -> None:
        self._httpd: Optional[LoopbackHTTPServer] = None
        self.base_url = ""
        self.port = port
        self.lock = threading.Lock()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def handle(self, body: Dict[str, Any], headers: Any) -> tuple:  # pragma: no cover - overridden
        raise NotImplementedError

    def start(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = None
                if not isinstance(body, dict) or not self.path.split("?")[0].endswith("/chat/completions"):
                    status, reply = 404, {"error": {"message": f"no route {self.path} (only chat completions)"}}
                else:
                    status, reply = server.handle(body, self.headers)
                data = json.dumps(reply, ensure_ascii=False).encode("utf-8")
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._httpd = LoopbackHTTPServer(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        self.base_url = f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None


class RecordingProxy(_Server):
    """Forward chat requests to ``target`` (a base URL ending in ``/v1``) and append each request and reply to
    ``path``.  ``timeout``: seconds per forwarded request (a slow local model needs many); ``port``: a fixed port
    (the judge's cache keys hold the endpoint, so a fixed port lets an interrupted recording resume)."""

    def __init__(self, target: str, path: Union[str, Path], *, timeout: float = 1800.0, port: int = 0) -> None:
        super().__init__(port)
        self.target = target.rstrip("/")
        self.path = Path(path)
        self.timeout = timeout
        self.recorded = 0

    def handle(self, body: Dict[str, Any], headers: Any) -> tuple:
        import httpx

        auth = headers.get("Authorization")
        resp = httpx.post(self.target + "/chat/completions", json=body, timeout=self.timeout,
                          headers={"Authorization": auth} if auth else {})
        try:
            reply = resp.json()
        except ValueError:
            reply = {"error": {"message": resp.text[:300]}}
        if resp.status_code == 200:
            record = {"request": body, "response": reply}
            with self.lock, _open(self.path, "a") as fh:
                fh.write(json.dumps(record, ensure_ascii=False) + "\n")
                self.recorded += 1
        return resp.status_code, reply


class ReplayEndpoint(_Server):
    """Serve recorded replies (see the module docstring): from ``records`` (``{"request", "response"}``
    dicts) or the files ``paths``."""

    def __init__(self, *paths: Union[str, Path], records: Iterable[Dict[str, Any]] = ()) -> None:
        super().__init__()
        self.replies: Dict[str, Dict[str, Any]] = {}
        for rec in list(records) + [r for p in paths for r in read_records(p)]:
            self.replies[request_id(rec["request"])] = rec["response"]
        self.served = 0
        self.missed: List[Dict[str, Any]] = []

    def handle(self, body: Dict[str, Any], headers: Any) -> tuple:
        reply = self.replies.get(request_id(body))
        with self.lock:
            if reply is None:
                self.missed.append(body)
                return 500, {"error": {"message": "no recorded reply for this request"}}
            self.served += 1
        return 200, reply
