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

Questions without units in the chosen mode (out-of-corpus questions; questions with only
evidence in doc mode or only documents in evidence mode) get no ``qrels``/``run`` entry and are
listed in ``Judgments.unjudged``; trec_eval would skip them anyway.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from ragexam.data.evidence import CorpusText, EvidenceIndex, EvidenceMatcher, check_min_fraction
from ragexam.data.normalization import normalization_signature
from ragexam.data.schema import Chunk, Document, Question
from ragexam.errors import InputError

__all__ = ["Judgment", "Judgments", "judge_ranking", "judge_rankings", "credit_positions",
           "MODES"]

MODES = ("doc", "evidence")


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
    if mode not in MODES:
        raise InputError(f"received {mode!r}; expected one of {', '.join(MODES)}", source="mode")
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
        sig = f"judge:{mode}|{index.signature}"
    else:
        spec = chunker_spec or (getattr(chunking, "spec", None)) or "unknown"
        cover = "whole" if min_fraction is None else f"overlap>={float(min_fraction):g}:text"
        sig = f"judge:{mode}|chunker:{spec}"
        if mode == "evidence":
            sig += f"|{normalization_signature(ignore_punctuation)}|cover:{cover}"
    return Judgments(mode, sig, per, qrels, run, unjudged)
