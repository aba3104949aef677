"""validate(): every problem at once, with counts by kind; the validate / datasets CLI."""

from __future__ import annotations

import json

import pytest

from ragexam.data import validate
from ragexam.data.problems import KINDS
from ragexam.errors import InputError
from test_data_helpers import DOCS, QA, make_set, write_jsonl


def _bad_set(tmp_path):
    c = tmp_path / "corpus.jsonl"
    lines = [json.dumps(d, ensure_ascii=False) for d in DOCS]
    lines += [json.dumps(DOCS[0], ensure_ascii=False),                    # 4 duplicate id
              '{"doc_id": 5, "content": "x"}',                            # 5 wrong type
              "{oops",                                                    # 6 invalid json
              '{"doc_id": "hd_09", "content": "x", "title": null}']       # 7 fine (null = absent)
    c.write_bytes(b"\xef\xbb\xbf" + ("\n".join(lines) + "\n").encode("utf-8"))  # BOM
    qa = [
        QA[0],                                                            # 1 fine
        dict(QA[1], question=" "),                                        # 2 empty question
        dict(QA[2], relevant_doc_ids=["hd_03", "hd_77"]),                 # 3 unknown doc
        {"query_id": "q5", "question": "메뉴?"},                           # 4 no judgments
        dict(QA[3], query_id="q1"),                                       # 5 duplicate id
        {"query_id": "q6", "question": "?", "evidence": ["없는 말"]},       # 6 evidence not found
        {"query_id": "q7", "question": "?", "evidence": "PC를 재부팅",
         "relevant_doc_ids": ["hd_02"]},                                  # 7 warning (not in relevant)
        {"query_id": "q8", "question": "?", "answerable": "no"},          # 8 wrong type
    ]
    q = write_jsonl(tmp_path / "qa.jsonl", qa)
    return c, q


def test_validate_reports_all_problems_with_counts(tmp_path):
    c, q = _bad_set(tmp_path)
    report = validate(c, q)
    assert not report.ok
    got = [(p.level, p.kind, p.file, p.line, p.field) for p in report.problems]
    C, Q = str(c), str(q)
    assert got == [
        ("error", "bom", C, 1, None),
        ("error", "duplicate_id", C, 4, "doc_id"),
        ("error", "wrong_type", C, 5, "doc_id"),
        ("error", "invalid_json", C, 6, None),
        ("error", "empty_value", Q, 2, "question"),
        ("error", "unknown_doc_id", Q, 3, "relevant_doc_ids"),
        ("error", "no_judgments", Q, 4, "answerable"),
        ("error", "duplicate_id", Q, 5, "query_id"),
        ("error", "evidence_not_found", Q, 6, "evidence"),
        ("warning", "evidence_not_in_relevant", Q, 7, "evidence"),
        ("error", "wrong_type", Q, 8, "answerable"),
    ]
    assert report.counts_by_kind() == {
        "bom": 1, "invalid_json": 1, "wrong_type": 2, "duplicate_id": 2, "empty_value": 1,
        "no_judgments": 1, "unknown_doc_id": 1, "evidence_not_found": 1, "evidence_not_in_relevant": 1}
    assert len(report.errors) == 10 and len(report.warnings) == 1
    assert report.documents == 4 and report.questions == 7
    for p in report.problems:
        assert p.kind in KINDS and KINDS[p.kind][0] == p.level
        assert str(p).startswith(f"{p.level}: {p.file}")
    d = report.to_dict()
    assert d["ok"] is False and d["errors"] == 10 and d["counts"]["wrong_type"] == 2
    json.dumps(d)


def test_warning_only_is_ok(tmp_path):
    docs = [DOCS[0], DOCS[1], dict(DOCS[2], content=DOCS[2]["content"] + " 재설치에는 관리자 권한이 필요합니다.")]
    c, q = make_set(tmp_path, docs=docs)
    report = validate(c, q)
    assert report.ok
    assert [(p.kind, p.line, p.field) for p in report.problems] == [
        ("evidence_outside_relevant", 1, "evidence")]
    assert "hd_03" in report.problems[0].message


def test_relevance_mismatch_is_a_warning(tmp_path):
    c, q = make_set(tmp_path, qa=[dict(QA[1], relevant_doc_ids=["hd_01"])])
    report = validate(c, q)
    assert report.ok and report.counts_by_kind() == {"relevance_mismatch": 1}


def test_non_utf8_in_validate_continues(tmp_path):
    c = tmp_path / "c.jsonl"
    good = "\n".join(json.dumps(d, ensure_ascii=False) for d in DOCS) + "\n"
    c.write_bytes(good.encode() + '{"doc_id": "x9", "content": "관리자"}\n'.encode("cp949"))
    q = write_jsonl(tmp_path / "q.jsonl", QA)
    report = validate(c, q)
    assert [(p.kind, p.line) for p in report.problems] == [("encoding", 4)]
    assert report.documents == 4  # the bad line still yields a (replacement-character) document


def test_validate_missing_file_raises(tmp_path):
    c, q = make_set(tmp_path)
    with pytest.raises(InputError, match="no such file"):
        validate(c, tmp_path / "missing.jsonl")
    with pytest.raises(InputError, match="no such file"):
        validate(tmp_path / "missing.jsonl", q)


def test_validate_corpus_only(tmp_path):
    c, _ = make_set(tmp_path)
    r = validate(c)
    assert r.ok and r.qa is None and r.questions == 0


