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
A *pipeline* is a retriever × a chunker, named ``"<retriever> | <chunker>"``; the first is
the baseline of the comparisons.  For each chunker the corpus is chunked once; for each
retriever the chunks are indexed and every question (out-of-corpus ones too, so that answer
scoring can join on them) is searched to ``depth``.  Each ranked list is judged
(:func:`ragexam.data.relevance.judge_rankings`):

* ``relevance="evidence"`` (the default when the question set has evidence): the relevance
  units are the question's evidence strings; a chunk counts when it contains one (after
  normalization; ``overlap=f`` also counts a chunk holding at least a fraction f of it), and
  a cutoff k counts chunks;
* ``relevance="doc"``: the units are the relevant documents; a chunk counts for its document
  and a cutoff k counts distinct documents.

The judged lists are scored by the trec_eval-identical engine
(:func:`ragexam.metrics.ranking.evaluate`) over the *scored* questions: the answerable
ones.  Out-of-corpus questions (``answerable: false``) have nothing to find; they are left
out of every retrieval metric and counted in ``dataset``.  The tables
(:mod:`ragexam.analysis.run_tables`) add bootstrap intervals, the P/R/F sweep, per-type
results, paired comparisons with the baseline, and the missed questions.

Retrievers are spec strings (:func:`ragexam.retrieval.parse_retriever`) or objects with
``index(ids, texts)`` and ``search(queries, top_n)`` (e.g.
:class:`ragexam.retrieval.LangChainRetriever`, which must already hold the same chunks).
Chunkers are spec strings (:func:`ragexam.data.parse_chunker`) or
:class:`~ragexam.data.chunking.Chunker` objects (or any object with ``spec`` and
``spans(content)``).  Retrieval goes through the on-disk token/embedding cache
(:mod:`ragexam.retrieval.cache`), so a second run of the same data computes nothing again.

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

__all__ = ["run", "RunResult", "Pipeline", "FORMAT", "slugify", "shorten"]

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
    """One retriever × chunker: ``name`` is ``"<retriever> | <chunker>"``."""

    name: str
    retriever: str
    chunker: str
    signature: str
    slug: str
    retriever_obj: Any = field(default=None, repr=False)

    def to_dict(self) -> Dict[str, str]:
        return {"name": self.name, "retriever": self.retriever, "chunker": self.chunker,
                "signature": self.signature, "slug": self.slug}


# -- inputs ------------------------------------------------------------------------------------


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _sha256_records(records: Sequence[Mapping[str, Any]]) -> str:
    h = hashlib.sha256()
    for r in records:
        h.update(json.dumps(r, ensure_ascii=False, sort_keys=True, default=str).encode("utf-8") + b"\n")
    return h.hexdigest()


def _load_inputs(corpus: Any, qa: Any, ignore_punctuation: bool):
    from ragexam.data.datasets import resolve
    from ragexam.data.loaders import load_corpus, load_qa
    from ragexam.data.schema import Corpus, QASet

    if isinstance(corpus, Corpus):
        corpus_obj = corpus
        corpus_sha = _sha256_records([{"doc_id": d.doc_id, "title": d.title, "content": d.content}
                                      for d in corpus])
    else:
        corpus_obj = load_corpus(corpus)
        corpus_sha = _sha256_file(resolve(corpus, "corpus"))
    if isinstance(qa, QASet):
        qa_obj = qa
        qa_sha = _sha256_records([{"query_id": q.query_id, "question": q.question,
                                   "relevance": dict(q.grades), "evidence": list(q.evidence),
                                   "type": q.type, "answerable": q.answerable} for q in qa])
    else:
        qa_obj = load_qa(qa, corpus=corpus_obj, ignore_punctuation=ignore_punctuation)
        qa_sha = _sha256_file(resolve(qa, "qa"))
    if len(corpus_obj) == 0:
        raise InputError("the corpus has no documents; expected at least one.", source=str(corpus_obj.source))
    if len(qa_obj) == 0:
        raise InputError("the question set has no questions; expected at least one.", source=str(qa_obj.source))
    return corpus_obj, corpus_sha, qa_obj, qa_sha


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


