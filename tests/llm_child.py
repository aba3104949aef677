"""Child process for tests/test_llm_processes.py: judges N items through a stub endpoint and prints
one JSON line (the run's usage and every judgment's id, status and score).

Arguments: base_url api_key cache_dir n_items concurrency
"""

import json
import sys

from ragexam.metrics.judge import Judge, JudgeItem

base_url, key, cache_dir, n, concurrency = sys.argv[1:6]
items = [JudgeItem(f"q{i}", f"질문 {i}번은 무엇인가요?", f"답변 {i}", ("문맥 가", "문맥 나"), f"정답 {i}")
         for i in range(int(n))]
judge = Judge("stub-judge", base_url=base_url, api_key=key, cache_dir=cache_dir, concurrency=int(concurrency))
run = judge.run(items, ["context_relevance"])
print(json.dumps({"usage": run.usage, "judgments": [[j.item_id, j.status, j.score] for j in run.judgments]}))
