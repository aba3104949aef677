"""The run summary, typed: what ``summary.json`` holds (docs/run-format.md), as dataclasses.

:class:`RunSummary` is what :func:`ragexam.run` returns as ``RunResult.summary``, what
:func:`ragexam.storage.runfolder.read_run_folder` and the history give back, and what every renderer, ``compare``,
``check`` and the Python API read — by attribute::

    s = ragexam.run("it_helpdesk", "it_helpdesk", ["bm25"]).summary
    s.results["bm25 | paragraphs:400"].metrics["hit@5"]
    s.results["bm25 | paragraphs:400"].ci95["hit@5"]        # (low, high)
    [m.query_id for m in s.missed["bm25 | paragraphs:400"]]
    s.dataset.n_scored, s.config.miss_k, s.pipelines[0].signature
    s.to_dict()                                              # the summary.json object

Every format since ``ragexam-run/1`` reads (a field an older file lacks takes its default; a key this version does
not know is kept and written back).  For code written against the JSON object, a summary is also a read-only
mapping of its top-level keys to their JSON values (``s["results"]["bm25 | paragraphs:400"]["metrics"]``).

After ``ragexam score --run DIR --report FILE``, the run's summary also carries the score's stage-attribution
matrices (``attribution``) and its :class:`~ragexam.storage.score_summary.JudgeSection` (``judge``), which the
report shows.  A score's own summary is :class:`~ragexam.storage.score_summary.ScoreSummary`;
:data:`Summary` is either.

This module imports nothing of ragexam but :mod:`ragexam.errors` and the storage records.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple, Union

from ragexam.storage.records import JsonView, Record, opt
from ragexam.storage.score_summary import JudgeSection, ScoreSummary

__all__ = ["DEFAULT_MISS_K", "TOP_IDS", "RunSummary", "RunSettings", "DatasetInfo", "DatasetAudit", "PipelineInfo", "PipelineResult", "Comparison",
           "Unretrieved", "FailedQuestion", "Latency", "RetrievedChunk", "MissedQuestion", "UnmatchedEvidence",
           "EvidenceCut", "RerankStage", "RerankCeiling", "RerankStatus", "RerankChange", "TypeLift", "Timing",
           "SweepPoint", "Interval", "EvidenceSplitInfo", "ChunkWindow", "ChunkSizes", "ChunkingReport",
           "Summary", "SummaryLike", "read_summary", "EmbeddingCount"]

#: a 95% interval ``(low, high)``
Interval = Tuple[float, float]
#: the cutoff of a *missed* question when a run names none: the usual number of chunks put in a prompt
DEFAULT_MISS_K = 5
#: chunk ids kept per question in ``per_question.top_ids``: the most contexts ``answer``/``score`` can give a
#: generator from a run folder
TOP_IDS = 10


@dataclass
class RunSettings(Record):
    """The ``config`` block: every setting of the run (spec strings; objects under their names)."""

    corpus: Optional[str] = None
    qa: Optional[str] = None
    retrievers: List[str] = field(default_factory=list)
    chunkers: List[str] = field(default_factory=list)
    retrieved: List[str] = field(default_factory=list)
    relevance: Optional[str] = None
    k: List[int] = field(default_factory=list)
    depth: Optional[int] = None
    miss_k: Optional[int] = None
    ignore_punctuation: bool = False
    overlap: Optional[float] = None
    seed: Optional[int] = None
    n_resamples: Optional[int] = None
    n_permutations: Optional[int] = None
    workers: Optional[int] = None
    executor: Optional[str] = None
    split: Optional[str] = opt()
    #: context budgets given with ``-k`` (``["2000c", "512t"]``)
    budgets: List[str] = opt(factory=list)


@dataclass
class DatasetAudit(Record):
    """The question set's audited junk rate (``ragexam.questions.audit``; docs/generate.md#auditing): ``state``
    ``not_audited``, ``audited``, ``stale`` or ``reviewed``, the one-line ``text`` (and ``text_ko``), the set's size,
    how many were audited, the junk rate with its exact 95 % interval and the interval's signature.  Other keys of
    the block (the bad questions by reason, a reviewed set's derivation) are kept in ``extra``."""

    state: str = "not_audited"
    text: str = "not audited"
    text_ko: str = ""
    n_set: int = 0
    n_audited: int = 0
    junk_high: Optional[float] = None
    n_bad: Optional[int] = opt()
    junk: Optional[float] = opt()
    junk_low: Optional[float] = opt()
    signature: Optional[str] = opt()


@dataclass
class DatasetInfo(Record):
    """The ``dataset`` block: sizes, hashes, question types and chunk counts."""

    corpus: Optional[str] = None
    qa: Optional[str] = None
    corpus_sha256: Optional[str] = None
    qa_sha256: Optional[str] = None
    n_documents: Optional[int] = None
    n_questions: int = 0
    n_answerable: int = 0
    n_out_of_corpus: int = 0
    n_scored: int = 0
    types: Dict[str, int] = field(default_factory=dict)
    scored_types: Dict[str, int] = field(default_factory=dict)
    n_chunks: Dict[str, int] = field(default_factory=dict)
    n_evidence: int = 0
    n_unmatched_evidence: Dict[str, int] = field(default_factory=dict)
    #: the set's audit when the run read it (``None``: a run of a version before audits)
    audit: Optional[DatasetAudit] = opt()


@dataclass
class PipelineInfo(Record):
    """One graded pipeline: ``kind`` ``chunks`` (ragexam's retriever × chunker) or ``texts`` (its own chunking)."""

    name: str = ""
    retriever: Optional[str] = None
    chunker: Optional[str] = None
    kind: str = "chunks"
    signature: str = ""
    slug: str = ""


@dataclass
class SweepPoint(Record):
    """Mean precision, recall and F1 at one cutoff."""

    p: Optional[float] = None
    r: Optional[float] = None
    f1: Optional[float] = None


@dataclass
class FailedQuestion(Record):
    query_id: str = ""
    reason: str = ""


@dataclass
class Unretrieved(Record):
    """The questions a pipeline failed on (graded as misses): how many, of which scored, by kind, and why."""

    n: int = 0
    by_kind: Dict[str, int] = field(default_factory=dict)
    questions: List[FailedQuestion] = field(default_factory=list)
    n_scored: Optional[int] = opt()
    #: the kinds of the scored questions' failures alone (they add up to ``n_scored``; ``by_kind`` counts every
    #: failed question, the out-of-corpus ones too)
    by_kind_scored: Optional[Dict[str, int]] = opt()

    def scored_kinds(self) -> Optional[Dict[str, int]]:
        """The failures of the scored questions by kind, adding up to ``n_scored``; ``None`` when a summary written
        before ``by_kind_scored`` cannot tell them from the out-of-corpus questions'."""
        if self.n_scored is None or self.n_scored == self.n:
            return dict(self.by_kind)
        if self.n_scored == 0:
            return {}
        return dict(self.by_kind_scored) if self.by_kind_scored else None


@dataclass
class Latency(Record):
    """Seconds per question of a service, as measured when called."""

    n: int = 0
    mean: Optional[float] = None
    median: Optional[float] = None
    p95: Optional[float] = None
    max: Optional[float] = None


@dataclass
class PipelineResult(Record):
    """``results[pipeline]``: means and intervals of every metric, per type, the P/R/F sweep, failures."""

    n: int = 0
    metrics: Dict[str, Optional[float]] = field(default_factory=dict)
    ci95: Dict[str, Optional[Interval]] = field(default_factory=dict)
    by_type: Dict[str, Dict[str, Optional[float]]] = field(default_factory=dict)
    by_type_ci95: Dict[str, Dict[str, Optional[Interval]]] = field(default_factory=dict)
    by_type_n: Dict[str, int] = field(default_factory=dict)
    sweep: Dict[str, SweepPoint] = field(default_factory=dict)
    fbeta: Dict[str, Dict[str, Optional[float]]] = field(default_factory=dict)
    unretrieved: Unretrieved = field(default_factory=Unretrieved)
    signature: str = ""
    latency: Optional[Latency] = opt()
    index_recall: List[Dict[str, Any]] = opt(factory=list)
    #: why the pipeline produced nothing (every question failed, or no rerank reply was usable): its numbers are
    #: not a result of the pipeline; ``None`` for a pipeline that worked
    produced_nothing: Optional[str] = opt()
    #: missed questions (evidence relevance) whose miss the chunking caused: labelled ``evidence_split`` (their
    #: ``missed[*].evidence_split``); ``None`` when not counted (document relevance, older runs)
    n_evidence_split: Optional[int] = opt()


@dataclass
class Comparison(Record):
    """One metric of a pipeline against the baseline: difference, paired interval, p-values, MDD, reading."""

    baseline: str = ""
    pipeline: str = ""
    metric: str = ""
    n: int = 0
    diff: Optional[float] = None
    ci95: Optional[Interval] = None
    p_value: Optional[float] = None
    p_holm: Optional[float] = None
    method: Optional[str] = None
    mdd: Optional[float] = None
    resolution: Optional[float] = None
    within_noise: bool = False
    reading: str = ""
    verdict: str = ""
    signature: str = ""


@dataclass
class RetrievedChunk(Record):
    """A retrieved chunk (or text) as a missed question lists it: rank, id, document, score and its text,
    shortened."""

    rank: int = 0
    chunk_id: str = ""
    doc_id: Optional[str] = None
    score: Optional[float] = None
    text: str = ""


@dataclass
class EvidenceSplitInfo(Record):
    """A miss caused by the chunking (:class:`ragexam.data.relevance.EvidenceSplit`): evidence string ``unit_id`` is
    held whole by no chunk of the top ``k``, but the chunk ``chunk_id`` at ``rank``, from the evidence's document,
    holds ``part`` of it (``start``, ``end`` or ``middle``): ``chars`` of its ``length`` normalized characters.
    ``how``: ``location`` (ragexam's chunks) or ``text`` (returned texts); ``doc_checked``: the chunk's document was
    compared with the evidence's."""

    unit_id: str = ""
    evidence: str = ""
    k: int = 0
    rank: int = 0
    chunk_id: str = ""
    doc_id: Optional[str] = None
    part: str = ""
    chars: int = 0
    length: int = 0
    how: str = ""
    doc_checked: bool = False


@dataclass
class MissedQuestion(Record):
    """A question with no relevant unit in the top ``k``: where its units were found and what came first."""

    query_id: str = ""
    question: str = ""
    type: Optional[str] = None
    evidence: List[str] = field(default_factory=list)
    ground_truth: Optional[str] = opt()
    relevant_doc_ids: List[str] = field(default_factory=list)
    first_rank: Optional[int] = None
    unit_ranks: Dict[str, Optional[int]] = field(default_factory=dict)
    k: int = DEFAULT_MISS_K
    top: List[RetrievedChunk] = field(default_factory=list)
    first_correct: Optional[RetrievedChunk] = opt()
    unretrieved: Optional[str] = opt()
    #: the chunking cut the evidence: the top k holds part of it, no chunk holds it whole
    evidence_split: Optional[EvidenceSplitInfo] = opt()
    #: how many chunks (texts) the pipeline returned for this question: a results file may return fewer than the
    #: run's depth, and "not found" is then said of those
    n_returned: Optional[int] = opt()


@dataclass
class EvidenceCut(Record):
    doc_id: str = ""
    offset: Optional[int] = None
    offsets: List[int] = field(default_factory=list)
    chunks: List[str] = field(default_factory=list)


@dataclass
class UnmatchedEvidence(Record):
    """An evidence string no chunk of a chunking holds (it can never be credited), and why."""

    query_id: str = ""
    unit_id: str = ""
    evidence: str = ""
    chunker: str = ""
    reason: str = ""
    cuts: List[EvidenceCut] = field(default_factory=list)


@dataclass
class RerankChange(Record):
    """A question a rerank stage fixed or broke at ``miss_k``."""

    query_id: str = ""
    type: Optional[str] = None
    first_rank_before: Optional[int] = None
    first_rank_after: Optional[int] = None


@dataclass
class TypeLift(Record):
    n: int = 0
    lift: Dict[str, float] = field(default_factory=dict)


@dataclass
class RerankCeiling(Record):
    """The first stage's recall ceiling: questions with a relevant unit among the ``top`` candidates."""

    top: int = 0
    n_within: int = 0
    recall_at_top: Optional[float] = None
    misses: int = 0
    misses_outside: int = 0
    misses_inside: int = 0
    k: int = DEFAULT_MISS_K


@dataclass
class RerankStatus(Record):
    reranked: int = 0
    partial: int = 0
    failed: int = 0
    skipped: int = 0
    unjudged_candidates: int = 0
    by_kind: Dict[str, int] = field(default_factory=dict)
    questions: List[FailedQuestion] = field(default_factory=list)


@dataclass
class RerankStage(Record):
    """``rerank[pipeline]``: what a rerank stage did over its own first stage."""

    first_stage: str = ""
    first_stage_signature: Optional[str] = None
    reranker: str = ""
    reranker_signature: Optional[str] = None
    top: int = 0
    first_stage_metrics: Dict[str, Optional[float]] = field(default_factory=dict)
    first_stage_ci95: Dict[str, Optional[Interval]] = field(default_factory=dict)
    comparisons: List[Comparison] = field(default_factory=list)
    by_type: Dict[str, TypeLift] = field(default_factory=dict)
    fixed: List[RerankChange] = field(default_factory=list)
    broken: List[RerankChange] = field(default_factory=list)
    ceiling: RerankCeiling = field(default_factory=RerankCeiling)
    status: RerankStatus = field(default_factory=RerankStatus)
    latency: Optional[Latency] = None
    usage: Dict[str, Any] = field(default_factory=dict)


@dataclass
class EmbeddingCount(Record):
    """What one embedder did for one role (``passage``/``query``) during the run (counted by
    :class:`ragexam.retrieval.embedding.EmbeddingLedger`): ``texts`` asked for, ``distinct`` model inputs among them
    (``cached``: read from the cache, ``embedded``: computed now), ``shared`` texts whose input had been asked
    before in the run (a chunk another chunker made too), ``whitespace`` of them equal only after the embedder's
    normalization (e5: line breaks, tabs and runs of spaces are one space).  ``distinct == cached + embedded``,
    ``texts == distinct + shared``."""

    embedder: str = ""
    role: str = ""
    texts: int = 0
    distinct: int = 0
    cached: int = 0
    embedded: int = 0
    shared: int = 0
    whitespace: int = 0


@dataclass
class Timing(Record):
    """Seconds per stage (and per pipeline scope) and where the batch work ran (:mod:`ragexam.exec.timing`);
    ``placement``: on which nodes each stage's batches and calls ran (executors that run work elsewhere, e.g.
    Ray; the shape is in :mod:`ragexam.exec.timing`), absent for work done in this process; ``embeddings``: what
    each embedder computed and what it shared (:class:`EmbeddingCount`)."""

    wall_s: Optional[float] = None
    covered_s: Optional[float] = None
    stages: Dict[str, float] = field(default_factory=dict)
    scopes: Dict[str, Dict[str, float]] = field(default_factory=dict)
    where: Dict[str, Any] = field(default_factory=dict)
    placement: Dict[str, Any] = field(default_factory=dict, metadata={"omit": True})
    embeddings: List[EmbeddingCount] = opt(factory=list)


@dataclass
class ChunkWindow(Record):
    """How many chunks exceed an embedder's window: ``n_over`` chunks have more than ``window`` tokens (the longest
    ``max_tokens``: the most tokens of a chunk counted -- only the chunks a cheap bound could not show to fit are
    counted -- absent when none was; folders written before kept 0 there, read as they are); ``action``: what the
    embedder does with the rest (``windowed``: embedded in windows whose vectors are averaged; ``truncated``: not
    embedded)."""

    embedder: str = ""
    window: int = 0
    action: str = ""
    n_over: int = 0
    max_tokens: Optional[int] = opt()


@dataclass
class ChunkSizes(Record):
    """The sizes of one chunking: a chunker's chunks of the corpus (``kind`` ``chunker``) or the distinct texts a
    pipeline that chunks on its own returned (``texts``; ``n_returned`` of them over all questions, repeats
    included): how many, their mean and largest size in characters,
    the sentences ``paragraphs:N`` had to cut inside (one sentence longer than N), and per embedder of the run the
    chunks over its window."""

    kind: str = "chunker"
    n_chunks: int = 0
    mean_chars: float = 0.0
    max_chars: int = 0
    cut_sentences: int = 0
    windows: List[ChunkWindow] = opt(factory=list)
    #: ``texts``: how many texts the pipeline returned over all questions (``n_chunks`` counts the distinct ones)
    n_returned: Optional[int] = opt()


@dataclass
class ChunkingReport(Record):
    """The ``chunking`` block: every chunking's sizes (by chunker spec, then by the name of each pipeline that
    returned its own texts; a rerank stage shares its first stage's), the chunking of each pipeline
    (``pipelines``: pipeline name -> key of ``sizes``), the context budgets the run cut every ranking metric at (``budgets``, e.g.
    ``["2000c"]``) and why (``budget_rule``: ``given`` with ``-k``, or ``equal``: ``miss_k`` chunks of the median
    mean size, chosen because chunkings of different size were compared), what counted tokens
    (``token_counter``), and ``size_warning``: chunkings of different mean size compared by chunk count k."""

    sizes: Dict[str, ChunkSizes] = field(default_factory=dict)
    pipelines: Dict[str, str] = field(default_factory=dict)
    budgets: List[str] = field(default_factory=list)
    budget_rule: Optional[str] = opt()
    token_counter: Optional[str] = opt()
    size_warning: Optional[str] = opt()


@dataclass(eq=False)
class RunSummary(JsonView, Record):
    """``summary.json`` of a run (module docstring)."""

    is_score = False

    format: str = "ragexam-run/3"
    run_id: str = ""
    created: str = ""
    ragexam_version: Optional[str] = None
    config: RunSettings = field(default_factory=RunSettings)
    main_metrics: List[str] = field(default_factory=list)
    context_k: Optional[int] = None
    dataset: DatasetInfo = field(default_factory=DatasetInfo)
    pipelines: List[PipelineInfo] = field(default_factory=list)
    results: Dict[str, PipelineResult] = field(default_factory=dict)
    comparisons: List[Comparison] = field(default_factory=list)
    missed: Dict[str, List[MissedQuestion]] = field(default_factory=dict)
    unmatched_evidence: List[UnmatchedEvidence] = field(default_factory=list)
    warnings: List[str] = field(default_factory=list)
    rerank: Dict[str, RerankStage] = opt(factory=dict)
    timing: Optional[Timing] = opt()
    #: the sizes of every chunking and the context budgets (``chunking`` block)
    chunking: Optional[ChunkingReport] = opt()
    #: the columns of the table at an equal context budget (``hit@2000c``, ...; their values are in ``results``)
    budget_metrics: List[str] = opt(factory=list)
    #: paired comparisons at an equal budget: pipelines that differ only in their chunker (each against the first
    #: chunker with the same retriever), and pipelines that return texts against the baseline; one Holm family
    #: per pair over ``budget_metrics``
    budget_comparisons: List[Comparison] = opt(factory=list)
    #: ``ragexam score --report``: the score's stage attribution, ``{pipeline: {type: {label: count}}}``
    attribution: Dict[str, Dict[str, Dict[str, int]]] = opt(factory=dict)
    #: ``ragexam score --report`` with a judge: the score's judge section (the run's pipelines)
    judge: Optional[JudgeSection] = opt()

    # -- what every reader asks -------------------------------------------------------------------------------

    @property
    def miss_k(self) -> int:
        """The cutoff of a *missed* question: ``config.miss_k`` (older files: ``missed_k``/``miss_cutoff``, else the
        ``k`` of the missed entries), else :data:`DEFAULT_MISS_K`."""
        if self.config.miss_k is not None:
            return int(self.config.miss_k)
        for key in ("missed_k", "miss_cutoff"):
            value = self.config.extra.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                return value
        return next((e.k for entries in self.missed.values() for e in entries), DEFAULT_MISS_K)

    @property
    def headline(self) -> str:
        """The headline metric: ``hit@<miss_k>`` when computed, else the first main metric."""
        want = f"hit@{self.miss_k}"
        return want if want in self.main_metrics or not self.main_metrics else self.main_metrics[0]

    @property
    def pipeline_names(self) -> List[str]:
        return [p.name for p in self.pipelines]

    @property
    def headline_metric(self) -> Optional[str]:
        """The metric a listing shows: ``hit@<miss_k>`` when the results have it, else their first."""
        first = next(iter(self.results.values()), None)
        names = list(first.metrics) if first is not None else []
        want = f"hit@{self.miss_k}"
        return (want if want in names else names[0]) if names else None

    @property
    def used_settings(self) -> Dict[str, Any]:
        """The settings (``config``) as a JSON object."""
        return self.config.to_dict()

    def chunk_sizes(self, pipeline: str) -> Optional[ChunkSizes]:
        """The sizes of the chunks ``pipeline`` retrieved from (``None`` when the run did not record them)."""
        if self.chunking is None:
            return None
        return self.chunking.sizes.get(self.chunking.pipelines.get(pipeline, ""))

    def pipeline(self, name: str) -> PipelineInfo:
        """The pipeline named ``name`` (``KeyError`` when there is none)."""
        for p in self.pipelines:
            if p.name == name:
                return p
        raise KeyError(name)

    @property
    def failed_pipelines(self) -> Dict[str, str]:
        """``{pipeline: reason}`` of the pipelines that produced nothing (``ragexam run`` exits 1 when any did)."""
        return {p: r.produced_nothing for p, r in self.results.items() if r.produced_nothing}

    def result(self, name: str) -> PipelineResult:
        """``results[name]``, or an empty result when the summary has none for it."""
        return self.results.get(name) or PipelineResult()

    @property
    def dataset_label(self) -> str:
        """``corpus / qa`` as the tables name the data."""
        corpus = self.dataset.corpus or self.config.corpus
        qa = self.dataset.qa or self.config.qa or corpus or "?"
        if corpus is None:  # every pipeline returned its own texts: only the question set was given
            return str(qa)
        return str(corpus) if str(qa) == str(corpus) else f"{corpus} / {qa}"



#: a run's summary or a score's
Summary = Union[RunSummary, ScoreSummary]
#: a summary, or the JSON object of one
SummaryLike = Union[Summary, Mapping[str, Any]]


def read_summary(data: SummaryLike, source: str = "summary") -> Summary:
    """The typed summary of a JSON object: a :class:`ScoreSummary` for a score (``kind`` score or a
    ``ragexam-score/*`` format), else a :class:`RunSummary`; a typed one as it is."""
    if isinstance(data, (RunSummary, ScoreSummary)):
        return data
    if isinstance(data, Mapping) and (data.get("kind") == "score" or str(data.get("format", "")).startswith(
            "ragexam-score")):
        return ScoreSummary.from_dict(data, source=source)
    return RunSummary.from_dict(data, source=source)
