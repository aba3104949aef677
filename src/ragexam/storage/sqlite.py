"""Opening ragexam's on-disk SQLite stores (the retrieval cache, the LLM-call cache).

One place decides how a store is opened: WAL journal (readers never block the writer),
``synchronous=NORMAL``, a 60 s busy timeout, autocommit mode (each caller opens its own
transactions), the tables created in one ``BEGIN IMMEDIATE`` transaction, and a ``meta``
table whose ``schema`` row must equal the caller's version.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Sequence

from ragexam.errors import RagexamError

__all__ = ["open_store"]


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
        conn = sqlite3.connect(str(path), timeout=60.0, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        for statement in ddl:
            conn.execute(statement)
        conn.execute("INSERT OR IGNORE INTO meta VALUES ('schema', ?)", (schema_version,))
        row = conn.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
        conn.execute("COMMIT")
    except sqlite3.DatabaseError as err:
        raise RagexamError(f"{path}: {what} cannot be opened ({err}). {if_corrupt}") from None
    if row[0] != schema_version:
        conn.close()
        raise RagexamError(f"{path}: cache schema {row[0]!r}, this ragexam writes {schema_version!r}. "
                           f"{if_other_schema}")
    return conn
