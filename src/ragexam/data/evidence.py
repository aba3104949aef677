"""Where evidence strings occur, and which chunks of a chunking cover them.

Definitions
-----------
*Occurrence*: a place where ``normalize(evidence)`` is a substring of ``normalize(content)`` of a
document (overlapping occurrences included), reported as the raw span ``[start, end)`` of the
document content (:func:`ragexam.data.normalization.normalize_with_offsets` maps it back).

*Contains whole*: chunk ``c`` contains an evidence string whole when, for some occurrence in
``c``'s document, ``c.start <= occ.start`` and ``occ.end <= c.end``.  This equals "the normalized
evidence is a substring of the normalized chunk text" except when a chunk boundary splits a
combining sequence (a letter and its combining mark), which no built-in chunker does on Korean.

*Covers* (the policy used for judging, :class:`EvidenceIndex` ``min_fraction``):

- ``min_fraction=None`` (default, ``cover:whole``): covers = contains whole.
- ``min_fraction=f`` with ``0 < f <= 1`` (``cover:overlap>=f``): chunk ``c`` covers the string
  when, for some occurrence, the normalized characters of the occurrence whose raw span lies
  inside ``[c.start, c.end)`` number at least ``f * len(normalize(evidence))``.  The part is a
  contiguous piece of the evidence (the intersection of two intervals) and the count is exact,
  computed from the known occurrence location, not by searching the chunk text: a chunk holding a
  piece of the evidence copied from somewhere else does not count.  ``f = 1`` equals ``whole``.

*Boundary cut*: an occurrence that no chunk contains whole; reported with every chunk boundary
(a chunk start or end) strictly inside the occurrence and the chunks that overlap it.

Speed: the normalized corpus is one string with documents separated by ``"\\n"`` (which cannot
occur in normalized text, so matches never span documents), built once per run (a ``CorpusText`` of
the same document objects shares it).  Evidence strings are located in that string:

- many at once with :meth:`CorpusText.prefetch` (loading a question set, building an index, a run):
  on large corpora (``CorpusText.BIGRAM_INDEX_MIN_CHARS``) two vectorized passes over the text find
  each string's rarest hashed q-gram and its candidate positions, checked with ``str.startswith``;
- one at a time otherwise: a ``str.find`` loop, and after ``CorpusText.BIGRAM_AFTER_SCANS`` such
  lookups on a large corpus, from the positions of its rarest character bigram (one sorted array of
  all bigrams, built once).

Match offsets are mapped to documents and raw offsets with numpy, and raw spans to chunks with
``numpy.searchsorted`` over each document's chunk starts and ends (built for a document when evidence
is first found in it).  Results are cached per normalized string, and raw strings are normalized once,
so judging a ranked list is a set lookup per chunk.
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Dict, FrozenSet, Iterable, List, Optional, Tuple, Union

from ragexam.data.chunking import Chunking
from ragexam.data.normalization import NormalizedText, normalization_signature, normalize, normalize_with_offsets
from ragexam.data.schema import Document, Question
from ragexam.errors import number_in
from ragexam.signature import Signature

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

__all__ = ["Occurrence", "CorpusText", "BoundaryCut", "EvidenceIndex", "EvidenceCoverage", "Coverage",
           "evidence_coverage", "check_min_fraction", "EvidenceMatcher", "longest_common_substring",
           "longest_common_piece"]


@dataclass(frozen=True)
class Occurrence:
    """One occurrence of a normalized evidence string: raw ``[start, end)`` of ``doc_id``'s content.

    ``norm_start``/``norm_end`` are the offsets in :attr:`CorpusText.text`.
    """

    doc_id: str
    start: int
    end: int
    norm_start: int
    norm_end: int


class _CorpusState:
    """What a :class:`CorpusText` computes from its documents, shared by every ``CorpusText`` built from the
    same document objects while one of them is alive (see :class:`CorpusText`).

    The normalized text is built with :func:`normalize` (a C-speed whitespace collapse for ordinary text);
    the raw offsets of a document's normalized characters (:func:`normalize_with_offsets`, whose text is
    the same) are computed only for documents where evidence is found, and kept."""

    __slots__ = ("documents", "doc_ids", "ignore_punctuation", "text", "doc_offsets", "spans", "located",
                 "normalized", "bigrams", "scans", "__weakref__")

    def __init__(self, documents: List[Document], ignore_punctuation: bool) -> None:
        import numpy as np

        self.documents = documents  # held so that the identity key stays valid while this state lives
        self.doc_ids = [d.doc_id for d in documents]
        self.ignore_punctuation = ignore_punctuation
        texts = [normalize(d.content, ignore_punctuation=ignore_punctuation) for d in documents]
        lengths = np.fromiter((len(t) + 1 for t in texts), dtype=np.int64, count=len(texts))
        self.doc_offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64) if texts else \
            np.zeros(0, dtype=np.int64)
        self.text = "\n".join(texts)
        self.spans: Dict[int, NormalizedText] = {}
        self.located: Dict[str, Tuple["Occurrence", ...]] = {}
        self.normalized: Dict[str, str] = {}
        self.bigrams = None
        self.scans = 0

    def doc_spans(self, d: int) -> NormalizedText:
        """Document ``d``'s normalized text with the raw span of every character (computed once)."""
        hit = self.spans.get(d)
        if hit is None:
            hit = self.spans[d] = normalize_with_offsets(self.documents[d].content,
                                                         ignore_punctuation=self.ignore_punctuation)
        return hit

    def raw_arrays(self) -> "Tuple[np.ndarray, np.ndarray]":
        """``(starts, ends)`` for the whole text (``-1`` at separators): every document's offsets."""
        import numpy as np

        sep = np.full(1, -1, dtype=np.int64)
        st: List["np.ndarray"] = []
        en: List["np.ndarray"] = []
        for d in range(len(self.documents)):
            nt = self.doc_spans(d)
            if d:
                st.append(sep)
                en.append(sep)
            st.append(nt.starts)
            en.append(nt.ends)
        if not st:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        return np.concatenate(st), np.concatenate(en)


