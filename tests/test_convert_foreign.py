"""Issue 36, item 6: `ragexam convert` reads the question sets other tools made -- a RAGAS test set (CSV, JSONL,
Parquet), DeepEval goldens (JSON, CSV), AutoRAG's qa/corpus parquet files -- into ragexam's corpus and questions with
located evidence, and the result grades.  The fixtures (tests/data/foreign/) follow each tool's published schema
(docs/evidence.md says where each field comes from)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from test_cli_pipelines import cli  # main() in this process: (exit status, stdout, stderr)
from ragexam.data.foreign import detect_format, read_foreign
from ragexam.errors import InputError

DATA = Path(__file__).parent / "data" / "foreign"
QUICK = ["--n-resamples", "100", "--n-permutations", "100", "--no-history"]


def _ragas_parquet(path: Path) -> Path:
    """The RAGAS fixture as ``testset.to_pandas().to_parquet()`` writes it (``reference_contexts`` a list)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [{**json.loads(x)["eval_sample"], "synthesizer_name": json.loads(x)["synthesizer_name"]}
            for x in (DATA / "ragas_testset.jsonl").read_text(encoding="utf-8").splitlines()]
    table = pa.table({"user_input": [r["user_input"] for r in rows],
                      "reference_contexts": pa.array([r["reference_contexts"] for r in rows], pa.list_(pa.string())),
                      "reference": [r["reference"] for r in rows],
                      "synthesizer_name": [r["synthesizer_name"] for r in rows]})
    pq.write_table(table, path)
    return path


def _autorag(folder: Path):
    """AutoRAG's qa.parquet and corpus.parquet from the fixture, with AutoRAG's column types (retrieval_gt a 2-D list
    of ids, generation_gt a list, metadata a struct with a timestamp)."""
    from datetime import datetime

    import pyarrow as pa
    import pyarrow.parquet as pq

    spec = json.loads((DATA / "autorag.json").read_text(encoding="utf-8"))
    qa = pa.table({"qid": [q["qid"] for q in spec["qa"]], "query": [q["query"] for q in spec["qa"]],
                   "retrieval_gt": pa.array([q["retrieval_gt"] for q in spec["qa"]], pa.list_(pa.list_(pa.string()))),
                   "generation_gt": pa.array([q["generation_gt"] for q in spec["qa"]], pa.list_(pa.string()))})
    meta = [{**c["metadata"], "last_modified_datetime": datetime.fromisoformat(c["metadata"]["last_modified_datetime"])}
            for c in spec["corpus"]]
    corpus = pa.table({"doc_id": [c["doc_id"] for c in spec["corpus"]],
                       "contents": [c["contents"] for c in spec["corpus"]], "metadata": meta})
    pq.write_table(qa, folder / "qa.parquet")
    pq.write_table(corpus, folder / "corpus.parquet")
    return folder / "qa.parquet", folder / "corpus.parquet"


def _convert_and_grade(tmp_path, capsys, qa, corpus=None, source=None, expect_questions=5):
    out = tmp_path / "converted"
    args = ["convert", "--to", "ragexam", "--out", out, "--qa", qa, "--json"]
    args += ["--corpus", corpus] if corpus is not None else []
    args += ["--from", source] if source is not None else []
    code, text, err = cli(args, capsys)
    assert code == 0, err
    done = json.loads(text)
    assert done["n_questions"] == expect_questions
    rows = [json.loads(x) for x in (out / "qa.jsonl").read_text(encoding="utf-8").splitlines()]
    assert all(r["relevant_doc_ids"] for r in rows)  # every reference context matched a document
    assert all(r.get("evidence") for r in rows), [r.get("metadata", {}).get("located") for r in rows]
    assert (out / "qa.review.csv").exists() and (out / "corpus.jsonl").exists()
    code, _, err = cli(["validate", "--corpus", out / "corpus.jsonl", "--qa", out / "qa.jsonl"], capsys)
    assert code == 0, err
    code, text, err = cli(["run", "--corpus", out / "corpus.jsonl", "--qa", out / "qa.jsonl", "-r", "bm25", "--json",
                           *QUICK], capsys)
    assert code == 0, err
    summary = json.loads(text)
    assert summary["config"]["relevance"] == "evidence" and summary["dataset"]["n_scored"] == expect_questions
    return rows, done


