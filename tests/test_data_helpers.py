"""Small Korean fixtures shared by the tests/test_data_*.py files (and a few sanity tests)."""

from __future__ import annotations

import json
from pathlib import Path

DOCS = [
    {"doc_id": "hd_01", "title": "VPN 연결 오류",
     "content": "VPN이 연결되지 않으면 먼저 PC를 재부팅하세요. 그래도 안 되면 VPN 클라이언트를 재설치합니다.\n"
                "재설치에는 관리자 권한이 필요합니다.\n\n문의: 내선 1234"},
    {"doc_id": "hd_02", "title": "프린터 드라이버",
     "content": "프린터 드라이버는 사내 포털의 자료실에서 내려받습니다. 설치 후 프린터를 다시 연결하세요."},
    {"doc_id": "hd_03", "title": "비밀번호 초기화",
     "content": "비밀번호는 90일마다 바꿔야 합니다. 잊어버린 경우 헬프데스크 포털에서 본인 인증 후 초기화할 수 있습니다."},
]

QA = [
    {"query_id": "q1", "question": "VPN이 계속 끊기면 어떻게 하나요?", "relevant_doc_ids": ["hd_01"],
     "evidence": ["VPN 클라이언트를 재설치", "관리자 권한이 필요"], "type": "lexical",
     "ground_truth": "재부팅 후에도 안 되면 VPN 클라이언트를 재설치합니다."},
    {"query_id": "q2", "question": "프린터 드라이버는 어디서 받나요?", "relevance": {"hd_02": 2},
     "evidence": "사내 포털의 자료실", "type": "meaning"},
    {"query_id": "q3", "question": "비밀번호 변경 주기는?", "relevant_doc_ids": ["hd_03"], "evidence": "90일마다 바꿔야",
     "type": "lexical"},
    {"query_id": "q4", "question": "구내식당 메뉴는?", "answerable": False, "type": "out_of_corpus"},
]


def write_jsonl(path: Path, records) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return path


def make_set(tmp_path: Path, docs=None, qa=None):
    """Write the fixture corpus and QA set; returns ``(corpus_path, qa_path)``."""
    c = write_jsonl(tmp_path / "corpus.jsonl", DOCS if docs is None else docs)
    q = write_jsonl(tmp_path / "qa.jsonl", QA if qa is None else qa)
    return c, q


def test_fixture_set_is_valid(tmp_path):
    from ragexam.data import validate

    c, q = make_set(tmp_path)
    report = validate(c, q)
    assert report.ok, [str(p) for p in report.problems]
    assert report.problems == []
    assert (report.documents, report.questions) == (3, 4)
