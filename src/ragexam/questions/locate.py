"""Locating a question's evidence from its answer: which span of its documents supports the answer key.

A team's question set usually has an answer and a document (or page), rarely a verbatim evidence span.
:class:`Locator` finds, for a question ``q`` with answer ``a`` and documents ``D`` (its relevant documents, or
the whole corpus when it has none), the span of ``D`` that supports ``a``, with the runner-up and a confidence.
Everything here is offline and deterministic; the optional model confirmation is in
:mod:`ragexam.questions.locate_set`.

Definitions
-----------
*Sentences* of a document: :func:`ragexam.data.chunking.sentence_spans` (every line break, then Kiwi's sentence
splitter), each cut again after ``. ! ? 。`` followed by whitespace (Kiwi keeps English sentences together).  *Candidates* (:meth:`Locator.candidates`): every sentence of at least :attr:`LocateSettings.min_chars`
normalized characters and at most :attr:`~LocateSettings.max_chars`; a longer sentence (a table row, a PDF line
without punctuation) is replaced by windows of its clauses (cut after ``, ; :`` and whitespace runs) of at most
``max_chars``; and every *window* of two adjacent sentences of one paragraph (no blank line between them) of at most
``max_chars``.  A window is a candidate because an answer often draws on two sentences; it must earn its place
(the window penalty below).

*Terms*: :func:`ragexam.questions.measure.terms` (Kiwi content morphemes for Korean, words otherwise); *bigrams*:
the character bigrams of the normalized, lower-cased text without whitespace; *codes*: the
:data:`~ragexam.questions.measure.CODE` tokens with a digit or two capitals (``VPN-ERR-619``, ``3``, ``TCP``),
lower-cased, compared exactly.

Features of a candidate ``c`` (all in [0, 1]):

====  =================================================================================================
at    the weight of the answer terms found in ``c`` over the weight of the answer's terms (a term weighs by how
      few sentences of the corpus hold it: :meth:`Locator._vocabulary`)
ab    answer bigrams found in ``c``: ``|B(a) & B(c)| / |B(a)|``
code  the answer's codes and numbers found in ``c`` (``at`` when the answer has none)
ap    share of ``c``'s terms that are the answer's: ``|T(a) & T(c)| / |T(c)|``
abp   share of ``c``'s bigrams that are the answer's
qt    the question's terms found in ``c``
sem   e5 (``retrieval/e5``, through the embedding cache) cosine of ``query: q a`` and ``passage: c``, rescaled over
      the question's scored candidates: ``(cos - median) / (max - median)``, at most 1 (0 without e5)
====  =================================================================================================

*Coverage* ``L = 0.5 at + 0.3 ab + 0.2 code`` (how much of the answer the span holds), over the answer's own
content: every term (one the corpus never uses weighs the most) and every bigram -- what the record and the reason
report.  *Matched* ``L'``: the same over the answer's terms and bigrams that occur in the corpus (those are in no
span, so leaving them out changes no span's rank; the confidence counts them through the *matchable* share, the
answer's terms the corpus uses).  *Score* ``S = L' + 0.3 (ap + abp) / 2 + 0.3 qt + 0.2 sem - 0.05 (sentences - 1)``.
The located span is the candidate of highest score (ties: document order) -- but when that is a window and one of
its sentences matches as much of the answer, at least :data:`COVERED`, that sentence (a window earns its place by
what its second sentence adds); the *runner-up* the best candidate that does not overlap it; the *margin*
``M = S(best) - S(runner-up)`` (the best's score when there is none).  Only the :attr:`~LocateSettings.shortlist`
candidates of highest lexical score (``S`` without ``sem``) are embedded; in the whole corpus the candidates are
first narrowed to the :attr:`~LocateSettings.corpus_shortlist` sentences BM25 ranks highest for ``q a``.

*Confidence* ``C = min(1, L' / 0.6) * min(1, M / 0.3) * min(1, matchable / 0.5)``: high when the span holds most
of the answer *and* no other span of the documents comes close; halved when the question has no answer key (only
the question was matched).
A span is *confident* when ``C >= threshold`` (:data:`DEFAULT_THRESHOLD`, chosen on held-out data:
docs/measurements/locate.md).  Coverage alone would trust a span whose twin sits in another document; margin alone
a span that holds little of the answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Dict, FrozenSet, Iterable, List, Mapping, Optional, Sequence, Tuple

from ragexam.data.normalization import normalize
from ragexam.data.schema import Document
from ragexam.errors import integer_in, number_in

if TYPE_CHECKING:  # pragma: no cover
    from ragexam.retrieval.bm25 import BM25Retriever
    from ragexam.retrieval.cache import Cache
    from ragexam.retrieval.embedders import Embedder

__all__ = ["LocateSettings", "Span", "Scored", "Location", "Locator", "DEFAULT_THRESHOLD", "FEATURES", "NEEDED_SHARE",
           "confidence", "confidence_text", "overlaps", "COVERED"]

#: the confidence at which a located span is written as evidence (docs/measurements/locate.md)
DEFAULT_THRESHOLD = 0.6
#: a document of a multi-document question is needed when its span holds at least this share of the answer that the
#: spans of the other documents do not (:meth:`Locator.gain`; docs/measurements/locate.md)
NEEDED_SHARE = 0.1
#: characters of the documents whose sentences give the term weights (:meth:`Locator._vocabulary`): Kiwi reads about
#: 100k characters a second, so a large corpus costs a few seconds, not one pass over all of it
VOCABULARY_SAMPLE = 400_000
#: the coverage at which a span holds the answer fully, as far as the confidence goes (:func:`confidence`)
COVERED = 0.6
#: the features of a scored candidate, in the order of the module docstring's table
FEATURES = ("at", "ab", "code", "ap", "abp", "qt", "sem")
_CLAUSE_END = re.compile(r"[,;:，；：](?=\s)|\s{2,}")
_PARAGRAPH_BREAK = re.compile(r"\n[^\S\n]*\n")


@dataclass(frozen=True)
class LocateSettings:
    """How the locator scores (module docstring).  ``threshold``: the confidence at which a span is written as
    evidence; ``semantic``: use e5 (off: ``sem`` is 0); ``windows``: two-sentence windows are candidates."""

    threshold: float = DEFAULT_THRESHOLD
    min_chars: int = 8
    max_chars: int = 320
    windows: bool = True
    semantic: bool = True
    shortlist: int = 12
    corpus_shortlist: int = 40
    language: str = "auto"

    def __post_init__(self) -> None:
        t = self.threshold
        number_in(t, 0.0, 1.0, source="--threshold", field="threshold",
                  what=f"the confidence a located span needs to be written as evidence (default {DEFAULT_THRESHOLD}), "
                       "a number")
        for name in ("min_chars", "max_chars", "shortlist", "corpus_shortlist"):
            v = getattr(self, name)
            integer_in(v, 1, source=name, field=name)

    @property
    def signature(self) -> str:
        return (f"locate:offline/1|threshold:{self.threshold:g}|span:{self.min_chars}-{self.max_chars}|"
                f"windows:{'2' if self.windows else '1'}|sem:{'e5' if self.semantic else 'off'}|"
                f"shortlist:{self.shortlist}|corpus:bm25-top{self.corpus_shortlist}")


@dataclass(frozen=True)
class Span:
    """A candidate: ``content[start:end]`` of ``doc_id`` (raw offsets), made of ``sentences`` sentences."""

    doc_id: str
    start: int
    end: int
    text: str
    sentences: int = 1

    def to_dict(self) -> Dict[str, Any]:
        return {"doc_id": self.doc_id, "start": self.start, "end": self.end, "text": self.text,
                "sentences": self.sentences}


def overlaps(a: Span, b: Span) -> bool:
    """Two spans of one document that share a character."""
    return a.doc_id == b.doc_id and a.start < b.end and b.start < a.end


@dataclass(frozen=True)
class Scored:
    """A candidate with its ``score``, ``coverage`` and each feature (:data:`FEATURES`)."""

    span: Span
    score: float
    coverage: float
    features: Mapping[str, float] = field(default_factory=dict)
    #: the coverage formula over the part of the answer (or of its rest) the corpus can hold: what the score and
    #: the confidence read (``coverage`` is over the whole answer's own content)
    matched: Optional[float] = None

    def to_dict(self) -> Dict[str, Any]:
        return {**self.span.to_dict(), "score": round(self.score, 4), "coverage": round(self.coverage, 4),
                **({"matched": round(self.matched, 4)} if self.matched is not None else {}),
                "features": {k: round(float(v), 4) for k, v in self.features.items()}}


def confidence_text(value: float, threshold: Optional[float] = None) -> str:
    """A confidence as every output shows it: the stored value (4 decimals) with 2; one below ``threshold`` never
    reads as reaching it (0.5996 is "0.5996", not "0.60")."""
    v = round(float(value), 4)
    text = f"{v:.2f}"
    if threshold is not None and v < threshold <= float(text):
        text = f"{v:.4f}".rstrip("0")
    return text


def confidence(coverage: float, margin: float, *, has_answer: bool = True, matchable: float = 1.0) -> float:
    """``min(1, coverage / 0.6) * min(1, margin / 0.3) * min(1, matchable / 0.5)``, halved without an answer key
    (module docstring)."""
    c = min(1.0, max(0.0, coverage) / COVERED) * min(1.0, max(0.0, margin) / 0.3) * min(1.0, max(0.0, matchable) / 0.5)
    return c if has_answer else c / 2


@dataclass(frozen=True)
class Location:
    """Where one question's answer was found in one scope (one relevant document, or the whole corpus): the
    ``best`` candidate, the ``runner_up``, the ``margin`` and the ``confidence``; ``scope`` is ``document``,
    ``corpus`` or ``hints`` (a trace's retrieved documents: :meth:`Locator.locate_hinted`); ``best`` is ``None`` when
    the scope has no candidate (an empty document)."""

    scope: str
    doc_id: Optional[str]
    best: Optional[Scored]
    runner_up: Optional[Scored]
    margin: float
    confidence: float
    has_answer: bool
    #: whether the answer needs this document (:meth:`Locator.locate`: false when the spans found in the
    #: question's other documents already hold it)
    needed: bool = True
    #: what was matched: ``answer`` (the whole answer key) or ``rest`` (the part other documents do not hold)
    part: str = "answer"

    def confident(self, threshold: float) -> bool:
        return self.best is not None and self.confidence >= threshold

    def to_dict(self) -> Dict[str, Any]:
        return {"scope": self.scope, "doc_id": self.doc_id, "confidence": round(self.confidence, 4),
                "margin": round(self.margin, 4), "needed": self.needed, "part": self.part,
                "best": self.best.to_dict() if self.best is not None else None,
                "runner_up": self.runner_up.to_dict() if self.runner_up is not None else None}


_SENTENCE_END = re.compile(r"(?<=[.!?。])\s+")


def _sentence_ends(content: str, spans: Sequence[Tuple[int, int]]) -> List[Tuple[int, int]]:
    """``spans`` (Kiwi's sentences) cut again after ``. ! ? 。`` followed by whitespace: Kiwi does not split English
    text at its periods."""
    out: List[Tuple[int, int]] = []
    for a, b in spans:
        start = a
        for m in _SENTENCE_END.finditer(content, a, b):
            if m.start() > start:
                out.append((start, m.start()))
            start = m.end()
        if start < b:
            out.append((start, b))
    return out


def _bigrams(text: str) -> FrozenSet[str]:
    t = "".join(normalize(text).lower().split())
    return frozenset(t[i:i + 2] for i in range(len(t) - 1)) or (frozenset([t]) if t else frozenset())


def _codes(text: str) -> FrozenSet[str]:
    from ragexam.questions.measure import CODE

    return frozenset(m.group().lower() for m in CODE.finditer(normalize(text))
                     if any(ch.isdigit() for ch in m.group()) or sum(ch.isupper() for ch in m.group()) >= 2)


def _share(part: FrozenSet[str], whole: FrozenSet[str]) -> float:
    return len(part & whole) / len(part) if part else 0.0


@dataclass(frozen=True)
class _Text:
    """What the features read of one text: terms, bigrams, codes."""

    terms: FrozenSet[str]
    bigrams: FrozenSet[str]
    codes: FrozenSet[str]


class Locator:
    """Locates answers in ``documents`` (module docstring).  Sentences, terms and vectors are computed once per
    text and kept, so locating many questions in the same documents costs each text once.

    :param embedder: the e5 embedder (default: the bundled offline ``E5Embedder``) and ``cache`` the embedding
        cache (:func:`ragexam.retrieval.cache.open_cache`; default: the user's), used when ``settings.semantic``.
    """

    def __init__(self, documents: Iterable[Document], settings: Optional[LocateSettings] = None, *,
                 embedder: Optional[Embedder] = None, cache: Optional[Cache] = None) -> None:
        self.documents = {d.doc_id: d for d in documents}
        self.settings = settings or LocateSettings()
        self.language = self._language()
        self._embedder, self._cache = embedder, cache
        self._sentences: Dict[str, List[Tuple[int, int]]] = {}
        self._candidates: Dict[str, List[Span]] = {}
        self._texts: Dict[str, _Text] = {}
        self._vectors: Dict[Tuple[str, str], Any] = {}
        self._bm25: Optional[BM25Retriever] = None
        self._vocab: Optional[Tuple[Dict[str, float], FrozenSet[str]]] = None
        self._n_sampled = 0  # sentences the term weights were counted on
        self._single: List[Tuple[str, int]] = []
        self._bm25_empty = False  # (doc_id, candidate index) of each sentence BM25 indexed

    def _language(self) -> str:
        if self.settings.language in ("ko", "en"):
            return self.settings.language
        from ragexam.metrics.judge.prompts import detect_language

        return detect_language([d.content[:2000] for d in list(self.documents.values())[:200]])

    # -- candidates ------------------------------------------------------------------------------------------
    def prepare(self, doc_ids: Iterable[str]) -> None:
        """Split the documents ``doc_ids`` into sentences (one Kiwi batch for all of them)."""
        from ragexam.data.chunking import sentence_spans_many

        todo = [d for d in dict.fromkeys(doc_ids) if d not in self._sentences]
        if todo:
            for d, spans in zip(todo, sentence_spans_many([self.documents[d].content for d in todo])):
                self._sentences[d] = _sentence_ends(self.documents[d].content, spans)

    def candidates(self, doc_id: str) -> List[Span]:
        """The candidate spans of one document (module docstring), in document order."""
        hit = self._candidates.get(doc_id)
        if hit is None:
            self.prepare([doc_id])
            hit = self._candidates[doc_id] = self._make_candidates(doc_id)
        return hit

    def _make_candidates(self, doc_id: str) -> List[Span]:
        s = self.settings
        content = self.documents[doc_id].content
        sents = self._sentences[doc_id]
        out: List[Span] = []
        for i, (a, b) in enumerate(sents):
            if len(normalize(content[a:b])) < s.min_chars:
                continue
            if b - a > s.max_chars:
                out.extend(self._clauses(doc_id, content, a, b))
            else:
                out.append(Span(doc_id, a, b, content[a:b]))
            if s.windows and i + 1 < len(sents):
                c, d = sents[i + 1]
                if d - a <= s.max_chars and not _PARAGRAPH_BREAK.search(content, b, c) and \
                        len(normalize(content[c:d])) >= s.min_chars:
                    out.append(Span(doc_id, a, d, content[a:d], 2))
        return out

    def _clauses(self, doc_id: str, content: str, a: int, b: int) -> List[Span]:
        """Windows of consecutive clauses of the long sentence ``content[a:b]``, each at most ``max_chars``."""
        cuts = [a] + [m.end() for m in _CLAUSE_END.finditer(content, a, b)] + [b]
        pieces = [(x, y) for x, y in zip(cuts, cuts[1:]) if content[x:y].strip()]
        out: List[Span] = []
        for i, (x, _) in enumerate(pieces):
            end = None
            for _, y in pieces[i:]:
                if y - x > self.settings.max_chars:
                    break
                end = y
            if end is None:  # one clause longer than max_chars: a window of max_chars characters
                end = x + self.settings.max_chars
            start = x + (len(content[x:end]) - len(content[x:end].lstrip()))
            stop = start + len(content[start:end].rstrip())
            if len(normalize(content[start:stop])) >= self.settings.min_chars:
                out.append(Span(doc_id, start, stop, content[start:stop]))
        return list({(sp.start, sp.end): sp for sp in out}.values())

    # -- what the features read ------------------------------------------------------------------------------
    def _read(self, texts: Sequence[str]) -> None:
        from ragexam.questions.measure import terms

        todo = [t for t in dict.fromkeys(texts) if t not in self._texts]
        if todo:
            for t, ts in zip(todo, terms(todo, self.language)):
                self._texts[t] = _Text(frozenset(ts), _bigrams(t), _codes(t))

    def _embed(self, texts: Sequence[str], role: str) -> List[Any]:
        todo = [t for t in dict.fromkeys(texts) if (role, t) not in self._vectors]
        if todo:
            from ragexam.retrieval.dense import l2_normalize
            from ragexam.retrieval.embedding import embed_cached

            if self._embedder is None:
                from ragexam.retrieval.e5.embedder import E5Embedder

                self._embedder = E5Embedder()
            if self._cache is None:
                from ragexam.retrieval.cache import open_cache

                self._cache = open_cache(True, None)
            vectors = l2_normalize(embed_cached(self._embedder, todo, role, self._cache))
            for t, v in zip(todo, vectors):
                self._vectors[(role, t)] = v
        return [self._vectors[(role, t)] for t in texts]

    # -- scoring ---------------------------------------------------------------------------------------------
    def _vocabulary(self) -> Tuple[Dict[str, float], FrozenSet[str]]:
        """Term weights and the bigrams of the corpus, from the sentences of a sample of its documents (every one of
        a corpus of up to :data:`VOCABULARY_SAMPLE` characters; else an even stride through it until that many): a
        term's weight is ``log((N + 1) / (df + 1)) + 1`` with ``df`` the sentences holding it of the ``N``
        sampled."""
        if self._vocab is None:
            import math

            ids = list(self.documents)
            total = sum(len(d.content) for d in self.documents.values())
            step = max(1, round(total / VOCABULARY_SAMPLE))
            sample, size = [], 0
            for d in ids[::step] if step > 1 else ids:
                sample.append(d)
                size += len(self.documents[d].content)
                if size >= VOCABULARY_SAMPLE:
                    break
            self.prepare(sample)
            sents = [self.documents[d].content[a:b] for d in sample for a, b in self._sentences[d]]
            self._read(sents)
            df: Dict[str, int] = {}
            grams: set = set()
            for t in dict.fromkeys(sents):
                x = self._texts[t]
                for term in x.terms:
                    df[term] = df.get(term, 0) + 1
                grams |= x.bigrams
            n = self._n_sampled = len(sents)
            self._vocab = ({t: math.log((n + 1) / (k + 1)) + 1 for t, k in df.items()}, frozenset(grams))
        return self._vocab

    def _key(self, a: _Text) -> Tuple[Dict[str, float], float, FrozenSet[str], float]:
        """What a span is matched against: the weights of the answer's terms that occur in the corpus, their sum,
        the answer's bigrams that occur in the corpus, and the *matchable* share of its terms (an answer written
        mostly in words the corpus never uses is mostly not from the corpus).  Words the corpus never uses are in
        no span: leaving them out changes no span's rank, and the confidence counts them through the matchable
        share."""
        weights, grams = self._vocabulary()
        w = {t: weights[t] for t in a.terms if t in weights}
        share = len(w) / len(a.terms) if a.terms else 0.0
        return w, sum(w.values()), a.bigrams & grams, share

    def _own_key(self, a: _Text) -> Tuple[Dict[str, float], float, FrozenSet[str], float]:
        """:meth:`_key` over the answer's own content: every term (one no sampled sentence holds weighs as a term
        of document frequency 0) and every bigram -- what a span's *coverage* is a share of."""
        import math

        weights, _ = self._vocabulary()
        unseen = math.log(self._n_sampled + 1) + 1
        w = {t: weights.get(t, unseen) for t in a.terms}
        return w, sum(w.values()), a.bigrams, 1.0

    @staticmethod
    def _held(c: _Text, a: _Text, key: Tuple[Dict[str, float], float, FrozenSet[str], float]
              ) -> Tuple[float, Dict[str, float]]:
        """``(0.5 at + 0.3 ab + 0.2 code, the three features)`` of the text ``c`` against the answer ``a`` as
        ``key`` weighs it."""
        w, total, grams, _ = key
        f = {"at": sum(w[t] for t in c.terms & w.keys()) / total if total else 0.0, "ab": _share(grams, c.bigrams)}
        f["code"] = _share(a.codes, c.codes) if a.codes else f["at"]
        return 0.5 * f["at"] + 0.3 * f["ab"] + 0.2 * f["code"], f

    def _lexical(self, span: Span, q: _Text, a: _Text, key: Tuple[Dict[str, float], float, FrozenSet[str], float]
                 ) -> Tuple[float, float, Dict[str, float]]:
        """``(score without sem, matched, features)``: *matched* is the coverage formula over the part of ``a``
        the corpus can hold (:meth:`_key`), what the score and the confidence read."""
        c = self._texts[span.text]
        matched, f = self._held(c, a, key)
        f.update({"ap": _share(c.terms, a.terms), "abp": _share(c.bigrams, a.bigrams), "qt": _share(q.terms, c.terms)})
        score = matched + 0.3 * (f["ap"] + f["abp"]) / 2 + 0.3 * f["qt"] - 0.05 * (span.sentences - 1)
        return score, matched, f

    def score(self, question: str, answer: Optional[str], spans: Sequence[Span], *,
              rest: Optional[_Text] = None) -> List[Scored]:
        """Every span scored (module docstring), best first (ties: the given order); ``rest``: score against this
        part of the answer (:meth:`locate`'s second document) instead of the whole answer.  A span's ``coverage`` is
        always the share of the whole answer's own content it holds (:meth:`_own_key`)."""
        text = answer if answer and answer.strip() else question
        self._read([question, text] + [sp.text for sp in spans])
        q, whole = self._texts[question], self._texts[text]
        a = rest if rest is not None else whole
        key, own = self._key(a), self._own_key(whole)
        scored = []
        for sp in spans:
            s, matched, f = self._lexical(sp, q, a, key)
            scored.append(Scored(sp, s, self._held(self._texts[sp.text], whole, own)[0], {**f, "sem": 0.0},
                                 matched))
        scored.sort(key=lambda x: -x.score)  # stable: document order among equals
        if self.settings.semantic and scored:
            scored = self._semantic(f"{question} {answer or ''}".strip(), scored)
        return scored

    def matchable(self, question: str, answer: Optional[str]) -> float:
        """The share of the answer's terms (the question's without an answer) that occur in the corpus."""
        text = answer if answer and answer.strip() else question
        self._read([text])
        return self._key(self._texts[text])[3]

    def _semantic(self, query: str, scored: List[Scored]) -> List[Scored]:
        import numpy as np

        top = scored[:self.settings.shortlist]
        (qv,) = self._embed([query], "query")
        cos = np.asarray([float(qv @ v) for v in self._embed([x.span.text for x in top], "passage")])
        med, best = float(np.median(cos)), float(cos.max())
        sem = np.minimum(1.0, (cos - med) / (best - med)) if best > med else np.zeros_like(cos)
        out = [replace(x, score=x.score + 0.2 * float(s), features={**x.features, "sem": float(s), "cos": float(c)})
               for x, s, c in zip(top, sem, cos)] + scored[len(top):]
        out.sort(key=lambda x: -x.score)
        return out

    # -- locating --------------------------------------------------------------------------------------------
    def locate(self, question: str, answer: Optional[str], doc_ids: Sequence[str] = ()) -> List[Location]:
        """Where ``answer`` is supported: one :class:`Location` per document of ``doc_ids`` (the question's
        relevant documents), or one in the whole corpus when there are none.

        With several documents the answer is usually split between them: the first location is the best span of
        any of them; each other document is then scored against *the rest of the answer* (the answer's terms,
        bigrams and codes the needed spans found so far do not hold), best remaining document first.  A document is
        *needed* when its span holds a part of the answer those spans lack: at least :data:`NEEDED_SHARE` of the
        answer (:meth:`gain`); one that holds none of the rest (the answer is supported without it) keeps its
        location for the record, with ``needed`` false, and its span is not proposed."""
        if not doc_ids:
            return [self._place("corpus", question, answer, self._corpus_candidates(f"{question} {answer or ''}"))]
        docs = list(dict.fromkeys(doc_ids))
        first = self._place("document", question, answer, [sp for d in docs for sp in self.candidates(d)])
        if len(docs) == 1 or first.best is None:
            return [first] if len(docs) == 1 else [first] + [
                self._place("document", question, answer, self.candidates(d)) for d in docs[1:]]
        text = answer if answer and answer.strip() else question
        out, held = [first], [first.best.span]
        rest_docs = [d for d in docs if d != first.doc_id]
        while rest_docs:
            rest = self._rest(text, held)
            tries = [(d, self._place("document", question, answer, self.candidates(d), rest=rest)) for d in rest_docs]
            d, loc = max(tries, key=lambda t: t[1].best.score if t[1].best is not None else -1.0)
            needed = loc.best is not None and self.gain(text, held, loc.best.span) >= NEEDED_SHARE
            out.append(replace(loc, needed=needed, part="rest"))
            rest_docs.remove(d)
            if needed:
                held.append(loc.best.span)
        return out

    def gain(self, answer: str, held: Sequence[Span], span: Span) -> float:
        """How much of ``answer`` ``span`` holds that the spans ``held`` do not: the coverage formula (module
        docstring) over the whole answer, counting only its terms, bigrams and codes outside ``held``."""
        self._read([answer, span.text] + [sp.text for sp in held])
        a, c, rest = self._texts[answer], self._texts[span.text], self._rest(answer, held)
        w, total, grams, _ = self._own_key(a)
        at = sum(w[t] for t in rest.terms & c.terms) / total if total else 0.0
        ab = len(rest.bigrams & c.bigrams) / len(grams) if grams else 0.0
        code = len(rest.codes & c.codes) / len(a.codes) if a.codes else at
        return 0.5 * at + 0.3 * ab + 0.2 * code

    def locate_hinted(self, question: str, answer: Optional[str], doc_ids: Sequence[str]) -> Location:
        """Where ``answer`` is supported among the documents ``doc_ids`` taken together (scope ``hints``: documents a
        trace retrieved, not known to be relevant): the best span of any of them, and a runner-up that may be in any
        of them (a twin in another retrieved document is a real rival, as in the whole corpus)."""
        docs = [d for d in dict.fromkeys(doc_ids) if d in self.documents]
        self.prepare(docs)
        return self._place("hints", question, answer, [sp for d in docs for sp in self.candidates(d)])

    def _rest(self, answer: str, held: Sequence[Span]) -> _Text:
        """The part of ``answer`` the spans ``held`` do not hold: its terms, bigrams and codes outside them."""
        a = self._texts[answer]
        spans = [self._texts[sp.text] for sp in held]
        return _Text(a.terms.difference(*(x.terms for x in spans)), a.bigrams.difference(*(x.bigrams for x in spans)),
                     a.codes.difference(*(x.codes for x in spans)))

    def _place(self, scope: str, question: str, answer: Optional[str], spans: Sequence[Span], *,
               rest: Optional[_Text] = None) -> Location:
        """The best of ``spans`` with its runner-up, margin and confidence."""
        scored = self.score(question, answer, spans, rest=rest)
        has_answer = bool(answer and answer.strip())
        if not scored:
            return Location(scope, spans[0].doc_id if spans else None, None, None, 0.0, 0.0, has_answer)
        best = self._narrowed(scored)
        # the runner-up: in the whole corpus (or a trace's documents) any other span (a twin in another document is
        # a real rival); in a question's documents one of the same document (another document may hold another
        # part of the answer)
        runner = next((x for x in scored[1:] if not overlaps(x.span, best.span) and
                       (scope in ("corpus", "hints") or x.span.doc_id == best.span.doc_id)), None)
        margin = best.score - (runner.score if runner is not None else 0.0)
        return Location(scope, best.span.doc_id, best, runner, margin,
                        confidence(best.coverage if best.matched is None else best.matched, margin,
                                   has_answer=has_answer,
                                   matchable=self.matchable(question, answer)), has_answer)

    @staticmethod
    def _narrowed(scored: Sequence[Scored]) -> Scored:
        """The best of ``scored`` (best first), or, when that is a window, the sentence of it that holds the answer
        as fully (at least :data:`COVERED`, the coverage of full confidence, and as much as the window): a window
        earns its place by the part of the answer its second sentence adds, not by the e5 similarity and the
        question's terms that favour a longer span."""
        best = scored[0]
        if best.span.sentences < 2:
            return best
        inside = [x for x in scored if x.span.sentences == 1 and x.span.doc_id == best.span.doc_id and
                  best.span.start <= x.span.start and x.span.end <= best.span.end]
        held = (lambda x: x.coverage if x.matched is None else x.matched)
        full = [x for x in inside if held(x) >= max(held(best) - 1e-9, COVERED)]
        return max(full, key=lambda x: x.score) if full else best

    def _corpus_candidates(self, query: str) -> List[Span]:
        """The candidates of the sentences BM25 ranks highest for ``query`` in the whole corpus, with the windows
        that hold them, in corpus order."""
        from ragexam.retrieval.bm25 import BM25Retriever

        if self._bm25 is None and not self._bm25_empty:
            self.prepare(self.documents)
            ids, texts = [], []
            for d in self.documents:
                for i, sp in enumerate(self.candidates(d)):
                    if sp.sentences == 1:
                        ids.append(f"{len(ids)}")
                        texts.append(sp.text)
                        self._single.append((d, i))
            self._bm25 = BM25Retriever("kiwi", progress=False).index(ids, texts) if ids else None
            self._bm25_empty = not ids
        if self._bm25 is None:
            return []
        (hits,) = self._bm25.search([query], self.settings.corpus_shortlist)
        order = {d: k for k, d in enumerate(self.documents)}
        picked = sorted((self._single[int(h)] for h, _ in hits), key=lambda x: (order[x[0]], x[1]))
        out: Dict[Tuple[str, int], Span] = {}
        for d, i in picked:
            cands = self.candidates(d)
            for j in range(max(0, i - 2), min(len(cands), i + 3)):
                if j == i or (cands[j].sentences > 1 and overlaps(cands[j], cands[i])):
                    out[(d, j)] = cands[j]
        return [out[k] for k in sorted(out, key=lambda x: (order[x[0]], x[1]))]
