"""Production traffic to exam candidates: near-duplicates clustered and counted, questions picked, evidence located.

``ragexam traces sample answers.jsonl -n 50 --corpus C --out candidates.jsonl`` (the reading of the answers file
is :func:`ragexam.analysis.answers.traces.sample_traces`; this module gets the distinct questions):

1. **Distinct questions**: the traced questions compared after normalisation (:func:`question_key`: NFKC,
   whitespace, case, trailing ``?!.``); each keeps how many traces asked it, how many had negative feedback
   (:attr:`ragexam.data.traces.meta.Feedback.negative`) or matched a ``--first`` condition, and its most frequent
   phrasing.
2. **Near-duplicates** (:func:`cluster`): the e5 query vectors of the distinct questions (the bundled offline
   e5, :class:`ragexam.retrieval.e5.E5Embedder`, through the embedding cache), taken most frequent first; a
   question joins the most similar earlier *leader* when their cosine is at least ``threshold`` **and** they hold
   the same numbers (the set of digit runs: ``SYNC-409`` and ``SYNC-414`` are different questions however close
   their vectors), else it leads a new cluster.  The default threshold, 0.92, was measured on hand-written
   paraphrases of the it_helpdesk questions (``benchmarks/traces_threshold.py``, docs/measurements/traces.md):
   87 % of same-question pairs at or above it, 2 of 4,497 different-question pairs with the same numbers.
   A cluster's *frequency* is the number of traces of its questions; its question is its leader's most frequent
   phrasing (as users phrase it).
3. **Picking** (:func:`choose`): clusters with flagged traces first (``--first negative`` -- thumbs down --
   or ``--first NAME<X``: a feedback score below ``X``), most flagged first; the rest by ``strategy``:
   ``weighted`` (default: sampling without replacement with probability proportional to frequency -- the
   Efraimidis-Spirakis keys ``u ** (1 / frequency)`` from ``numpy.random.default_rng(seed)`` -- so frequent intents
   are likely and the tail still appears) or ``top`` (the most frequent).
4. **Evidence** (:func:`locate_for_trace`): the evidence locator of ``ragexam locate-evidence``
   (:class:`ragexam.questions.locate.Locator`: candidate sentences and two-sentence windows scored against the
   traced answer by its terms, bigrams, numbers and codes, the question's terms and e5; a confidence from the share
   of the answer the span holds and its margin over the runner-up), with the traced contexts as hints: first among
   the *traced documents* (:func:`hint_documents`: the contexts' ids that are documents of the corpus, or the
   documents holding a context's text) taken together (:meth:`~ragexam.questions.locate.Locator.locate_hinted`: the
   runner-up may be in any of them); when no span there is confident, in the whole corpus (BM25-shortlisted, as
   ``locate-evidence`` searches a question without documents), the more confident of the two kept.  The status is
   ``locate-evidence``'s (:func:`ragexam.questions.locate_set.decide`): *located* (confidence >= the threshold,
   0.6: the span is the candidate's evidence), *uncertain* (a span, not confident: proposed, not written as
   evidence) or *unlocated* (no span holds a fifth of the answer; or no traced answer, or one that declined).
   The located record (``metadata.generation.located``: method, status, scope, hints, confidence, threshold, each
   span with its runner-up and margin, the reason) is the one ``locate-evidence`` writes.  Measured in
   ``benchmarks/traces_threshold.py`` (docs/measurements/traces.md).
5. **Candidates**: a located question is checked like a reviewer's edit
   (:func:`ragexam.questions.review.run_candidate_checks`: the question, the evidence in the corpus, the answer, a
   copy of the evidence, a near-duplicate of a kept candidate) and measured (overlap, anchors, and so the type:
   ``lexical`` or ``meaning``), an uncertain one likewise with its proposed span; one that fails goes to the
   rejects file with its reason (rescuable in review).
   An uncertain or unlocated one is kept with no evidence and ``metadata.generation.verified: false``: accepted
   in ``review apply``, an uncertain one takes its proposed span (checked then); an unlocated one is refused until
   the reviewer gives its evidence or sets its type to ``out_of_corpus`` (a question the corpus does not answer).
   Every candidate has ``metadata.source: "trace"``, ``metadata.frequency`` and ``metadata.trace`` (share of
   traffic, phrasings, trace ids, negative feedback, and the hint trace's ``contexts``: id, rank and text, each cut
   to :data:`CONTEXT_CHARS` characters, for the reviewer).

The files are the ones ``ragexam generate`` writes (:mod:`ragexam.questions.output`): the set, its rejects, its
card and its review sheet, so ``ragexam review apply`` (and the review in the browser) take it as it is.
"""

from __future__ import annotations

