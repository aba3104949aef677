"""Strict loaders: every bad-input case raises InputError naming file, line and field."""

from __future__ import annotations

import json

import pytest

from ragexam.data import Corpus, load_corpus, load_qa
from ragexam.errors import InputError
from test_data_helpers import DOCS, QA, make_set, write_jsonl


def _err(fn, *args, **kw) -> InputError:
    with pytest.raises(InputError) as info:
        fn(*args, **kw)
    return info.value


def _check(err: InputError, path, line, field):
    msg = str(err)
    assert str(path) in msg
    assert err.source == str(path)
    assert err.line == line
    if line is not None:
        assert f":{line}:" in msg
    assert err.field == field
    if field is not None:
        assert f"field '{field}'" in msg
    return msg


def test_load_good_set(tmp_path):
    c, q = make_set(tmp_path)
    corpus = load_corpus(c)
    assert isinstance(corpus, Corpus) and len(corpus) == 3
    assert corpus["hd_01"].title == "VPN 연결 오류"
    qa = load_qa(q, corpus=corpus)
    assert [x.query_id for x in qa] == ["q1", "q2", "q3", "q4"]
    assert qa["q1"].evidence == ("VPN 클라이언트를 재설치", "관리자 권한이 필요")
    assert qa["q2"].evidence == ("사내 포털의 자료실",)           # a single string becomes a 1-tuple
    assert qa["q2"].grades == {"hd_02": 2} and qa["q1"].grades == {"hd_01": 1}
    assert qa["q1"].answerable and qa["q2"].answerable and not qa["q4"].answerable
    assert qa["q1"].evidence_units == {"ev1": "VPN 클라이언트를 재설치", "ev2": "관리자 권한이 필요"}
    assert qa.type_counts() == {"lexical": 2, "meaning": 1, "out_of_corpus": 1}
    # the corpus may also be given as a path
    assert len(load_qa(q, corpus=c)) == 4


def test_unknown_fields_kept_in_metadata(tmp_path):
    docs = [dict(DOCS[0], lang="ko", metadata={"source": "wiki"})]
    qa = [dict(QA[0], difficulty=3, tags=["vpn"])]
    c, q = make_set(tmp_path, docs, qa)
    corpus = load_corpus(c)
    assert corpus["hd_01"].metadata == {"source": "wiki", "lang": "ko"}
    assert load_qa(q, corpus=corpus)["q1"].metadata == {"difficulty": 3, "tags": ["vpn"]}


def test_metadata_conflict(tmp_path):
    c = write_jsonl(tmp_path / "c.jsonl", [dict(DOCS[0], lang="ko", metadata={"lang": "en"})])
    msg = _check(_err(load_corpus, c), c, 1, "lang")
    assert "clashes" in msg


@pytest.mark.parametrize("field,value,expected", [
    ("doc_id", 7, "expected a string id"),
    ("content", ["a"], "expected a string"),
    ("title", 3, "expected a string"),
    ("metadata", "x", "expected an object"),
])
def test_corpus_wrong_type(tmp_path, field, value, expected):
    docs = [DOCS[0], dict(DOCS[1], **{field: value})]
    c = write_jsonl(tmp_path / "c.jsonl", docs)
    msg = _check(_err(load_corpus, c), c, 2, field)
    assert expected in msg and "received" in msg


@pytest.mark.parametrize("field,value,expected", [
    ("query_id", 1, 'write it as a string: "1"'),
    ("question", 5, "expected a string"),
    ("relevant_doc_ids", "hd_01", "expected a list of non-empty document id strings"),
    ("relevance", {"hd_01": "2"}, "integer grades"),
    ("relevance", {"hd_01": True}, "integer grades"),
    ("evidence", 12, "a string or a list of strings"),
    ("evidence", ["ok", 3], "a string or a list of strings"),
    ("ground_truth", ["a"], "expected a string"),
    ("type", 1, "expected a string"),
    ("answerable", "yes", "true or false"),
])
def test_qa_wrong_type(tmp_path, field, value, expected):
    qa = [QA[0], dict(QA[2], **{field: value})]
    c, q = make_set(tmp_path, qa=qa)
    msg = _check(_err(load_qa, q), q, 2, field)
    assert expected in msg


