"""The data's journey of ``ragexam run`` (docs/architecture.md), one function per stage with a typed product.

::

    from ragexam.analysis.exam import stages as S

    plan = S.plan(["bm25", "dense"], ["paragraphs:400"])            # -> PipelinePlan
    data = S.load("it_helpdesk", "it_helpdesk")                     # -> Dataset
    chunks = S.chunk(data, plan.chunkers)                           # -> Chunks
    rankings = S.retrieve(data, chunks, plan, depth=100)            # -> Rankings
    judged = S.judge_relevance(data, rankings, miss_k=5)            # -> Judged (evidence splits of the misses)
    sizes = S.size(chunks, rankings, plan, miss_k=5)                # -> Sizes (chunk sizes, windows, budgets)
    table = S.score(data, judged, S.metric_names((1, 3, 5, 10), 5, sizes.budgets), sizes=sizes)  # -> MetricTable
    table["bm25 | paragraphs:400"].values                           # scored questions x metrics

:func:`ragexam.analysis.exam.run.run` composes them and adds :func:`ragexam.analysis.exam.summarize.summarize` (the tables,
the missed questions, the :class:`~ragexam.storage.summary.RunSummary`).  Each stage records its seconds under its
name (:mod:`ragexam.exec.timing`); work for one pipeline is also counted under the pipeline's name.
"""

from __future__ import annotations

import hashlib
import json
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, Generic, Iterator, List, Mapping, Optional, Sequence, Tuple, TypeVar

from ragexam import fmt
from ragexam.analysis.exam.pipelines import PipelinePlan, PipelineSpec, plan_pipelines
from ragexam.errors import InputError, RagexamError
from ragexam.exec.timing import current_stages, stage
from ragexam.signature import Signature

__all__ = ["Dataset", "ChunkSet", "Chunks", "Ranking", "Rankings", "JudgedPipeline", "Judged", "Sizes", "Scores",
           "MetricTable", "load", "plan", "chunk", "retrieve", "judge_relevance", "size", "score", "metric_names"]

Ranked = Dict[str, List[Tuple[str, Optional[float]]]]
T = TypeVar("T")


class _ByName(Generic[T]):
    """A stage's product per pipeline, in pipeline order (``by_name``): ``table[name]`` is one pipeline's,
    iterating gives each in order."""

    by_name: Dict[str, T]

    def __getitem__(self, name: str) -> T:
        return self.by_name[name]

    def __iter__(self) -> Iterator[T]:
        return iter(self.by_name.values())


# -- 1. load -------------------------------------------------------------------------------------------------


@dataclass
class Dataset:
    """The corpus and question set of a run, checked, with the relevance mode decided and the evidence located.

    ``scored`` are the answerable questions (every retrieval metric is over them); ``relevance`` is
    ``"evidence"`` or ``"doc"``; ``corpus_text`` locates evidence strings in the corpus (evidence mode with a
    corpus), shared by the question check and the run."""

    corpus: Any
    corpus_sha256: Optional[str]
    qa: Any
    qa_sha256: str
    relevance: str
    corpus_text: Any = field(default=None, repr=False)
    ignore_punctuation: bool = False
    overlap: Optional[float] = None

    @property
    def questions(self) -> List[Any]:
        return list(self.qa)

    @property
    def scored(self) -> List[Any]:
        return [q for q in self.qa if q.answerable]

    @property
    def scored_ids(self) -> List[str]:
        return [q.query_id for q in self.scored]

    @property
    def types(self) -> List[str]:
        """The type of each scored question (``(none)`` when it has none)."""
        return [q.type if q.type is not None else "(none)" for q in self.scored]


def _sha256_file(path: Path) -> str:
    """SHA-256 of a file; of a directory (a BEIR folder), of every file under it (relative path and
    content, in path order)."""
    h = hashlib.sha256()
    if path.is_dir():
        for f in sorted(x for x in path.rglob("*") if x.is_file()):
            h.update(f.relative_to(path).as_posix().encode("utf-8") + b"\0" + _sha256_file(f).encode() + b"\n")
        return h.hexdigest()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _sha256_records(records: Sequence[Mapping[str, Any]]) -> str:
    h = hashlib.sha256()
    for r in records:
        h.update(json.dumps(r, ensure_ascii=False, sort_keys=True, default=str).encode("utf-8") + b"\n")
    return h.hexdigest()


