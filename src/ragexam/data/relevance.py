"""Relevance judging: a question plus its ranked chunks -> the relevance of each rank.

For every question the output is

- ``first_found``: ``{unit_id: rank}``, the 1-based rank *among the chunks given* of the first
  chunk that counts for the unit (``None`` if no chunk does) -- exact in both modes;
- a pair for the ranking engine: ``qrels = {query_id: {unit_id: grade}}`` and
  ``run = {query_id: [item_id, ...]}``, an ordered list, best first, which the engine scores in the
  given order with trec_eval's definitions (P@k divides by k, recall@k = relevant items in the top
  k / number of units with grade > 0, ...).

Doc mode (``mode="doc"``)
-------------------------
A chunk counts for its document.  The units are document ids with the question's grades
(``relevance`` if given, else 1 for each of ``relevant_doc_ids``; grade <= 0 is judged
non-relevant).  The ranked chunks become a ranked list of documents by first occurrence: later
chunks of an already-listed document are dropped, so ``run`` may be shorter than the chunk list
and a cutoff k counts documents.

Evidence mode (``mode="evidence"``)
-----------------------------------
The units are the question's evidence strings, ``ev1, ev2, ...`` in the order given, each of
grade 1.  A chunk *covers* a string per :class:`~ragexam.data.evidence.EvidenceIndex` (by
default: the normalized string is a substring of the normalized chunk text; optionally the
``overlap`` policy).  The run has exactly one item per chunk position, so a cutoff k counts the
chunks the generator would see.  **Crediting rule**: walk positions 1..n keeping a FIFO queue of
units found but not yet credited; at position i append (in evidence order) every unit covered by
chunk i and by no earlier chunk; if the queue is non-empty pop its head and credit position i with
it (the item id is the unit id), otherwise position i is non-relevant (its item id is the
placeholder ``"~" + chunk_id``, with ``"@i"`` appended if that chunk id already occurred).

Worked example: evidence ``ev1 = "VPN 재설치"``, ``ev2 = "관리자 권한"``, ranked chunks

====  ==========  ==========  =============  ===================
rank  chunk       covers      queue after    item (credited)
====  ==========  ==========  =============  ===================
1     hd_03#0     --          []             ``~hd_03#0``
2     hd_01#2     ev1, ev2    [ev2]          ``ev1``
3     hd_05#1     --          []             ``ev2`` (lag)
4     hd_01#2     ev1, ev2    []             ``~hd_01#2@4``
====  ==========  ==========  =============  ===================

``first_found = {ev1: 2, ev2: 2}``; ``run = [~hd_03#0, ev1, ev2, ~hd_01#2@4]``;
``qrels = {ev1: 1, ev2: 1}``.  hit@1 = 0, hit@2 = 1 and MRR = 1/2 are exact; recall@2 = 1/2
although both strings were seen by rank 2 (the lag); rank 4 repeats chunk ``hd_01#2``, whose
strings are already credited, so it is non-relevant.

Consequences: hit@k and MRR are exact (the first credited position is the first position that
covers anything); every unit is credited at most once, so repeats are not rewarded and P@k,
recall@k, NDCG and AP stay in [0, 1]; a repeated chunk, a chunk covering only already-credited
units and a chunk covering nothing are non-relevant, except that such a position carries the
lagged credit of a string found earlier while one is still queued; that lag arises only when one
chunk covers two or more new strings: the second is credited at the next position (recall@k can
lag by one position there, and a unit still queued after position n is not credited at all).
``first_found`` always reports the exact ranks.

Evidence split
--------------
:func:`evidence_split` names a miss that the chunking caused, for any pipeline: no chunk of the top k holds an
evidence string whole, but a chunk of the top k from the evidence's document holds part of one (the
chunker cut the evidence in two).  The run labels such misses ``evidence_split``.

Questions without units in the chosen mode (out-of-corpus questions; questions with only
evidence in doc mode or only documents in evidence mode) get no ``qrels``/``run`` entry and are
listed in ``Judgments.unjudged``; trec_eval would skip them anyway.
"""

