"""A question set's journey, one function per stage with a typed product (:mod:`.products`).

::

    from ragexam.questions import stages as S
    from ragexam.questions.config import resolve
    from ragexam.questions.products import Ledger
    from ragexam.questions.sampling import Coverage

    config, settings = resolve("gpt-4o-mini", 20, {})
    setup = S.prepare("it_helpdesk", config, settings)            # -> Setup (checked before any call)
    ledger = Ledger(Coverage(setup.sections, config.seed))
    ledger.pass_no = 1
    tasks = S.sample(setup, ledger)                                # -> [Task]   which calls, on what
    replies = S.ask(setup, S.fit(setup, tasks, ledger, dry=False), ledger, dry=False)   # -> {key: Reply}
    cands = S.parse(setup, tasks, replies, ledger)                 # -> [Candidate]
    live = S.verify(setup, cands, ledger)                          # -> [Candidate] the deterministic checks passed
    S.llm_check(setup, live, ledger, dry=False)                    # the critic, the reader, the answer checks
    S.settle(ledger, cands, live)                                  # kept or rejected
    result = S.write(setup, ledger, S.select(setup, ledger.kept))  # -> GenerateResult (records, rejects, card)

:func:`make_set` composes them: passes of sample → ask → parse → verify → llm-check until every type reaches its
target, a pass keeps nothing (the model cannot do better with these prompts), ``max_passes`` is reached, or the
spending limits leave no room; then select → write.  :func:`plan_set` is the dry run: cached passes are replayed
(nothing is sent) and the first pass that would call the endpoint is counted.

Everything is deterministic given the cached replies: a rerun -- or a run resumed after ``kill -9`` -- repeats no
finished call and writes the same set.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Dict, List, Optional, Sequence, Union

from ragexam.metrics.judge.builtin.context_relevance import METRIC as RELEVANCE
from ragexam.questions import checks as C
from ragexam.questions.calls import ask, fit
from ragexam.questions.config import LLM_CHECKS
from ragexam.questions.llm_checks import Checker, llm_check
from ragexam.questions.output import GenerateResult, build_card, candidate_record, checked_by_text, reject_record
from ragexam.questions.products import Candidate, DryRunStop, GeneratePlan, Ledger, PassEstimate, Selection
from ragexam.questions.sampling import Coverage
from ragexam.questions.setup import Setup, prepare
from ragexam.questions.tasks import INITIAL_YIELD, sample
from ragexam.questions.verify import parse, verify

__all__ = ["prepare", "sample", "fit", "ask", "parse", "verify", "llm_check", "settle", "select", "write",
           "run_pass", "make_set", "plan_set"]


def settle(ledger: Ledger, cands: Sequence[Candidate], live: Sequence[Candidate]) -> None:
    """Each candidate kept or rejected; the bigrams of a provisional entry the LLM checks refused are dropped
    from the duplicates check."""
    for x in cands:
        if x.rejection is None:
            ledger.keep(x)
        else:
            ledger.reject(x)
    failed = {x.cid for x in live if x.rejection is not None}
    if failed:
        ledger.kept_grams = [(cid, g) for cid, g in ledger.kept_grams if cid not in failed]


def run_pass(setup: Setup, ledger: Ledger, *, dry: bool) -> bool:
    """One pass (sample → ask → parse → verify → llm-check); ``False`` with ``ledger.stop`` set when the
    generation stops before or after it."""
    counts = Counter(ledger.kept_types)
    if all(counts.get(k, 0) >= t for k, t in setup.targets.items()):
        ledger.stop = "targets met"
        return False
    if ledger.pass_no >= setup.config.max_passes:
        ledger.stop = f"max_passes ({setup.config.max_passes}) reached"
        return False
    ledger.pass_no += 1
    tasks = sample(setup, ledger)
    if not tasks:
        ledger.stop = "no section left to ask about"
        return False
    tasks = fit(setup, tasks, ledger, dry=dry)
    if not tasks:
        ledger.stop = ledger.stop or "spending limit reached"
        return False
    replies = ask(setup, tasks, ledger, dry=dry)
    before = len(ledger.kept)
    cands = parse(setup, tasks, replies, ledger)
    live = verify(setup, cands, ledger)
    llm_check(setup, live, ledger, dry=dry)
    settle(ledger, cands, live)
    ledger.tasks.extend(tasks)
    if len(ledger.kept) == before:
        ledger.stop = ledger.stop or f"pass {ledger.pass_no} kept no question"  # a spending limit says more
        return False
    return True


def _ledger(setup: Setup) -> Ledger:
    ledger = Ledger(Coverage(setup.sections, setup.config.seed), initial_check_rate=Checker(setup).initial_rate())
    ledger.notes.update(setup.notes)
    return ledger


def select(setup: Setup, kept: Sequence[Candidate]) -> Selection:
    """The set: the kept questions in generation order, up to each type's target; when some type fell short, filled
    up to ``n`` from the other types' extra questions; the rest are surplus."""
    taken: Dict[str, int] = Counter()
    chosen: List[Candidate] = []
    extra: List[Candidate] = []
    for x in kept:
        t = x.type or "?"
        if taken[t] < setup.targets.get(t, 0):
            taken[t] += 1
            chosen.append(x)
        else:
            extra.append(x)
    room = max(0, setup.config.n - len(chosen))
    keep_ids = {x.cid for x in chosen + extra[:room]}
    return Selection([x for x in kept if x.cid in keep_ids], extra[room:])