def test_missing_required_fields(tmp_path):
    c = write_jsonl(tmp_path / "c.jsonl", [{"doc_id": "a"}])
    assert "'content' is absent" in _check(_err(load_corpus, c), c, 1, "content")
    q = write_jsonl(tmp_path / "q.jsonl", [{"question": "무엇?", "answerable": False}])
    assert "'query_id' is absent" in _check(_err(load_qa, q), q, 1, "query_id")
    # a field that is there with null is not called absent
    c = write_jsonl(tmp_path / "c.jsonl", [{"doc_id": None, "content": "x"}])
    assert "received null; every record needs a unique string doc_id" in _check(_err(load_corpus, c), c, 1, "doc_id")
    c = write_jsonl(tmp_path / "c.jsonl", [{"doc_id": "a", "content": None}])
    assert "received null; expected a non-empty string" in _check(_err(load_corpus, c), c, 1, "content")


def test_a_blank_type_is_no_type(tmp_path):
    c, q = make_set(tmp_path, qa=[dict(QA[0], type="  "), dict(QA[2], type=" lexical ")])
    assert [x.type for x in load_qa(q, corpus=c)] == [None, "lexical"]


def test_null_in_a_results_file_is_not_called_absent(tmp_path):
    from ragexam.data.retrieved import load_retrieved

    for line, field in (({"query_id": None, "contexts": []}, "query_id"), ({"query_id": "q1", "contexts": None},
                                                                          "contexts")):
        f = write_jsonl(tmp_path / "r.jsonl", [line])
        msg = _check(_err(load_retrieved, f), f, 1, field)
        assert "received null" in msg and "absent" not in msg


def test_duplicate_ids(tmp_path):
    c = write_jsonl(tmp_path / "c.jsonl", [DOCS[0], DOCS[1], DOCS[0]])
    msg = _check(_err(load_corpus, c), c, 3, "doc_id")
    assert "'hd_01' already appeared on line 1" in msg
    q = write_jsonl(tmp_path / "q.jsonl", [QA[0], QA[1], dict(QA[3], query_id="q1")])
    msg = _check(_err(load_qa, q), q, 3, "query_id")
    assert "'q1' already appeared on line 1" in msg


def test_ids_with_whitespace_are_accepted(tmp_path):
    """Real data sets have them (MTEB AutoRAGRetrieval); only the TREC writer encodes them."""
    doc_id = "finance - 지방은행 시중은행 전환 가이드.pdf - 4"
    c = write_jsonl(tmp_path / "c.jsonl", [dict(DOCS[0], doc_id=doc_id)])
    assert load_corpus(c).doc_ids == [doc_id]
    q = write_jsonl(tmp_path / "q.jsonl", [dict(QA[0], query_id="q 1", relevant_doc_ids=[doc_id])])
    assert load_qa(q, corpus=c)["q 1"].relevant_docs == (doc_id,)
    blank = write_jsonl(tmp_path / "b.jsonl", [dict(DOCS[0], doc_id="  ")])
    assert "empty" in _check(_err(load_corpus, blank), blank, 1, "doc_id")


def test_a_foreign_layout_says_how_to_map_it(tmp_path):
    c = write_jsonl(tmp_path / "c.jsonl", [{"id": "d1", "body": "text"}])
    msg = _check(_err(load_corpus, c), c, 1, "doc_id")
    assert "this record has: id, body" in msg and '"_id", "text"' in msg and "ragexam convert" in msg


def test_relevant_doc_id_not_in_corpus(tmp_path):
    c, q = make_set(tmp_path, qa=[QA[0], dict(QA[2], relevant_doc_ids=["hd_03", "hd_99"])])
    msg = _check(_err(load_qa, q, corpus=c), q, 2, "relevant_doc_ids")
    assert "'hd_99' is not in the corpus" in msg
    c, q = make_set(tmp_path, qa=[dict(QA[1], relevance={"hd_02": 1, "zz": 0})])
    assert "'zz'" in _check(_err(load_qa, q, corpus=c), q, 1, "relevance")
    # without a corpus the ids are not checked
    assert len(load_qa(q)) == 1


