"""Console rendering of a ``ragexam run`` summary (rich tables; works on a loaded summary.json too).

:func:`render_run` prints, in order:

1. the **dataset card**: corpus and question-set sizes, question types, how many questions are
   scored and how many are out-of-corpus (not scored), each chunking's sizes (chunks, mean and
   largest size, sentences ``paragraphs:N`` cut inside, chunks over each embedder's window), the
   context budgets, and the evidence strings no chunk can hold (with the reason, e.g. cut by a chunk
   boundary); then the run's warnings (e.g. questions a results file lacks, chunkers of different size
   compared by chunk count, chunks over an embedder's window);
2. the **pipeline legend** (``P1  bm25 | paragraphs:400``, ...; P1 is the baseline) and the
   **metric table**: one row per pipeline, the main metrics' means over the scored questions with
   their 95% bootstrap interval underneath, explained by the ranking-metric registry's legends; with
   context budgets the **table at an equal budget** (each pipeline with its chunks' mean size) and, with
   several chunkers, the **chunking study** (chunker × retriever: the headline metric by chunk count
   beside the same metric at the budget); below, per pipeline that failed on some questions,
   how many were *unretrieved* (graded as misses) and why, and the latency of services;
3. the **sweep**: the lecture's mean P@K / R@K / F1@K for each K (and each context budget), with
   F-beta@K for beta 0.5 (precision weighted) and 2 (recall weighted);
4. **by question type**: the headline metrics per type, with n per type;
5. **comparisons**: every pipeline against the baseline (the first), per metric: difference,
   its paired-bootstrap 95% interval, the paired randomization p-value, the Holm-adjusted p
   over the metrics of the pair, the minimum detectable difference (MDD) and a short reading;
   then the full plain-words verdict on the headline metric.  Differences smaller than the
   MDD are flagged as within the noise; then the same **at an equal context budget** (each chunker
   against the first chunker with the same retriever);
6. the **rerank stage** of each ``RETRIEVER>RERANKER`` pipeline: its lift over its own first stage on the
   headline metrics (difference, paired interval, Holm-adjusted reading), per question type, the
   questions it fixed and broke, the first stage's **recall ceiling** (how many scored questions have a
   relevant unit among the candidates, and how many misses lay outside them: no reranker can fix those),
   the queries it could not rerank (kept in first-stage order), its latency per query and its cost;
7. the **missed questions** of each pipeline (no relevant unit in the top ``k``): question,
   evidence, where it was found (or "not found"), ``evidence_split`` when the chunking cut the
   evidence (which chunk holds which part), and the top-3 retrieved chunks, shortened; at most
   ``max_missed`` per pipeline, with the count of ``evidence_split`` misses in the title;
8. every pipeline's **signature**.

Only the summary is needed (a :class:`~ragexam.storage.summary.RunSummary`, or the summary.json object,
docs/run-format.md), so a saved run renders the same.

Every table fits the console (:mod:`ragexam.report.tables`): a row names its pipeline in full when
the table fits, else by its label from the legend; metric columns that do not fit beside the names
go to a second block below, never cut.  Numbers are written by :mod:`ragexam.fmt`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Protocol, Sequence, Union

from ragexam import fmt
from ragexam.report.tables import Column, Keys, pipeline_keys, pipeline_labels, print_fitted, print_legend
from ragexam.storage.summary import (ChunkSizes, Comparison, DatasetAudit, EmbeddingCount, MissedQuestion, PipelineInfo,
                                     RerankStage, RunSummary, Unretrieved)
from ragexam.types import JsonObject

if TYPE_CHECKING:
    from pathlib import Path

    from ragexam.analysis.exam.run import RunResult

__all__ = ["render_run", "render_where_next", "render_outcome", "render_demo_intro"]

#: missed questions printed per pipeline
MAX_MISSED = 10


def _console():
    from ragexam.report.terminal import console

    return console()


def _shorten(text: str, limit: int) -> str:
    """``text`` on one line, cut to at most ``limit`` terminal cells (Hangul is two cells) with ``…``."""
    from rich.cells import cell_len

    t = " ".join(str(text).split())
    if cell_len(t) <= limit:
        return t
    out, used = [], 0
    for ch in t:
        w = cell_len(ch)
        if used + w > max(1, limit - 1):
            break
        out.append(ch)
        used += w
    return "".join(out).rstrip() + "…"


def _bullets(console, rows, indent: int = 2) -> None:
    """Rows of ``(label, text)`` with the text wrapping under itself (a hanging indent)."""
    from rich.table import Table
    from rich.text import Text

    grid = Table.grid(padding=(0, 1))
    grid.add_column(no_wrap=True)
    grid.add_column()
    for label, text in rows:
        grid.add_row(Text(" " * indent + label, style="bold") if isinstance(label, str) else label,
                     text if not isinstance(text, str) else Text(text))
    console.print(grid)


def _cell(mean: Optional[float], ci: Optional[Sequence[float]], n: Optional[int] = None):
    """A mean with its 95% interval on the line below (dim): ``0.615`` / ``.49–.74``; over fewer questions than an
    interval needs (``n``), ``n = 4: too few`` there instead (:func:`ragexam.stats.proportion.too_few`)."""
    from rich.text import Text

    from ragexam.stats.proportion import too_few

    t = Text(fmt.num(mean))
    interval = fmt.ci(ci)
    if interval:
        t.append("\n" + interval, style="dim")
    elif fmt.is_number(mean) and isinstance(n, int) and too_few(n):
        t.append(f"\nn = {n}: too few", style="dim")
    return t


def _labels(summary: RunSummary) -> Dict[str, str]:
    return pipeline_labels(summary.pipeline_names)


def _named(label: str, name: str):
    """``P1 name`` with the label in bold (a table cell or a title)."""
    from rich.text import Text

    t = Text(label, style="bold")
    t.append(" " + name)
    return t


def _pipeline_keys(summary: RunSummary, rows: Sequence[Optional[PipelineInfo]], extra: Sequence[Column] = (),
                   extra_cells: Sequence[Sequence[Any]] = (), one_chunker: bool = False) -> List[Keys]:
    """Key variants for rows of pipelines (``None``: a continuation row of the pipeline above): the
    label and the name (the retriever only when every pipeline has the same chunker), or the label."""
    labels = _labels(summary)
    failed = summary.failed_pipelines
    named = [None if p is None else (labels.get(p.name, "?"), str(p.retriever or p.name) if one_chunker else p.name,
                                     " [produced nothing]" if p.name in failed else "") for p in rows]
    return pipeline_keys(named, extra, extra_cells)


def _audit(summary: RunSummary) -> Optional[DatasetAudit]:
    """The question set's audit, through the one reader (:func:`ragexam.questions.audit.dataset_audit`)."""
    from ragexam.questions.audit import dataset_audit

    ds = summary.dataset
    return dataset_audit(ds.qa, ds.qa_sha256, ds.audit)