@pytest.mark.parametrize("name", ["ragas_testset.csv", "ragas_testset.jsonl", "parquet"])
def test_a_ragas_test_set_converts_and_grades(tmp_path, capsys, name):
    qa = _ragas_parquet(tmp_path / "testset.parquet") if name == "parquet" else DATA / name
    assert detect_format(qa) == "ragas"
    rows, _ = _convert_and_grade(tmp_path, capsys, qa, corpus="it_helpdesk")
    by = {r["question"]: r for r in rows}
    multi = by["해외 출장 중 VPN을 쓰려면 무엇을 신청하고, 분실한 사원증 재발급에는 며칠이 걸리나요?"]
    assert multi["relevant_doc_ids"] == ["hd_01", "hd_03"] and multi["type"] == "multi_hop_specific_query_synthesizer"
    assert len(multi["evidence"]) == 2
    assert rows[0]["metadata"]["source"]["format"] == "ragas"
    # a passage whose whitespace differs from the document is still matched (normalized)
    assert by["개인 휴대폰에서 회사 메일을 보려면 무엇을 해야 하나요?"]["relevant_doc_ids"] == ["hd_13"]


@pytest.mark.parametrize("name", ["deepeval_goldens.json", "deepeval_goldens.csv"])
def test_deepeval_goldens_convert_and_grade(tmp_path, capsys, name):
    assert detect_format(DATA / name) == "deepeval"
    rows, _ = _convert_and_grade(tmp_path, capsys, DATA / name, corpus="it_helpdesk")
    assert all(r["query_id"].startswith("golden_") for r in rows)
    assert rows[0]["metadata"]["source"]["source_file"] == "it_helpdesk/corpus.jsonl"
    assert rows[4]["relevant_doc_ids"] == ["hd_01", "hd_03"]  # the CSV's '|'-joined context is two passages


def test_autorag_parquet_files_convert_and_grade(tmp_path, capsys):
    qa, corpus = _autorag(tmp_path)
    assert detect_format(qa) == "autorag"
    rows, done = _convert_and_grade(tmp_path, capsys, qa, corpus=corpus, expect_questions=4)
    assert [r["query_id"] for r in rows] == ["q-0001", "q-0002", "q-0003", "q-0004"]
    two = rows[3]
    assert len(two["relevant_doc_ids"]) == 2 and len(two["metadata"]["source"]["retrieval_gt"]) == 2
    assert rows[1]["metadata"]["source"]["generation_gt"] == ["보안실(내선 1190)에 전화합니다."]  # the other answers
    docs = [json.loads(x) for x in (tmp_path / "converted" / "corpus.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(docs) == 28 and docs[0]["metadata"]["last_modified_datetime"].startswith("2026-11-30")


def test_without_a_corpus_the_passages_become_the_corpus(tmp_path, capsys):
    rows, done = _convert_and_grade(tmp_path, capsys, DATA / "ragas_testset.csv")
    assert any("distinct passages became the corpus" in n for n in done["notes"])
    assert rows[0]["relevant_doc_ids"] == ["ctx_0001"]


def test_a_passage_in_no_document_is_kept_and_counted(tmp_path):
    csv = tmp_path / "t.csv"
    csv.write_text("user_input,reference_contexts,reference\n메일 용량은?,\"['메일함 기본 용량은 30GB이며', "
                   "'어디에도 없는 문단입니다 정말로 아무 문서에도 없는']\",30GB입니다.\n", encoding="utf-8")
    got = read_foreign(None, csv, "it_helpdesk")
    (q,) = got.questions
    assert q.relevant_doc_ids == ("hd_07",) and q.metadata["source"]["unmatched"] == ["어디에도 없는 문단입니다 정말로 아무 문서에도 없는"]
    assert any("found in no document" in n for n in got.notes)


def test_unknown_files_and_missing_parts_are_refused(tmp_path, capsys):
    odd = tmp_path / "odd.csv"
    odd.write_text("a,b\n1,2\n", encoding="utf-8")
    with pytest.raises(InputError, match="cannot tell the format"):
        read_foreign(None, odd)
    qa, _ = _autorag(tmp_path)
    code, _, err = cli(["convert", "--to", "ragexam", "--out", tmp_path / "o", "--qa", qa, "--from", "autorag"], capsys)
    assert code == 2 and "corpus.parquet" in err
    code, _, err = cli(["convert", "--to", "beir", "--out", tmp_path / "o", "--qa", DATA / "ragas_testset.csv",
                        "--corpus", "it_helpdesk"], capsys)
    assert code == 2 and "--to ragexam" in err


def test_no_locate_writes_documents_only(tmp_path, capsys):
    code, text, _ = cli(["convert", "--to", "ragexam", "--out", tmp_path / "o", "--qa", DATA / "deepeval_goldens.json",
                         "--corpus", "it_helpdesk", "--no-locate", "--json"], capsys)
    assert code == 0 and any("--relevance doc" in n for n in json.loads(text)["notes"])
    rows = [json.loads(x) for x in (tmp_path / "o" / "qa.jsonl").read_text(encoding="utf-8").splitlines()]
    assert all(r["relevant_doc_ids"] and "evidence" not in r for r in rows)
