"""Console rendering of a ``ragexam run`` summary (rich tables; works on a loaded summary.json too).

:func:`render_run` prints, in order:

1. the **dataset card**: corpus and question-set sizes, question types, how many questions are
   scored and how many are out-of-corpus (not scored), chunks per chunker, and the evidence
   strings no chunk can hold (with the reason, e.g. cut by a chunk boundary);
2. the **metric table**: one row per pipeline, the main metrics' means over the scored
   questions with their 95% bootstrap interval underneath;
3. the **sweep**: the lecture's mean P@K / R@K / F1@K for each K, with F-beta@K for beta 0.5
   (precision weighted) and 2 (recall weighted);
4. **by question type**: the headline metrics per type, with n per type;
5. **comparisons**: every pipeline against the baseline (the first), per metric: difference,
   its paired-bootstrap 95% interval, the paired randomization p-value, the Holm-adjusted p
   over the metrics of the pair, the minimum detectable difference (MDD) and a short reading;
   then the full plain-words verdict on the headline metric.  Differences smaller than the
   MDD are flagged as within the noise;
6. the **missed questions** of each pipeline (no relevant unit in the top ``k``): question,
   evidence, where it was found (or "not found"), and the top-3 retrieved chunks, shortened;
   at most ``max_missed`` per pipeline;
7. every pipeline's **signature**.

Only the summary dict is needed (docs/run-format.md), so a saved run renders the same.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence

__all__ = ["render_run", "run_console", "render_where_next"]

#: missed questions printed per pipeline
MAX_MISSED = 10


def run_console(stderr: bool = False):
    """A rich Console for run output: the terminal's width, or 132 columns when not a terminal."""
    from rich.console import Console

    probe = Console(stderr=stderr)
    width = None if probe.is_terminal else 132
    return Console(stderr=stderr, width=width, soft_wrap=False, highlight=False)


def _f(x: Optional[float], digits: int = 3) -> str:
    return "–" if x is None else f"{x:.{digits}f}"


def _ci(ci: Optional[Sequence[float]]) -> str:
    """``0.49–0.74`` as ``.49–.74`` (narrow table cells)."""
    if not ci:
        return ""

    def one(x: float) -> str:
        s = f"{x:.2f}"
        return s[1:] if s.startswith("0.") else ("-" + s[2:] if s.startswith("-0.") else s)

    return f"{one(ci[0])}–{one(ci[1])}"


def _signed(x: float) -> str:
    return f"{x:+.3f}"


def _p(p: Optional[float]) -> str:
    if p is None:
        return "–"
    if p < 0.001:
        return "<0.001"
    return f"{p:.3f}" if p < 0.1 else f"{p:.2f}"


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
    from rich.text import Text

    t = Text(_f(mean))
    if ci:
        t.append("\n" + _ci(ci), style="dim")
    return t


def _pipeline_cell(p: Mapping[str, Any], with_chunker: bool = True):
    from rich.text import Text

    t = Text(str(p.get("retriever") or p.get("name")))
    if with_chunker and p.get("chunker"):
        t.append("\n| " + str(p["chunker"]), style="dim")
    return t


def _headline(summary: Mapping[str, Any]) -> str:
    k = (summary.get("config") or {}).get("miss_k", 5)
    main = summary.get("main_metrics") or []
    want = f"hit@{k}"
    return want if want in main else (main[0] if main else want)