import difflib
import re
from collections import Counter
from pathlib import Path
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Dict, FrozenSet, List, Mapping, Optional, Sequence, Tuple

from ragexam import fmt
from ragexam.errors import InputError

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from ragexam.data.evidence import CorpusText
    from ragexam.data.schema import Corpus
    from ragexam.data.traces.meta import TraceMeta
    from ragexam.questions.checks import CorpusFacts
    from ragexam.questions.locate import LocateSettings, Locator
    from ragexam.questions.review import CheckSettings
    from ragexam.retrieval.cache import Cache
    from ragexam.retrieval.embedders import Embedder

__all__ = ["TrafficQuestion", "Hint", "Cluster", "SampleConfig", "SampleResult", "Evidence", "question_key",
           "parse_first", "FirstCondition", "first_notes", "cluster", "choose", "hint_documents", "locate_for_trace",
           "sample", "write_sample",
           "DEFAULT_THRESHOLD", "CONTEXT_CHARS"]

#: cosine at which two questions with the same numbers are near-duplicates (module docstring, 2.)
DEFAULT_THRESHOLD = 0.92
#: characters of each traced context kept on a candidate for the reviewer (``metadata.trace.contexts``)
CONTEXT_CHARS = 4_000
_DIGITS = re.compile(r"\d+")
_SENTENCE = re.compile(r"(?<=[.!?。])\s+|\n+")
#: sentences of a context whose documents are looked for, when the context as a whole is in no document
_CONTEXT_SENTENCES = 6
_TRAILING = re.compile(r"[\s?!.。？！]+$")


def _locate_settings() -> "LocateSettings":
    from ragexam.questions.locate import LocateSettings

    return LocateSettings()


def question_key(text: str) -> str:
    """The form two traced questions are compared in (module docstring, 1.)."""
    from ragexam.data.normalization import normalize

    return _TRAILING.sub("", " ".join(normalize(text).lower().split()))


@dataclass
class TrafficQuestion:
    """One distinct question of the traffic (module docstring, 1.); ``hint`` is the line of the trace whose answer
    and contexts are the evidence hints (one with an answer, without negative feedback, with contexts when
    there is one)."""

    key: str
    variants: Counter = field(default_factory=Counter)
    count: int = 0
    negative: int = 0
    flagged: int = 0
    trace_ids: List[str] = field(default_factory=list)
    hint: Optional[int] = None
    hint_rank: Tuple[int, int, int] = (-1, -1, -1)

    @property
    def text(self) -> str:
        """The most frequent phrasing (the first seen among equals)."""
        return self.variants.most_common(1)[0][0]


@dataclass(frozen=True)
class Hint:
    """What the chosen trace of a question recorded."""

    query_id: str
    answer: Optional[str]
    contexts: Tuple[str, ...]
    context_ids: Tuple[str, ...]
    negative: bool


@dataclass
class Cluster:
    """Near-duplicate questions (indexes into the distinct questions; the leader first) and their traffic."""

    members: List[int]
    count: int = 0
    negative: int = 0
    flagged: int = 0
    picked_as: str = ""


@dataclass(frozen=True)
class SampleConfig:
    """The settings of a sample (module docstring)."""

    n: int
    threshold: float = DEFAULT_THRESHOLD
    strategy: str = "weighted"
    seed: int = 12345
    first: Tuple[str, ...] = ()
    id_prefix: str = "trace"
    redact: bool = False
    #: the evidence locator's settings (module docstring, 4.)
    locate: "LocateSettings" = field(default_factory=lambda: _locate_settings())


@dataclass
class SampleResult:
    """The candidates (QA records), the rejects and the card (module docstring, 5.)."""

    records: List[Dict[str, Any]]
    rejects: List[Dict[str, Any]]
    card: Dict[str, Any]

    @property
    def shortfall(self) -> int:
        return max(0, self.card["n_requested"] - len(self.records))


@dataclass(frozen=True)
class Evidence:
    """What :func:`locate_for_trace` found: ``status`` (located, uncertain, unlocated), the ``texts`` written as
    evidence (a located one's span), the ``proposed`` span (also an uncertain one's), its ``confidence``, the
    ``reason`` and the ``record``: the located record ``ragexam locate-evidence`` writes (module docstring, 4.)."""

    status: str
    texts: Tuple[str, ...] = ()
    proposed: Tuple[str, ...] = ()
    confidence: Optional[float] = None
    reason: str = ""
    record: Dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> Dict[str, Any]:
        """The located record (``metadata.generation.located``)."""
        return dict(self.record) if self.record else {"method": "offline", "status": self.status,
                                                       "reason": self.reason}


