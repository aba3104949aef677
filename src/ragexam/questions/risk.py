"""The review queue ordered by risk, measured against the audit, and how much junk the unread rest may hold.

**Predicted risk.**  Each question's verification record (``metadata.generation``) holds what the checks found;
:data:`SIGNALS` turns each of them into a suspicion in ``[0, 1]`` (higher: more likely junk), and a question's
**risk** is the mean of the suspicions its record has (:func:`risk`).  The weights are fixed -- equal, each
signal's direction decided from what the checks mean, none fitted to any labels -- so the audit's labels measure
the score rather than train it, and a rest of the queue chosen by risk is still sampled at random by the audit.

**Is it worth anything?**  :func:`measure_signals`: the ROC AUC of the risk of the audited questions, bad against
good (:func:`ragexam.stats.discrimination.auc_ci`: Mann-Whitney, percentile bootstrap over the questions, the
audit's seed), with ``n``.  It needs at least :data:`MIN_EACH` bad and good audited questions.  Only when the
whole 95 % interval is above 0.5 do the signals order the queue; otherwise (not audited, too few, an interval
that includes 0.5) ragexam says the signals do not help and the queue is in random order (``numpy.random.default_rng([seed, 1])``,
another stream than the audit's sample), so no one trusts an order nobody measured.

**When to stop.**  A person working down the queue may stop where the rest is predicted clean
(:func:`stop_point`).  The audited questions that fall in a rest ``R`` of the queue (the questions from a position
on) are a simple random sample of ``R`` -- the order depends on the signals and the seed, never on the labels -- so
the bad ones in ``R`` have the exact interval of :func:`ragexam.stats.hypergeometric.hypergeometric_interval`
with population ``|R|``.  But the audited junk gathers at the top of a queue that works, so the *first* position
whose rest looks clean is chosen by the labels themselves (stopping just after the last audited bad question);
a bound for one position would then be far too sure.  So a reviewer may stop only at :data:`STOP_POINTS` points
fixed in advance -- after 0, 1/10, ..., 9/10 of the queue -- and each rest's upper bound is taken at the one-sided
level ``1 - 0.025 / 10`` (the two-sided :data:`REST_CONFIDENCE`), so all ten hold together with 97.5 % (Bonferroni),
whichever point is chosen.  The stop point is the first of them whose rest's upper bound is at most the target.
With few audited questions in the rest the bound stays wide: audit more to stop sooner.

**What a review leaves** (:func:`pending_bound`, ``review apply``): the written set's accepted questions were read
by a person (good: a question the audit labelled bad that a person then accepted was fixed or vouched for), the
rejected ones are out (counted bad: the same person's standard), and the pending ones are unread.  The bad
questions a person read -- the rejected ones and the accepted ones the audit labelled bad -- are bad questions of
the set that are not among the unread, so the unread ones' bad count is at most the smaller of two bounds: the
whole set's ``U`` (the upper end of its 95 % two-sided interval: 97.5 % one-sided) less those read bad ones, and --
when every unreviewed question lies after a stop point of the queue (the person worked from its top) -- that
rest's ``U`` (97.5 % together with the other stop points) less those in it.  Each is 97.5 % sure, so the smaller is
at least 95 % sure; it is never below the unread questions the audit labelled bad.  When the audit labelled every
question, the unread ones' bad count is known: the ones it labelled bad.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Mapping, Optional, Tuple

from ragexam import fmt
from ragexam.questions.audit import DEFAULT_SEED, AuditFile, Label, PendingBound
from ragexam.stats.hypergeometric import FiniteInterval, hypergeometric_interval

if TYPE_CHECKING:  # pragma: no cover
    from ragexam.stats.discrimination import AUCInterval

__all__ = ["SIGNALS", "MIN_EACH", "STOP_POINTS", "REST_CONFIDENCE", "signals", "risk", "SignalCheck",
           "measure_signals", "ReviewQueue", "review_queue", "stop_starts", "rest_interval", "stop_point", "StopPoint",
           "PendingBound", "pending_bound"]

#: fewest bad and fewest good audited questions an AUC is measured on
MIN_EACH = 3
#: the points of the queue a reviewer may stop at: after 0, 1/10, ..., 9/10 of it
STOP_POINTS = 10
#: the two-sided confidence of each rest's interval: its upper ends hold together with 97.5 % (Bonferroni)
REST_CONFIDENCE = 1.0 - 0.05 / STOP_POINTS
Record = Mapping[str, Any]
_SPACE = re.compile(r"\s+")


def _gen(rec: Record) -> Mapping[str, Any]:
    g = (rec.get("metadata") or {}).get("generation") if isinstance(rec.get("metadata"), dict) else None
    return g if isinstance(g, dict) else {}


def _critic(rec: Record) -> Optional[float]:
    """The critic's verdict: score 3 of 3 -> 0, 2 -> 0.5, 1 -> 1."""
    c = _gen(rec).get("critic")
    score = c.get("score") if isinstance(c, dict) else None
    return None if not isinstance(score, (int, float)) else min(1.0, max(0.0, (3.0 - float(score)) / 2.0))


