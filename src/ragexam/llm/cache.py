"""On-disk cache of LLM results (judgments, generated answers, ...), one SQLite file, with the
claims that keep two processes from paying for the same call at the same time.

Layout::

    <cache_dir>/llm-cache.sqlite3          (+ -wal / -shm while in use)

    meta(key TEXT PRIMARY KEY, value TEXT)         schema version
    results(key TEXT PRIMARY KEY,                  sha256 hex of the request identity (below)
            kind TEXT,                             "judge", "answer", ...
            model TEXT, endpoint TEXT,             for inspection (endpoint has no credentials)
            created TEXT,                          UTC ISO time, microseconds
            value TEXT)                            the result as JSON (redacted)
    claims(key TEXT PRIMARY KEY,                   a call in flight
           owner TEXT, pid INTEGER, host TEXT,     who makes it (owner: one id per batch run)
           started REAL)                           when (Unix time)

Cache key
---------
``sha256`` of the canonical JSON (sorted keys, UTF-8, no NaN) of everything that determines
the result (:func:`request_key`): a format tag, the kind, model, endpoint (base URL without user
info, query or fragment), the full prompt messages (which contain the inputs) and every sampling
setting (temperature, max_tokens, seed), plus the task's own parts (the judge adds the rubric
name and hash and the repeat index).  The API key is never part of it and is never written:
values are redacted before they are stored.

Durability
----------
Each result is written in its own transaction (WAL journal) as soon as it is known, so a run
that is killed keeps every result it finished and the next run repeats none of them.

In-flight de-duplication (claims)
---------------------------------
Before a call is made its key is *claimed* in the same transaction that checks for a result
(:meth:`LLMCache.claim`); the result is stored and the claim removed in one transaction
(:meth:`LLMCache.put`).  A key claimed by someone else is *busy* while its owner is alive: on
this host, the owner's process exists; on another host (a shared folder), the claim is younger
than ``stale_after`` seconds.  A claim older than ``stale_after``, or whose owner process is gone
(killed), is stale and is taken over.  The waiting side is :func:`ragexam.llm.batch.run_calls`.

Location: ``cache_dir`` if given, else :func:`ragexam.storage.paths.cache_dir`
(``$RAGEXAM_CACHE_DIR`` > ``$XDG_CACHE_HOME/ragexam`` > ``~/.cache/ragexam``).
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence

from ragexam.storage.paths import cache_dir as default_cache_dir
from ragexam.storage.atomic import pid_alive
from ragexam.storage.sqlite import SQLiteStore

__all__ = ["LLMCache", "ClaimResult", "request_key", "CACHE_FILENAME", "default_cache_dir", "utc_now"]

CACHE_FILENAME = "llm-cache.sqlite3"
SCHEMA_VERSION = "1"
_HOST = socket.gethostname()


def utc_now() -> str:
    """UTC time as stored in ``results.created`` (``2026-01-31T12:00:00.123456Z``)."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def request_key(identity: Dict[str, Any]) -> str:
    """``sha256`` hex of the canonical JSON of ``identity`` (sorted keys, UTF-8)."""
    blob = json.dumps(identity, ensure_ascii=False, sort_keys=True, separators=(",", ":"),
                      allow_nan=False)
    return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass
class ClaimResult:
    """The outcome of :meth:`LLMCache.claim` for each key asked about: ``done`` (a usable result
    is stored: key -> value), ``mine`` (claimed for the caller: make the call), ``busy`` (a live
    owner is making it: key -> that owner's ``started`` time), ``later`` (free, but over the
    caller's ``limit``: not claimed); ``taken`` lists the keys of ``mine`` that a live owner had claimed
    longer than ``stale_after`` ago, or that were forced: calls taken over from another process (a dead
    owner's claim is not counted)."""

    done: Dict[str, Dict[str, Any]] = field(default_factory=dict)
    mine: List[str] = field(default_factory=list)
    busy: Dict[str, float] = field(default_factory=dict)
    later: List[str] = field(default_factory=list)
    taken: List[str] = field(default_factory=list)


