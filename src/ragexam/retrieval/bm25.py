r"""BM25 retrieval: bm25s over tokens ragexam makes itself (kiwi morphemes or whitespace).

ragexam tokenizes (see :mod:`ragexam.retrieval.tokenizers`), builds the vocabulary ids
itself and hands bm25s the ``(token ids, vocabulary)`` pair, so bm25s's own regex
tokenizer (which drops one-syllable Korean words and keeps particles attached) never runs.

Definition (bm25s 0.3.16, Kamphuis et al., ECIR 2020)
-----------------------------------------------------
For a query ``Q`` (its tokens, **with repeats**: a token that occurs twice in the query
counts twice) and a chunk ``D``::

    score(D, Q) = Σ_{t ∈ Q, t in the corpus vocabulary} idf(t) · tfc(t, D)

    N      number of chunks;  df(t) chunks containing t;  tf = tf(t, D) occurrences of t in D
    L      = 1 − b + b · |D| / avgdl   (|D| = tokens in D after filtering, avgdl = their mean)

=========  ==================================================  =====================================
variant    idf(t)                                              tfc(t, D)
=========  ==================================================  =====================================
lucene     ln(1 + (N − df + 0.5) / (df + 0.5))                  tf / (k1 · L + tf)
robertson  ln(max(1, (N − df + 0.5) / (df + 0.5)))  (≥ 0)       tf / (k1 · L + tf)
atire      ln(N / df)                                          (k1 + 1) · tf / (k1 · L + tf)
bm25l      ln((N + 1) / (df + 0.5))                            (k1 + 1)(c + δ) / (k1 + c + δ),
                                                               c = tf / L
bm25+      ln((N + 1) / df)                                    (k1 + 1) · tf / (k1 · L + tf) + δ
=========  ==================================================  =====================================

Notes on these definitions, as bm25s implements them:

* ``lucene`` and ``robertson`` omit the textbook ``(k1 + 1)`` factor, so their scores are
  ``k1 + 1`` times smaller than e.g. rank_bm25's Okapi; rankings are unaffected.
* ``robertson`` clips the IDF of a token found in more than half of the chunks to 0
  (rank_bm25 instead floors it to ``epsilon · mean idf``).
* ``bm25l`` and ``bm25+`` give ``tfc > 0`` even when ``tf = 0``: every chunk receives
  ``idf(t) · tfc(0)`` for every query token in the vocabulary (``δ = delta`` is used only by
  these two variants).
* Query tokens not in the corpus vocabulary contribute nothing.

Parameters: ``k1 ≥ 0`` (term-frequency saturation, default 1.5), ``0 ≤ b ≤ 1`` (length
normalisation, default 0.75), ``delta ≥ 0`` (default 0.5).

Which chunks are listed
-----------------------
``search`` lists only chunks that contain **at least one** query token (Lucene's
disjunctive match), best first, ties by chunk id.  So a query with no token in the
vocabulary (including an empty query, or one made only of particles and punctuation) gets
an empty list rather than ``top_n`` arbitrary chunks; under ``bm25l``/``bm25+`` the chunks
without any query token would all share the same non-zero score and are likewise not
listed.  :meth:`BM25Retriever.scores` gives the full score vector of every chunk (all zeros
for such a query).
"""

from __future__ import annotations

import itertools
import math
import os
from collections import defaultdict
from contextlib import suppress
from typing import TYPE_CHECKING, Optional

from ragexam.errors import number_in, one_of
from ragexam.retrieval.base import (Hits, Retriever, check_corpus, check_queries, check_top_n,
                                    fmt_num, id_ranks, top_n_positions)
from ragexam.retrieval.progress import progress_bar
from ragexam.retrieval.registry import Build, Form, integer, number, retriever_family, text
from ragexam.exec.timing import stage
from ragexam.signature import Signature
from ragexam.retrieval.tokenizers import TOKENIZERS, Tokenizer, iter_tokens, tokenize_cached

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from ragexam.exec.base import Executor

__all__ = ["BM25Retriever", "BM25_VARIANTS"]

#: Accepted ``variant`` values (bm25s ``method``); ``bm25plus`` is an alias of ``bm25+``.
BM25_VARIANTS = ("lucene", "robertson", "atire", "bm25l", "bm25+")
_ALIASES = {"bm25plus": "bm25+"}
_USES_DELTA = ("bm25l", "bm25+")
_DEFAULTS = {"variant": "lucene", "k1": 1.5, "b": 0.75, "delta": 0.5}