def test_evidence_found_in_no_document(tmp_path):
    c, q = make_set(tmp_path, qa=[QA[0], dict(QA[1], evidence=["사내 포털의 자료실", "지하 창고"])])
    msg = _check(_err(load_qa, q, corpus=c), q, 2, "evidence")
    assert "evidence string 2 '지하 창고' occurs in no document" in msg


def test_evidence_punctuation_hint(tmp_path):
    c, q = make_set(tmp_path, qa=[dict(QA[2], evidence="비밀번호는 90일마다, 바꿔야")])
    msg = str(_err(load_qa, q, corpus=c))
    assert "punctuation is ignored" in msg
    assert len(load_qa(q, corpus=c, ignore_punctuation=True)) == 1


def test_an_id_in_another_unicode_normalization_is_named_with_the_fix(tmp_path):
    """Korean saved on macOS is often NFD: '문서1' and '문서1' look the same and are other code points."""
    import unicodedata

    nfd = unicodedata.normalize("NFD", "문서1")
    c, q = make_set(tmp_path, docs=[dict(DOCS[0], doc_id=nfd)],
                    qa=[dict(QA[0], relevant_doc_ids=["문서1"], evidence=[])])
    msg = _check(_err(load_qa, q, corpus=c), q, 1, "relevant_doc_ids")
    assert f"the corpus has {nfd!r}, the same text in another Unicode normalization" in msg and "as NFC" in msg
    c, q = make_set(tmp_path, docs=[dict(DOCS[0], doc_id="문서2")], qa=[dict(QA[0], relevant_doc_ids=["문서1"],
                                                                            evidence=[])])
    assert "another Unicode normalization" not in str(_err(load_qa, q, corpus=c))


def test_evidence_behind_invisible_characters_is_named_with_the_fix(tmp_path):
    """A zero-width space or a soft hyphen in the corpus survives NFKC: the quote the user copied as they saw it
    does not match, and the message says why."""
    content = DOCS[0]["content"]
    word = content.split()[1]
    hidden = content.replace(word, word[:1] + "\u200b" + word[1:], 1)
    c, q = make_set(tmp_path, docs=[dict(DOCS[0], content=hidden), *DOCS[1:]],
                    qa=[dict(QA[0], evidence=[" ".join(content.split()[:3])])])
    msg = str(_err(load_qa, q, corpus=c))
    assert f"It does occur in {DOCS[0]['doc_id']} once the invisible characters there" in msg


def test_evidence_matches_after_normalization(tmp_path):
    # full-width digits and a line break in the source still match a plain quote
    docs = [{"doc_id": "d1", "content": "비밀번호는 ９０일마다\n  바꿔야 합니다."}]
    c, q = make_set(tmp_path, docs, [{"query_id": "q", "question": "주기?", "evidence": "90일마다 바꿔야"}])
    assert len(load_qa(q, corpus=c)) == 1


@pytest.mark.parametrize("question", ["", "   \n"])
def test_empty_question(tmp_path, question):
    c, q = make_set(tmp_path, qa=[QA[0], dict(QA[1], question=question)])
    assert "empty question" in _check(_err(load_qa, q), q, 2, "question")


def test_empty_content(tmp_path):
    c = write_jsonl(tmp_path / "c.jsonl", [DOCS[0], dict(DOCS[1], content=" ")])
    assert "empty content" in _check(_err(load_corpus, c), c, 2, "content")


def test_blank_evidence(tmp_path):
    c, q = make_set(tmp_path, qa=[dict(QA[0], evidence=["VPN", "  "])])
    assert "blank" in _check(_err(load_qa, q), q, 1, "evidence")