from __future__ import annotations

from collections import deque
from dataclasses import asdict, dataclass, field
from typing import Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from ragexam.data.evidence import CorpusText, EvidenceIndex, EvidenceMatcher, check_min_fraction
from ragexam.data.normalization import normalization_signature
from ragexam.data.schema import Chunk, Document, Question
from ragexam.errors import InputError, one_of
from ragexam.signature import Signature

__all__ = ["Judgment", "Judgments", "judge_ranking", "judge_rankings", "credit_positions",
           "MODES", "RULES", "EvidenceSplit", "evidence_split", "evidence_splits", "evidence_part", "item_sizes"]

MODES = ("doc", "evidence")
#: each mode's grading rule in words (``{unit}``: "chunk", or "chunk (or returned text)")
RULES = {"evidence": "a {unit} counts when it contains an evidence string; k counts chunks",
         "doc": "a {unit} counts for its document; k counts distinct documents"}


@dataclass(frozen=True)
class Judgment:
    """The relevance of one question's ranked chunks (see the module docstring)."""

    query_id: str
    mode: str
    qrels: Dict[str, int]
    run: List[str]
    first_found: Dict[str, Optional[int]]
    units: Dict[str, str] = field(default_factory=dict)

    @property
    def judged(self) -> bool:
        """The question has at least one unit of grade > 0 in this mode."""
        return any(g > 0 for g in self.qrels.values())


@dataclass
class Judgments:
    """Judgments of many questions: ``qrels``/``run`` for the ranking engine, plus details."""

    mode: str
    signature: str
    per_question: Dict[str, Judgment]
    qrels: Dict[str, Dict[str, int]]
    run: Dict[str, List[str]]
    unjudged: List[str]


def credit_positions(covered: Sequence[Sequence[str]], placeholders: Sequence[str]
                     ) -> Tuple[List[str], Dict[str, int]]:
    """The evidence-mode crediting rule on plain data.

    ``covered[i]`` are the unit ids covered by the chunk at position ``i + 1`` (in evidence
    order); ``placeholders[i]`` its non-relevant item id.  Returns ``(run, first_found)`` with
    ``first_found`` holding only the units found.
    """
    queue: deque = deque()
    first: Dict[str, int] = {}
    run: List[str] = []
    for i, units in enumerate(covered, 1):
        for u in units:
            if u not in first:
                first[u] = i
                queue.append(u)
        run.append(queue.popleft() if queue else placeholders[i - 1])
    return run, first


def _placeholders(chunks: Sequence[Chunk]) -> List[str]:
    seen = set()
    out = []
    for i, c in enumerate(chunks, 1):
        p = "~" + c.chunk_id
        out.append(p if p not in seen else f"{p}@{i}")
        seen.add(p)
    return out


