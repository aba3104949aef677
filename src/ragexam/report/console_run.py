"""Console rendering of a ``ragexam run`` summary (rich tables; works on a loaded summary.json too).

:func:`render_run` prints, in order:

1. the **dataset card**: corpus and question-set sizes, question types, how many questions are
   scored and how many are out-of-corpus (not scored), chunks per chunker, and the evidence
   strings no chunk can hold (with the reason, e.g. cut by a chunk boundary); then the run's
   warnings (e.g. questions a results file lacks);
2. the **pipeline legend** (``P1  bm25 | paragraphs:400``, ...; P1 is the baseline) and the
   **metric table**: one row per pipeline, the main metrics' means over the scored questions with
   their 95% bootstrap interval underneath; below it, per pipeline that failed on some questions,
   how many were *unretrieved* (graded as misses) and why, and the latency of services;
3. the **sweep**: the lecture's mean P@K / R@K / F1@K for each K, with F-beta@K for beta 0.5
   (precision weighted) and 2 (recall weighted);
4. **by question type**: the headline metrics per type, with n per type;
5. **comparisons**: every pipeline against the baseline (the first), per metric: difference,
   its paired-bootstrap 95% interval, the paired randomization p-value, the Holm-adjusted p
   over the metrics of the pair, the minimum detectable difference (MDD) and a short reading;
   then the full plain-words verdict on the headline metric.  Differences smaller than the
   MDD are flagged as within the noise;
6. the **rerank stage** of each ``RETRIEVER>RERANKER`` pipeline: its lift over its own first stage on the
   headline metrics (difference, paired interval, Holm-adjusted reading), per question type, the
   questions it fixed and broke, the first stage's **recall ceiling** (how many scored questions have a
   relevant unit among the candidates, and how many misses lay outside them: no reranker can fix those),
   the queries it could not rerank (kept in first-stage order), its latency per query and its cost;
7. the **missed questions** of each pipeline (no relevant unit in the top ``k``): question,
   evidence, where it was found (or "not found"), and the top-3 retrieved chunks, shortened;
   at most ``max_missed`` per pipeline;
8. every pipeline's **signature**.

Only the summary dict is needed (docs/run-format.md), so a saved run renders the same.

Every table fits the console (:mod:`ragexam.report.tables`): a row names its pipeline in full when
the table fits, else by its label from the legend; metric columns that do not fit beside the names
go to a second block below, never cut.  Numbers are written by :mod:`ragexam.fmt`.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence

from ragexam import fmt
from ragexam.report.tables import Column, Keys, pipeline_keys, pipeline_labels, print_fitted, print_legend

__all__ = ["render_run", "run_console", "render_where_next", "render_outcome", "render_demo_intro"]

#: missed questions printed per pipeline
MAX_MISSED = 10


def run_console(stderr: bool = False):
    """A rich Console for run output: the terminal's width, or 132 columns when not a terminal."""
    from rich.console import Console

    probe = Console(stderr=stderr)
    width = None if probe.is_terminal else 132
    return Console(stderr=stderr, width=width, soft_wrap=False, highlight=False)


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


def _cell(mean: Optional[float], ci: Optional[Sequence[float]]):
    """A mean with its 95% interval on the line below (dim): ``0.615`` / ``.49–.74``."""
    from rich.text import Text

    t = Text(fmt.num(mean))
    interval = fmt.ci(ci)
    if interval:
        t.append("\n" + interval, style="dim")
    return t


def _labels(summary: Mapping[str, Any]) -> Dict[str, str]:
    return pipeline_labels([str(p["name"]) for p in summary.get("pipelines") or []])


def _named(label: str, name: str):
    """``P1 name`` with the label in bold (a table cell or a title)."""
    from rich.text import Text

    t = Text(label, style="bold")
    t.append(" " + name)
    return t


def _pipeline_keys(summary: Mapping[str, Any], rows: Sequence[Optional[Mapping[str, Any]]],
                   extra: Sequence[Column] = (), extra_cells: Sequence[Sequence[Any]] = (),
                   one_chunker: bool = False) -> List[Keys]:
    """Key variants for rows of pipelines (``None``: a continuation row of the pipeline above): the
    label and the name (the retriever only when every pipeline has the same chunker), or the label."""
    labels = _labels(summary)
    named = [None if p is None else (labels.get(str(p["name"]), "?"),
                                     str(p.get("retriever") or p["name"]) if one_chunker else str(p["name"]))
             for p in rows]
    return pipeline_keys(named, extra, extra_cells)


