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
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Tuple, Union

from ragexam.testing.stub import JSONEndpoint
from ragexam.types import JsonValue

if TYPE_CHECKING:
    from http.client import HTTPMessage

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


class RecordingProxy(JSONEndpoint):
    """Forward chat requests to ``target`` (a base URL ending in ``/v1``) and append each request and reply to
    ``path``.  ``timeout``: seconds per forwarded request (a slow local model needs many); ``port``: a fixed port
    (the judge's cache keys hold the endpoint, so a fixed port lets an interrupted recording resume)."""

    def __init__(self, target: str, path: Union[str, Path], *, timeout: float = 1800.0, port: int = 0) -> None:
        super().__init__(port)
        self.target = target.rstrip("/")
        self.path = Path(path)
        self.timeout = timeout
        self.recorded = 0

    def handle(self, path: str, body: JsonValue, headers: "HTTPMessage") -> Tuple[int, JsonValue]:
        import httpx

        if not isinstance(body, dict) or not path.endswith("/chat/completions"):
            return 404, {"error": {"message": f"no route {path} (only chat completions)"}}
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


class ReplayEndpoint(JSONEndpoint):
    """Serve recorded replies (see the module docstring): from ``records`` (``{"request", "response"}``
    dicts) or the files ``paths``."""

    def __init__(self, *paths: Union[str, Path], records: Iterable[Dict[str, Any]] = ()) -> None:
        super().__init__()
        self.replies: Dict[str, Dict[str, Any]] = {}
        for rec in list(records) + [r for p in paths for r in read_records(p)]:
            self.replies[request_id(rec["request"])] = rec["response"]
        self.served = 0
        self.missed: List[Dict[str, Any]] = []

    def handle(self, path: str, body: JsonValue, headers: "HTTPMessage") -> Tuple[int, JsonValue]:
        if not isinstance(body, dict) or not path.endswith("/chat/completions"):
            return 404, {"error": {"message": f"no route {path} (only chat completions)"}}
        reply = self.replies.get(request_id(body))
        with self.lock:
            if reply is None:
                self.missed.append(body)
                return 500, {"error": {"message": "no recorded reply for this request"}}
            self.served += 1
        return 200, reply