def write(setup: Setup, ledger: Ledger, selection: Selection) -> GenerateResult:
    """The records (query ids ``<id_prefix>_0001``, ... in order), the rejects (surplus last) and the card."""
    records = [candidate_record(setup, x, f"{setup.config.id_prefix}_{i:04d}")
               for i, x in enumerate(selection.chosen, 1)]
    for x in selection.surplus:
        x.rejection = C.Rejection("surplus", f"type {x.type} already has its target, and the set is full")
        ledger.rejected.append(x)
    rejects = list(ledger.call_rejects) + [reject_record(x) for x in ledger.rejected]
    rejects.sort(key=lambda r: (r["reason"] == "surplus", r["seq"]))
    card = build_card(setup, ledger, records, rejects)
    return GenerateResult(records, rejects, card, setup.signature(), setup.language, setup.corpus.source)


def make_set(setup: Setup) -> GenerateResult:
    """Generate the set (see the module docstring)."""
    ledger = _ledger(setup)
    while run_pass(setup, ledger, dry=False):
        pass
    return write(setup, ledger, select(setup, ledger.kept))


def plan_set(setup: Setup) -> GeneratePlan:
    """The dry run: passes whose calls are all cached are replayed (no request is sent); the first pass that would
    call the endpoint is counted -- its generation calls exactly, its LLM checks exactly when the generation replies
    are cached, else as an upper bound (``per_call`` per call) -- with estimated tokens and cost.  Nothing is sent,
    claimed or written."""
    ledger = _ledger(setup)
    try:
        while run_pass(setup, ledger, dry=True):
            pass
    except DryRunStop as stop:
        return _plan(setup, ledger, stop.estimate)
    return _plan(setup, ledger, None)


def _plan(setup: Setup, ledger: Ledger, est: Optional[PassEstimate]) -> GeneratePlan:
    from ragexam.llm.cost import cost_usd

    kept = len(ledger.kept)
    c, client = setup.config, setup.client
    about = dict(prompts=setup.prompts.label, cite=setup.cite, max_generation_calls=c.max_generation_calls,
                 checked_by=checked_by_text(setup.judge.model, client.model), notes=list(setup.notes))
    if est is None:
        note = ("every call is cached: a run writes the set without calling the endpoint" if ledger.pass_no
                else "nothing to do")
        return GeneratePlan(client.model, client.endpoint, setup.judge.model, setup.language, c.n,
                            dict(setup.targets), ledger.pass_no, kept, None, 0, 0, 0, True, 0, 0,
                            0.0 if setup.price_pair() else "unknown", note, **about)
    price = setup.price_pair()
    cost: Union[float, str] = "unknown" if price is None else cost_usd(est.prompt_tokens, est.completion_tokens,
                                                                         price)
    deficit = c.n - kept
    rate = Checker(setup).initial_rate()
    note = (f"pass {est.pass_no} is the first that calls the endpoint; {kept} questions are kept from cached "
            f"passes, {deficit} are still needed. Later passes depend on how many candidates pass the checks "
            f"(expect about {math.ceil(deficit / (setup.per_call * INITIAL_YIELD))} generation calls in "
            f"all, plus about {rate:g} LLM check calls per candidate: "
            f"{', '.join(k for k in setup.checks if k in LLM_CHECKS) or 'none'}; out-of-corpus candidates one "
            f"{RELEVANCE.name} call).")
    return GeneratePlan(client.model, client.endpoint, setup.judge.model, setup.language, c.n, dict(setup.targets),
                        est.pass_no - 1, kept, est.pass_no, est.calls, est.cached, est.checks, est.checks_exact,
                        est.prompt_tokens, est.completion_tokens, cost, note, **about)