def _reader(rec: Record) -> Optional[float]:
    """The reader (given only the evidence) and the key: its answer contains the key -> 0; agreed only by the
    judge with score s of 5 -> (6 - s) / 5; declined or disagreed -> 1."""
    r = _gen(rec).get("reader")
    if not isinstance(r, dict) or "agreement" not in r:
        return None
    if r["agreement"] == "contained":
        return 0.0
    score = r.get("score")
    if r["agreement"] == "judge" and isinstance(score, (int, float)):
        return min(1.0, max(0.0, (6.0 - float(score)) / 5.0))
    return 1.0


def _answer(rec: Record) -> Optional[float]:
    """The answer check: the key inside its evidence, or vouched for by a reviewer -> 0; judged faithful with score
    f in [0, 1] -> 0.2 + 0.8 (1 - f) (not literally in the evidence); not checked -> 0.5."""
    a = _gen(rec).get("answer_check")
    if not isinstance(a, dict):
        return None
    method = a.get("method")
    if method in ("contained", "human"):
        return 0.0
    if method == "judge" and isinstance(a.get("score"), (int, float)):
        return 0.2 + 0.8 * (1.0 - min(1.0, max(0.0, float(a["score"]))))
    return 0.5


def _overlap(rec: Record) -> Optional[float]:
    """1 - the share of the question's terms in its evidence: a question in other words than its sentence is the
    vague one more often."""
    ov = _gen(rec).get("overlap")
    return None if not isinstance(ov, (int, float)) else 1.0 - min(1.0, max(0.0, float(ov)))


def _key_share(rec: Record) -> Optional[float]:
    """The key's length over its evidence's (capped at 1): a key that is the whole sentence answers no one fact."""
    ev = rec.get("evidence") or []
    key = rec.get("ground_truth")
    if not rec.get("answerable", True) or not ev or not isinstance(key, str):
        return None
    ev_len = len(_SPACE.sub("", "".join(str(e) for e in ev)))
    return min(1.0, len(_SPACE.sub("", key)) / ev_len) if ev_len else None


def _two_documents(rec: Record) -> Optional[float]:
    """A question over two documents (``multi``) -> 1, else 0: the hardest kind to write."""
    if not rec.get("answerable", True) or not isinstance(rec.get("type"), str):
        return None
    return float(rec["type"] == "multi")


def _out_of_corpus(rec: Record) -> Optional[float]:
    """An out-of-corpus question: the closest section's judged relevance m of 5 -> (m - 1) / 4."""
    o = _gen(rec).get("ooc_check")
    m = o.get("max") if isinstance(o, dict) else None
    return None if not isinstance(m, (int, float)) else min(1.0, max(0.0, (float(m) - 1.0) / 4.0))


#: the signals, in order: name -> the function from a record to a suspicion in [0, 1] (``None``: not in the record)
SIGNALS: Dict[str, Callable[[Record], Optional[float]]] = {
    "critic": _critic, "reader": _reader, "answer_check": _answer, "overlap": _overlap, "key_share": _key_share,
    "two_documents": _two_documents, "out_of_corpus": _out_of_corpus,
}


def signals(rec: Record) -> Dict[str, float]:
    """The suspicions a record has (module docstring)."""
    out = {}
    for name, f in SIGNALS.items():
        v = f(rec)
        if v is not None:
            out[name] = float(v)
    return out


def risk(rec: Record) -> float:
    """The mean of :func:`signals` (0.5 for a record without any: nothing known)."""
    s = signals(rec)
    return sum(s.values()) / len(s) if s else 0.5


