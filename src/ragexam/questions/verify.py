"""The *parse* and *verify* stages: the candidates a pass's replies hold, and the deterministic checks they pass.

:func:`parse` reads every reply into :class:`~ragexam.questions.products.Candidate` s (a failed call, an unusable
reply or an empty one is a call reject in the ledger; an item beyond the number asked for is ``over_count``, a
malformed one ``malformed_item``).  :func:`verify` runs the pure checks of :mod:`.checks`, in task order and in
the order that module lists, stopping at a candidate's first rejection: the question; the evidence (verbatim in a
shown document, offsets stored, other occurrences joined or dropped), the answer and copying; the measured type
(:mod:`.measure`); the title, fragment, guards and premise checks, the answer check; near-duplicates against the questions kept so far.
It returns the candidates still alive, for the LLM checks (:mod:`.llm_checks`).
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence

from ragexam.questions import checks as C
from ragexam.questions import measure as M
from ragexam.questions.products import Candidate, Ledger, Reply, Task
from ragexam.questions.setup import Setup

__all__ = ["parse", "verify"]


def parse(setup: Setup, tasks: Sequence[Task], replies: Dict[str, Reply], ledger: Ledger) -> List[Candidate]:
    """The candidates of ``tasks``' replies, in task order (see the module docstring)."""
    from ragexam.questions.replies import item_fields

    out: List[Candidate] = []
    for t in tasks:
        r = replies[t.key]
        sids = t.section_ids
        base = {"kind": t.kind, "pass": t.pass_no, "call": t.key[:16], "sections": list(sids),
                "seq": [t.pass_no, t.index, 0]}
        if r.status != "ok":
            reason = "call_failed" if r.status == "failed" else "malformed_reply"
            ledger.reject_call(dict(base, reason=reason, stage=C.REASONS[reason][0], detail=f"{r.reason}: {r.message}",
                                    errors=list(r.errors), reply=r.reply))
            continue
        ledger.asked[t.kind] = ledger.asked.get(t.kind, 0) + setup.per_call
        if not r.items:
            ledger.exhausted.add((sids[0], t.kind))
            ledger.reject_call(dict(base, reason="no_questions", stage="reply",
                                    detail=f"the model wrote no {t.kind} question from {', '.join(sids)}"))
            continue
        for j, raw in enumerate(r.items, 1):
            cand = Candidate(f"p{t.pass_no}-c{t.index + 1:04d}-{j}", (t.pass_no, t.index, j), t.kind, t.pass_no,
                             t.key[:16], sids, t.doc_ids, raw)
            given = raw
            if t.focus and isinstance(raw, dict):  # the evidence is the focus sentences, whatever the model says
                given = dict(raw, evidence=list(t.numbers))
            fields, problem = item_fields(given, t.numbers or None)
            if fields is not None:
                cand.question = fields["question"].strip()
                cand.answer = fields["answer"].strip()
                cand.evidence = fields["evidence"]
                cand.cited = fields.get("cited", [])
                cand.model_type = fields["model_type"]
                if cand.question:
                    ledger.proposed.setdefault(sids[0], []).append(" ".join(cand.question.split()))
            if j > setup.per_call:
                cand.rejection = C.Rejection("over_count", f"item {j} of a reply asked for {setup.per_call}")
            elif fields is None:
                cand.rejection = C.Rejection("malformed_item", problem or "malformed")
            out.append(cand)
    return out


def _alive(cands: Sequence[Candidate]) -> List[Candidate]:
    return [x for x in cands if x.rejection is None]


def verify(setup: Setup, cands: Sequence[Candidate], ledger: Ledger) -> List[Candidate]:
    """Run the deterministic checks on ``cands`` (rejections set in place; see the module docstring) and return
    the candidates still alive, each provisionally among the kept questions' bigrams (for the duplicates check)."""
    facts = setup.facts
    live = _alive(cands)
    for x in live:
        x.rejection = C.question_problem(x.question, script=facts.script, foreign=facts.foreign, scripts=facts.scripts,
                                         injection="injection" in setup.checks)
    live = _alive(live)
    if "guards" in setup.checks and live:
        for x, why in zip(live, M.not_questions([x.question for x in live], setup.language)):
            if why:
                x.rejection = C.Rejection("not_a_question", f"{x.question!r} is a {why}" + (
                    " (no question mark, no predicate)" if why == "noun phrase" else
                    " (its last ending is declarative, -ㅂ니다/-습니다)"))
        live = _alive(live)
    _check_evidence(setup, [x for x in live if x.answerable])
    for x in (x for x in live if not x.answerable):
        _check_ooc_evidence(setup, x)
    # duplicates against kept questions and earlier candidates of this pass, in order
    for x in cands:
        if x.rejection is not None:
            continue
        x.grams = M.bigrams(x.question)
        x.rejection = C.find_duplicate(x.grams, ledger.kept_grams, setup.config.dedup_at)
        if x.rejection is None:
            ledger.kept_grams.append((x.cid, x.grams))
    return _alive(cands)


