"""Console rendering of a question set's audit: ``ragexam review audit`` (one sampled question at a time, the
estimate), ``ragexam review queue`` and the audit lines of ``review apply``.

Only renders: every number comes from :mod:`ragexam.questions.audit` and :mod:`ragexam.questions.risk`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, Optional, Sequence

from ragexam import fmt
from ragexam.types import JsonValue, PathLike

if TYPE_CHECKING:  # pragma: no cover
    from rich.console import Console

    from ragexam.questions.audit import AuditStatus
    from ragexam.questions.auditing import AuditOpened
    from ragexam.questions.audit import PendingBound
    from ragexam.questions.risk import ReviewQueue, StopPoint

__all__ = ["audit_keys", "print_audit_item", "print_audit", "print_queue", "audit_lines", "queue_json"]


def _say(console: "Console", text: str, style: Optional[str] = None) -> None:
    console.print(text, style=style, highlight=False, markup=False, soft_wrap=True)


def audit_keys() -> str:
    """The keys of the terminal audit, in one line."""
    from ragexam.questions.audit import GOOD_KEY, REASONS

    bad = ", ".join(f"{key} {en}" for key, en, _ in REASONS.values())
    return f"{GOOD_KEY} good · bad: {bad} · u undo · q stop (labels are kept)"


def print_audit_item(console: "Console", rec: Mapping[str, JsonValue], position: int, total: int) -> None:
    """One sampled question as a person reads it: question, key, evidence, type."""
    _say(console, "")
    _say(console, f"question {position} of {total} sampled · {rec.get('query_id')} · {rec.get('type', '')}", "bold")
    _say(console, f"Q: {rec.get('question', '')}")
    _say(console, f"A: {rec.get('ground_truth', '')}")
    for i, ev in enumerate(rec.get("evidence") or [], 1):
        _say(console, f"evidence {i}: {ev}", "dim")
    if not rec.get("answerable", True):
        _say(console, "(out of corpus: the documents should not answer it)", "dim")
    _say(console, audit_keys(), "cyan")


def _status_lines(status: "AuditStatus") -> Sequence[str]:
    lines = [f"audit: {status.text()}"]
    if status.reasons:
        lines.append("bad by reason: " + ", ".join(f"{r} {n}" for r, n in status.reasons))
    if status.interval is not None and status.n_audited:
        lines.append(f"interval: exact, finite population (hypergeometric), 95%; {status.interval.signature}")
    return lines


def print_audit(console: "Console", opened: "AuditOpened", queue: Optional["ReviewQueue"] = None,
                sheet: Optional[PathLike] = None) -> None:
    """What ``review audit`` did: notes, the estimate, whether the checks' signals help, the sheet written."""
    for note in opened.notes:
        _say(console, f"note: {note}")
    for line in _status_lines(opened.status):
        _say(console, line)
    if queue is not None:
        _say(console, queue.check.text())
    if sheet is not None:
        _say(console, f"Wrote the sample of {len(opened.audit.sample)} to {sheet}: fill in label (good / bad) and, for "
                      f"a bad one, reason; then `ragexam review audit {opened.set.qa} --labels {sheet}`.")
    from ragexam.questions.audit import audit_path

    _say(console, f"The audit is kept in {audit_path(opened.set.qa)} (keyed by the set's SHA-256: an edited set is no "
                  "longer audited).", "dim")


def print_queue(console: "Console", queue: "ReviewQueue", records: Mapping[str, Mapping[str, JsonValue]], status: "AuditStatus",
                stop: Optional["StopPoint"], target: float, top: int, qa: Optional[PathLike] = None) -> None:
    """The review queue: whether the signals help, the first ``top`` questions with their risk, where to stop
    (``qa``: the set's file, named in the fixes)."""
    _say(console, f"audit: {status.text()}")
    _say(console, queue.check.text())
    if stop is not None:
        _say(console, "stop: " + stop.text())
    elif not status.n_audited:
        _say(console, "stop: not known without an audit (nothing predicts the junk of questions nobody read): review "
                      f"every question, or audit a random sample first (`ragexam review audit {qa if qa is not None else 'QA'}`)")
    else:
        _say(console, f"stop: no point of the queue has a rest predicted at most {fmt.percent(target)} junk by the "
                      "audit (too few audited questions, or too much junk): review every question, or audit more")
    for i, qid in enumerate(queue.order[:top], 1):
        question = str(records[qid].get("question", ""))
        _say(console, f"{i:>4}  {qid}  risk {queue.risks[qid]:.2f}  {question[:70]}")
    if len(queue.order) > top:
        _say(console, f"… {len(queue.order) - top} more (--top N, or --json for all)", "dim")


def audit_lines(status: Optional["AuditStatus"], bound: Optional["PendingBound"],
                out: Optional[PathLike] = None) -> Sequence[str]:
    """``review apply``'s lines about junk: the set's audit and what the written set (``out``) may hold -- no bound
    at all when nothing audited its questions nobody reviewed."""
    if status is None or bound is None:
        return []
    lines = [f"the set's audit: {status.text()}"]
    if bound.n_written == 0:  # nothing to write (review apply refuses it): no line about a written set
        return lines
    if bound.pending == 0:
        lines.append(f"the written set: every question read by a person ({bound.accepted} accepted)")
    elif not bound.audited:
        audit = f"`ragexam review audit {out}`" if out is not None else "`ragexam review audit`"
        lines.append(f"the written set: not audited ({bound.parts()}): nothing is known of the junk of questions "
                     f"nobody reviewed until an audit ({audit})")
    else:
        how = f"counted from {bound.method}" if bound.exact else f"95% bound from {bound.method}"
        lines.append(f"the written set: junk at most {fmt.percent(bound.rate_high)} (at most {bound.bad_high} of "
                     f"{bound.n_written}: {bound.parts()}; {how})")
    return lines


def queue_json(queue: "ReviewQueue", status: "AuditStatus", stop: Optional["StopPoint"]) -> Mapping[str, Any]:
    """The queue as a JSON object (``--json``)."""
    return {"audit": status.to_dict(), "queue": queue.to_dict(),
            "stop": None if stop is None else {"after": stop.start, "rest": stop.interval.to_dict(),
                                               "text": stop.text()}}
