"""A model confirms located spans (``ragexam locate-evidence --model``), through the one LLM layer.

For every question the locator searched, the model is asked of the span of each document the answer needs -- and,
when the offline confidence is below the threshold, of its runner-up too -- *does this passage support this
answer?* (:data:`PROMPTS`; one call per span, temperature 0, the reply ``{"supports": "yes" | "partly" | "no"}``
by JSON schema).  The question's verdict:

* ``confirmed``: every needed document's span (or, when the span was refused, its runner-up, which then becomes
  the span) got ``yes``: the question is *located*, method ``offline+llm``, whatever the offline confidence;
* ``refuted``: some needed document has no span the model said ``yes`` to: the question is *uncertain* (never
  written as confident), the record says what the model answered;
* ``failed``: a call failed (after the transport's retries) or its reply was invalid: the offline decision stands,
  and the record and the notes say so -- a failure is counted, never read as a verdict.

Calls go through :func:`ragexam.llm.batch.run_calls`: cached by (model, endpoint, messages, settings), so a rerun
makes no calls; :func:`plan` is the dry run (calls, cached, tokens, cost), nothing sent.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple

from ragexam.data.schema import Question
from ragexam.questions.locate import Location, LocateSettings

if TYPE_CHECKING:  # pragma: no cover
    from ragexam.llm.batch import CallPlan
    from ragexam.llm.settings import LLMSettings

__all__ = ["confirm", "plan", "PROMPTS", "SCHEMA", "FORMAT", "parse_reply"]

FORMAT = "ragexam-locate-check/1"
SCHEMA = {"type": "object", "properties": {"supports": {"type": "string", "enum": ["yes", "partly", "no"]}},
          "required": ["supports"], "additionalProperties": False}
#: the instruction, by language (the corpus's)
PROMPTS = {
    "en": ("You check whether a passage supports the answer to a question. Reply with one JSON object "
           '{"supports": "yes" | "partly" | "no"}: "yes" when the passage states what the answer says (in other '
           'words is fine), "partly" when it states only part of it, "no" otherwise. Judge only by the passage.'),
    "ko": ("문단이 질문의 답을 뒷받침하는지 판정합니다. JSON 객체 하나로 답하세요: {\"supports\": \"yes\" | \"partly\" | "
           "\"no\"}. 문단이 답의 내용을 말하고 있으면(표현이 달라도) \"yes\", 일부만 말하면 \"partly\", 아니면 \"no\"입니다. "
           "문단만 보고 판정하세요."),
}
_USER = {"en": "Question: {q}\nAnswer: {a}\nPassage: {p}\n\nJSON:", "ko": "질문: {q}\n답: {a}\n문단: {p}\n\nJSON:"}
_MAX_TOKENS = 32


def parse_reply(content: Optional[str]) -> str:
    """``yes``, ``partly`` or ``no`` from a reply; ``ValueError`` naming what is wrong."""
    from ragexam.llm.replies import extract_json_object

    value = extract_json_object(content).get("supports")
    value = value.strip().lower() if isinstance(value, str) else value
    if value not in ("yes", "partly", "no"):
        raise ValueError(f'"supports" is {value!r}; expected "yes", "partly" or "no"')
    return value


def _messages(lang: str, question: str, answer: str, passage: str) -> List[Dict[str, str]]:
    lang = lang if lang in PROMPTS else "en"
    return [{"role": "system", "content": PROMPTS[lang]},
            {"role": "user", "content": _USER[lang].format(q=question, a=answer, p=passage)}]


def _tasks(items: Sequence[Tuple[Question, List[Location]]], settings: LocateSettings, lang: str, llm: LLMSettings,
           endpoint: str) -> List[Tuple[str, Tuple[str, int, str, List[Dict[str, str]]]]]:
    """``(cache key, (query_id, location index, "best" | "runner_up", messages))`` of every call."""
    from ragexam.llm.cache import request_key

    out = []
    for q, locs in items:
        answer = q.ground_truth or ""
        for i, loc in enumerate(locs):
            if not loc.needed or loc.best is None:
                continue
            which = [("best", loc.best)]
            if loc.confidence < settings.threshold and loc.runner_up is not None:
                which.append(("runner_up", loc.runner_up))
            for name, scored in which:
                m = _messages(lang, q.question, answer, scored.span.text)
                key = request_key({"format": FORMAT, "kind": "locate-check", "model": llm.model, "endpoint": endpoint,
                                   "messages": m, "temperature": 0, "max_tokens": _MAX_TOKENS, "seed": llm.seed})
                out.append((key, (q.query_id, i, name, m)))
    return out


def plan(llm: LLMSettings, items: Sequence[Tuple[Question, List[Location]]], settings: LocateSettings, lang: str
         ) -> CallPlan:
    """The dry run: the calls :func:`confirm` would make (:class:`~ragexam.llm.batch.CallPlan`), nothing sent."""
    from ragexam.llm.batch import PlannedCall, plan_calls
    from ragexam.llm.client import LLMClient
    from ragexam.llm.cost import price_for

    client = LLMClient(llm)
    tasks = _tasks(items, settings, lang, llm, client.endpoint)
    calls = [PlannedCall(key, "\n".join(m["content"] for m in msgs), _MAX_TOKENS, name)
             for key, (_, _, name, msgs) in tasks]
    return plan_calls(calls, llm.open_cache(), usable=lambda v: v.get("status") == "ok",
                      price=price_for(llm.model, client.endpoint, llm.price))


def _verdict(loc: Location, got: Dict[str, Dict[str, Any]]) -> Tuple[str, Location]:
    """One location's verdict from its calls' values (``got``: ``best`` / ``runner_up`` -> value)."""
    best = got.get("best", {})
    if best.get("status") != "ok":
        return "failed", loc
    if best["value"] == "yes":
        return "confirmed", loc
    ru = got.get("runner_up")
    if ru is not None and ru.get("status") == "ok" and ru["value"] == "yes":
        return "confirmed", replace(loc, best=loc.runner_up, runner_up=loc.best, margin=-loc.margin)
    if ru is not None and ru.get("status") != "ok":
        return "failed", loc
    return "refuted", loc


def confirm(llm: LLMSettings, items: Sequence[Tuple[Question, List[Location]]], settings: LocateSettings, *,
            lang: str = "ko"
            ) -> Tuple[Dict[str, Tuple[List[Location], str, str, List[Dict[str, Any]]]], Dict[str, Any]]:
    """Ask the model (module docstring).  Returns ``({query_id: (locations, verdict, method, checks)}, usage)``:
    the locations with a refused span replaced by its confirmed runner-up, the question's verdict (``confirmed``,
    ``refuted``, ``failed``), its method and one check record per call."""
    from ragexam.llm.batch import Outcome, Store, run_calls
    from ragexam.llm.client import LLMClient
    from ragexam.llm.cost import price_for
    from ragexam.llm.transport import CallFailed

    client = LLMClient(llm)
    tasks = _tasks(items, settings, lang, llm, client.endpoint)

    def one(task: Tuple[str, int, str, List[Dict[str, str]]]) -> Outcome:
        _, _, _, messages = task
        try:
            reply = client.complete(messages, max_tokens=_MAX_TOKENS, temperature=0, seed=llm.seed, schema=SCHEMA,
                                    schema_name="support")
        except CallFailed as err:
            return Outcome({"status": "failed", "reason": f"{err.kind}: {err.message}"}, store=False,
                           requests=err.requests)
        common = dict(requests=reply.requests, replies=1, prompt_tokens=reply.prompt_tokens,
                      completion_tokens=reply.completion_tokens)
        try:
            return Outcome({"status": "ok", "value": parse_reply(reply.content)}, **common)
        except ValueError as err:
            return Outcome({"status": "failed", "reason": f"invalid_reply: {err}"}, store=False, **common)

    batch = run_calls(tasks, one, store=Store(llm.open_cache(), "locate-check", llm.model, client.endpoint),
                      concurrency=llm.concurrency, usable=lambda v: v.get("status") == "ok", redact=client.redact_value, claim_wait=llm.claim_wait_seconds)
    got: Dict[Tuple[str, int], Dict[str, Dict[str, Any]]] = {}
    checks: Dict[str, List[Dict[str, Any]]] = {}
    for key, (qid, i, name, _) in tasks:
        value = batch.values[key]
        got.setdefault((qid, i), {})[name] = value
        checks.setdefault(qid, []).append({"document": i + 1, "span": name, "model": llm.model,
                                           **{k: value[k] for k in ("status", "value", "reason") if k in value}})
    out: Dict[str, Tuple[List[Location], str, str, List[Dict[str, Any]]]] = {}
    for q, locs in items:
        verdicts, new = [], []
        for i, loc in enumerate(locs):
            v, loc2 = _verdict(loc, got[(q.query_id, i)]) if (q.query_id, i) in got else ("", loc)
            verdicts.append(v)
            new.append(loc2)
        judged = [v for v in verdicts if v]
        verdict = ("failed" if "failed" in judged else "refuted" if "refuted" in judged else
                   "confirmed" if judged else "failed")
        out[q.query_id] = (new, verdict, "offline+llm" if verdict != "failed" else "offline",
                           checks.get(q.query_id, []))
    usage = batch.usage.to_dict(price_for(llm.model, client.endpoint, llm.price))
    usage["model"] = llm.model
    return out, usage
