"""What ``ragexam locate-evidence`` prints: the questions by outcome, the files, the notes and the next step."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ragexam import fmt
from ragexam.questions.locate import confidence_text

if TYPE_CHECKING:  # pragma: no cover
    from rich.console import Console

    from ragexam.llm.batch import CallPlan
    from ragexam.questions.locate_set import LocateResult

__all__ = ["print_locate", "print_locate_plan", "MEANINGS"]

#: each outcome in words (English, then Korean)
MEANINGS = {
    "located": ("located with confidence: written as evidence", "근거 위치를 확신: evidence로 기록"),
    "uncertain": ("a span was found, not with confidence: review it", "후보는 찾았으나 확신 부족: 검토 필요"),
    "unlocated": ("no span holds the answer", "답을 뒷받침하는 구간 없음"),
    "kept": ("had evidence already (verified in the corpus)", "기존 evidence 유지(코퍼스에서 확인)"),
    "kept_unverified": ("had evidence that occurs in no document: fix it", "기존 evidence가 문서에 없음: 수정 필요"),
    "out_of_corpus": ("out of corpus (answerable: false): nothing to locate", "문서 밖 질문: 찾을 것 없음"),
}


def _say(console: Console, text: str) -> None:
    console.print(text, highlight=False, markup=False, soft_wrap=True)


def print_locate(result: LocateResult, console: Console, out: object) -> None:
    """The outcome of :func:`ragexam.api.locate_evidence` (a :class:`~ragexam.questions.locate_set.LocateResult`)."""
    c = result.counts
    n = len(result.questions)
    threshold = result.card.get("threshold")
    _say(console, f"locate-evidence: {fmt.plural(n, 'question')}; {fmt.plural(result.searched, 'question')} needed "
                  f"evidence (confidence threshold {threshold:g}) · 근거 위치 찾기")
    for status, (en, ko) in MEANINGS.items():
        if c.get(status):
            _say(console, f"  {status:<16} {c[status]:>5}  {en} · {ko}")
    searched = [q for q in result.questions if q.confidence is not None]
    if searched:
        confs = sorted(q.confidence for q in searched)
        _say(console, f"  confidence of the {fmt.plural(len(confs), 'searched question')}: median "
                      f"{confidence_text(confs[len(confs) // 2])}, lowest {confidence_text(confs[0])}")
    usage = result.card.get("this_run", {}).get("usage") or {}
    if usage:
        _say(console, f"  model {usage.get('model')}: {fmt.plural(usage.get('calls', 0), 'call')}, "
                      f"{usage.get('cached', 0)} cached, cost {fmt.cost(usage.get('cost_usd'))}")
    mc = result.model_checks
    if mc.get("questions"):
        verdicts = ", ".join(f"{mc[v]} {v}" for v in ("confirmed", "refuted", "failed") if mc.get(v))
        _say(console, f"  model checks of {fmt.plural(mc['questions'], 'question')}: {verdicts}"
                      + (" (failed calls: " + ", ".join(f"{k} {n}" for k, n in mc["failed_calls"].items()) + ")"
                         if mc.get("failed_calls") else ""))
    for kind, path in result.files.items():
        _say(console, f"wrote {path}" + (" (the review sheet: accept, pick the runner-up, edit, reject)"
                                         if kind == "review" else ""))
    for note in result.notes:
        _say(console, f"note: {note}")
    if result.model_failed:
        _say(console, f"error: the model's check failed for every question ({mc['questions']}): the model step gave "
                      "nothing, and the set holds the offline decisions only; check --model, --base-url and the key "
                      "(metadata.located.checks has each error), then run again · 모델 확인이 모두 실패했습니다")
    if c["uncertain"] or c["unlocated"]:
        _say(console, f"next: review {result.files.get('review', 'the sheet')}, then `ragexam review apply --qa {out} "
                      "--out REVIEWED.jsonl`")


def print_locate_plan(plan: CallPlan, console: Console) -> None:
    """The dry run: the model's calls (a :class:`~ragexam.llm.batch.CallPlan`)."""
    d = plan.to_dict()
    _say(console, f"locate-evidence dry run: {fmt.plural(d['total'], 'span check')} ({d['calls']} to make, "
                  f"{d['cached']} cached, {d['shared']} shared); estimated tokens: {d['est_prompt_tokens']} prompt + "
                  f"{d['est_completion_tokens']} completion; estimated cost: {fmt.cost(d['est_cost_usd'])}. "
                  "Nothing was sent.")
