"""``ragexam judge-check``: does this judge tell good from bad -- on the user's own questions, before it is trusted?

A **contrast set** is built from the question set itself (no labels needed).  What it holds depends on what the
metric judges (:class:`~ragexam.metrics.judge.metric.JudgeMetric`: its units and inputs), so any registered metric
or custom rubric of these kinds can be checked:

=============  ==========================  =====================================  ==================================
kind           metrics                     positive item                          negative items
=============  ==========================  =====================================  ==================================
``contexts``   one value per context       the question with the chunk that       ``hard_negative``: the best BM25
               (context_relevance,         holds its evidence (``evidence``)      chunk for the question that holds
               context_precision)                                                 no evidence of it; ``random``: a
                                                                                  seeded random chunk of another
                                                                                  document
``recall``     one value per statement     the reference with its evidence        the same with a ``random`` chunk
               (context_recall)            chunks
``grounding``  answer + contexts           the reference answer as the answer,    the ``perturbed`` reference (below)
               (faithfulness)              its evidence chunks as contexts        with the same contexts
``reference``  answer + ground truth       the reference answer judged against    the ``perturbed`` reference against
               (answer_correctness)        itself (``key``)                       the reference
=============  ==========================  =====================================  ==================================

A metric that judges the answer alone (answer_relevancy, abstention) has no contrast here.

Each item has one context (context metrics) so the judge's score of that context is the item's score.
**Perturbation** (:func:`perturb`, seeded, the same every run): every number is changed (``n`` -> ``2n``, ``0``
and ``1`` -> ``n + 2``; ``30분`` -> ``60분``, ``VPN-ERR-619`` -> ``VPN-ERR-1238``); a text without numbers has its
first affirmative ending negated (``할 수 있습니다`` -> ``할 수 없습니다``, ``됩니다`` -> ``되지 않습니다``, ``can`` ->
``cannot``, ...); a text with neither becomes another question's reference answer (``other_answer``).

The contrast set is judged like any score (cache, resume, retries, unjudged with reasons), and for each metric and
each scoring available -- the written score (``sample``) and, when the endpoint returns log-probabilities, the
probability-weighted one (``probability``, from the same replies) -- ragexam reports, over the judged items:

* **ROC AUC** of positives against negatives (:func:`ragexam.stats.discrimination.auc`) with a 95 % bootstrap
  interval that resamples questions, and the AUC against each kind of negative;
* the **mean score gap** (positives minus negatives);
* the **share of pairs ordered correctly**: within each question, (positive, negative) pairs whose positive
  scored higher (ties are counted apart);
* a **verdict**: ``separates`` when the interval's lower end is at least 0.70, ``does not`` when it reaches 0.5 or
  below or every score is the same ("scores are flat"), ``weakly`` in between -- in a sentence such as "this
  judge separates relevant from irrelevant contexts: AUC 0.93 [0.88-0.97]".

Each check is recorded in the LLM cache (kind ``judge-check``, keyed by model, endpoint, metric, rubric hash and
scoring); ``ragexam score`` with the same judge warns when the recorded check of a metric it grades did not
separate (:func:`recorded_warnings`).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ragexam import fmt
from ragexam.errors import InputError

__all__ = ["KINDS", "contrast_kind", "DEFAULT_CHECK_METRICS", "ContrastItem", "Separation", "MetricCheck",
           "JudgeCheck", "perturb", "build_contrast", "check_judge", "recorded_warnings", "CHECK_FORMAT", "SEPARATES",
           "FLAT"]

#: contrast kind -> (what the positives are, what the negatives are), for the verdict's sentence
KINDS: Dict[str, Tuple[str, str]] = {
    "contexts": ("relevant", "irrelevant contexts"),
    "recall": ("contexts that hold the reference", "contexts that do not"),
    "grounding": ("answers their contexts support", "answers that contradict them"),
    "reference": ("correct answers", "answers with a contradicting change"),
}
DEFAULT_CHECK_METRICS = ("context_relevance", "faithfulness", "answer_correctness")
CHECK_FORMAT = "ragexam-judge-check/1"
#: lower end of the AUC interval from which a judge "separates"
SEPARATES = 0.70
FLAT = "scores are flat"
_NEGATIONS = (("할 수 있습니다", "할 수 없습니다"), ("할 수 없습니다", "할 수 있습니다"), ("수 있습니다", "수 없습니다"),
              ("수 없습니다", "수 있습니다"), ("됩니다", "되지 않습니다"), ("합니다", "하지 않습니다"),
              ("있습니다", "없습니다"), ("없습니다", "있습니다"), ("입니다", "이 아닙니다"),
              (" cannot ", " can "), (" can ", " cannot "), (" is ", " is not "), (" are ", " are not "))
_NUMBER = re.compile(r"\d+")


@dataclass(frozen=True)
class ContrastItem:
    """One judged item of the contrast set: its question, ``kind`` (``evidence``, ``key``, ``hard_negative``,
    ``random``, ``perturbed``), whether it is a ``positive``, the :class:`~ragexam.metrics.judge.JudgeItem` and
    how it was made (``detail``: the chunk id, the perturbation)."""

    query_id: str
    metric: str
    kind: str
    positive: bool
    item: Any
    detail: str = ""


def perturb(text: str, others: Sequence[str], rng: random.Random) -> Tuple[str, str]:
    """``(changed text, how)`` (module docstring): ``numbers``, ``negation`` or ``other_answer``."""
    if _NUMBER.search(text):
        return _NUMBER.sub(lambda m: str(int(m.group(0)) * 2 if int(m.group(0)) >= 2 else int(m.group(0)) + 2),
                           text), "numbers"
    for old, new in _NEGATIONS:
        if old in text:
            return text.replace(old, new, 1), "negation"
    pool = [o for o in others if o != text]
    if not pool:
        raise InputError("the perturbation needs a second reference answer to swap in; the question set has only "
                         "one", field="ground_truth")
    return rng.choice(pool), "other_answer"


def contrast_kind(defn: Any) -> Optional[str]:
    """The contrast a metric can be checked on (module docstring), from what it judges; ``None`` when none."""
    if defn.unit_kind == "contexts":
        return "contexts"
    if defn.unit_kind == "statements":
        return "recall"
    needs = set(defn.needs)
    if {"answer", "contexts"} <= needs:
        return "grounding"
    if {"answer", "ground_truth"} <= needs and "second_answer" not in needs:
        return "reference"
    return None


def _evidence_chunks(q: Any, chunks: Sequence[Any], matcher: Any) -> List[Any]:
    ev = list(q.evidence or ())
    return [c for c in chunks if c.doc_id in set(q.relevant_doc_ids or ()) and matcher.covered(c.text, list(
        enumerate(ev)))]


def _negatives(q: Any, chunks: Sequence[Any], hits: Sequence[Tuple[str, float]], by_id: Dict[str, Any],
               matcher: Any, rng: random.Random) -> Dict[str, Any]:
    ev = list(enumerate(q.evidence or ()))
    hard = next((by_id[cid] for cid, _ in hits if not matcher.covered(by_id[cid].text, ev)), None)
    pool = [c for c in chunks if c.doc_id not in set(q.relevant_doc_ids or ()) and not matcher.covered(c.text, ev)]
    out = {"random": rng.choice(pool)} if pool else {}
    if hard is not None:
        out["hard_negative"] = hard
    return out


def _retrieve(questions: Sequence[Any], chunks: Sequence[Any], top: int = 10) -> List[List[Tuple[str, float]]]:
    from ragexam.retrieval.bm25 import BM25Retriever

    bm25 = BM25Retriever(progress=False).index([c.chunk_id for c in chunks], [c.text for c in chunks])
    return bm25.search([q.question for q in questions], top)


def _kinds(metrics: Sequence[Any]) -> Dict[str, str]:
    """``{metric name: contrast kind}`` of metric names (the registry) or objects; ``InputError`` for one
    without a contrast."""
    from ragexam.metrics.judge.metric import JudgeMetric, registered, resolve_metrics

    defs = resolve_metrics(list(metrics))
    kinds = {d.name: contrast_kind(d) for d in defs}
    bad = [m for m, k in kinds.items() if k is None]
    if bad:
        able = [n for n, d in registered().items() if isinstance(d, JudgeMetric) and contrast_kind(d)]
        raise InputError(f"judge-check cannot build a contrast set for {', '.join(bad)} (it judges the answer "
                         f"alone); expected metrics that judge contexts or an answer against contexts or the "
                         f"reference: {', '.join(able)}", source="--metric", field="metric")
    return kinds  # type: ignore[return-value]


def build_contrast(qa: Any, corpus: Any, metrics: Sequence[Any], *, chunker: str = "paragraphs:400",
                   limit: Optional[int] = None, seed: int = 12345,
                   notes: Optional[List[str]] = None) -> Dict[str, List[ContrastItem]]:
    """The contrast set of each metric (names or :class:`~ragexam.metrics.judge.metric.JudgeMetric` objects;
    module docstring) from the answerable questions with evidence of ``qa`` (a seeded sample of ``limit`` of
    them) over ``corpus`` chunked with ``chunker``."""
    from ragexam.data.chunking import chunk_corpus
    from ragexam.data.evidence import EvidenceMatcher
    from ragexam.metrics.judge import JudgeItem

    notes = notes if notes is not None else []
    kinds = _kinds(metrics)
    rng = random.Random(seed)
    questions = [q for q in qa if q.answerable and q.evidence and q.ground_truth]
    if limit is not None:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 2:
            raise InputError(f"received {limit!r}; expected an integer >= 2", source="--limit", field="limit")
        questions = sorted(rng.sample(questions, min(limit, len(questions))), key=lambda q: q.query_id)
    if len(questions) < 2:
        raise InputError(f"{qa.source} has {len(questions)} answerable question(s) with evidence and a ground_truth; "
                         "a contrast set needs at least 2", source=str(qa.source), field="evidence")
    chunks = list(chunk_corpus(corpus, chunker))
    by_id = {c.chunk_id: c for c in chunks}
    matcher = EvidenceMatcher()
    hits = _retrieve(questions, chunks)
    refs = [q.ground_truth for q in questions]
    out: Dict[str, List[ContrastItem]] = {m: [] for m in kinds}
    for q, q_hits in zip(questions, hits):
        pos = _evidence_chunks(q, chunks, matcher)
        if not pos:
            notes.append(f"{q.query_id}: no {chunker} chunk holds its evidence whole; left out of the contrast set")
            continue
        negs = _negatives(q, chunks, q_hits, by_id, matcher, rng)
        bad_answer, how = perturb(q.ground_truth, refs, rng)
        ctx = tuple(c.text for c in pos)
        for m, kind in kinds.items():
            out[m].extend(_items(m, kind, q, pos[0], ctx, negs, bad_answer, how, JudgeItem))
    return out


def _items(metric: str, kind: str, q: Any, pos: Any, ctx: Tuple[str, ...], negs: Dict[str, Any], bad_answer: str,
           how: str, make: Callable[..., Any]) -> List[ContrastItem]:
    qid, gt = q.query_id, q.ground_truth

    def one(role: str, positive: bool, contexts: Tuple[str, ...], answer: Optional[str], detail: str) -> ContrastItem:
        return ContrastItem(qid, metric, role, positive, make(f"{qid} [{role}]", q.question, answer, contexts, gt),
                            detail)

    if kind == "contexts":
        return [one("evidence", True, (pos.text,), None, pos.chunk_id)] + [
            one(role, False, (c.text,), None, c.chunk_id) for role, c in negs.items()]
    if kind == "recall":
        rand = negs.get("random")
        return [one("evidence", True, ctx, None, pos.chunk_id)] + (
            [one("random", False, (rand.text,), None, rand.chunk_id)] if rand is not None else [])
    if kind == "grounding":
        return [one("key", True, ctx, gt, "the reference answer"), one("perturbed", False, ctx, bad_answer, how)]
    return [one("key", True, (), gt, "the reference answer"), one("perturbed", False, (), bad_answer, how)]


# --- the verdict ------------------------------------------------------------------------------------------
@dataclass
class Separation:
    """How one metric's scores (under one ``scoring``) separate its positives from its negatives."""

    metric: str
    scoring: str
    auc: Optional[Any]
    by_kind: Dict[str, float]
    mean_pos: Optional[float]
    mean_neg: Optional[float]
    ordered: Optional[float]
    ties: Optional[float]
    n_pairs: int
    verdict: str
    text: str

    @property
    def gap(self) -> Optional[float]:
        return None if self.mean_pos is None or self.mean_neg is None else self.mean_pos - self.mean_neg

    def to_dict(self) -> Dict[str, Any]:
        return {"metric": self.metric, "scoring": self.scoring, "auc": self.auc.to_dict() if self.auc else None,
                "auc_by_negative": self.by_kind, "mean_positive": self.mean_pos, "mean_negative": self.mean_neg,
                "gap": self.gap, "ordered": self.ordered, "ties": self.ties, "n_pairs": self.n_pairs,
                "verdict": self.verdict, "text": self.text}