class LLMCache(SQLiteStore):
    """The result cache in ``<directory>/llm-cache.sqlite3``; thread-safe, process-safe."""

    FILENAME = CACHE_FILENAME
    SCHEMA_VERSION = SCHEMA_VERSION
    DDL = ("CREATE TABLE IF NOT EXISTS results(key TEXT PRIMARY KEY, kind TEXT NOT NULL, "
           "model TEXT NOT NULL, endpoint TEXT NOT NULL, created TEXT NOT NULL, "
           "value TEXT NOT NULL) WITHOUT ROWID",
           "CREATE TABLE IF NOT EXISTS claims(key TEXT PRIMARY KEY, owner TEXT NOT NULL, "
           "pid INTEGER NOT NULL, host TEXT NOT NULL, started REAL NOT NULL) WITHOUT ROWID")
    WHAT = "the LLM cache"
    IF_CORRUPT = "It is safe to delete this file; ragexam will call the model again."
    IF_OTHER_SCHEMA = "Delete the file or use another --cache-dir."
    IF_NO_DIRECTORY = "Pass another --cache-dir or set RAGEXAM_CACHE_DIR."

    def __init__(self, directory: "str | os.PathLike[str] | None" = None) -> None:
        super().__init__(directory if directory is not None else default_cache_dir())

    # -- results ---------------------------------------------------------------------------------
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

    def put(self, key: str, kind: str, model: str, endpoint: str, value: Dict[str, Any], *,
            owner: Optional[str] = None) -> None:
        """Store one result in its own transaction (replacing an older one); with ``owner``, that
        owner's claim of ``key`` is released in the same transaction."""
        blob = json.dumps(value, ensure_ascii=False, allow_nan=False)
        with self._transaction() as conn:
            conn.execute("INSERT OR REPLACE INTO results VALUES (?, ?, ?, ?, ?, ?)",
                         (key, kind, model, endpoint, utc_now(), blob))
            if owner is not None:
                conn.execute("DELETE FROM claims WHERE key=? AND owner=?", (key, owner))

    def __len__(self) -> int:
        with self._lock:
            return int(self._connect().execute("SELECT COUNT(*) FROM results").fetchone()[0])

    def count(self, kind: Optional[str] = None) -> int:
        """Stored results (of ``kind``: ``judge``, ``answer``, ``probe``, ...)."""
        if kind is None:
            return len(self)
        with self._lock:
            return int(self._connect().execute("SELECT COUNT(*) FROM results WHERE kind=?", (kind,)).fetchone()[0])

    # -- claims ----------------------------------------------------------------------------------
    def claim(self, keys: Sequence[str], owner: str, *, usable: Callable[[Dict[str, Any]], bool] = lambda v: True,
              fresh_since: Optional[str] = None, stale_after: float = 300.0,
              force: Iterable[str] = (), limit: Optional[int] = None) -> ClaimResult:
        """For each of ``keys``, in one transaction: a stored result that is ``usable`` (or was
        written at or after ``fresh_since``, e.g. by another process during this run) is
        ``done``; else a live claim of another owner makes it ``busy`` (unless the key is in
        ``force``: take it over); else the key is claimed for ``owner`` (``mine``), at most
        ``limit`` of them (the rest are ``later``)."""
        out = ClaimResult()
        forced = set(force)
        now = time.time()
        with self._transaction() as conn:
            for key in keys:
                row = conn.execute("SELECT value, created FROM results WHERE key=?", (key,)).fetchone()
                if row is not None:
                    value = json.loads(row[0])
                    if usable(value) or (fresh_since is not None and row[1] >= fresh_since):
                        out.done[key] = value
                        continue
                c = conn.execute("SELECT owner, pid, host, started FROM claims WHERE key=?", (key,)).fetchone()
                if c is not None and c[0] != owner and key not in forced and self._live(c, now, stale_after):
                    out.busy[key] = float(c[3])
                    continue
                if limit is not None and len(out.mine) >= limit:
                    out.later.append(key)
                    continue
                conn.execute("INSERT OR REPLACE INTO claims VALUES (?, ?, ?, ?, ?)",
                             (key, owner, os.getpid(), _HOST, now))
                out.mine.append(key)
                if c is not None and c[0] != owner and self._live(c, now, float("inf")):
                    out.taken.append(key)
        return out

    @staticmethod
    def _live(claim: Sequence[Any], now: float, stale_after: float) -> bool:
        _owner, pid, host, started = claim
        if now - float(started) > stale_after:
            return False
        if host == _HOST:
            return pid_alive(int(pid))
        return True

    def release(self, owner: str, keys: Optional[Iterable[str]] = None) -> None:
        """Drop ``owner``'s claims (of ``keys``, or all of them)."""
        with self._transaction() as conn:
            if keys is None:
                conn.execute("DELETE FROM claims WHERE owner=?", (owner,))
            else:
                conn.executemany("DELETE FROM claims WHERE key=? AND owner=?", [(k, owner) for k in keys])

    def claims(self) -> List[Dict[str, Any]]:
        """Every claim in the file (for inspection and tests)."""
        with self._lock:
            rows = self._connect().execute("SELECT key, owner, pid, host, started FROM claims").fetchall()
        return [dict(zip(("key", "owner", "pid", "host", "started"), r)) for r in rows]