def _relevance_mode(requested: Optional[str], questions: Sequence[Any], source: str, corpus: Any = None) -> str:
    """``requested`` checked against the questions, or the default (evidence if they have it): the one decision
    ``validate`` predicts (:func:`ragexam.data.gradability.choose_mode`)."""
    from ragexam.data.gradability import choose_mode

    return choose_mode(requested, questions, source,
                       corpus=str(corpus) if isinstance(corpus, (str, Path)) else "CORPUS")


def load(corpus: Any, qa: Any, *, relevance: Optional[str] = None, ignore_punctuation: bool = False,
         overlap: Optional[float] = None, split: Optional[str] = None) -> Dataset:
    """Load and check a corpus (a file, a bundled name, a :class:`~ragexam.data.schema.Corpus`, or ``None`` when
    every pipeline returns texts) and a question set (a file, a BEIR folder with ``split``, a bundled name, or a
    :class:`~ragexam.data.schema.QASet`), and decide the relevance mode (``None``: evidence when the questions
    have it, else doc).  A question file is checked against the corpus: every evidence string must occur in it."""
    from ragexam.data.datasets import resolve
    from ragexam.data.evidence import CorpusText
    from ragexam.data.loaders import load_corpus, load_qa
    from ragexam.data.schema import Corpus, QASet

    with stage("load"):
        if corpus is None:
            corpus_obj, corpus_sha = None, None
        elif isinstance(corpus, Corpus):
            corpus_obj = corpus
            corpus_sha = _sha256_records([{"doc_id": d.doc_id, "title": d.title, "content": d.content}
                                          for d in corpus])
        else:
            corpus_obj = load_corpus(corpus)
            corpus_sha = _sha256_file(resolve(corpus, "corpus"))
        corpus_text = None
        if isinstance(qa, QASet):
            qa_obj = qa
            qa_sha = _sha256_records([{"query_id": q.query_id, "question": q.question,
                                       "relevance": dict(q.grades), "evidence": list(q.evidence),
                                       "type": q.type, "answerable": q.answerable} for q in qa])
        else:
            if corpus_obj is not None:
                corpus_text = CorpusText(corpus_obj.documents, ignore_punctuation=ignore_punctuation)
            qa_obj = load_qa(qa, corpus=corpus_obj, ignore_punctuation=ignore_punctuation, split=split)
            qa_sha = _sha256_file(resolve(qa, "qa"))
        if corpus_obj is not None and len(corpus_obj) == 0:
            raise InputError("the corpus has no documents; expected at least one.", source=str(corpus_obj.source or "Corpus"))
        if len(qa_obj) == 0:
            raise InputError("the question set has no questions; expected at least one.", source=str(qa_obj.source or "QASet"))
    mode = _relevance_mode(relevance, list(qa_obj), str(qa_obj.source or "QA"), corpus)
    return Dataset(corpus_obj, corpus_sha, qa_obj, qa_sha, mode, corpus_text, ignore_punctuation, overlap)


def plan(retrievers: Sequence[Any], chunkers: Sequence[Any], retrieved: Sequence[Any] = (), *,
         have_corpus: bool = True, **options: Any) -> PipelinePlan:
    """The pipelines to grade (:func:`ragexam.analysis.exam.pipelines.plan_pipelines`); ``options`` go to the
    retriever specs (cache_dir, progress, headers, llm, executor).  Made before the data is loaded, so a bad
    spec fails at once; :meth:`~ragexam.analysis.exam.pipelines.PipelinePlan.check_questions` checks its results
    files against the question set."""
    return plan_pipelines(retrievers, chunkers, retrieved, options, have_corpus=have_corpus)


# -- 2. chunk ------------------------------------------------------------------------------------------------


@dataclass
class ChunkSet:
    """One chunker's chunks of the corpus, the evidence index over them (evidence mode) and the evidence strings
    no chunk holds."""

    spec: str
    chunking: Any
    index: Any = None
    unmatched: List[Dict[str, Any]] = field(default_factory=list)

    @property
    def by_id(self) -> Mapping[str, Any]:
        return self.chunking.by_id


@dataclass
class Chunks:
    """Every chunker's :class:`ChunkSet`, by spec, in the order given."""

    sets: Dict[str, ChunkSet] = field(default_factory=dict)

    def __getitem__(self, spec: str) -> ChunkSet:
        return self.sets[spec]

    @property
    def specs(self) -> List[str]:
        return list(self.sets)

    @property
    def unmatched(self) -> List[Dict[str, Any]]:
        return [u for s in self.sets.values() for u in s.unmatched]