def test_duplicate_evidence(tmp_path):
    c, q = make_set(tmp_path, qa=[dict(QA[0], evidence=["관리자 권한", "관리자  권한"])])
    assert "evidence strings 1 and 2 are the same" in _check(_err(load_qa, q), q, 1, "evidence")


def test_invalid_json_line(tmp_path):
    c = tmp_path / "c.jsonl"
    c.write_text(json.dumps(DOCS[0], ensure_ascii=False) + "\n\n{\"doc_id\": \"x\", content: 1}\n", encoding="utf-8")
    msg = _check(_err(load_corpus, c), c, 3, None)
    assert "invalid JSON: Expecting property name enclosed in double quotes at column 17;" in msg


def test_duplicate_json_key(tmp_path):
    c = tmp_path / "c.jsonl"
    c.write_text('{"doc_id": "a", "content": "x", "content": "y"}\n', encoding="utf-8")
    assert "duplicate key 'content'" in _check(_err(load_corpus, c), c, 1, None)


def test_json_line_not_an_object(tmp_path):
    c = tmp_path / "c.jsonl"
    c.write_text('["a", "b"]\n', encoding="utf-8")
    assert "expected a JSON object" in _check(_err(load_corpus, c), c, 1, None)


def test_bom(tmp_path):
    c = tmp_path / "c.jsonl"
    c.write_bytes(b"\xef\xbb\xbf" + (json.dumps(DOCS[0]) + "\n").encode())
    msg = _check(_err(load_corpus, c), c, 1, None)
    assert "byte-order mark" in msg and "UTF-8" in msg


def test_not_utf8_names_line_of_first_bad_byte(tmp_path):
    c = tmp_path / "c.jsonl"
    good = (json.dumps(DOCS[0], ensure_ascii=False) + "\n").encode("utf-8")
    bad = (json.dumps({"doc_id": "x", "content": "관리자 권한"}, ensure_ascii=False) + "\n").encode("cp949")
    c.write_bytes(good + good.replace(b"hd_01", b"hd_09") + bad + bad)
    msg = _check(_err(load_corpus, c), c, 3, None)
    assert "not valid UTF-8" in msg and "cp949" in msg.lower()


def test_utf16_file(tmp_path):
    c = tmp_path / "c.jsonl"
    c.write_bytes((json.dumps(DOCS[0], ensure_ascii=False) + "\n").encode("utf-16"))
    assert "UTF-16" in _check(_err(load_corpus, c), c, 1, None)


@pytest.mark.parametrize("content", [b"", b"\n  \n"])
def test_empty_file(tmp_path, content):
    c = tmp_path / "c.jsonl"
    c.write_bytes(content)
    msg = _check(_err(load_corpus, c), c, None, None)
    assert "empty" in msg
    q = tmp_path / "q.jsonl"
    q.write_bytes(content)
    assert "empty" in _check(_err(load_qa, q), q, None, None)


def test_missing_file_is_input_error(tmp_path):
    err = _err(load_corpus, tmp_path / "nope.jsonl")
    assert "no such file" in str(err) and "it_helpdesk" in str(err)


def test_answerable_rules(tmp_path):
    c, q = make_set(tmp_path, qa=[{"query_id": "q", "question": "메뉴?"}])
    msg = _check(_err(load_qa, q), q, 1, "answerable")
    assert "no relevance or evidence; mark answerable: false if out-of-corpus" in msg
    c, q = make_set(tmp_path, qa=[{"query_id": "q", "question": "메뉴?", "answerable": True}])
    assert "no relevance or evidence" in str(_err(load_qa, q))
    c, q = make_set(tmp_path, qa=[{"query_id": "q", "question": "?", "answerable": False,
                                   "relevant_doc_ids": ["hd_01"]}])
    assert "answerable is false" in _check(_err(load_qa, q), q, 1, "answerable")
    # judged non-relevant documents (grade 0) are allowed on an out-of-corpus question
    c, q = make_set(tmp_path, qa=[{"query_id": "q", "question": "?", "answerable": False,
                                   "relevance": {"hd_01": 0}}])
    assert load_qa(q, corpus=c)["q"].answerable is False
    # only grade-0 judgments and no answerable flag: nothing relevant -> error, saying so
    c, q = make_set(tmp_path, qa=[{"query_id": "q", "question": "?", "relevance": {"hd_01": 0}}])
    assert "grades no document above 0, so it judges none relevant" in str(_err(load_qa, q))


