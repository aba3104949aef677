"""Benchmark: does a judge model separate good from bad on the bundled Korean set -- sampled vs probability scores?

Runs ``ragexam judge-check`` (:func:`ragexam.api.judge_check`) against any OpenAI-compatible endpoint on the
contrast set of the bundled ``it_helpdesk`` questions (or ``--qa``/``--corpus``): per metric (default
``context_relevance``, ``faithfulness``, ``answer_correctness``) the ROC AUC with its bootstrap interval, under
the written (sampled) scores and -- from the same replies, when the endpoint returns log-probabilities -- the
probability-weighted ones, with coverage, replies cut in a loop, and the time and completion tokens per judgment.

``--score`` also runs ``ragexam score`` on the bundled answers with the BM25 run's top ``--contexts`` chunks as
contexts (the default judge metrics), and prints each metric's coverage: what the issue's "score judges >= 90 %"
is measured on.  ``--record FILE`` puts a :class:`ragexam.testing.replay.RecordingProxy` in front of the
endpoint, so every real reply (with its log-probabilities) lands in FILE for the tests to replay.

    python benchmarks/bench_judge_llm.py --base-url http://127.0.0.1:8091/v1 --model qwen2.5-1.5b \\
        [--limit 20] [--metric context_relevance] [--score --score-limit 20] [--record replies.jsonl.gz] \\
        [--cache-dir DIR] [--out result.json]

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
from typing import Any, Dict, List

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _bench import machine_line  # noqa: E402


def _args(argv: List[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--base-url", required=True)
    p.add_argument("--model", required=True)
    p.add_argument("--api-key", default=os.environ.get("OPENAI_API_KEY", "local"))
    p.add_argument("--qa", default="it_helpdesk")
    p.add_argument("--corpus", default="it_helpdesk")
    p.add_argument("--metric", "-m", action="append", default=None)
    p.add_argument("--limit", type=int, default=None, help="questions in the contrast set (a seeded sample)")
    p.add_argument("--score", action="store_true", help="also score the bundled answers (coverage)")
    p.add_argument("--score-limit", type=int, default=None, help="answers to score (the first N questions)")
    p.add_argument("--contexts", type=int, default=3, help="retrieved chunks per answer for --score")
    p.add_argument("--record", default=None, help="record every reply to this JSONL(.gz) file")
    p.add_argument("--proxy-port", type=int, default=0, help="fixed port of the recording proxy (resumable)")
    p.add_argument("--cache-dir", default=None, help="LLM cache (default: a fresh temporary one)")
    p.add_argument("--timeout", type=float, default=1800.0)
    p.add_argument("--concurrency", type=int, default=1)
    p.add_argument("--max-tokens", type=int, default=None)
    p.add_argument("--seed", type=int, default=12345)
    p.add_argument("--no-reasoning", action="store_true", help="scores only (the same scores, far fewer tokens)")
    p.add_argument("--out", default=None, help="write everything measured as JSON")
    return p.parse_args(argv)


def _settings(a: argparse.Namespace, base_url: str, cache_dir: str):
    from ragexam.llm.settings import LLMSettings

    return LLMSettings(a.model, base_url=base_url, api_key=a.api_key, timeout=a.timeout, max_retries=1,
                       concurrency=a.concurrency, cache_dir=cache_dir, max_tokens=a.max_tokens,
                       reasoning=not a.no_reasoning)


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


def run_score(a: argparse.Namespace, base_url: str, cache_dir: str, work: Path) -> Dict[str, Any]:
    from ragexam.api import run_exam, score
    from ragexam.data.loaders import load_qa

    qa_path = a.qa
    if a.score_limit:
        lines = Path(load_qa(a.qa).source).read_text(encoding="utf-8").splitlines()[: a.score_limit]
        qa_path = str(work / "qa.jsonl")
        Path(qa_path).write_text("\n".join(lines) + "\n", encoding="utf-8")
    answers = str(work / "answers.jsonl")
    from ragexam.analysis.answers import load_answers

    keep = {q.query_id for q in load_qa(qa_path)}
    with open(answers, "w", encoding="utf-8") as fh:
        for r in load_answers(a.qa if a.qa == "it_helpdesk" else a.qa):
            if r.query_id in keep:
                fh.write(json.dumps({"query_id": r.query_id, "answer": r.answer}, ensure_ascii=False) + "\n")
    run_dir = work / "run"
    run_exam({"corpus": a.corpus, "qa": qa_path, "retrievers": ["bm25"]}, out=run_dir, record=False)
    t0 = time.perf_counter()
    res = score(qa_path, answers, run=run_dir, miss_k=a.contexts, judge=_settings(a, base_url, cache_dir),
                record=False)
    wall = time.perf_counter() - t0
    rep = res.report
    cov = {m: rep.judge_summary(p, m).to_dict() for p in rep.pipelines for m in rep.judge_metrics}
    for m, s in cov.items():
        print(f"score {m}: judged {s['n_judged']} of {s['n']} ({s['coverage']}), unjudged {s['unjudged']}, mean "
              f"{s['mean']}")
    timing = _per_judgment(rep.judge_run.judgments, wall)
    print("score timing:", json.dumps(timing))
    return {"coverage": cov, "timing": timing, "signatures": rep.judge_run.signatures}


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
        out["check"] = run_check(a, base_url, cache_dir)
        if a.score:
            out["score"] = run_score(a, base_url, cache_dir, work)
    print(machine_line())
    if a.out:
        Path(a.out).write_text(json.dumps(out, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
