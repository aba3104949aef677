"""The generator's LLM checks: is the question real, does its evidence answer it, is the key right.

A candidate that passed every deterministic check goes through up to three stages of LLM calls, each
stage on the survivors of the one before (so a question rejected early costs no later call).  Every
call goes through ragexam's one LLM layer (cache, resume, concurrency, in-flight sharing) at
temperature 0 with the check model (``--judge-model``, default ``--model``) on the same endpoint:

==========  =====================================================================  =========================
stage       what is asked                                                          rejection reason
==========  =====================================================================  =========================
1 critic    the versioned critic rubric ``question_critic`` (a judge rubric,       ``not_a_content_question``
            ``prompt_files/critic.{en,ko}.json``): is it a standalone question
            about one thing its evidence states -- not about the text or format,
            not a different case than the evidence, not several questions?
            Levels 1-3, passes at 3.
1 ooc       out-of-corpus candidates: the retrieved sections judged on             ``answered_in_corpus``
            ``context_relevance`` (unchanged)
2 reader    the *reader*: the question and the evidence strings alone (never the   ``evidence_does_not_answer``
            key), answered in one sentence or with the decline sentence
            (``prompt_files/reader.{en,ko}.txt``)
3 agree     the reader's answer against the key: agreement when the normalised     ``answer_disagrees``
            key is inside it (or it, at least 4 characters, inside the key; in
            Korean also when every content morpheme of the key is in it);
            otherwise the judge's ``answer_correctness`` of the reader's answer
            with the key as the reference must reach ``agree_at`` (4 of 5:
            "correct")
3 faithful  an abstractive key (not inside its evidence): the judge's              ``answer_unsupported``
            ``faithfulness`` with the evidence as contexts must be 1
==========  =====================================================================  =========================

A check that could not be made (transport failure, unusable replies after the attempts) is
``check_failed``; one the spending limits left no room for is ``not_checked``.  Each stage can be
switched off (``skip_checks``: ``critic``, ``reader``, ``faithfulness``); the signature lists the
checks that ran.  What each stage found is kept in the question's verification record
(``critic``, ``reader``, ``answer_check``).
"""

from __future__ import annotations

from typing import Callable, Dict, List, Optional, Sequence, Tuple, Union

from ragexam.data.normalization import normalize
from ragexam.llm.batch import Outcome
from ragexam.metrics.judge import ItemScore, JudgeItem
from ragexam.metrics.judge.core import JudgeRun
from ragexam.questions import checks as C
from ragexam.questions.products import Candidate, DryRunStop, Json, Ledger, PassEstimate
from ragexam.questions.setup import Setup
from ragexam.metrics.judge.builtin.answer_correctness import METRIC as CORRECTNESS
from ragexam.metrics.judge.builtin.context_relevance import METRIC as RELEVANCE
from ragexam.metrics.judge.builtin.faithfulness import METRIC as FAITHFULNESS

__all__ = ["Checker", "llm_check", "CRITIC", "READER_FORMAT", "agreement"]

#: the name of the critic rubric (a custom judge metric)
CRITIC = "question_critic"
READER_FORMAT = "ragexam-reader-call/1"
#: a reader's answer inside the key counts as agreement from this many characters (normalised, no spaces)
MIN_INSIDE_CHARS = 4
READER_MAX_TOKENS = 256


def _squash(text: str) -> str:
    return "".join(normalize(text, ignore_punctuation=True).split()).lower()


def agreement(key: str, reader_answer: str, language: Optional[str] = None) -> str:
    """``declined`` (the reader's answer abstains), ``contained`` (the key inside the reader's answer, or the
    reader's answer -- at least :data:`MIN_INSIDE_CHARS` characters -- inside the key; both normalised,
    punctuation and spaces removed; in Korean also every term of the key -- its Kiwi content morphemes,
    :func:`.measure.terms` -- among the reader's, so an ending that differs, ``지급합니다`` for ``지급하며``,
    does not make a disagreement), else ``judge`` (answer_correctness decides)."""
    from ragexam.metrics.verdicts import is_abstention

    if is_abstention(reader_answer) is not None:
        return "declined"
    k, r = _squash(key), _squash(reader_answer)
    if k and k in r:
        return "contained"
    if len(r) >= MIN_INSIDE_CHARS and r in k:
        return "contained"
    if language == "ko":
        from ragexam.questions import measure as M

        kt, rt = M.terms([key, reader_answer], language)
        if kt and kt <= rt:
            return "contained"
    return "judge"