def _dataset_card(console, summary: RunSummary, saved: Saved) -> None:
    from rich.text import Text

    ds, cfg = summary.dataset, summary.config
    types = ", ".join(f"{t} {n}" for t, n in ds.types.items())
    chunks = ", ".join(f"{c} → {fmt.plural(n, 'chunk')}" for c, n in ds.n_chunks.items()) \
        if summary.chunking is None else ""
    docs = (f"{fmt.plural(ds.n_documents, 'document')} · " if ds.n_documents is not None else
            "no corpus (every pipeline returned its own texts) · ")
    rows = [("dataset", f"{summary.dataset_label}: {docs}"
                        f"{fmt.plural(ds.n_questions, 'question')} ({types}) · {ds.n_scored} scored"
                        + (f" · {ds.n_out_of_corpus} out-of-corpus (not scored: nothing to retrieve)"
                           if ds.n_out_of_corpus else "")
                        + (f" · {chunks}" if chunks else ""))]
    audit = _audit(summary)
    if audit is not None:
        rows.append(("audit", audit.text))
    relevance = cfg.relevance
    texts = any(p.kind == "texts" for p in summary.pipelines)
    unit = "chunk (or returned text)" if texts else "chunk"
    from ragexam.data.relevance import RULES

    rel_text = f"{relevance}: " + RULES.get(relevance, "").format(unit=unit)
    if cfg.overlap is not None:
        rel_text += f" (a chunk holding ≥ {cfg.overlap:g} of a string counts)"
    rows.append(("relevance", f"{rel_text} · k = {', '.join(map(str, cfg.k))} · depth "
                              f"{cfg.depth} · seed {cfg.seed} · run {summary.run_id}"))
    rows.extend(_chunking_rows(summary))
    if relevance == "evidence" and ds.n_unmatched_evidence:
        parts = []
        for chunker, n in ds.n_unmatched_evidence.items():
            if not n:
                continue
            reasons: Dict[str, int] = {}
            for u in summary.unmatched_evidence:
                if u.chunker == chunker:
                    reasons[u.reason] = reasons.get(u.reason, 0) + 1
            why = " (" + ", ".join(f"{r}: {c}" for r, c in reasons.items()) + ")" if reasons else ""
            parts.append(f"{n} under {chunker}{why}")
        rows.append(("evidence", f"{fmt.plural(ds.n_evidence, 'evidence string')}; " + (
            "held by no chunk (never creditable): " + "; ".join(parts) if parts
            else f"each held whole by a chunk under {', '.join(ds.n_unmatched_evidence)}")))
    _bullets(console, rows, indent=0)
    listed = summary.unmatched_evidence
    for u in listed[:MAX_MISSED]:
        cut = u.cuts[0] if u.cuts else None
        where = f" at {cut.doc_id} offset {cut.offset} (chunks {', '.join(cut.chunks)})" if cut else ""
        console.print(Text(_shorten(f"  {u.query_id} {u.unit_id} [{u.chunker}] {u.reason}{where}: “{u.evidence}”",
                                    console.width - 1), style="yellow"))
    if len(listed) > MAX_MISSED:
        console.print(Text(f"  … and {len(listed) - MAX_MISSED} more ({where_all(saved, 'unmatched_evidence')})",
                           style="yellow"))
    for w in summary.warnings:
        console.print(Text("warning: " + str(w), style="yellow"), soft_wrap=True)