def _check_evidence(setup: Setup, cands: Sequence[Candidate]) -> None:
    """Evidence, answer and copy checks, then the measured type and the meaning guards (see the module
    docstring)."""
    c = setup.config
    facts = setup.facts
    by_sid = setup.by_sid
    pending: List[Candidate] = []
    for x in cands:
        located, problem = C.locate_evidence(x.evidence, shown_docs=x.doc_ids,
                                             shown_texts=[by_sid[s].text for s in x.sections],
                                             corpus_text=facts.corpus_text, contents=facts.contents,
                                             min_chars=c.min_evidence_chars, max_chars=c.max_evidence_chars,
                                             ambiguous=c.ambiguous)
        if problem is None:
            problem = C.answer_problem(x.answer)
        if problem is None:
            spans = C.spans_by_doc(located)
            sentences = "\n".join(M.scope_texts(facts.contents[d], s, "sentence") for d, s in spans.items())
            problem = C.copy_problem(x.question, sentences, located, c.copy_at)
        if problem is not None:
            x.rejection = problem
            continue
        x.located = located
        x.relevant = C.evidence_doc_ids(located, join=c.ambiguous == "join")
        pending.append(x)
    if not pending:
        return
    measured = M.measure_many([x.question for x in pending],
                               [" ".join(loc.normalized for loc in x.located) for x in pending],
                               [_paragraphs(setup, x.located) for x in pending], language=setup.language,
                               latin_is_foreign=facts.script != "latin", lexical_at=c.lexical_at)
    unshared = [x for x, (ov, _, _) in zip(pending, measured) if ov == 0] if "guards" in setup.checks else []
    off = {x.cid for x in unshared if _off_topic(setup, x)}
    for x, (ov, anchors, style) in zip(pending, measured):
        if x.cid in off:
            continue
        x.overlap, x.anchors, x.style = ov, anchors, style
        multi = M.needs_two_documents([loc.doc_ids + loc.other_doc_ids for loc in x.located])
        x.type = M.type_of(multi, x.kind, style)
        x.rejection = _meaning_problem(setup, x)
        if x.rejection is None and C.answer_contained(x.answer, x.located):
            x.answer_check = {"method": "contained"}
        elif x.rejection is None and "guards" in setup.checks:
            x.rejection = C.affirmation_problem(x.question, x.answer, x.located, setup.language)


def _meaning_problem(setup: Setup, x: Candidate) -> Optional[C.Rejection]:
    """The title (``title``), fragment (``fragment``, the focus mode), guards (``guards``) and premise (``premise``)
    checks of a located candidate, first problem only."""
    checks = setup.checks
    problem = None
    if "title" in checks:
        problem = C.title_problem(x.question, [setup.titles_by_doc.get(d, "") for d in x.doc_ids],
                                  [loc.normalized for loc in x.located], setup.language)
    if problem is None and "fragment" in checks and setup.cite == "focus":
        problem = C.fragment_problem(x.answer, x.located, setup.language)
    if problem is None and "guards" in checks:
        # the focus mode imposes the evidence (two sentences for multi): the question must use each of them
        problem = (C.unrelated_evidence(x.question, x.answer, x.located, setup.language)
                   if setup.cite == "focus" else None) or \
            C.polarity_problem(x.question, x.answer, x.located, setup.language) or \
            C.answer_type_problem(x.question, x.answer, x.located, setup.language)
    if problem is None and "premise" in checks:
        problem = C.premise_problem(x.question, x.answer, x.located, setup.language)
    return problem


def _off_topic(setup: Setup, x: Candidate) -> bool:
    """Sets ``off_topic`` when the question (which shares no term with its evidence) shares none with the
    paragraphs around its evidence or the titles of its documents either."""
    context = _paragraphs(setup, x.located) + "\n" + "\n".join(
        dict.fromkeys(setup.titles_by_doc.get(d, "") for d in x.relevant))
    q, ctx = M.terms([x.question, context], setup.language)
    x.rejection = C.topic_problem(q, ctx, context)
    return x.rejection is not None


def _paragraphs(setup: Setup, located: Sequence[C.Located]) -> str:
    spans = C.spans_by_doc(located)
    return "\n".join(M.scope_texts(setup.facts.contents[d], s, "paragraph") for d, s in spans.items())


def _check_ooc_evidence(setup: Setup, x: Candidate) -> None:
    """An out-of-corpus candidate's evidence must occur nowhere in the corpus (``answered_in_corpus``)."""
    found = []
    for i, e in enumerate(x.evidence, 1):
        docs = setup.facts.corpus_text.docs_containing(e) if e.strip() else []
        if docs:
            found.append((i, docs))
    if found:
        i, docs = found[0]
        x.rejection = C.Rejection("answered_in_corpus", f"its evidence {i} occurs in {', '.join(docs[:5])}")
        return
    x.type = "out_of_corpus"
