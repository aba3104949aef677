"""The audit of a question set in the browser (:mod:`ragexam.questions.audit`): one sampled question at a time,
keyboard only (``g`` good, ``1``-``6`` bad for that reason, ``u`` undo), and the set's audit and review queue on
the home page and the set's page.

Routes: ``GET /review/N/audit`` (the sample to draw, the next sampled question, or the estimate when every
sampled question is labelled) and ``POST /review/N/audit`` (``action`` ``start`` with ``sample``, ``label`` with
``key``, ``label`` and ``reason``, or ``undo``), answered with a redirect to the page.  Every action is one call of
:mod:`ragexam.questions.auditing`, which re-reads the sidecar and writes it under the lock, so two tabs and
``ragexam review audit`` in a terminal never lose each other's labels.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Protocol, Tuple
from urllib.parse import urlencode

from ragexam.serve.i18n import current

if TYPE_CHECKING:  # pragma: no cover
    from ragexam.questions.audit import AuditFile, AuditStatus
    from ragexam.questions.auditing import SetQueue
    from ragexam.questions.risk import SignalCheck, StopPoint
    from ragexam.serve.reviewing import ReviewSession


class NamedSet(Protocol):
    """What the audit pages use of :class:`ragexam.serve.app.NamedSet` (which imports this module)."""

    sid: str

    @property
    def name(self) -> str: ...

    def session(self) -> "ReviewSession": ...

__all__ = ["AuditPages", "SetAudit", "set_audit", "queue_sorted", "AUDIT_ACTIONS", "signals_html",
           "stop_html"]

#: what the audit page's form may ask for
AUDIT_ACTIONS = ("start", "label", "undo")
#: the junk rate a review's rest must be predicted under for the stop point shown on the set's page
STOP_TARGET = 0.1


@dataclass(frozen=True)
class SetAudit:
    """A set's audit as the pages show it: the ``status``, the sidecar (``audit``, ``None`` for none) and, when it
    can be computed, the review queue with its stop point."""

    status: "AuditStatus"
    audit: Optional["AuditFile"]
    queue: Optional["SetQueue"]

    def text(self) -> str:
        return self.status.text(current().code)

    def signals_text(self) -> Any:
        """Whether the checks' signals order the queue (:class:`ragexam.questions.risk.SignalCheck`), in the
        page's language (``""`` without a queue)."""
        return signals_html(self.queue.queue.check) if self.queue is not None else ""

    def stop_text(self) -> Any:
        """Where a reviewer may stop (:class:`ragexam.questions.risk.StopPoint`) in the page's language: none
        without audited labels (nothing predicts a rest nobody read)."""
        if self.queue is None:
            return ""
        t = current().t
        if self.queue.stop is None:
            return t("review.stop_none") if self.status.n_audited else t("review.stop_unaudited")
        return stop_html(self.queue.stop)


def _num(x: float) -> str:
    from ragexam import fmt

    return fmt.num(x, 2)


def signals_html(check: "SignalCheck") -> Any:
    """:meth:`ragexam.questions.risk.SignalCheck.text` from the catalogue, in the page's language."""
    from ragexam.questions.risk import MIN_EACH

    t = current().t
    random = t("queue.random", seed=check.seed)
    n = check.n_bad + check.n_good
    audited = (t("queue.audited_good") if not check.n_bad else t("queue.audited_bad") if not check.n_good else
               t("queue.audited_mixed", bad=check.n_bad, good=check.n_good))
    if check.auc is None:
        if not n:
            return t("queue.signals_none", random=random)
        return t("queue.signals_few", n=n, audited=audited, least=MIN_EACH, random=random)
    a = check.auc
    auc = t("queue.auc", auc=_num(a.auc), low=_num(a.low), high=_num(a.high), n=n, audited=audited)
    if check.helps:
        return t("queue.signals_helps", auc=auc)
    return t("queue.signals_reversed" if a.high < 0.5 else "queue.signals_unclear", auc=auc, random=random)


def stop_html(stop: "StopPoint") -> Any:
    """:meth:`ragexam.questions.risk.StopPoint.text` from the catalogue, in the page's language."""
    from ragexam import fmt
    from ragexam.questions.risk import STOP_POINTS

    t = current().t
    iv = stop.interval
    seen = t("queue.stop_seen", bad=iv.bad, n=iv.n) if iv.bad else t("queue.stop_seen_clean", n=iv.n)
    values = dict(high=fmt.percent(iv.high), target=fmt.percent(stop.target), seen=seen,
                  bound=t("queue.stop_bound", points=STOP_POINTS))
    if stop.start == 0:
        return t("queue.stop_whole", **values)
    return t("queue.stop_after", start=stop.start, rest=iv.population, **values)


