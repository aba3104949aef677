"""On-disk cache of LLM results (judgments and generated answers), one SQLite file.

Layout::

    <cache_dir>/llm-cache.sqlite3          (+ -wal / -shm while in use)

    meta(key TEXT PRIMARY KEY, value TEXT)         schema version
    results(key TEXT PRIMARY KEY,                  sha256 hex of the request identity (below)
            kind TEXT,                             "judge" or "answer"
            model TEXT, endpoint TEXT,             for inspection (endpoint has no credentials)
            created TEXT,                          UTC ISO time
            value TEXT)                            the result as JSON

The key is ``sha256`` of the canonical JSON of everything that determines the result: the
kind, model, endpoint (base URL without user info, query or fragment), the full prompt
messages (which contain the inputs), the rubric name and hash, temperature, max_tokens,
seed and the repeat index (see :func:`request_key`).  The API key is never part of it and is
never written: values are redacted before they are stored.

Durability: each result is written in its own transaction (WAL journal) as soon as it is
known, so a run that is killed keeps every result it finished and the next run repeats
none of them.  Several processes may share the file.

Location: ``cache_dir`` if given, else ``$RAGEXAM_CACHE_DIR``, else ``$XDG_CACHE_HOME/ragexam``,
else ``~/.cache/ragexam`` (the same directory as the retrieval cache).
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Dict, Iterable, Optional

from ragexam.storage.paths import cache_dir
from ragexam.storage.sqlite import open_store
from ragexam.errors import InputError

__all__ = ["LLMCache", "default_cache_dir", "request_key", "CACHE_FILENAME", "public_endpoint"]

CACHE_FILENAME = "llm-cache.sqlite3"
SCHEMA_VERSION = "1"


default_cache_dir = cache_dir  # the one definition lives in ragexam.storage.paths


def public_endpoint(url: str) -> str:
    """``url`` without user info, query string or fragment: safe to log, store and hash."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path.rstrip("/"), "", ""))


def request_key(identity: Dict[str, Any]) -> str:
    """``sha256`` hex of the canonical JSON of ``identity`` (sorted keys, UTF-8)."""
    blob = json.dumps(identity, ensure_ascii=False, sort_keys=True, separators=(",", ":"),
                      allow_nan=False)
    return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()


class LLMCache:
    """The result cache in ``<directory>/llm-cache.sqlite3``; thread-safe, process-safe."""

    def __init__(self, directory: "str | os.PathLike[str] | None" = None) -> None:
        self.directory = Path(directory).expanduser() if directory is not None else default_cache_dir()
        self.path = self.directory / CACHE_FILENAME
        self._lock = threading.Lock()
        self._conn: Optional[sqlite3.Connection] = None

    def __repr__(self) -> str:
        return f"LLMCache({str(self.directory)!r})"

    def _connect(self) -> sqlite3.Connection:
        if self._conn is not None:
            return self._conn
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise InputError(f"cannot create the cache directory: {err.strerror or err}. Pass another "
                             "--cache-dir or set RAGEXAM_CACHE_DIR.", source=str(self.directory),
                             field="cache_dir") from None
        conn = open_store(
            self.path, schema_version=SCHEMA_VERSION,
            ddl=["CREATE TABLE IF NOT EXISTS results(key TEXT PRIMARY KEY, kind TEXT NOT NULL, "
                 "model TEXT NOT NULL, endpoint TEXT NOT NULL, created TEXT NOT NULL, "
                 "value TEXT NOT NULL) WITHOUT ROWID"],
            what="the LLM cache",
            if_corrupt="It is safe to delete this file; ragexam will call the model again.",
            if_other_schema="Delete the file or use another --cache-dir.")
        self._conn = conn
        return conn

    def get(self, key: str) -> Optional[Dict[str, Any]]:
        """The stored result for ``key``, or ``None``."""
        with self._lock:
            row = self._connect().execute("SELECT value FROM results WHERE key=?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def get_many(self, keys: Iterable[str]) -> Dict[str, Dict[str, Any]]:
        """``{key: result}`` for the keys that are stored."""
        keys = list(dict.fromkeys(keys))
        out: Dict[str, Dict[str, Any]] = {}
        with self._lock:
            conn = self._connect()
            for i in range(0, len(keys), 500):
                part = keys[i:i + 500]
                q = f"SELECT key, value FROM results WHERE key IN ({','.join('?' * len(part))})"
                for k, v in conn.execute(q, part):
                    out[k] = json.loads(v)
        return out

    def put(self, key: str, kind: str, model: str, endpoint: str, value: Dict[str, Any]) -> None:
        """Store one result in its own transaction (replacing an older one)."""
        blob = json.dumps(value, ensure_ascii=False, allow_nan=False)
        now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        with self._lock:
            conn = self._connect()
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.execute("INSERT OR REPLACE INTO results VALUES (?, ?, ?, ?, ?, ?)",
                             (key, kind, model, endpoint, now, blob))
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def __len__(self) -> int:
        with self._lock:
            return int(self._connect().execute("SELECT COUNT(*) FROM results").fetchone()[0])

    def close(self) -> None:
        """Close the connection (reopened on next use)."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __del__(self) -> None:  # pragma: no cover - best effort
        try:
            if self._conn is not None:
                self._conn.close()
        except Exception:
            pass
