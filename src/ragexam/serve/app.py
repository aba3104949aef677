"""The web application of ``ragexam serve``: routes, pages and the files it may serve.

Every text of a page comes from the catalogue of :mod:`ragexam.serve.strings` in the request's language
(:mod:`ragexam.serve.i18n`).  Files are named by the user (``--review qa.jsonl``, repeatable; run and score
folders as arguments) or listed by
the run history (``--history``), and reached only through their number or record id (``/review/1``, ``/run/f1``,
``/run/h:<id>``); no route takes a path, so no request can reach another file.  A file that
cannot be read is a page with the reason (file, line, field, fix), never a stack trace.  Pages are rendered
on the server with Jinja2 templates (autoescaped); the only scripts are this package's own static files.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

from ragexam.errors import InputError
from ragexam.serve import i18n
from ragexam.serve.i18n import current
from ragexam.serve.results import Results
from ragexam.serve.reviewing import (ACTIONS, CLOSEST_PIECE_MAX_CHARS, NEXT_AFTER, Filter, Outcome, ReviewSession,
                                     STATUSES)
from ragexam.serve.security import CSRF_FIELD, FORM_SCOPE_KEY, FormError, Guard, ServeOptions, parse_form
from ragexam.serve.strings import REASONS_KO, STRINGS

__all__ = ["create_app", "Catalog", "NamedSet"]

HERE = Path(__file__).parent
#: the static files served, by name (no other name resolves): this package's two, and the report's style and
#: script (the same the static report inlines, so a run's sections look and behave the same)
STATIC = {"serve.css": "text/css; charset=utf-8", "serve.js": "text/javascript; charset=utf-8",
          "report.css": "text/css; charset=utf-8", "report.js": "text/javascript; charset=utf-8"}
#: rows per page of a set's table
LIST_PAGE = 200
log = logging.getLogger("ragexam.serve")


@dataclass
class NamedSet:
    """A question set the user named: its number ``sid``, the set file, the review sheet (``None``: beside the
    set) and the corpus for checks (``None``: the card's)."""

    sid: str
    qa: Path
    review: Optional[Path] = None
    corpus: Any = None
    _session: Optional[ReviewSession] = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def name(self) -> str:
        return self.qa.name

    def session(self) -> ReviewSession:
        """The review of this set (loaded on first use; :class:`InputError` when a file cannot be read)."""
        with self._lock:
            if self._session is None:
                from ragexam.questions.review import load_review_set

                self._session = ReviewSession(load_review_set(self.qa, self.review, corpus=self.corpus))
            return self._session


@dataclass
class Catalog:
    """Everything the server may show: the named question sets, and the results -- the named run and score
    folders and the history's records (:class:`~ragexam.serve.results.Results`)."""

    sets: List[NamedSet] = field(default_factory=list)
    results: Results = field(default_factory=Results)
    _language: Optional[str] = None
    _sets_language: Optional[str] = None

    @classmethod
    def of(cls, review: Sequence[Any] = (), corpus: Any = None, folders: Sequence[Any] = (),
           history: Any = None) -> "Catalog":
        """The catalog of the question sets ``review`` (checked against ``corpus`` when their card's corpus is
        gone), the run or score ``folders`` and the history at ``history`` (default: the default history)."""
        return cls([NamedSet(str(i), Path(p), None, corpus) for i, p in enumerate(review, 1)],
                   Results(folders, history))

    def get(self, sid: str) -> Optional[NamedSet]:
        return next((s for s in self.sets if s.sid == sid), None)

    def language(self) -> str:
        """The data's language (``ko`` or ``en``): the corpus language on the card of the first named set that
        has one, else whether a loaded run or score holds Hangul in its questions, else ``ko`` (ragexam's users
        are mostly Korean).  Decided once when it comes from the data."""
        if self._language is not None:
            return self._language
        if self._sets_language is None:  # the cards are read once
            self._sets_language = _sets_language(self.sets) or ""
        found = self._sets_language or self.results.kept_language()
        if found:
            self._language = found
        return found or "ko"

    def warm(self) -> threading.Thread:
        """Load every named run and score folder, and every set, its corpus and the Korean analyser, in a
        background thread, so the first page does not wait for them (what cannot be read is left for its page to
        explain)."""
        def work() -> None:
            for key, folder in self.results.folder_keys():
                try:
                    self.results.load(key)
                except Exception:  # noqa: BLE001 -- shown with its reason when the folder is opened
                    log.debug("warming %s failed", folder, exc_info=True)
            for s in self.sets:
                try:
                    s.session().rs.corpus_facts()
                    from ragexam.questions import measure

                    measure.terms(["준비"], s.session().rs.corpus_facts().language)
                except Exception:  # noqa: BLE001 -- shown with its reason when the set is opened
                    log.debug("warming %s failed", s.qa, exc_info=True)

        t = threading.Thread(target=work, name="ragexam-serve-warm", daemon=True)
        t.start()
        return t


def _sets_language(sets: Sequence[NamedSet]) -> Optional[str]:
    """The corpus language the card of the first named set names (``None``: no card says)."""
    from ragexam.questions.output import side_paths
    from ragexam.storage.readback import read_json

    for s in sets:
        card = side_paths(s.qa)["card"]
        try:
            corpus = read_json(card).get("corpus") if card.is_file() else None
        except (InputError, AttributeError):
            continue
        if isinstance(corpus, dict) and corpus.get("language") in i18n.LANGS:
            return str(corpus["language"])
    return None


def reason_meaning(reason: str) -> str:
    """What a rejection reason of the generator means, in the page's language (English: the generator's own
    words, :data:`ragexam.questions.checks.REASONS`)."""
    from ragexam.questions.checks import REASONS

    if current().code == "ko" and reason in REASONS_KO:
        return REASONS_KO[reason]
    return REASONS.get(reason, ("", ""))[1]


def _templates() -> Any:
    import jinja2

    from ragexam import __version__

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(HERE / "templates")),
                             autoescape=jinja2.select_autoescape(default=True, default_for_string=True),
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                             auto_reload=False)  # the package's own files: loaded once
    env.globals.update(version=__version__, statuses=STATUSES, lang_names=i18n.LANG_NAMES,
                       switch_href=i18n.switch_href, catalogue=frozenset(STRINGS), reason_meaning=reason_meaning,
                       closest_limit=CLOSEST_PIECE_MAX_CHARS)
    return env


