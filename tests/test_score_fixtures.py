"""Small handcrafted files for the answer-evaluation tests (no tests here).

:func:`write_case` writes a corpus, a QA set, answers for two pipelines and a ``ragexam run``
folder (``summary.json`` + ``per_question.csv`` in the documented format ``ragexam-run/1``),
built by hand so that the expected stage of every question is known:

pipeline P1 (k = 5):

====  =============  ==========  ==================  ========================
qid   type           first_rank  answer              expected label
====  =============  ==========  ==================  ========================
q1    lexical        1           = ground truth      ok
q2    lexical        9           = ground truth      lucky
q3    lexical        2           wrong               generation_miss
q4    meaning        (none)      wrong               retrieval_miss
q5    meaning        3           = ground truth      ok
q6    meaning        1           (no answer)         unjudged (no_answer)
q7    out_of_corpus  -           declines            abstained_ok
q8    out_of_corpus  -           invents             hallucinated
====  =============  ==========  ==================  ========================

pipeline P2: every evidence at rank 1, every answer right, both out-of-corpus declined.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

DOCS = [
    {"doc_id": "d1", "title": "VPN", "content": "VPN 오류 619는 공용 와이파이에서 UDP 4500 포트가 막힌 경우입니다. "
                                              "연결 방식을 TCP 443 모드로 바꾸면 해결됩니다."},
    {"doc_id": "d2", "title": "프린터", "content": "복합기에 용지가 걸리면 오른쪽 B 덮개를 열고 종이를 빼세요."},
    {"doc_id": "d3", "title": "계정", "content": "비밀번호를 다섯 번 틀리면 계정이 잠기고 30분 뒤 자동으로 풀립니다."},
    {"doc_id": "d4", "title": "와이파이", "content": "손님용 와이파이 비밀번호는 매달 1일에 바뀌며 안내데스크에서 받을 수 있습니다."},
]

QA = [
    {"query_id": "q1", "question": "VPN 619 오류는 왜 나요?", "relevant_doc_ids": ["d1"],
     "evidence": "UDP 4500 포트가 막힌 경우", "ground_truth": "공용 와이파이에서 UDP 4500 포트가 막혀서 생기며 TCP 443 모드로 바꾸면 됩니다.",
     "type": "lexical"},
    {"query_id": "q2", "question": "VPN 연결 방식은 무엇으로 바꾸나요?", "relevant_doc_ids": ["d1"],
     "evidence": "TCP 443 모드로 바꾸면", "ground_truth": "연결 방식을 TCP 443 모드로 바꾸면 됩니다.", "type": "lexical"},
    {"query_id": "q3", "question": "용지 걸림은 어떻게 빼요?", "relevant_doc_ids": ["d2"],
     "evidence": "오른쪽 B 덮개를 열고", "ground_truth": "복합기 오른쪽 B 덮개를 열고 걸린 종이를 빼면 됩니다.", "type": "lexical"},
    {"query_id": "q4", "question": "계정이 잠기면 얼마 뒤 풀리나요?", "relevant_doc_ids": ["d3"],
     "evidence": "30분 뒤 자동으로 풀립니다", "ground_truth": "30분이 지나면 자동으로 풀립니다.", "type": "meaning"},
    {"query_id": "q5", "question": "비밀번호 몇 번 틀리면 잠겨요?", "relevant_doc_ids": ["d3"],
     "evidence": "다섯 번 틀리면 계정이 잠기고", "ground_truth": "다섯 번 틀리면 계정이 잠깁니다.", "type": "meaning"},
    {"query_id": "q6", "question": "손님 와이파이 비밀번호는 언제 바뀌어요?", "relevant_doc_ids": ["d4"],
     "evidence": "매달 1일에 바뀌며", "ground_truth": "매달 1일에 바뀝니다.", "type": "meaning"},
    {"query_id": "q7", "question": "연차는 며칠이에요?", "answerable": False,
     "ground_truth": "제공된 문서에는 이 내용이 없습니다.", "type": "out_of_corpus"},
    {"query_id": "q8", "question": "주차 등록비는 얼마예요?", "answerable": False,
     "ground_truth": "제공된 문서에는 이 내용이 없습니다.", "type": "out_of_corpus"},
]

GT = {q["query_id"]: q["ground_truth"] for q in QA}
WRONG = "프린터 드라이버를 다시 설치하고 재부팅하세요. 그래도 안 되면 헬프데스크에 연락하세요."

ANSWERS = (
    [{"query_id": "q1", "pipeline": "P1", "answer": GT["q1"], "note": "correct"},
     {"query_id": "q2", "pipeline": "P1", "answer": GT["q2"], "note": "correct"},
     {"query_id": "q3", "pipeline": "P1", "answer": WRONG, "note": "wrong"},
     {"query_id": "q4", "pipeline": "P1", "answer": WRONG, "note": "wrong"},
     {"query_id": "q5", "pipeline": "P1", "answer": GT["q5"], "note": "correct"},
     {"query_id": "q7", "pipeline": "P1", "answer": "문서에서 찾을 수 없습니다.", "note": "abstained"},
     {"query_id": "q8", "pipeline": "P1", "answer": "월 5만 원이며 다음 달 급여에서 공제됩니다.", "note": "hallucinated"}]
    + [{"query_id": q["query_id"], "pipeline": "P2", "answer": GT[q["query_id"]] if q.get("answerable", True)
        else "제공된 문서에는 없는 내용이라 답할 수 없습니다.", "note": "correct"} for q in QA]
)

RANKS = {"P1": {"q1": 1, "q2": 9, "q3": 2, "q4": None, "q5": 3, "q6": 1},
         "P2": {"q1": 1, "q2": 1, "q3": 1, "q4": 1, "q5": 1, "q6": 1}}

EXPECTED_P1 = {"q1": "ok", "q2": "lucky", "q3": "generation_miss", "q4": "retrieval_miss", "q5": "ok",
               "q6": "unjudged", "q7": "abstained_ok", "q8": "hallucinated"}


def write_jsonl(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def write_run(folder: Path, ranks=RANKS, chunker: str = "whole", corpus: str = "corpus.jsonl",
              qa: str = "qa.jsonl") -> Path:
    """A run folder by hand: whole-document chunks, so the chunk id of d1 is d1#0."""
    folder.mkdir(parents=True, exist_ok=True)
    pipelines = list(ranks)
    summary = {"format": "ragexam-run/1", "run_id": "test", "created": "2026-11-30T00:00:00Z",
               "ragexam_version": "0.1.0",
               "config": {"corpus": corpus, "qa": qa, "retrievers": pipelines, "chunkers": [chunker],
                          "relevance": "evidence", "k": [1, 3, 5, 10], "depth": 100, "miss_k": 5},
               "pipelines": [{"name": p, "retriever": p, "chunker": chunker, "signature": "x"} for p in pipelines],
               "results": {p: {"n": 6, "metrics": {}} for p in pipelines}}
    (folder / "summary.json").write_text(json.dumps(summary, ensure_ascii=False), encoding="utf-8")
    doc_of = {q["query_id"]: (q.get("relevant_doc_ids") or [None])[0] for q in QA}
    others = [d["doc_id"] for d in DOCS]
    with open(folder / "per_question.csv", "w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(["pipeline", "retriever", "chunker", "query_id", "type", "answerable", "first_rank", "unit_ranks",
                    "n_units", "hit@1", "mrr", "top_ids"])
        for p in pipelines:
            for q in QA:
                qid = q["query_id"]
                ans = q.get("answerable", True)
                fr = ranks[p].get(qid) if ans else None
                rel = doc_of[qid]
                top = [f"{d}#0" for d in others if d != rel]
                if rel is not None and fr is not None and fr <= len(others):
                    top.insert(fr - 1, f"{rel}#0")
                w.writerow([p, p, chunker, qid, q["type"], "true" if ans else "false", "" if fr is None else fr,
                            json.dumps({"ev1": fr}) if ans else "{}", 1 if ans else 0,
                            ("1.0" if fr == 1 else "0.0") if ans else "", (repr(1.0 / fr) if fr else "0.0") if ans else "",
                            json.dumps(top)])
    return folder


def write_case(tmp_path: Path):
    """(qa, corpus, answers, run_dir) paths of the handcrafted case."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    corpus = write_jsonl(tmp_path / "corpus.jsonl", DOCS)
    qa = write_jsonl(tmp_path / "qa.jsonl", QA)
    answers = write_jsonl(tmp_path / "answers.jsonl", ANSWERS)
    run = write_run(tmp_path / "run", corpus=str(corpus), qa=str(qa))
    return qa, corpus, answers, run