class _Seen:
    """What the ``--first`` conditions of one sample met in the traffic: the feedback names (with the lowest value
    each), the traces with negative feedback, and how many traces each condition matched."""

    def __init__(self) -> None:
        self.lowest: Dict[str, Optional[float]] = {}
        self.negative = 0
        self.matched: List[int] = []


class FirstCondition:
    """One ``--first`` condition (:func:`parse_first`): called on a trace's
    :class:`~ragexam.data.traces.meta.TraceMeta`, true when the trace is flagged.  The first condition of a parse,
    called on every trace, tests them all and keeps what the traffic held (:func:`first_notes`)."""

    def __init__(self, text: str, seen: _Seen, conditions: List["FirstCondition"], name: Optional[str] = None,
                 op: str = "<", x: float = 0.0) -> None:
        self.text, self.name, self.op, self.x = text, name, op, x
        self.seen, self.conditions, self.index = seen, conditions, len(conditions)
        seen.matched.append(0)

    def test(self, meta: Optional["TraceMeta"]) -> bool:
        if meta is None:
            return False
        if self.name is None:
            return bool(meta.negative)
        return any(f.name == self.name and f.value is not None and (f.value < self.x if self.op == "<" else
                                                                      f.value <= self.x) for f in meta.feedback)

    def __call__(self, meta: Optional["TraceMeta"]) -> bool:
        if self.index == 0:
            self._watch(meta)
        return self.test(meta)

    def _watch(self, meta: Optional["TraceMeta"]) -> None:
        seen = self.seen
        if meta is not None:
            seen.negative += bool(meta.negative)
            for f in meta.feedback:
                low = seen.lowest.get(f.name)
                seen.lowest[f.name] = f.value if low is None else low if f.value is None else min(low, f.value)
        for c in self.conditions:
            seen.matched[c.index] += c.test(meta)


def parse_first(items: Sequence[str]) -> List[FirstCondition]:
    """``--first`` conditions as tests of a :class:`~ragexam.data.traces.meta.TraceMeta`: ``negative`` (also
    ``thumbs-down``) or ``NAME<X`` / ``NAME<=X`` on a feedback value."""
    seen = _Seen()
    out: List[FirstCondition] = []
    for item in items:
        s = item.strip()
        if s.lower() in ("negative", "thumbs-down", "thumbs_down"):
            out.append(FirstCondition(s, seen, out))
            continue
        m = re.match(r"^([\w.\-]+)\s*(<=|<)\s*(-?[0-9]*\.?[0-9]+)$", s)
        if m is None:
            raise InputError(f"received {item!r}; expected negative (thumbs down) or NAME<X, e.g. "
                             "faithfulness<0.5 (a feedback score recorded on the trace)", source="--first",
                             field="first")
        out.append(FirstCondition(s, seen, out, m.group(1), m.group(2), float(m.group(3))))
    return out


def first_notes(conditions: Sequence[FirstCondition]) -> List[str]:
    """A note for each ``--first`` condition no trace met (after the traffic was read): it changed nothing, and
    what the traces do hold."""
    if not conditions:
        return []
    seen = conditions[0].seen
    names = sorted(seen.lowest)
    have = (f"the traces have: {', '.join(names[:10])}" + (" ..." if len(names) > 10 else "")) if names else \
        "no trace has any feedback score"
    notes = []
    for c in conditions:
        if seen.matched[c.index]:
            continue
        if c.name is None:
            why = "no trace has negative feedback (thumbs down or a negative label)"
        elif c.name not in seen.lowest:
            close = difflib.get_close_matches(c.name, names, n=1, cutoff=0.8)
            why = f"no trace has a feedback score named {c.name!r}" + (f" (did you mean {close[0]!r}?)" if close
                                                                        else "") + f"; {have}"
        elif seen.lowest[c.name] is None:
            why = f"no trace has a number for {c.name!r} (its feedback has labels only)"
        else:
            why = f"no trace has {c.name} {c.op} {c.x:g} (its lowest is {fmt.num(seen.lowest[c.name], 3)})"
        notes.append(f"--first {c.text} picked nothing first: {why}; the sample is as without it")
    return notes


def _digit_ids(texts: Sequence[str]) -> "np.ndarray":
    import numpy as np

    ids: Dict[frozenset, int] = {}
    return np.array([ids.setdefault(frozenset(_DIGITS.findall(t)), len(ids)) for t in texts], dtype=np.int64)