def _headline(summary: Mapping[str, Any]) -> str:
    k = (summary.get("config") or {}).get("miss_k", 5)
    main = summary.get("main_metrics") or []
    want = f"hit@{k}"
    return want if want in main else (main[0] if main else want)


def _dataset_card(console, summary: Mapping[str, Any]) -> None:
    from rich.text import Text

    ds = summary.get("dataset") or {}
    cfg = summary.get("config") or {}
    has_corpus = ds.get("corpus") is not None
    label = str(ds.get("corpus")) if has_corpus else str(ds.get("qa"))
    if has_corpus and str(ds.get("qa")) != label:
        label += f" / {ds.get('qa')}"
    types = ", ".join(f"{t} {n}" for t, n in (ds.get("types") or {}).items())
    chunks = ", ".join(f"{c} → {fmt.plural(n, 'chunk')}" for c, n in (ds.get("n_chunks") or {}).items())
    docs = (f"{fmt.plural(ds.get('n_documents'), 'document')} · " if ds.get("n_documents") is not None else
            "no corpus (every pipeline returned its own texts) · ")
    rows = [("dataset", f"{label}: {docs}"
                        f"{fmt.plural(ds.get('n_questions'), 'question')} ({types}) · {ds.get('n_scored')} scored · "
                        f"{ds.get('n_out_of_corpus')} out-of-corpus (not scored: nothing to retrieve)"
                        + (f" · {chunks}" if chunks else ""))]
    relevance = cfg.get("relevance")
    texts = any(p.get("kind") == "texts" for p in summary.get("pipelines") or [])
    unit = "chunk (or returned text)" if texts else "chunk"
    rel_text = (f"evidence: a {unit} counts when it contains an evidence string; k counts chunks"
                if relevance == "evidence" else
                f"doc: a {unit} counts for its document; k counts distinct documents")
    if cfg.get("overlap") is not None:
        rel_text += f" (a chunk holding ≥ {cfg['overlap']:g} of a string counts)"
    rows.append(("relevance", f"{rel_text} · k = {', '.join(map(str, cfg.get('k') or []))} · depth "
                              f"{cfg.get('depth')} · seed {cfg.get('seed')} · run {summary.get('run_id')}"))
    if relevance == "evidence" and ds.get("n_unmatched_evidence"):
        um = ds.get("n_unmatched_evidence") or {}
        parts = []
        for chunker, n in um.items():
            reasons: Dict[str, int] = {}
            for u in summary.get("unmatched_evidence") or []:
                if u.get("chunker") == chunker:
                    reasons[u.get("reason", "?")] = reasons.get(u.get("reason", "?"), 0) + 1
            why = " (" + ", ".join(f"{r}: {c}" for r, c in reasons.items()) + ")" if reasons else ""
            parts.append(f"{n} under {chunker}{why}")
        rows.append(("evidence", f"{fmt.plural(ds.get('n_evidence'), 'evidence string')}; held by no chunk (never "
                                 "creditable): "
                                 + "; ".join(parts)))
    _bullets(console, rows, indent=0)
    listed = summary.get("unmatched_evidence") or []
    for u in listed[:MAX_MISSED]:
        cut = (u.get("cuts") or [{}])[0]
        where = (f" at {cut.get('doc_id')} offset {cut.get('offset')} (chunks {', '.join(cut.get('chunks') or [])})"
                 if cut else "")
        console.print(Text(_shorten(f"  {u.get('query_id')} {u.get('unit_id', '')} [{u.get('chunker')}] "
                                    f"{u.get('reason')}{where}: “{u.get('evidence', '')}”", console.width - 1),
                           style="yellow"))
    if len(listed) > MAX_MISSED:
        console.print(Text(f"  … and {len(listed) - MAX_MISSED} more (see summary.json: unmatched_evidence)",
                           style="yellow"))
    for w in summary.get("warnings") or []:
        console.print(Text("warning: " + str(w), style="yellow"), soft_wrap=True)