def _size_text(name: str, c: ChunkSizes) -> str:
    """One chunking's sizes: ``paragraphs:400 81 chunks, mean 296 / max 400 characters · ...``."""
    if c.kind == "texts" and not c.n_chunks:
        return f"{name}: no text returned"
    if c.kind != "texts":
        counted = fmt.plural(c.n_chunks, "chunk")
    elif c.n_returned is not None:
        counted = f"{fmt.plural(c.n_returned, 'text')} returned, {c.n_chunks} distinct"
    else:
        counted = f"{fmt.plural(c.n_chunks, 'distinct text')} returned"
    out = f"{name}: {counted}, mean {c.mean_chars:.0f} / max {c.max_chars} characters"
    if c.cut_sentences:
        size = name.rsplit(":", 1)[-1]
        out += (f" · {fmt.plural(c.cut_sentences, 'sentence')} longer than {size} characters cut inside (windows "
                "overlapping by a tenth)")
    for w in c.windows:
        out += (f" · {w.n_over} over {w.embedder}'s window of {w.window} tokens ({w.action})" if w.n_over else
                f" · all within {w.embedder}'s window of {w.window} tokens")
    return out


def _embedding_text(u: EmbeddingCount) -> str:
    """``e5 passages: 8,210 asked, 3,120 distinct (5,090 shared, 220 of them only up to whitespace); 1,200 read from
    the cache, 1,920 embedded``."""
    shared = (f" ({u.shared:,} shared" + (f", {u.whitespace:,} of them only up to whitespace" if u.whitespace else "")
              + ")") if u.shared else ""
    done = "; ".join(f"{n:,} {what}" for n, what in ((u.cached, "read from the cache"), (u.embedded, "embedded")) if n)
    return (f"{u.embedder} {fmt.noun(u.texts, u.role)}: {u.texts:,} asked, {u.distinct:,} distinct{shared}"
            + (f"; {done}" if done else ""))


def _chunking_rows(summary: RunSummary) -> List[Any]:
    """The dataset card's rows of the chunking block: each chunking's sizes, the embeddings the chunkers shared (a
    study of several), and the context budgets."""
    ch = summary.chunking
    if ch is None:
        return []
    rows = [("chunks" if i == 0 else "", _size_text(name, c)) for i, (name, c) in enumerate(ch.sizes.items())]
    if len([c for c in ch.sizes.values() if c.kind == "chunker"]) > 1 and summary.timing is not None:
        rows.extend(("embedded" if i == 0 else "", _embedding_text(u))
                    for i, u in enumerate(u for u in summary.timing.embeddings if u.role == "passage"))
    if ch.budgets:
        why = ("given with -k" if ch.budget_rule == "given" else
               f"{summary.miss_k} chunks of the median mean size: chunkings of different size are compared")
        units = ", ".join(f"{b[:-1]} {'characters' if b.endswith('c') else 'tokens'}" for b in ch.budgets)
        counted = f"; tokens counted by {ch.token_counter}" if ch.token_counter else ""
        rows.append(("budget", f"{', '.join(ch.budgets)} ({why}): every ranking metric also cut at {units} of "
                               f"context, read in rank order{counted}"))
    return rows


def _unretrieved(console, summary: RunSummary) -> None:
    """Per pipeline: the questions it failed on (graded as misses), by kind; and a service's latency."""
    from rich.text import Text

    labels = _labels(summary)
    for p in summary.pipelines:
        res = summary.result(p.name)
        un, lat = res.unretrieved, res.latency
        if res.produced_nothing:
            console.print(Text(f"{labels.get(p.name, '?')} produced nothing: {res.produced_nothing} — its row is "
                               "not a result of this pipeline.", style="bold red"), soft_wrap=True)
        if un.n:
            line = Text(f"{labels.get(p.name, '?')} unretrieved: ", style="bold yellow")
            line.append(unretrieved_counts(un, summary.dataset.n_scored), style="yellow")
            if un.questions:
                first = un.questions[0]
                line.append(f"; e.g. {first.query_id}: {_shorten(first.reason, 80)}", style="dim")
            console.print(line, soft_wrap=True)
        if lat is not None:
            console.print(Text(f"{labels.get(p.name, '?')} latency per question: median "
                               f"{fmt.num(lat.median)} s · p95 {fmt.num(lat.p95)} s · max "
                               f"{fmt.num(lat.max)} s (n {lat.n})", style="dim"))


@dataclass(frozen=True)
class Saved:
    """Where a run's files are, for the lines that point into them: ``folder`` when they were written there; else
    ``stored`` says whether the summary is a stored one (``show``: ``--json`` prints it) or a run's that wrote no
    files (``--out DIR`` writes them)."""

    folder: Optional[str] = None
    stored: bool = False


def where_all(saved: Saved, key: str) -> str:
    """Where every entry of the summary's ``key`` (``missed``, ``unmatched_evidence``) can be read: a file that was
    written, or how to get one (a line never names a file that is not there)."""
    csv = key == "missed"
    if saved.folder is not None:
        return (f"see {saved.folder}/per_question.csv, or summary.json '{key}'" if csv
                else f"see {saved.folder}/summary.json '{key}'")
    if saved.stored:
        return f"all in the summary's '{key}': --json prints it"
    return ("write them all with --out DIR: per_question.csv, summary.json 'missed'" if csv
            else f"write them all with --out DIR: summary.json '{key}'")