def cluster(vectors: "np.ndarray", texts: Sequence[str], threshold: float, batch: int = 512) -> "np.ndarray":
    """The leader of every row of ``vectors`` (L2-normalised, in processing order) by the rule of the module
    docstring (2.): ``labels[i]`` is the index of the leader ``i`` joined (``i`` itself for a leader)."""
    import numpy as np

    n = len(texts)
    labels = np.full(n, -1, dtype=np.int64)
    if not n:
        return labels
    digits = _digit_ids(texts)
    dim = vectors.shape[1]
    leaders = np.empty((n, dim), dtype=np.float32)
    leader_ids = np.empty(n, dtype=np.int64)
    m = 0
    for start in range(0, n, batch):
        block = vectors[start:start + batch]
        idx = np.arange(start, start + len(block))
        rest = idx
        if m:
            sims = block @ leaders[:m].T
            sims[digits[idx][:, None] != digits[leader_ids[:m]][None, :]] = -2.0
            best = sims.argmax(axis=1)
            hit = sims[np.arange(len(block)), best] >= threshold
            labels[idx[hit]] = leader_ids[best[hit]]
            rest = idx[~hit]
        if not len(rest):
            continue
        inner = vectors[rest] @ vectors[rest].T
        new: List[int] = []
        for j in range(len(rest)):
            if new:
                cand = inner[j, new]
                cand[digits[rest[j]] != digits[rest[new]]] = -2.0
                k = int(cand.argmax())
                if cand[k] >= threshold:
                    labels[rest[j]] = rest[new[k]]
                    continue
            new.append(j)
            labels[rest[j]] = rest[j]
        for j in new:
            leaders[m], leader_ids[m] = vectors[rest[j]], rest[j]
            m += 1
    return labels


def choose(clusters: List[Cluster], n: int, *, strategy: str, seed: int) -> List[Cluster]:
    """The ``n`` clusters to review (module docstring, 3.), each with ``picked_as`` set."""
    import numpy as np

    if strategy not in ("weighted", "top"):
        raise InputError(f"received {strategy!r}; expected weighted or top", source="--strategy", field="strategy")
    flagged = sorted((c for c in clusters if c.flagged), key=lambda c: (-c.flagged, -c.count, c.members[0]))[:n]
    for c in flagged:
        c.picked_as = "first"
    rest = [c for c in clusters if not c.flagged]
    k = n - len(flagged)
    if k <= 0 or not rest:
        return flagged
    if strategy == "top":
        chosen = sorted(rest, key=lambda c: (-c.count, c.members[0]))[:k]
    else:
        rng = np.random.default_rng(seed)
        w = np.array([c.count for c in rest], dtype=np.float64)
        keys = rng.random(len(rest)) ** (1.0 / w)
        chosen = [rest[i] for i in np.argsort(-keys, kind="stable")[:k]]
    for c in chosen:
        c.picked_as = strategy
    return flagged + chosen


def _sentences(text: str) -> List[str]:
    return [p.strip() for p in _SENTENCE.split(text) if p and p.strip()]


def hint_documents(hint: Hint, documents: Mapping[str, Any], corpus_text: "CorpusText") -> List[str]:
    """The corpus documents a trace retrieved (module docstring, 4.), in its order: a context's id when it is a
    document of the corpus (or a chunk id ``DOC#N`` of one), else the documents holding the context's text, else
    those holding one of its first sentences."""
    out: List[str] = []
    for i, ctx in enumerate(hint.contexts or ()):
        cid = hint.context_ids[i] if i < len(hint.context_ids) else ""
        if cid and cid in documents:
            out.append(cid)
            continue
        if cid and "#" in cid and cid.rsplit("#", 1)[0] in documents:
            out.append(cid.rsplit("#", 1)[0])
            continue
        found = corpus_text.docs_containing(ctx) if ctx.strip() else []
        for sent in _sentences(ctx)[:_CONTEXT_SENTENCES] if not found else ():
            found = corpus_text.docs_containing(sent) if len(sent) >= 8 else []
            if found:
                break
        out.extend(found[:3])
    return list(dict.fromkeys(out))


def locate_for_trace(question: str, hint: Optional[Hint], locator: "Locator", corpus_text: "CorpusText"
                     ) -> Evidence:
    """The evidence of a traced question, located from its trace's answer with the trace's documents as hints
    (module docstring, 4.)."""
    from ragexam.metrics.verdicts import is_abstention
    from ragexam.questions.locate_set import decide, located_record, status_reason

    if hint is None or hint.answer is None or not hint.answer.strip():
        return Evidence("unlocated", reason="no traced answer (the request failed or no trace answered it): nothing "
                                            "to locate")
    if is_abstention(hint.answer):
        return Evidence("unlocated", reason="the traced answer declined: if the corpus does not answer it either, "
                                            "mark it out of corpus in the review")
    settings = locator.settings
    docs = hint_documents(hint, locator.documents, corpus_text)
    loc, scope, notes = None, "corpus", []
    if docs:
        loc, scope = locator.locate_hinted(question, hint.answer, docs), "hints"
    elif hint.contexts:
        notes.append("no traced context is a document of the corpus")
    else:
        notes.append("the trace recorded no contexts")
    if loc is None or not loc.confident(settings.threshold):
        wide = locator.locate(question, hint.answer, ())[0]
        if loc is None or wide.confidence > loc.confidence:
            loc, scope = wide, "corpus"
            notes.append("the whole corpus was searched" + (" (the traced documents held no confident span)"
                                                            if docs else ""))
    status, conf = decide([loc], settings.threshold)
    reason = status_reason(status, [loc], settings.threshold, "; ".join(notes))
    record = located_record([loc], settings, status, conf, scope=scope, reason=reason)
    record["hints"] = docs
    proposed = (loc.best.span.text,) if loc.best is not None else ()
    return Evidence(status, proposed if status == "located" else (), proposed if status != "unlocated" else (),
                    round(conf, 4), reason, record)


