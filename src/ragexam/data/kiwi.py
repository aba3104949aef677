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
from typing import TYPE_CHECKING, List, Optional, Sequence, Tuple

from ragexam.errors import RagexamError

if TYPE_CHECKING:
    from kiwipiepy import Kiwi

__all__ = ["kiwi", "kiwi_lock", "kiwi_version", "kiwi_model_version", "KIWI_MODEL_TYPE", "tokenize", "pieces",
           "PIECE_CHARS"]

#: The kiwipiepy model every ragexam component uses (kiwipiepy 0.24's default).
KIWI_MODEL_TYPE = "cong"

_KIWI: Optional["Kiwi"] = None
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


#: Texts longer than this many characters are analysed in pieces.  Kiwi's analysis of one string grows
#: faster than its length (a 1 MB question took 160 s whole and 12 s in pieces on the reference machine), and
#: pieces cut at a line break (else after a sentence end, else at a space) give the same morphemes on ordinary
#: text (tests/test_kiwi_shared.py compares them).
PIECE_CHARS = 4000  # chunkings kept in the cache are keyed by this module's source (data/chunking._kiwi_salt)


def pieces(text: str, size: int = PIECE_CHARS) -> List[Tuple[int, str]]:
    """``text`` cut into ``(offset, piece)`` pairs of at most ``size`` characters (a piece is longer only when
    no break point exists in its second half); cuts fall after a line break, else after a sentence end
    followed by a space, else after a space.  ``"".join`` of the pieces is ``text``."""
    out: List[Tuple[int, str]] = []
    i, n = 0, len(text)
    while i < n:
        j = min(n, i + size)
        if j < n:
            half = i + size // 2
            cut = text.rfind("\n", half, j)
            if cut == -1:
                cut = max(text.rfind(". ", half, j), text.rfind("? ", half, j), text.rfind("! ", half, j))
                cut = cut + 1 if cut != -1 else -1
            if cut == -1:
                cut = text.rfind(" ", half, j)
            j = cut + 1 if cut != -1 else j
        out.append((i, text[i:j]))
        i = j
    return out


def tokenize(texts: Sequence[str]) -> List[list]:
    """``Kiwi.tokenize`` of each text (a list of kiwipiepy ``Token`` s per text), long texts in
    :func:`pieces`; token offsets (``start``) are relative to their piece."""
    analyser = kiwi()
    flat: List[str] = []
    owner: List[int] = []
    for t, text in enumerate(texts):
        for _, piece in (pieces(text) if len(text) > PIECE_CHARS else [(0, text)]):
            flat.append(piece)
            owner.append(t)
    out: List[list] = [[] for _ in texts]
    if flat:
        with kiwi_lock:
            analysed = list(analyser.tokenize(flat))
        for t, tokens in zip(owner, analysed):
            out[t].extend(tokens)
    return out


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