def test_csv_corpus(tmp_path):
    c = tmp_path / "c.csv"
    c.write_text('doc_id,title,content,metadata,lang\n'
                 'hd_01,VPN,"VPN 클라이언트를 재설치합니다.\n관리자 권한이 필요합니다.","{""src"": ""wiki""}",ko\n'
                 'hd_02,,"프린터 드라이버",,en\n', encoding="utf-8")
    corpus = load_corpus(c)
    assert corpus["hd_01"].content == "VPN 클라이언트를 재설치합니다.\n관리자 권한이 필요합니다."
    assert corpus["hd_01"].metadata == {"src": "wiki", "lang": "ko"}
    assert corpus["hd_02"].title is None


def test_csv_errors(tmp_path):
    c = tmp_path / "c.csv"
    c.write_text("doc_id,text\nhd_01,x\n", encoding="utf-8")
    assert "missing column(s) content" in _check(_err(load_corpus, c), c, 1, None)
    c.write_text('doc_id,content\nhd_01,"two\nlines"\nhd_02,a,extra\n', encoding="utf-8")
    assert "row has 3 cells; expected 2" in _check(_err(load_corpus, c), c, 4, None)
    c.write_text('doc_id,content\nhd_01,x\nhd_01,y\n', encoding="utf-8")
    assert "already appeared on line 2" in _check(_err(load_corpus, c), c, 3, "doc_id")
    c.write_text('doc_id,content,metadata\nhd_01,x,{not json}\n', encoding="utf-8")
    assert "not JSON" in _check(_err(load_corpus, c), c, 2, "metadata")
    c.write_text('doc_id,content\n', encoding="utf-8")
    assert "empty" in str(_err(load_corpus, c))
    c.write_bytes(b"\xef\xbb\xbfdoc_id,content\nhd_01,x\n")
    assert "byte-order mark" in _check(_err(load_corpus, c), c, 1, None)


def test_bundled_name_resolution(tmp_path, monkeypatch):
    from ragexam.data import datasets

    monkeypatch.setattr(datasets, "_samples_dir", lambda: tmp_path)
    (tmp_path / "it_helpdesk").mkdir()
    make_set(tmp_path / "it_helpdesk")
    corpus = load_corpus("it_helpdesk")
    assert len(corpus) == 3 and corpus.source == str(tmp_path / "it_helpdesk" / "corpus.jsonl")
    assert len(load_qa("it_helpdesk", corpus="it_helpdesk")) == 4
    err = _err(load_corpus, "ai_concepts")
    assert "not installed" in str(err)
    # a local file of that name wins over the bundled set
    monkeypatch.chdir(tmp_path)
    write_jsonl(tmp_path / "it_helpdesk_local", DOCS[:1])
    assert len(load_corpus("it_helpdesk_local")) == 1