def unretrieved_counts(un: Unretrieved, n_scored: int) -> str:
    """``37 of 65 scored questions (missing 37), graded as misses; 4 out-of-corpus questions (not scored)``: the
    kinds add up to the count they are shown with, the scored questions' apart from the out-of-corpus ones."""
    scored = un.n_scored if un.n_scored is not None else un.n
    kinds = un.scored_kinds()
    parts = []
    if scored:
        kinds_text = f" ({', '.join(f'{k} {n}' for k, n in kinds.items())})" if kinds else ""
        parts.append(f"{scored} of {fmt.plural(n_scored, 'scored question')}{kinds_text}, graded as misses")
    if un.n - scored:
        parts.append(f"{fmt.plural(un.n - scored, 'out-of-corpus question')} (not scored)")
    return "; ".join(parts)


def _legend(console, summary: RunSummary) -> None:
    print_legend(console, _labels(summary))


def _metric_table(console, summary: RunSummary) -> None:
    main, kc, pipes = summary.main_metrics, summary.context_k, summary.pipelines
    chunkers = list(dict.fromkeys(str(p.chunker) for p in pipes))
    one_chunker = len(chunkers) == 1 and chunkers[0] != "None"
    title = (f"Retrieval metrics: mean over {fmt.plural(summary.dataset.n_scored, 'scored question')}, 95% "
             f"interval below ({_HOW}" + (f"; chunker {chunkers[0]})" if one_chunker else ")"))
    values = []
    for p in pipes:
        res = summary.result(p.name)
        values.append([_cell(res.metrics.get(m), res.ci95.get(m), res.n) for m in main])
    print_fitted(console, title=title, keys=_pipeline_keys(summary, pipes, one_chunker=one_chunker),
                 value_columns=[Column(m) for m in main], values=values)
    _metric_legend(console, main)


#: how a run table's intervals were drawn (:func:`ragexam.analysis.exam.tables.means_and_cis`)
_HOW = "bootstrap; Wilson's for a rate of few questions or near 0 or 1; none below 5 questions"


def _metric_legend(console, columns: Sequence[str]) -> None:
    """One dim line explaining the columns: each metric's legend from the ranking-metric registry."""
    from rich.text import Text

    from ragexam.metrics.ranking import legend

    console.print(Text(legend(columns), style="dim"))


def _budget_table(console, summary: RunSummary) -> None:
    """The ranking metrics at an equal context budget, one row per pipeline with its chunks' mean size."""
    cols, pipes = summary.budget_metrics, summary.pipelines
    budgets = summary.chunking.budgets if summary.chunking is not None else []
    spent = " or ".join(f"{b[:-1]} {'characters' if b.endswith('c') else 'tokens'}" for b in budgets)
    title = (f"At an equal context budget: each ranked list read until {spent or 'the budget'} are spent (a chunk "
             f"straddling the budget counts by its share inside); mean over "
             f"{fmt.plural(summary.dataset.n_scored, 'scored question')}, 95% interval below ({_HOW})")
    sizes = [summary.chunk_sizes(p.name) for p in pipes]
    extra = [[f"{c.mean_chars:.0f}" if c is not None else ""] for c in sizes]
    values = [[_cell(summary.result(p.name).metrics.get(m), summary.result(p.name).ci95.get(m),
                     summary.result(p.name).n) for m in cols] for p in pipes]
    print_fitted(console, title=title, keys=_pipeline_keys(summary, pipes, extra=[Column("mean chars")],
                                                           extra_cells=extra),
                 value_columns=[Column(m) for m in cols], values=values)
    _metric_legend(console, cols)


def _headline_budget(summary: RunSummary) -> Optional[str]:
    """The budget column read first: hit at the first budget."""
    cols = summary.budget_metrics
    first = summary.chunking.budgets[0] if summary.chunking is not None and summary.chunking.budgets else None
    want = f"hit@{first}" if first else None
    return want if want in cols else (cols[0] if cols else None)


def _chunking_study(console, summary: RunSummary) -> None:
    """Chunker × retriever: the headline metric by chunk count beside the same metric at an equal budget."""
    from rich.text import Text

    pipes = [p for p in summary.pipelines if p.kind == "chunks" and p.chunker is not None]
    chunkers = list(dict.fromkeys(p.chunker for p in pipes))
    head, budget = summary.headline, _headline_budget(summary)
    if len(chunkers) < 2 or budget is None:
        return
    retrievers = list(dict.fromkeys(str(p.retriever) for p in pipes))
    cell = {(p.chunker, str(p.retriever)): summary.result(p.name) for p in pipes}
    values, keys = [], []
    for ch in chunkers:
        c = summary.chunk_sizes(next(p.name for p in pipes if p.chunker == ch))
        keys.append([ch, f"{c.mean_chars:.0f}" if c is not None else ""])
        row = []
        for r in retrievers:
            res = cell.get((ch, r))
            row += [_cell(res.metrics.get(m), res.ci95.get(m), res.n) if res is not None else Text("")
                    for m in (head, budget)]
        values.append(row)
    print_fitted(console, title=f"Chunking study: {head} (k chunks, sizes differ) beside {budget} (the same context "
                                f"for every chunker), per retriever; 95% interval below ({_HOW})",
                 keys=Keys([Column("chunker", "left"), Column("mean chars")], keys),
                 value_columns=[Column(f"{r} {m}") for r in retrievers for m in (head, budget)], values=values)
    console.print(Text(f"Read {budget}: by {head} a chunker with bigger chunks sees more context; at an equal budget "
                       "it does not. The paired comparisons at equal budget are below.", style="dim"))