def _record(qid: str, c: Cluster, distinct: List[TrafficQuestion], hint: Optional[Hint], ev: Evidence,
            total: int) -> Dict[str, Any]:
    """A candidate's QA record before its checks (module docstring, 5.)."""
    lead = distinct[c.members[0]]
    phrasings: Counter = Counter()
    for i in c.members:
        phrasings.update(distinct[i].variants)
    trace_ids = [t for i in c.members for t in distinct[i].trace_ids][:20]
    traffic = {"frequency": c.count, "share": round(c.count / total, 6) if total else None, "distinct_phrasings":
               len(phrasings), "phrasings": [[t, k] for t, k in phrasings.most_common(5)], "trace_ids": trace_ids,
               "negative_feedback": c.negative, "flagged": c.flagged, "picked_as": c.picked_as,
               "hint_trace": hint.query_id if hint is not None else None, "contexts": _contexts(hint)}
    g: Dict[str, Any] = {"kind": "meaning", "origin": "trace", "review": "pending", "evidence_status": ev.status,
                         "located": ev.to_dict(), "verified": ev.status == "located",
                         "answer_check": {"method": "traced", "feedback": "negative" if hint and hint.negative
                                          else "none"}, "sections": [],
                         "hint_doc_ids": list(hint.context_ids) if hint is not None else []}
    rec: Dict[str, Any] = {"query_id": qid, "question": lead.text, "relevant_doc_ids": [],
                           "evidence": list(ev.texts),
                           "ground_truth": hint.answer if hint is not None and hint.answer else "", "answerable": True,
                           "metadata": {"source": "trace", "frequency": c.count, "generation": g, "trace": traffic}}
    return rec


def _contexts(hint: Optional[Hint]) -> List[Dict[str, Any]]:
    """The hint trace's contexts as the reviewer sees them: id, rank, text (cut to :data:`CONTEXT_CHARS`)."""
    if hint is None:
        return []
    ids = list(hint.context_ids) + [""] * max(0, len(hint.contexts) - len(hint.context_ids))
    return [{"doc_id": ids[i] or None, "rank": i + 1, "text": c[:CONTEXT_CHARS],
             **({"cut": len(c)} if len(c) > CONTEXT_CHARS else {})} for i, c in enumerate(hint.contexts)]


def _clusters(distinct: List[TrafficQuestion], order: List[int], labels: "np.ndarray") -> List[Cluster]:
    by_leader: Dict[int, Cluster] = {}
    for pos, i in enumerate(order):
        lead = int(labels[pos])
        c = by_leader.setdefault(lead, Cluster([]))
        c.members.append(i)
        q = distinct[i]
        c.count += q.count
        c.negative += q.negative
        c.flagged += q.flagged
    return list(by_leader.values())


def _embed(texts: List[str], embedder: "Embedder", cache: Optional["Cache"]) -> "np.ndarray":
    import numpy as np

    from ragexam.retrieval.embedding import embed_cached

    vecs = embed_cached(embedder, texts, "query", cache, batch_size=64).astype(np.float32, copy=False)
    norms = np.linalg.norm(vecs, axis=1, keepdims=True)
    return vecs / np.where(norms > 0, norms, 1.0)


def _hint_line(c: Cluster, distinct: List[TrafficQuestion]) -> Optional[int]:
    best = max(c.members, key=lambda i: (distinct[i].hint_rank, -i))
    return distinct[best].hint


def _reject(rec: Dict[str, Any], reason: str, detail: str) -> Dict[str, Any]:
    from ragexam.questions.checks import REASONS

    g = rec["metadata"]["generation"]
    return {"reason": reason, "stage": REASONS.get(reason, ("check", ""))[0], "detail": detail, "kind": "meaning",
            "cid": rec["query_id"], "question": rec["question"], "answer": rec["ground_truth"],
            "evidence": rec["evidence"], "sections": [], "located": g["located"],
            "trace": rec["metadata"]["trace"]}


