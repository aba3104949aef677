"""Benchmark: BM25 (kiwi tokens + bm25s) index and search, cold vs warm token cache.

Builds a seeded synthetic Korean helpdesk corpus (default 10,000 chunks) and query set
(default 1,000 queries), then times, in one process:

1. loading kiwi (``Kiwi()`` plus its first analysis),
2. a **cold** run into an empty cache directory: ``index`` (tokenize every chunk, write the
   token cache, build the bm25s index) and ``search`` (tokenize the queries, score, top-n),
3. a **warm** run with a new retriever on the same cache directory: every token list is a
   cache hit, so kiwi is never called.

Run::

    python benchmarks/bench_bm25.py [--chunks 10000] [--queries 1000] [--top-n 10] [--seed 0] [--repeat 3]

Each of ``--repeat`` rounds uses a new empty cache (cold) then reads it (warm); the table gives the
median wall time (and, for the cold index, the CPU time of the process, which exceeds wall time when kiwi
uses both cores) with min–max, and the machine's load.  Results of the cold and warm runs are checked to be
identical.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench import machine_line, spread, compile_ragexam  # noqa: E402

SUBJECTS = ["VPN", "이메일", "프린터", "계정", "비밀번호", "출입카드", "노트북", "모니터", "회의실 예약",
            "급여 명세서", "연차 휴가", "사내 메신저", "OTP 앱", "와이파이", "공유 드라이브", "결재 시스템",
            "화상 회의", "보안 프로그램", "법인 카드", "택배 수령", "주차 등록", "사원증", "백업", "ERP"]
PROBLEMS = ["접속이 안 될 때", "오류가 날 때", "잠겼을 때", "분실했을 때", "느려졌을 때", "설치가 안 될 때",
            "로그인이 실패할 때", "화면이 안 나올 때", "신청하려면", "변경하려면", "초기화하려면",
            "권한이 없다고 나올 때", "동기화가 안 될 때", "인증서가 만료됐을 때"]
ACTIONS = ["먼저 재부팅한 후 다시 시도하세요", "셀프 서비스 포털에서 신청하세요", "헬프데스크(내선 1234)에 문의하세요",
           "보안팀에 즉시 신고하세요", "관리자 승인을 받아야 합니다", "최신 버전으로 업데이트하세요",
           "브라우저 캐시를 삭제하세요", "30분 후에 자동으로 해제됩니다", "인사팀 담당자에게 요청하세요",
           "설정 메뉴에서 직접 변경할 수 있습니다", "사내 위키의 안내 문서를 참고하세요",
           "OTP 앱의 시간을 자동으로 맞추세요", "네트워크 케이블 연결을 확인하세요"]
DETAILS = ["평일 오전 9시부터 오후 6시까지 처리됩니다.", "처리에는 보통 1~2일이 걸립니다.",
           "5회 이상 실패하면 계정이 잠깁니다.", "외부망에서는 VPN 연결이 필요합니다.",
           "신청 후 메일로 결과를 알려 드립니다.", "개인 PC에는 설치할 수 없습니다.",
           "분기마다 비밀번호를 바꿔야 합니다.", "임시 출입증은 안내 데스크에서 받습니다.", ""]
QUESTION_ENDS = ["어떻게 해야 하나요?", "방법 알려주세요", "어디에 문의하나요?", "해결 방법이 있나요?",
                 "안 돼요 ㅠㅠ", "왜 그런가요?", "절차가 궁금합니다"]


def make_corpus(n: int, rng: np.random.Generator) -> tuple[list[str], list[str]]:
    ids, texts = [], []
    for i in range(n):
        s, p, a, d = (rng.choice(SUBJECTS), rng.choice(PROBLEMS), rng.choice(ACTIONS), rng.choice(DETAILS))
        extra = f" 문서 번호 KB-{rng.integers(1000, 9999)}." if rng.random() < 0.5 else ""
        ids.append(f"kb-{i:05d}")
        texts.append(f"{s} {p}는 {a}. {d}{extra}".strip())
    return ids, texts


def make_queries(n: int, rng: np.random.Generator) -> list[str]:
    return [f"{rng.choice(SUBJECTS)} {rng.choice(PROBLEMS)} {rng.choice(QUESTION_ENDS)}" for _ in range(n)]


def run(ids, texts, queries, top_n, cache_dir, variant):
    from ragexam.retrieval.bm25 import BM25Retriever

    r = BM25Retriever("kiwi", variant=variant, cache_dir=cache_dir, progress=False)
    t0, c0 = time.perf_counter(), time.process_time()
    r.index(ids, texts)
    t1, c1 = time.perf_counter(), time.process_time()
    hits = r.search(queries, top_n)
    t2 = time.perf_counter()
    return r, hits, t1 - t0, t2 - t1, c1 - c0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--chunks", type=int, default=10_000)
    ap.add_argument("--queries", type=int, default=1_000)
    ap.add_argument("--top-n", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--variant", default="lucene")
    ap.add_argument("--repeat", type=int, default=3, help="cold+warm rounds, each on a new empty cache")
    args = ap.parse_args()

    rng = np.random.default_rng(args.seed)
    ids, texts = make_corpus(args.chunks, rng)
    queries = make_queries(args.queries, rng)
    chars = sum(map(len, texts))
    print(f"corpus: {len(texts):,} chunks, {chars:,} chars (avg {chars / len(texts):.0f}); "
          f"{len(queries):,} queries; top_n={args.top_n}; seed={args.seed}")

    print(machine_line())
    print(compile_ragexam())
    from ragexam.data.kiwi import kiwi

    t0 = time.perf_counter()
    kiwi().tokenize("시작")
    kiwi_load = time.perf_counter() - t0
    import bm25s  # noqa: F401  (import cost not attributed to the runs)

    rounds = []
    for _ in range(args.repeat):
        cache_dir = tempfile.mkdtemp(prefix="ragexam-bench-")
        try:
            r, cold_hits, cold_index, cold_search, cold_cpu = run(ids, texts, queries, args.top_n, cache_dir,
                                                                  args.variant)
            _, warm_hits, warm_index, warm_search, _ = run(ids, texts, queries, args.top_n, cache_dir, args.variant)
        finally:
            shutil.rmtree(cache_dir, ignore_errors=True)
        if warm_hits != cold_hits:
            raise SystemExit("warm and cold results differ")
        rounds.append((cold_index, cold_cpu, cold_search, warm_index, warm_search))
    print(f"signature: {r.signature}")
    print(f"vocabulary: {len(r._vocab):,} tokens; queries with no hit: {sum(not h for h in cold_hits)}")
    cols = list(zip(*rounds))
    print(f"{'step':<48}{'median seconds (min–max of n)':>34}")
    rows = [("kiwi load (Kiwi() + first call), once", [kiwi_load]),
            ("cold index  (tokenize + cache write + bm25s), wall", cols[0]),
            ("cold index, CPU seconds of the process", cols[1]),
            ("cold search (tokenize queries + score + top-n)", cols[2]),
            ("warm index  (cache read + bm25s)", cols[3]),
            ("warm search (cache read + score + top-n)", cols[4])]
    for name, vals in rows:
        print(f"{name:<48}{spread(vals):>34}")
    warm_search = sorted(cols[4])[len(cols[4]) // 2]
    print(f"warm search {len(queries) / warm_search:,.0f} queries/s (median round)")
    print(machine_line())


if __name__ == "__main__":
    main()