def _unretrieved(console, summary: Mapping[str, Any]) -> None:
    """Per pipeline: the questions it failed on (graded as misses), by kind; and a service's latency."""
    from rich.text import Text

    labels = _labels(summary)
    ds = summary.get("dataset") or {}
    for p in summary.get("pipelines") or []:
        res = (summary.get("results") or {}).get(p["name"]) or {}
        un = res.get("unretrieved") or {}
        lat = res.get("latency")
        if un.get("n"):
            kinds = ", ".join(f"{k} {n}" for k, n in (un.get("by_kind") or {}).items())
            line = Text(f"{labels.get(str(p['name']), '?')} unretrieved: ", style="bold yellow")
            line.append(f"{un.get('n_scored', un['n'])} of {fmt.plural(ds.get('n_scored'), 'scored question')} "
                        f"({kinds}), graded as misses", style="yellow")
            first = (un.get("questions") or [{}])[0]
            if first:
                line.append(f"; e.g. {first.get('query_id')}: {_shorten(first.get('reason', ''), 80)}", style="dim")
            console.print(line, soft_wrap=True)
        if lat:
            console.print(Text(f"{labels.get(str(p['name']), '?')} latency per question: median "
                               f"{fmt.num(lat.get('median'))} s · p95 {fmt.num(lat.get('p95'))} s · max "
                               f"{fmt.num(lat.get('max'))} s (n {lat.get('n')})", style="dim"))


def _legend(console, summary: Mapping[str, Any]) -> None:
    print_legend(console, _labels(summary))


def _metric_table(console, summary: Mapping[str, Any]) -> None:
    main = summary.get("main_metrics") or []
    ds = summary.get("dataset") or {}
    kc = summary.get("context_k")
    pipes = summary.get("pipelines") or []
    chunkers = list(dict.fromkeys(str(p.get("chunker")) for p in pipes))
    one_chunker = len(chunkers) == 1 and chunkers[0] != "None"
    title = (f"Retrieval metrics: mean over {fmt.plural(ds.get('n_scored'), 'scored question')}, 95% bootstrap "
             "interval below" + (f" (chunker {chunkers[0]})" if one_chunker else ""))
    values = []
    for p in pipes:
        res = (summary.get("results") or {}).get(p["name"]) or {}
        values.append([_cell(res.get("metrics", {}).get(m), res.get("ci95", {}).get(m)) for m in main])
    print_fitted(console, title=title, keys=_pipeline_keys(summary, pipes, one_chunker=one_chunker),
                 value_columns=[Column(m) for m in main], values=values)
    ks = [m for m in main if m.startswith("hit@")]
    ndcg = next((m for m in main if m.startswith("ndcg@")), "ndcg")
    console.print(
        f"[dim]{', '.join(ks)}: share of questions with a relevant chunk in the top k · mrr: mean of 1/rank "
        f"of the first relevant chunk (0 if none) · {ndcg}: rank-discounted credit of every relevant unit · "
        f"p/r/f1@{kc}: precision, recall and F1 of the top {kc} · rprec: precision at R (R = relevant units) "
        f"· map: mean average precision[/]")


def _index_recall(console, summary: Mapping[str, Any]) -> None:
    """An approximate index's recall of the exact top-k on its sample, under the pipeline's label: what the
    index (not the embedder) lost."""
    labels = _labels(summary)
    lines = []
    for p in summary.get("pipelines") or []:
        for rep in ((summary.get("results") or {}).get(p["name"]) or {}).get("index_recall") or []:
            ks = sorted((k for k in rep if k.startswith("recall@")), key=lambda k: int(k.split("@")[1]))
            vals = ", ".join(f"{k} {fmt.num(rep[k])}" if rep[k] is not None else f"{k} n/a" for k in ks)
            lines.append(f"  {labels.get(p['name'], p['name'])}  {rep.get('index')} index: {vals} of the exact "
                         f"search's top k, on {fmt.plural(rep.get('sample'), 'sampled question')}")
    if lines:
        from rich.text import Text

        console.print(Text("Approximate indexes: recall of the exact top k (below 1: the index, not the "
                           "embedder, lost those chunks)", style="bold"))
        for line in lines:
            console.print(line, markup=False)