def _check(rec: Dict[str, Any], hint: Optional[Hint], facts: "CorpusFacts", settings: "CheckSettings",
           others: List[Tuple[str, FrozenSet[str]]]) -> Optional[Tuple[str, str]]:
    """Check and measure a candidate (module docstring, 5.); ``(reason, detail)`` when it fails.  An uncertain one
    is checked with its proposed span (what accepting it would write), and kept without evidence."""
    from ragexam.questions import checks as C
    from ragexam.questions import measure as M
    from ragexam.questions.locate_review import proposed_texts
    from ragexam.questions.review import checked_record, run_candidate_checks

    g = rec["metadata"]["generation"]
    evidence = rec["evidence"] or (proposed_texts(g["located"]) if g["evidence_status"] == "uncertain" else [])
    if evidence:
        rep = run_candidate_checks(rec["question"], rec["ground_truth"], evidence, answerable=True, kind="meaning",
                                   facts=facts, settings=settings, others=others,
                                   passage_docs=g["located"].get("hints") or [])
        if not rep.ok:
            step = rep.failures[0]
            return step.reason, step.detail
        if rec["evidence"]:
            checked_record(rec, rep, [])
        return None
    problem = C.question_problem(rec["question"], script=facts.script, foreign=facts.foreign, scripts=facts.scripts) \
        or C.find_duplicate(M.bigrams(rec["question"]), others, settings.dedup_at)
    return (problem.reason, problem.detail) if problem is not None else None


def _note(rec: Dict[str, Any], language: str = "en") -> str:
    """The review sheet's note on a candidate, in the corpus's language (``ko``: Korean; the locator's reason in
    parentheses stays as it wrote it)."""
    from ragexam.questions.locate_review import proposed_texts

    ko = language == "ko"
    g, t = rec["metadata"]["generation"], rec["metadata"]["trace"]
    n, phrasings, negative = t["frequency"], t["distinct_phrasings"], t["negative_feedback"]
    parts = [f"요청 {n}건, 표현 {phrasings}가지" if ko else
             f"{fmt.plural(n, 'trace')}, {fmt.plural(phrasings, 'phrasing')}"]
    if negative:
        parts.append(f"부정 피드백 {negative}건: 답을 확인하세요" if ko else
                     f"{negative} with negative feedback: check the answer")
    ev, status = g["located"], g["evidence_status"]
    reason = ev.get("reason", "")
    if status == "unlocated":
        parts.append(f"근거를 찾지 못함 ({reason}): 문서에서 근거를 붙여 넣거나, type을 out_of_corpus로 바꾸세요" if ko
                     else f"evidence not found ({reason}): paste it, or set type to out_of_corpus")
    elif status == "uncertain":
        proposed = " / ".join(proposed_texts(ev))
        parts.append(f"근거 불확실 ({reason}); 제안: {proposed} -- 승인하면 이 근거를 씁니다. 다른 근거를 붙여 넣어도 "
                     "됩니다" if ko else f"evidence uncertain ({reason}); proposed: {proposed} -- accepting takes it; "
                     "or paste other evidence")
    else:
        conf = f"{ev.get('confidence', 0):.2f}"
        parts.append(f"근거 찾음, 확신도 {conf} ({ev.get('scope')})" if ko else
                     f"evidence located with confidence {conf} ({ev.get('scope')})")
    return "; ".join(parts)


def _signature(config: SampleConfig, settings: "CheckSettings", embedder: "Embedder", locate: "LocateSettings"
               ) -> str:
    from ragexam.data.normalization import normalization_signature
    from ragexam.signature import Signature

    return str(Signature([
        ("sample", "traces"), ("n", config.n), ("strategy", config.strategy), ("seed", config.seed),
        ("first", "+".join(config.first) or "none"), ("near_dup", f"e5-cos>={config.threshold:g}+same-digits"),
        ("embedder", getattr(embedder, "identity", "?")),
        ("locate", f"offline/1>={locate.threshold:g}+hints+corpus{'' if locate.semantic else '+no-e5'}"),
        ("evidence", f"{settings.min_evidence_chars}-{settings.max_evidence_chars}"), ("ambiguous", "join"),
        ("lexical_at", settings.lexical_at), ("dedup", f"bigram-jaccard>={settings.dedup_at:g}"),
        ("copy", f"bigram-share>={settings.copy_at:g}"), ("redact", "pii" if config.redact else "none"),
        ("norm", normalization_signature().split(":", 1)[1])]))


