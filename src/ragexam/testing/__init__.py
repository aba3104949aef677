"""ragexam in your test suite: :func:`assert_exam`, a loopback stub endpoint, and a pytest plugin.

* :func:`assert_exam` (:mod:`ragexam.testing.exam`): metric floors on a run or a score, on the 95% CI
  lower bound by default, failing with the metric, its interval, the floor and the worst questions;
* :class:`StubEndpoint` (:mod:`ragexam.testing.stub`): a deterministic OpenAI-compatible chat and
  embeddings server on 127.0.0.1, so the judge, answer generation and OpenAI-compatible embeddings
  run offline in CI;
* the pytest plugin (:mod:`ragexam.testing.plugin`, registered as ``ragexam`` through the ``pytest11``
  entry point): fixtures ``ragexam_stub``, ``ragexam_judge``, ``ragexam_isolated`` and the options
  ``--ragexam-judge-model`` / ``--ragexam-base-url`` to use a real judge instead of the stub.

Importing this package imports neither pytest nor numpy.
"""

from __future__ import annotations

from typing import Any

__all__ = ["assert_exam", "check_exam", "ExamFailure", "ExamCheck", "StubEndpoint"]

_LAZY = {"assert_exam": "ragexam.testing.exam", "check_exam": "ragexam.testing.exam",
         "ExamFailure": "ragexam.testing.exam", "ExamCheck": "ragexam.testing.exam",
         "StubEndpoint": "ragexam.testing.stub"}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'ragexam.testing' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list:
    return sorted(set(globals()) | set(__all__))