def judge_ranking(question: Question, ranked_chunks: Sequence[Chunk], mode: str = "doc", *,
                  index: Optional[EvidenceIndex] = None, ignore_punctuation: bool = False,
                  min_fraction: Optional[float] = None) -> Judgment:
    """Judge one question's ranked chunks (best first) in ``mode`` ``"doc"`` or ``"evidence"``.

    Evidence mode uses ``index`` when given (fast, location-based; every ranked chunk must belong
    to its chunking, and ``ignore_punctuation``/``min_fraction`` are the index's own).  Without an
    index, coverage is computed from each chunk's text: the normalized evidence is a substring of
    the normalized chunk text, or with ``min_fraction`` the longest common substring of the two is
    at least ``min_fraction * len(normalized evidence)`` (anywhere in the chunk, so it can differ
    from the index, which only counts the part at a known occurrence).
    """
    one_of(mode, MODES, source="mode")
    ranked = list(ranked_chunks)
    for i, c in enumerate(ranked, 1):
        if not isinstance(c, Chunk):
            raise InputError(f"ranked item {i} of question {question.query_id!r} is a "
                             f"{type(c).__name__}; expected a Chunk", source="ranked_chunks")
    if mode == "doc":
        grades = question.grades
        run: List[str] = []
        listed = set()
        first: Dict[str, Optional[int]] = {d: None for d, g in grades.items() if g > 0}
        for i, c in enumerate(ranked, 1):
            if c.doc_id not in listed:
                listed.add(c.doc_id)
                run.append(c.doc_id)
                if c.doc_id in first and first[c.doc_id] is None:
                    first[c.doc_id] = i
        return Judgment(question.query_id, mode, grades, run, first)

    units = question.evidence_units
    if index is not None:
        covered = []
        for c in ranked:
            if c.chunk_id not in index.chunking.by_id:
                raise InputError(f"chunk {c.chunk_id!r} (question {question.query_id!r}) is not part of "
                                 f"the chunking this evidence index was built for "
                                 f"({index.chunking.spec}); build the index from the same chunking",
                                 source="ranked_chunks")
            covered.append([u for u, ev in units.items() if c.chunk_id in index.covering(ev)])
    else:
        min_fraction = check_min_fraction(min_fraction)
        matcher = EvidenceMatcher(ignore_punctuation=ignore_punctuation, min_fraction=min_fraction)
        covered = [matcher.covered(c.text, units) for c in ranked]
    run, found = credit_positions(covered, _placeholders(ranked))
    first = {u: found.get(u) for u in units}
    return Judgment(question.query_id, mode, {u: 1 for u in units}, run, first, dict(units))


def judge_rankings(questions: Iterable[Question], rankings: Mapping[str, Sequence[Chunk]],
                   mode: str = "doc", *, index: Optional[EvidenceIndex] = None,
                   documents: Union[Iterable[Document], CorpusText, None] = None,
                   chunking=None, ignore_punctuation: bool = False,
                   min_fraction: Optional[float] = None, chunker_spec: Optional[str] = None) -> Judgments:
    """Judge many questions at once; ``rankings[query_id]`` is that question's ranked chunks.

    A question with units but no ranking is judged on an empty list (everything missed, and its
    run entry is ``[]``).  A ranking for an id that is not among ``questions`` raises
    ``InputError``.  In evidence mode an :class:`EvidenceIndex` is built from ``documents`` and
    ``chunking`` when both are given and ``index`` is not (the fast path); otherwise chunk texts
    are matched directly.  ``signature`` records mode, chunker, normalization and cover policy.
    """
    qs = list(questions)
    ids = {q.query_id for q in qs}
    unknown = [k for k in rankings if k not in ids]
    if unknown:
        raise InputError(f"rankings for {len(unknown)} unknown question id(s), e.g. {unknown[0]!r}; "
                         "expected ids of the QA set", source="rankings")
    if mode == "evidence" and index is None and documents is not None and chunking is not None:
        index = EvidenceIndex.build(documents, chunking, ignore_punctuation=ignore_punctuation,
                                    min_fraction=min_fraction)
    per: Dict[str, Judgment] = {}
    qrels: Dict[str, Dict[str, int]] = {}
    run: Dict[str, List[str]] = {}
    unjudged: List[str] = []
    for q in qs:
        j = judge_ranking(q, rankings.get(q.query_id, ()), mode, index=index,
                          ignore_punctuation=ignore_punctuation, min_fraction=min_fraction)
        per[q.query_id] = j
        if j.judged:
            qrels[q.query_id] = j.qrels
            run[q.query_id] = j.run
        else:
            unjudged.append(q.query_id)
    if index is not None:
        sig = Signature([("judge", mode), *Signature.parse(index.signature).items()], version=False)
    else:
        spec = chunker_spec or (getattr(chunking, "spec", None)) or "unknown"
        cover = "whole" if min_fraction is None else f"overlap>={float(min_fraction):g}:text"
        sig = Signature([("judge", mode), ("chunker", spec)], version=False)
        if mode == "evidence":
            sig = sig.extend([*normalization_signature(ignore_punctuation).items(), ("cover", cover)])
    return Judgments(mode, sig, per, qrels, run, unjudged)


