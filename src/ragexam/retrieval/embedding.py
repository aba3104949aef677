"""Embedding many texts: through the cache, in windows, on the executor's workers.

:func:`iter_embeddings` is the one loop every dense index and query embedding goes through:

1. the texts are taken in windows of ``window`` (default 65,536), so memory follows the window and
   not the corpus (a 1M-chunk corpus never has all its vectors in two places at once);
2. in a window, texts already cached under ``(embedder.identity, role, input)`` are read back
   (:mod:`ragexam.retrieval.cache`), where ``input`` is what the model sees of the text when the embedder says so
   (``model_inputs``: e5's normalized text, so two texts that differ only in whitespace e5 collapses share one
   vector) and the text itself otherwise; each distinct missing input is embedded once;
3. the missing texts go to the executor (:mod:`ragexam.exec`) in batches of ``batch_size``
   through an :class:`EmbedWorker` (the model is loaded once per worker process or Ray actor;
   locally the default is to run in this process, since the embedders already use every core
   through their own threads);
4. every batch is checked (one finite row per text, one size) and written to the cache in its
   own transaction as soon as it arrives, so an interrupted run keeps what it finished;
5. the window's ``(n, dim)`` float32 block is yielded in text order.

An embedder that calls a network service (it has an ``endpoint`` attribute, e.g.
``dense:openai``) always runs in this process: it batches its own requests, and a cluster adds
nothing to an HTTP call.
"""

from __future__ import annotations

import contextvars
import copy
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Iterator, Mapping, Sequence

from ragexam import fmt
from ragexam.errors import RagexamError
from ragexam.storage.summary import EmbeddingCount
from ragexam.retrieval.progress import progress_bar

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from ragexam.exec.base import Executor
    from ragexam.retrieval.cache import Cache
    from ragexam.retrieval.embedders import Embedder

__all__ = ["iter_embeddings", "embed_cached", "EmbedWorker", "check_vectors", "WINDOW", "input_keys",
           "record_embeddings", "EmbeddingLedger"]

#: Texts per window of :func:`iter_embeddings`.
WINDOW = 65536
#: Attributes holding a loaded model (not sent to other processes: each worker loads its own).
_LOADED = ("_model", "_session", "_st_model")


def _portable(embedder: "Embedder") -> "Embedder":
    """A shallow copy of ``embedder`` without its loaded model, so it pickles and loads afresh in a worker."""
    if not any(getattr(embedder, a, None) is not None for a in _LOADED):
        return embedder
    clone = copy.copy(embedder)
    for a in _LOADED:
        if getattr(clone, a, None) is not None:
            setattr(clone, a, None)
    return clone


@dataclass(frozen=True)
class EmbedWorker:
    """Executor worker factory (:mod:`ragexam.exec.base`): ``factory()(texts)`` embeds a batch as ``role``.

    ``gpus`` is what one worker asks of a Ray cluster (0: CPU actors).  ``with_threads(n)`` passes the
    thread count to embedders that take one (``num_threads``); it never changes vectors.
    """

    embedder: "Embedder"
    role: str
    gpus: float = 0
    name: str = "embed"

    def __reduce__(self):
        return (EmbedWorker, (_portable(self.embedder), self.role, self.gpus, self.name))

    def with_threads(self, threads: int) -> "EmbedWorker":
        e = self.embedder
        set_threads = getattr(e, "with_threads", None)
        if callable(set_threads):
            return replace(self, embedder=set_threads(threads))
        if hasattr(e, "num_threads") and getattr(e, "num_threads", None) != threads:
            clone = copy.copy(_portable(e))
            clone.num_threads = threads
            return replace(self, embedder=clone)
        return self

    def __call__(self):
        e = self.embedder
        return e.embed_queries if self.role == "query" else e.embed_passages


def check_vectors(vecs: "np.ndarray", n: int, embedder: "Embedder") -> "np.ndarray":
    """``vecs`` as a float32 ``(n, dim)`` array; :class:`RagexamError` for a wrong shape or non-finite values."""
    import numpy as np

    vecs = np.asarray(vecs, dtype=np.float32)
    if vecs.ndim != 2 or vecs.shape[0] != n:
        raise RagexamError(f"embedder {embedder.identity!r} returned shape {vecs.shape} for {n} "
                           "texts; expected (n, dim).")
    if not np.isfinite(vecs).all():
        raise RagexamError(f"embedder {embedder.identity!r} returned NaN or infinite values.")
    return vecs


