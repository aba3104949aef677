"""The *ask* stage: a pass's generation calls, within the spending limits, through ragexam's one LLM layer.

All calls of a pass go through :func:`ragexam.llm.batch.run_calls` (cache, resume, concurrency, in-flight
sharing).  A reply that breaks the contract gets feedback and another attempt (``max_attempts`` replies in all).
``max_calls`` and ``budget`` count the calls this run makes, generation and checks (cached results are free): a call
is planned only when it and its expected checks fit.  ``max_generation_calls`` counts generation calls only.  In a
dry run nothing is sent: the first pass that would call the endpoint raises
:class:`~ragexam.questions.products.DryRunStop` with its estimate.
"""

from __future__ import annotations

import math
from typing import Dict, List, Mapping, Tuple

from ragexam import fmt
from ragexam.llm.batch import Outcome
from ragexam.metrics.judge.builtin.context_relevance import METRIC as RELEVANCE
from ragexam.metrics.judge.builtin.faithfulness import METRIC as FAITHFULNESS
from ragexam.questions.products import DryRunStop, Json, Ledger, PassEstimate, Reply, Task
from ragexam.questions.setup import Setup

__all__ = ["ask", "fit", "call", "judge_estimate", "TOKENS_PER_QUESTION"]

#: completion-token allowance per requested question (dry-run estimate)
TOKENS_PER_QUESTION = 160


def _usable(v: Dict[str, Json]) -> bool:
    return v.get("status") in ("ok", "invalid")


def ask(setup: Setup, tasks: List[Task], ledger: Ledger, *, dry: bool) -> Dict[str, Reply]:
    """The reply of every task, by cache key; in a dry run the cached ones, or :class:`DryRunStop` when a task
    would call the endpoint."""
    from ragexam.llm.batch import Store, run_calls

    if dry:
        hits = setup.cache.get_many(t.key for t in tasks) if setup.cache is not None else {}
        hits = {k: v for k, v in hits.items() if _usable(v)}
        missing = [t for t in tasks if t.key not in hits]
        if missing:
            raise DryRunStop(_estimate(setup, tasks, missing, ledger))
        return {k: Reply.from_value(v) for k, v in hits.items()}

    def progress(done: int, total: int) -> None:
        if setup.progress is not None:
            setup.progress(f"pass {ledger.pass_no}: questions", done, total)

    client = setup.client
    batch = run_calls(((t.key, t) for t in tasks), lambda t: call(setup, t),
                      store=Store(setup.cache, "questions", client.model, client.endpoint),
                      concurrency=setup.settings.concurrency, usable=_usable, redact=client.redact_value, progress=progress,
                      claim_wait=setup.settings.claim_wait_seconds)
    ledger.add_usage("generation", batch.usage.to_dict(setup.price))
    return {k: Reply.from_value(v) for k, v in batch.values.items()}


def _estimate(setup: Setup, tasks: List[Task], missing: List[Task], ledger: Ledger) -> PassEstimate:
    from ragexam.llm.cost import estimate_tokens

    distinct = list({t.key: t for t in missing}.values())
    prompt = sum(estimate_tokens("".join(m["content"] for m in t.messages)) for t in distinct)
    completion = TOKENS_PER_QUESTION * setup.per_call * len(distinct)
    checks = math.ceil(setup.per_call * len(tasks) * ledger.check_share())
    jp, jc = judge_estimate(setup, checks)
    return PassEstimate(ledger.pass_no, len(distinct), len(tasks) - len(missing), checks, False, prompt + jp,
                        completion + jc)


def fit(setup: Setup, tasks: List[Task], ledger: Ledger, *, dry: bool) -> List[Task]:
    """The tasks that fit ``max_calls``/``budget``: cached tasks are free; an uncached call is planned when it
    and its expected LLM checks (``per_call`` x the share of candidates that needed one so far, 0.5 before
    any is known) fit -- the first uncached call of a pass only needs room for itself.  Checks that no
    longer fit are not made (``not_checked``), so the limits are never exceeded.  ``max_generation_calls`` counts
    the uncached generation calls alone (in a dry run too).  Sets ``ledger.stop`` and a note when tasks are left
    out."""
    c = setup.config
    if c.max_calls is None and c.budget is None and c.max_generation_calls is None:
        return tasks
    hits = setup.cache.get_many(t.key for t in tasks) if setup.cache is not None else {}
    out = _fit_generation(setup, tasks, hits, ledger)
    if not dry:
        out = _fit_spending(setup, out, hits, ledger)
    if len(out) < len(tasks):
        ledger.notes.add(f"pass {ledger.pass_no}: {len(tasks) - len(out)} of {len(tasks)} planned calls left out "
                         f"({ledger.stop})")
    return out