def _unmatched_evidence(scored: Sequence[Any], index: Any) -> List[Dict[str, Any]]:
    """Evidence strings no chunk of ``index``'s chunking covers (they can never be credited)."""
    out = []
    for q in scored:
        for unit, ev in q.evidence_units.items():
            if index.covering(ev):
                continue
            cuts = index.cuts(ev)
            if not index.corpus_text.locate(ev):
                reason = "not in the corpus"
            elif cuts and all(not c.chunk_ids for c in cuts):
                reason = "its document has no chunks"
            else:
                reason = "cut by a chunk boundary"
            out.append({"query_id": q.query_id, "unit_id": unit, "evidence": ev, "chunker": index.chunking.spec,
                        "reason": reason,
                        "cuts": [{"doc_id": c.doc_id, "offset": c.offset, "offsets": list(c.offsets),
                                  "chunks": list(c.chunk_ids)} for c in cuts]})
    return out


def chunk(data: Dataset, chunkers: Sequence[Any], *, cache_dir: Any = None, cache: bool = True) -> Chunks:
    """Chunk the corpus with each chunker (:class:`~ragexam.data.chunking.Chunker` objects, e.g. a plan's), and
    in evidence mode index where every evidence string lies in the chunks.  With ``cache`` the chunkings that
    run Kiwi are kept in the retrieval cache of ``cache_dir`` (:func:`~ragexam.data.chunking.chunk_corpus`), so
    a second run of the same corpus does not split it again."""
    from ragexam.data.chunking import chunk_corpus
    from ragexam.data.evidence import CorpusText, EvidenceIndex
    from ragexam.retrieval.cache import open_cache

    out = Chunks()
    if not chunkers:
        return out
    # an unwritable folder is no error: Cache.save_index skips the file, and the corpus is split again next time
    store = open_cache(True, cache_dir) if cache and any(ch.memo_salt() is not None for ch in chunkers) else None
    scored = data.scored
    corpus_text = None
    if data.relevance == "evidence":
        with stage("evidence"):  # one corpus text per run (the QA check built it): evidence located in one pass
            corpus_text = data.corpus_text or CorpusText(data.corpus.documents,
                                                         ignore_punctuation=data.ignore_punctuation)
            corpus_text.prefetch(ev for q in scored for ev in q.evidence)
    for ch in chunkers:
        with stage("chunk"):
            chunking = chunk_corpus(data.corpus, ch, store=store)
        if len(chunking) == 0:
            raise InputError(f"chunker {ch.spec!r} produced no chunk for any of the "
                             f"{fmt.plural(len(data.corpus), 'document')}"
                             + ("; the documents are empty." if not any(d.content.strip() for d in data.corpus)
                                else " (their texts are not empty): spans() returned [] for every one."),
                             source="chunkers")
        with stage("evidence"):
            index = EvidenceIndex(corpus_text, chunking, min_fraction=data.overlap) if corpus_text is not None \
                else None
            unmatched = _unmatched_evidence(scored, index) if index is not None else []
        out.sets[ch.spec] = ChunkSet(ch.spec, chunking, index, unmatched)
    return out


# -- 3. retrieve ---------------------------------------------------------------------------------------------


@dataclass
class Ranking:
    """One pipeline's retrieval: per question the ranked ``(key, score)`` pairs, best first, and the chunk (or a
    returned text wrapped as a chunk) behind each key; for a pipeline that returns texts, the questions it failed
    on (``failures``, graded as misses), its latencies and the items it returned; for a rerank stage, its report
    and its first stage's :class:`Ranking`."""

    pipeline: PipelineSpec
    ranked: Ranked
    lookup: Mapping[str, Any] = field(repr=False)
    signature: str = ""
    index: Any = field(default=None, repr=False)
    failures: Dict[str, str] = field(default_factory=dict)
    latencies: List[float] = field(default_factory=list)
    items: Dict[str, Any] = field(default_factory=dict, repr=False)
    index_recall: List[Dict[str, Any]] = field(default_factory=list)
    rerank: Any = None
    first_stage: Optional["Ranking"] = None

    @property
    def name(self) -> str:
        return self.pipeline.name


@dataclass
class Rankings(_ByName[Ranking]):
    """Every pipeline's :class:`Ranking`, in pipeline order (the first is the baseline)."""

    by_name: Dict[str, Ranking] = field(default_factory=dict)


