"""Benchmark: does a judge model separate good from bad on the bundled Korean set -- sampled vs probability scores?

Runs ``ragexam judge-check`` (:func:`ragexam.api.judge_check`) against any OpenAI-compatible endpoint on the
contrast set of the bundled ``it_helpdesk`` questions (or ``--qa``/``--corpus``): per metric (default
``context_relevance``, ``faithfulness``, ``answer_correctness``) the ROC AUC with its bootstrap interval, under
the written (sampled) scores and -- from the same replies, when the endpoint returns log-probabilities -- the
probability-weighted ones, with coverage, replies cut in a loop, and the time and completion tokens per judgment.

``--score`` also runs ``ragexam score`` (:func:`ragexam.api.score`) on the same seeded sample of questions
(``--score-limit``, default ``--limit``: judge-check's own questions) with the reference answers as the answers
(``--score-answers keys``; ``keys-reversed``: their sentences in reverse order; ``perturbed``: judge-check's
perturbed keys; ``keys-per-claim`` / ``perturbed-per-claim``: each sentence judged alone; ``bundled``: the
bundled set's answers) and the BM25 run's top ``--contexts`` chunks as contexts, judged on ``--score-metric``
(default context_relevance, faithfulness, answer_correctness), and prints each metric's coverage -- what the
issue's "score judges >= 90 %" is measured on -- and the faithfulness labels of the answers apart for those
whose contexts hold their evidence (a key answer judged on its own evidence should be faithful).
``--no-check`` skips judge-check.  ``--record FILE`` puts a :class:`ragexam.testing.replay.RecordingProxy` in
front of the endpoint, so every real reply (with its log-probabilities) lands in FILE for the tests to replay.

    python benchmarks/bench_judge_llm.py --base-url http://127.0.0.1:8091/v1 --model qwen2.5-1.5b \\
        [--limit 20] [--metric context_relevance] [--score [--score-limit 20] [--no-check]] \\
        [--record replies.jsonl.gz] [--cache-dir DIR] [--out result.json]

A slow local model needs ``--timeout`` in the minutes and ``--concurrency 1``; the numbers are the model's, so
say which model and machine produced them.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _bench import machine_line  # noqa: E402

#: what ``--score`` judges by default: the metrics of issue 22's coverage goal
SCORE_METRICS = ("context_relevance", "faithfulness", "answer_correctness")
#: the answers ``--score`` can judge
SCORE_ANSWERS = ("keys", "keys-reversed", "keys-per-claim", "perturbed", "perturbed-per-claim", "bundled")


def _args(argv: List[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--base-url", required=True)
    p.add_argument("--model", required=True)
    p.add_argument("--api-key", default=os.environ.get("OPENAI_API_KEY", "local"))
    p.add_argument("--qa", default="it_helpdesk")
    p.add_argument("--corpus", default="it_helpdesk")
    p.add_argument("--metric", "-m", action="append", default=None)
    p.add_argument("--limit", type=int, default=None, help="questions in the contrast set (a seeded sample)")
    p.add_argument("--no-check", action="store_true", help="skip judge-check (with --score: only the coverage)")
    p.add_argument("--score", action="store_true", help="also score answers on BM25 contexts (coverage)")
    p.add_argument("--score-answers", choices=SCORE_ANSWERS, default="keys",
                   help="the reference answers (default), the same with their sentences in reverse order (a "
                        "claim's position in the judge's reply moved) or each sentence as its own answer (pipeline "
                        "'claim N': one claim per judge call); judge-check's perturbed keys, whole or per sentence; "
                        "or the bundled set's answers")
    p.add_argument("--score-limit", type=int, default=None,
                   help="questions to score: a seeded sample, judge-check's own with the same N (default --limit)")
    p.add_argument("--score-metric", action="append", default=None,
                   help=f"judge metrics of --score (default {', '.join(SCORE_METRICS)})")
    p.add_argument("--contexts", type=int, default=3, help="retrieved chunks per answer for --score")
    p.add_argument("--record", default=None, help="record every reply to this JSONL(.gz) file")
    p.add_argument("--proxy-port", type=int, default=0, help="fixed port of the recording proxy (resumable)")
    p.add_argument("--cache-dir", default=None, help="LLM cache (default: a fresh temporary one)")
    p.add_argument("--timeout", type=float, default=1800.0)
    p.add_argument("--concurrency", type=int, default=1)
    p.add_argument("--max-tokens", type=int, default=None)
    p.add_argument("--seed", type=int, default=12345)
    p.add_argument("--no-reasoning", action="store_true", help="scores only (the same scores, far fewer tokens)")
    p.add_argument("--judge-quoted", action="store_true", help="let the judge decide claims a context states in the "
                   "same words too (ragexam's default: supported without asking; measures the judge itself)")
    p.add_argument("--out", default=None, help="write everything measured as JSON")
    return p.parse_args(argv)


def _settings(a: argparse.Namespace, base_url: str, cache_dir: str):
    from ragexam.llm.settings import LLMSettings

    return LLMSettings(a.model, base_url=base_url, api_key=a.api_key, timeout=a.timeout, max_retries=1,
                       concurrency=a.concurrency, cache_dir=cache_dir, max_tokens=a.max_tokens,
                       reasoning=not a.no_reasoning, quoted=not a.judge_quoted)


def _per_judgment(judgments: List[Any], wall: float) -> Dict[str, Any]:
    fresh = [j for j in judgments if not j.cached and j.requests]
    loops = sum(1 for j in judgments for e in j.errors if "in a loop" in str(e.get("message", "")))
    ct = [j.completion_tokens for j in fresh if j.completion_tokens is not None]
    return {"judgments": len(judgments), "called": len(fresh), "seconds_per_called": wall / len(fresh) if fresh else None,
            "completion_tokens_per_called": sum(ct) / len(ct) if ct else None, "replies_cut_in_a_loop": loops,
            "attempts": sum(j.attempts for j in fresh)}


def run_check(a: argparse.Namespace, base_url: str, cache_dir: str) -> Dict[str, Any]:
    from ragexam.api import judge_check

    t0 = time.perf_counter()
    res = judge_check(a.qa, a.corpus, _settings(a, base_url, cache_dir), metrics=a.metric, limit=a.limit,
                      seed=a.seed)
    wall = time.perf_counter() - t0
    data = res.check.to_dict()
    data["timing"] = _per_judgment(res.check.judge_run.judgments, wall)
    data["timing"]["wall_seconds"] = wall
    for m, mc in res.check.checks.items():
        print(f"{m}: judged {mc.n_judged} of {len(mc.items)} (unjudged: {mc.unjudged() or '-'})")
        for sc, sep in mc.separations.items():
            kinds = ", ".join(f"vs {k} {v:.2f}" for k, v in sep.by_kind.items())
            print(f"  {sc:11s} {sep.text}; gap {sep.gap if sep.gap is None else round(sep.gap, 2)}; ordered "
                  f"{sep.ordered if sep.ordered is None else round(sep.ordered, 2)}; {kinds}")
    print("judge-check timing:", json.dumps(data["timing"]))
    return data


def sample_questions(qa: Any, limit: Optional[int], seed: int) -> List[Any]:
    """The answerable questions with evidence and a reference answer, a seeded sample of ``limit`` of them in
    query-id order: the questions ``judge-check --limit`` puts in its contrast set with the same seed."""
    import random

    questions = [q for q in qa if q.answerable and q.evidence and q.ground_truth]
    if limit:
        questions = sorted(random.Random(seed).sample(questions, min(limit, len(questions))), key=lambda q: q.query_id)
    return questions


def _score_inputs(a: argparse.Namespace, work: Path, run_dir: Path) -> Iterator[str]:
    """The QA file of the sampled questions and their answers: the reference answers (``keys``), the same with
    their sentences -- the faithfulness judge's claims -- in reverse order (``keys-reversed``) or each sentence
    as its own answer on the same contexts (``keys-per-claim``: pipeline ``claim N``), the perturbed keys
    (:func:`ragexam.analysis.judging.check.perturb`) whole or per sentence (``perturbed``,
    ``perturbed-per-claim``), or the bundled set's answers (``bundled``).  Yields the QA file first (BM25 runs
    on it into ``run_dir``, whose chunks the per-claim answers carry), then the answers file."""
    from ragexam.analysis.answers.files import load_answers
    from ragexam.data.loaders import load_qa

    qa = load_qa(a.qa)
    keep = {q.query_id for q in sample_questions(qa, a.score_limit or a.limit, a.seed)}
    qa_path, answers = work / "qa.jsonl", work / "answers.jsonl"
    lines = Path(qa.source).read_text(encoding="utf-8").splitlines()
    qa_path.write_text("".join(ln + "\n" for ln in lines if ln.strip() and json.loads(ln)["query_id"] in keep),
                       encoding="utf-8")
    yield str(qa_path)
    kept = [q for q in qa if q.query_id in keep]
    if a.score_answers == "bundled":
        rows = [{"query_id": r.query_id, "answer": r.answer} for r in load_answers(a.qa) if r.query_id in keep]
    else:
        rows = _key_rows(a, kept, run_dir)
    answers.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    yield str(answers)


def _evidence_hit(r: Any) -> Optional[float]:
    """1.0 when some context of the answer row ``r`` holds its question's evidence (the evidence rule of
    ``score``; computed here too, since ``score`` computes it only when a context metric is judged)."""
    from ragexam.analysis.answers.scoring import evidence_per_context

    ev = evidence_per_context(r.question.evidence, r.contexts or ())
    return None if ev is None else ev["evidence_hit"]


def _key_rows(a: argparse.Namespace, kept: List[Any], run_dir: Path) -> List[Dict[str, Any]]:
    """The answers of ``--score-answers`` built from the reference answers of the questions ``kept``."""
    import random

    from ragexam.analysis.judging.check import perturb
    from ragexam.metrics.judge.units import split_sentences

    rng = random.Random(a.seed)
    texts = {q.query_id: perturb(q.ground_truth, [k.ground_truth for k in kept], rng)[0]
             if a.score_answers.startswith("perturbed") else q.ground_truth for q in kept}
    if a.score_answers == "keys-reversed":
        texts = {q: " ".join(split_sentences(t)[::-1]) for q, t in texts.items()}
    if not a.score_answers.endswith("-per-claim"):
        return [{"query_id": q.query_id, "answer": texts[q.query_id]} for q in kept]
    from ragexam.analysis.answers.files import run_contexts
    from ragexam.storage.runfolder import read_run_folder

    run = read_run_folder(run_dir)
    ctx = run_contexts(run, run.pipelines[0], a.contexts)
    return [{"query_id": q.query_id, "answer": c, "pipeline": f"claim {i}",
             "contexts": [t for _, t in ctx[q.query_id]]}
            for q in kept for i, c in enumerate(split_sentences(texts[q.query_id]), 1)]


def _faithful_by_evidence(rows: List[Any]) -> Dict[str, Dict[str, int]]:
    """Faithfulness labels of the answers, apart for those whose contexts hold their question's evidence
    (``with_evidence``: a key answer judged on its own evidence) and the others."""
    out: Dict[str, Dict[str, int]] = {"with_evidence": {}, "without_evidence": {}}
    for r in rows:
        s = r.judge.get("faithfulness")
        if s is None:
            continue
        side = "with_evidence" if _evidence_hit(r) else "without_evidence"
        key = s.label if s.status == "judged" else f"unjudged:{s.reason}"
        out[side][key] = out[side].get(key, 0) + 1
    return out


def _item(s: Any) -> Dict[str, Any]:
    """One answer's verdict of one metric; for faithfulness each claim with its flag and P(true) -- for a claim a
    context quotes (ragexam's quotation rule) true and 1, with what the judge wrote beside them (``judge_supported``
    and ``judge_p_true``, ``None`` when it was not asked) and the quoting ``sentence``."""
    out = {"status": s.status, "score": s.score, "label": s.label, "reason": s.reason}
    if s.details.get("claims"):
        prob = s.details.get("probabilities") or {}
        dists = prob.get("distributions") or [{}] * len(s.details["claims"])
        judge = prob.get("judge_distributions") or dists
        out["claims"] = [{"claim": c["claim"], "supported": c["supported"], "p_true": d.get("true"),
                          **({"judge_supported": c.get("judge_supported"), "judge_p_true": j.get("true"),
                              "sentence": c["quoted"]["sentence"]} if c.get("quoted") else {})}
                         for c, d, j in zip(s.details["claims"], dists, judge)]
    return out


def run_score(a: argparse.Namespace, base_url: str, cache_dir: str, work: Path) -> Dict[str, Any]:
    from ragexam.api import run_exam, score

    run_dir = work / "run"
    inputs = _score_inputs(a, work, run_dir)
    qa_path = next(inputs)
    run_exam({"corpus": a.corpus, "qa": qa_path, "retrievers": ["bm25"]}, out=run_dir, record=False, progress=False)
    answers = next(inputs)
    t0 = time.perf_counter()
    res = score(qa_path, answers, run=run_dir, miss_k=a.contexts, judge=_settings(a, base_url, cache_dir),
                metrics=a.score_metric or list(SCORE_METRICS), record=False)
    wall = time.perf_counter() - t0
    rep = res.report
    many = len(rep.pipelines) > 1  # keys-per-claim: one pipeline per claim position

    def name(what: str, p: str) -> str:
        return f"{what} @ {p}" if many else what

    cov = {name(m, p): rep.judge_summary(p, m).to_dict() for p in rep.pipelines for m in rep.judge_metrics}
    for m, s in cov.items():
        print(f"score {m}: judged {s['n_judged']} of {s['n']} ({s['coverage']}), unjudged {s['unjudged']}, mean "
              f"{s['mean']}, labels {s.get('labels')}")
    faithful = _faithful_by_evidence(rep.rows)
    print("score faithfulness labels of the answers, by whether their contexts hold the evidence:", faithful)
    per_answer = {name(r.query_id, r.pipeline): {"evidence_hit": _evidence_hit(r), **{
        m: _item(s) for m, s in r.judge.items()}} for r in rep.rows if r.record is not None}
    timing = _per_judgment(rep.judge_run.judgments, wall)
    print("score timing:", json.dumps(timing))
    return {"answers": a.score_answers, "coverage": cov, "faithful_by_evidence": faithful, "per_answer": per_answer,
            "timing": timing, "signatures": rep.judge_run.signatures}


def main(argv: List[str]) -> int:
    a = _args(argv)
    print(machine_line())
    out: Dict[str, Any] = {"machine": machine_line(), "model": a.model, "endpoint": a.base_url}
    with ExitStack() as stack:
        work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-judge-")))
        cache_dir = a.cache_dir or str(work / "cache")
        base_url = a.base_url
        if a.record:
            from ragexam.testing.replay import RecordingProxy

            proxy = stack.enter_context(RecordingProxy(a.base_url, a.record, timeout=a.timeout, port=a.proxy_port))
            base_url = proxy.base_url
        if not a.no_check:
            out["check"] = run_check(a, base_url, cache_dir)
        if a.score:
            out["score"] = run_score(a, base_url, cache_dir, work)
    print(machine_line())
    if a.out:
        Path(a.out).write_text(json.dumps(out, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