def _static_files() -> Dict[str, bytes]:
    from ragexam.report.html import FONT_STACK, MONO_STACK, REPORT_JS, fragment_css

    out = {"report.css": fragment_css().encode("utf-8"), "report.js": REPORT_JS.encode("utf-8")}
    for name in STATIC:
        if name not in out:
            text = (HERE / "static" / name).read_text(encoding="utf-8")
            out[name] = text.replace("%FONTS%", FONT_STACK).replace("%MONO%", MONO_STACK).encode("utf-8")
    return out


def create_app(catalog: Catalog, options: Optional[ServeOptions] = None) -> Any:
    """The ASGI application serving ``catalog`` under ``options`` (:mod:`ragexam.serve.security`)."""
    from starlette.applications import Starlette
    from starlette.exceptions import HTTPException
    from starlette.responses import Response
    from starlette.routing import Route

    from ragexam.serve.results_pages import ResultsPages

    from ragexam.serve.audit_pages import AuditPages

    pages = _Pages(catalog, options or ServeOptions())
    results = ResultsPages(catalog.results, pages.page)
    audits = AuditPages(pages.named, pages.page)
    routes = [Route("/", pages.home), Route("/runs", results.runs), Route("/run/{key}", results.run),
              Route("/run/{key}/missed", results.missed), Route("/compare", results.compare),
              Route("/review/{sid}", pages.review_list),
              Route("/review/{sid}/audit", audits.audit), Route("/review/{sid}/audit", audits.act, methods=["POST"]),
              Route("/review/{sid}/item", pages.review_item),
              Route("/review/{sid}/decide", pages.decide, methods=["POST"]), Route("/static/{name}", pages.static_file),
              Route("/favicon.ico", lambda request: Response(status_code=204))]
    app = Starlette(routes=routes, exception_handlers={HTTPException: pages.http_error, InputError: pages.input_error,
                                                       FormError: pages.form_error, Exception: pages.server_error})
    return Guard(app, pages.options, lambda status, title, reason: pages.error_page(status, title, reason).body,
                 data_language=catalog.language)