def sample(distinct: List[TrafficQuestion], load_hints: Callable[[List[int]], Dict[int, Hint]], corpus: "Corpus",
           config: SampleConfig, *, traces: int, source: str, embedder: Optional["Embedder"] = None,
           cache: Optional["Cache"] = None) -> SampleResult:
    """Candidates from the distinct questions of ``traces`` traced requests (module docstring).  ``load_hints``
    reads the hint traces at the given answers-file lines; ``embedder`` defaults to the offline e5 and ``cache``
    to the retrieval cache."""
    if config.n < 1:
        raise InputError(f"received {config.n}; expected at least 1", source="-n", field="n")
    if not 0 < config.threshold <= 1:
        raise InputError(f"received {config.threshold}; expected a cosine in (0, 1]", source="--threshold",
                         field="threshold")
    if embedder is None:
        from ragexam.retrieval.e5 import E5Embedder

        embedder = E5Embedder()
    if cache is None:
        from ragexam.retrieval.cache import open_cache

        cache = open_cache(True, None)
    order = sorted(range(len(distinct)), key=lambda i: (-distinct[i].count, i))
    texts = [distinct[i].text for i in order]
    clusters = _clusters(distinct, order, cluster(_embed(texts, embedder, cache), texts, config.threshold))
    run = _Sampling(config, corpus, distinct, clusters, embedder, cache)
    run.pick(choose(clusters, len(clusters), strategy=config.strategy, seed=config.seed), load_hints)
    return SampleResult(run.records, run.rejects, run.card(embedder, traces, source))


class _Sampling:
    """One sample's state: the corpus facts and check settings, the redactor, and the candidates kept so far."""

    def __init__(self, config: SampleConfig, corpus: "Corpus", distinct: List[TrafficQuestion],
                 clusters: List[Cluster], embedder: Optional["Embedder"] = None, cache: Optional["Cache"] = None
                 ) -> None:
        from ragexam.llm.redact import PiiRedactor
        from ragexam.questions.checks import CorpusFacts
        from ragexam.questions.locate import Locator
        from ragexam.questions.review import CheckSettings

        self.config, self.corpus, self.distinct, self.clusters = config, corpus, distinct, clusters
        self.facts = CorpusFacts.build(corpus.documents)
        self.locator = Locator(corpus.documents, config.locate, embedder=embedder, cache=cache)
        self.settings = CheckSettings.from_card({})
        self.redactor = PiiRedactor() if config.redact else None
        self.asked = sum(q.count for q in distinct)
        self.records: List[Dict[str, Any]] = []
        self.rejects: List[Dict[str, Any]] = []
        self.others: List[Tuple[str, FrozenSet[str]]] = []

    def pick(self, ordered: List[Cluster], load_hints: Callable[[List[int]], Dict[int, Hint]]) -> None:
        """Candidates from ``ordered`` clusters until ``n`` are kept (their hint traces read a chunk at a time)."""
        n, pos = self.config.n, 0
        while len(self.records) < n and pos < len(ordered):
            chunk = ordered[pos:pos + max(3 * (n - len(self.records)), 16)]
            hints = load_hints([x for x in (_hint_line(c, self.distinct) for c in chunk) if x is not None])
            for c in chunk:
                if len(self.records) >= n:
                    break
                pos += 1
                line = _hint_line(c, self.distinct)
                self._candidate(f"{self.config.id_prefix}_{pos:04d}", c, hints.get(line) if line is not None else None)

    def _candidate(self, qid: str, c: Cluster, hint: Optional[Hint]) -> None:
        from ragexam.questions import measure as M

        ev = locate_for_trace(self.distinct[c.members[0]].text, hint, self.locator, self.facts.corpus_text)
        rec = _record(qid, c, self.distinct, hint, ev, self.asked)
        if self.redactor is not None:
            r, t = self.redactor, rec["metadata"]["trace"]
            rec["question"], rec["ground_truth"] = r.text(rec["question"]), r.text(rec["ground_truth"])
            t["phrasings"] = r.value(t["phrasings"])
            for ctx in t["contexts"]:
                ctx["text"] = r.text(ctx["text"])
        failed = _check(rec, hint, self.facts, self.settings, self.others)
        if failed is not None:
            self.rejects.append(_reject(rec, *failed))
            return
        rec["metadata"]["generation"]["to_reviewer"] = _note(rec, self.facts.language)
        self.records.append(rec)
        self.others.append((rec["query_id"], M.bigrams(rec["question"])))

    def card(self, embedder: "Embedder", traces: int, source: str) -> Dict[str, Any]:
        """The set's card (as ``ragexam generate`` writes one; ``kind: traces``)."""
        from ragexam.questions.checks import REASONS
        from ragexam.questions.output import CARD_FORMAT

        records, config = self.records, self.config
        reasons = Counter(r["reason"] for r in self.rejects)
        covered = sum(r["metadata"]["frequency"] for r in records)
        sizes = sorted((c.count for c in self.clusters), reverse=True)
        return {
            "format": CARD_FORMAT, "kind": "traces",
            "signature": _signature(config, self.settings, embedder, config.locate),
            "corpus": {"source": self.corpus.source, "n_documents": len(self.corpus.documents),
                       "language": self.facts.language, "script": self.facts.script},
            "n_requested": config.n, "n_kept": len(records), "shortfall": max(0, config.n - len(records)),
            "traffic": {"answers": source, "traces": traces, "with_question": self.asked,
                        "distinct_questions": len(self.distinct), "clusters": len(self.clusters),
                        "largest_clusters": sizes[:5],
                        "clusters_with_negative_feedback": sum(1 for c in self.clusters if c.negative),
                        "traces_covered": covered, "share_covered": round(covered / self.asked, 6) if self.asked
                        else None},
            "picked": dict(Counter(r["metadata"]["trace"]["picked_as"] for r in records)),
            "evidence": dict(Counter(r["metadata"]["generation"]["evidence_status"] for r in records)),
            "types": dict(Counter(r.get("type") or "(unknown until the evidence is given)" for r in records)),
            "rejections": dict(reasons), "rejection_meanings": {k: REASONS.get(k, ("", k))[1] for k in reasons},
            "redacted": dict(self.redactor.counts) if self.redactor is not None else {},
            "notes": ["the evidence is located from the traced answer by the locator of `ragexam locate-evidence`, in "
                      "the traced documents first, then in the whole corpus: a span below the confidence threshold "
                      f"({config.locate.threshold:g}) is proposed, not written; the ground truth is the traced "
                      "answer: check both in the review"],
        }


