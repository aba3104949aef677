"""Measurement: the near-duplicate threshold of ``ragexam traces sample`` and its evidence step, on labelled data.

1. **Near-duplicates.**  tests/data/traces/paraphrases.jsonl holds 90 user-style rewordings of 45 it_helpdesk
   questions (written for this measurement by the developer, not taken from real traffic).  With the 71 bundled
   questions that makes 161 texts: a pair is the *same question* when both come from one bundled question, else a
   *different question*.  For each cosine threshold of the offline e5 query vectors it prints the share of
   same-question pairs at or above it (recall) and the number of different-question pairs at or above it, without
   and with the same-digits guard (:func:`ragexam.questions.traces_sample.cluster`).
2. **Evidence located from the traced answer.**  Each bundled answer (hand-written: correct, unfaithful and wrong
   ones, by their ``note``) is a trace whose contexts are its question's relevant documents plus one other
   document; :func:`ragexam.questions.traces_sample.locate_for_trace` (the locator of ``locate-evidence``, the
   traced documents first, then the corpus) proposes a span, which *agrees* with the set's own evidence when it
   contains a gold evidence string or overlaps at least half of one (compared after normalisation).  Printed by
   status (located / uncertain / unlocated) and by the answer's note, where it was found, and the spans written
   and agreeing at each confidence threshold; then the same with no contexts (the whole-corpus search alone).

Run::

    python benchmarks/traces_threshold.py [--json]

No model is called; e5 runs offline.  The numbers are kept by tests/test_traces_sample.py.
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
PARAPHRASES = ROOT / "tests" / "data" / "traces" / "paraphrases.jsonl"
THRESHOLDS = (0.86, 0.88, 0.89, 0.90, 0.91, 0.92, 0.93, 0.94, 0.96)


def pairs(embedder=None):
    """``(same, different)``: lists of ``(cosine, same_digits)`` over the labelled texts."""
    import numpy as np

    from ragexam.data.loaders import load_qa

    texts, label = [], []
    for q in load_qa("it_helpdesk").questions:
        texts.append(q.question)
        label.append(q.query_id)
    for line in PARAPHRASES.read_text(encoding="utf-8").splitlines():
        obj = json.loads(line)
        for t in obj["paraphrases"]:
            texts.append(t)
            label.append(obj["query_id"])
    if embedder is None:
        from ragexam.retrieval.e5 import E5Embedder

        embedder = E5Embedder()
    v = np.asarray(embedder.embed_queries(texts), dtype=np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    sims = v @ v.T
    digits = [frozenset(re.findall(r"\d+", t)) for t in texts]
    same, diff = [], []
    for i, j in itertools.combinations(range(len(texts)), 2):
        (same if label[i] == label[j] else diff).append((float(sims[i, j]), digits[i] == digits[j]))
    return same, diff


def threshold_table(same, diff):
    rows = []
    for t in THRESHOLDS:
        rows.append({"threshold": t, "recall": sum(s >= t for s, _ in same) / len(same),
                     "recall_guarded": sum(s >= t and g for s, g in same) / len(same),
                     "different_above": sum(s >= t for s, _ in diff),
                     "different_above_guarded": sum(s >= t and g for s, g in diff)})
    return {"same_pairs": len(same), "different_pairs": len(diff),
            "different_pairs_same_digits": sum(1 for _, g in diff if g), "rows": rows}


def agrees(proposed: str, gold: list) -> bool:
    from ragexam.data.evidence import longest_common_substring
    from ragexam.data.normalization import normalize

    p = normalize(proposed)
    for g in gold:
        n = normalize(g)
        if n in p or longest_common_substring(n, p) >= len(n) / 2:
            return True
    return False


def evidence_table(contexts: bool = True):
    """The evidence step on the bundled answers as traces: with their contexts (the question's relevant documents
    and one other), or with none (``contexts=False``: the whole-corpus search alone)."""
    from ragexam.analysis.answers.files import load_answers
    from ragexam.data.evidence import CorpusText
    from ragexam.data.loaders import load_corpus, load_qa
    from ragexam.questions.locate import LocateSettings, Locator
    from ragexam.questions.traces_sample import Hint, locate_for_trace

    corpus = load_corpus("it_helpdesk")
    docs = {d.doc_id: d.content for d in corpus.documents}
    ids = sorted(docs)
    qa = {q.query_id: q for q in load_qa("it_helpdesk").questions}
    settings = LocateSettings()
    locator, corpus_text = Locator(corpus.documents, settings), CorpusText(corpus.documents)
    by, scopes, curve = defaultdict(Counter), Counter(), []
    for i, a in enumerate(load_answers("it_helpdesk")):
        q = qa[a.query_id]
        chosen = list(dict.fromkeys(list(q.relevant_doc_ids) + [ids[(i * 7) % len(ids)]])) if contexts else []
        ev = locate_for_trace(q.question, Hint(a.query_id, a.answer, tuple(docs[d] for d in chosen), tuple(chosen),
                                               False), locator, corpus_text)
        note = a.metadata.get("note", "?") if q.answerable else "out_of_corpus"
        key = ev.status
        if ev.proposed and q.evidence:
            agreed = agrees(ev.proposed[0], list(q.evidence))
            key += " agrees" if agreed else " disagrees"
            curve.append((ev.confidence, agreed))
        by[note][key] += 1
        by["all"][key] += 1
        scopes[f"{ev.status} in {ev.record.get('scope', '-')}"] += 1
    rows = []
    for t in (0.3, 0.4, 0.5, 0.6, 0.7, 0.8):
        above = [ok for c, ok in curve if c >= t]
        rows.append({"threshold": t, "written": len(above), "agree": sum(above)})
    return {"threshold": settings.threshold, "contexts": contexts,
            "by_note": {k: dict(v) for k, v in sorted(by.items())},
            "scopes": dict(scopes), "curve": rows}


def main() -> int:
    from _bench import machine_line

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    same, diff = pairs()
    out = {"near_duplicates": threshold_table(same, diff), "evidence": evidence_table(),
           "evidence_without_contexts": evidence_table(contexts=False)}
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    print(machine_line())
    nd = out["near_duplicates"]
    print(f"near-duplicates: {nd['same_pairs']} same-question pairs, {nd['different_pairs']} different-question "
          f"pairs ({nd['different_pairs_same_digits']} with the same digits)")
    print("threshold  recall  different>=t  | with the same-digits guard: recall  different>=t")
    for r in nd["rows"]:
        print(f"  {r['threshold']:.2f}    {r['recall']:.3f}   {r['different_above']:6d}       |"
              f"                             {r['recall_guarded']:.3f}   {r['different_above_guarded']:6d}")
    for key, what in (("evidence", "the traced contexts as hints, then the corpus"),
                      ("evidence_without_contexts", "no contexts: the whole corpus")):
        ev = out[key]
        print(f"evidence located from the traced answer ({what}; located at confidence >= {ev['threshold']}):")
        for note, counts in ev["by_note"].items():
            print(f"  {note:14s} " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
        print("  where: " + ", ".join(f"{k} {v}" for k, v in sorted(ev["scopes"].items())))
        print("  confidence >= t: proposed spans written / agreeing: " + ", ".join(
            f"{r['threshold']:.1f}: {r['agree']}/{r['written']}" for r in ev["curve"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