class _Pages:
    """The routes of :func:`create_app`: one method per page, rendered with the package's templates."""

    def __init__(self, catalog: Catalog, options: ServeOptions) -> None:
        self.catalog = catalog
        self.options = options
        self.env = _templates()
        self.static = _static_files()

    def page(self, template: str, status: int = 200, **context: Any) -> Any:
        """``template`` rendered in the request's language (``t``, ``lang`` in its context)."""
        from starlette.responses import HTMLResponse

        lang = current()
        context.setdefault("title", "ragexam")
        html = self.env.get_template(template).render(csrf=self.options.csrf, csrf_field=CSRF_FIELD, t=lang.t,
                                                      lang=lang, **context)
        return HTMLResponse(html, status_code=status)

    def error_page(self, status: int, title: str, reason: str, detail: str = "") -> Any:
        """An error page: ``title`` and ``reason`` in the page's language; ``detail`` a message of ragexam's
        lower layers (English: marked so)."""
        return self.page("error.html", status, title=title, reason=reason, detail=detail,
                         detail_lang="en" if detail else "")

    def named(self, request: Any) -> NamedSet:
        from starlette.exceptions import HTTPException

        s = self.catalog.get(request.path_params["sid"])
        if s is None:
            raise HTTPException(404, current().t("error.no_set", sid=request.path_params["sid"]))
        return s

    def home(self, request: Any) -> Any:
        from ragexam.serve.audit_pages import set_audit

        rows = []
        for s in self.catalog.sets:
            try:
                sess = s.session()
                rows.append({"set": s, "counts": sess.counts(sess.items()), "error": None, "path": sess.rs.qa,
                             "sheet": sess.rs.sheet_path, "audit": set_audit(sess.rs.qa).text()})
            except InputError as err:
                rows.append({"set": s, "counts": None, "error": str(err), "path": s.qa, "sheet": None})
        results = self.catalog.results
        try:
            listing = results.page(limit=5)
            recent, n_records, history_error = listing.entries, listing.total, ""
        except InputError as err:  # the history replaced or damaged: the rest of the server still works
            recent, n_records, history_error = [], 0, str(err)
        return self.page("home.html", rows=rows, folders=results.folder_keys(), recent=recent, n_records=n_records,
                         history=results.history.path, key_of=results.key_of_record, history_error=history_error)

    def review_list(self, request: Any) -> Any:
        from ragexam.serve.audit_pages import set_audit

        s = self.named(request)
        sess = s.session()
        flt = Filter.of(request.query_params)
        items = in_order(sess, flt)
        chosen = [i for i in items if flt.matches(i)]
        pages = max(1, -(-len(chosen) // LIST_PAGE))
        try:
            at = min(max(1, int(request.query_params.get("page", 1))), pages)
        except ValueError:
            at = 1
        return self.page("review_list.html", title=current().text("review.title", name=s.name), s=s, sess=sess,
                         flt=flt, n_chosen=len(chosen), audit=set_audit(sess.rs.qa, with_queue=True),
                         first=chosen[0] if chosen else None, items=chosen[(at - 1) * LIST_PAGE:at * LIST_PAGE],
                         page_no=at, pages=pages, offset=(at - 1) * LIST_PAGE, counts=sess.counts(items),
                         done=request.query_params.get("done"), **_choices(sess, items))

    def review_item(self, request: Any, outcome: Optional[Outcome] = None, status: int = 200) -> Any:
        from starlette.exceptions import HTTPException

        s = self.named(request)
        sess = s.session()
        key = outcome.key if outcome is not None else str(request.query_params.get("key", ""))
        flt = Filter.of(request.query_params)
        items = in_order(sess, flt)
        item = sess.find(items, key)
        if item is None:
            raise HTTPException(404, current().t("error.no_item", name=s.name, key=key))
        return self.page("review_item.html", status, title=f"{item.key} · {s.name}",
                         **_item_context(s, sess, items, item, flt, outcome, request.query_params.get("done")))

    async def decide(self, request: Any) -> Any:
        """A decision (:meth:`ReviewSession.decide`); then the next item of the filter (accept, reject, pending),
        the same item (an edit, a rescue), or the item again with the reason (refused 422, conflict 409)."""
        from starlette.concurrency import run_in_threadpool
        from starlette.requests import Request
        from starlette.responses import RedirectResponse

        s = self.named(request)
        form = request.scope.get(FORM_SCOPE_KEY)  # parsed by the Guard (its checks read the CSRF field)
        if form is None:
            form = parse_form(await request.body())
        one = {k: v[0] for k, v in form.items()}
        flt = Filter.of(one)
        action = one.get("action", "")
        if action not in ACTIONS:
            return self.error_page(400, current().t("error.unknown_action"),
                                   current().t("error.unknown_action_reason", action=repr(action[:100]),
                                               choices=", ".join(ACTIONS)))
        values: Dict[str, Any] = {k: one[k] for k in ("question", "ground_truth", "note") if k in one}
        if "evidence" in form:
            values["evidence"] = form["evidence"]
        sess = s.session()
        outcome = await run_in_threadpool(sess.decide, one.get("key", ""), action, one.get("version", ""), values)
        if outcome.kind == "saved":
            target: Optional[str] = outcome.key
            if action in NEXT_AFTER:
                target = sess.neighbours(in_order(sess, flt), flt, outcome.key)[1]
            if not target:
                return RedirectResponse(f"/review/{s.sid}?{flt.query(done=outcome.message)}", 303)
            return RedirectResponse(f"/review/{s.sid}/item?{flt.query(key=target, done=outcome.message)}", 303)
        request.scope["query_string"] = flt.query(key=outcome.key).encode()
        return await run_in_threadpool(self.review_item, Request(request.scope), outcome,
                                       409 if outcome.kind == "conflict" else 422)

    def static_file(self, request: Any) -> Any:
        from starlette.exceptions import HTTPException
        from starlette.responses import Response

        name = request.path_params["name"]
        if name not in self.static:
            raise HTTPException(404, current().t("error.no_static", name=name))
        return Response(self.static[name], media_type=STATIC[name], headers={"cache-control": "no-cache"})

    async def http_error(self, request: Any, exc: Exception) -> Any:
        code = getattr(exc, "status_code", 500)
        t = current().t
        title = {404: t("error.not_found"), 405: t("error.method")}.get(code, t("error.refused"))
        return self.error_page(code, title, getattr(exc, "detail", "") or title)

    async def input_error(self, request: Any, exc: Exception) -> Any:
        return self.error_page(422, current().t("error.file"), current().t("error.file_reason"), str(exc))

    async def form_error(self, request: Any, exc: Exception) -> Any:
        assert isinstance(exc, FormError)
        t = current().t
        return self.error_page(exc.status, t("error.too_large") if exc.status == 413 else t("error.bad_request"),
                               t(exc.key, **exc.values))

    async def server_error(self, request: Any, exc: Exception) -> Any:
        log.exception("ragexam serve: %s %s failed", request.method, request.url.path)
        return self.error_page(500, current().t("error.internal"),
                               current().t("error.internal_reason", what=f"{type(exc).__name__}: {exc}"))


def in_order(sess: ReviewSession, flt: Filter) -> List[Any]:
    """The set's items in the filter's order: the review queue's (likely junk first when the audit showed the
    checks' signals help, else random: :func:`ragexam.serve.audit_pages.queue_sorted`), or the set's own."""
    items = sess.items()
    if flt.order != "queue":
        return items
    from ragexam.serve.audit_pages import queue_sorted

    return queue_sorted(items, sess.rs.qa)


def _choices(sess: ReviewSession, items: Sequence[Any]) -> Dict[str, Any]:
    from ragexam.questions.checks import REASONS

    types = sorted({i.type for i in items if i.origin != "candidate" and i.type})
    reasons: Dict[str, int] = {}
    for i in items:
        if i.origin == "candidate" and not i.rescued_as:
            reasons[i.reason] = reasons.get(i.reason, 0) + 1
    return {"types": types, "reasons": [(r, reasons[r], reason_meaning(r))
                                        for r in list(REASONS) + sorted(set(reasons) - set(REASONS)) if r in reasons]}


def _item_context(s: NamedSet, sess: ReviewSession, items: Sequence[Any], item: Any, flt: Filter,
                  outcome: Optional[Outcome], done: Optional[str]) -> Dict[str, Any]:
    refused = outcome if outcome is not None and outcome.kind == "refused" and outcome.values else None
    # an edit refused by its checks, or not saved because another tab changed the row: what was typed stays in the
    # form (the page shows the row as saved)
    kept = outcome if outcome is not None and outcome.kind in ("refused", "conflict") and outcome.values else None
    values = kept.values if kept else {"question": item.question, "ground_truth": item.answer,
                                       "evidence": list(item.evidence), "note": item.note}
    from ragexam.serve.reviewing_located import LocatedView, TraceView

    report = sess.check(items, item, item.question, item.answer, sess.taken(item))
    prev, nxt, pos, n = sess.neighbours(items, flt, item.key)
    g = item.record.get("metadata", {}).get("generation", {}) if item.origin == "set" else item.record
    shown = item.located if sess.kind == "located" else g  # the verification record: the located one for a located set
    return {"s": s, "sess": sess, "item": item, "flt": flt, "outcome": outcome, "done": done,
            "values": values, "report": report, "refused_report": refused.report if refused else None,
            "unsaved": kept is not None and kept.kind == "conflict",
            "passages": sess.passages(item, list(dict.fromkeys(list(item.evidence) + list(values["evidence"])))),
            "prev": prev, "next": nxt, "pos": pos, "n": n, "counts": sess.counts(items),
            "support": answer_support(item, report, g), "record_json": _pretty(shown),
            "located": LocatedView.of(item.located),
            "trace": TraceView.of(item.record) if item.origin == "set" else None,
            "evidence_rows": list(values["evidence"]) + [""], **_choices(sess, items)}


def answer_support(item: Any, report: Any, g: Dict[str, Any]) -> Dict[str, str]:
    """How the answer is known to be supported (or why the question needs no answer check), in words of the
    request's language: ``{"state": ok|warn|bad|none, "text": ...}``."""
    t = current().t
    if not item.answerable:
        ooc = g.get("ooc_check") or {}
        if ooc.get("max") is not None:
            return {"state": "ok" if ooc["max"] <= ooc.get("limit", 0) else "bad",
                    "text": t("support.ooc_judged", retriever=str(ooc.get("retriever")), max=str(ooc["max"]),
                              limit=str(ooc.get("limit")))}
        return {"state": "warn", "text": t("support.ooc", note=ooc.get("note") or t("support.ooc_none"))}
    if "ground_truth" in item.edited or "evidence" in item.edited or item.origin == "candidate":
        if report.answer_contained:
            return {"state": "ok", "text": t("support.contained")}
        return {"state": "warn", "text": t("support.vouched_edit")}
    check = g.get("answer_check") or {}
    if check.get("method") == "contained":
        return {"state": "ok", "text": t("support.contained")}
    if check.get("method") == "judge":
        return {"state": "ok" if check.get("score") == 1 else "bad",
                "text": t("support.judged", **{k: str(check.get(k)) for k in ("metric", "score", "supported",
                                                                                 "claims", "rubric")})}
    if check.get("method") == "human":
        return {"state": "warn", "text": t("support.vouched")}
    if check.get("method") == "traced":  # a traced question's answer is what the service answered
        return {"state": "bad" if check.get("feedback") == "negative" else "warn",
                "text": t("support.traced_negative" if check.get("feedback") == "negative" else "support.traced")}
    return {"state": "warn", "text": t("support.none")}


def _pretty(value: Any) -> str:
    import json

    return json.dumps(value, ensure_ascii=False, indent=2)