@contextmanager
def _scope(name: str) -> Iterator[None]:
    times = current_stages()
    with times.scope(name) if times is not None else nullcontext():
        yield


def _check_hits(hits: Any, qids: Sequence[str], label: str, by_id: Mapping[str, Any], depth: Optional[int] = None
                ) -> List[List[Tuple[str, float]]]:
    """What a chunk retriever's ``search`` returned, checked: one list per question (``qids``, in order) of
    ``(chunk_id, score)`` pairs with a finite score, each a chunk of this chunking listed once; a list longer than
    ``depth`` is cut to it (a retriever that ignores ``top_n`` is graded to the same depth as every other)."""
    n = len(qids)
    if not isinstance(hits, (list, tuple)) or len(hits) != n:
        got = len(hits) if isinstance(hits, (list, tuple)) else type(hits).__name__
        raise InputError(f"search() returned {got} result {fmt.noun(got, 'list')} for {fmt.plural(n, 'question')}; "
                         "expected one list per question, in order.", source=f"retriever {label}")
    out = []
    for qid, lst in zip(qids, hits):
        at = f"retriever {label}, question {qid!r}"
        if not isinstance(lst, (list, tuple)):
            raise InputError(f"received {'None' if lst is None else 'a ' + type(lst).__name__} instead of its "
                             "result list; expected a list of (chunk_id, score) pairs ([] when nothing matched).",
                             source=at)
        row = []
        seen = set()
        for item in lst:
            try:
                cid, score = item
                score = float(score)
            except (TypeError, ValueError):
                raise InputError(f"result {item!r} is not a (chunk_id, score) pair.", source=at) from None
            if score != score or score in (float("inf"), float("-inf")):
                raise InputError(f"returned the score {score} for chunk {cid!r}; expected finite numbers.",
                                 source=at)
            if cid not in by_id:
                raise InputError(f"returned chunk id {cid!r}, which is not a chunk of this chunking; "
                                 "index and search the chunks ragexam passes to index().", source=at)
            if cid in seen:
                raise InputError(f"returned chunk {cid!r} twice; each chunk may be listed once per question.",
                                 source=at)
            seen.add(cid)
            row.append((cid, score))
        out.append(row if depth is None else row[:depth])
    return out


def _item_keys(items: Sequence[Any], known: Dict[str, str]) -> List[str]:
    """A key per retrieved item (its ``top_ids`` entry and ``chunks.jsonl`` id): the system's ``id`` when it gave
    one, else ``"h:"`` + 12 hex digits of the text's sha256; an id already used for a different text of the same
    pipeline gets ``"@"`` + 8 hex digits of its text appended, so that a key always names one text.  ``known``
    (key -> text, per pipeline) is updated."""
    out = []
    for it in items:
        digest = hashlib.sha256(it.text.encode("utf-8", "surrogatepass")).hexdigest()
        key = it.id if it.id is not None else "h:" + digest[:12]
        if known.get(key, it.text) != it.text:
            key = f"{key}@{digest[:8]}"
        known.setdefault(key, it.text)
        out.append(key)
    return out


def _as_chunks(name: str, qids: Sequence[str], retrievals: Sequence[Any], mode: str, keys_known: Dict[str, str]
               ) -> Tuple[Ranked, Dict[str, Any], Dict[str, Any]]:
    """The texts a pipeline returned as ranked ``(key, score)`` pairs and chunk-like records (a
    :class:`~ragexam.data.schema.Chunk` whose ``doc_id`` is the item's, ``""`` when unknown), for the judge.
    Doc mode needs every item's ``doc_id``."""
    from ragexam.data.schema import Chunk

    ranked: Ranked = {}
    lookup: Dict[str, Any] = {}
    items: Dict[str, Any] = {}
    for qid, r in zip(qids, retrievals):
        keys = _item_keys(r.items, keys_known)
        if mode == "doc":
            lacking = [i for i, it in enumerate(r.items) if it.doc_id is None]
            if lacking:
                raise InputError(f"question {qid!r}: context {lacking[0] + 1} has no doc_id; doc relevance needs the "
                                 "source document of every retrieved text: return doc_id with each context (or "
                                 "grade with relevance 'evidence').", source=f"pipeline {name}", field="doc_id")
        ranked[qid] = [(k, it.score) for k, it in zip(keys, r.items)]
        for k, it in zip(keys, r.items):
            if k not in lookup:
                lookup[k] = Chunk(k, it.doc_id or "", 0, len(it.text), it.text)
                items[k] = it
    return ranked, lookup, items