def _dataset_card(console, summary: Mapping[str, Any]) -> None:
    from rich.text import Text

    ds = summary.get("dataset") or {}
    cfg = summary.get("config") or {}
    label = str(ds.get("corpus"))
    if str(ds.get("qa")) != label:
        label += f" / {ds.get('qa')}"
    types = ", ".join(f"{t} {n}" for t, n in (ds.get("types") or {}).items())
    chunks = ", ".join(f"{c} → {n} chunks" for c, n in (ds.get("n_chunks") or {}).items())
    rows = [("dataset", f"{label}: {ds.get('n_documents')} documents · {ds.get('n_questions')} questions ({types}) · "
                        f"{ds.get('n_scored')} scored · {ds.get('n_out_of_corpus')} out-of-corpus (not scored: "
                        f"nothing to retrieve) · {chunks}")]
    relevance = cfg.get("relevance")
    rel_text = ("evidence: a chunk counts when it contains an evidence string; k counts chunks"
                if relevance == "evidence" else
                "doc: a chunk counts for its document; k counts distinct documents")
    if cfg.get("overlap") is not None:
        rel_text += f" (a chunk holding ≥ {cfg['overlap']:g} of a string counts)"
    rows.append(("relevance", f"{rel_text} · k = {', '.join(map(str, cfg.get('k') or []))} · depth "
                              f"{cfg.get('depth')} · seed {cfg.get('seed')} · run {summary.get('run_id')}"))
    if relevance == "evidence":
        um = ds.get("n_unmatched_evidence") or {}
        parts = []
        for chunker, n in um.items():
            reasons: Dict[str, int] = {}
            for u in summary.get("unmatched_evidence") or []:
                if u.get("chunker") == chunker:
                    reasons[u.get("reason", "?")] = reasons.get(u.get("reason", "?"), 0) + 1
            why = " (" + ", ".join(f"{r}: {c}" for r, c in reasons.items()) + ")" if reasons else ""
            parts.append(f"{n} under {chunker}{why}")
        rows.append(("evidence", f"{ds.get('n_evidence')} evidence strings; held by no chunk (never creditable): "
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


def _metric_table(console, summary: Mapping[str, Any]) -> None:
    from rich import box
    from rich.table import Table

    main = summary.get("main_metrics") or []
    ds = summary.get("dataset") or {}
    kc = summary.get("context_k")
    pipes = summary.get("pipelines") or []
    chunkers = list(dict.fromkeys(str(p.get("chunker")) for p in pipes))
    one_chunker = len(chunkers) == 1 and chunkers[0] != "None"
    title = (f"Retrieval metrics: mean over {ds.get('n_scored')} scored questions, 95% bootstrap interval below"
             + (f" (chunker {chunkers[0]})" if one_chunker else ""))
    table = Table(title=title, box=box.SIMPLE_HEAD, title_justify="left", pad_edge=False, collapse_padding=True)
    longest = max((len(str(p.get("retriever") or p.get("name"))) for p in pipes), default=8)
    table.add_column("pipeline", overflow="fold", min_width=min(longest, 24))
    for m in main:
        table.add_column(m, justify="right", no_wrap=True)
    for p in pipes:
        res = (summary.get("results") or {}).get(p["name"]) or {}
        table.add_row(_pipeline_cell(p, not one_chunker),
                      *[_cell(res.get("metrics", {}).get(m), res.get("ci95", {}).get(m)) for m in main])
    console.print(table)
    ks = [m for m in main if m.startswith("hit@")]
    ndcg = next((m for m in main if m.startswith("ndcg@")), "ndcg")
    console.print(
        f"[dim]{', '.join(ks)}: share of questions with a relevant chunk in the top k · mrr: mean of 1/rank "
        f"of the first relevant chunk (0 if none) · {ndcg}: rank-discounted credit of every relevant unit · "
        f"p/r/f1@{kc}: precision, recall and F1 of the top {kc} · rprec: precision at R (R = relevant units) "
        f"· map: mean average precision[/]")


def _sweep_table(console, summary: Mapping[str, Any]) -> None:
    from rich import box
    from rich.table import Table

    table = Table(title="P@K / R@K / F1@K sweep and F-beta@K (mean over scored questions)", box=box.SIMPLE_HEAD,
                  title_justify="left")
    for name, just in (("pipeline", "left"), ("K", "right"), ("P@K", "right"), ("R@K", "right"),
                       ("F1@K", "right"), ("F0.5@K", "right"), ("F2@K", "right")):
        table.add_column(name, justify=just, no_wrap=True)
    pipes = summary.get("pipelines") or []
    for i, p in enumerate(pipes):
        res = (summary.get("results") or {}).get(p["name"]) or {}
        sw, fb = res.get("sweep") or {}, res.get("fbeta") or {}
        for j, (k, v) in enumerate(sw.items()):
            table.add_row(p["name"] if j == 0 else "", k, _f(v.get("p")), _f(v.get("r")), _f(v.get("f1")),
                          _f((fb.get("0.5") or {}).get(k)), _f((fb.get("2") or {}).get(k)))
        if i < len(pipes) - 1:
            table.add_section()
    console.print(table)
    console.print("[dim]As K grows, recall can only stay or rise; precision usually falls (it divides by K). "
                  "F0.5 weights precision, F2 recall: pick the K and beta that match how many chunks your "
                  "generator reads.[/]")


def _type_table(console, summary: Mapping[str, Any]) -> None:
    from rich import box
    from rich.table import Table

    main = summary.get("main_metrics") or []
    kc = summary.get("context_k")
    head = _headline(summary)
    cols = [m for m in dict.fromkeys(["hit@1", head, "mrr", next((m for m in main if m.startswith("ndcg@")), None),
                                      f"r@{kc}"]) if m in main]
    table = Table(title="By question type (95% bootstrap interval below)", box=box.SIMPLE_HEAD, title_justify="left")
    table.add_column("pipeline", no_wrap=True)
    table.add_column("type", no_wrap=True)
    table.add_column("n", justify="right")
    for m in cols:
        table.add_column(m, justify="right", no_wrap=True)
    pipes = summary.get("pipelines") or []
    for i, p in enumerate(pipes):
        res = (summary.get("results") or {}).get(p["name"]) or {}
        for j, (t, vals) in enumerate((res.get("by_type") or {}).items()):
            cis = (res.get("by_type_ci95") or {}).get(t) or {}
            table.add_row(p["name"] if j == 0 else "", t, str((res.get("by_type_n") or {}).get(t, "")),
                          *[_cell(vals.get(m), cis.get(m)) for m in cols])
        if i < len(pipes) - 1:
            table.add_section()
    console.print(table)


def _comparisons(console, summary: Mapping[str, Any]) -> None:
    from rich import box
    from rich.table import Table
    from rich.text import Text

    comps = summary.get("comparisons") or []
    if not comps:
        console.print("[dim]One pipeline: nothing to compare (give two or more retrievers or chunkers; the first is "
                      "the baseline).[/]")
        return
    head = _headline(summary)
    by_pair: Dict[str, List[Mapping[str, Any]]] = {}
    for c in comps:
        by_pair.setdefault(c["pipeline"], []).append(c)
    for name, rows in by_pair.items():
        n = rows[0].get("n")
        res = rows[0].get("resolution")
        title = Text(f"{name}", style="bold")
        title.append(f"  vs  baseline {rows[0]['baseline']}", style="bold")
        title.append(f"  (paired over the same {n} questions; one question = {res:.3f})")
        console.print(title)
        table = Table(box=box.SIMPLE_HEAD)
        for col, just in (("metric", "left"), ("diff", "right"), ("95% CI of diff", "right"), ("p", "right"),
                          ("p (Holm)", "right"), ("MDD", "right"), ("reading", "left")):
            table.add_column(col, justify=just, no_wrap=True)
        for c in rows:
            style = "dim" if c.get("within_noise") else None
            reading = c.get("reading", "")
            table.add_row(c["metric"], _signed(c["diff"]), f"{c['ci95'][0]:+.3f} to {c['ci95'][1]:+.3f}",
                          _p(c.get("p_value")), _p(c.get("p_holm")), _f(c.get("mdd")), reading, style=style)
        console.print(table)
        key = next((c for c in rows if c["metric"] == head), rows[0])
        _bullets(console, [(f"verdict on {key['metric']}:", str(key.get("verdict", "")))], indent=0)
        console.print()
    n = comps[0].get("n")
    mdds = [c.get("mdd") for c in comps if c.get("mdd") is not None]
    if mdds:
        console.print(f"[dim]p: paired randomization test (seeded, never 0); p (Holm): adjusted over the metrics of "
                      f"each pair; MDD: the smallest difference this set could reliably detect (alpha 0.05, power "
                      f"0.8). With {n} questions, differences below about {min(mdds):.2f}–{max(mdds):.2f} are not "
                      f"detectable: rows in grey are within the noise — treat them as ties and read the missed "
                      f"questions instead.[/]")


def _missed(console, summary: Mapping[str, Any], max_missed: int) -> None:
    from rich.text import Text

    ds = summary.get("dataset") or {}
    depth = (summary.get("config") or {}).get("depth")
    relevance = (summary.get("config") or {}).get("relevance")
    width = max(40, console.width - 1)
    for p in summary.get("pipelines") or []:
        entries = (summary.get("missed") or {}).get(p["name"]) or []
        k = entries[0]["k"] if entries else (summary.get("config") or {}).get("miss_k")
        title = Text(f"Missed by {p['name']}: ", style="bold")
        title.append(f"{len(entries)} of {ds.get('n_scored')} scored questions have no relevant "
                     f"{'evidence' if relevance == 'evidence' else 'document'} in the top {k}")
        console.print(title)
        for e in entries[:max_missed]:
            head = f"  {e['query_id']}" + (f" ({e['type']})" if e.get("type") else "") + " "
            line = Text(head, style="bold")
            line.append(_shorten(e.get("question", ""), width - len(head)))
            console.print(line)
            fr = e.get("first_rank")
            found = f"found at rank {fr}" if fr is not None else f"not found in the top {depth}"
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
    for p in summary.get("pipelines") or []:
        line = Text(f"  {p['name']}: ", style="bold")
        line.append(str(p.get("signature", "")), style="dim")
        console.print(line, soft_wrap=True)


def render_run(summary: Mapping[str, Any], console=None, *, max_missed: int = MAX_MISSED) -> None:
    """Print every table of a run summary (see the module docstring) to ``console``."""
    console = console or run_console()
    _dataset_card(console, summary)
    console.print()
    _metric_table(console, summary)
    console.print()
    _sweep_table(console, summary)
    console.print()
    _type_table(console, summary)
    console.print()
    _comparisons(console, summary)
    console.print()
    _missed(console, summary, max_missed)
    console.print()
    _signatures(console, summary)


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