def test_objects_are_loaded_and_checked_as_files_are():
    """load_qa / load_corpus take a QASet or Corpus, or a list of objects or records, and check them as a file
    is checked (a set made in Python used to skip every check)."""
    from ragexam.data import Document, QASet, Question

    qa = load_qa("it_helpdesk")
    kept = load_qa(QASet(qa.questions[:3]), corpus="it_helpdesk")
    assert [q.query_id for q in kept] == [q.query_id for q in qa.questions[:3]]
    assert len(load_qa([*qa.questions[:2], {"query_id": "z", "question": "VPN?", "evidence": "VPN"}],
                       corpus="it_helpdesk")) == 3
    bad = Question("x1", "VPN?", evidence=("not in the corpus at all",))
    with pytest.raises(InputError, match=r"^QASet, query_id 'x1': field 'evidence': evidence string 1"):
        load_qa(QASet([bad]), corpus="it_helpdesk")
    load_qa(QASet([bad]))  # without a corpus, nothing to find it in: as for a file
    moved = [q for q in qa.questions[:2]] + [Question("x2", "?", relevant_doc_ids=("hd_99",))]
    with pytest.raises(InputError, match=r"field 'relevant_doc_ids': document 'hd_99' is not in the corpus"):
        load_qa(moved, corpus="it_helpdesk")
    with pytest.raises(InputError, match=r"^.*qa.jsonl:\d+: field 'relevant_doc_ids': document 'hd_01'"):
        load_qa(qa, corpus=Corpus([Document("other", "text")]))  # a set read from a file: its file and line
    with pytest.raises(InputError, match=r"^corpus\[1\]: field 'content': received an empty content"):
        load_corpus([{"doc_id": "a", "content": "x"}, {"doc_id": "b", "content": " "}])
    with pytest.raises(InputError, match=r"^Corpus, doc_id 'b': field 'content': received an empty content"):
        load_corpus(Corpus([Document("a", "x"), Document("b", "")]))
    with pytest.raises(InputError, match="^qa: field 'qa': received a dict; expected a question set file"):
        load_qa({"query_id": "q"})


@pytest.mark.parametrize("suffix", [".csv", ".tsv", ".xlsx", ".parquet"])
def test_a_question_set_in_a_sheet_is_one_error_with_the_fix(tmp_path, suffix):
    """A question set is JSONL only: a sheet is one ``file_format`` error (not one ``invalid JSON`` per line) that
    says what is read and how to convert it."""
    from ragexam.data import validate

    c = write_jsonl(tmp_path / "c.jsonl", DOCS)
    q = tmp_path / f"qa{suffix}"
    q.write_text("query_id,question,relevant_doc_ids\nq1,VPN?,hd_01\nq2,프린터?,hd_02\n", encoding="utf-8")
    msg = _check(_err(load_qa, q), q, None, None)
    assert "expected a question set in JSON Lines" in msg and "only a corpus may be CSV" in msg
    assert "A question set kept in a sheet" in msg and "ragexam convert --from ragas|deepeval|autorag" in msg
    report = validate(c, q)
    assert [(p.kind, p.line) for p in report.problems] == [("file_format", None)]


def test_the_documented_sheet_conversion_reads_back_the_set(tmp_path, monkeypatch):
    """docs/data-format.md's Python lines turn a sheet saved by Excel (a BOM, quoted cells with commas, quotes and
    line breaks, Korean text, lists joined by " | ", empty cells) into the question set it was made from."""
    import csv
    import re
    from pathlib import Path

    doc = (Path(__file__).parents[1] / "docs" / "data-format.md").read_text(encoding="utf-8")
    section = doc.split("## A question set kept in a sheet", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    questions = [dict(q) for q in QA] + [
        {"query_id": "q, \"quoted\"", "question": "두 줄\n질문, 쉼표와 \"따옴표\"?", "relevant_doc_ids": ["hd_01", "hd_02"],
         "ground_truth": "답", "answerable": True},
        {"query_id": "q_out", "question": "점심 메뉴?", "answerable": False, "type": "out_of_corpus"}]
    columns = ["query_id", "question", "relevant_doc_ids", "evidence", "ground_truth", "type", "answerable"]
    with open(tmp_path / "qa.csv", "w", encoding="utf-8-sig", newline="") as f:  # Excel's "CSV UTF-8": a BOM
        w = csv.writer(f)
        w.writerow(columns)
        for q in questions:
            w.writerow([" | ".join(v) if isinstance(v, list) else str(v).lower() if isinstance(v, bool)
                        else "" if v is None else v for v in (q.get(k) for k in columns)])
    assert (tmp_path / "qa.csv").read_bytes().startswith(b"\xef\xbb\xbf")
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "docs/data-format.md", "exec"), {})
    expected = write_jsonl(tmp_path / "expected.jsonl", questions)
    got = [(q.query_id, q.question, q.relevant_doc_ids, q.evidence, q.ground_truth, q.type, q.answerable)
           for q in load_qa(tmp_path / "qa.jsonl")]
    assert got == [(q.query_id, q.question, q.relevant_doc_ids, q.evidence, q.ground_truth, q.type, q.answerable)
                   for q in load_qa(expected)]
    assert "q_out" in [g[0] for g in got] and len(got) == len(questions)