_HASH_MUL = 0x9E3779B97F4A7C15  # odd 64-bit multiplier of the q-gram rolling hash (wraps mod 2**64)


def _qgram_hash(chars: str) -> int:
    """The 64-bit hash :meth:`CorpusText._qgram_blocks` computes for the q-gram ``chars``."""
    h = 0
    for ch in chars:
        h = (h * _HASH_MUL + ord(ch)) & 0xFFFFFFFFFFFFFFFF
    return h


def _member(values: "np.ndarray", sorted_keys: "np.ndarray") -> "np.ndarray":
    """Boolean mask: which ``values`` are in ``sorted_keys`` (a sorted, non-empty uint64 array).  A table of
    the keys' top 22 bits discards almost every value first; only the rest is binary-searched."""
    import numpy as np

    table = np.zeros(1 << 22, dtype=bool)
    table[(sorted_keys >> np.uint64(42)).astype(np.intp)] = True
    mask = table[(values >> np.uint64(42)).astype(np.intp)]
    maybe = np.flatnonzero(mask)
    if maybe.shape[0]:
        v = values[maybe]
        idx = np.minimum(np.searchsorted(sorted_keys, v), sorted_keys.shape[0] - 1)
        mask[maybe] = sorted_keys[idx] == v
    return mask


_STATES: "weakref.WeakValueDictionary[tuple, _CorpusState]" = weakref.WeakValueDictionary()
_STATES_LOCK = threading.Lock()