def _dist_version(name: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:  # pragma: no cover
        return "unknown"


class BM25Retriever(Retriever):
    """BM25 (bm25s) over kiwi morpheme lemmas or whitespace tokens.

    Parameters
    ----------
    tokenizer:
        ``"kiwi"`` (default), ``"whitespace"``, or an object with ``name``, ``identity``,
        ``cacheable`` and ``tokenize(texts, progress)`` (see
        :class:`~ragexam.retrieval.tokenizers.Tokenizer`).
    variant:
        ``lucene`` (default), ``robertson``, ``atire``, ``bm25l`` or ``bm25+`` (alias
        ``bm25plus``); formulas in the module docstring.
    k1, b, delta:
        BM25 parameters: ``k1 ≥ 0``, ``0 ≤ b ≤ 1``, ``delta ≥ 0`` (bm25l/bm25+ only).
    num_threads:
        kiwi worker threads (``None``: all cores).  Does not change results.
    executor:
        Where tokenizing runs (:mod:`ragexam.exec`; default the local executor).  Does not change
        results.
    cache, cache_dir:
        Cache token lists and the built index on disk (default on; location and layout in
        :mod:`ragexam.retrieval.cache`).
    progress:
        Show progress bars on stderr when it is a terminal.
    """

    def __init__(self, tokenizer: str | Tokenizer = "kiwi", *, variant: str = "lucene",
                 k1: float = 1.5, b: float = 0.75, delta: float = 0.5,
                 num_threads: int | None = None, cache: bool = True,
                 cache_dir: str | os.PathLike[str] | None = None, progress: bool = True,
                 executor: Optional["Executor"] = None) -> None:
        where = "bm25"
        if isinstance(tokenizer, str):
            one_of(tokenizer, TOKENIZERS, source=where, field="tokenizer", what="tokenizer")
            self.tokenizer: Tokenizer = (TOKENIZERS[tokenizer](num_threads) if tokenizer == "kiwi"
                                         else TOKENIZERS[tokenizer]())
        else:
            self.tokenizer = tokenizer
        variant = _ALIASES.get(variant, variant)
        one_of(variant, BM25_VARIANTS, source=where, field="variant", what="BM25 variant")
        self.variant = variant
        self.k1 = _number(k1, "k1", lo=0.0)
        self.b = _number(b, "b", lo=0.0, hi=1.0)
        self.delta = _number(delta, "delta", lo=0.0)
        self.num_threads = num_threads
        self.executor = executor
        self._keep_caching(cache, cache_dir, progress)
        self._indexed = False

    # -- identity -----------------------------------------------------------------------------
    @property
    def spec(self) -> str:
        opts = []
        if self.variant != _DEFAULTS["variant"]:
            opts.append(f"variant={self.variant}")
        for name in ("k1", "b"):
            if getattr(self, name) != _DEFAULTS[name]:
                opts.append(f"{name}={fmt_num(getattr(self, name))}")
        if self.variant in _USES_DELTA and self.delta != _DEFAULTS["delta"]:
            opts.append(f"delta={fmt_num(self.delta)}")
        base = f"bm25:{self.tokenizer.name}"
        return base + ("?" + "&".join(opts) if opts else "")

    @property
    def signature(self) -> Signature:
        """``bm25:<tokenizer>|variant:..|k1:..|b:..[|delta:..][|kiwi:..|kiwi-model:..]|bm25s:..``.

        Example: ``bm25:kiwi|variant:lucene|k1:1.5|b:0.75|kiwi:0.24.1|kiwi-model:cong-0.24.0|bm25s:0.3.16``.
        """
        parts = [("bm25", self.tokenizer.name), ("variant", self.variant), ("k1", fmt_num(self.k1)),
                 ("b", fmt_num(self.b))]
        if self.variant in _USES_DELTA:
            parts.append(("delta", fmt_num(self.delta)))
        fields = getattr(self.tokenizer, "signature_fields", None)
        if fields:
            parts += Signature.parse(fields).items()
        elif self.tokenizer.name != "whitespace":
            parts.append(("tok", self.tokenizer.identity))
        parts.append(("bm25s", _dist_version("bm25s")))
        return Signature(parts, version=False)

    # -- index --------------------------------------------------------------------------------
    def index(self, ids: list[str], texts: list[str]) -> "BM25Retriever":
        """Index the chunks (see :meth:`Retriever.index`).

        The corpus is tokenized in windows (through the token cache and the executor), each window's
        tokens turned into vocabulary ids at once, so token strings never pile up for the whole
        corpus.  With the cache on, the built score matrix is stored under the corpus's content key
        (:meth:`~ragexam.retrieval.cache.Cache.save_index`): a warm run of the same chunks loads it
        and reads no token at all.
        """
        from ragexam.exec.timing import stage
        from ragexam.retrieval.cache import corpus_key, open_cache

        ids, texts = check_corpus(ids, texts, self.spec)
        cache = open_cache(self.cache, self.cache_dir)
        key = None
        if cache is not None and self.tokenizer.cacheable:
            with stage("index"):
                key = corpus_key(f"bm25-index/1|{self.tokenizer.identity}|{self.variant}|k1={fmt_num(self.k1)}"
                                 f"|b={fmt_num(self.b)}|delta={fmt_num(self.delta)}|bm25s={_dist_version('bm25s')}",
                                 texts)
                built = cache.load_index("bm25", key)
            if built is not None and self._load_arrays(built, ids):
                return self
        # a new token's id is the next number (ids in first-seen order, as dict.setdefault(t, len(vocab)) gave);
        # the default factory and map() keep the per-token work in C: 2.2x faster than setdefault (measured on 2M
        # tokens), the largest part of indexing a large corpus
        growing: "defaultdict[str, int]" = defaultdict(itertools.count().__next__)
        corpus_ids: list[list[int]] = []
        for _, tokens in iter_tokens(self.tokenizer, texts, cache, progress=self.progress,
                                     executor=self.executor):
            with stage("index"):
                corpus_ids.extend(list(map(growing.__getitem__, toks)) for toks in tokens)
        vocab = dict(growing)  # a plain dict: a later lookup of an unknown token must not add it
        with stage("index"):
            self._build(ids, vocab, corpus_ids)
            if key is not None and self._bm is not None:
                cache.save_index("bm25", key, self._arrays())
        return self

    def _build(self, ids: list[str], vocab: dict[str, int], corpus_ids: list[list[int]]) -> None:
        import numpy as np

        self._ids = ids
        self._id_rank = id_ranks(ids)
        self._vocab = vocab
        self._n_docs = len(ids)
        self._bm = None
        if vocab:
            import bm25s

            bm = bm25s.BM25(k1=self.k1, b=self.b, delta=self.delta, method=self.variant,
                            backend="numpy")
            with progress_bar("indexing (bm25)", 1, self.progress) as bar:
                bm.index((corpus_ids, dict(vocab)), create_empty_token=False, show_progress=False)
                bar.advance(1)
            self._bm = bm
            self._data = np.asarray(bm.scores["data"])
            self._indices = np.asarray(bm.scores["indices"])
            self._indptr = np.asarray(bm.scores["indptr"])
            self._nonocc = (None if bm.nonoccurrence_array is None
                            else np.asarray(bm.nonoccurrence_array, dtype=np.float64))
        self._indexed = True

    def _arrays(self) -> "dict[str, np.ndarray]":
        """The built index as arrays (what :meth:`_load_arrays` reads back)."""
        import numpy as np

        words = list(self._vocab)  # insertion order = id order
        joined = "".join(words)
        ends = np.cumsum([len(w) for w in words], dtype=np.int64)
        out = {"data": self._data, "indices": self._indices, "indptr": self._indptr,
               "n_docs": np.asarray([self._n_docs], dtype=np.int64),
               "vocab_text": np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), dtype=np.uint32),
               "vocab_ends": ends}
        if self._bm is not None and self._bm.nonoccurrence_array is not None:
            out["nonocc"] = np.asarray(self._bm.nonoccurrence_array)
        return out

    def _load_arrays(self, a: "dict[str, np.ndarray]", ids: list[str]) -> bool:
        """Adopt a stored index; ``False`` (rebuild) if it does not fit this corpus."""
        import numpy as np

        try:
            n_docs = int(a["n_docs"][0])
            text = a["vocab_text"].astype("<u4", copy=False).tobytes().decode("utf-32-le", "surrogatepass")
            ends = a["vocab_ends"].tolist()
            data, indices, indptr = a["data"], a["indices"], a["indptr"]
        except (KeyError, IndexError, UnicodeDecodeError, ValueError):
            return False
        if n_docs != len(ids) or indptr.shape[0] != len(ends) + 1:
            return False
        starts = [0] + ends[:-1]
        self._vocab = {text[s:e]: i for i, (s, e) in enumerate(zip(starts, ends))}
        self._ids = ids
        self._id_rank = id_ranks(ids)
        self._n_docs = n_docs
        self._data, self._indices, self._indptr = data, indices, indptr
        nonocc = a.get("nonocc")
        self._nonocc = None if nonocc is None else np.asarray(nonocc, dtype=np.float64)
        self._bm = _Loaded(self, nonocc) if self._vocab else None
        self._indexed = True
        return True

    # -- search -------------------------------------------------------------------------------
    def _query_ids(self, queries: list[str]) -> list[list[int]]:
        from ragexam.retrieval.cache import open_cache

        cache = open_cache(self.cache, self.cache_dir)
        tokens = tokenize_cached(self.tokenizer, queries, cache, self.progress, executor=self.executor)
        vocab = self._vocab
        return [[vocab[t] for t in toks if t in vocab] for toks in tokens]

    def search(self, queries: list[str], top_n: int) -> Hits:
        """Up to ``top_n`` chunks per query that share a token with it, best first.

        See the module docstring for the score and for why chunks without any query token
        are not listed (an empty or out-of-vocabulary query returns ``[]``).
        """
        import numpy as np

        self._require_index()
        queries = check_queries(queries, self.spec)
        top_n = check_top_n(top_n, self.spec)
        qids = self._query_ids(queries)
        ids, rank = self._ids, self._id_rank
        out: Hits = []
        with stage("search"), progress_bar("searching (bm25)", len(queries), self.progress) as bar:
            for q in qids:
                if not q or self._bm is None:
                    out.append([])
                else:
                    cand, sc = self._candidate_scores(np.asarray(q, dtype=np.int64))
                    pos = top_n_positions(sc, rank[cand], top_n)
                    out.append([(ids[int(d)], float(s)) for d, s in zip(cand[pos], sc[pos])])
                bar.advance(1)
        return out

    def _candidate_scores(self, q: "np.ndarray") -> "tuple[np.ndarray, np.ndarray]":
        """Chunks containing any token of ``q`` and their BM25 scores (float64).

        Sums the columns of bm25s's precomputed chunk × token score matrix (CSC arrays)
        for each query token, repeats included, then adds the bm25l/bm25+ non-occurrence
        term.  Equal to ``bm25s.BM25.get_scores`` on those chunks up to float32 rounding.
        """
        import numpy as np

        starts, ends = self._indptr[q], self._indptr[q + 1]
        docs = np.concatenate([self._indices[s:e] for s, e in zip(starts, ends)])
        vals = np.concatenate([self._data[s:e] for s, e in zip(starts, ends)])
        n = self._n_docs
        if docs.shape[0] * 8 < n:  # few postings: sort them
            cand, inverse = np.unique(docs, return_inverse=True)
            scores = np.bincount(inverse, weights=vals, minlength=cand.shape[0])
        else:  # many postings: two linear passes over the corpus
            cand = np.flatnonzero(np.bincount(docs, minlength=n))
            scores = np.bincount(docs, weights=vals, minlength=n)[cand]
        if self._nonocc is not None:
            scores += self._nonocc[q].sum()
        return cand, scores

    def scores(self, queries: list[str]) -> "np.ndarray":
        """Full BM25 score matrix (queries × chunks, float32, chunks in index order).

        Computed by ``bm25s.BM25.get_scores_from_ids``.  A query without any vocabulary
        token (e.g. an empty query) gets a row of zeros.
        """
        import numpy as np

        self._require_index()
        queries = check_queries(queries, self.spec)
        out = np.zeros((len(queries), self._n_docs), dtype=np.float32)
        if self._bm is None:
            return out
        bm = self._bm.bm25s() if isinstance(self._bm, _Loaded) else self._bm
        for i, q in enumerate(self._query_ids(queries)):
            if q:
                out[i] = bm.get_scores_from_ids(q)
        return out