def _sweep_table(console, summary: Mapping[str, Any]) -> None:
    pipes = summary.get("pipelines") or []
    rows: List[Optional[Mapping[str, Any]]] = []
    ks, values, sections = [], [], []
    for p in pipes:
        res = (summary.get("results") or {}).get(p["name"]) or {}
        sw, fb = res.get("sweep") or {}, res.get("fbeta") or {}
        for j, (k, v) in enumerate(sw.items()):
            rows.append(p if j == 0 else None)
            ks.append([str(k)])
            values.append([fmt.num(v.get("p")), fmt.num(v.get("r")), fmt.num(v.get("f1")),
                           fmt.num((fb.get("0.5") or {}).get(k)), fmt.num((fb.get("2") or {}).get(k))])
        sections.append(len(values) - 1)
    keys = _pipeline_keys(summary, rows, extra=[Column("K")], extra_cells=ks)
    print_fitted(console, title="P@K / R@K / F1@K sweep and F-beta@K (mean over scored questions)", keys=keys,
                 value_columns=[Column(c) for c in ("P@K", "R@K", "F1@K", "F0.5@K", "F2@K")], values=values,
                 sections=sections)
    console.print("[dim]As K grows, recall can only stay or rise; precision usually falls (it divides by K). "
                  "F0.5 weights precision, F2 recall: pick the K and beta that match how many chunks your "
                  "generator reads.[/]")


def _type_table(console, summary: Mapping[str, Any]) -> None:
    main = summary.get("main_metrics") or []
    kc = summary.get("context_k")
    head = _headline(summary)
    cols = [m for m in dict.fromkeys(["hit@1", head, "mrr", next((m for m in main if m.startswith("ndcg@")), None),
                                      f"r@{kc}"]) if m in main]
    rows: List[Optional[Mapping[str, Any]]] = []
    extra, values, sections = [], [], []
    for p in summary.get("pipelines") or []:
        res = (summary.get("results") or {}).get(p["name"]) or {}
        for j, (t, vals) in enumerate((res.get("by_type") or {}).items()):
            cis = (res.get("by_type_ci95") or {}).get(t) or {}
            rows.append(p if j == 0 else None)
            extra.append([str(t), str((res.get("by_type_n") or {}).get(t, ""))])
            values.append([_cell(vals.get(m), cis.get(m)) for m in cols])
        sections.append(len(values) - 1)
    keys = _pipeline_keys(summary, rows, extra=[Column("type", "left"), Column("n")], extra_cells=extra)
    print_fitted(console, title="By question type (95% bootstrap interval below)", keys=keys,
                 value_columns=[Column(m) for m in cols], values=values, sections=sections)


def _comparisons(console, summary: Mapping[str, Any]) -> None:
    from rich.text import Text

    comps = summary.get("comparisons") or []
    if not comps:
        console.print("[dim]One pipeline: nothing to compare (give two or more retrievers or chunkers; the first is "
                      "the baseline).[/]")
        return
    labels = _labels(summary)
    head = _headline(summary)
    by_pair: Dict[str, List[Mapping[str, Any]]] = {}
    for c in comps:
        by_pair.setdefault(c["pipeline"], []).append(c)
    for name, rows in by_pair.items():
        n = rows[0].get("n")
        base = rows[0]["baseline"]
        title = _named(labels.get(name, "?"), name)
        title.stylize("bold")
        title.append("  vs  baseline ", style="bold")
        title.append_text(_named(labels.get(base, "?"), base))
        title.append(f"  (paired over the same {fmt.plural(n, 'question')}; one question = "
                     f"{fmt.num(rows[0].get('resolution'))})")
        console.print(title)
        values = []
        for c in rows:
            style = "dim" if c.get("within_noise") else ""
            values.append([Text(x, style=style) for x in (
                fmt.signed(c.get("diff")), fmt.signed_ci(c.get("ci95")), fmt.p_value(c.get("p_value")),
                fmt.p_value(c.get("p_holm")), fmt.num(c.get("mdd")), str(c.get("reading", "")))])
        keys = Keys([Column("metric", "left")], [[Text(str(c["metric"]), style="dim" if c.get("within_noise")
                                                       else "")] for c in rows])
        print_fitted(console, title=None, keys=keys, values=values, value_columns=[
            Column("diff"), Column("95% CI of diff"), Column("p"), Column("p (Holm)"), Column("MDD"),
            Column("reading", "left")])
        key = next((c for c in rows if c["metric"] == head), rows[0])
        _bullets(console, [(f"verdict on {key['metric']}:", str(key.get("verdict", "")))], indent=0)
        console.print()
    n = comps[0].get("n")
    mdds = [c.get("mdd") for c in comps if fmt.is_number(c.get("mdd"))]
    if mdds:
        console.print(f"[dim]p: paired randomization test (seeded, never 0); p (Holm): adjusted over the metrics of "
                      f"each pair; MDD: the smallest difference this set could reliably detect (alpha 0.05, power "
                      f"0.8). With {fmt.plural(n, 'question')}, differences below about {fmt.num(min(mdds), 2)}–"
                      f"{fmt.num(max(mdds), 2)} are not detectable: rows in grey are within the noise — treat them "
                      "as ties and read the missed questions instead.[/]")