def _signature(retriever: Any) -> str:
    return getattr(retriever, "signature", None) or f"custom:{type(retriever).__name__}"


def _retrieve_chunks(data: Dataset, cs: ChunkSet, p: PipelineSpec, depth: int) -> Ranking:
    """Index one chunker's chunks with a pipeline's retriever and search every question (out-of-corpus ones
    too, so that answer scoring can join on them) to ``depth``."""
    questions = data.questions
    queries = [q.question for q in questions]
    qids = [q.query_id for q in questions]
    retriever = p.retriever_obj
    chunking = cs.chunking
    with stage("index"):
        retriever.index([c.chunk_id for c in chunking], [c.text for c in chunking])
    with stage("search"):
        hits = _check_hits(retriever.search(queries, depth), qids, p.retriever, chunking.by_id, depth)
    recall = retriever.index_report() if callable(getattr(retriever, "index_report", None)) else []
    out = Ranking(p, {q.query_id: h for q, h in zip(questions, hits)}, chunking.by_id, _signature(retriever),
                  cs.index, index_recall=list(recall or []))
    report = getattr(retriever, "last_report", None)
    if report is not None:
        first = _check_hits(report.first_stage, qids, f"{p.retriever} (first stage)", chunking.by_id)
        out.rerank = report
        out.first_stage = Ranking(p, {q.query_id: h for q, h in zip(questions, first)}, chunking.by_id,
                                  getattr(retriever.first, "signature", ""), cs.index)
    return out


def _retrieve_texts(data: Dataset, p: PipelineSpec, depth: int) -> Ranking:
    """Ask a pipeline that returns texts for every question's list; a question it failed on keeps an empty list
    and its reason."""
    from ragexam.retrieval.texts import call_retrieve, check_retrievals

    retriever = p.retriever_obj
    qids = [q.query_id for q in data.questions]
    with stage("search"):
        got = check_retrievals(call_retrieve(retriever, [q.question for q in data.questions], depth, list(qids)),
                               len(qids), p.name, depth, qids)
    ranked, lookup, items = _as_chunks(p.name, qids, got, data.relevance, {})
    out = Ranking(p, ranked, lookup, _signature(retriever), None,
                  failures={qid: r.failure for qid, r in zip(qids, got) if r.failure},
                  latencies=[r.latency for r in got if r.latency is not None], items=items)
    report = getattr(retriever, "last_report", None)
    if report is not None:
        first = check_retrievals(report.first_stage, len(qids), f"{p.name} (first stage)", depth, qids)
        ranked1, lookup1, _ = _as_chunks(p.name, qids, first, data.relevance, {})
        out.rerank = report
        out.first_stage = Ranking(p, ranked1, lookup1, getattr(retriever.first, "signature", ""))
        # the stage keeps the first stage's latency per question: the reranker's is reported apart
        out.latencies = [r.latency for r in first if r.latency is not None]
    return out


def retrieve(data: Dataset, chunks: Chunks, pipelines: PipelinePlan, *, depth: int = 100) -> Rankings:
    """Every pipeline's ranked lists (per chunker, ragexam's retrievers index its chunks and search; pipelines
    that return texts are asked once), in pipeline order."""
    done: Dict[str, Ranking] = {}
    for spec in chunks.specs:
        for p in pipelines.of_chunker(spec):
            with _scope(p.name):
                done[p.name] = _retrieve_chunks(data, chunks[spec], p, depth)
    for p in pipelines.of_chunker(None):
        with _scope(p.name):
            done[p.name] = r = _retrieve_texts(data, p, depth)
        if data.relevance == "doc":  # doc_ids the question set does not know: an error when none is known
            from ragexam.data.retrieved import check_doc_ids

            note = check_doc_ids(p.name, {q: [r.items[k] for k, _ in hits] for q, hits in r.ranked.items()},
                                 {d for q in data.questions for d in q.grades},
                                 set(data.corpus.doc_ids) if data.corpus is not None else None)
            pipelines.warnings.extend([note] if note else [])
    return Rankings({p.name: done[p.name] for p in pipelines.pipelines})


# -- 4. judge relevance --------------------------------------------------------------------------------------