@dataclass(frozen=True)
class SignalCheck:
    """Whether the risk tells the audit's bad questions from its good ones (module docstring)."""

    n_bad: int
    n_good: int
    auc: Optional["AUCInterval"] = None
    helps: bool = False
    seed: int = DEFAULT_SEED

    def text(self) -> str:
        n = f"{self.n_bad + self.n_good} audited ({self.n_bad} bad, {self.n_good} good)"
        random = f"the review queue is in random order (seed {self.seed})"
        if self.auc is None and self.n_bad + self.n_good == 0:
            return f"the checks' signals are not measured (no audit): {random} until an audit shows they help"
        if self.auc is None:
            return (f"the checks' signals are not measured: {n} is too few (at least {MIN_EACH} bad and {MIN_EACH} "
                    f"good): {random}")
        a = self.auc
        auc = f"ROC AUC {fmt.num(a.auc, 2)} [{fmt.num(a.low, 2)}–{fmt.num(a.high, 2)}], n = {n}"
        if self.helps:
            return f"the checks' signals put junk first: {auc}; the review queue is ordered by predicted risk"
        if a.high < 0.5:
            return f"the checks' signals put good questions first, the wrong way round: {auc}; {random}"
        return f"the checks' signals do not tell junk from good: {auc}, an interval that includes 0.5; {random}"

    def to_dict(self) -> Dict[str, Any]:
        return {"n_bad": self.n_bad, "n_good": self.n_good, "helps": self.helps, "text": self.text(),
                "auc": self.auc.to_dict() if self.auc is not None else None}


def _counted(audit: Optional[AuditFile]) -> List[Label]:
    return audit.counted()[0] if audit is not None else []


def measure_signals(records: Mapping[str, Record], audit: Optional[AuditFile]) -> SignalCheck:
    """The AUC of :func:`risk` on the audit's counted labels (module docstring)."""
    from ragexam.stats.discrimination import auc_ci

    seed = audit.seed if audit is not None else DEFAULT_SEED
    labs = [lab for lab in _counted(audit) if lab.query_id in records]
    bad = [lab.query_id for lab in labs if lab.label == "bad"]
    good = [lab.query_id for lab in labs if lab.label == "good"]
    if len(bad) < MIN_EACH or len(good) < MIN_EACH:
        return SignalCheck(len(bad), len(good), seed=seed)
    interval = auc_ci([risk(records[q]) for q in bad], [risk(records[q]) for q in good], bad, good, seed=seed)
    return SignalCheck(len(bad), len(good), interval, interval.low > 0.5, seed)


@dataclass(frozen=True)
class ReviewQueue:
    """The order a person reviews in: ``by`` ``risk`` or ``random`` (module docstring)."""

    order: Tuple[str, ...]
    by: str
    risks: Mapping[str, float]
    check: SignalCheck

    def to_dict(self) -> Dict[str, Any]:
        return {"by": self.by, "order": list(self.order), "risks": {q: self.risks[q] for q in self.order},
                "signals": self.check.to_dict()}


def _shuffled(query_ids: List[str], seed: int) -> List[str]:
    """The random order of the queue: ``numpy.random.default_rng([seed, 1])`` -- another stream than the audit's
    sample (``default_rng(seed)``), so the audited questions are not the first of the queue."""
    import numpy as np

    return [query_ids[int(i)] for i in np.random.default_rng([int(seed), 1]).permutation(len(query_ids))]


def review_queue(records: Mapping[str, Record], audit: Optional[AuditFile]) -> ReviewQueue:
    """The review queue of a set (``records`` by ``query_id``) given its audit (``None``: not audited)."""
    check = measure_signals(records, audit)
    shuffled = _shuffled(list(records), check.seed)
    risks = {q: risk(records[q]) for q in records}
    if not check.helps:
        return ReviewQueue(tuple(shuffled), "random", risks, check)
    rank = {q: i for i, q in enumerate(shuffled)}  # ties in the seeded random order
    return ReviewQueue(tuple(sorted(records, key=lambda q: (-risks[q], rank[q]))), "risk", risks, check)


