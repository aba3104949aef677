"""Generating answers from a run's retrieved chunks with an OpenAI-compatible chat model.

For each pipeline of a ``ragexam run --out DIR`` folder and each question, the generator is
given the question and the pipeline's top ``contexts`` chunks (ids from ``per_question.csv`` ``top_ids``,
texts from the run's ``chunks.jsonl``, :func:`ragexam.analysis.answers.files.run_contexts`) through a prompt
template, and its reply is the answer.  Records are ``AnswerRecord`` s (``query_id``,
``pipeline``, ``answer``, ``contexts``, ``context_ids``, ``k``, ``model``, ``template_sha``) and
are written as JSONL by :func:`ragexam.analysis.answers.files.write_answers`.

Template
--------
A text with the placeholders ``{question}`` and ``{contexts}`` (both required; nothing else is
substituted, so other braces are left alone).  ``{contexts}`` becomes ``[1] text``, ``[2] text``,
... separated by blank lines.  The default (:data:`DEFAULT_TEMPLATES`, Korean or English by the
questions' Hangul share) asks for an answer from the documents only, and for the exact sentence
"문서에서 찾을 수 없습니다." / "I cannot find this in the documents." when they do not contain it.

Calls go through ragexam's LLM layer (:func:`ragexam.llm.batch.run_calls`), with the same cache
as the judge (kind ``answer``; key: model, endpoint, messages, temperature, max_tokens, seed), so
a rerun or a resumed run repeats no finished call; two tasks with the same prompt (pipelines that
retrieved the same chunks) share one call, and so do two processes generating the same answer at
the same time.  A call that fails after its retries gives a record with ``answer: null`` and
``error`` (not cached).  Answers are stored and written redacted (:mod:`ragexam.llm.redact`).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

from ragexam.types import ExecutorLike
from ragexam.analysis.answers.files import AnswerRecord, run_contexts
from ragexam.errors import InputError, integer_in
from ragexam.storage.runfolder import RunData
from ragexam.storage.summary import DEFAULT_MISS_K, TOP_IDS

__all__ = ["DEFAULT_TEMPLATES", "SYSTEM_PROMPTS", "load_template", "render_template", "AnswerTask",
           "answer_tasks", "plan_answers", "answer_questions"]

DEFAULT_TEMPLATES = {
    "ko": ("다음 문서만 근거로 질문에 답하세요. 문서에 답이 없으면 \"문서에서 찾을 수 없습니다.\"라고만 답하세요.\n\n"
           "## 문서\n{contexts}\n\n## 질문\n{question}\n\n## 답변\n"),
    "en": ("Answer the question using only the documents below. If they do not contain the answer, reply "
           "only \"I cannot find this in the documents.\"\n\n## Documents\n{contexts}\n\n## Question\n{question}\n\n"
           "## Answer\n"),
}
SYSTEM_PROMPTS = {
    "ko": "당신은 회사 문서를 근거로 직원의 질문에 짧고 정확하게 답하는 도우미입니다.",
    "en": "You answer questions briefly and accurately, based only on the documents you are given.",
}
ANSWER_FORMAT = "ragexam-answer/1"
_PH = re.compile(r"\{(question|contexts)\}")


def load_template(path: Union[str, Path]) -> str:
    """Read a template file (UTF-8) and check that it has ``{question}`` and ``{contexts}``."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as err:
        raise InputError(f"cannot read the template: {err.strerror or err}", source=str(p), field="template") from None
    except UnicodeDecodeError:
        raise InputError("the template is not valid UTF-8", source=str(p), field="template") from None
    missing = [ph for ph in ("{question}", "{contexts}") if ph not in text]
    if missing:
        raise InputError(f"the template lacks {' and '.join(missing)}; expected both placeholders",
                         source=str(p), field="template")
    return text


def render_template(template: str, question: str, contexts: Sequence[str]) -> str:
    """Fill ``{question}`` and ``{contexts}`` in one pass (inputs are not re-scanned)."""
    ctx = "\n\n".join(f"[{i}] {c}" for i, c in enumerate(contexts, 1))
    values = {"question": question, "contexts": ctx}
    return _PH.sub(lambda m: values[m.group(1)], template)


@dataclass(frozen=True)
class AnswerTask:
    pipeline: str
    query_id: str
    messages: Tuple[Tuple[str, str], ...]
    context_ids: Tuple[str, ...]
    contexts: Tuple[str, ...]
    key: str


