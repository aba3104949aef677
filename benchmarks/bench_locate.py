"""Benchmark: does ``ragexam locate-evidence`` find the evidence a person marked, and does its confidence mean it?

Every set's evidence is stripped and located again from the question, the answer key and the relevant documents
(:class:`ragexam.questions.locate.Locator`, no model); each located span is compared with the original evidence:
it *agrees* when it lies in the original's document and contains it, or overlaps at least half of it (the issue's
rule).  A question is *located with confidence* when every one of its relevant documents got a span of confidence
>= the threshold (that is when ``locate-evidence`` writes evidence); it *agrees* when every such span agrees.

Sets (``--sets``; all by default):

``bundled``       it_helpdesk + ai_concepts (77 answerable questions, 90 question-document pairs), their own keys
``paraphrased``   the same questions with keys that do not quote the documents: it_helpdesk's answers.jsonl
                  ``correct`` answers (44, written to paraphrase the key) and ai_concepts keys rewritten by hand
                  (``benchmarks/data/locate/ai_concepts_paraphrased.jsonl``, 12)
``long-pages``    it_helpdesk with its 18 documents joined into 3 long pages of 6 (about 8,500 characters each,
                  like PDF pages), the relevant page instead of the document
``answers-only``  ``bundled`` without relevant documents: the whole corpus is searched
``handbook``      another domain, keys a model wrote: the HR handbook of the generator's tests
                  (``tests/data/generate_handbook_corpus.jsonl``, 12 documents) with the questions and answer keys
                  the local 1.5B model wrote about focus sentences that a person labelled *good*
                  (``tests/data/generate_focus_labelled.json``: 59 distinct questions; many keys are a few words,
                  "1km당 250원"), the focus sentence as the original evidence
``--set C Q``     any corpus and question set with evidence (repeatable)

The threshold is chosen on a **calibration half** only (``bundled``'s questions with an odd number): the lowest
threshold at which >= 95 % of the calibration half's confident questions agree.  Every other question (the even
half of ``bundled`` and every other set) is **held out**: the numbers printed for them are what the threshold does on
data it was not chosen on.  Printed per set and question type: located with confidence, agreement among them, the
confidence-vs-agreement curve; with ``--json`` all of it as data.

    python benchmarks/bench_locate.py [--sets bundled,paraphrased,...] [--set CORPUS QA] [--no-e5] [--json]

Goal (issue 36): on ``bundled``, >= 90 % located with confidence and >= 95 % of those agree, no model.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench import machine_line  # noqa: E402

DATA = Path(__file__).resolve().parent / "data" / "locate"
SETS = ("bundled", "paraphrased", "long-pages", "answers-only", "handbook")
ROOT = Path(__file__).resolve().parents[1]
TARGET_AGREEMENT = 0.95


@dataclass
class Item:
    """One question to locate: its documents (``[]``: the whole corpus) and the original evidence occurrences
    ``[(doc_id, start, end), ...]`` per evidence string."""

    set: str
    query_id: str
    type: str
    question: str
    answer: Optional[str]
    docs: List[str]
    original: List[List[Tuple[str, int, int]]]
    calibration: bool = False
    located: List[dict] = field(default_factory=list)
    #: a trial in a document that does not hold the answer (seeded pick among the others): its confidence
    negative: Optional[float] = None


def _occurrences(corpus, evidence: Sequence[str]) -> List[List[Tuple[str, int, int]]]:
    from ragexam.data.evidence import CorpusText

    ct = CorpusText(list(corpus))
    return [[(o.doc_id, o.start, o.end) for o in ct.locate(e)] for e in evidence]


def _items(tag: str, corpus, qa, answers: Optional[Dict[str, str]] = None, whole: bool = False,
           docmap: Optional[Dict[str, str]] = None, calibrate: bool = True) -> List[Item]:
    out = []
    for i, q in enumerate(qa):
        if not q.answerable or not q.evidence:
            continue
        answer = q.ground_truth if answers is None else answers.get(q.query_id)
        if answers is not None and answer is None:
            continue
        occ = _occurrences(corpus, q.evidence)
        docs = [] if whole else list(q.relevant_docs) or sorted({d for o in occ for d, _, _ in o})
        if docmap:
            docs = list(dict.fromkeys(docmap[d] for d in docs))
        out.append(Item(tag, q.query_id, q.type or "(none)", q.question, answer, docs, occ,
                        calibration=calibrate and int("".join(ch for ch in q.query_id if ch.isdigit()) or 0) % 2 == 1))
    return out


def _long_pages(corpus, qa, per_page: int = 6):
    """it_helpdesk joined into pages of ``per_page`` documents; the original evidence re-found in the pages."""
    from ragexam.data.schema import Document

    docs = list(corpus)
    pages, docmap = [], {}
    for p in range(0, len(docs), per_page):
        group = docs[p:p + per_page]
        pid = f"page_{p // per_page + 1}"
        pages.append(Document(pid, "\n\n".join(f"{d.title}\n{d.content}" for d in group), None))
        docmap.update({d.doc_id: pid for d in group})
    return pages, docmap


def _handbook() -> Tuple[list, List[Item]]:
    """The handbook set (module docstring): every distinct question a person labelled good, in file order."""
    from ragexam.data.loaders import load_corpus

    corpus = load_corpus(ROOT / "tests" / "data" / "generate_handbook_corpus.jsonl")
    data = json.loads((ROOT / "tests" / "data" / "generate_focus_labelled.json").read_text(encoding="utf-8"))
    mine = "generate_handbook_corpus.jsonl"
    pairs = [(s["doc_id"], s["kind"], s[v]["question"], s[v]["answer"], s["sentence"]) for s in data["sentences"]
             for v in ("focus", "answer_first", "rewrite")
             if s["corpus"].endswith(mine) and (s.get(v) or {}).get("label") == "good"]
    pairs += [(k["doc_id"], k["kind"], k["question"], k["answer"], k["evidence"]) for k in data["kept"]
              if k["corpus"].endswith(mine) and k["label"] == "good"]
    seen: Dict[str, Item] = {}
    for i, (doc, kind, q, a, ev) in enumerate(pairs):
        if q not in seen:
            seen[q] = Item("handbook", f"hb_q{i:03d}", kind, q, a, [doc], _occurrences(corpus, [ev]))
    return list(corpus), list(seen.values())


def build(sets: Sequence[str], extra: Sequence[Tuple[str, str]]) -> Dict[str, Tuple[list, List[Item]]]:
    """``{set: (documents, items)}``."""
    from ragexam.data.loaders import load_corpus, load_qa

    out: Dict[str, Tuple[list, List[Item]]] = {}
    hd, ai = (load_corpus("it_helpdesk"), load_qa("it_helpdesk")), (load_corpus("ai_concepts"), load_qa("ai_concepts"))
    if "bundled" in sets:
        out["bundled/it_helpdesk"] = (list(hd[0]), _items("bundled", *hd))
        out["bundled/ai_concepts"] = (list(ai[0]), _items("bundled", *ai))
    if "paraphrased" in sets:
        from ragexam.data.datasets import resolve

        rows = [json.loads(x) for x in resolve("it_helpdesk", "qa").with_name("answers.jsonl").read_text(
            encoding="utf-8").splitlines() if x.strip()]
        para_hd = {r["query_id"]: r["answer"] for r in rows if r.get("note") == "correct"}
        para_ai = {r["query_id"]: r["ground_truth"] for r in map(json.loads, (DATA / "ai_concepts_paraphrased.jsonl")
                                                                   .read_text(encoding="utf-8").splitlines())}
        out["paraphrased/it_helpdesk"] = (list(hd[0]), _items("paraphrased", *hd, answers=para_hd))
        out["paraphrased/ai_concepts"] = (list(ai[0]), _items("paraphrased", *ai, answers=para_ai))
    if "long-pages" in sets:
        pages, docmap = _long_pages(*hd)
        items = _items("long-pages", hd[0], hd[1], docmap=docmap)
        from ragexam.data.evidence import CorpusText

        ct = CorpusText(pages)
        for it, q in zip(items, [q for q in hd[1] if q.answerable and q.evidence]):
            it.original = [[(o.doc_id, o.start, o.end) for o in ct.locate(e)] for e in q.evidence]
        out["long-pages/it_helpdesk"] = (pages, items)
    if "answers-only" in sets:
        out["answers-only/it_helpdesk"] = (list(hd[0]), _items("answers-only", *hd, whole=True))
        out["answers-only/ai_concepts"] = (list(ai[0]), _items("answers-only", *ai, whole=True))
    if "handbook" in sets:
        out["handbook/model_keys"] = _handbook()
    for corpus_path, qa_path in extra:
        c = load_corpus(corpus_path)
        out[f"given/{Path(qa_path).name}"] = (list(c), _items("given", c, load_qa(qa_path, corpus=c), calibrate=False))
    return out


def agrees(span: dict, original: List[List[Tuple[str, int, int]]]) -> bool:
    """The issue's rule: in the original's document, containing it or overlapping at least half of it."""
    for occs in original:
        for d, s, e in occs:
            if d == span["doc_id"]:
                shared = max(0, min(e, span["end"]) - max(s, span["start"]))
                if (span["start"] <= s and e <= span["end"]) or shared >= 0.5 * (e - s):
                    return True
    return False


def locate_all(data: Dict[str, Tuple[list, List[Item]]], semantic: bool, seed: int = 1) -> float:
    """Locate every item (filling ``item.located``) and, for items with documents, try one other document that
    does not hold the answer (``item.negative``: the confidence there); returns the seconds it took."""
    import random

    from ragexam.questions.locate import LocateSettings, Locator

    rng = random.Random(seed)
    t0 = time.perf_counter()
    for docs, items in data.values():
        loc = Locator(docs, LocateSettings(semantic=semantic))
        loc.prepare(d.doc_id for d in docs)
        for it in items:
            for x in loc.locate(it.question, it.answer, it.docs):
                best = x.best.span.to_dict() if x.best is not None else None
                it.located.append({"doc": x.doc_id, "confidence": x.confidence, "span": best, "needed": x.needed,
                                   "agrees": best is not None and agrees(best, it.original),
                                   "sentences": best["sentences"] if best else 0})
            holding = {d for occ in it.original for d, _, _ in occ} | set(it.docs)
            others = [d.doc_id for d in docs if d.doc_id not in holding]
            if it.docs and others:
                (x,) = loc.locate(it.question, it.answer, [rng.choice(others)])
                it.negative = x.confidence
    return time.perf_counter() - t0


def question_outcome(it: Item, threshold: float) -> Tuple[bool, bool]:
    """``(located with confidence, agrees)`` of one question at ``threshold``."""
    needed = [x for x in it.located if x["needed"]]
    confident = bool(needed) and all(x["span"] is not None and x["confidence"] >= threshold for x in needed)
    return confident, confident and all(x["agrees"] for x in needed)


def rates(items: Sequence[Item], threshold: float) -> Dict[str, object]:
    outcomes = [question_outcome(it, threshold) for it in items]
    n, kept = len(items), sum(c for c, _ in outcomes)
    ok = sum(a for _, a in outcomes)
    return {"n": n, "located": kept, "located_share": kept / n if n else None, "agree": ok,
            "agreement": ok / kept if kept else None,
            "agree_any_confidence": sum(all(x["agrees"] for x in it.located if x["needed"]) for it in items) / n
            if n else None}


def choose_threshold(items: Sequence[Item]) -> float:
    """The lowest threshold (steps of 0.05) at which, on the calibration items, >= 95 % of the confident questions
    agree **and** <= 5 % of the trials in a document that does not hold the answer are confident."""
    negatives = [it.negative for it in items if it.negative is not None]
    for k in range(0, 21):
        t = k / 20
        r = rates(items, t)
        wrong = sum(c >= t for c in negatives) / len(negatives) if negatives else 0.0
        if r["agreement"] is not None and r["agreement"] >= TARGET_AGREEMENT and wrong <= 1 - TARGET_AGREEMENT:
            return t
    return 1.0


def negative_rate(items: Sequence[Item], threshold: float) -> Optional[float]:
    """The share of trials in a document that does not hold the answer that were confident (wrongly)."""
    negatives = [it.negative for it in items if it.negative is not None]
    return sum(c >= threshold for c in negatives) / len(negatives) if negatives else None


def curve(items: Sequence[Item]) -> List[Dict[str, object]]:
    return [{"threshold": k / 20, **rates(items, k / 20), "wrong_document": negative_rate(items, k / 20)}
            for k in range(0, 21)]


def _pct(x: Optional[float]) -> str:
    return "   -  " if x is None else f"{100 * x:5.1f}%"


def report(data, threshold: float, chosen: float, seconds: float, semantic: bool) -> Dict[str, object]:
    out: Dict[str, object] = {"machine": machine_line(), "threshold": threshold, "chosen_on_calibration": chosen,
                              "semantic": semantic, "seconds": round(seconds, 1), "sets": {}}
    print(machine_line())
    print(f"threshold {threshold:g} (chosen on the calibration half: {chosen:g}); e5 {'on' if semantic else 'off'}; "
          f"located in {seconds:.1f} s")
    print(f"{'set':30} {'questions':16} {'n':>4} {'located':>8} {'agree':>7} {'any conf':>9} {'wrong doc':>10}")
    for name, (_, items) in data.items():
        groups = {"all": list(items), "held out": [it for it in items if not it.calibration]}
        for t in sorted({it.type for it in items}):
            groups[t] = [it for it in items if it.type == t]
        res = {g: dict(rates(v, threshold), wrong_document=negative_rate(v, threshold)) for g, v in groups.items() if v}
        out["sets"][name] = {"rates": res, "curve": curve(items)}
        for g, r in res.items():
            print(f"{name:30} {g:16} {r['n']:4d} {_pct(r['located_share']):>8} {_pct(r['agreement']):>7} "
                  f"{_pct(r['agree_any_confidence']):>9} {_pct(r['wrong_document']):>10}")
    return out


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sets", default=",".join(SETS))
    ap.add_argument("--set", nargs=2, action="append", default=[], metavar=("CORPUS", "QA"))
    ap.add_argument("--no-e5", action="store_true")
    ap.add_argument("--threshold", type=float, default=None, help="report at this threshold (default: the one "
                                                                   "the calibration half chooses)")
    ap.add_argument("--json", type=Path, default=None, help="write everything to this file")
    ap.add_argument("--curve", action="store_true", help="print the confidence-vs-agreement curve of every set")
    args = ap.parse_args(argv)
    data = build([s for s in args.sets.split(",") if s], [tuple(x) for x in args.set])
    seconds = locate_all(data, not args.no_e5)
    from ragexam.questions.locate import DEFAULT_THRESHOLD

    calib = [it for _, items in data.values() for it in items if it.calibration]
    chosen = choose_threshold(calib) if calib else DEFAULT_THRESHOLD  # no calibration set chosen: the default
    threshold = args.threshold if args.threshold is not None else chosen
    out = report(data, threshold, chosen, seconds, not args.no_e5)
    if args.curve:
        for name, body in out["sets"].items():
            print(f"\n{name}: threshold -> located, agreement")
            print("  " + "  ".join(f"{p['threshold']:.2f}:{_pct(p['located_share']).strip()}/"
                                   f"{_pct(p['agreement']).strip()}" for p in body["curve"][::2]))
    if args.json is not None:
        args.json.write_text(json.dumps(out, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