def stop_starts(n: int) -> List[int]:
    """The positions a reviewer of ``n`` questions may stop after: ``ceil(j * n / 10)`` for ``j = 0 .. 9``, each
    with a rest to leave (below ``n``: stopping after the last question is no stop)."""
    return sorted({k for k in (-(-j * n // STOP_POINTS) for j in range(STOP_POINTS)) if k < n})


def rest_interval(queue: ReviewQueue, audit: Optional[AuditFile], start: int) -> FiniteInterval:
    """The interval (:data:`REST_CONFIDENCE`) of the bad questions in the rest of the queue from index ``start``."""
    rest = set(queue.order[start:])
    labs = [lab for lab in _counted(audit) if lab.query_id in rest]
    return hypergeometric_interval(sum(1 for lab in labs if lab.label == "bad"), len(labs), len(rest),
                                   REST_CONFIDENCE)


@dataclass(frozen=True)
class StopPoint:
    """Where a person reviewing the queue may stop: after the first ``start`` questions the rest (``interval``'s
    population) is predicted to hold at most ``interval.high`` junk."""

    start: int
    interval: FiniteInterval
    target: float

    def text(self) -> str:
        iv = self.interval
        if self.start == 0:
            head = "no review needed at this target: the whole set is"
        else:
            head = f"after the first {self.start} of the queue, the remaining {iv.population} are"
        seen = f"{iv.bad} bad of the {iv.n} audited among them" if iv.bad else \
            f"none bad of the {iv.n} audited among them"
        return (f"{head} predicted at most {fmt.percent(iv.high)} junk, within the target {fmt.percent(self.target)} "
                f"({seen}; an upper bound 97.5% sure at all {STOP_POINTS} stop points of the queue at once)")


def stop_point(queue: ReviewQueue, audit: Optional[AuditFile], target: float) -> Optional[StopPoint]:
    """The first stop point (:func:`stop_starts`) whose rest holds audited questions and has an upper bound of at
    most ``target`` (``None``: none -- always without audited labels: nothing predicts a rest nobody read)."""
    for start in stop_starts(len(queue.order)):
        iv = rest_interval(queue, audit, start)
        if iv.n and iv.high <= target:
            return StopPoint(start, iv, target)
    return None


def pending_bound(queue: ReviewQueue, audit: Optional[AuditFile], whole: Optional[FiniteInterval],
                  decisions: Mapping[str, str]) -> PendingBound:
    """The bound of the bad questions left unread after a review (module docstring).  ``decisions`` maps every
    question of the set to ``accepted``, ``rejected``, ``pending`` (kept) or ``dropped`` (pending, left out);
    ``whole`` is the set's audited interval (``None``: not audited)."""
    count = {k: sum(1 for v in decisions.values() if v == k) for k in ("accepted", "rejected", "pending", "dropped")}
    p, rejected = count["pending"], count["rejected"]
    if p == 0:
        return PendingBound(count["accepted"], 0, rejected, count["dropped"], 0, "every question read by a person")
    if whole is None or not whole.n:  # no labels: any question nobody reviewed may be bad
        return PendingBound(count["accepted"], p, rejected, count["dropped"], p,
                            "not audited: every question not reviewed may be bad", audited=False)
    n = len(queue.order)
    high = whole.high_count
    labelled_bad = {lab.query_id for lab in _counted(audit) if lab.label == "bad"}
    unread_bad = sum(1 for q, d in decisions.items() if d == "pending" and q in labelled_bad)
    # bad questions a person took out of the unread: the rejected ones, and the accepted ones the audit labelled bad
    # (read, and fixed or vouched for by a person)
    read_bad = {q for q, d in decisions.items() if d == "rejected" or (d == "accepted" and q in labelled_bad)}
    if whole.n >= whole.population:  # every question labelled: a count, no interval
        return PendingBound(count["accepted"], p, rejected, count["dropped"], unread_bad,
                            "the audit of every question: the ones it labelled bad that nobody reviewed", exact=True)
    bound, method = min(p, max(0, high - len(read_bad))), \
        "the set's audit less the questions a person read that it counts bad (rejected, or labelled bad and accepted)"
    unread = [i for i, q in enumerate(queue.order) if decisions.get(q) in ("pending", "dropped")]
    start = max((k for k in stop_starts(n) if not unread or k <= unread[0]), default=0)
    if start > 0:
        rest = set(queue.order[start:])
        tail = min(p, max(0, rest_interval(queue, audit, start).high_count - len(rest & read_bad)))
        if tail < bound:
            bound, method = tail, f"the rest of the review queue after its first {start}"
    bound = max(bound, unread_bad)  # never below the unread questions the audit labelled bad
    return PendingBound(count["accepted"], p, rejected, count["dropped"], bound, method)