def _rerank(console, summary: Mapping[str, Any]) -> None:
    """What each rerank stage adds over its own first stage (``summary["rerank"]``, docs/run-format.md)."""
    from rich.text import Text

    blocks = summary.get("rerank") or {}
    if not blocks:
        return
    labels = _labels(summary)
    head = _headline(summary)
    wanted = [m for m in dict.fromkeys(["hit@1", head, "mrr"])]
    n_scored = (summary.get("dataset") or {}).get("n_scored")
    console.print(Text("Rerank stage: each reranker against its own first stage (same questions, paired)",
                       style="bold"))
    for name, b in blocks.items():
        title = Text("  ")
        title.append_text(_named(labels.get(name, "?"), name))
        title.stylize("bold")
        title.append(f"  first stage {b.get('first_stage')}, top {b.get('top')} reranked", style="dim")
        console.print(title, soft_wrap=True)
        comps = {c.get("metric"): c for c in b.get("comparisons") or []}
        before = b.get("first_stage_metrics") or {}
        after = ((summary.get("results") or {}).get(name) or {}).get("metrics") or {}
        lifts = []
        for m in wanted:
            c = comps.get(m)
            if c is None:
                continue
            lifts.append(f"{m} {fmt.num(before.get(m))} → {fmt.num(after.get(m))} ({fmt.signed(c.get('diff'))}, "
                         f"{fmt.signed_ci(c.get('ci95'))}, {c.get('reading')})")
        rows = [("lift", " · ".join(lifts))]
        bt = b.get("by_type") or {}
        if bt:
            rows.append(("by type", " · ".join(f"{t} (n {v.get('n')}): {head} {fmt.signed((v.get('lift') or {}).get(head))}"
                                               for t, v in bt.items())))
        fixed, broken = b.get("fixed") or [], b.get("broken") or []
        k = (b.get("ceiling") or {}).get("k")

        def ids(xs):
            shown = ", ".join(str(x.get("query_id")) for x in xs[:8])
            return shown + (f" and {len(xs) - 8} more" if len(xs) > 8 else "")

        rows.append(("fixed / broken", f"{len(fixed)} fixed (a relevant unit moved into the top {k}"
                                       + (f": {ids(fixed)}" if fixed else "") + f"), {len(broken)} broken"
                                       + (f" ({ids(broken)})" if broken else "")))
        ceil = b.get("ceiling") or {}
        rows.append(("recall ceiling", f"{ceil.get('n_within')} of {fmt.plural(n_scored, 'scored question')} "
                                       f"({fmt.percent(ceil.get('recall_at_top'))}) have a relevant unit in the first "
                                       f"stage's top {ceil.get('top')}; of the {ceil.get('misses')} misses at k={k}, "
                                       f"{ceil.get('misses_outside')} lay outside the candidates (no reranker can fix "
                                       f"them), {ceil.get('misses_inside')} inside"))
        st = b.get("status") or {}
        status = (f"{st.get('reranked', 0)} reranked · {st.get('partial', 0)} partly (unjudged candidates keep their "
                  f"place) · {st.get('failed', 0)} failed (first-stage order kept)")
        if st.get("by_kind"):
            status += " — " + ", ".join(f"{kk} {n}" for kk, n in st["by_kind"].items())
        if st.get("unjudged_candidates"):
            status += f" · {st['unjudged_candidates']} candidates unjudged"
        rows.append(("queries", status))
        lat, usage = b.get("latency"), b.get("usage") or {}
        cost_bits = []
        if lat:
            cost_bits.append(f"latency per query median {fmt.num(lat.get('median'))} s, p95 {fmt.num(lat.get('p95'))} s "
                             f"(as measured when called)")
        if "calls" in usage:
            cost_bits.append(f"{usage.get('calls')} calls now, {usage.get('cached', 0)} cached")
        if usage.get("prompt_tokens") or usage.get("completion_tokens"):
            cost_bits.append(f"{usage.get('prompt_tokens', 0)} + {usage.get('completion_tokens', 0)} tokens")
        if "cost_usd" in usage:
            cost_bits.append(f"cost {fmt.cost(usage.get('cost_usd'))}")
        if cost_bits:
            rows.append(("cost", " · ".join(cost_bits)))
        _bullets(console, rows, indent=4)


