"""``ragexam llm probe --fitness``: what a model is fit for here -- judging, generating -- measured on the user's own
data with a bounded number of calls, printed before the first one.

Three steps, one model:

1. **the endpoint probe** (:func:`ragexam.llm.probe.probe`: ``json_schema``, ``logprobs``, ``seed``; one request,
   up to five when a feature is refused);
2. **a judge-check on a small sample** (:func:`ragexam.analysis.judging.check.check_judge`): ``sample`` questions of
   the question set (default :data:`SAMPLE`, seeded), the default metrics (context relevance, faithfulness, answer
   correctness), the scoring ``--scoring`` gives (``auto``: probabilities when the endpoint returns them) -- each
   metric's verdict is the check's (``separates``, ``weakly``, ``does_not``, ``inverted``, ``too_few``); the check is
   recorded like any judge-check, so ``score`` warns from it;
3. **a few generation calls** (:func:`ragexam.questions.generate` with ``max_calls`` = ``generation_calls``, default
   :data:`GENERATION_CALLS`; its checks are calls too, and a call is planned only when its worst-case checks fit):
   questions kept per call and seconds per call, so the cost of a kept question is known before a set of 200 is
   asked for.  Kept means "passed ragexam's checks", not "right":
   a small model's kept questions need a person's audit.

**The budget** (:class:`FitnessBudget`, printed first): the calls each step makes -- 1 probe request (5 at most),
one judgment per contrast item (the items are counted before any call, cached ones are free), ``generation_calls``
generation and check calls -- and the most model replies they can take when every reply has to be asked again
(``max_attempts`` per judgment and per generation call).  The probe never sends more than that.

**The verdict** (:meth:`Fitness.jobs`), in plain words per job:

* *judge M*: fit when its check ``separates``; not shown (too few questions, or only weakly); unfit when it does not
  separate, or separates upside down (``inverted``);
* *generate questions*: fit when at least 2 questions were kept, with the calls and seconds a kept question cost;
  unfit when none of at least 3 candidates was kept (the rejection reasons are given); not shown in between.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence

from ragexam import fmt

__all__ = ["SAMPLE", "GENERATION_CALLS", "FitnessBudget", "JobVerdict", "Fitness", "plan_fitness", "run_fitness"]

#: questions of the judge-check sample (a verdict needs at least 10 with a good and a bad item judged)
SAMPLE = 12
#: generation calls (generation and its checks) spent on the cost of a kept question: the generator plans a call only
#: when its worst-case checks fit too, so 18 buy about 3 generation calls
GENERATION_CALLS = 18
#: candidates below which "none kept" is not shown to mean the model cannot generate
_MIN_CANDIDATES = 3
_PROBE_MAX = 5


@dataclass(frozen=True)
class FitnessBudget:
    """What the fitness probe will spend: the calls per step (cached judgments excluded) and the most model replies
    all steps can take (every reply asked again up to ``max_attempts``)."""

    model: str
    endpoint: str
    probe: int
    judgments: int
    judgments_cached: int
    generation_calls: int
    max_attempts: int
    questions: int
    metrics: Sequence[str]

    @property
    def calls(self) -> int:
        """Calls expected: the probe, the uncached judgments, the generation calls."""
        return self.probe + self.judgments + self.generation_calls

    @property
    def most_replies(self) -> int:
        """The most chat completions the probe can ask for."""
        return (_PROBE_MAX if self.probe else 0) + (self.judgments + self.generation_calls) * self.max_attempts

    def text(self) -> str:
        probe = "the endpoint probe (from the cache)" if not self.probe else "1 endpoint probe"
        return (f"fitness probe of {self.model} at {self.endpoint}: {fmt.plural(self.calls, 'call')} -- {probe}, "
                f"{fmt.plural(self.judgments, 'judgment')} for a judge-check of "
                f"{fmt.plural(self.questions, 'question')} ({', '.join(self.metrics)}; {self.judgments_cached} more "
                "cached), "
                f"{fmt.plural(self.generation_calls, 'generation call')} (with their checks); at most "
                f"{fmt.plural(self.most_replies, 'model reply', 'model replies')} if every reply must be asked again "
                f"(--max-attempts {self.max_attempts})")

    def to_dict(self) -> Dict[str, Any]:
        return {"model": self.model, "endpoint": self.endpoint, "probe": self.probe, "judgments": self.judgments,
                "judgments_cached": self.judgments_cached, "generation_calls": self.generation_calls,
                "max_attempts": self.max_attempts, "questions": self.questions, "metrics": list(self.metrics),
                "calls": self.calls, "most_replies": self.most_replies}


@dataclass(frozen=True)
class JobVerdict:
    """One job and whether the model is fit for it: ``fit`` (``True``, ``False``, or ``None``: not shown either
    way) and why, in words."""

    job: str
    fit: Optional[bool]
    why: str

    def text(self) -> str:
        head = {True: "fit", False: "not fit", None: "not shown fit"}[self.fit]
        return f"{self.job}: {head} -- {self.why}"

    def to_dict(self) -> Dict[str, Any]:
        return {"job": self.job, "fit": self.fit, "why": self.why}


@dataclass
class Fitness:
    """What the fitness probe found: the budget it announced, the probe, the judge-check, the generation's
    numbers (``kept``, ``calls``, ``requests``, ``seconds``: of the calls made now; ``cached``: generation calls read
    from the cache), and the replies the whole probe took (``replies``)."""

    budget: FitnessBudget
    probe: Any
    check: Any
    kept: int = 0
    calls: int = 0
    requests: int = 0
    seconds: Optional[float] = None
    cached: int = 0
    replies: int = 0
    notes: List[str] = field(default_factory=list)
    candidates: int = 0
    rejections: Dict[str, int] = field(default_factory=dict)
    stopped: Optional[str] = None

    def judge_jobs(self) -> List[JobVerdict]:
        """One verdict per checked metric, under the scoring ``score`` would use."""
        out = []
        for m, mc in self.check.checks.items():
            scoring = self.check.judge_run.scoring.get(m, "sample")
            sep = mc.separations.get(scoring) or mc.separations["sample"]
            fit = {"separates": True, "does_not": False, "inverted": False}.get(sep.verdict)
            out.append(JobVerdict(f"judge {m} ({scoring})", fit, sep.text))
        return out

    def generation_job(self) -> JobVerdict:
        made = self.calls + self.cached
        if self.kept == 0:
            rejected = ", ".join(f"{k} {v}" for k, v in self.rejections.items()) or "-"
            why = (f"0 of {fmt.plural(self.candidates, 'candidate')} kept in {fmt.plural(made, 'call')} (rejected: "
                   f"{rejected}; stopped: {self.stopped or '-'})")
            if self.candidates < _MIN_CANDIDATES:
                return JobVerdict("generate questions", None, why + " -- too few to tell; a larger --generation-calls "
                                  "measures more")
            return JobVerdict("generate questions", False, why)
        per_call = self.kept / made
        cost = f"{fmt.num(made / self.kept, 1)} calls per kept question"
        if self.seconds is not None and self.calls:
            each = f"{fmt.num(self.seconds / self.calls, 1)} s per call"
            # the seconds are those of the calls made now: per kept question only when none came from the cache
            cost += (f", {each} ({fmt.num(self.seconds / self.kept, 1)} s per kept question)" if not self.cached
                     else f", {each} (of the {self.calls} made now; {self.cached} came from the cache)")
        else:
            cost += "; seconds unknown: the calls came from the cache"
        why = (f"{self.kept} of {fmt.plural(self.candidates, 'candidate')} kept in {fmt.plural(made, 'call')} "
               f"({fmt.num(per_call, 2)} per call; {cost}); kept means it passed ragexam's checks, not that it is "
               "right: have a person audit a sample")
        if self.kept < 2:
            return JobVerdict("generate questions", None, why + " -- one kept question is no yield; a larger "
                              "--generation-calls measures more")
        unproven = [j.job for j in self.judge_jobs() if j.fit is not True]
        if unproven:  # the generator's meaning checks were asked of this same model
            return JobVerdict("generate questions", None, why + " -- its questions were checked by this same model, "
                              f"which the judge-check did not show fit to judge ({', '.join(unproven)}): passing "
                              "its own checks says little; audit a sample (`ragexam review audit`) or check with a "
                              "stronger --judge-model")
        return JobVerdict("generate questions", True, why)

    def jobs(self) -> List[JobVerdict]:
        return self.judge_jobs() + [self.generation_job()]

    def summary(self) -> str:
        """The sentence: which jobs the model is fit for, which not, which not shown."""
        jobs = self.jobs()
        parts = []
        for fit, word in ((True, "fit for"), (None, "not shown fit for"), (False, "not fit for")):
            names = [j.job for j in jobs if j.fit is fit]
            if names:
                parts.append(f"{word} {', '.join(names)}")
        return f"{self.budget.model} on this data: " + "; ".join(parts)

    def to_dict(self) -> Dict[str, Any]:
        return {"budget": self.budget.to_dict(), "probe": self.probe.to_dict(),
                "judge_check": self.check.to_dict(),
                "generation": {"kept": self.kept, "calls": self.calls, "cached": self.cached,
                               "requests": self.requests, "seconds": self.seconds, "candidates": self.candidates,
                               "rejections": dict(self.rejections), "stopped": self.stopped},
                "replies": self.replies, "jobs": [j.to_dict() for j in self.jobs()], "summary": self.summary(),
                "notes": list(self.notes)}


def plan_fitness(judge: Any, contrast: Dict[str, List[Any]], generation_calls: int, *,
                 probed: bool) -> FitnessBudget:
    """The :class:`FitnessBudget` of a fitness probe whose judge-check judges ``contrast`` with ``judge`` (cached
    judgments counted apart) and whose generation makes ``generation_calls`` calls; ``probed``: the endpoint probe
    is in the cache."""
    from ragexam.analysis.judging.check import judge_alone

    plan = judge_alone(judge).plan(None, {m: [c.item for c in items] for m, items in contrast.items()})
    questions = len({c.query_id for items in contrast.values() for c in items})
    return FitnessBudget(judge.model, judge.endpoint, 0 if probed else 1, plan.calls, plan.cached,
                         generation_calls, judge.max_attempts, questions, list(contrast))


def run_fitness(judge: Any, contrast: Dict[str, List[Any]], generate: Callable[[int], Any], *,
                generation_calls: int = GENERATION_CALLS, seed: int = 12345, dataset: Any = None,
                announce: Optional[Callable[[FitnessBudget], None]] = None,
                progress: Optional[Callable[[int, int], None]] = None) -> Fitness:
    """Run the fitness probe (module docstring): ``announce`` gets the budget before the first call; ``generate``
    runs a generation with ``max_calls`` and returns its :class:`~ragexam.questions.engine.GenerateResult`."""
    from ragexam.analysis.judging.check import check_judge
    from ragexam.llm.probe import cached_probe, probe

    budget = plan_fitness(judge, contrast, generation_calls, probed=cached_probe(judge.client, judge.cache) is not None)
    if announce is not None:
        announce(budget)
    found = probe(judge.client, judge.cache)
    check = check_judge(judge, contrast, seed=seed, progress=progress, dataset=dataset, settings={"fitness": True})
    out = Fitness(budget, found, check, notes=list(check.notes))
    t0 = time.perf_counter()
    result = generate(generation_calls)
    wall = time.perf_counter() - t0
    usage = (result.card.get("this_run") or {}).get("usage") or {}
    out.kept = len(result.records)
    out.calls = int(sum(u.get("calls", 0) for u in usage.values()))
    out.cached = int(sum(u.get("cached", 0) for u in usage.values()))
    out.requests = int(sum(u.get("requests", 0) for u in usage.values()))
    out.seconds = wall if out.calls else None
    out.candidates = int(result.card.get("candidates") or 0)
    out.rejections = dict(result.card.get("rejections") or {})
    out.stopped = result.card.get("stopped")
    judged = check.judge_run.usage
    out.replies = (0 if found.cached else found.requests) + int(judged.get("requests") or 0) + out.requests
    return out
