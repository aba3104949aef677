"""The audit and the review queue on the offline 1.5B model's recorded generations (docs/measurements/audit.md).

No model is called: the recorded replies of two held-out it_helpdesk runs are replayed through ``ragexam
generate`` (the replay stub of the tests), which writes the sets with their verification records, and the person's
labels of their kept questions are the audit's labels --

* ``tests/data/generate_replay_focus_helpdesk_n20_seed7.jsonl``: 20 kept, 10 bad (``SEED7_BAD`` in
  ``tests/test_generate_replay.py``);
* ``tests/data/generate_replay_focus_helpdesk_n10.jsonl``: 10 kept, 4 bad (the ``helpdesk10`` questions of
  ``tests/data/generate_focus_labelled.json``).

It prints, per set and for the two pooled:

1. the junk rate with every question audited, and what an audit of a random sample of ``k`` says: the exact
   probability (over every possible sample) that its interval holds the true rate, its expected width, and one
   example (seed 12345);
2. the review queue's signals measured against the labels: each signal's ROC AUC, the risk's AUC with its
   interval (:func:`ragexam.questions.risk.measure_signals`) and whether the queue is ordered by risk.

    python benchmarks/audit_replay.py [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any, Dict, List, Tuple

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

RUNS = {"seed7": "generate_replay_focus_helpdesk_n20_seed7.jsonl", "helpdesk10": "generate_replay_focus_helpdesk_n10.jsonl"}


def person_labels() -> Dict[str, Dict[str, bool]]:
    """``{run: {question: bad}}``: the person's reading of the kept questions."""
    from test_generate_replay import SEED7_BAD

    data = json.loads((ROOT / "tests" / "data" / "generate_focus_labelled.json").read_text(encoding="utf-8"))
    return {"seed7": {q: True for q in SEED7_BAD},
            "helpdesk10": {k["question"]: k["label"] == "bad" for k in data["kept"] if k["run"] == "helpdesk10"}}


def replayed_sets(folder: Path) -> Dict[str, List[Dict[str, Any]]]:
    """The kept records of each recorded run, generated again from its replies (the tests' replay stub)."""
    from test_generate_replay import DATA, replay

    out = {}
    for name, file in RUNS.items():
        stub, res = replay(DATA / file, folder / name)
        assert stub.missed == [], f"the recording {file} lacks requests: {stub.missed[:2]}"
        out[name] = res.records
    return out


def labelled(records: List[Dict[str, Any]], bad_by_question: Dict[str, bool], run: str
             ) -> Tuple[Dict[str, Dict[str, Any]], Dict[str, bool]]:
    """``(records by id, {id: bad})``; a question the person did not read is an error (every kept one was read)."""
    recs = {f"{run}:{r['query_id']}": r for r in records}
    bad = {}
    for qid, r in recs.items():
        if run == "seed7":
            bad[qid] = bad_by_question.get(r["question"], False)
        else:
            assert r["question"] in bad_by_question, f"{run}: {r['question']} has no label"
            bad[qid] = bad_by_question[r["question"]]
    return recs, bad


def audit_of(ids: List[str], bad: Dict[str, bool], k: int, seed: int):
    """The status of an audit of ``k`` of ``ids`` (seeded sample) labelled with the truth."""
    from ragexam.questions.audit import AuditFile, Label, sample_order, status_of

    sample = sample_order(ids, seed)[:k]
    labels = {q: Label(q, "bad" if bad[q] else "good", "vague" if bad[q] else None) for q in sample}
    return status_of(AuditFile("set", "h", len(ids), seed, sample, labels), "h"), sample


def sampling(ids: List[str], bad: Dict[str, bool], k: int) -> Dict[str, Any]:
    """What an audit of ``k`` random questions says of this set: the exact probability (over every sample) that its
    95 % interval holds the true junk rate, the expected width of the interval, and the example of seed 12345."""
    from ragexam.stats.hypergeometric import hypergeometric_cdf, hypergeometric_interval

    n, d = len(ids), sum(bad[q] for q in ids)
    covered = width = 0.0
    for x in range(max(0, k - (n - d)), min(k, d) + 1):
        p = hypergeometric_cdf(x, n, d, k) - (hypergeometric_cdf(x - 1, n, d, k) if x > 0 else 0.0)
        iv = hypergeometric_interval(x, k, n)
        covered += p * (iv.low_count <= d <= iv.high_count)
        width += p * (iv.high - iv.low)
    example, _ = audit_of(ids, bad, k, 12345)
    return {"k": k, "coverage": covered, "mean_width": width, "example": example.text()}


def signal_aucs(recs: Dict[str, Dict[str, Any]], bad: Dict[str, bool]) -> Dict[str, Any]:
    """Each signal's AUC (bad above good; ties half), and the risk's with its interval, as the queue measures it."""
    from ragexam.questions.risk import SIGNALS, measure_signals
    from ragexam.stats.discrimination import auc

    out: Dict[str, Any] = {}
    for name, f in SIGNALS.items():
        pos = [f(recs[q]) for q in recs if bad[q]]
        neg = [f(recs[q]) for q in recs if not bad[q]]
        if all(v is not None for v in pos + neg) and pos and neg:
            out[name] = auc(pos, neg)
    ids = list(recs)
    st, sample = audit_of(ids, bad, len(ids), 12345)
    from ragexam.questions.audit import AuditFile, Label

    audit = AuditFile("set", "h", len(ids), 12345, sample,
                      {q: Label(q, "bad" if bad[q] else "good", "vague" if bad[q] else None) for q in sample})
    check = measure_signals(recs, audit)
    out["risk"] = {"auc": check.auc.auc, "low": check.auc.low, "high": check.auc.high, "helps": check.helps,
                   "text": check.text()}
    return out


def measure() -> Dict[str, Any]:
    labels = person_labels()
    with tempfile.TemporaryDirectory() as tmp:
        sets = replayed_sets(Path(tmp))
    pooled_recs: Dict[str, Dict[str, Any]] = {}
    pooled_bad: Dict[str, bool] = {}
    out: Dict[str, Any] = {}
    for run, records in sets.items():
        recs, bad = labelled(records, labels[run], run)
        pooled_recs.update(recs)
        pooled_bad.update(bad)
        ids = list(recs)
        full, _ = audit_of(ids, bad, len(ids), 12345)
        out[run] = {"n": len(ids), "bad": sum(bad.values()), "full": full.text(),
                    "samples": [sampling(ids, bad, k) for k in (5, 10, 15) if k < len(ids)],
                    "signals": signal_aucs(recs, bad)}
    out["pooled"] = {"n": len(pooled_recs), "bad": sum(pooled_bad.values()),
                     "signals": signal_aucs(pooled_recs, pooled_bad)}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    res = measure()
    if args.json:
        print(json.dumps(res, ensure_ascii=False, indent=2))
        return
    for run, r in res.items():
        print(f"== {run}: {r['n']} kept, {r['bad']} bad (the person's reading)")
        if "full" in r:
            print(f"   every question audited: {r['full']}")
            for s in r["samples"]:
                print(f"   a random sample of {s['k']}: the 95% interval holds the true rate with probability "
                      f"{s['coverage']:.3f}, expected width {s['mean_width']:.3f}; seed 12345: {s['example']}")
        sig = r["signals"]
        print("   signal AUCs: " + ", ".join(f"{k} {v:.2f}" for k, v in sig.items() if k != "risk"))
        print(f"   risk: {sig['risk']['text']}")


if __name__ == "__main__":
    main()