def _index_recall(console, summary: RunSummary) -> None:
    """An approximate index's recall of the exact top-k on its sample, under the pipeline's label: what the
    index (not the embedder) lost."""
    labels = _labels(summary)
    lines = []
    for p in summary.pipelines:
        for rep in summary.result(p.name).index_recall:
            ks = sorted((k for k in rep if k.startswith("recall@")), key=lambda k: int(k.split("@")[1]))
            vals = ", ".join(f"{k} {fmt.num(rep[k])}" if rep[k] is not None else f"{k} n/a" for k in ks)
            lines.append(f"  {labels.get(p.name, p.name)}  {rep.get('index')} index: {vals} of the exact "
                         f"search's top k, on {fmt.plural(rep.get('sample'), 'sampled question')}")
    if lines:
        from rich.text import Text

        console.print(Text("Approximate indexes: recall of the exact top k (below 1: the index, not the "
                           "embedder, lost those chunks)", style="bold"))
        for line in lines:
            console.print(line, markup=False)


def _sweep_table(console, summary: RunSummary) -> None:
    rows: List[Optional[PipelineInfo]] = []
    ks, values, sections = [], [], []
    for p in summary.pipelines:
        res = summary.result(p.name)
        fb = res.fbeta
        for j, (k, v) in enumerate(res.sweep.items()):
            rows.append(p if j == 0 else None)
            ks.append([str(k)])
            values.append([fmt.num(v.p), fmt.num(v.r), fmt.num(v.f1),
                           fmt.num((fb.get("0.5") or {}).get(k)), fmt.num((fb.get("2") or {}).get(k))])
        for b in summary.chunking.budgets if summary.chunking is not None else []:
            rows.append(None)
            ks.append([b])
            values.append([fmt.num(res.metrics.get(f"{m}@{b}")) for m in ("p", "r", "f1", "f0.5", "f2")])
        sections.append(len(values) - 1)
    keys = _pipeline_keys(summary, rows, extra=[Column("K")], extra_cells=ks)
    print_fitted(console, title="P@K / R@K / F1@K sweep and F-beta@K (mean over scored questions)", keys=keys,
                 value_columns=[Column(c) for c in ("P@K", "R@K", "F1@K", "F0.5@K", "F2@K")], values=values,
                 sections=sections)
    console.print("[dim]As K grows, recall can only stay or rise; precision usually falls (it divides by K). "
                  "F0.5 weights precision, F2 recall: pick the K and beta that match how many chunks your "
                  "generator reads." + (" A K such as 2000c is a context budget: the list read until that many "
                                        "characters (c) or tokens (t) are spent." if summary.budget_metrics else "")
                  + "[/]")


def _type_table(console, summary: RunSummary) -> None:
    main, kc, head = summary.main_metrics, summary.context_k, summary.headline
    cols = [m for m in dict.fromkeys(["hit@1", head, "mrr", next((m for m in main if m.startswith("ndcg@")), None),
                                      f"r@{kc}"]) if m in main]
    rows: List[Optional[PipelineInfo]] = []
    extra, values, sections = [], [], []
    for p in summary.pipelines:
        res = summary.result(p.name)
        for j, (t, vals) in enumerate(res.by_type.items()):
            cis = res.by_type_ci95.get(t) or {}
            rows.append(p if j == 0 else None)
            extra.append([str(t), str(res.by_type_n.get(t, ""))])
            values.append([_cell(vals.get(m), cis.get(m), res.by_type_n.get(t)) for m in cols])
        sections.append(len(values) - 1)
    keys = _pipeline_keys(summary, rows, extra=[Column("type", "left"), Column("n")], extra_cells=extra)
    print_fitted(console, title=f"By question type (95% interval below: {_HOW})", keys=keys,
                 value_columns=[Column(m) for m in cols], values=values, sections=sections)


def _comparisons(console, summary: RunSummary) -> None:
    comps = summary.comparisons
    if not comps:
        console.print("[dim]One pipeline: nothing to compare (give two or more retrievers or chunkers; the first is "
                      "the baseline).[/]")
        return
    _pair_tables(console, summary, comps, summary.headline, "  vs  baseline ")
    _comparisons_note(console, comps)


def _budget_comparisons(console, summary: RunSummary) -> None:
    """Paired comparisons at an equal context budget (``budget_comparisons``)."""
    from rich.text import Text

    comps = summary.budget_comparisons
    if not comps:
        return
    console.print(Text("At an equal context budget: paired comparisons (a chunker against the first chunker with "
                       "the same retriever; a pipeline with its own chunks against the baseline)", style="bold"))
    _pair_tables(console, summary, comps, _headline_budget(summary) or comps[0].metric, "  vs  ")
    _comparisons_note(console, comps)