def answer_tasks(qa, run: RunData, corpus, *, model: str, endpoint: str, pipelines: Optional[Sequence[str]] = None,
                 contexts: int = DEFAULT_MISS_K, template: Optional[str] = None, language: str = "auto",
                 temperature: float = 0.0, max_tokens: int = 512, seed: Optional[int] = None
                 ) -> Tuple[List[AnswerTask], str, str]:
    """The generation tasks (one per pipeline x question of the run that is in ``qa``, each given its top
    ``contexts`` chunks), the template used and its SHA-256 (16 hex)."""
    from ragexam.llm.cache import request_key
    from ragexam.metrics.judge.prompts import detect_language

    integer_in(contexts, 1, TOP_IDS, source="--contexts", field="contexts",
               what=f"the number of top chunks given to the generator (per_question.csv keeps the top {TOP_IDS} "
                    "chunk ids)")
    if language == "auto":
        language = detect_language([q.question for q in qa])
    if language not in SYSTEM_PROMPTS:
        raise InputError(f"received {language!r}; expected auto, ko or en", source="answer", field="language")
    tmpl = template if template is not None else DEFAULT_TEMPLATES[language]
    sha = hashlib.sha256(tmpl.encode("utf-8")).hexdigest()[:16]
    names = list(pipelines) if pipelines else run.pipelines
    for p in names:
        if not run.has_pipeline(p):
            raise InputError(f"no pipeline {p!r} in the run; it has: {', '.join(run.pipelines)}", source=run.source,
                             field="pipeline")
    tasks: List[AnswerTask] = []
    for p in names:
        ctx = run_contexts(run, p, contexts, corpus=corpus)
        for q in qa:
            if q.query_id not in ctx:
                continue
            pairs = ctx[q.query_id]
            texts = tuple(t for _, t in pairs)
            messages = (("system", SYSTEM_PROMPTS[language]), ("user", render_template(tmpl, q.question, texts)))
            key = request_key({"format": ANSWER_FORMAT, "kind": "answer", "model": model, "endpoint": endpoint,
                               "messages": [list(m) for m in messages], "temperature": temperature,
                               "max_tokens": max_tokens, "seed": seed})
            tasks.append(AnswerTask(p, q.query_id, messages, tuple(c for c, _ in pairs), texts, key))
    return tasks, tmpl, sha


def plan_answers(tasks: Sequence[AnswerTask], cache) -> Dict[str, Any]:
    """Calls a generation run would make (cached ones excluded) and their estimated tokens
    (:func:`ragexam.llm.batch.plan_calls`)."""
    from ragexam.llm.batch import PlannedCall, plan_calls
    from ragexam.llm.cost import COMPLETION_ALLOWANCE

    plan = plan_calls((PlannedCall(t.key, "".join(c for _, c in t.messages), COMPLETION_ALLOWANCE["answer"])
                       for t in tasks), cache)
    return {"total": plan.total, "cached": plan.cached, "shared": plan.shared, "calls": plan.calls,
            "est_prompt_tokens": plan.est_prompt_tokens, "est_completion_tokens": plan.est_completion_tokens}


def answer_questions(tasks: Sequence[AnswerTask], client, *, cache=None, contexts: int = DEFAULT_MISS_K,
                     template_sha: str = "",
                     temperature: float = 0.0, max_tokens: int = 512, seed: Optional[int] = None,
                     concurrency: int = 4, progress: Optional[Callable[[int, int], None]] = None,
                     claim_wait: Optional[float] = None, executor: ExecutorLike = None
                     ) -> Tuple[List[AnswerRecord], Dict[str, Any]]:
    """Run the tasks through ``client`` (a :class:`~ragexam.llm.client.LLMClient`) and ``cache``
    (an :class:`~ragexam.llm.cache.LLMCache` or ``None``); returns the records (task order) and the
    usage of this run (:class:`~ragexam.llm.cost.Usage` as a dict).  With an ``executor``
    (:mod:`ragexam.exec`, e.g. Ray) the calls run on its actors, at most ``concurrency`` at once across them."""
    from ragexam.llm.batch import Outcome, Store, run_calls
    from ragexam.llm.transport import CallFailed

    def one(t: AnswerTask) -> Outcome:
        try:
            reply = client.complete([{"role": r, "content": c} for r, c in t.messages], max_tokens=max_tokens,
                                    temperature=temperature, seed=seed)
        except CallFailed as err:
            return Outcome({"answer": None, "error": f"{err.kind}: {err.message}", "requests": err.requests,
                            "prompt_tokens": 0, "completion_tokens": 0}, store=False, requests=err.requests)
        text = reply.content if reply.content is not None else reply.refusal
        value = {"answer": text.strip() if text else None, "error": None if text else "empty reply",
                 "finish_reason": reply.finish_reason, "requests": reply.requests,
                 "prompt_tokens": reply.prompt_tokens or 0, "completion_tokens": reply.completion_tokens or 0}
        return Outcome(value, store=bool(text), requests=reply.requests, replies=1,
                       prompt_tokens=reply.prompt_tokens, completion_tokens=reply.completion_tokens)

    wait = claim_wait if claim_wait is not None else client.settings.claim_wait_seconds
    limit = None
    if executor is not None:
        from ragexam.exec.calls import RateLimit

        limit = RateLimit(concurrency=concurrency, name=f"answer:{client.endpoint}")
    batch = run_calls(((t.key, t) for t in tasks), one, store=Store(cache, "answer", client.model, client.endpoint),
                      concurrency=concurrency, redact=client.redact_value, progress=progress, claim_wait=wait, executor=executor, limit=limit)
    records = []
    for t in tasks:
        v = batch.values[t.key]
        meta: Dict[str, Any] = {"model": client.model, "template_sha": template_sha}
        if v.get("finish_reason") == "length":
            meta["truncated"] = True
        records.append(AnswerRecord(t.query_id, v["answer"], t.pipeline, t.contexts, t.context_ids, contexts,
                                    v.get("error"), None, meta))
    return records, batch.usage.to_dict()