def _verdict(metric: str, kind: str, a: Any, values: Sequence[float]) -> Tuple[str, str]:
    good, bad = KINDS[kind]
    if a is None:
        return "unknown", f"{metric}: too few judged items to tell"
    where = f"AUC {fmt.num(a.auc, 2)} [{fmt.ci((a.low, a.high), short=False)}]"
    if len(set(values)) <= 1:
        return "does_not", f"this judge does not separate {good} from {bad}: {FLAT} ({where})"
    if a.low >= SEPARATES:
        return "separates", f"this judge separates {good} from {bad}: {where}"
    if a.low > 0.5:
        return "weakly", f"this judge separates {good} from {bad} only weakly: {where}"
    return "does_not", f"this judge does not separate {good} from {bad}: {where}"


def separation(metric: str, scoring: str, rows: Sequence[Tuple[ContrastItem, Optional[float]]], *,
               seed: int, n_resamples: int = 2000, kind: str = "contexts") -> Separation:
    """The :class:`Separation` of judged ``(item, score)`` rows (unjudged rows have ``None``) of a metric whose
    contrast is of ``kind`` (:data:`KINDS`, for the verdict's words)."""
    from ragexam.stats.discrimination import auc, auc_ci

    judged = [(c, s) for c, s in rows if s is not None]
    pos = [(c, s) for c, s in judged if c.positive]
    neg = [(c, s) for c, s in judged if not c.positive]
    a = auc_ci([s for _, s in pos], [s for _, s in neg], [c.query_id for c, _ in pos], [c.query_id for c, _ in neg],
               n_resamples=n_resamples, seed=seed) if pos and neg else None
    kinds = sorted({c.kind for c, _ in neg})
    by_kind = {k: auc([s for _, s in pos], [s for c, s in neg if c.kind == k]) for k in kinds} if pos else {}
    best = {c.query_id: s for c, s in pos}
    pairs = [(best[c.query_id], s) for c, s in neg if c.query_id in best]
    ordered = sum(p > n for p, n in pairs) / len(pairs) if pairs else None
    ties = sum(p == n for p, n in pairs) / len(pairs) if pairs else None
    verdict, text = _verdict(metric, kind, a, [s for _, s in judged])
    mean = (lambda xs: sum(s for _, s in xs) / len(xs) if xs else None)
    return Separation(metric, scoring, a, by_kind, mean(pos), mean(neg), ordered, ties, len(pairs), verdict, text)