@dataclass
class JudgedPipeline:
    """One pipeline's judged lists (:class:`ragexam.data.relevance.Judgments`: TREC-style qrels and runs over the
    relevance units), each scored question's first-found rank per unit, counted as the metrics count, and the
    misses labelled ``evidence_split`` (:func:`ragexam.data.relevance.evidence_split`)."""

    ranking: Ranking
    judgments: Any = field(repr=False)
    unit_ranks: Dict[str, Dict[str, Optional[int]]] = field(default_factory=dict)
    first_stage: Optional["JudgedPipeline"] = None
    #: the misses at ``miss_k`` the chunking caused (evidence relevance): ``{query_id: EvidenceSplit}``
    splits: Dict[str, Any] = field(default_factory=dict)


@dataclass
class Judged(_ByName[JudgedPipeline]):
    """Every pipeline's :class:`JudgedPipeline`, in pipeline order."""

    by_name: Dict[str, JudgedPipeline] = field(default_factory=dict)


def _unit_ranks(j: Any, mode: str) -> Dict[str, Optional[int]]:
    """Exact first-found rank of each unit, counted as the metrics count (chunks or documents)."""
    if mode == "evidence":
        return dict(j.first_found)
    pos = {d: i for i, d in enumerate(j.run, 1)}
    return {d: pos.get(d) for d in j.first_found}


def _judge_one(data: Dataset, r: Ranking) -> JudgedPipeline:
    """The judged lists of one ranking (the location rule with an evidence index, the text rule without)."""
    from ragexam.data.relevance import judge_rankings

    scored, ids = data.scored, data.scored_ids
    spec = r.pipeline.chunker if r.pipeline.chunker is not None else "own"
    with stage("judge"):
        J = judge_rankings(scored, {qid: [r.lookup[c] for c, _ in r.ranked[qid]] for qid in ids}, data.relevance,
                           index=r.index, ignore_punctuation=data.ignore_punctuation, min_fraction=data.overlap,
                           chunker_spec=spec)
    if J.unjudged:  # load() guarantees units for every scored question
        raise RagexamError(f"internal: questions without relevance units: {J.unjudged[:5]}")
    return JudgedPipeline(r, J, {qid: _unit_ranks(J.per_question[qid], data.relevance) for qid in ids})


def _splits(data: Dataset, j: JudgedPipeline, miss_k: int) -> Dict[str, Any]:
    """The misses at ``miss_k`` of one judged pipeline that the chunking caused: a top-``miss_k`` chunk of the
    evidence's document holds part of an evidence string, none holds one whole (located exactly on ragexam's
    chunks, by text on returned texts)."""
    from ragexam.analysis.exam.tables import first_rank
    from ragexam.data.relevance import evidence_split

    r = j.ranking
    corpus_text = data.corpus_text if data.corpus_text is not None else getattr(r.index, "corpus_text", None)
    out: Dict[str, Any] = {}
    with stage("judge"):
        for q in data.scored:
            found = first_rank(j.unit_ranks[q.query_id])
            if found is not None and found <= miss_k:
                continue
            top = [r.lookup[c] for c, _ in r.ranked[q.query_id][:miss_k]]
            label = evidence_split(q, top, miss_k, index=r.index, corpus_text=corpus_text,
                                   ignore_punctuation=data.ignore_punctuation, min_fraction=data.overlap)
            if label is not None:
                out[q.query_id] = label
    return out


def judge_relevance(data: Dataset, rankings: Rankings, *, miss_k: Optional[int] = None) -> Judged:
    """Ranked lists become judged lists over *units* (evidence strings, or documents): location-based for
    ragexam's chunks, text-based for texts other systems returned (:func:`ragexam.data.relevance.judge_rankings`).
    With ``miss_k`` and evidence relevance, every pipeline's misses at ``miss_k`` that the chunking caused are
    labelled (:attr:`JudgedPipeline.splits`)."""
    out = Judged()
    for r in rankings:
        with _scope(r.name):
            j = _judge_one(data, r)
            if r.first_stage is not None:
                j.first_stage = _judge_one(data, r.first_stage)
            if miss_k is not None and data.relevance == "evidence":
                j.splits = _splits(data, j, miss_k)
        out.by_name[r.name] = j
    return out


# -- 4b. sizes -----------------------------------------------------------------------------------------------