def test_a_truncated_line_says_where_its_string_starts(tmp_path):
    """json's own message for a cut-off string ends in a bare "starting at": the column is said with it, whole."""
    c = tmp_path / "c.jsonl"
    line = json.dumps(DOCS[0], ensure_ascii=False)
    start = line.index('"content": "') + len('"content": ')
    c.write_text(line[: start + 20] + "\n", encoding="utf-8")
    msg = _check(_err(load_corpus, c), c, 1, None)
    assert f"invalid JSON: Unterminated string starting at column {start + 1}; expected one complete" in msg
    c.write_text("{oops}\n", encoding="utf-8")
    assert "invalid JSON: Expecting property name enclosed in double quotes at column 2;" in str(_err(load_corpus, c))


def test_a_missing_sheet_is_no_such_file(tmp_path):
    assert "no such file" in str(_err(load_qa, tmp_path / "qa.csv"))


def test_a_line_that_is_no_object_is_named_in_jsons_words(tmp_path):
    """'received a JSON NoneType' and 'received integer' were Python's words for JSON's null and number."""
    from ragexam import fmt

    assert [fmt.json_kind(v) for v in (None, True, 3, 2.5, "x", [1], {}, (1,))] == [
        "null", "a boolean", "a number", "a number", "a string", "an array", "an object", "an array"]
    for line, kind in (("null", "null"), ("[1, 2]", "an array"), ("7", "a number")):
        c = tmp_path / "c.jsonl"
        c.write_text(line + "\n", encoding="utf-8")
        assert f"received {kind}; expected a JSON object like" in str(_err(load_corpus, c))
    c = write_jsonl(tmp_path / "c.jsonl", [{"doc_id": 5, "content": "x"}])
    assert "received a number 5; expected a string id" in str(_err(load_corpus, c))


def test_relevance_that_grades_no_document_above_zero_is_told_as_such(tmp_path):
    """relevance {"d1": 0} beside relevant_doc_ids ["d1"] was 'no relevance or evidence' under field 'answerable'."""
    from ragexam.data import validate

    c, q = make_set(tmp_path, qa=[dict(QA[0], evidence=[], relevance={"hd_01": 0})])
    msg = _check(_err(load_qa, q), q, 1, "relevance")
    assert "relevance {'hd_01': 0} grades no document above 0, so it judges none relevant" in msg
    report = validate(c, q)
    assert not any("every one is marked answerable: false" in str(p) for p in report.problems)


def test_two_ids_that_differ_only_in_unicode_normalization_are_warned_of(tmp_path):
    import unicodedata

    from ragexam.data import validate

    nfd = unicodedata.normalize("NFD", "문서1")
    c = write_jsonl(tmp_path / "c.jsonl", [dict(DOCS[0], doc_id="문서1"), dict(DOCS[1], doc_id=nfd)])
    q = write_jsonl(tmp_path / "q.jsonl", [dict(QA[0], relevant_doc_ids=["문서1"], evidence=[])])
    warned = [p for p in validate(c, q).problems if p.kind == "id_normalization"]
    assert len(warned) == 1 and warned[0].line == 2 and "another Unicode normalization" in warned[0].message


def test_an_empty_review_sheet_expects_a_row_per_question(tmp_path):
    from ragexam.data.problems import ProblemCollector
    from ragexam.data.reading import iter_csv

    with pytest.raises(InputError, match="one row per question"):
        list(iter_csv("query_id,status\n", "s.csv", ProblemCollector(strict=True), required=("query_id", "status"),
                      row_is="question"))
