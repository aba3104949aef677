"""Shared test setup: no test reads or writes the user's real history or caches.

* History: ``ragexam run`` / ``demo`` / ``score`` record every result in the history database; every test
  gets its own empty one through ``RAGEXAM_HISTORY`` (subprocesses started with ``os.environ`` inherit it).
* Hypothesis: no deadline and no "too slow" health check (a loaded machine is not a failure).
* Caches: the retrieval cache and the LLM-call cache live under ``RAGEXAM_CACHE_DIR``.  The whole session
  shares one temporary cache directory (so the suite pays for Kiwi tokenization and e5 embeddings of the
  bundled sets once, not per test), never ``~/.cache/ragexam``.  Tests that need an empty cache set their
  own.  ``RAGEXAM_TEST_CACHE_DIR`` names a directory to use instead of a fresh one (developers keep a warm
  test cache between runs with it; CI leaves it unset).
* Progress lines: off (``RAGEXAM_PROGRESS_INTERVAL=0``); a test that checks them sets the interval itself.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

# No test is timed (speed lives in benchmarks/): on a loaded CI machine a hypothesis example may take seconds, so
# neither its deadline nor its "too slow" health check may fail a test.
settings.register_profile("ragexam", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("ragexam")


@pytest.fixture(autouse=True, scope="session")
def _isolated_cache(tmp_path_factory):
    chosen = os.environ.get("RAGEXAM_TEST_CACHE_DIR") or str(tmp_path_factory.mktemp("ragexam-cache"))
    before = os.environ.get("RAGEXAM_CACHE_DIR")
    os.environ["RAGEXAM_CACHE_DIR"] = chosen
    yield chosen
    if before is None:
        os.environ.pop("RAGEXAM_CACHE_DIR", None)
    else:
        os.environ["RAGEXAM_CACHE_DIR"] = before


@pytest.fixture(autouse=True, scope="session")
def _no_progress_lines():
    """Long commands print a progress line every 10 s when stderr is not a terminal (ragexam.exec.progress): on a
    loaded machine a test's command may run that long, so tests see no lines unless they ask for them (as
    tests/test_progress_lines.py does, with RAGEXAM_PROGRESS_INTERVAL in the child's environment)."""
    before = os.environ.get("RAGEXAM_PROGRESS_INTERVAL")
    os.environ["RAGEXAM_PROGRESS_INTERVAL"] = "0"
    yield
    if before is None:
        os.environ.pop("RAGEXAM_PROGRESS_INTERVAL", None)
    else:
        os.environ["RAGEXAM_PROGRESS_INTERVAL"] = before


@pytest.fixture(autouse=True)
def _isolated_history(tmp_path_factory, monkeypatch):
    path = tmp_path_factory.mktemp("history") / "history.sqlite3"
    monkeypatch.setenv("RAGEXAM_HISTORY", str(path))
    return path


@pytest.fixture(autouse=True)
def _isolated_secrets():
    """Secrets a test makes known to the redactor (a ``Redactor`` registers its secrets process-wide) are
    forgotten after it: a random hypothesis 'secret' such as ``00000000`` must not redact the next test's files."""
    from ragexam.llm import redact

    before = set(redact._REGISTERED)
    yield
    redact._REGISTERED.clear()
    redact._REGISTERED.update(before)
