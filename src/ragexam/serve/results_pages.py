"""The results pages of ``ragexam serve`` (docs/serve.md, "Reading results"): the runs list, a run's page with its
missed questions, a score's page with its answers, and the comparison of two runs or scores.

A run's sections are the static report's own fragments (:mod:`ragexam.report.sections` over the same
:class:`~ragexam.report.views.RunView`); lists too long for one page (the history, missed questions, answers) are
cut into pages on the server.  Results are reached by key only (:mod:`ragexam.serve.results`).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple
from urllib.parse import quote, urlencode

from ragexam import fmt
from ragexam.errors import InputError
from ragexam.report import sections
from ragexam.report.views import dot, interval
from ragexam.serve.i18n import current
from ragexam.serve.results import Loaded, Results, same_folder
from ragexam.storage.runfolder import headline_metric

__all__ = ["ResultsPages", "RUNS_PAGE", "MISSED_PAGE", "ANSWERS_PAGE"]

#: rows per page of the runs list, a run's missed questions, a score's answers
RUNS_PAGE, MISSED_PAGE, ANSWERS_PAGE = 50, 100, 50
SORTS = ("recorded", "created", "dataset", "headline", "id")
#: the longest text the runs list's find box takes (a longer one matches nothing: no id, dataset or pipeline is
#: that long)
MAX_FIND = 500


def _int(value: Any, default: int = 1) -> int:
    try:
        return max(1, int(value))
    except (TypeError, ValueError):
        return default


def query(params: Mapping[str, Any], **changes: Any) -> str:
    """``params`` with ``changes`` as a query string (empty values left out)."""
    d = {k: v for k, v in params.items()}
    d.update(changes)
    return urlencode({k: v for k, v in d.items() if v not in (None, "")})


@dataclass
class Pager:
    """One page of ``total`` rows, ``size`` a page: ``number`` (1-based) and the rows' ``offset``."""

    total: int
    size: int
    number: int = 1

    def __post_init__(self) -> None:
        self.pages = max(1, -(-self.total // self.size))
        self.number = min(max(1, self.number), self.pages)
        self.offset = (self.number - 1) * self.size

    def cut(self, rows: Sequence[Any]) -> Sequence[Any]:
        return rows[self.offset:self.offset + self.size]


@dataclass
class Headline:
    """A result's headline metric per pipeline, with its 95% interval."""

    metric: Optional[str]
    values: List[Tuple[str, Optional[float], Optional[Tuple[float, float]]]] = field(default_factory=list)
    #: pipeline -> the questions its value is over, when known (fewer than an interval needs: said in its place)
    ns: Dict[str, int] = field(default_factory=dict)

    @property
    def cells(self) -> List[Tuple[str, str, str, str]]:
        """``(dot, pipeline, value, interval)`` as text; over too few questions for an interval, that instead
        (:func:`ragexam.stats.proportion.too_few`)."""
        from ragexam.stats.proportion import too_few

        def shown(p: str, v: Optional[float], ci: Optional[Tuple[float, float]]) -> str:
            if ci:
                return fmt.ci(ci, digits=3, short=False)
            n = self.ns.get(p)
            return sections.too_few_text(n) if v is not None and n is not None and too_few(n) else ""

        return [(dot(i), p, fmt.num(v), shown(p, v, ci)) for i, (p, v, ci) in enumerate(self.values)]


def headline_of(loaded: Loaded) -> Headline:
    """The headline (``hit@k``, else the first metric) of a loaded run or score, per pipeline."""
    if loaded.view is not None:
        s = loaded.view.summary
        return Headline(s.headline, [(p, s.result(p).metrics.get(s.headline),
                                      interval(s.result(p).ci95.get(s.headline))) for p in loaded.view.pipelines],
                        {p: s.result(p).n for p in loaded.view.pipelines if isinstance(s.result(p).n, int)})
    sc = loaded.score
    metric = headline_metric(loaded.data.summary)
    return Headline(metric, [(p, sc.results[p].metrics.get(metric), interval(sc.results[p].ci95.get(metric)))
                             for p in sc.pipeline_names if p in sc.results],
                    {p: r.n for p, r in sc.results.items() if isinstance(r.n, int)})


class ResultsPages:
    """The routes of the results pages; ``page(template, status, **context)`` renders (the app's)."""

    def __init__(self, results: Results, page: Callable[..., Any]) -> None:
        self.results = results
        self.page = page
        self._compared: "OrderedDict[Tuple, Any]" = OrderedDict()
        self._lock = threading.Lock()

    def load(self, key: str) -> Loaded:
        from starlette.exceptions import HTTPException

        try:
            return self.results.load(key)
        except KeyError:
            raise HTTPException(404, current().t("error.no_result", key=key[:200],
                                                 history=str(self.results.history.path))) from None

    # -- the runs list ------------------------------------------------------------------------------------------

    def runs(self, request: Any) -> Any:
        qp = request.query_params
        params = {k: str(qp.get(k) or "") for k in ("q", "kind", "dataset", "sort", "order", "a")}
        sort = params["sort"] if params["sort"] in SORTS else "recorded"
        number = _int(qp.get("page"))

        def ask(offset: int) -> Any:
            return self.results.page(text=params["q"] or None, kind=params["kind"] or None,
                                     dataset=params["dataset"] or None, sort=sort,
                                     descending=params["order"] != "asc", offset=offset, limit=RUNS_PAGE)

        if len(params["q"]) > MAX_FIND:
            params["q"] = params["q"][:MAX_FIND]
        listing = ask((number - 1) * RUNS_PAGE)
        pager = Pager(listing.total, RUNS_PAGE, number)
        if pager.offset != (number - 1) * RUNS_PAGE:  # asked past the end: the last page
            listing = ask(pager.offset)
        rows = []
        for e in listing.entries:
            ci = listing.intervals.get(e.run_id, {})
            head = Headline(e.headline_metric, [(p, e.headline.get(p), ci.get(p)) for p in e.pipelines
                                                if p in e.headline])
            rows.append({"key": self.results.key_of_record(e.run_id), "id": e.run_id, "kind": e.kind,
                         "dataset": e.dataset, "created": _when(e.created or e.recorded), "head": head,
                         "n_pipelines": len(e.pipelines), "relevance": e.relevance})
        picked = params["a"] if params["a"] and self.results.known(params["a"]) else ""
        return self.page("runs.html", title=current().text("runs.title") + " · ragexam", rows=rows,
                         folders=self.folder_rows(), pager=pager, params=dict(params, sort=sort), listing=listing,
                         picked=picked, picked_label=self.results.label(picked) if picked else "", query=query,
                         history=self.results.history.path, sorts=SORTS, max_find=MAX_FIND)

    def folder_rows(self) -> List[Dict[str, Any]]:
        out = []
        for key, folder in self.results.folder_keys():
            try:
                loaded = self.results.load(key)
            except InputError as err:
                out.append({"key": key, "id": str(folder), "error": str(err)})
                continue
            created = loaded.view.summary.created if loaded.view is not None else loaded.score.created
            out.append({"key": key, "id": str(folder), "error": None, "kind": "score" if loaded.is_score else "run",
                        "dataset": loaded.score.dataset_label if loaded.is_score else loaded.view.summary.dataset_label,
                        "created": _when(created), "head": headline_of(loaded),
                        "n_pipelines": len(loaded.data.pipelines),
                        "relevance": loaded.view.summary.config.relevance if loaded.view is not None else None})
        return out

    # -- a run ----------------------------------------------------------------------------------------------------

    def run(self, request: Any) -> Any:
        key = request.path_params["key"]
        loaded = self.load(key)
        if loaded.is_score:
            return self.score(request, loaded)
        problems: List[str] = []
        scores = self.results.scores_of(loaded, problems)
        view, score_key = self.results.with_score(loaded, scores)
        qp = request.query_params
        flt = {"pipeline": str(qp.get("pipeline") or ""), "type": str(qp.get("type") or "")}
        chosen = [e for e in view.missed() if (not flt["pipeline"] or e.pipeline == flt["pipeline"])
                  and (not flt["type"] or (e.question.type or "") == flt["type"])]
        pager = Pager(len(chosen), MISSED_PAGE, _int(qp.get("page")))
        link = _answers_link(score_key) if score_key is not None else None
        frag = {"scores": sections.scores(view), "rerank": sections.rerank(view),
                "judge": sections.judge(view.judge, view.dot), "plots": sections.plots(view, link),
                "dataset": sections.dataset(view), "settings": sections.settings(view)}
        missed_all = view.missed()
        return self.page("run.html", title=f"{loaded.label} · ragexam", loaded=loaded, view=view, frag=frag,
                         nav=sections.nav(view),
                         facts=run_facts(view), problems=problems, missed=pager.cut(chosen), pager=pager, flt=flt,
                         n_missed=len(missed_all),
                         pipelines=list(dict.fromkeys(e.pipeline for e in missed_all)),
                         types=sorted({e.question.type for e in missed_all if e.question.type}),
                         has_answers=any(view.answer(e.pipeline, e.query_id) for e in pager.cut(chosen)),
                         score_key=score_key, scores=scores, label=self.results.label,
                         query=query, quote=quote)

    def missed(self, request: Any) -> Any:
        from starlette.exceptions import HTTPException

        key = request.path_params["key"]
        loaded = self.load(key)
        if loaded.view is None:
            raise HTTPException(404, current().t("error.is_score", label=loaded.label))
        view, score_key = self.results.with_score(loaded)
        qp = request.query_params
        pipeline, qid = str(qp.get("pipeline") or ""), str(qp.get("qid") or "")
        entry = view.find_missed(pipeline, qid)
        if entry is None:
            raise HTTPException(404, current().t("error.no_missed", label=loaded.label, qid=qid[:200],
                                                 pipeline=pipeline[:200]))
        flt = {"pipeline": str(qp.get("fp") or ""), "type": str(qp.get("ft") or "")}
        chosen = [e for e in view.missed() if (not flt["pipeline"] or e.pipeline == flt["pipeline"])
                  and (not flt["type"] or (e.question.type or "") == flt["type"])]
        at = next((i for i, e in enumerate(chosen) if e.seq == entry.seq), None)
        prev = chosen[at - 1] if at is not None and at > 0 else None
        nxt = chosen[at + 1] if at is not None and at + 1 < len(chosen) else None
        return self.page("missed.html", title=f"{qid} · {loaded.label}", loaded=loaded, view=view, entry=entry,
                         detail=sections.missed_detail(view, entry), prev=prev, next=nxt,
                         pos=(at + 1) if at is not None else None, n=len(chosen), flt=flt, score_key=score_key,
                         query=query, quote=quote)

    # -- a score --------------------------------------------------------------------------------------------------

    def score(self, request: Any, loaded: Loaded) -> Any:
        sc = loaded.score
        qp = request.query_params
        flt = {k: str(qp.get(k) or "") for k in ("pipeline", "type", "label")}
        verdicts = list(sc.verdicts().values())
        chosen = [v for v in verdicts if (not flt["pipeline"] or v.pipeline == flt["pipeline"])
                  and (not flt["type"] or (v.type or "(none)") == flt["type"])
                  and (not flt["label"] or v.label == flt["label"])]
        pager = Pager(len(chosen), ANSWERS_PAGE, _int(qp.get("page")))
        order = sc.pipeline_names
        index = {p: i for i, p in enumerate(order)}
        dot_of = lambda p: dot(index.get(p, len(index)))  # noqa: E731
        matrices = sc.attribution.by_type if sc.attribution else {}
        run_key = self._scored_run_key(loaded)
        metrics = list(dict.fromkeys(m for p in order if p in sc.results for m in sc.results[p].metrics))
        from ragexam.report.segments_html import section as segments_section

        return self.page("score.html", title=f"{loaded.label} · ragexam", loaded=loaded, sc=sc, metrics=metrics,
                         judge=sections.judge(sc.judge, dot_of), heads=sections.score_metric_heads(sc.judge, metrics),
                         segments=segments_section(sc.segments, current().code),
                         attribution=sections.attribution(matrices, order, _answers_link(loaded.key)),
                         rows=[(v, loaded.details.get((v.pipeline, v.query_id)), loaded.asked(v.pipeline, v.query_id))
                               for v in pager.cut(chosen)],
                         pager=pager, flt=flt, n_answers=len(verdicts), dot_of=dot_of, value_cell=sections.value_cell,
                         labels=list(dict.fromkeys([*(sc.attribution.labels if sc.attribution else []),
                                                    *(v.label for v in verdicts)])),
                         types=sorted({v.type or "(none)" for v in verdicts}), run_key=run_key,
                         settings=sections.kv_table(list(sc.used_settings.items()), names=True), query=query,
                         quote=quote,
                         label=self.results.label)

    def _scored_run_key(self, loaded: Loaded) -> Optional[str]:
        """The key of the run this score scored, when the server shows it."""
        run_id = loaded.score.scored_run
        if run_id and self.results.known(self.results.key_of_record(run_id)):
            return self.results.key_of_record(run_id)
        named = loaded.score.used_settings.get("run")
        for key, folder in self.results.folder_keys():
            if named and key != loaded.key and (folder / "summary.json").is_file() and same_folder(named, folder):
                return key
        return None

    # -- comparing two ------------------------------------------------------------------------------------------

    def compare(self, request: Any) -> Any:
        from ragexam.analysis.exam.compare import compare_runs

        qp = request.query_params
        params = {k: str(qp.get(k) or "") for k in ("a", "b", "pa", "pb")}
        params["allow"] = "1" if qp.get("allow") == "1" else ""
        title = current().text("compare.title") + " · ragexam"
        if not params["a"] or not params["b"]:
            return self.page("compare.html", title=title, params=params, result=None, error=None, a=None, b=None,
                             query=query, quote=quote, label=self.results.label, grading=[])
        a, b = self.load(params["a"]), self.load(params["b"])
        cache_key = (params["a"], params["b"], params["pa"], params["pb"], params["allow"], a.stamp, b.stamp)
        with self._lock:
            result = self._compared.get(cache_key)
        error, detail = compare_refusal(a, b, params["pa"], params["pb"]), ""
        grading = grading_lines(a, b) if error is None else []
        if grading and not params["allow"]:  # refused in the page's words; the checkbox asks explicitly
            error = current().t("compare.graded_differently")
        if result is None and error is None:
            try:
                result = compare_runs(a.data, b.data, pipeline=params["pa"] or None, pipeline_b=params["pb"] or None,
                                      allow_grading_change=bool(params["allow"]))
            except InputError as err:  # what the page does not foresee: ragexam compare's own words
                error, detail = current().t("compare.refused"), str(err)
            else:
                with self._lock:
                    self._compared[cache_key] = result
                    while len(self._compared) > 8:
                        self._compared.popitem(last=False)
        missed_a = {(e.pipeline, e.query_id) for e in a.view.missed()} if a.view is not None else set()
        missed_b = {(e.pipeline, e.query_id) for e in b.view.missed()} if b.view is not None else set()
        return self.page("compare.html", 422 if error else 200, title=title, params=params,
                         result=None if error else result, error=error, error_detail=detail, a=a, b=b,
                         grading=grading, doc_ranks={side: x.view is not None and x.view.summary.config.relevance
                                                     == "doc" for side, x in (("A", a), ("B", b))},
                         missed_a=missed_a, missed_b=missed_b,
                         pipelines_a=a.data.pipelines, pipelines_b=b.data.pipelines,
                         cls=sections.comparison_class, fmt=fmt, query=query, quote=quote, label=self.results.label)


def compare_refusal(a: Loaded, b: Loaded, pa: str, pb: str) -> Optional[str]:
    """Why ``a`` and ``b`` cannot be compared with the pipelines chosen in the selectors (``pa``, ``pb``; empty:
    every pipeline both have by name), in the page's words -- pointing to the selectors, where ``ragexam
    compare`` would name its options -- or ``None``."""
    t = current().t
    if a.is_score != b.is_score:
        return t("compare.run_and_score", kind_a=t("kind.score" if a.is_score else "kind.run"),
                 kind_b=t("kind.score" if b.is_score else "kind.run"))
    pipes_a, pipes_b = list(a.data.pipelines), list(b.data.pipelines)
    if not pa and not pb:
        if not set(pipes_a) & set(pipes_b):
            return t("compare.no_shared", a=", ".join(pipes_a), b=", ".join(pipes_b))
        return None
    if (pa or pb) not in pipes_a:
        return t("compare.not_in_a", name=pa or pb)
    if (pb or pa) not in pipes_b:
        return t("compare.not_in_b", name=pb or pa)
    return None


#: the catalogue's words for each way two runs' grading can differ
#: (:class:`ragexam.analysis.exam.compare.GradingChange`)
_GRADING_TEXT = {"relevance": "compare.grading.relevance", "overlap": "compare.grading.overlap",
                 "ignore_punctuation": "compare.grading.ignore_punctuation",
                 "question_set": "compare.grading.question_set"}


def grading_lines(a: Loaded, b: Loaded) -> List[Any]:
    """How B was graded differently from A (:func:`ragexam.analysis.exam.compare.grading_changes`), one line each in
    the page's words (``[]``: the same grading, or two scores)."""
    from ragexam.analysis.exam.compare import grading_changes

    t = current().t
    words = {"evidence": t("relevance.evidence"), "doc": t("relevance.doc")}
    out = []
    for c in grading_changes(a.data, b.data):
        va, vb = (str(c.a)[:12], str(c.b)[:12]) if c.key == "question_set" else (c.a, c.b)
        key = _GRADING_TEXT.get(c.key)
        if key is None:  # a grading setting this page has no words for: ragexam compare's own (English)
            out.append(c.what)
            continue
        out.append(t(key, a=words.get(va, str(va)) if isinstance(va, str) else str(va),
                     b=words.get(vb, str(vb)) if isinstance(vb, str) else str(vb)))
    return out


def run_facts(view: Any) -> List[str]:
    """A run in a few words of the page's language: dataset, pipelines, scored questions, id, date (what
    :meth:`~ragexam.report.views.RunView.facts` says in the report)."""
    t = current().t
    s = view.summary
    bits = [t("run.facts.dataset", name=s.dataset_label), t("run.facts.pipelines", n=len(view.pipelines))]
    n_scored = s.dataset.n_scored or s.dataset.n_answerable
    if n_scored:
        bits.append(t("run.facts.scored", n=n_scored))
    if s.config.relevance in ("evidence", "doc"):  # the grading rule: two runs under different rules do not compare
        bits.append(t({"evidence": "run.facts.relevance.evidence", "doc": "run.facts.relevance.doc"}
                      [s.config.relevance]))
    bits.append(t("run.facts.run", id=s.run_id))
    if s.created:
        bits.append(str(s.created))
    return bits


def _answers_link(score_key: str) -> Callable[[str, str, str], str]:
    """The link of an attribution cell: the score's answers of that pipeline, type and stage."""
    return lambda p, t, s: f"/run/{quote(score_key)}?{query({}, pipeline=p, type=t, label=s)}#answers"


def _when(stamp: Optional[str]) -> str:
    """``2026-11-30T14:40:12Z`` as ``2026-11-30 14:40`` (UTC)."""
    if not stamp:
        return ""
    s = str(stamp).replace("T", " ")
    return s[:16] + (" UTC" if s.endswith("Z") else "")