def _retriever(spec_or_obj: Any, cache_dir: Any, progress: bool) -> Tuple[str, Any]:
    if isinstance(spec_or_obj, str):
        from ragexam.retrieval.spec import parse_retriever

        opts: Dict[str, Any] = {"progress": progress}
        if cache_dir is not None:
            opts["cache_dir"] = cache_dir
        return spec_or_obj.strip(), parse_retriever(spec_or_obj, **opts)
    if callable(getattr(spec_or_obj, "index", None)) and callable(getattr(spec_or_obj, "search", None)):
        label = getattr(spec_or_obj, "spec", None)
        return (label if isinstance(label, str) and label else type(spec_or_obj).__name__), spec_or_obj
    raise InputError(f"received a {type(spec_or_obj).__name__}; expected a retriever spec string such as "
                     "'bm25' or 'hybrid:bm25+dense', or an object with index(ids, texts) and "
                     "search(queries, top_n).", source="retrievers")


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
    ``chunkings[spec]`` the chunks.
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
        """The chunks the run saw that a reader of the folder needs: every chunk in some question's
        ``top_ids`` (per chunker, in chunking order), stored in ``chunks.jsonl``."""
        wanted: Dict[str, set] = {}
        for r in self.per_question:
            wanted.setdefault(str(r.chunker), set()).update(r.top_ids)
        out = []
        for spec, chunking in self.chunkings.items():
            ids = wanted.get(spec, set())
            out.extend(ChunkRecord(spec, c.chunk_id, c.doc_id, int(c.start), int(c.end), c.text)
                       for c in chunking if c.chunk_id in ids)
        return out

    def save(self, directory: Union[str, Path]) -> Path:
        """Write the files of docs/run-format.md into ``directory`` (created if needed):
        ``per_question.csv``, ``chunks.jsonl`` and ``summary.json`` through
        :func:`ragexam.storage.runfolder.write_run_folder`, and per pipeline ``runs/<slug>.trec``
        (the retrieved chunks, the retriever's scores written with ``repr``), ``runs/<slug>.units.trec``
        and ``runs/<slug>.units.qrels`` (the judged lists the metrics were computed on:
        ``ragexam evaluate --qrels X.units.qrels --run X.units.trec`` reproduces them exactly; the
        item at rank i of a list of n gets the score n - i + 1, so the file's order is the judged
        order with no ties to re-sort)."""
        from ragexam.data.trec import write_trec_qrels, write_trec_run
        from ragexam.storage.runfolder import write_run_folder

        out = write_run_folder(directory, self.summary, self.per_question, self.chunk_records())
        for p in self.pipelines:
            ranked = self.rankings[p.name]
            write_trec_run(out / "runs" / f"{p.slug}.trec",
                           ((qid, cid, i, score) for qid, hits in ranked.items()
                            for i, (cid, score) in enumerate(hits, 1)), tag="ragexam")
            J = self.judgments[p.name]
            write_trec_run(out / "runs" / f"{p.slug}.units.trec",
                           ((qid, item, i, float(len(items) - i + 1)) for qid, items in J.run.items()
                            for i, item in enumerate(items, 1)), tag="ragexam")
            write_trec_qrels(out / "runs" / f"{p.slug}.units.qrels",
                             ((qid, unit, grade) for qid, units in J.qrels.items() for unit, grade in units.items()))
        return out


# -- the run -----------------------------------------------------------------------------------


