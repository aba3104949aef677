"""``evidence_split``: a miss caused by the chunking, for any pipeline — a results file whose chunks cut the
evidence in two, with and without document ids, and ragexam's own chunks located exactly."""

from __future__ import annotations

import json

import pytest

from ragexam.data import Chunk, Document, EvidenceIndex, Question, chunk_corpus
from ragexam.data.relevance import EvidenceSplit, evidence_part, evidence_split, evidence_splits
from ragexam.data.retrieved import load_retrieved
from ragexam.errors import InputError

EVIDENCE = "VPN 클라이언트를 삭제한 뒤 관리자 권한으로 다시 설치합니다"
DOC = ("VPN이 연결되지 않으면 먼저 네트워크를 확인하세요. " + EVIDENCE + ". 설치 후에는 재부팅이 필요합니다.")
CORPUS = [Document("hd_01", DOC), Document("hd_02", "메일이 오지 않으면 스팸함을 확인하세요. 용량이 가득 찼을 수 있습니다.")]
CUT = DOC.index("관리자")  # the other system's chunker cut the evidence here


def _results(tmp_path, with_doc_ids=True):
    """A results file of another system: its chunks of hd_01 cut the evidence in two (rank 1 holds the start,
    the second half is not retrieved at all), plus a question it answers whole."""
    def ctx(text, doc):
        return {"text": text, "doc_id": doc} if with_doc_ids else text

    lines = [
        {"query_id": "q1", "pipeline": "other-rag", "contexts": [ctx(DOC[:CUT], "hd_01"), ctx(CORPUS[1].content, "hd_02")]},
        {"query_id": "q2", "pipeline": "other-rag", "contexts": [ctx(CORPUS[1].content, "hd_02")]},
        {"query_id": "q3", "pipeline": "other-rag", "contexts": [ctx(CORPUS[1].content, "hd_02"), ctx(DOC[CUT:], "hd_01")]},
    ]
    path = tmp_path / "results.jsonl"
    path.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines), encoding="utf-8")
    f = load_retrieved(path)
    [s] = f.sets
    return {q: [Chunk(f"{q}-{i}", it.doc_id or "", 0, len(it.text), it.text) for i, it in enumerate(items)]
            for q, items in s.lists.items()}


QUESTIONS = [Question("q1", "VPN을 어떻게 다시 설치하나요?", relevant_doc_ids=("hd_01",), evidence=(EVIDENCE,)),
             Question("q2", "메일이 안 오면?", relevant_doc_ids=("hd_02",), evidence=("스팸함을 확인하세요",)),
             Question("q3", "VPN 재설치?", evidence=(EVIDENCE,))]


def test_results_file_whose_chunks_cut_the_evidence_in_two(tmp_path):
    rankings = _results(tmp_path)
    labels = evidence_splits(QUESTIONS, rankings, 5)
    assert set(labels) == {"q1", "q3"}  # q2 is found whole: not a miss
    q1 = labels["q1"]
    assert isinstance(q1, EvidenceSplit) and (q1.rank, q1.chunk_id, q1.doc_id, q1.part) == (1, "q1-0", "hd_01", "start")
    assert q1.chars == len("VPN 클라이언트를 삭제한 뒤 ") - 1 and q1.length == len(EVIDENCE) and q1.how == "text"
    assert q1.doc_checked  # the chunk's doc_id is one of the question's relevant documents
    q3 = labels["q3"]  # no relevant_doc_ids in the question: the corpus is not given either, so the text decides
    assert (q3.rank, q3.part, q3.doc_checked) == (2, "end", False)
    assert q1.to_dict()["part"] == "start"
    # the same chunks at a cutoff of 1: q3's part is at rank 2, beyond the top 1
    assert set(evidence_splits(QUESTIONS, rankings, 1)) == {"q1"}


def test_results_file_without_doc_ids_and_the_document_test(tmp_path):
    rankings = _results(tmp_path, with_doc_ids=False)
    labels = evidence_splits(QUESTIONS, rankings, 5)
    assert set(labels) == {"q1", "q3"} and not labels["q1"].doc_checked and labels["q1"].doc_id is None
    # a chunk from another document holding the same words is not the evidence's document: no label
    other = [Chunk("x", "hd_02", 0, CUT, DOC[:CUT])]
    assert evidence_split(QUESTIONS[0], other, 5) is None
    # with the corpus, the documents where the evidence occurs are known even without relevant_doc_ids
    from ragexam.data.evidence import CorpusText

    ct = CorpusText(CORPUS)
    assert evidence_split(QUESTIONS[2], [Chunk("y", "hd_02", 0, CUT, DOC[:CUT])], 5, corpus_text=ct) is None
    assert evidence_split(QUESTIONS[2], [Chunk("y", "hd_01", 0, CUT, DOC[:CUT])], 5, corpus_text=ct).doc_checked


def test_ragexam_chunks_located_exactly():
    chunking = chunk_corpus(CORPUS, f"chars:{CUT + 4}:0")  # a window boundary falls inside the evidence
    index = EvidenceIndex.build(CORPUS, chunking)
    assert not index.whole(EVIDENCE) and index.cuts(EVIDENCE)
    ranked = [chunking["hd_02#0"], chunking["hd_01#1"], chunking["hd_01#0"]]
    label = evidence_split(QUESTIONS[0], ranked, 3, index=index)
    assert (label.rank, label.chunk_id, label.part, label.how) == (2, "hd_01#1", "end", "location")
    assert label.chars == DOC.index(EVIDENCE) + len(EVIDENCE) - (CUT + 4) and label.length == len(EVIDENCE)
    # the whole-paragraph chunker holds it whole: a hit, never a split
    whole = chunk_corpus(CORPUS, "paragraphs")
    assert evidence_split(QUESTIONS[0], list(whole), 2, index=EvidenceIndex.build(CORPUS, whole)) is None


def test_evidence_part_rule():
    e = "관리자 권한으로 다시 설치합니다"
    assert evidence_part("앞의 글. 관리자 권한으로", e) == ("start", len("관리자 권한으로"))
    assert evidence_part("다시 설치합니다. 뒤의 글", e) == ("end", len("다시 설치합니다"))
    assert evidence_part("권한으로 다시", e) == ("middle", len("권한으로 다시"))
    assert evidence_part("니다. 뒤", e) is None            # 2 characters: chance, not a part
    assert evidence_part("앞. " + e + ". 뒤", e) is None      # whole: not a part
    assert evidence_part("", e) is None and evidence_part("x", "") is None
    with pytest.raises(InputError, match="expected a number of chunks >= 1"):
        evidence_split(QUESTIONS[0], [], 0)
