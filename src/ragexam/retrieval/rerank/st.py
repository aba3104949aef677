"""``rerank:st:MODEL``: a sentence-transformers ``CrossEncoder`` scores (query, candidate) pairs.

Optional extra: ``pip install 'ragexam[st]'``.  ``MODEL`` is a model name or a local path
(``rerank:st:/models/bge-reranker-v2-m3``).  Loading a name downloads it from the model hub on first use --
something ragexam does not do for you offline: give a local path there.  Scores are the model's raw outputs
(``predict``), higher is better.  Results are cached in the call cache by (model, device-independent
settings, query, candidates), so a second run neither loads the model nor scores anything.
"""

from __future__ import annotations

import time
from typing import Any, Dict, List, Optional

from ragexam.errors import InputError, integer_in
from ragexam.retrieval.rerank.base import Reranker, RerankResult
from ragexam.retrieval.registry import Build, Form, integer, reranker_family, text
from ragexam.signature import Signature, quote
from ragexam.types import PathLike

__all__ = ["CrossEncoderReranker"]


class CrossEncoderReranker(Reranker):
    """A sentence-transformers cross-encoder (module docstring).

    :param model: a model name or path; ``device``: ``cpu``, ``cuda``, ... (default: the library's choice);
    ``batch_size``: pairs per ``predict`` call; ``max_length``: tokens per pair (default: the model's).
    """

    def __init__(self, model: str, *, device: Optional[str] = None, batch_size: int = 32,
                 max_length: Optional[int] = None, cache: bool = True, cache_dir: Optional[PathLike] = None,
                 progress: bool = True) -> None:
        if not isinstance(model, str) or not model.strip():
            raise InputError(f"received {model!r}; expected a model name or path.", source="rerank:st", field="model")
        for name, value in (("batch_size", batch_size), ("max_length", max_length)):
            if value is not None:
                integer_in(value, 1, source=f"rerank:st:{model}", field=name)
        self.model = model
        self.device = device
        self.batch_size = batch_size
        self.max_length = max_length
        self._keep_caching(cache, cache_dir, progress)
        self._encoder = None
        self.last_usage: Dict[str, Any] = {}

    @property
    def spec(self) -> str:
        return f"rerank:st:{self.model}"

    @property
    def signature(self) -> Signature:
        return Signature([("rerank", f"st:{quote(self.model)}"), ("max_length", self.max_length or "model"),
                          ("score", "raw")], version=False)

    def _load(self):
        if self._encoder is None:
            try:
                from sentence_transformers import CrossEncoder
            except ImportError:
                from ragexam.errors import MissingDependencyError

                raise MissingDependencyError("rerank:st (a sentence-transformers cross-encoder)", "st",
                                             "sentence-transformers") from None
            kw: Dict[str, Any] = {}
            if self.device is not None:
                kw["device"] = self.device
            if self.max_length is not None:
                kw["max_length"] = self.max_length
            self._encoder = CrossEncoder(self.model, **kw)
        return self._encoder

    def rerank(self, queries: List[str], candidates: List[List[str]]) -> List[RerankResult]:
        from ragexam.llm.batch import Outcome, Store, run_calls
        from ragexam.llm.cache import LLMCache, request_key

        tasks = [(request_key({"format": "ragexam-rerank-st/1", "model": self.model, "max_length": self.max_length,
                               "query": q, "candidates": list(c)}), (q, list(c)))
                 for q, c in zip(queries, candidates)]

        def one(task) -> Outcome:
            q, texts = task
            t0 = time.perf_counter()
            scores = self._load().predict([(q, t) for t in texts], batch_size=self.batch_size,
                                          show_progress_bar=False)
            return Outcome({"status": "ok", "scores": [float(s) for s in scores],
                            "latency": time.perf_counter() - t0}, store=True)

        cache = LLMCache(self.cache_dir) if self.cache else None
        batch = run_calls(tasks, one, store=Store(cache, "rerank", self.model, "local"),
                          concurrency=1, usable=lambda v: v.get("status") == "ok")
        self.last_usage = {"calls": len(batch.fresh), "cached": batch.usage.cached}
        out = []
        for key, (_, texts) in tasks:
            v = batch.values[key]
            scores = v.get("scores")
            if not isinstance(scores, list) or len(scores) != len(texts):
                out.append(RerankResult(None, "malformed: the model returned a score list of the wrong length"))
            else:
                out.append(RerankResult(tuple(scores), None, v.get("latency")))
        return out


@reranker_family("st", arg="model", placeholder="MODEL_NAME_OR_PATH", order=30,
                 forms=(Form("rerank:st:MODEL",
                             "... with a sentence-transformers CrossEncoder (pip install 'ragexam[st]')"),),
                 options={"device": text(), "batch_size": integer("32"), "max_length": integer()})
def _from_spec(b: Build) -> CrossEncoderReranker:
    return CrossEncoderReranker(b.arg, **b.options)