def _batches(embedder: "Embedder", role: str, texts: list, batch_size: int, executor: "Executor | None"):
    """``(start, size, vectors)`` for consecutive batches of ``texts``, in order (``size`` texts were sent).  In this
    process a batch holds at least ``embedder.min_batch`` texts when the embedder says so (e5: its worker threads
    drain at the end of every call, so calls of 32 texts left a core idle at each end; results never change)."""
    if executor is None or getattr(executor, "name", None) == "local":
        batch_size = max(batch_size, int(getattr(embedder, "min_batch", 0) or 0))
    if executor is None or getattr(embedder, "endpoint", None) is not None:
        embed = embedder.embed_queries if role == "query" else embedder.embed_passages
        for s in range(0, len(texts), batch_size):
            part = texts[s:s + batch_size]
            yield s, len(part), embed(part)
        return
    gpus = float(getattr(embedder, "gpus", 0) or 0)
    for s, vecs in executor.map_batches(EmbedWorker(embedder, role, gpus=gpus), texts, batch_size=batch_size,
                                        mode=getattr(embedder, "mode", "inline")):
        yield s, len(vecs), vecs  # the executor checked one result per text


class EmbeddingLedger:
    """The embeddings of one run (:func:`record_embeddings`): per embedder and role what it did
    (:class:`~ragexam.storage.summary.EmbeddingCount`, the run summary's record: texts asked, distinct inputs, read
    from the cache, embedded, shared -- a chunk another chunker made too, the questions of a second pipeline --
    and shared only up to whitespace, equal after the embedder's normalization: e5's
    :meth:`~ragexam.retrieval.e5.E5Embedder.model_inputs`), the inputs and texts already asked, and -- when the
    run has no cache -- their vectors, so that a chunk two chunkers share is embedded once all the same."""

    #: vectors kept for a run without a cache, at most (1.5 KB each for e5's 384 floats)
    MEMO_LIMIT = 100_000

    def __init__(self) -> None:
        self.uses: dict[tuple[str, str], EmbeddingCount] = {}
        self._inputs: dict[tuple[str, str], set] = {}
        self._texts: dict[tuple[str, str], set] = {}
        self.memo: dict[bytes, "np.ndarray"] = {}

    def keep(self, keys: Sequence[bytes], vectors: "np.ndarray") -> None:
        """Keep vectors for later calls of the run (a run without a cache), up to :attr:`MEMO_LIMIT`."""
        room = self.MEMO_LIMIT - len(self.memo)
        if room > 0:
            self.memo.update(zip(keys[:room], vectors[:room]))

    def count(self, embedder: "Embedder", role: str, texts: Sequence[str], keys: Sequence[bytes],
              todo: Mapping[bytes, str]) -> None:
        """Count ``texts`` (with their input ``keys``; ``todo``: the keys about to be embedded) as asked in this
        run: an input first asked now was read from the cache unless it is in ``todo``."""
        at = (str(embedder.identity), role)
        use = self.uses.setdefault(at, EmbeddingCount(embedder=str(embedder.name), role=role))
        inputs, seen = self._inputs.setdefault(at, set()), self._texts.setdefault(at, set())
        for t, k in zip(texts, keys):
            h, ki = hash(t), int.from_bytes(k[:8], "little")  # 8 of the key's 32 bytes: counting, not caching
            use.texts += 1
            if ki in inputs:
                use.shared += 1
                use.whitespace += h not in seen
            else:
                inputs.add(ki)
                use.distinct += 1
                if k in todo:
                    use.embedded += 1
                else:
                    use.cached += 1
            seen.add(h)


_LEDGER: "contextvars.ContextVar[EmbeddingLedger | None]" = contextvars.ContextVar("ragexam_embeddings",
                                                                                   default=None)


@contextmanager
def record_embeddings() -> Iterator[EmbeddingLedger]:
    """Count (and share) every embedding of the enclosed block, e.g. a run's retrieve stage: see
    :class:`EmbeddingLedger`."""
    ledger = EmbeddingLedger()
    token = _LEDGER.set(ledger)
    try:
        yield ledger
    finally:
        _LEDGER.reset(token)