def _pair_tables(console, summary: RunSummary, comps: Sequence[Comparison], head: str, against: str) -> None:
    """One table per pair of pipelines (metric rows: difference, paired interval, p, Holm, MDD, reading) and the
    verdict on ``head``."""
    from rich.text import Text

    labels = _labels(summary)
    by_pair: Dict[Any, List[Comparison]] = {}
    for c in comps:
        by_pair.setdefault((c.baseline, c.pipeline), []).append(c)
    for (base, name), rows in by_pair.items():
        n = rows[0].n
        title = _named(labels.get(name, "?"), name)
        title.stylize("bold")
        title.append(against, style="bold")
        title.append_text(_named(labels.get(base, "?"), base))
        title.append(f"  (paired over the same {fmt.plural(n, 'question')}; one question = "
                     f"{fmt.num(rows[0].resolution)})")
        console.print(title)
        values = []
        for c in rows:
            style = "dim" if c.within_noise else ""
            values.append([Text(x, style=style) for x in (
                fmt.signed(c.diff), fmt.signed_ci(c.ci95), fmt.p_value(c.p_value), fmt.p_value(c.p_holm),
                fmt.num(c.mdd), c.reading)])
        keys = Keys([Column("metric", "left")], [[Text(c.metric, style="dim" if c.within_noise else "")]
                                                 for c in rows])
        print_fitted(console, title=None, keys=keys, values=values, value_columns=[
            Column("diff"), Column("95% CI of diff"), Column("p"), Column("p (Holm)"), Column("MDD"),
            Column("reading", "left")])
        key = next((c for c in rows if c.metric == head), rows[0])
        _bullets(console, [(f"verdict on {key.metric}:", key.verdict)], indent=0)
        console.print()


def _comparisons_note(console, comps: Sequence[Comparison]) -> None:
    n = comps[0].n
    mdds = [c.mdd for c in comps if fmt.is_number(c.mdd)]
    none = " MDD '-': the per-question differences did not vary (identical values), so there is none to state." \
        if len(mdds) < len(comps) else ""
    if mdds:
        console.print(f"[dim]p: paired randomization test (seeded, never 0); p (Holm): adjusted over the metrics of "
                      f"each pair; MDD: the smallest difference this set could reliably detect (alpha 0.05, power "
                      f"0.8). With {fmt.plural(n, 'question')}, differences below about {fmt.num(min(mdds), 2)}–"
                      f"{fmt.num(max(mdds), 2)} are not detectable: rows in grey are within the noise — treat them "
                      f"as ties and read the missed questions instead.{none}[/]")
    elif none:
        console.print(f"[dim]p: paired randomization test (seeded, never 0); p (Holm): adjusted over the metrics of "
                      f"each pair.{none}[/]")


def _rerank_rows(summary: RunSummary, name: str, b: RerankStage) -> List[Any]:
    """The bullet rows of one rerank stage: lift, per type, fixed/broken, ceiling, queries, cost."""
    head = summary.headline
    comps = {c.metric: c for c in b.comparisons}
    after = summary.result(name).metrics
    lifts = [f"{m} {fmt.num(b.first_stage_metrics.get(m))} → {fmt.num(after.get(m))} ({fmt.signed(comps[m].diff)}, "
             f"{fmt.signed_ci(comps[m].ci95)}, {comps[m].reading})"
             for m in dict.fromkeys(["hit@1", head, "mrr"]) if m in comps]
    rows = [("lift", " · ".join(lifts))]
    if b.by_type:
        rows.append(("by type", " · ".join(f"{t} (n {v.n}): {head} {fmt.signed(v.lift.get(head))}"
                                           for t, v in b.by_type.items())))
    ceil, k = b.ceiling, b.ceiling.k

    def ids(xs):
        shown = ", ".join(x.query_id for x in xs[:8])
        return shown + (f" and {len(xs) - 8} more" if len(xs) > 8 else "")

    moved = ([f"{len(b.fixed)} fixed (a relevant unit moved into the top {k}: {ids(b.fixed)})"] if b.fixed else []) \
        + ([f"{len(b.broken)} broken ({ids(b.broken)})"] if b.broken else [])
    rows.append(("fixed / broken", ", ".join(moved) or f"none: no question moved into or out of the top {k}"))
    where = [f"{ceil.misses_outside} lay outside the candidates (no reranker can fix them)"] \
        if ceil.misses_outside else []
    where += [f"{ceil.misses_inside} inside"] if ceil.misses_inside else []
    rows.append(("recall ceiling", f"{ceil.n_within} of {fmt.plural(summary.dataset.n_scored, 'scored question')} "
                                   f"({fmt.percent(ceil.recall_at_top)}) have a relevant unit in the first "
                                   f"stage's top {ceil.top}" + (f"; of the {fmt.plural(ceil.misses, 'miss')} at "
                                                                f"k={k}, {', '.join(where)}" if ceil.misses else "")))
    st = b.status
    status = " · ".join(part for n, part in (
        (st.reranked, f"{st.reranked} reranked"),
        (st.partial, f"{st.partial} partly (unjudged candidates keep their place)"),
        (st.failed, f"{st.failed} failed (first-stage order kept)")) if n) or "none reranked"
    if st.by_kind:
        status += " — " + ", ".join(f"{kk} {n}" for kk, n in st.by_kind.items())
    if st.unjudged_candidates:
        status += f" · {st.unjudged_candidates} candidates unjudged"
    rows.append(("queries", status))
    usage, cost_bits = b.usage, []
    if b.latency is not None:
        cost_bits.append(f"latency per query median {fmt.num(b.latency.median)} s, p95 {fmt.num(b.latency.p95)} s "
                         f"(as measured when called)")
    if "calls" in usage:
        cost_bits.append(f"{usage.get('calls')} calls now, {usage.get('cached', 0)} cached")
    if usage.get("prompt_tokens") or usage.get("completion_tokens"):
        cost_bits.append(f"{usage.get('prompt_tokens', 0)} + {usage.get('completion_tokens', 0)} tokens")
    if "cost_usd" in usage:
        cost_bits.append(f"cost {fmt.cost(usage.get('cost_usd'))}")
    if cost_bits:
        rows.append(("cost", " · ".join(cost_bits)))
    return rows