def item_sizes(judgment: Judgment, ranked_chunks: Sequence[Chunk], size: Callable[[Chunk], float]
               ) -> Dict[str, Tuple[float, float]]:
    """``{run item: (start, size)}`` of one judged ranking, for metrics cut at a context budget (the ranking
    engine's ``ContextSizes``; ``size(chunk)`` in characters or tokens).

    The budget is spent by every ranked chunk in rank order.  Evidence mode: the item at position i is chunk i
    (start: the sizes of the chunks ranked above it).  Doc mode: a document is read from its first chunk
    (start and size of that chunk; its later chunks still spend the budget of the documents below them)."""
    sizes = [float(size(c)) for c in ranked_chunks]
    starts = [0.0] * len(sizes)
    for i in range(1, len(sizes)):
        starts[i] = starts[i - 1] + sizes[i - 1]
    if judgment.mode == "evidence":
        return {item: (starts[i], sizes[i]) for i, item in enumerate(judgment.run)}
    first: Dict[str, int] = {}
    for i, c in enumerate(ranked_chunks):
        first.setdefault(c.doc_id, i)
    return {d: (starts[first[d]], sizes[first[d]]) for d in judgment.run}


# -- evidence split by the chunking ---------------------------------------------------------------------------

#: a chunk holds *part* of an evidence string when at least this many of its normalized characters, and at
#: least :data:`SPLIT_MIN_SHARE` of them, are in the chunk (shorter pieces are too likely to be chance)
SPLIT_MIN_CHARS = 5
SPLIT_MIN_SHARE = 0.25


@dataclass(frozen=True)
class EvidenceSplit:
    """A miss caused by the chunking: evidence string ``unit_id`` is held whole by no chunk of the top ``k``, but
    the chunk ``chunk_id`` at ``rank`` (<= k), from the evidence's document, holds ``part`` of it: ``"start"``
    (the chunk ends inside the evidence), ``"end"`` (it starts inside) or ``"middle"`` (the evidence is longer
    than the chunk); ``chars`` of the ``length`` normalized characters of the evidence are in it.  ``how``:
    ``"location"`` (ragexam's chunks, exact offsets in the corpus) or ``"text"`` (texts from any system, see
    :func:`evidence_part`); ``doc_checked``: the chunk's document was compared with the evidence's (False when
    either is unknown, e.g. a results file without doc ids and no corpus)."""

    query_id: str
    unit_id: str
    evidence: str
    k: int
    rank: int
    chunk_id: str
    doc_id: Optional[str]
    part: str
    chars: int
    length: int
    how: str
    doc_checked: bool

    def to_dict(self) -> Dict[str, object]:
        """Every field but ``query_id`` (the row it belongs to says it), in order."""
        return {k: v for k, v in asdict(self).items() if k != "query_id"}


def _min_part(length: int) -> int:
    import math

    return max(SPLIT_MIN_CHARS, math.ceil(SPLIT_MIN_SHARE * length))


def evidence_part(normalized_text: str, normalized_evidence: str) -> Optional[Tuple[str, int]]:
    """Which part of an evidence string a text holds, both normalized: ``("start", n)`` when the text ends with
    the evidence's first ``n`` characters, ``("end", n)`` when it starts with its last ``n``, ``("middle", n)``
    when the whole text (``n`` characters) lies inside the evidence; the longest such part, at least
    ``max(SPLIT_MIN_CHARS, SPLIT_MIN_SHARE * len(evidence))`` characters and shorter than the evidence.
    ``None`` when the text holds no such part (or holds the evidence whole)."""
    t, e = normalized_text, normalized_evidence
    need = _min_part(len(e))
    if not e or not t or e in t or need >= len(e):
        return None
    best: Optional[Tuple[str, int]] = ("middle", len(t)) if len(t) >= need and t in e else None
    for n in range(min(len(e), len(t)) - 1 if len(t) >= len(e) else len(t), need - 1, -1):
        if best is not None and best[1] >= n:
            break
        if t.endswith(e[:n]):
            best = ("start", n)
        elif t.startswith(e[-n:]):
            best = ("end", n)
    return best