class CorpusText:
    """The normalized text of a corpus, for locating evidence strings fast.

    ``text`` is the normalized documents joined by ``"\\n"``; ``starts``/``ends`` give each
    normalized character's raw span in its own document (``-1`` at separators).

    One per run: a ``CorpusText`` built from the same document objects (and the same
    ``ignore_punctuation``) as one that is still alive shares its normalized text, its located
    evidence and its bigram index, so loading a question set (which checks every evidence string) and
    judging the run locate each evidence string once.  Raw evidence strings are normalized once each.
    """

    def __init__(self, documents: Iterable[Document], *, ignore_punctuation: bool = False) -> None:
        docs = list(documents)
        key = (bool(ignore_punctuation), tuple(map(id, docs)))
        with _STATES_LOCK:
            state = _STATES.get(key)
            if state is None or len(state.documents) != len(docs) or any(
                    a is not b for a, b in zip(state.documents, docs)):
                state = _CorpusState(docs, ignore_punctuation)
                _STATES[key] = state
        self._state = state
        self.ignore_punctuation = ignore_punctuation
        self.doc_ids: List[str] = state.doc_ids
        self.text: str = state.text
        self.doc_offsets = state.doc_offsets
        self._cache: Dict[str, Tuple[Occurrence, ...]] = state.located
        self._raw: "Optional[Tuple[np.ndarray, np.ndarray]]" = None

    @property
    def starts(self) -> "np.ndarray":
        """Raw start (in its own document) of every character of :attr:`text`; ``-1`` at separators.  Built on
        first use (locating evidence never needs the whole array)."""
        if self._raw is None:
            self._raw = self._state.raw_arrays()
        return self._raw[0]

    @property
    def ends(self) -> "np.ndarray":
        """Raw end of every character of :attr:`text` (see :attr:`starts`)."""
        if self._raw is None:
            self._raw = self._state.raw_arrays()
        return self._raw[1]

    def raw_offsets(self, norm_start: int, norm_end: int) -> "Tuple[np.ndarray, np.ndarray]":
        """``(starts, ends)`` of the normalized characters ``[norm_start, norm_end)``, all in one document."""
        import numpy as np

        d = int(np.searchsorted(self.doc_offsets, norm_start, side="right")) - 1
        nt = self._state.doc_spans(d)
        base = int(self.doc_offsets[d])
        return nt.starts[norm_start - base:norm_end - base], nt.ends[norm_start - base:norm_end - base]

    @property
    def signature(self) -> str:
        return normalization_signature(self.ignore_punctuation)

    def normalize(self, evidence: str) -> str:
        """``normalize(evidence)`` with this corpus text's settings (memoized)."""
        memo = self._state.normalized
        hit = memo.get(evidence)
        if hit is None:
            hit = memo[evidence] = normalize(evidence, ignore_punctuation=self.ignore_punctuation)
        return hit

    def locate(self, evidence: str) -> Tuple[Occurrence, ...]:
        """Every occurrence of ``evidence`` (raw; it is normalized here), in corpus order."""
        return self.locate_normalized(self.normalize(evidence))

    def locate_normalized(self, nev: str) -> Tuple[Occurrence, ...]:
        """Every occurrence of the already-normalized string ``nev``; ``()`` for ``""``."""
        hit = self._cache.get(nev)
        if hit is not None:
            return hit
        if not nev:
            return ()
        return self._store(nev, self._find_all(nev))

    #: texts with at least this many normalized characters locate many strings at once in one pass
    #: (:meth:`prefetch`) and, after :data:`BIGRAM_AFTER_SCANS` single lookups, build the bigram index
    BIGRAM_INDEX_MIN_CHARS = 200_000
    #: single (not prefetched) lookups on a big text before the bigram index is built: the index costs a
    #: sort of the whole text, about as much as a few hundred ``str.find`` scans
    BIGRAM_AFTER_SCANS = 256
    #: characters per hashed q-gram of :meth:`prefetch`, and text characters hashed per block
    QGRAM = 6
    _BLOCK = 1 << 22

    def _find_all(self, nev: str) -> List[int]:
        """Start offsets of every (possibly overlapping) occurrence of ``nev`` in ``text``, ascending."""
        state = self._state
        big = len(self.text) >= self.BIGRAM_INDEX_MIN_CHARS
        if big and len(nev) >= 2:
            state.scans += 1
            if state.bigrams is not None or state.scans > self.BIGRAM_AFTER_SCANS:
                cand = self._bigram_candidates(nev)
                if cand is not None:
                    text = self.text
                    return [p for p in cand if text.startswith(nev, p)]
        found = []
        find = self.text.find
        p = find(nev)
        while p != -1:
            found.append(p)
            p = find(nev, p + 1)
        return found

    def _store(self, nev: str, found: List[int]) -> Tuple[Occurrence, ...]:
        import numpy as np

        if not found:
            occ: Tuple[Occurrence, ...] = ()
        else:
            a = np.asarray(found, dtype=np.int64)
            b = a + len(nev)
            di = np.searchsorted(self.doc_offsets, a, side="right") - 1
            occs = []
            for d, x, y in zip(di.tolist(), a.tolist(), b.tolist()):
                nt = self._state.doc_spans(d)
                base = int(self.doc_offsets[d])
                occs.append(Occurrence(self.doc_ids[d], int(nt.starts[x - base]), int(nt.ends[y - 1 - base]), x, y))
            occ = tuple(occs)
        self._cache[nev] = occ
        return occ

    def prefetch(self, evidence: Iterable[str]) -> None:
        """Locate many evidence strings (raw) at once; later :meth:`locate` calls read the result.

        On a big text (:data:`BIGRAM_INDEX_MIN_CHARS`) this is one vectorized pass over the text in
        blocks instead of one scan per string: every string of at least :data:`QGRAM` characters gets
        up to four candidate q-grams (spread along it); the pass counts where each occurs (64-bit rolling
        hash), and the positions of each string's rarest one are checked with ``str.startswith``.  Hash
        collisions only add candidates, so the result equals :meth:`locate` of each string.  Shorter
        strings, and strings whose rarest q-gram is very common, are located one by one.
        """
        todo = list(dict.fromkeys(n for n in map(self.normalize, evidence) if n and n not in self._cache))
        if not todo:
            return
        if len(self.text) < self.BIGRAM_INDEX_MIN_CHARS or len(todo) < 8:
            for nev in todo:
                self.locate_normalized(nev)
            return
        import numpy as np

        q = self.QGRAM
        long_ = [n for n in todo if len(n) >= q]
        for nev in todo:
            if len(nev) < q:
                self.locate_normalized(nev)
        if not long_:
            return
        # candidate q-grams: up to four offsets per string
        offsets = [sorted({0, (len(n) - q) // 3, 2 * (len(n) - q) // 3, len(n) - q}) for n in long_]
        cand = np.asarray([_qgram_hash(n[o:o + q]) for n, offs in zip(long_, offsets) for o in offs],
                          dtype=np.uint64)
        uniq = np.unique(cand)
        limit = max(1024, len(self.text) // 5000)  # a string with no rarer q-gram is scanned instead
        counts = np.zeros(uniq.shape[0], dtype=np.int64)
        kept_pos, kept_key = [], []
        active = uniq
        for start, h in self._qgram_blocks():
            if not active.shape[0]:
                break
            pos = np.flatnonzero(_member(h, active))
            if not pos.shape[0]:
                continue
            key = np.searchsorted(uniq, h[pos])
            counts += np.bincount(key, minlength=uniq.shape[0])
            rare = counts[key] <= limit  # a q-gram seen more than `limit` times is useless: dropped
            kept_pos.append(pos[rare] + start)
            kept_key.append(key[rare])
            active = uniq[counts <= limit]
        pos_all = np.concatenate(kept_pos) if kept_pos else np.zeros(0, dtype=np.int64)
        key_all = np.concatenate(kept_key) if kept_key else np.zeros(0, dtype=np.intp)
        order = np.argsort(key_all, kind="stable")
        pos_all, key_all = pos_all[order], key_all[order]
        bounds = np.searchsorted(key_all, np.arange(uniq.shape[0] + 1))
        text = self.text
        i = 0
        for n, offs in zip(long_, offsets):
            best = None  # (count, offset, key index): the rarest q-gram of this string
            for o in offs:
                k = int(np.searchsorted(uniq, cand[i]))
                i += 1
                c = int(counts[k])
                if best is None or c < best[0]:
                    best = (c, o, k)
            c, o, k = best
            if c > limit:
                self.locate_normalized(n)  # every q-gram of it is common: one scan
                continue
            hits = [p - o for p in pos_all[bounds[k]:bounds[k + 1]].tolist() if p >= o and text.startswith(n, p - o)]
            self._store(n, sorted(set(hits)))

    def _qgram_blocks(self):
        """``(start, hashes)`` over the text in blocks: ``hashes[i]`` is the hash of ``text[start + i:][:QGRAM]``."""
        import numpy as np

        q, text, n = self.QGRAM, self.text, len(self.text)
        for start in range(0, max(0, n - q + 1), self._BLOCK):
            seg = text[start:start + self._BLOCK + q - 1]
            cps = np.frombuffer(seg.encode("utf-32-le", "surrogatepass"), dtype="<u4").astype(np.uint64)
            m = cps.shape[0] - q + 1
            if m <= 0:
                continue
            h = cps[:m].copy()
            for j in range(1, q):
                h *= _HASH_MUL
                h += cps[j:j + m]
            yield start, h

    def _bigram_candidates(self, nev: str) -> Optional[List[int]]:
        """Candidate starts of ``nev`` from its rarest character bigram; ``None`` if that bigram
        is so common that a plain ``str.find`` scan is cheaper."""
        import numpy as np

        state = self._state
        if state.bigrams is None:
            cps = np.frombuffer(self.text.encode("utf-32-le", "surrogatepass"), dtype="<u4").astype(np.uint64)
            codes = (cps[:-1] << np.uint64(21)) | cps[1:]          # code points are < 2**21
            order = np.argsort(codes, kind="stable")
            state.bigrams = (codes[order], order)
        codes, order = state.bigrams
        ev = np.frombuffer(nev.encode("utf-32-le", "surrogatepass"), dtype="<u4").astype(np.uint64)
        bg = (ev[:-1] << np.uint64(21)) | ev[1:]
        lo = np.searchsorted(codes, bg, side="left")
        hi = np.searchsorted(codes, bg, side="right")
        j = int(np.argmin(hi - lo))
        n = int(hi[j] - lo[j])
        if n > max(64, len(self.text) // 2000):
            return None
        starts = np.sort(order[lo[j]:hi[j]]) - j
        return starts[starts >= 0].tolist()

    def docs_containing(self, evidence: str) -> List[str]:
        """Ids of the documents where ``evidence`` occurs, each once, in corpus order."""
        return list(dict.fromkeys(o.doc_id for o in self.locate(evidence)))


@dataclass(frozen=True)
class BoundaryCut:
    """An occurrence ``[evidence_start, evidence_end)`` of ``doc_id`` that no chunk contains whole.

    ``offsets``: the chunk boundaries (raw offsets of chunk starts/ends) strictly inside the
    occurrence, ascending (``offset`` is the first); ``chunk_ids``: the chunks overlapping it.
    """

    doc_id: str
    evidence_start: int
    evidence_end: int
    offsets: Tuple[int, ...]
    chunk_ids: Tuple[str, ...]

    @property
    def offset(self) -> Optional[int]:
        return self.offsets[0] if self.offsets else None

    def to_dict(self) -> Dict[str, object]:
        return {"doc_id": self.doc_id, "evidence_start": self.evidence_start,
                "evidence_end": self.evidence_end, "offsets": list(self.offsets),
                "chunk_ids": list(self.chunk_ids)}


def check_min_fraction(min_fraction: Optional[float]) -> Optional[float]:
    """``min_fraction`` if it is ``None`` or in ``(0, 1]``; otherwise ``InputError``."""
    if min_fraction is None:
        return None
    return number_in(min_fraction, 0.0, 1.0, above=True, source="min_fraction",
                     fix="E.g. 0.5, or None for whole containment.")


class _DocArrays(dict):
    """``doc_id -> (chunk starts, chunk ends, chunk ids, monotone)``, built for a document on first use (a
    run looks up only the documents where evidence occurs)."""

    def __init__(self, by_doc) -> None:
        super().__init__()
        self._by_doc = by_doc

    def __missing__(self, doc_id: str) -> tuple:
        import numpy as np

        chunks = self._by_doc[doc_id]  # KeyError: the document has no chunks
        cs = np.asarray([c.start for c in chunks], dtype=np.int64)
        ce = np.asarray([c.end for c in chunks], dtype=np.int64)
        monotone = bool(np.all(np.diff(cs) >= 0) and np.all(np.diff(ce) >= 0))
        arr = self[doc_id] = (cs, ce, [c.chunk_id for c in chunks], monotone)
        return arr

    def get(self, doc_id: str, default=None):
        return self[doc_id] if doc_id in self._by_doc else default

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._by_doc


class EvidenceIndex:
    """For one chunking of a corpus: which chunks contain / cover each evidence string.

    Build once per chunking (``EvidenceIndex.build(corpus, chunking)``), then every lookup is a
    cached set.  ``signature`` is ``chunker:<spec>|norm:...|cover:...``.
    """

    def __init__(self, corpus_text: CorpusText, chunking: Chunking, *,
                 min_fraction: Optional[float] = None) -> None:
        self.corpus_text = corpus_text
        self.chunking = chunking
        self.min_fraction = check_min_fraction(min_fraction)
        self._doc_arrays = _DocArrays(chunking.by_doc)
        self._whole: Dict[str, FrozenSet[str]] = {}
        self._cover: Dict[str, FrozenSet[str]] = {}

    @classmethod
    def build(cls, documents: Union[Iterable[Document], CorpusText], chunking: Chunking, *,
              ignore_punctuation: bool = False, min_fraction: Optional[float] = None,
              evidence: Iterable[str] = ()) -> "EvidenceIndex":
        """An index over ``chunking`` of ``documents`` (or a prepared :class:`CorpusText`, reused
        across chunkings); ``evidence`` strings are precomputed if given."""
        ct = documents if isinstance(documents, CorpusText) else \
            CorpusText(documents, ignore_punctuation=ignore_punctuation)
        idx = cls(ct, chunking, min_fraction=min_fraction)
        evidence = list(evidence)
        ct.prefetch(evidence)
        for e in evidence:
            idx.covering(e)
        return idx

    @property
    def signature(self) -> Signature:
        cover = "whole" if self.min_fraction is None else f"overlap>={self.min_fraction:g}"
        return Signature([("chunker", self.chunking.spec), *Signature.parse(self.corpus_text.signature).items(),
                          ("cover", cover)], version=False)

    @property
    def policy(self) -> str:
        return "whole" if self.min_fraction is None else f"overlap>={self.min_fraction:g}"

    # -- per occurrence ---------------------------------------------------------------------

    def _containing(self, occ: Occurrence) -> List[str]:
        arr = self._doc_arrays.get(occ.doc_id)
        if arr is None:
            return []
        cs, ce, ids, monotone = arr
        if monotone:
            import numpy as np

            hi = int(np.searchsorted(cs, occ.start, side="right"))
            lo = int(np.searchsorted(ce, occ.end, side="left"))
            return ids[lo:hi]
        mask = (cs <= occ.start) & (ce >= occ.end)
        return [ids[i] for i in mask.nonzero()[0].tolist()]

    def _overlapping(self, occ: Occurrence) -> List[int]:
        cs, ce, ids, monotone = self._doc_arrays[occ.doc_id]
        if monotone:
            import numpy as np

            lo = int(np.searchsorted(ce, occ.start, side="right"))
            hi = int(np.searchsorted(cs, occ.end, side="left"))
            return list(range(lo, hi))
        mask = (cs < occ.end) & (ce > occ.start)
        return mask.nonzero()[0].tolist()

    def _partial(self, occ: Occurrence, need: float) -> List[str]:
        import numpy as np

        if occ.doc_id not in self._doc_arrays:
            return []
        cs, ce, ids, _ = self._doc_arrays[occ.doc_id]
        ks = self._overlapping(occ)
        if not ks:
            return []
        sub_s, sub_e = self.corpus_text.raw_offsets(occ.norm_start, occ.norm_end)
        lo = np.searchsorted(sub_s, cs[ks], side="left")
        hi = np.searchsorted(sub_e, ce[ks], side="right")
        inside = np.maximum(hi - lo, 0)
        return [ids[k] for k, n in zip(ks, inside.tolist()) if n >= need]

    # -- per evidence string ----------------------------------------------------------------

    def whole(self, evidence: str) -> FrozenSet[str]:
        """Ids of the chunks containing ``evidence`` whole."""
        nev = self.corpus_text.normalize(evidence)
        hit = self._whole.get(nev)
        if hit is None:
            ids: List[str] = []
            for occ in self.corpus_text.locate_normalized(nev):
                ids.extend(self._containing(occ))
            hit = self._whole[nev] = frozenset(ids)
        return hit

    def covering(self, evidence: str) -> FrozenSet[str]:
        """Ids of the chunks covering ``evidence`` under this index's policy."""
        if self.min_fraction is None:
            return self.whole(evidence)
        nev = self.corpus_text.normalize(evidence)
        hit = self._cover.get(nev)
        if hit is None:
            need = self.min_fraction * len(nev) - 1e-9
            ids: List[str] = []
            for occ in self.corpus_text.locate_normalized(nev):
                ids.extend(self._partial(occ, need))
            hit = self._cover[nev] = frozenset(ids)
        return hit

    def covers(self, chunk_id: str, evidence: str) -> bool:
        return chunk_id in self.covering(evidence)

    def cuts(self, evidence: str) -> Tuple[BoundaryCut, ...]:
        """Every occurrence of ``evidence`` that no chunk contains whole, with the boundaries inside it."""
        out = []
        for occ in self.corpus_text.locate(evidence):
            if occ.doc_id not in self._doc_arrays:  # the document has no chunks at all
                out.append(BoundaryCut(occ.doc_id, occ.start, occ.end, (), ()))
                continue
            if self._containing(occ):
                continue
            cs, ce, ids, _ = self._doc_arrays[occ.doc_id]
            ks = self._overlapping(occ)
            bounds = sorted({int(x) for k in ks for x in (cs[k], ce[k]) if occ.start < x < occ.end})
            out.append(BoundaryCut(occ.doc_id, occ.start, occ.end, tuple(bounds), tuple(ids[k] for k in ks)))
        return tuple(out)


@dataclass(frozen=True)
class EvidenceCoverage:
    """How one evidence string of one question fares under one chunking.

    ``chunk_ids``: chunks containing it whole (empty: no single chunk has it); ``cuts``: every
    occurrence no chunk contains whole (see :class:`BoundaryCut`); ``occurrences``: where it is.
    """

    query_id: str
    unit_id: str
    evidence: str
    occurrences: Tuple[Occurrence, ...]
    chunk_ids: Tuple[str, ...]
    cuts: Tuple[BoundaryCut, ...]

    @property
    def found_in_corpus(self) -> bool:
        return bool(self.occurrences)

    @property
    def findable(self) -> bool:
        """Some chunk contains the evidence string whole."""
        return bool(self.chunk_ids)

    def to_dict(self) -> Dict[str, object]:
        return {"query_id": self.query_id, "unit_id": self.unit_id, "evidence": self.evidence,
                "found_in_corpus": self.found_in_corpus, "findable": self.findable,
                "chunk_ids": list(self.chunk_ids), "cuts": [c.to_dict() for c in self.cuts]}


@dataclass
class Coverage:
    """What ``ragexam evidence-coverage`` finds (:func:`ragexam.api.evidence_coverage`): where each evidence string sits under a chunking: ``rows`` (one
    :class:`EvidenceCoverage` per evidence string), the ones no chunk contains whole
    (``missing``), and the signature of the chunking and matching settings."""

    signature: str
    rows: List[EvidenceCoverage]

    @property
    def missing(self) -> List[EvidenceCoverage]:
        return [r for r in self.rows if not r.findable]

    def to_dict(self) -> Dict[str, object]:
        return {"signature": self.signature, "evidence": len(self.rows),
                "findable": len(self.rows) - len(self.missing), "coverage": [r.to_dict() for r in self.rows]}


def evidence_coverage(questions: Iterable[Question], index: EvidenceIndex) -> List[EvidenceCoverage]:
    """For every evidence string of every question: the chunks containing it whole, or the cuts.

    An evidence string is *findable* under the chunking when some chunk contains it whole; when
    it is not, ``cuts`` says which chunk boundary cut each occurrence (doc_id, offsets, chunks);
    when it occurs nowhere both are empty and ``found_in_corpus`` is False.
    """
    out = []
    order = {c.chunk_id: i for i, c in enumerate(index.chunking.chunks)}
    for q in questions:
        for unit, ev in q.evidence_units.items():
            ids = tuple(sorted(index.whole(ev), key=order.__getitem__))
            out.append(EvidenceCoverage(q.query_id, unit, ev, index.corpus_text.locate(ev), ids,
                                        index.cuts(ev)))
    return out



# -- evidence in any text (chunks without a location, contexts returned by any pipeline) ------------------------


#: ``len(a) * len(b)`` up to which :func:`longest_common_piece` searches with ``in`` (C speed, fastest for the usual
#: evidence string against a chunk or a passage); above it, a suffix automaton (linear, in Python)
_DIRECT_WORK = 4_000_000


def longest_common_substring(a: str, b: str) -> int:
    """Length of the longest common substring of ``a`` and ``b`` (``0`` when either is empty); see
    :func:`longest_common_piece`."""
    return len(longest_common_piece(a, b))


def longest_common_piece(a: str, b: str) -> str:
    """A longest common substring of ``a`` and ``b`` (``""`` when they share no character).

    Small pairs (``len(a) * len(b)`` up to :data:`_DIRECT_WORK`) grow the best piece one character at a time: at
    each end position of the shorter string, one search (at C speed) for the best length plus one -- a common
    substring ending there is at most one longer than the best so far -- and none while the occurrence found last
    goes on.  Larger pairs run the longer string through a suffix automaton of the shorter
    (:func:`_piece_by_automaton`): time linear in the two lengths.  A 950,000-character string against a
    10,000-character document takes about a second (the former binary search over slices: minutes)."""
    short, long_ = (a, b) if len(a) <= len(b) else (b, a)
    if not short:
        return ""
    if len(short) * len(long_) > _DIRECT_WORK:
        return _piece_by_automaton(short, long_)
    best, end, at = 0, 0, -1  # the best piece is short[end - best:end], found at long_[at:at + best]
    for i in range(len(short)):
        if at >= 0 and end == i and at + best < len(long_) and long_[at + best] == short[i]:
            best, end = best + 1, i + 1  # the same occurrence goes on: no search
            continue
        found = long_.find(short[i - best:i + 1])
        if found >= 0:
            best, end, at = best + 1, i + 1, found
    return short[end - best:end]


def _piece_by_automaton(short: str, long_: str) -> str:
    """:func:`longest_common_piece` by a suffix automaton of ``short`` (at most ``2 * len(short)`` states) that
    ``long_`` is run through once: linear time in both lengths."""
    nxt: List[Dict[str, int]] = [{}]
    link, length = [-1], [0]
    last = 0
    for ch in short:
        cur = len(length)
        nxt.append({})
        link.append(0)
        length.append(length[last] + 1)
        p = last
        while p != -1 and ch not in nxt[p]:
            nxt[p][ch] = cur
            p = link[p]
        if p != -1:
            q = nxt[p][ch]
            if length[p] + 1 == length[q]:
                link[cur] = q
            else:
                clone = len(length)
                nxt.append(dict(nxt[q]))
                link.append(link[q])
                length.append(length[p] + 1)
                while p != -1 and nxt[p].get(ch) == q:
                    nxt[p][ch] = clone
                    p = link[p]
                link[q] = link[cur] = clone
        last = cur
    state, size, best, end = 0, 0, 0, 0
    for j, ch in enumerate(long_):
        while state and ch not in nxt[state]:
            state = link[state]
            size = length[state]
        if ch in nxt[state]:
            state = nxt[state][ch]
            size += 1
        if size > best:
            best, end = size, j + 1
    return long_[end - best:end]


class EvidenceMatcher:
    """Finds evidence strings in texts whose place in the corpus is not known: the one text-level rule.

    *Covers* (the crediting rule for a text, the same normalization as everywhere):

    - ``min_fraction=None`` (``cover:whole``): ``normalize(evidence)`` is a substring of ``normalize(text)``;
    - ``min_fraction=f`` (``cover:overlap>=f``): the longest common substring of the two normalized strings
      has at least ``f * len(normalize(evidence))`` characters.  Unlike :class:`EvidenceIndex`, which counts
      only the part of the evidence at its known location in the corpus, a text-level match cannot tell
      where a piece came from.

    An empty (after normalization) evidence string covers nothing.  Normalized evidence strings are cached,
    so matching many texts against one question costs one normalization per text.
    """

    def __init__(self, *, ignore_punctuation: bool = False, min_fraction: Optional[float] = None) -> None:
        self.ignore_punctuation = ignore_punctuation
        self.min_fraction = check_min_fraction(min_fraction) if min_fraction is not None else None
        self._norm: Dict[str, str] = {}

    @property
    def signature(self) -> Signature:
        cover = "whole" if self.min_fraction is None else f"overlap>={self.min_fraction:g}"
        return normalization_signature(self.ignore_punctuation).extend({"cover": cover})

    def normalize(self, text: str) -> str:
        """``normalize(text)`` with this matcher's settings (cached for evidence strings)."""
        hit = self._norm.get(text)
        if hit is None:
            hit = normalize(text, ignore_punctuation=self.ignore_punctuation)
            if len(self._norm) < 100_000:
                self._norm[text] = hit
        return hit

    def covers_normalized(self, normalized_text: str, evidence: str) -> bool:
        """Whether ``evidence`` (raw) is covered by an already normalized text."""
        nev = self.normalize(evidence)
        if not nev:
            return False
        if self.min_fraction is None:
            return nev in normalized_text
        return longest_common_substring(nev, normalized_text) >= self.min_fraction * len(nev) - 1e-9

    def covers(self, text: str, evidence: str) -> bool:
        """Whether ``text`` covers ``evidence`` (both raw; see the class docstring)."""
        return self.covers_normalized(normalize(text, ignore_punctuation=self.ignore_punctuation), evidence)

    def covered(self, text: str, units: "Dict[str, str] | Iterable[Tuple[str, str]]") -> List[str]:
        """The unit ids of ``units`` (``{unit_id: evidence}``) that ``text`` covers, in the order given."""
        nt = normalize(text, ignore_punctuation=self.ignore_punctuation)
        items = units.items() if isinstance(units, dict) else units
        return [u for u, ev in items if self.covers_normalized(nt, ev)]

    def spans(self, text: str, evidence: str) -> List[Tuple[int, int]]:
        """Raw ``[start, end)`` spans of ``text`` holding every whole occurrence of ``evidence``
        (overlapping occurrences included), in text order; ``[]`` when there is none."""
        nev = self.normalize(evidence)
        if not nev or not text:
            return []
        nt = normalize_with_offsets(text, ignore_punctuation=self.ignore_punctuation)
        out = []
        at = nt.text.find(nev)
        while at != -1:
            out.append(nt.raw_span(at, at + len(nev)))
            at = nt.text.find(nev, at + 1)
        return out