@dataclass
class Sizes:
    """How big the retrieved items of every pipeline are, for metrics at an equal context budget and the chunking
    report.

    ``stats``: per *chunking* — a chunker's chunks (by spec) or the distinct texts a pipeline that chunks on its
    own returned (by pipeline name; ``kinds`` says which) — its :class:`~ragexam.data.chunking.ChunkingStats`, and
    ``of_pipeline`` the chunking of each pipeline;
    ``windows``: per chunker the :class:`~ragexam.data.chunking.WindowReport` of each embedder of the run whose
    window is known; ``budgets``: the budgets every ranking metric is also cut at (``["2000c"]``) and ``rule``
    why: ``"given"`` (``-k 2000c``), ``"equal"`` (chunkings of different size are compared: ``miss_k`` chunks of
    the median mean size, :func:`~ragexam.data.chunking.equal_budget`) or ``None`` (no budget); ``warning``: the
    size mismatch (:func:`~ragexam.data.chunking.size_mismatch`, ``""`` when none); ``tokens``: ``(count(text),
    name)`` of the tokenizer of token budgets (the run's first embedder's, e5's by default)."""

    stats: Dict[str, Any] = field(default_factory=dict)
    kinds: Dict[str, str] = field(default_factory=dict)
    of_pipeline: Dict[str, str] = field(default_factory=dict)
    windows: Dict[str, List[Any]] = field(default_factory=dict)
    budgets: List[str] = field(default_factory=list)
    rule: Optional[str] = None
    warning: str = ""
    tokens: Optional[Tuple[Callable[[str], int], str]] = field(default=None, repr=False)
    _counted: Dict[str, int] = field(default_factory=dict, repr=False)

    @property
    def units(self) -> List[str]:
        """The units of the budgets (``c``, ``t``), each once."""
        return list(dict.fromkeys(b[-1] for b in self.budgets))

    def _size(self, unit: str) -> Callable[[Any], float]:
        if unit == "c":
            return lambda chunk: len(chunk.text)
        count = self.tokens[0] if self.tokens is not None else None
        if count is None:
            raise RagexamError("internal: a token budget without a token counter")

        def tokens(chunk: Any) -> float:
            n = self._counted.get(chunk.text)
            if n is None:
                n = self._counted[chunk.text] = count(chunk.text)
            return n
        return tokens

    def context_sizes(self, j: JudgedPipeline) -> List[Any]:
        """The :class:`~ragexam.metrics.ranking.ContextSizes` of one judged pipeline's lists, one per budget unit
        (:func:`ragexam.data.relevance.item_sizes`: every ranked chunk spends the budget in rank order)."""
        from ragexam.data.relevance import item_sizes
        from ragexam.metrics.ranking import ContextSizes

        r, J = j.ranking, j.judgments
        out = []
        for unit in self.units:
            size = self._size(unit)
            items = {q: item_sizes(J.per_question[q], [r.lookup[c] for c, _ in r.ranked[q]], size) for q in J.run}
            out.append(ContextSizes(unit, items, counter=self.tokens[1] if unit == "t" and self.tokens else ""))
        return out


def _texts_stats(name: str, lookup: Mapping[str, Any]) -> Any:
    """The sizes of the distinct texts a pipeline returned, as a :class:`~ragexam.data.chunking.ChunkingStats`."""
    from ragexam.data.chunking import ChunkingStats

    sizes = [len(c.text) for c in lookup.values()]
    return ChunkingStats(name, len(sizes), sum(sizes) / len(sizes) if sizes else 0.0, max(sizes, default=0), 0)