_CACHE: Dict[str, Tuple[Any, SetAudit]] = {}
_CACHE_LOCK = threading.Lock()


def _stamp(path: Any) -> Any:
    try:
        st = os.stat(path)
        return (st.st_ino, st.st_mtime_ns, st.st_size)
    except OSError:
        return None


def set_audit(qa: Any, *, with_queue: bool = False) -> SetAudit:
    """The audit of the set file ``qa`` (kept while neither the set nor its sidecar changes)."""
    from ragexam.questions.audit import audit_path, audit_status, read_audit
    from ragexam.questions.auditing import set_queue

    key = (_stamp(qa), _stamp(audit_path(qa)), with_queue)
    with _CACHE_LOCK:
        hit = _CACHE.get(str(qa))
    if hit is not None and hit[0] == key:
        return hit[1]
    queue = set_queue(qa, STOP_TARGET) if with_queue else None
    value = SetAudit(queue.status if queue is not None else audit_status(qa), read_audit(qa), queue)
    with _CACHE_LOCK:
        _CACHE[str(qa)] = (key, value)
    return value


def queue_sorted(items: List[Any], qa: Any) -> List[Any]:
    """Review items (:class:`ragexam.serve.reviewing.Item`) in the set's review queue order; items the queue does
    not hold (rescued questions, rejected candidates) after them, in their own order."""
    queue = set_audit(qa, with_queue=True).queue
    at = {q: i for i, q in enumerate(queue.queue.order)} if queue is not None else {}
    return sorted(items, key=lambda i: at.get(i.key, len(at)))  # a stable sort keeps the others' order


def _reasons() -> List[Tuple[str, str, str]]:
    """``(code, key, words in the page's language)`` of each bad reason (:data:`ragexam.questions.audit.REASONS`)."""
    from ragexam.questions.audit import REASONS

    ko = current().code == "ko"
    return [(code, key, ko_words if ko else en) for code, (key, en, ko_words) in REASONS.items()]


class AuditPages:
    """The audit routes of :func:`ragexam.serve.app.create_app`."""

    def __init__(self, named: Callable[[Any], NamedSet], page: Callable[..., Any]) -> None:
        self.named = named
        self.page = page

    def audit(self, request: Any) -> Any:
        from ragexam.questions.audit import AUDITED, DEFAULT_SEED, STALE, audit_path
        from ragexam.questions.auditing import next_question

        s = self.named(request)
        rs = s.session().rs
        view = set_audit(rs.qa)
        audit = view.audit if view.status.state in (AUDITED,) else None
        key = next_question(audit) if audit is not None and audit.sample else None
        record = rs.records.get(key) if key is not None else None
        return self.page("audit.html", title=current().text("audit.title", name=s.name), s=s, view=view,
                         audit=audit, key=key, record=record, reasons=_reasons(),
                         stale=view.status.state == STALE, path=audit_path(rs.qa),
                         position=audit.sample.index(key) + 1 if audit is not None and key is not None else 0,
                         done=request.query_params.get("done"), good_key="g", default_seed=DEFAULT_SEED)

    async def act(self, request: Any) -> Any:
        """``start`` (draw or grow the sample), ``label`` or ``undo``; then the audit page again."""
        from starlette.concurrency import run_in_threadpool
        from starlette.responses import RedirectResponse

        from ragexam.serve.security import FORM_SCOPE_KEY, parse_form

        s = self.named(request)
        form = request.scope.get(FORM_SCOPE_KEY)
        if form is None:
            form = parse_form(await request.body())
        one = {k: v[0] for k, v in form.items()}
        done = await run_in_threadpool(self._do, s, one)
        query = f"?{urlencode({'done': done})}" if done else ""
        return RedirectResponse(f"/review/{s.sid}/audit{query}", 303)

    def _do(self, s: NamedSet, form: Dict[str, str]) -> str:
        from ragexam.errors import InputError
        from ragexam.questions.auditing import label_question, open_audit, undo_label

        t = current().text
        qa = s.session().rs.qa
        action = form.get("action", "")
        if action == "start":
            try:
                size = int(form.get("sample") or 20)
            except ValueError:
                raise InputError(f"received {form.get('sample')!r}; expected a whole number of questions",
                                 field="sample") from None
            open_audit(qa, size)
            return ""
        if action == "label":
            reason = form.get("reason") or None  # a bad reason's button sends its reason only
            label = form.get("label") or ("bad" if reason else "")
            label_question(qa, form.get("key", ""), label, reason if label == "bad" else None, form.get("note", ""))
            return ""
        if action == "undo":
            undone = undo_label(qa)
            return t("audit.undone", key=undone) if undone else t("audit.nothing_to_undo")
        raise InputError(f"received {action[:100]!r}; expected one of {', '.join(AUDIT_ACTIONS)}", field="action")
