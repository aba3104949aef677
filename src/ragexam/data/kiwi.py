"""The one Kiwi (kiwipiepy) analyser of the process, shared by every user of Korean morphology.

The ``sentences`` chunker (sentence splitting), BM25's tokenizer (:mod:`ragexam.retrieval.tokenizers`) and the
``ko-kiwi`` text-metric tokenizer (:mod:`ragexam.metrics.text.tokenizers`) all call :func:`kiwi`, so the
model (about 2 s and 500 MB to load) is loaded at most once per process, with one model type
(:data:`KIWI_MODEL_TYPE`) and every core (``num_workers=-1``; the worker count never changes results).

kiwipiepy is a core dependency of ragexam: if it cannot be imported, the installation is broken and the
error says how to repair it.
"""

from __future__ import annotations

import threading
from typing import Any

from ragexam.errors import RagexamError

__all__ = ["kiwi", "kiwi_lock", "kiwi_version", "kiwi_model_version", "KIWI_MODEL_TYPE"]

#: The kiwipiepy model every ragexam component uses (kiwipiepy 0.24's default).
KIWI_MODEL_TYPE = "cong"

_KIWI: Any = None
_LOCK = threading.Lock()
#: Held around every call into the shared analyser (one ``Kiwi`` object is not safe to use from two
#: threads at once; it parallelizes a batch internally with its own workers).
kiwi_lock = threading.RLock()


def _import_kiwipiepy():
    try:
        import kiwipiepy
    except ImportError as err:
        raise RagexamError(f"kiwipiepy cannot be imported ({err}); it is a core dependency of ragexam, so the "
                           "installation is incomplete. Repair it with: pip install --force-reinstall "
                           "kiwipiepy kiwipiepy_model") from None
    return kiwipiepy


def kiwi(num_workers: int | None = None):
    """The process-wide ``kiwipiepy.Kiwi``, created on first call (thread-safe).

    ``num_workers`` (default: every core) is used only by the call that creates it; the worker count
    never changes results.  Call the analyser while holding :data:`kiwi_lock`.
    """
    global _KIWI
    if _KIWI is None:
        with _LOCK:
            if _KIWI is None:
                _KIWI = _import_kiwipiepy().Kiwi(num_workers=num_workers if num_workers else -1,
                                                  model_type=KIWI_MODEL_TYPE)
    return _KIWI


def _dist_version(name: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return "unknown"


def kiwi_version() -> str:
    """The installed kiwipiepy version, read from package metadata (the analyser is not loaded)."""
    return _dist_version("kiwipiepy")


def kiwi_model_version() -> str:
    """The installed kiwipiepy_model version (package metadata)."""
    return _dist_version("kiwipiepy_model")