def run(corpus: Any, qa: Any, retrievers: Any = DEFAULT_RETRIEVERS, chunkers: Any = (DEFAULT_CHUNKER,), *,
        relevance: Optional[str] = None, k: Any = DEFAULT_K, depth: int = DEFAULT_DEPTH,
        miss_k: int = DEFAULT_MISS_K, seed: int = 12345, n_resamples: int = DEFAULT_N_RESAMPLES,
        n_permutations: int = DEFAULT_N_PERMUTATIONS, ignore_punctuation: bool = False,
        overlap: Optional[float] = None, cache_dir: Any = None, progress: bool = True) -> RunResult:
    """Grade every retriever × chunker pipeline on a question set (see the module docstring).

    :param corpus: a corpus file (JSONL or CSV), a bundled name (``it_helpdesk``,
        ``ai_concepts``) or a :class:`~ragexam.data.schema.Corpus`.
    :param qa: a QA file (JSONL), a bundled name or a :class:`~ragexam.data.schema.QASet`.
        Loaded strictly and checked against the corpus (evidence must occur in it).
    :param retrievers: one or more retriever spec strings or objects; the first is the baseline.
    :param chunkers: one or more chunker specs or objects (default ``paragraphs:400``, see
        :mod:`ragexam.analysis.run_config` for why).
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
    :param cache_dir: retrieval cache directory (default ``$RAGEXAM_CACHE_DIR`` or
        ``~/.cache/ragexam``); applies to retrievers given as specs.
    :param progress: show progress bars on stderr (only when it is a terminal).
    :return: a :class:`RunResult`.
    """
    from ragexam import __version__
    from ragexam.analysis import run_tables as T
    from ragexam.data.chunking import chunk_corpus
    from ragexam.data.evidence import CorpusText, EvidenceIndex
    from ragexam.data.relevance import judge_rankings
    from ragexam.metrics.ranking import evaluate

    cfg = RunConfig(corpus=corpus, qa=qa, retrievers=retrievers, chunkers=chunkers, relevance=relevance,
                    k=k, depth=depth, miss_k=miss_k, seed=seed, n_resamples=n_resamples,
                    n_permutations=n_permutations, ignore_punctuation=ignore_punctuation, overlap=overlap)
    created = datetime.now(timezone.utc).replace(microsecond=0)
    corpus_obj, corpus_sha, qa_obj, qa_sha = _load_inputs(cfg.corpus, cfg.qa, cfg.ignore_punctuation)
    questions = list(qa_obj)
    mode = _relevance_mode(cfg.relevance, questions, str(qa_obj.source))
    scored = [q for q in questions if q.answerable]
    scored_ids = [q.query_id for q in scored]
    types = [q.type if q.type is not None else "(none)" for q in scored]

    chunker_objs = [_chunker(c) for c in cfg.chunkers]
    chunker_specs = [c.spec for c in chunker_objs]
    dup = [s for i, s in enumerate(chunker_specs) if s in chunker_specs[:i]]
    if dup:
        raise InputError(f"chunker {dup[0]!r} is given twice; give each chunker once.", source="chunkers")
    slots = [_retriever(r, cache_dir, progress) for r in cfg.retrievers]
    labels = _unique([lab for lab, _ in slots])

    metrics = T.all_metrics(cfg.k, cfg.miss_k)
    main = T.main_metrics(cfg.k, cfg.miss_k)
    kc = T.context_k(cfg.k, cfg.miss_k)
    queries = [q.question for q in questions]
    corpus_text = CorpusText(corpus_obj, ignore_punctuation=cfg.ignore_punctuation) if mode == "evidence" else None

    pipelines: List[Pipeline] = []
    rankings: Dict[str, Dict[str, List[Tuple[str, float]]]] = {}
    judgments: Dict[str, Any] = {}
    evaluations: Dict[str, Any] = {}
    values: Dict[str, Any] = {}
    unit_ranks_of: Dict[str, Dict[str, Dict[str, Optional[int]]]] = {}
    chunkings: Dict[str, Any] = {}
    n_chunks: Dict[str, int] = {}
    unmatched: List[Dict[str, Any]] = []
    slugs: set = set()

    for ch in chunker_objs:
        chunking = chunk_corpus(corpus_obj, ch)
        if len(chunking) == 0:
            raise InputError(f"chunker {ch.spec!r} produced no chunks; the documents are empty.",
                             source="chunkers")
        chunkings[ch.spec] = chunking
        n_chunks[ch.spec] = len(chunking)
        index = EvidenceIndex(corpus_text, chunking, min_fraction=cfg.overlap) if corpus_text is not None else None
        if index is not None:
            unmatched.extend(_unmatched_evidence(scored, index))
        ids = [c.chunk_id for c in chunking]
        texts = [c.text for c in chunking]
        for (label, retriever), rname in zip(slots, labels):
            name = f"{rname} | {ch.spec}"
            retriever.index(ids, texts)
            hits = _check_hits(retriever.search(queries, cfg.depth), len(queries), rname, chunking.by_id)
            ranked = {q.query_id: h for q, h in zip(questions, hits)}
            J = judge_rankings(scored, {qid: [chunking.by_id[c] for c, _ in ranked[qid]] for qid in scored_ids},
                               mode, index=index, ignore_punctuation=cfg.ignore_punctuation,
                               min_fraction=cfg.overlap, chunker_spec=ch.spec)
            if J.unjudged:  # _relevance_mode guarantees units for every scored question
                raise RagexamError(f"internal: questions without relevance units: {J.unjudged[:5]}")
            res = evaluate(J.qrels, J.run, metrics)
            order = {q: i for i, q in enumerate(res.query_ids)}
            V = res.values[[order[q] for q in scored_ids]]
            ret_sig = getattr(retriever, "signature", None) or f"custom:{type(retriever).__name__}"
            judge_tail = J.signature.split("|", 2)[2] if J.signature.count("|") >= 2 else ""
            sig = (f"{ret_sig}||chunker:{ch.spec}|relevance:{mode}" + (f"|{judge_tail}" if judge_tail else "")
                   + f"|depth:{cfg.depth}|{res.signature}")
            slug = slugify(name)
            while slug in slugs:
                slug += "_"
            slugs.add(slug)
            pipelines.append(Pipeline(name, rname, ch.spec, sig, slug, retriever))
            rankings[name] = ranked
            judgments[name] = J
            evaluations[name] = res
            values[name] = V
            unit_ranks_of[name] = {qid: _unit_ranks(J.per_question[qid], mode) for qid in scored_ids}

    # -- tables --------------------------------------------------------------------------------
    results: Dict[str, Any] = {}
    for p in pipelines:
        V = values[p.name]
        means, cis = T.means_and_cis(V, metrics, n_resamples=cfg.n_resamples, seed=cfg.seed)
        bt, bt_ci, bt_n = T.by_type(V, metrics, types, main, n_resamples=cfg.n_resamples, seed=cfg.seed)
        sw, fb = T.sweep(means, cfg.k)
        results[p.name] = {"n": len(scored_ids), "metrics": means, "ci95": cis, "by_type": bt,
                           "by_type_ci95": bt_ci, "by_type_n": bt_n, "sweep": sw, "fbeta": fb,
                           "signature": p.signature}
    comps: List[Dict[str, Any]] = []
    base = pipelines[0]
    for p in pipelines[1:]:
        comps.extend(T.comparisons(base.name, values[base.name], p.name, values[p.name], metrics, main,
                                   n_resamples=cfg.n_resamples, n_permutations=cfg.n_permutations,
                                   seed=cfg.seed))

    missed: Dict[str, List[Dict[str, Any]]] = {}
    per_question: List[RunRow] = []
    col = {m: j for j, m in enumerate(metrics)}
    for p in pipelines:
        chunking = chunkings[p.chunker]
        ur = unit_ranks_of[p.name]
        V = values[p.name]
        row_of = {qid: i for i, qid in enumerate(scored_ids)}
        lst: List[Dict[str, Any]] = []
        for q in questions:
            hits = rankings[p.name][q.query_id]
            row: Dict[str, Any] = {"pipeline": p.name, "retriever": p.retriever, "chunker": p.chunker,
                                   "query_id": q.query_id, "type": q.type, "answerable": bool(q.answerable)}
            if q.query_id in row_of:
                ranks = ur[q.query_id]
                fr = T.first_rank(ranks)
                row.update({"first_rank": fr, "unit_ranks": ranks, "n_units": len(ranks)})
                vals = V[row_of[q.query_id]]
                row.update({m: float(vals[col[m]]) for m in main})
                if fr is None or fr > cfg.miss_k:
                    lst.append(_missed_entry(q, mode, fr, ranks, cfg.miss_k, hits, chunking))
            else:
                row.update({"first_rank": None, "unit_ranks": {}, "n_units": 0})
                row.update({m: None for m in main})
            row["top_ids"] = [c for c, _ in hits[:TOP_IDS]]
            per_question.append(_typed(row))
        missed[p.name] = lst

    type_counts: Dict[str, int] = {}
    for q in questions:
        key = q.type if q.type is not None else "(none)"
        type_counts[key] = type_counts.get(key, 0) + 1
    n_evidence = sum(len(q.evidence) for q in scored) if mode == "evidence" else 0
    unmatched_n = {s: sum(1 for u in unmatched if u["chunker"] == s) for s in chunker_specs}
    cfg_dict = cfg.to_dict([lab for lab in labels], chunker_specs)
    cfg_dict["relevance"] = mode
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
            "n_documents": len(corpus_obj), "n_questions": len(questions),
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
    }
    return RunResult(summary=summary, per_question=per_question, pipelines=pipelines, rankings=rankings,
                     judgments=judgments, evaluations=evaluations, values=values, metrics=metrics,
                     main_metrics=main, scored_ids=scored_ids, chunkings=chunkings)


