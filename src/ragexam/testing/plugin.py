"""The ragexam pytest plugin (entry point ``pytest11: ragexam``; or ``-p ragexam.testing.plugin``).

Fixtures
--------
``ragexam_isolated``
    Points ``RAGEXAM_CACHE_DIR`` and ``RAGEXAM_HISTORY`` at a temporary folder for the test, so a
    test never reads or writes the user's cache and history.  Returns that folder.
``ragexam_stub`` (session)
    A running :class:`~ragexam.testing.stub.StubEndpoint` (``.base_url``).
``ragexam_endpoint`` (session)
    ``(base_url, api_key, model)`` of the judge to use: with ``--ragexam-judge-model MODEL`` (or
    ``$RAGEXAM_JUDGE_MODEL``) the real endpoint (``--ragexam-base-url`` / ``$OPENAI_BASE_URL``, key from
    ``$OPENAI_API_KEY`` or ``.env``), else the stub.
``ragexam_judge``
    A :class:`~ragexam.metrics.judge.Judge` on ``ragexam_endpoint`` with its call cache in the test's
    temporary folder (``ragexam_isolated``).

A failed :func:`~ragexam.testing.assert_exam` is an ``AssertionError`` whose message is the report
(pytest prints it as is).  Nothing here runs unless a test asks for a fixture.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Iterator, Optional, Tuple

import pytest

if TYPE_CHECKING:
    from ragexam.metrics.judge import Judge
    from ragexam.testing.stub import StubEndpoint

__all__ = ["ragexam_isolated", "ragexam_stub", "ragexam_endpoint", "ragexam_judge"]


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("ragexam", "ragexam (RAG exams in tests)")
    group.addoption("--ragexam-judge-model", default=None,
                    help="judge model for the ragexam_judge fixture (default: $RAGEXAM_JUDGE_MODEL, else the "
                         "loopback stub)")
    group.addoption("--ragexam-base-url", default=None,
                    help="OpenAI-compatible base URL of that judge (default: $OPENAI_BASE_URL / .env)")


@pytest.fixture
def ragexam_isolated(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path_factory.mktemp("ragexam")
    monkeypatch.setenv("RAGEXAM_CACHE_DIR", str(folder / "cache"))
    monkeypatch.setenv("RAGEXAM_HISTORY", str(folder / "history.sqlite3"))
    return folder


@pytest.fixture(scope="session")
def ragexam_stub() -> Iterator["StubEndpoint"]:
    from ragexam.testing.stub import StubEndpoint

    with StubEndpoint() as stub:
        yield stub


@pytest.fixture(scope="session")
def ragexam_endpoint(request: pytest.FixtureRequest) -> Tuple[Optional[str], Optional[str], str]:
    model = request.config.getoption("--ragexam-judge-model") or os.environ.get("RAGEXAM_JUDGE_MODEL")
    if model:
        return request.config.getoption("--ragexam-base-url"), None, model
    stub = request.getfixturevalue("ragexam_stub")
    return stub.base_url, "unused", "ragexam-stub"


@pytest.fixture
def ragexam_judge(ragexam_endpoint: Tuple[Optional[str], Optional[str], str], ragexam_isolated: Path) -> "Judge":
    from ragexam.metrics.judge import Judge

    base_url, api_key, model = ragexam_endpoint
    return Judge(model, base_url=base_url, api_key=api_key, cache_dir=str(ragexam_isolated / "cache"))