def write_sample(result: SampleResult, out: "str | Path") -> Dict[str, Path]:
    """Write the set, its rejects, its card and its review sheet (:mod:`ragexam.questions.output`)."""
    import json

    from ragexam.questions.output import _jsonl, _review_rows, _write, side_paths

    paths = side_paths(out)
    _write(paths["qa"], _jsonl(result.records))
    _write(paths["rejects"], _jsonl(result.rejects))
    _write(paths["card"], json.dumps(result.card, ensure_ascii=False, indent=2, allow_nan=False) + "\n")
    _write(paths["review"], "\ufeff" + _review_rows(result.records))
    return paths


# -- traced questions that are exam questions (``ragexam score`` on traced answers) --------------------------------

__all__ += ["ExamMatch", "match_exam"]


@dataclass(frozen=True)
class ExamMatch:
    """A traced question's exam question: its index in the exam's list, ``exact`` (the same :func:`question_key`)
    or ``near`` (the rule of the clusters, module docstring 2.: e5 cosine at least the threshold and the same
    numbers), and the cosine (``None`` for an exact match)."""

    index: int
    how: str
    cosine: Optional[float] = None


def match_exam(traced: Sequence[str], exam: Sequence[str], *, threshold: float = DEFAULT_THRESHOLD,
               embedder: Optional["Embedder"] = None, cache: Optional["Cache"] = None
               ) -> List[Optional[ExamMatch]]:
    """For each traced question, the exam question it is (or ``None``): the same after normalisation, else the
    most similar exam question with the same numbers whose e5 cosine is at least ``threshold`` -- the
    near-duplicate rule and measured threshold of the clusters (module docstring 2.).  The embedder (default the
    offline e5, through the retrieval cache) runs only when some traced question is not an exact match."""
    keys: Dict[str, int] = {}
    for i, q in enumerate(exam):
        keys.setdefault(question_key(q), i)
    out: List[Optional[ExamMatch]] = [ExamMatch(keys[k], "exact") if (k := question_key(t)) in keys else None
                                      for t in traced]
    rest = [i for i, m in enumerate(out) if m is None]
    if not rest or not exam:
        return out
    if embedder is None:
        from ragexam.retrieval.e5 import E5Embedder

        embedder = E5Embedder()
    if cache is None:
        from ragexam.retrieval.cache import open_cache

        cache = open_cache(True, None)
    texts = [traced[i] for i in rest]
    sims = _embed(texts, embedder, cache) @ _embed(list(exam), embedder, cache).T
    digits = _digit_ids(texts + list(exam))
    sims[digits[:len(texts)][:, None] != digits[len(texts):][None, :]] = -2.0
    best = sims.argmax(axis=1)
    for j, i in enumerate(rest):
        cos = float(sims[j, best[j]])
        if cos >= threshold:
            out[i] = ExamMatch(int(best[j]), "near", round(cos, 4))
    return out