# --- CLI ------------------------------------------------------------------------------------


def _run(argv, capsys):
    from ragexam.cli import main

    with pytest.raises(SystemExit) as info:
        main(argv)
    out = capsys.readouterr()
    return info.value.code, out.out, out.err


def test_cli_validate_ok(tmp_path, capsys):
    c, q = make_set(tmp_path)
    code, out, _ = _run(["validate", "--corpus", str(c), "--qa", str(q)], capsys)
    assert code == 0 and "OK" in out and "0 errors" in out


def test_cli_validate_errors(tmp_path, capsys):
    c, q = _bad_set(tmp_path)
    code, out, _ = _run(["validate", "--corpus", str(c), "--qa", str(q)], capsys)
    assert code == 1
    assert f"{q}:6: field 'evidence':" in out and "evidence_not_found" in out
    assert "problems by kind" in out and "FAILED: 10 errors, 1 warning (" in out
    code, out, _ = _run(["validate", "--corpus", str(c), "--qa", str(q), "--json"], capsys)
    data = json.loads(out)
    assert code == 1 and data["errors"] == 10 and data["counts"]["duplicate_id"] == 2
    assert {"level", "kind", "file", "line", "field", "message"} <= set(data["problems"][0])


def test_cli_validate_missing_file_exits_2(tmp_path, capsys):
    c, _ = make_set(tmp_path)
    code, _, err = _run(["validate", "--corpus", str(c), "--qa", str(tmp_path / "nope.jsonl")], capsys)
    assert code == 2 and "no such file" in err


def test_cli_datasets(tmp_path, capsys, monkeypatch):
    from ragexam.data import datasets

    monkeypatch.setattr(datasets, "_samples_dir", lambda: tmp_path)
    (tmp_path / "it_helpdesk").mkdir()
    make_set(tmp_path / "it_helpdesk")
    write_jsonl(tmp_path / "it_helpdesk" / "answers.jsonl", [{"query_id": "q1", "answer": "x"}])
    code, out, _ = _run(["datasets", "--json"], capsys)
    data = {d["name"]: d for d in json.loads(out)}
    assert code in (0, None)
    assert data["it_helpdesk"]["docs"] == 3 and data["it_helpdesk"]["questions"] == 4
    assert data["it_helpdesk"]["types"] == {"lexical": 2, "meaning": 1, "out_of_corpus": 1}
    assert data["ai_concepts"]["available"] is False
    code, out, _ = _run(["datasets"], capsys)
    assert "it_helpdesk" in out and "lexical 2" in out
    code, out, _ = _run(["validate", "--corpus", "it_helpdesk", "--qa", "it_helpdesk"], capsys)
    assert code == 0


def test_cli_evidence_coverage(tmp_path, capsys):
    c, q = make_set(tmp_path)
    code, out, _ = _run(["evidence-coverage", "--corpus", str(c), "--qa", str(q), "--chunker", "whole"], capsys)
    assert code == 0 and "4/4 evidence strings" in out
    code, out, _ = _run(["evidence-coverage", "--corpus", str(c), "--qa", str(q), "--chunker", "chars:20:0",
                         "--json"], capsys)
    data = json.loads(out)
    assert code == 1 and data["signature"].startswith("chunker:chars:20:0|")
    cut = [r for r in data["coverage"] if not r["findable"]]
    assert cut and all(r["cuts"] for r in cut)
    code, _, err = _run(["evidence-coverage", "--corpus", str(c), "--qa", str(q), "--chunker", "words"], capsys)
    assert code == 2 and "valid forms" in err


def test_cli_evidence_coverage_defaults_to_the_runs_chunker(tmp_path, capsys):
    # the reviewer's corpus: evidence across a paragraph break, which run's paragraphs:400 cuts (evidence_split);
    # the check defaulted to whole and said 1/1 inside a single chunk, exit 0
    from ragexam.analysis.exam import config
    from ragexam.data import chunking

    first = " ".join(f"Step {i} of the VPN setup is done on floor {i}." for i in range(6))
    second = " ".join(f"Rule {i} applies to every office on floor {i}." for i in range(6))
    content = f"{first} First paragraph about VPN setup ends here.\n\nSecond paragraph starts with the port 443 rule. {second}"
    c, q = tmp_path / "c.jsonl", tmp_path / "q.jsonl"
    write_jsonl(c, [{"doc_id": "d1", "content": content}])
    write_jsonl(q, [{"query_id": "q1", "question": "Where does the VPN setup paragraph end?",
                     "evidence": ["VPN setup ends here. Second paragraph starts"]}])
    code, out, _ = _run(["evidence-coverage", "--corpus", str(c), "--qa", str(q), "--json"], capsys)
    data = json.loads(out)
    assert code == 1 and data["signature"].startswith("chunker:paragraphs:400|")
    assert [r["findable"] for r in data["coverage"]] == [False]
    code, out, _ = _run(["evidence-coverage", "--corpus", str(c), "--qa", str(q), "--chunker", "whole"], capsys)
    assert code == 0 and "1/1 evidence strings" in out
    # one constant: the run's default chunker is the check's
    assert config.DEFAULT_CHUNKER is chunking.DEFAULT_CHUNKER == "paragraphs:400"
    assert config.RunConfig.__dataclass_fields__["chunkers"].default_factory() == [chunking.DEFAULT_CHUNKER]
    code, out, _ = _run(["evidence-coverage", "--help"], capsys)
    assert "default: paragraphs:400" in " ".join(out.split())
