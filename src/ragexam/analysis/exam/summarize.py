"""Step 6 of the journey: the per-question values of every pipeline become the run's tables and its typed
:class:`~ragexam.storage.summary.RunSummary` (means with bootstrap intervals, the P/R/F sweep, per type, paired
comparisons with the baseline, rerank stages against their first stage, the missed questions), plus the typed
per-question rows of ``per_question.csv``."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from ragexam import fmt
from ragexam.analysis.exam import tables as T
from ragexam.analysis.exam.pipelines import Pipeline
from ragexam.exec.timing import stage
from ragexam.storage.runfolder import RUN_FORMAT, RunRow, SplitCell
from ragexam.storage.summary import (TOP_IDS, ChunkingReport, ChunkSizes, ChunkWindow, Comparison, DatasetInfo,
                                     EvidenceCut, EvidenceSplitInfo, FailedQuestion, Latency, MissedQuestion,
                                     PipelineInfo, PipelineResult, RerankCeiling, RerankChange, RerankStage,
                                     RerankStatus, RetrievedChunk, RunSettings, RunSummary, SweepPoint, TypeLift,
                                     UnmatchedEvidence, Unretrieved)

if TYPE_CHECKING:
    from ragexam.analysis.exam.config import RunConfig
    from ragexam.analysis.exam.stages import Chunks, Dataset, MetricTable, Ranking, Scores, Sizes
    from ragexam.data.relevance import EvidenceSplit
    from ragexam.data.retrieved import RetrievedItem
    from ragexam.data.schema import Chunk, Question

    #: the chunk (or the returned text) behind a ranked key
    Hit = Union[Chunk, RetrievedItem]

__all__ = ["summarize", "shorten", "budget_pairs", "TOP_TEXT_CHARS", "MISSED_TOP", "TOP_IDS"]

#: characters kept of a chunk text in ``missed[*].top[*].text``
TOP_TEXT_CHARS = 120
#: chunks listed per missed question
MISSED_TOP = 3


def shorten(text: str, limit: int) -> str:
    """``text`` with runs of whitespace collapsed, cut to ``limit`` characters with ``…``."""
    t = " ".join(str(text).split())
    return t if len(t) <= limit else t[: max(1, limit - 1)].rstrip() + "…"


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


def comparison_records(entries: Sequence[Mapping[str, Any]]) -> List[Comparison]:
    return [Comparison.from_dict(e) for e in entries]


# -- per pipeline ---------------------------------------------------------------------------------------------


def _pipeline_result(s: "Scores", cfg: "RunConfig", metrics: Sequence[str], main: Sequence[str], types: Sequence[str],
                     scored: set, mode: str) -> PipelineResult:
    from ragexam.retrieval.texts import latency_summary, summarize_failures

    V = s.values
    means, cis = T.means_and_cis(V, metrics, n_resamples=cfg.n_resamples, seed=cfg.seed)
    bt, bt_ci, bt_n = T.by_type(V, metrics, types, main, n_resamples=cfg.n_resamples, seed=cfg.seed)
    sw, fb = T.sweep(means, cfg.cutoffs)
    r = s.ranking
    failed = summarize_failures(r.failures)
    scored_failed = summarize_failures({q: why for q, why in r.failures.items() if q in scored})
    lat = latency_summary(r.latencies)
    return PipelineResult(
        n=len(s.values), metrics=means, ci95=cis, by_type=bt, by_type_ci95=bt_ci, by_type_n=bt_n,
        sweep={k: SweepPoint(**v) for k, v in sw.items()}, fbeta=fb,
        unretrieved=Unretrieved(n=failed["n"], by_kind=failed["by_kind"],
                                questions=[FailedQuestion(**q) for q in failed["questions"]],
                                n_scored=scored_failed["n"],
                                by_kind_scored=scored_failed["by_kind"]),
        signature=s.signature, latency=Latency(**lat) if lat is not None else None,
        index_recall=list(r.index_recall), produced_nothing=_produced_nothing(r, failed),
        n_evidence_split=len(s.judged.splits) if mode == "evidence" else None)


def _produced_nothing(r: "Ranking", failed: Mapping[str, Any]) -> Optional[str]:
    """Why a pipeline produced nothing, or ``None``: it failed on every question (a search service down, every
    request refused), or its rerank stage could use no reply at all (the row would show the first stage's order
    as if it were the reranker's)."""
    n = len(r.ranked)
    if n and failed["n"] == n:
        kinds = ", ".join(f"{k} {c}" for k, c in failed["by_kind"].items())
        first = failed["questions"][0]["reason"] if failed["questions"] else ""
        return f"every question failed ({kinds}); e.g. {first}"
    report = r.rerank
    if report is not None:
        status = list(report.status)
        if status.count("failed") and not (status.count("reranked") or status.count("partial")):
            why = next((w for st, w in zip(status, report.reasons) if st == "failed" and w), "")
            return (f"the rerank stage reranked no question ({status.count('failed')} failed"
                    + (f", e.g. {why}" if why else "") + "): the order is the first stage's")
    return None


def _empty_lists(table: Any, failed: Mapping[str, str]) -> List[str]:
    """A warning per pipeline that returned an empty list for every question without failing (an empty index, a
    query it cannot read, a question set of other words): every question is a miss, which a table of zeros alone
    does not say."""
    out = []
    for s in table:
        ranked = s.ranking.ranked
        if ranked and not any(ranked.values()) and s.ranking.pipeline.name not in failed:
            out.append(f"pipeline {s.ranking.pipeline.name!r} returned an empty list for every question "
                       f"({fmt.plural(len(ranked), 'question')}): each is graded as a miss")
    return out


def _rerank_changes(data: "Dataset", s: "Scores", miss_k: int, top: int) -> Tuple[List[RerankChange], List[RerankChange],
                                                                        int, int, int]:
    """``(fixed, broken, n within the top candidates, misses inside, misses outside)`` of a rerank stage."""
    first = s.first_stage
    r1 = first.ranking
    fixed, broken = [], []
    within = misses_outside = misses_inside = 0
    for q in data.scored:
        before = T.first_rank(first.judged.unit_ranks[q.query_id])
        after = T.first_rank(s.judged.unit_ranks[q.query_id])
        hit_before = before is not None and before <= miss_k
        hit_after = after is not None and after <= miss_k
        change = RerankChange(query_id=q.query_id, type=q.type, first_rank_before=before, first_rank_after=after)
        if hit_after and not hit_before:
            fixed.append(change)
        elif hit_before and not hit_after:
            broken.append(change)
        if data.relevance == "doc":
            rel = set(q.relevant_docs)
            inside = any(r1.lookup[c].doc_id in rel for c, _ in r1.ranked[q.query_id][:top])
        else:
            inside = before is not None and before <= top
        within += inside
        if not hit_after:
            misses_inside += inside
            misses_outside += not inside
    return fixed, broken, within, misses_inside, misses_outside


def _rerank_stage(data: "Dataset", s: "Scores", cfg: "RunConfig", metrics: Sequence[str], main: Sequence[str]) -> RerankStage:
    """What a rerank stage did for one pipeline (docs/run-format.md, ``rerank``): the lift over its own first
    stage (paired tests, per type), the questions it fixed and broke, the first stage's recall ceiling, the
    queries it could not rerank, its latency and usage."""
    import numpy as np

    from ragexam.retrieval.texts import failure_kind, latency_summary

    r = s.ranking
    stage_obj, report = r.pipeline.retriever_obj, r.rerank
    first = s.first_stage
    top = report.top
    first_name = stage_obj.first_spec + (f" | {r.pipeline.chunker}" if r.pipeline.chunker is not None else "")
    means1, cis1 = T.means_and_cis(first.values, metrics, n_resamples=cfg.n_resamples, seed=cfg.seed)
    comps = T.comparisons(first_name, first.values, r.name, s.values, metrics, main, n_resamples=cfg.n_resamples,
                          n_permutations=cfg.n_permutations, seed=cfg.seed)
    types = data.types
    t_arr = np.asarray(types, dtype=object)
    cols = [list(metrics).index(m) for m in main]
    by_type = {}
    for t in dict.fromkeys(types):
        rows = np.flatnonzero(t_arr == t)
        diff = s.values[np.ix_(rows, cols)].mean(axis=0) - first.values[np.ix_(rows, cols)].mean(axis=0)
        by_type[t] = TypeLift(n=int(rows.size), lift={m: float(d) for m, d in zip(main, diff)})
    fixed, broken, within, inside, outside = _rerank_changes(data, s, cfg.miss_k, top)
    counts: Dict[str, int] = {}
    failed: List[FailedQuestion] = []
    by_kind: Dict[str, int] = {}
    for q, st, why in zip(data.questions, report.status, report.reasons):
        counts[st] = counts.get(st, 0) + 1
        if st == "failed":
            failed.append(FailedQuestion(query_id=q.query_id, reason=why))
            k = failure_kind(str(why))
            by_kind[k] = by_kind.get(k, 0) + 1
    n = len(data.scored)
    lat = latency_summary([x for x in report.latency if x is not None])
    return RerankStage(
        first_stage=first_name, first_stage_signature=getattr(stage_obj.first, "signature", None),
        reranker=stage_obj.reranker.spec, reranker_signature=stage_obj.reranker.signature, top=top,
        first_stage_metrics=means1, first_stage_ci95=cis1, comparisons=comparison_records(comps), by_type=by_type,
        fixed=fixed, broken=broken,
        ceiling=RerankCeiling(top=top, n_within=within, recall_at_top=within / n if n else None,
                              misses=inside + outside, misses_outside=outside, misses_inside=inside, k=cfg.miss_k),
        status=RerankStatus(reranked=counts.get("reranked", 0), partial=counts.get("partial", 0),
                            failed=counts.get("failed", 0), skipped=counts.get("skipped", 0),
                            unjudged_candidates=int(sum(report.unjudged)), by_kind=dict(sorted(by_kind.items())),
                            questions=failed),
        latency=Latency(**lat) if lat is not None else None, usage=dict(report.usage))


# -- per question ---------------------------------------------------------------------------------------------


def _missed_entry(q: "Question", mode: str, fr: Optional[int], ranks: Dict[str, Optional[int]], miss_k: int,
                  hits: List[Tuple[str, Optional[float]]], lookup: Mapping[str, "Hit"]) -> MissedQuestion:
    top = []
    for r, (cid, score) in enumerate(hits[:MISSED_TOP], 1):
        c = lookup[cid]
        top.append(RetrievedChunk(rank=r, chunk_id=cid, doc_id=c.doc_id or None, score=_num(score),
                                  text=shorten(c.text, TOP_TEXT_CHARS)))
    entry = MissedQuestion(query_id=q.query_id, question=q.question, type=q.type, evidence=list(q.evidence),
                           ground_truth=q.ground_truth, relevant_doc_ids=list(q.relevant_docs), first_rank=fr,
                           unit_ranks=dict(ranks), k=miss_k, top=top, n_returned=len(hits))
    at = _first_correct_position(q, mode, fr, hits, lookup)
    if at is not None and (mode == "doc" or at > len(top)):
        # the first chunk that counts: evidence mode, the rank itself (ranks count chunk positions); doc mode, the
        # first chunk of a relevant document (``fr`` counts documents, so it cannot index the chunk list); its
        # text shortened around the evidence so a reader sees it
        cid, score = hits[at - 1]
        c = lookup[cid]
        entry.first_correct = RetrievedChunk(rank=at, chunk_id=cid, doc_id=c.doc_id or None, score=_num(score),
                                             text=_around_evidence(c.text, q.evidence))
    return entry


def _first_correct_position(q: "Question", mode: str, fr: Optional[int], hits: List[Tuple[str, Optional[float]]],
                            lookup: Mapping[str, "Hit"]) -> Optional[int]:
    """The 1-based position in ``hits`` (the ranked chunks) of the first chunk that counts: evidence mode, ``fr``
    (when it is within the list); doc mode, the first chunk whose document is relevant (grade > 0)."""
    if not isinstance(fr, int):
        return None
    if mode == "evidence":
        return fr if fr <= len(hits) else None
    relevant = set(q.relevant_docs)
    return next((i for i, (cid, _) in enumerate(hits, 1) if lookup[cid].doc_id in relevant), None)


def _rows_and_missed(data: "Dataset", p: Pipeline, s: "Scores", main: Sequence[str], metrics: Sequence[str], miss_k: int
                     ) -> Tuple[List[RunRow], List[MissedQuestion]]:
    """The per-question rows of one pipeline (every question, in question-set order) and its missed questions."""
    r = s.ranking
    col = {m: j for j, m in enumerate(metrics)}
    row_of = {qid: i for i, qid in enumerate(data.scored_ids)}
    rows: List[RunRow] = []
    missed: List[MissedQuestion] = []
    for q in data.questions:
        hits = r.ranked[q.query_id]
        values: Dict[str, Optional[float]] = {m: None for m in main}
        fr, ranks = None, {}
        if q.query_id in row_of:
            ranks = s.judged.unit_ranks[q.query_id]
            fr = T.first_rank(ranks)
            vals = s.values[row_of[q.query_id]]
            values = {m: float(vals[col[m]]) for m in main}
            if fr is None or fr > miss_k:
                entry = _missed_entry(q, data.relevance, fr, ranks, miss_k, hits, r.lookup)
                entry.unretrieved = r.failures.get(q.query_id)
                split = s.judged.splits.get(q.query_id)
                entry.evidence_split = EvidenceSplitInfo.from_dict(split.to_dict()) if split is not None else None
                missed.append(entry)
        split = s.judged.splits.get(q.query_id)
        rows.append(RunRow(pipeline=p.name, query_id=q.query_id, retriever=p.retriever, chunker=p.chunker,
                           type=q.type, answerable=bool(q.answerable), first_rank=fr, unit_ranks=dict(ranks),
                           n_units=len(ranks), top_ids=[c for c, _ in hits[:TOP_IDS]], metrics=values,
                           unretrieved=r.failures.get(q.query_id),
                           evidence_split=_split_cell(split) if split is not None else None))
    return rows, missed


def _split_cell(split: "EvidenceSplit") -> SplitCell:
    """The ``evidence_split`` cell of per_question.csv: where the chunking cut the evidence."""
    return SplitCell(split.unit_id, split.k, split.rank, split.chunk_id, split.part, split.chars, split.length)


# -- chunk sizes and budgets ----------------------------------------------------------------------------------


def _chunking(sizes: Optional["Sizes"], table: "MetricTable") -> Optional[ChunkingReport]:
    """The ``chunking`` block of the summary from the run's :class:`~ragexam.analysis.exam.stages.Sizes` (and, for
    a pipeline that returned texts, how many it returned over all questions, from its ranking in ``table``)."""
    if sizes is None:
        return None
    blocks = {}
    for name, st in sizes.stats.items():
        windows = [ChunkWindow(embedder=w.embedder, window=w.window, action=w.action, n_over=w.n_over,
                               max_tokens=w.max_tokens) for w in sizes.windows.get(name, [])]
        returned = (sum(len(h) for h in table[name].ranking.ranked.values())
                    if sizes.kinds[name] == "texts" and name in table.by_name else None)
        blocks[name] = ChunkSizes(kind=sizes.kinds[name], n_chunks=st.n, mean_chars=float(st.mean), max_chars=st.max,
                                  cut_sentences=st.cut_sentences, windows=windows, n_returned=returned)
    return ChunkingReport(sizes=blocks, pipelines=dict(sizes.of_pipeline), budgets=list(sizes.budgets),
                          budget_rule=sizes.rule,
                          token_counter=sizes.tokens[1] if sizes.tokens is not None else None,
                          size_warning=sizes.warning or None)


def _size_warnings(sizes: Optional["Sizes"]) -> List[str]:
    """The run's warnings about chunk sizes: chunkings of different size compared by chunk count, and chunks over
    an embedder's window."""
    if sizes is None:
        return []
    out = [sizes.warning] if sizes.warning else []
    out += [w.message() for reports in sizes.windows.values() for w in reports if w.n_over]
    return out


def budget_pairs(pipelines: Sequence[Pipeline]) -> List[Tuple[str, str]]:
    """The ``(reference, pipeline)`` pairs compared at an equal budget: with several chunkers, each pipeline
    against the one with the same retriever and the first chunker (a chunking study), and each pipeline that
    returns texts against the baseline; with one chunker, every pipeline against the baseline."""
    base = pipelines[0].name
    if len({p.chunker for p in pipelines if p.kind == "chunks"}) < 2:
        return [(base, p.name) for p in pipelines[1:]]
    first: Dict[str, str] = {}
    out = []
    for p in pipelines:
        ref = first.setdefault(p.retriever, p.name) if p.kind == "chunks" else base
        if ref != p.name:
            out.append((ref, p.name))
    return out


def _budget_comparisons(pipelines: Sequence[Pipeline], table: "MetricTable", cfg: "RunConfig", budget: Sequence[str]
                        ) -> List[Comparison]:
    out: List[Comparison] = []
    for ref, name in budget_pairs(pipelines) if budget else []:
        out.extend(comparison_records(T.comparisons(
            ref, table[ref].values, name, table[name].values, table.metrics, budget,
            n_resamples=cfg.n_resamples, n_permutations=cfg.n_permutations, seed=cfg.seed)))
    return out


# -- the summary ----------------------------------------------------------------------------------------------


def _dataset_info(data: "Dataset", chunks: "Chunks", settings: RunSettings) -> DatasetInfo:
    from ragexam.questions.audit import dataset_audit

    questions, types = data.questions, data.types
    type_counts: Dict[str, int] = {}
    for q in questions:
        key = q.type if q.type is not None else "(none)"
        type_counts[key] = type_counts.get(key, 0) + 1
    return DatasetInfo(
        corpus=settings.corpus, qa=settings.qa, corpus_sha256=data.corpus_sha256, qa_sha256=data.qa_sha256,
        n_documents=len(data.corpus) if data.corpus is not None else None, n_questions=len(questions),
        n_answerable=sum(1 for q in questions if q.answerable),
        n_out_of_corpus=sum(1 for q in questions if not q.answerable), n_scored=len(data.scored),
        types=dict(sorted(type_counts.items())), scored_types=dict(sorted({t: types.count(t) for t in set(types)}.items())),
        n_chunks={spec: len(cs.chunking) for spec, cs in chunks.sets.items()},
        n_evidence=sum(len(q.evidence) for q in data.scored) if data.relevance == "evidence" else 0,
        n_unmatched_evidence={spec: len(cs.unmatched) for spec, cs in chunks.sets.items()},
        audit=dataset_audit(settings.qa, data.qa_sha256))


def _unmatched(chunks: "Chunks") -> List[UnmatchedEvidence]:
    return [UnmatchedEvidence(query_id=u["query_id"], unit_id=u["unit_id"], evidence=u["evidence"],
                              chunker=u["chunker"], reason=u["reason"],
                              cuts=[EvidenceCut(**c) for c in u["cuts"]]) for u in chunks.unmatched]


def summarize(data: "Dataset", chunks: "Chunks", table: "MetricTable", cfg: "RunConfig", settings: RunSettings, *, warnings: Sequence[str],
              created: datetime, run_id: str, version: str) -> Tuple[RunSummary, List[RunRow], List[Pipeline]]:
    """``(summary, per-question rows, pipelines)`` of a run: ``table`` is the stage-5
    :class:`~ragexam.analysis.exam.stages.MetricTable`, ``cfg`` the :class:`~ragexam.analysis.exam.config.RunConfig`,
    ``settings`` its ``config`` block."""
    metrics = table.metrics
    main = T.main_metrics(cfg.cutoffs, cfg.miss_k)
    types = data.types
    scored = set(data.scored_ids)
    pipelines = [Pipeline(s.ranking.pipeline.name, s.ranking.pipeline.retriever, s.ranking.pipeline.chunker,
                          s.signature, s.ranking.pipeline.slug, s.ranking.pipeline.retriever_obj,
                          s.ranking.pipeline.kind) for s in table]
    sizes = table.sizes
    budget = T.budget_metrics(sizes.budgets) if sizes is not None else []
    with stage("statistics"):
        results = {p.name: _pipeline_result(s, cfg, metrics, main, types, scored, data.relevance)
                   for p, s in zip(pipelines, table)}
        reranks = {p.name: _rerank_stage(data, s, cfg, metrics, main)
                   for p, s in zip(pipelines, table) if s.ranking.rerank is not None}
        base, base_scores = pipelines[0], table[pipelines[0].name]
        comps: List[Comparison] = []
        for p in pipelines[1:]:
            comps.extend(comparison_records(T.comparisons(
                base.name, base_scores.values, p.name, table[p.name].values, metrics, main,
                n_resamples=cfg.n_resamples, n_permutations=cfg.n_permutations, seed=cfg.seed)))
        budget_comps = _budget_comparisons(pipelines, table, cfg, budget)
        rows: List[RunRow] = []
        missed: Dict[str, List[MissedQuestion]] = {}
        for p, s in zip(pipelines, table):
            prow, missed[p.name] = _rows_and_missed(data, p, s, main, metrics, cfg.miss_k)
            rows.extend(prow)
    failed = {p: results[p].produced_nothing for p in results if results[p].produced_nothing}
    warnings = list(warnings) + _size_warnings(sizes) + [f"pipeline {p!r} produced nothing: {why}"
                                                         for p, why in failed.items()] + _empty_lists(table, failed)
    summary = RunSummary(
        format=RUN_FORMAT, run_id=run_id, created=created.strftime("%Y-%m-%dT%H:%M:%SZ"), ragexam_version=version,
        config=settings, main_metrics=main, context_k=T.context_k(cfg.cutoffs, cfg.miss_k),
        dataset=_dataset_info(data, chunks, settings), pipelines=[PipelineInfo(**p.to_dict()) for p in pipelines],
        results=results, comparisons=comps, missed=missed, unmatched_evidence=_unmatched(chunks),
        warnings=list(warnings), rerank=reranks, chunking=_chunking(sizes, table), budget_metrics=budget,
        budget_comparisons=budget_comps)
    return summary, rows, pipelines