def _rerank(console, summary: RunSummary) -> None:
    """What each rerank stage adds over its own first stage (``summary.rerank``, docs/run-format.md)."""
    from rich.text import Text

    if not summary.rerank:
        return
    labels = _labels(summary)
    console.print(Text("Rerank stage: each reranker against its own first stage (same questions, paired)",
                       style="bold"))
    for name, b in summary.rerank.items():
        title = Text("  ")
        title.append_text(_named(labels.get(name, "?"), name))
        title.stylize("bold")
        title.append(f"  first stage {b.first_stage}, top {b.top} reranked", style="dim")
        console.print(title, soft_wrap=True)
        _bullets(console, _rerank_rows(summary, name, b), indent=4)


def not_found_in(e: MissedQuestion, depth: Optional[int], kind: str) -> str:
    """Where a missed question's evidence was looked for: ``not found in the top 100``, or, when the pipeline
    returned fewer than the depth (a results file of 10 contexts), ``not found in the 10 texts returned``."""
    n = e.n_returned
    if n is None or (depth is not None and n >= depth):
        return f"not found in the top {depth}"
    if n == 0:
        return "nothing was returned"
    return f"not found in the {fmt.plural(n, 'text' if kind == 'texts' else 'chunk')} returned"


def _missed_entry(console, e: MissedQuestion, relevance: Optional[str], depth: Optional[int], width: int,
                  kind: str = "chunks") -> None:
    from rich.text import Text

    head = f"  {e.query_id}" + (f" ({e.type})" if e.type else "") + " "
    line = Text(head, style="bold")
    line.append(_shorten(e.question, width - len(head)))
    console.print(line)
    found = f"found at rank {e.first_rank}" if e.first_rank is not None else not_found_in(e, depth, kind)
    if relevance == "doc" and e.first_rank is not None:  # k counts documents; name the chunk by its own rank
        fc = e.first_correct
        found = f"found at document rank {e.first_rank}" + (f" (chunk {fc.chunk_id} at rank {fc.rank})"
                                                             if fc is not None else "")
    if e.unretrieved:
        found = "unretrieved: " + _shorten(e.unretrieved, 60)
    if relevance == "evidence" and e.evidence:
        what = "evidence: " + " / ".join(f"“{x}”" for x in e.evidence)
    else:
        what = "relevant: " + ", ".join(e.relevant_doc_ids)
    tail = f" → {found}"
    line = Text("      " + _shorten(what, width - 6 - len(tail)))
    line.append(tail, style="bold")
    console.print(line)
    sp = e.evidence_split
    if sp is not None:
        line = Text("      evidence_split: ", style="bold yellow")
        line.append(_shorten(f"#{sp.rank} {sp.chunk_id} holds the {sp.part} ({sp.chars} of {sp.length} characters) "
                             f"of “{_shorten(sp.evidence, 40)}”; no chunk of the top {sp.k} holds it whole: the "
                             "chunker cut it", width - 22), style="yellow")
        console.print(line)
    for t in e.top:
        console.print(Text("      " + _shorten(f"#{t.rank} {t.chunk_id}: {t.text}", width - 6), style="dim"))


def _missed(console, summary: RunSummary, max_missed: int, saved: Saved) -> None:
    from rich.text import Text

    depth, relevance = summary.config.depth, summary.config.relevance
    width = max(40, console.width - 1)
    labels = _labels(summary)
    for p in summary.pipelines:
        entries = summary.missed.get(p.name) or []
        k = entries[0].k if entries else summary.miss_k
        title = Text("Missed by ", style="bold")
        title.append_text(_named(labels.get(p.name, "?"), p.name))
        title.stylize("bold")
        title.append(": ", style="bold")
        title.append(f"{len(entries)} of {fmt.plural(summary.dataset.n_scored, 'scored question')} "
                     f"{'has' if len(entries) == 1 else 'have'} no relevant "
                     f"{'evidence' if relevance == 'evidence' else 'document'} in the top {k}")
        n_split = summary.result(p.name).n_evidence_split
        if n_split:
            title.append(f"; {n_split} evidence_split (the chunking cut the evidence: a chunk of the top {k} holds "
                         "part of it — a chunking miss, not a retrieval miss)", style="yellow")
        console.print(title)
        for e in entries[:max_missed]:
            _missed_entry(console, e, relevance, depth, width, p.kind)
        if len(entries) > max_missed:
            console.print(Text(f"  … and {len(entries) - max_missed} more ({where_all(saved, 'missed')})",
                               style="dim"))