def _fit_generation(setup: Setup, tasks: List[Task], hits: Mapping[str, Json], ledger: Ledger) -> List[Task]:
    """The tasks within ``max_generation_calls`` (cached ones are free)."""
    limit = setup.config.max_generation_calls
    if limit is None:
        return tasks
    room = limit - ledger.generation_calls_made
    out: List[Task] = []
    for t in tasks:
        if t.key not in hits:
            if room <= 0:
                ledger.stop = f"max_generation_calls ({limit}) reached"
                break
            room -= 1
        out.append(t)
    return out


def _fit_spending(setup: Setup, tasks: List[Task], hits: Mapping[str, Json], ledger: Ledger) -> List[Task]:
    """The tasks within ``max_calls`` and ``budget`` (see :func:`fit`)."""
    c = setup.config
    if c.max_calls is None and c.budget is None:
        return tasks
    from ragexam.llm.cost import cost_usd, estimate_tokens

    out: List[Task] = []
    calls = ledger.calls_made
    spent = ledger.spent_usd
    price = setup.price_pair()
    check_share = ledger.check_share()
    for t in tasks:
        if t.key in hits:
            out.append(t)
            continue
        need_calls = 1 + setup.per_call * check_share
        est = 0.0
        if price is not None:
            p = estimate_tokens("".join(m["content"] for m in t.messages))
            est = cost_usd(p, TOKENS_PER_QUESTION * setup.per_call, price) * (1 + check_share)
        first = not any(x.key not in hits for x in out)  # the pass's first call only needs room for itself
        if c.max_calls is not None and (calls + (1 if first else need_calls) > c.max_calls + 1e-9):
            ledger.stop = f"max_calls ({c.max_calls}) reached"
            break
        if c.budget is not None and spent + (est / (1 + check_share) if first else est) > c.budget + 1e-12:
            ledger.stop = f"budget (${c.budget:g}) reached"
            break
        calls += need_calls
        spent += est
        out.append(t)
    return out


def call(setup: Setup, task: Task) -> Outcome:
    """One generation call: up to ``max_attempts`` replies (:func:`ragexam.llm.attempts.ask`); its value is what
    the LLM cache stores (:meth:`Reply.from_value` reads it)."""
    from ragexam.llm.attempts import TEXT_REFUSAL, Reading, ask as ask_model
    from ragexam.questions.prompts import FOCUS_SCHEMA, reply_schema
    from ragexam.questions.replies import ReplyError, parse_focus_reply, parse_reply

    if task.focus:
        parse, schema = parse_focus_reply, FOCUS_SCHEMA
    else:
        parse, schema = parse_reply, reply_schema(list(task.numbers) if task.numbers else None)
    s = setup.settings
    reading = Reading(parse, (ReplyError,), refusal=TEXT_REFUSAL,
                      feedback=lambda which, error="": setup.prompts.feedback(which, error, cite=setup.cite))
    got = ask_model(setup.client, task.messages, reading, max_attempts=setup.config.max_attempts,
                    max_tokens=int(s.max_tokens), temperature=s.temperature, seed=s.seed, schema=schema,
                    schema_name="questions")
    value: Dict[str, Json] = {"attempts": got.attempts, "requests": got.requests, "errors": got.errors,
                              "prompt_tokens": got.prompt_tokens, "completion_tokens": got.completion_tokens}
    if got.failed is not None:
        value.update(status="failed", reason=got.failed.kind, message=got.failed.message)
    elif got.parsed:
        value.update(status="ok", items=got.value)
    else:
        value.update(status="invalid", reason=got.reason,
                     message=f"{got.message} (after {fmt.plural(got.attempts, 'attempt')})", reply=got.last[:2000])
    return Outcome(value, store=got.failed is None, requests=got.requests, replies=got.attempts,
                   prompt_tokens=got.prompt_tokens, completion_tokens=got.completion_tokens)


def judge_estimate(setup: Setup, n_checks: int) -> Tuple[int, int]:
    """Estimated (prompt, completion) tokens of ``n_checks`` LLM checks (a dry run's upper bound)."""
    from ragexam.llm.cost import estimate_tokens

    c = setup.config
    fa, cr = FAITHFULNESS.rubric(setup.language), RELEVANCE.rubric(setup.language)
    per_fa = estimate_tokens(fa.system + fa.template) + 100
    per_cr = estimate_tokens(cr.system + cr.template) + math.ceil(c.ooc_top * c.section_chars / 3)
    ooc = setup.mix.get("out_of_corpus", 0.0)
    per = per_cr * ooc + per_fa * (1 - ooc)
    comp = setup.judge.metric(RELEVANCE).allowance_for(c.ooc_top) * ooc + \
        setup.judge.metric(FAITHFULNESS).allowance_for(2) * (1 - ooc)
    return math.ceil(per * n_checks), math.ceil(comp * n_checks)