def input_keys(embedder: "Embedder", texts: Sequence[str], role: str) -> list[bytes]:
    """The cache key of each text's vector: its model input's (``embedder.model_inputs``, e.g. e5's normalized
    text) when the embedder says what it sees, so texts with the same input share one entry; else the text's."""
    from ragexam.retrieval.cache import content_key

    identity = embedder.identity
    inputs = getattr(embedder, "model_inputs", None)
    if callable(inputs):
        return [content_key(identity, role + ":input", t) for t in inputs(texts, role)]
    return [content_key(identity, role, t) for t in texts]


def iter_embeddings(embedder: "Embedder", texts: Sequence[str], role: str, cache: "Cache | None", *,
                    batch_size: int = 32, progress: bool = False, executor: "Executor | None" = None,
                    window: int = WINDOW) -> Iterator[tuple[int, "np.ndarray"]]:
    """Yield ``(start, block)`` for consecutive windows of ``texts``: ``block`` is the ``(len, dim)`` float32
    vectors of ``texts[start:start + len]`` (see the module docstring).  Texts are keyed by their model input
    (:func:`input_keys`); inside :func:`record_embeddings` they are counted, and shared across calls even without
    a cache.  Raises :class:`RagexamError` when the embedder returns wrong shapes or non-finite values, or when one
    corpus gets vectors of two sizes (a cache mixing model versions)."""
    import numpy as np

    from ragexam.exec.timing import stage
    from ragexam.retrieval.cache import missing

    if role not in ("query", "passage"):  # pragma: no cover - internal misuse
        raise ValueError(f"role must be 'query' or 'passage', not {role!r}")
    texts = texts if isinstance(texts, list) else list(texts)
    identity = embedder.identity
    ledger = _LEDGER.get()
    memo = ledger.memo if ledger is not None and cache is None else None
    dim: int | None = None
    label = f"embedding {fmt.noun(len(texts), role)} ({embedder.name})"
    with progress_bar(label, len(texts), progress) as bar:
        for w0 in range(0, len(texts), window):
            part = texts[w0:w0 + window]
            with stage("embed"):
                keys = input_keys(embedder, part, role)
                found = cache.get_embeddings(keys) if cache is not None else \
                    {k: memo[k] for k in keys if k in memo} if memo is not None else {}
                todo = missing(keys, part, found)
                if ledger is not None:
                    ledger.count(embedder, role, part, keys, todo)
                bar.skip(len(part) - len(todo))
                if todo:
                    miss = list(todo)
                    for s, size, vecs in _batches(embedder, role, [todo[k] for k in miss], batch_size,
                                                  executor):
                        got = miss[s:s + size]
                        vecs = check_vectors(vecs, len(got), embedder)
                        if cache is not None:
                            cache.put_embeddings(identity, got, vecs)
                        elif ledger is not None and memo is not None:
                            ledger.keep(got, vecs)
                        found.update(zip(got, vecs))
                        bar.advance(len(got))
                dims = {found[k].shape[0] for k in keys} | ({dim} if dim is not None else set())
                if len(dims) != 1:
                    raise RagexamError(f"embedder {identity!r} produced vectors of sizes {sorted(dims)} for one "
                                       "corpus; the cache may mix model versions: clear it or use another "
                                       "cache_dir.")
                dim = dims.pop()
                block = np.empty((len(part), dim), dtype=np.float32)
                for i, k in enumerate(keys):
                    block[i] = found[k]
                del found, todo
            yield w0, block


def embed_cached(embedder: "Embedder", texts: Sequence[str], role: str, cache: "Cache | None", batch_size: int = 32,
                 progress: bool = False, executor: "Executor | None" = None) -> "np.ndarray":
    """All vectors of ``texts`` as one ``(n, dim)`` float32 array (:func:`iter_embeddings` in one window).

    Texts already cached under ``(embedder.identity, role, text)`` are read back; the rest (each
    distinct text once) are embedded in batches of ``batch_size``, each written to the cache in its
    own transaction as soon as it is embedded.  An empty ``texts`` gives a ``(0, dim)`` array.
    """
    import numpy as np

    texts = list(texts)
    if not texts:
        return np.zeros((0, embedder.dim or 0), dtype=np.float32)
    blocks = [b for _, b in iter_embeddings(embedder, texts, role, cache, batch_size=batch_size, progress=progress,
                                            executor=executor, window=max(1, len(texts)))]
    return blocks[0]