def _missed(console, summary: Mapping[str, Any], max_missed: int) -> None:
    from rich.text import Text

    ds = summary.get("dataset") or {}
    depth = (summary.get("config") or {}).get("depth")
    relevance = (summary.get("config") or {}).get("relevance")
    width = max(40, console.width - 1)
    labels = _labels(summary)
    for p in summary.get("pipelines") or []:
        entries = (summary.get("missed") or {}).get(p["name"]) or []
        k = entries[0]["k"] if entries else (summary.get("config") or {}).get("miss_k")
        title = Text("Missed by ", style="bold")
        title.append_text(_named(labels.get(str(p["name"]), "?"), str(p["name"])))
        title.stylize("bold")
        title.append(": ", style="bold")
        title.append(f"{len(entries)} of {fmt.plural(ds.get('n_scored'), 'scored question')} "
                     f"{'has' if len(entries) == 1 else 'have'} no relevant "
                     f"{'evidence' if relevance == 'evidence' else 'document'} in the top {k}")
        console.print(title)
        for e in entries[:max_missed]:
            head = f"  {e['query_id']}" + (f" ({e['type']})" if e.get("type") else "") + " "
            line = Text(head, style="bold")
            line.append(_shorten(e.get("question", ""), width - len(head)))
            console.print(line)
            fr = e.get("first_rank")
            found = f"found at rank {fr}" if fr is not None else f"not found in the top {depth}"
            if e.get("unretrieved"):
                found = "unretrieved: " + _shorten(str(e["unretrieved"]), 60)
            if relevance == "evidence" and e.get("evidence"):
                what = "evidence: " + " / ".join(f"“{x}”" for x in e["evidence"])
            else:
                what = "relevant: " + ", ".join(e.get("relevant_doc_ids") or [])
            tail = f" → {found}"
            line = Text("      " + _shorten(what, width - 6 - len(tail)))
            line.append(tail, style="bold")
            console.print(line)
            for t in e.get("top") or []:
                console.print(Text("      " + _shorten(f"#{t['rank']} {t['chunk_id']}: {t.get('text', '')}",
                                                       width - 6), style="dim"))
        if len(entries) > max_missed:
            console.print(Text(f"  … and {len(entries) - max_missed} more (see per_question.csv, or summary.json "
                               "'missed')", style="dim"))


def _signatures(console, summary: Mapping[str, Any]) -> None:
    from rich.text import Text

    console.print(Text("Signatures", style="bold"))
    labels = _labels(summary)
    for p in summary.get("pipelines") or []:
        line = Text(f"  {labels.get(str(p['name']), '?')} {p['name']}: ", style="bold")
        line.append(str(p.get("signature", "")), style="dim")
        console.print(line, soft_wrap=True)


def render_run(summary: Mapping[str, Any], console=None, *, max_missed: int = MAX_MISSED) -> None:
    """Print every table of a run summary (see the module docstring) to ``console``."""
    console = console or run_console()
    _dataset_card(console, summary)
    console.print()
    _legend(console, summary)
    console.print()
    _metric_table(console, summary)
    _unretrieved(console, summary)
    _index_recall(console, summary)
    console.print()
    _sweep_table(console, summary)
    console.print()
    _type_table(console, summary)
    console.print()
    _comparisons(console, summary)
    console.print()
    if summary.get("rerank"):
        _rerank(console, summary)
        console.print()
    _missed(console, summary, max_missed)
    console.print()
    _signatures(console, summary)


def render_outcome(outcome: Any, console=None, *, demo: bool = False) -> None:
    """What ``ragexam run``/``demo`` prints: the run's tables, where to look next (demo) or the folder written,
    and one line per thing written (:class:`ragexam.api.RunOutcome`)."""
    console = console or run_console()
    render_run(outcome.result.summary, console)
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