class _Loaded:
    """A BM25 index read from the cache; builds the ``bm25s.BM25`` object (for :meth:`BM25Retriever.scores`)
    from the stored arrays only when asked, as ``bm25s.BM25.load`` does."""

    def __init__(self, owner: BM25Retriever, nonocc: "np.ndarray | None") -> None:
        self._owner = owner
        self._nonocc = nonocc
        self._bm = None

    def bm25s(self):
        if self._bm is None:
            import bm25s

            o = self._owner
            bm = bm25s.BM25(k1=o.k1, b=o.b, delta=o.delta, method=o.variant, backend="numpy")
            bm.scores = {"data": o._data, "indices": o._indices, "indptr": o._indptr, "num_docs": o._n_docs}
            bm.vocab_dict = dict(o._vocab)
            bm.nonoccurrence_array = self._nonocc
            self._bm = bm
        return self._bm


def _number(value: object, name: str, lo: float, hi: float = math.inf) -> float:
    """``value`` (a number, or a spec's text of one) from ``lo`` to ``hi``; text that is no number is refused by
    :func:`~ragexam.errors.number_in` as it was received."""
    if isinstance(value, str):
        with suppress(ValueError):
            value = float(value)
    return number_in(value, lo, None if hi == math.inf else hi, source="bm25", field=name)


@retriever_family("bm25", arg="choice", choices=tuple(TOKENIZERS), default="kiwi", arg_label="BM25 tokenizer",
                  forms=(Form("bm25", "BM25 over Korean morphemes (kiwi); same as bm25:kiwi"),
                         Form("bm25:whitespace", "BM25 over lowercased whitespace tokens")),
                  options={"variant": text("lucene | robertson | atire | bm25l | bm25+"), "k1": number("1.5"),
                           "b": number("0.75"), "delta": number("0.5"), "num_threads": integer()},
                  executor=True, order=10)
def _from_spec(b: Build) -> BM25Retriever:
    return BM25Retriever(b.arg or "kiwi", **b.options)