class Checker:
    """The LLM checks of one generation (see the module docstring)."""

    def __init__(self, setup: Setup) -> None:
        self.setup = setup
        self.enabled = set(setup.checks)

    def initial_rate(self) -> float:
        """LLM check calls expected per candidate before any is known: one per enabled stage, the third
        (agreement or faithfulness) for about half of them."""
        on = self.enabled
        return max(0.5, ("critic" in on) + ("reader" in on) + 0.5 * bool(on & {"reader", FAITHFULNESS.name}))

    # -- the stages ------------------------------------------------------------------------------------
    def run(self, cands: List[Candidate], ledger: Ledger, dry: bool) -> None:
        answerable = [x for x in cands if x.answerable]
        ooc = [x for x in cands if not x.answerable]
        critic = [x for x in answerable if "critic" in self.enabled]
        later = len(answerable) * (("reader" in self.enabled) * 2 + (FAITHFULNESS.name in self.enabled))
        self._stage1(critic, ooc, ledger, dry, later)
        alive = [x for x in answerable if x.rejection is None]
        if "reader" in self.enabled:
            self._read(alive, ledger, dry, later=len(alive) * (1 + (FAITHFULNESS.name in self.enabled)))
            alive = [x for x in alive if x.rejection is None]
        self._stage3(alive, ledger, dry)
        for x in cands:
            if x.rejection is None and x.answerable and not x.answer_check:
                x.rejection = C.Rejection("not_checked", "the answer check was not made (spending limit)")
            if x.rejection is None and not x.answerable and not x.ooc_check:
                x.rejection = C.Rejection("not_checked", "the out-of-corpus check was not made (spending limit)")

    def _stage1(self, critic: List[Candidate], ooc: List[Candidate], ledger: Ledger, dry: bool, later: int) -> None:
        g = self.setup
        c = g.config
        hits_by_cid: Dict[str, List[Tuple[str, float]]] = {}
        if ooc:
            hits = g.retriever.search([x.question for x in ooc], top_n=min(c.ooc_top, len(g.sections)))
            for x, h in zip(ooc, hits):
                hits_by_cid[x.cid] = h
                if not h:
                    x.ooc_check = {"retriever": c.retriever, "top": [], "max": None, "limit": c.ooc_max_relevance,
                                   "note": "no section shares a term with the question"}
            ooc = [x for x in ooc if hits_by_cid[x.cid]]
        jobs = {CRITIC: [JudgeItem(x.cid, x.question, None, tuple(loc.normalized for loc in x.located))
                         for x in critic],
                RELEVANCE.name: [JudgeItem(x.cid, x.question, None,
                                                tuple(g.by_sid[s].text for s, _ in hits_by_cid[x.cid])) for x in ooc]}
        run = self._judge(jobs, critic + ooc, ledger, dry, later, "critic")
        if run is None:
            return
        by_cid = {x.cid: x for x in critic + ooc}
        rubric = _label(run, CRITIC)
        for cid, s in run.items(CRITIC).items():
            x = by_cid[cid]
            if not s.judged:
                x.rejection = C.Rejection("check_failed", f"{CRITIC} unjudged: {s.reason}: {s.message}")
                continue
            x.critic = {"score": int(s.score), "pass": s.passed, "reasoning": str(s.details.get("reasoning", ""))[:300],
                        "rubric": rubric}
            if not s.passed:
                x.rejection = C.Rejection("not_a_content_question", f"the critic gave {int(s.score)} of 3: "
                                          f"{str(s.details.get('reasoning', ''))[:200]}")
        cr = _label(run, RELEVANCE.name)
        for cid, s in run.items(RELEVANCE.name).items():
            self._ooc_verdict(by_cid[cid], s, hits_by_cid[cid], cr)

    def _ooc_verdict(self, x: Candidate, s: ItemScore, hits: List[Tuple[str, float]], rubric: str) -> None:
        c = self.setup.config
        if not s.judged:
            x.rejection = C.Rejection("check_failed", f"{RELEVANCE.name} unjudged: {s.reason}: {s.message}")
            return
        scores = s.details.get("scores", [])
        x.ooc_check = {"retriever": c.retriever, "top": [{"section": sid, "relevance": sc}
                                                        for (sid, _), sc in zip(hits, scores)],
                       "max": max(scores) if scores else None, "limit": c.ooc_max_relevance, "rubric": rubric}
        if scores and max(scores) > c.ooc_max_relevance:
            top = [sid for (sid, _), sc in zip(hits, scores) if sc > c.ooc_max_relevance]
            x.rejection = C.Rejection("answered_in_corpus", f"section(s) {', '.join(top)} judged "
                                      f"{max(scores)} of 5 (limit {c.ooc_max_relevance})")

    def _stage3(self, alive: List[Candidate], ledger: Ledger, dry: bool) -> None:
        agree = [x for x in alive if x.reader.get("agreement") == "judge"]
        faithful = [x for x in alive if not x.answer_check and FAITHFULNESS.name in self.enabled]
        jobs = {CORRECTNESS.name: [JudgeItem(x.cid, x.question, x.reader["answer"], (), x.answer) for x in agree],
                FAITHFULNESS.name: [JudgeItem(x.cid, x.question, x.answer, tuple(loc.normalized for loc in x.located))
                                 for x in faithful]}
        run = self._judge(jobs, agree + faithful, ledger, dry, 0, "answer")
        if run is None:
            return
        by_cid = {x.cid: x for x in alive}
        ac = _label(run, CORRECTNESS.name)
        for cid, s in run.items(CORRECTNESS.name).items():
            x = by_cid[cid]
            if not s.judged:
                x.rejection = C.Rejection("check_failed", f"{CORRECTNESS.name} unjudged: {s.reason}: {s.message}")
                continue
            x.reader.update({"score": int(s.score), "verdict": s.label, "rubric": ac})
            if s.score < self.setup.config.agree_at:
                x.rejection = C.Rejection("answer_disagrees", f"the reader answered {x.reader['answer'][:80]!r}; "
                                          f"{CORRECTNESS.name} against the key {int(s.score)} of 5 ({s.label}; "
                                          f"needs {self.setup.config.agree_at})")
        fa = _label(run, FAITHFULNESS.name)
        for cid, s in run.items(FAITHFULNESS.name).items():
            x = by_cid[cid]
            if x.rejection is not None:
                continue
            if s.judged:
                n_claims = s.details.get("n_claims", 0)
                x.answer_check = {"method": "judge", "metric": FAITHFULNESS.name, "score": s.score, "claims": n_claims,
                                  "supported": s.details.get("n_supported"), "rubric": fa}
                if s.score < 1.0:
                    bad = [cl["claim"] for cl in s.details.get("claims", []) if not cl.get("supported")]
                    x.rejection = C.Rejection("answer_unsupported", f"{n_claims - s.details.get('n_supported', 0)} of "
                                              f"{n_claims} claims unsupported: {'; '.join(bad)[:200]}")
            elif s.reason == "no_claims":
                x.rejection = C.Rejection("answer_unsupported", "the judge found no factual claim in the answer")
            else:
                x.rejection = C.Rejection("check_failed", f"{FAITHFULNESS.name} unjudged: {s.reason}: {s.message}")
        for x in alive:
            if x.rejection is None and not x.answer_check and FAITHFULNESS.name not in self.enabled:
                x.answer_check = {"method": "skipped"}

    # -- judge calls ----------------------------------------------------------------------------------
    def _judge(self, jobs: Dict[str, List[JudgeItem]], cands: Sequence[Candidate], ledger: Ledger, dry: bool,
               later: int, what: str) -> Optional[JudgeRun]:
        """Run the judge on ``jobs`` (empty metrics dropped) within the spending limits; ``None`` when there is
        nothing to run or no room (the candidates are then ``not_checked``)."""
        g = self.setup
        jobs = {m: v for m, v in jobs.items() if v}
        if not jobs:
            return None
        plan = g.judge.plan(None, jobs)
        if dry:
            if plan.calls:
                raise DryRunStop(PassEstimate(ledger.pass_no, 0, 0, plan.calls + later, later == 0,
                                              plan.est_prompt_tokens, plan.est_completion_tokens))
        elif g.config.max_calls is not None or g.config.budget is not None:
            jobs = self._fit(jobs, plan.calls, plan.est_cost, ledger)
            kept = {i.item_id for v in jobs.values() for i in v}
            for x in cands:
                if x.cid not in kept and x.rejection is None:
                    x.rejection = C.Rejection("not_checked", f"the {what} check was not made (spending limit)")
            if not jobs:
                return None

        def progress(done: int, total: int) -> None:
            if g.progress is not None:
                g.progress(f"pass {ledger.pass_no}: {what} checks", done, total)

        run = g.judge.run(None, jobs, progress=progress)
        if not dry:
            ledger.add_usage("checks", run.usage)
        return run

    def _fit(self, jobs: Dict[str, List[JudgeItem]], calls: int, est_cost: Cost,
             ledger: Ledger) -> Dict[str, List[JudgeItem]]:
        """The items of ``jobs`` (in order) whose calls fit the spending limits; sets ``ledger.stop`` when cut."""
        allowed = self._room(calls, est_cost, ledger)
        if allowed >= calls:
            return jobs
        out: Dict[str, List[JudgeItem]] = {}
        left = allowed
        for m, items in jobs.items():
            keep = items[:max(0, left)]
            left -= len(keep)
            if keep:
                out[m] = keep
        return out

    def _room(self, calls: int, est_cost: Cost, ledger: Ledger) -> int:
        c = self.setup.config
        if calls == 0:
            return 0
        room_calls = None if c.max_calls is None else c.max_calls - ledger.calls_made
        room_usd = None if c.budget is None else c.budget - ledger.spent_usd
        per_call_usd = (est_cost / calls) if isinstance(est_cost, float) and calls else 0.0
        allowed = calls
        if room_calls is not None:
            allowed = min(allowed, max(0, int(room_calls)))
        if room_usd is not None and per_call_usd > 0:
            allowed = min(allowed, max(0, int(room_usd // per_call_usd)))
        if allowed < calls:
            ledger.stop = f"max_calls ({c.max_calls}) reached" if room_calls is not None and allowed == max(
                0, int(room_calls)) else f"budget (${c.budget:g}) reached"
        return allowed

    # -- the reader ------------------------------------------------------------------------------------
    def _read(self, cands: List[Candidate], ledger: Ledger, dry: bool, later: int) -> None:
        """Stage 2: the reader answers each question from its evidence alone; the agreement is decided
        (``declined`` rejects, ``contained`` agrees, ``judge`` waits for stage 3)."""
        from ragexam.llm.batch import Store, run_calls
        from ragexam.llm.cost import cost_usd, estimate_tokens

        g = self.setup
        if not cands:
            return
        tasks = [(self.reader_key(m), (x.cid, m)) for x in cands for m in [self.reader_messages(x)]]
        hits = g.judge.cache.get_many(k for k, _ in tasks) if g.judge.cache is not None else {}
        todo = [(k, t) for k, t in tasks if k not in hits or hits[k].get("status") == "failed"]
        if todo:
            prompt = sum(estimate_tokens("".join(m["content"] for m in t[1])) for _, t in todo)
            completion = 60 * len(todo)
            if dry:
                raise DryRunStop(PassEstimate(ledger.pass_no, 0, 0, len(todo) + later, later == 0, prompt, completion))
            if g.config.max_calls is not None or g.config.budget is not None:
                price = g.judge.price
                est = cost_usd(prompt, completion, price) if price is not None else "unknown"
                allowed = self._room(len(todo), est, ledger)
                if allowed < len(todo):
                    cut = {t[0] for _, t in todo[allowed:]}
                    for x in cands:
                        if x.cid in cut:
                            x.rejection = C.Rejection("not_checked", "the reader check was not made (spending limit)")
                    tasks = [(k, t) for k, t in tasks if t[0] not in cut]

        def progress(done: int, total: int) -> None:
            if g.progress is not None:
                g.progress(f"pass {ledger.pass_no}: reader", done, total)

        client = g.judge.client
        batch = run_calls(tasks, self._reader_call, store=Store(g.judge.cache, "reader", client.model, client.endpoint),
                          concurrency=g.judge.concurrency, usable=lambda v: v.get("status") != "failed", redact=client.redact_value,
                          progress=progress, claim_wait=g.judge.settings.claim_wait_seconds)
        if not dry:
            ledger.add_usage("checks", batch.usage.to_dict(g.judge.price))
        by_cid = {x.cid: x for x in cands}
        for key, (cid, _) in tasks:
            self._reader_verdict(by_cid[cid], batch.values[key])

    def _reader_verdict(self, x: Candidate, v: Dict[str, Json]) -> None:
        if v.get("status") != "ok":
            x.rejection = C.Rejection("check_failed", f"reader: {v.get('reason')}: {v.get('message')}")
            return
        answer = v["answer"]
        how = agreement(x.answer, answer, self.setup.language)
        x.reader = {"answer": answer[:500], "agreement": how, "prompt": self.setup.reader.label}
        if how == "declined":
            x.rejection = C.Rejection("evidence_does_not_answer", f"the reader, given only the evidence, replied "
                                      f"{answer[:120]!r}")

    def reader_messages(self, x: Candidate) -> List[Dict[str, str]]:
        from ragexam.questions.prompts import DECLINE

        g = self.setup
        return g.reader.messages(x.question, [loc.text for loc in x.located], language=g.language,
                                 decline=DECLINE[g.language])

    def reader_key(self, messages: List[Dict[str, str]]) -> str:
        from ragexam.llm.cache import request_key

        j = self.setup.judge
        return request_key({"format": READER_FORMAT, "kind": "reader", "model": j.model, "endpoint": j.endpoint,
                            "messages": messages, "temperature": 0.0, "max_tokens": READER_MAX_TOKENS,
                            "seed": j.seed})

    def _reader_call(self, task: Tuple[str, List[Dict[str, str]]]) -> Outcome:
        from ragexam.llm.attempts import TEXT_REFUSAL, Reading, ask
        from ragexam.metrics.judge.replies import ReplyError

        _, messages = task
        j = self.setup.judge
        reading = Reading(_reader_text, (ReplyError,), self.setup.reader_feedback, refusal=TEXT_REFUSAL)
        got = ask(j.client, messages, reading, max_attempts=self.setup.config.max_attempts,
                  max_tokens=READER_MAX_TOKENS, temperature=0.0, seed=j.seed)
        value: Dict[str, Json] = {"attempts": got.attempts, "requests": got.requests, "errors": got.errors}
        if got.failed is not None:
            value.update(status="failed", reason=got.failed.kind, message=got.failed.message)
        elif got.parsed:
            value.update(status="ok", answer=got.value)
        else:
            value.update(status="invalid", reason=got.reason, message=got.message, reply=got.last[:500])
        return Outcome(value, store=got.failed is None, requests=got.requests, replies=got.attempts,
                       prompt_tokens=got.prompt_tokens, completion_tokens=got.completion_tokens)


def _reader_text(content: Optional[str]) -> str:
    """The reader's reply: its text without Markdown emphasis, fences or an ``Answer:`` lead-in; empty is a
    :class:`~ragexam.metrics.judge.replies.ReplyError`."""
    from ragexam.metrics.judge.replies import ReplyError
    import re

    text = re.sub(r"<think>.*?</think>", " ", content or "", flags=re.S)
    text = text.replace("```", " ").replace("**", "").strip()
    text = re.sub(r"^(?:##\s*)?(?:답변|정답|Answer)\s*[:：]?\s*", "", text, flags=re.I).strip()
    if not text:
        raise ReplyError("invalid_reply", "the reply is empty; expected a one-sentence answer or the decline sentence")
    return text


def _label(run: JudgeRun, metric: str) -> str:
    r = run.rubrics.get(metric, {})
    return f"{r.get('name')}@{r.get('sha')}"


#: what a feedback function looks like (``kind``, ``message`` -> the follow-up text)
Feedback = Callable[[str, str], str]
#: an estimated cost: USD, or ``"unknown"`` without a price
Cost = Union[float, str]


def llm_check(setup: Setup, live: List[Candidate], ledger: Ledger, *, dry: bool) -> None:
    """The *llm-check* stage: the critic, the reader and the answer checks on the candidates the deterministic
    checks left alive (rejections set in place; see the module docstring)."""
    Checker(setup).run(live, ledger, dry)
