"""Opening ragexam's on-disk SQLite stores (the retrieval cache, the LLM-call cache).

One place decides how a store is opened: WAL journal (readers never block the writer),
``synchronous=NORMAL``, a 60 s busy timeout (the switch to WAL retried within it: SQLite's busy
handler does not cover it), autocommit mode (each caller opens its own
transactions), the tables created in one ``BEGIN IMMEDIATE`` transaction, and a ``meta``
table whose ``schema`` row must equal the caller's version.

:class:`SQLiteStore` is the handle both caches build on: one connection per handle, opened on
first use (creating the directory), guarded by a lock, with one write-transaction helper.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Optional, Sequence

from ragexam.errors import InputError, RagexamError

__all__ = ["open_store", "SQLiteStore"]


#: seconds a statement waits for another process's lock before "database is locked"
BUSY_TIMEOUT = 60.0


def _set_wal(conn: sqlite3.Connection) -> None:
    """Switch ``conn``'s file to the WAL journal.  SQLite does not call its busy handler for this
    switch: when other processes open the same new file at the same moment it fails at once with
    "database is locked" (seen: 94 of 300 rounds of four processes opening one new cache).  Try again
    with a growing pause, within the busy timeout, as the busy handler would."""
    deadline = time.monotonic() + BUSY_TIMEOUT
    pause = 0.005
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as err:
            if "locked" not in str(err) and "busy" not in str(err) or time.monotonic() + pause > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.25)


def open_store(path: Path, *, schema_version: str, ddl: Sequence[str], what: str, if_corrupt: str,
               if_other_schema: str) -> sqlite3.Connection:
    """Open (creating if needed) the SQLite store at ``path`` and return its connection.

    ``ddl`` are the ``CREATE TABLE IF NOT EXISTS`` statements of the caller's tables; ``what``
    names the store in messages ("the retrieval cache"); ``if_corrupt`` and
    ``if_other_schema`` are the sentences telling the user what to do when the file is not a
    usable database, or was written by an incompatible ragexam.  Both cases raise
    :class:`~ragexam.errors.RagexamError`.
    """
    try:
        conn = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT, isolation_level=None, check_same_thread=False)
        _set_wal(conn)
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        for statement in ddl:
            conn.execute(statement)
        conn.execute("INSERT OR IGNORE INTO meta VALUES ('schema', ?)", (schema_version,))
        row = conn.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
        conn.execute("COMMIT")
    except sqlite3.OperationalError as err:
        if "locked" in str(err) or "busy" in str(err):
            raise RagexamError(f"{path}: {what} stayed locked by another process for {BUSY_TIMEOUT:.0f} s ({err}). "
                               "Wait for the other ragexam command to finish, or use another cache directory.") from None
        raise RagexamError(f"{path}: {what} cannot be opened ({err}). {if_corrupt}") from None
    except sqlite3.DatabaseError as err:
        raise RagexamError(f"{path}: {what} cannot be opened ({err}). {if_corrupt}") from None
    if row[0] != schema_version:
        conn.close()
        raise RagexamError(f"{path}: cache schema {row[0]!r}, this ragexam writes {schema_version!r}. "
                           f"{if_other_schema}")
    return conn


class SQLiteStore:
    """A store in ``<directory>/<FILENAME>``, opened with :func:`open_store` on first use; thread-safe
    (one connection guarded by a lock) and process-safe.

    A subclass sets ``FILENAME``, ``SCHEMA_VERSION``, ``DDL`` (its tables), ``WHAT`` (the store's name in
    messages), ``IF_CORRUPT`` and ``IF_OTHER_SCHEMA`` (:func:`open_store`), and ``IF_NO_DIRECTORY``: the
    sentence telling the user what to do when the directory cannot be created (an
    :class:`~ragexam.errors.InputError` naming the directory, field ``cache_dir``).
    """

    FILENAME: str
    SCHEMA_VERSION: str
    DDL: Sequence[str]
    WHAT: str
    IF_CORRUPT: str
    IF_OTHER_SCHEMA: str
    IF_NO_DIRECTORY: str

    def __init__(self, directory: "str | os.PathLike[str]") -> None:
        self.directory = Path(directory).expanduser()
        self.path = self.directory / self.FILENAME
        self._lock = threading.Lock()
        self._conn: Optional[sqlite3.Connection] = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self.directory)!r})"

    def _connect(self) -> sqlite3.Connection:
        """The open connection (opened and the tables created on first use); call under ``_lock``."""
        if self._conn is not None:
            return self._conn
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise InputError(f"cannot create the cache directory: {err.strerror or err}. {self.IF_NO_DIRECTORY}",
                             source=str(self.directory), field="cache_dir") from None
        self._conn = open_store(self.path, schema_version=self.SCHEMA_VERSION, ddl=self.DDL, what=self.WHAT,
                                if_corrupt=self.IF_CORRUPT, if_other_schema=self.IF_OTHER_SCHEMA)
        return self._conn

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction (``BEGIN IMMEDIATE``), under the handle's lock."""
        with self._lock:
            conn = self._connect()
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

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