@dataclass
class MetricCheck:
    """One metric's check: the items, how many were judged, why the others were not, and the separation under
    each scoring."""

    metric: str
    items: List[ContrastItem]
    scores: Dict[str, Any]
    separations: Dict[str, Separation] = field(default_factory=dict)

    @property
    def n_judged(self) -> int:
        return sum(1 for s in self.scores.values() if s.judged)

    def unjudged(self) -> Dict[str, int]:
        from collections import Counter

        return dict(Counter(s.reason for s in self.scores.values() if not s.judged).most_common())

    def to_dict(self) -> Dict[str, Any]:
        rows = []
        for c in self.items:
            s = self.scores[c.item.item_id]
            rows.append({"query_id": c.query_id, "kind": c.kind, "positive": c.positive, "detail": c.detail,
                         "status": s.status, "score": s.score, "score_sample": s.details.get("score_sample", s.score),
                         "reason": s.reason, "message": s.message, "answer": c.item.answer})
        return {"metric": self.metric, "n": len(self.items), "n_judged": self.n_judged, "unjudged": self.unjudged(),
                "separation": {k: v.to_dict() for k, v in self.separations.items()}, "items": rows}


@dataclass
class JudgeCheck:
    """What ``judge-check`` found: per metric a :class:`MetricCheck`; the judge run; notes."""

    checks: Dict[str, MetricCheck]
    judge_run: Any
    settings: Dict[str, Any]
    notes: List[str] = field(default_factory=list)

    def to_dict(self) -> Dict[str, Any]:
        jr = self.judge_run
        return {"format": CHECK_FORMAT, "settings": self.settings,
                "judge": {"model": jr.model, "endpoint": jr.endpoint, "language": jr.language,
                          "signatures": jr.signatures, "scoring": jr.scoring, "usage": jr.usage, "probe": jr.probe},
                "metrics": {m: c.to_dict() for m, c in self.checks.items()}, "notes": list(self.notes)}