def size(chunks: Chunks, rankings: Rankings, plan: PipelinePlan, *, budgets: Sequence[str] = (),
         miss_k: int = 5) -> Sizes:
    """The sizes of every chunking (ragexam's chunkers; the texts of each pipeline that returned its own, a rerank
    stage's once with its first stage), the chunks over each embedder's window, and the context budgets: the
    ``budgets`` given, else — when two or more chunkings are compared — :func:`~ragexam.data.chunking.equal_budget`
    of ``miss_k`` chunks; with the warning when their mean sizes differ (:class:`Sizes`)."""
    from ragexam.data.chunking import equal_budget, size_mismatch
    from ragexam.retrieval.chunk_models import chunk_window_report, token_sizer

    out = Sizes()
    with stage("chunk"):
        for spec in chunks.specs:
            chunking = chunks[spec].chunking
            out.stats[spec], out.kinds[spec] = chunking.stats(), "chunker"
            reports = [chunk_window_report(chunking, e) for e in plan.embedders]
            out.windows[spec] = [w for w in reports if w is not None]
        seen: Dict[frozenset, str] = {}
        for r in rankings:
            if r.pipeline.kind != "texts":
                out.of_pipeline[r.name] = str(r.pipeline.chunker)
                continue
            keys = frozenset(r.lookup)
            if keys not in seen:
                seen[keys] = r.name
                out.stats[r.name], out.kinds[r.name] = _texts_stats(r.name, r.lookup), "texts"
            out.of_pipeline[r.name] = seen[keys]
    sized = [st for st in out.stats.values() if st.n]
    if budgets:
        out.budgets, out.rule = list(budgets), "given"
    elif len(sized) >= 2:
        out.budgets, out.rule = [equal_budget(sized, miss_k)], "equal"
    out.warning = size_mismatch(sized, out.budgets[0] if out.budgets else None)
    if "t" in out.units:
        out.tokens = token_sizer(plan.embedders[0] if plan.embedders else None)
    return out


# -- 5. score ------------------------------------------------------------------------------------------------


def metric_names(cutoffs: Sequence[int], miss_k: int, budgets: Sequence[str] = ()) -> List[str]:
    """Every metric a run computes for ``cutoffs`` (the main table's first) and context ``budgets``."""
    from ragexam.analysis.exam import tables as T

    return T.all_metrics(cutoffs, miss_k, budgets)


@dataclass
class Scores:
    """One pipeline's per-question metric values: ``values`` is (scored questions × ``metrics``) in the question
    set's order, ``evaluation`` the :class:`ragexam.metrics.ranking.RankingResult`, ``signature`` the pipeline's
    (retriever, chunker, relevance rule, depth and metric settings)."""

    judged: JudgedPipeline
    evaluation: Any = field(repr=False)
    values: Any = field(repr=False)
    signature: str = ""
    first_stage: Optional["Scores"] = None

    @property
    def ranking(self) -> Ranking:
        return self.judged.ranking


@dataclass
class MetricTable(_ByName[Scores]):
    """Every pipeline's :class:`Scores`, in pipeline order, over the same scored questions and metrics, and the
    :class:`Sizes` the budget metrics were cut with."""

    metrics: List[str]
    scored_ids: List[str]
    by_name: Dict[str, Scores] = field(default_factory=dict)
    sizes: Optional[Sizes] = None


def _score_one(j: JudgedPipeline, metrics: Sequence[str], scored_ids: Sequence[str], mode: str, depth: int,
               sizes: Optional[Sizes]) -> Scores:
    from ragexam.metrics.ranking import evaluate

    with stage("judge"):
        context = sizes.context_sizes(j) if sizes is not None and sizes.budgets else []
        res = evaluate(j.judgments.qrels, j.judgments.run, list(metrics), sizes=context)
        order = {q: i for i, q in enumerate(res.query_ids)}
        V = res.values[[order[q] for q in scored_ids]]
    J, r = j.judgments, j.ranking
    judge_tail = Signature.parse(J.signature).items()[2:]
    where = [("chunker", r.pipeline.chunker)] if r.pipeline.chunker is not None else [("chunker", "own"),
                                                                                      ("match", "text")]
    # the retriever's signature, then how its lists were graded and the metrics' (which ends in the version)
    sig = Signature.of(r.signature).then(Signature([*where, ("relevance", mode), *judge_tail, ("depth", depth),
                                                    *res.signature.items()], version=False))
    return Scores(j, res, V, sig)


def score(data: Dataset, judged: Judged, metrics: Sequence[str], *, depth: int = 100,
          sizes: Optional[Sizes] = None) -> MetricTable:
    """Per-question values of every metric for every pipeline, identical to trec_eval
    (:func:`ragexam.metrics.ranking.evaluate`), rows in the order of ``data.scored``; ``depth`` is recorded in
    each pipeline's signature.  Metrics cut at a context budget (``hit@2000c``) read the item sizes of
    ``sizes``."""
    out = MetricTable(list(metrics), data.scored_ids, sizes=sizes)
    for j in judged:
        with _scope(j.ranking.name):
            s = _score_one(j, metrics, out.scored_ids, data.relevance, depth, sizes)
            if j.first_stage is not None:
                s.first_stage = _score_one(j.first_stage, metrics, out.scored_ids, data.relevance, depth, sizes)
        out.by_name[j.ranking.name] = s
    return out