def _typed(row: Dict[str, Any]) -> RunRow:
    fixed = ("pipeline", "query_id", "retriever", "chunker", "type", "answerable", "first_rank", "unit_ranks",
             "n_units", "top_ids")
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
                  hits: List[Tuple[str, float]], chunking: Any) -> Dict[str, Any]:
    top = []
    for r, (cid, score) in enumerate(hits[:MISSED_TOP], 1):
        c = chunking.by_id[cid]
        top.append({"rank": r, "chunk_id": cid, "doc_id": c.doc_id, "score": float(score),
                    "text": shorten(c.text, TOP_TEXT_CHARS)})
    entry = {"query_id": q.query_id, "question": q.question, "type": q.type, "evidence": list(q.evidence),
             "ground_truth": q.ground_truth, "relevant_doc_ids": list(q.relevant_docs), "first_rank": fr,
             "unit_ranks": dict(ranks), "k": miss_k, "top": top}
    if mode == "evidence" and isinstance(fr, int) and fr > len(top) and fr <= len(hits):
        # the chunk where the evidence was found (evidence mode: ranks count chunk positions),
        # shortened around the evidence so a reader sees it
        cid, score = hits[fr - 1]
        c = chunking.by_id[cid]
        entry["first_correct"] = {"rank": fr, "chunk_id": cid, "doc_id": c.doc_id, "score": float(score),
                                  "text": _around_evidence(c.text, q.evidence)}
    return entry


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