def check_judge(judge: Any, contrast: Dict[str, List[ContrastItem]], *, seed: int = 12345,
                progress: Optional[Callable[[int, int], None]] = None, notes: Optional[List[str]] = None,
                settings: Optional[Dict[str, Any]] = None) -> JudgeCheck:
    """Judge the contrast set with ``judge`` and measure each metric's separation (module docstring); the
    checks are recorded in the judge's cache."""
    run = judge.run(None, {m: [c.item for c in items] for m, items in contrast.items()}, progress=progress)
    checks: Dict[str, MetricCheck] = {}
    for m, items in contrast.items():
        scores = run.items(m)
        mc = MetricCheck(m, items, scores)
        scorings = ["sample"] + (["probability"] if run.scoring.get(m) == "probability" else [])
        kind = contrast_kind(run.definition(m)) or "reference"
        for sc in scorings:
            rows = [(c, _score(scores[c.item.item_id], sc)) for c in items]
            mc.separations[sc] = separation(m, sc, rows, seed=seed, kind=kind)
        checks[m] = mc
    out = JudgeCheck(checks, run, dict(settings or {}), list(notes or []) + list(run.notes))
    _record(judge, out)
    return out


def _score(s: Any, scoring: str) -> Optional[float]:
    """An item's score under ``scoring``: the written one (kept beside a probability score, and kept when only the
    probabilities could not be read), or the probability-weighted one."""
    if scoring == "sample" and s.details.get("score_sample") is not None:
        return float(s.details["score_sample"])
    return float(s.score) if s.judged else None