def _signatures(console, summary: RunSummary) -> None:
    from rich.text import Text

    console.print(Text("Signatures", style="bold"))
    labels = _labels(summary)
    for p in summary.pipelines:
        line = Text(f"  {labels.get(p.name, '?')} {p.name}: ", style="bold")
        line.append(p.signature, style="dim")
        console.print(line, soft_wrap=True)


def render_run(summary: Union[RunSummary, JsonObject], console=None, *, max_missed: int = MAX_MISSED,
               saved: Saved = Saved()) -> None:
    """Print every table of a run summary (a :class:`~ragexam.storage.summary.RunSummary` or its JSON object;
    see the module docstring) to ``console``; ``saved`` says where its files are (:class:`Saved`: by default none
    were written)."""
    summary = RunSummary.from_dict(summary)
    console = console or _console()
    _dataset_card(console, summary, saved)
    console.print()
    _legend(console, summary)
    console.print()
    _metric_table(console, summary)
    if summary.budget_metrics:
        console.print()
        _budget_table(console, summary)
        _chunking_study(console, summary)
    _unretrieved(console, summary)
    _index_recall(console, summary)
    console.print()
    _sweep_table(console, summary)
    console.print()
    _type_table(console, summary)
    console.print()
    _comparisons(console, summary)
    console.print()
    if summary.budget_comparisons:
        _budget_comparisons(console, summary)
        console.print()
    if summary.rerank:
        _rerank(console, summary)
        console.print()
    _missed(console, summary, max_missed, saved)
    console.print()
    _signatures(console, summary)


class RunOutcomeView(Protocol):
    """What :func:`render_outcome` reads of a :class:`ragexam.api.RunOutcome` (the api sits above this layer)."""

    @property
    def result(self) -> "RunResult": ...

    @property
    def out(self) -> Optional["Path"]: ...

    def notes(self) -> List[str]: ...


def render_outcome(outcome: "RunOutcomeView", console=None, *, demo: bool = False) -> None:
    """What ``ragexam run``/``demo`` prints: the run's tables, where to look next (demo) or the folder written,
    and one line per thing written (:class:`ragexam.api.RunOutcome`)."""
    console = console or _console()
    render_run(outcome.result.summary, console, saved=Saved(str(outcome.out) if outcome.out is not None else None))
    console.print()
    if demo:
        render_where_next(console, out=str(outcome.out) if outcome.out is not None else None, demo=True)
    elif outcome.out is not None:
        console.print(f"Wrote summary.json, per_question.csv, chunks.jsonl and runs/ to {outcome.out} (format: "
                      "docs/run-format.md).", highlight=False, markup=False, soft_wrap=True)
    for line in outcome.notes():
        console.print(line, highlight=False, markup=False, soft_wrap=True)


def render_demo_intro(console) -> None:
    """What ``ragexam demo`` is about to grade, printed before it starts."""
    console.print(
        "ragexam demo: 71 employee questions about a fictional company's IT helpdesk (18 Korean documents; "
        "34 paraphrased 'meaning', 31 'lexical' with codes and names, 6 out-of-corpus), graded for three "
        "retrievers: bm25 (kiwi morphemes), dense (multilingual-e5-small, offline) and hybrid (reciprocal-rank "
        "fusion of both), and a rerank stage: bm25's top 20 reordered by e5 (bm25>rerank:dense). The questions "
        "were not tuned to any retriever. The first run fills the token and embedding cache; later runs read "
        "it.\n", highlight=False, markup=False, soft_wrap=True)


def render_where_next(console, *, out: Optional[str] = None, demo: bool = False) -> None:
    """The "where to look next" list printed after ``ragexam demo`` (and ``run`` without ``--out``)."""
    from rich.text import Text

    console.print(Text("Where to look next", style="bold"))
    lines = [
        "Read the missed questions above: a question missed at k = 5 is one whose answer the generator never "
        "sees. Paraphrased ('meaning') questions are where keyword search fails; codes and names ('lexical') "
        "where embeddings can slip.",
        "Differences marked 'within noise' are ties on this set: do not pick a pipeline on them.",
    ]
    if out:
        lines.append(f"Files in {out}: summary.json (everything above), per_question.csv (every question × "
                     "pipeline, with ranks and top chunk ids), runs/*.trec (ranked chunks) and runs/*.units.* "
                     "(`ragexam evaluate --qrels X.units.qrels --run X.units.trec` reproduces the metrics).")
    else:
        cmd = "ragexam demo --out demo-run" if demo else "add --out DIR"
        lines.append(f"Save everything with `{cmd}`: summary.json, per_question.csv and TREC runs "
                     "(docs/run-format.md); --json prints the summary instead of tables.")
    lines += [
        "Your own data: `ragexam run --corpus docs.jsonl --qa qa.jsonl -r bm25 -r dense -r hybrid:bm25+dense` "
        "(--chunker, -k, --relevance doc|evidence, --config run.toml).",
        "Check a question set first: `ragexam validate --corpus docs.jsonl --qa qa.jsonl`; evidence cut by "
        "chunk boundaries: `ragexam evidence-coverage --corpus ... --qa ... --chunker paragraphs:400`.",
    ]
    _bullets(console, [("•", line) for line in lines])
