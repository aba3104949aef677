"""Shared test setup: no test writes into the user's real run history.

``ragexam run`` / ``demo`` / ``score`` record every result in the history database; here every test
gets its own empty one through ``RAGEXAM_HISTORY`` (subprocesses started with ``os.environ``
inherit it).  The retrieval cache (``RAGEXAM_CACHE_DIR``) is deliberately left alone: its warm
path keeps the suite fast, and the tests that need an empty cache set their own.
"""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _isolated_history(tmp_path_factory, monkeypatch):
    path = tmp_path_factory.mktemp("history") / "history.sqlite3"
    monkeypatch.setenv("RAGEXAM_HISTORY", str(path))
    return path