def _key(judge: Any, metric: str, rubric_sha: str, scoring: str) -> str:
    from ragexam.llm.cache import request_key

    return request_key({"format": CHECK_FORMAT, "kind": "judge-check", "model": judge.model,
                        "endpoint": judge.endpoint, "metric": metric, "rubric_sha": rubric_sha, "scoring": scoring})


def _record(judge: Any, check: JudgeCheck) -> None:
    if judge.cache is None:
        return
    from ragexam.llm.cache import utc_now

    for m, mc in check.checks.items():
        sha = check.judge_run.rubrics[m]["sha"]
        for sc, sep in mc.separations.items():
            a = sep.auc
            judge.cache.put(_key(judge, m, sha, sc), "judge-check", judge.model, judge.endpoint,
                            {"metric": m, "scoring": sc, "verdict": sep.verdict, "text": sep.text,
                             "auc": a.auc if a else None, "low": a.low if a else None, "high": a.high if a else None,
                             "n": len(mc.items), "n_judged": mc.n_judged, "checked": utc_now(),
                             "qa": check.settings.get("qa")})


def recorded_warnings(judge: Any, run: Any) -> List[str]:
    """Warnings for ``ragexam score``: each metric of the judge ``run`` whose recorded judge-check (same model,
    endpoint, rubric and scoring) did not separate."""
    if judge.cache is None:
        return []
    out = []
    for m, r in run.rubrics.items():
        rec = judge.cache.get(_key(judge, m, r["sha"], run.scoring.get(m, "sample")))
        if rec and rec.get("verdict") != "separates":
            out.append(f"judge-check of {m} with this judge ({rec.get('checked', '')[:10]}, {rec.get('qa')}): "
                       f"{rec.get('text')}; read its scores with care")
    return out