def _located_part(index: EvidenceIndex, chunk: Chunk, evidence: str) -> Optional[Tuple[str, int]]:
    """The part of ``evidence`` that ``chunk`` holds at a known occurrence (exact offsets), as
    :func:`evidence_part` returns it."""
    nev = index.corpus_text.normalize(evidence)
    need = _min_part(len(nev))
    best: Optional[Tuple[str, int]] = None
    for occ in index.corpus_text.locate_normalized(nev):
        if occ.doc_id != chunk.doc_id or chunk.end <= occ.start or chunk.start >= occ.end:
            continue
        starts, ends = index.corpus_text.raw_offsets(occ.norm_start, occ.norm_end)
        inside = int(((starts >= chunk.start) & (ends <= chunk.end)).sum())
        if need <= inside < len(nev) and (best is None or inside > best[1]):
            part = "start" if chunk.start <= occ.start else "end" if chunk.end >= occ.end else "middle"
            best = (part, inside)
    return best


def evidence_split(question: Question, ranked_chunks: Sequence[Chunk], k: int, *,
                   index: Optional[EvidenceIndex] = None, corpus_text: Optional[CorpusText] = None,
                   ignore_punctuation: bool = False, min_fraction: Optional[float] = None) -> Optional[EvidenceSplit]:
    """Label a miss caused by the chunking (``evidence_split``), for any pipeline.

    A question is labelled when (1) none of its evidence strings is covered by a chunk of the top ``k`` (a miss,
    under the same cover policy as :func:`judge_ranking`), and (2) a chunk of the top ``k`` from the evidence's
    document holds part of an evidence string (:func:`evidence_part`).  With ``index`` (ragexam's chunks) parts
    are located exactly; otherwise chunk texts are compared.  The evidence's documents are the question's
    relevant documents and, with ``corpus_text`` (or ``index``), every document where the string occurs; the
    document test is skipped when the chunk's ``doc_id`` is empty or no document is known.  Returns the first
    such chunk by rank (the longest part at that rank), or ``None``.
    """
    if k < 1:
        raise InputError(f"received k={k!r}; expected a number of chunks >= 1", source="k")
    top = list(ranked_chunks)[:k]
    units = question.evidence_units
    if not units or not top:
        return None
    if any(judge_ranking(question, top, "evidence", index=index, ignore_punctuation=ignore_punctuation,
                         min_fraction=min_fraction).first_found.get(u) for u in units):
        return None  # not a miss
    ct = index.corpus_text if index is not None else corpus_text
    matcher = EvidenceMatcher(ignore_punctuation=ignore_punctuation)
    for rank, chunk in enumerate(top, 1):
        found = []
        for unit, ev in units.items():
            docs = set(question.relevant_docs) | (set(ct.docs_containing(ev)) if ct is not None else set())
            checked = bool(chunk.doc_id) and bool(docs)
            if checked and chunk.doc_id not in docs:
                continue
            located = index is not None and chunk.chunk_id in index.chunking.by_id
            part = _located_part(index, chunk, ev) if located else \
                evidence_part(matcher.normalize(chunk.text), matcher.normalize(ev))
            if part is not None:
                found.append((part[1], unit, ev, part[0], checked, "location" if located else "text"))
        if found:
            n, unit, ev, part, checked, how = max(found, key=lambda f: f[0])
            return EvidenceSplit(question.query_id, unit, ev, k, rank, chunk.chunk_id, chunk.doc_id or None, part, n,
                                 len(matcher.normalize(ev)), how, checked)
    return None


def evidence_splits(questions: Iterable[Question], rankings: Mapping[str, Sequence[Chunk]], k: int, **options
                    ) -> Dict[str, EvidenceSplit]:
    """:func:`evidence_split` of every question with a ranking: ``{query_id: EvidenceSplit}`` for the labelled
    ones (``options``: those of :func:`evidence_split`)."""
    out: Dict[str, EvidenceSplit] = {}
    for q in questions:
        label = evidence_split(q, rankings.get(q.query_id, ()), k, **options)
        if label is not None:
            out[q.query_id] = label
    return out
