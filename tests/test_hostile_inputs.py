"""Hostile and confusing inputs of issue 19 at load time: texts no file can hold, lines nested 50,000 deep,
BEIR qrels whose first judgment looks like a header, doc ids nobody knows, and messages that say what is wrong
(validate --split, a plain folder as --qa, a TREC file without --queries, --contexts 0, http: URLs, keys in
specs)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from test_cli_pipelines import cli

import ragexam
from ragexam.data.loaders import load_corpus, load_qa
from ragexam.data.problems import ProblemCollector
from ragexam.data.retrieved import load_retrieved
from ragexam.data.validation import validate
from ragexam.errors import InputError

LONE = "\\ud800"  # as written in a JSON file: half of a UTF-16 pair
QUICK = ["--n-resamples", "20", "--n-permutations", "20", "--no-history"]


def write_lines(path: Path, lines) -> Path:
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x, ensure_ascii=False)) + "\n" for x in lines),
                    encoding="utf-8")
    return path


# -- texts that cannot be encoded: an input error at load, naming file, line and field ---------------------------
def test_a_lone_surrogate_in_a_results_file_is_an_input_error_at_load(tmp_path):
    qa = load_qa("it_helpdesk")
    ids = [q.query_id for q in qa][:3]
    lines = [json.dumps({"query_id": ids[0], "contexts": ["fine", {"text": "ok"}]}),
             '{"query_id": "%s", "contexts": ["fine", {"text": "broken %s here", "doc_id": "hd_01"}]}' % (ids[1], LONE),
             json.dumps({"query_id": ids[2], "contexts": ["fine"]})]
    f = write_lines(tmp_path / "r.jsonl", lines)
    with pytest.raises(InputError) as ei:
        load_retrieved(f)
    e = ei.value
    assert (e.source, e.line, e.field) == (str(f), 2, "contexts[1].text")
    assert "\\ud800 at character 8" in e.message and "lone surrogate" in e.message
    # the run never starts, so no folder is half written (it crashed with UnicodeEncodeError while saving)
    with pytest.raises(InputError, match="contexts\\[1\\].text"):
        ragexam.grade("it_helpdesk", f, progress=False)
    # a proper pair (an emoji written as two escapes) is text
    write_lines(f, ['{"query_id": "%s", "contexts": ["ok \\ud83d\\ude00"]}' % ids[0]])
    assert load_retrieved(f).sets[0].lists[ids[0]][0].text == "ok \U0001F600"


@pytest.mark.parametrize("kind, line, field", [
    ("corpus", '{"doc_id": "d1", "content": "a %s b"}' % LONE, "content"),
    ("corpus", '{"doc_id": "d1", "content": "x", "metadata": {"src": "%s"}}' % LONE, "metadata.src"),
    ("corpus", '{"doc_id": "d1", "content": "x", "%s": 1}' % LONE, "(a key)"),
    ("qa", '{"query_id": "q1", "question": "왜 %s?", "evidence": ["x"]}' % LONE, "question"),
    ("qa", '{"query_id": "q1", "question": "q", "evidence": ["x", "%s"]}' % LONE, "evidence[1]"),
])
def test_a_lone_surrogate_in_a_corpus_or_question_set_names_its_field(tmp_path, kind, line, field):
    f = write_lines(tmp_path / f"{kind}.jsonl", [line])
    with pytest.raises(InputError) as ei:
        (load_corpus if kind == "corpus" else load_qa)(f)
    assert (ei.value.source, ei.value.line, ei.value.field) == (str(f), 1, field)
    col = ProblemCollector(strict=False)  # validate lists it as an encoding problem and goes on
    from ragexam.data.loaders import parse_corpus, parse_qa

    (parse_corpus if kind == "corpus" else parse_qa)(f, col)
    assert [p.kind for p in col.problems][:1] == ["encoding"]


def test_a_lone_surrogate_in_a_csv_metadata_cell(tmp_path):
    f = tmp_path / "c.csv"
    f.write_text('doc_id,content,metadata\nd1,text,"{""a"": ""%s""}"\n' % LONE, encoding="utf-8")
    with pytest.raises(InputError) as ei:
        load_corpus(f)
    assert (ei.value.line, ei.value.field) == (2, "metadata.a")


def test_a_service_text_with_a_lone_surrogate_fails_that_question():
    from json_stub import json_server

    from ragexam.retrieval.spec import parse_retriever

    def handle(path, body, headers):
        text = "ok" if body["query"] == "fine" else "bad \ud800 text"
        return 200, b'{"results": [{"text": %s}]}' % json.dumps(text).encode()

    url, shutdown = json_server(handle)
    try:
        got = parse_retriever(f"http:{url}/s", cache=False, progress=False).retrieve(["fine", "broken"], 5)
        assert got[0].items[0].text == "ok" and got[0].failure is None
        assert got[1].failure.startswith("bad_response: the response's results[0].text holds \\ud800")
    finally:
        shutdown()


# -- nesting ------------------------------------------------------------------------------------------------------
def test_a_results_line_nested_50000_deep_is_an_error_of_that_line(tmp_path):
    qa = load_qa("it_helpdesk")
    deep = '{"query_id": "%s", "contexts": %s}' % (qa.questions[1].query_id, "[" * 50_000 + "]" * 50_000)
    f = write_lines(tmp_path / "r.jsonl", [{"query_id": qa.questions[0].query_id, "contexts": ["a"]}, deep])
    with pytest.raises(InputError) as ei:
        load_retrieved(f)
    assert (ei.value.source, ei.value.line) == (str(f), 2) and "nested deeper than 100 levels" in ei.value.message
    col = ProblemCollector(strict=False)  # validate: one problem for that line, the other lines are read
    from ragexam.data.loaders import parse_corpus

    c = write_lines(tmp_path / "c.jsonl", [{"doc_id": "d1", "content": "x"}, '{"doc_id": "d2", "content": "y", '
                                           '"metadata": %s}' % ("[" * 50_000 + "]" * 50_000),
                                           {"doc_id": "d3", "content": "z"}])
    parsed = parse_corpus(c, col)
    assert [d.doc_id for d in parsed.documents] == ["d1", "d3"]
    assert [(p.kind, p.line) for p in col.problems] == [("invalid_json", 2)]


# -- BEIR ---------------------------------------------------------------------------------------------------------
def _beir(root: Path, qrels: str, n: int = 3) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    write_lines(root / "corpus.jsonl", [{"_id": f"d{i}", "title": "", "text": f"text {i}"} for i in range(n)])
    write_lines(root / "queries.jsonl", [{"_id": f"q{i}", "text": f"question {i}"} for i in range(n)])
    (root / "qrels").mkdir(parents=True, exist_ok=True)
    (root / "qrels" / "test.tsv").write_text(qrels, encoding="utf-8")
    return root


def test_beir_qrels_without_a_header_keep_their_first_judgment(tmp_path):
    """The first score is 1.0: a number, so the line is data (it used to be taken as a header: 2 of 3 questions)."""
    root = _beir(tmp_path / "b", "q0\td0\t1.0\nq1\td1\t1.0\nq2\td2\t2\n")
    assert [(q.query_id, q.grades) for q in load_qa(root)] == [("q0", {"d0": 1}), ("q1", {"d1": 1}),
                                                               ("q2", {"d2": 2})]
    assert validate(root, root).questions == 3
    _beir(root, "query-id\tcorpus-id\tscore\nq0\td0\t1\n")  # a header, known by its names
    assert [q.query_id for q in load_qa(root)] == ["q0"]
    _beir(root, "q0\td0\t0.5\n")
    with pytest.raises(InputError, match=r"score '0.5' is not an integer grade.*header line names its columns"):
        load_qa(root)


def test_validate_split_chooses_the_qrels_that_the_beir_error_asks_for(tmp_path, capsys):
    root = _beir(tmp_path / "b", "q0\td0\t1\n")
    (root / "qrels" / "test.tsv").rename(root / "qrels" / "dev.tsv")
    (root / "qrels" / "train.tsv").write_text("q1\td1\t1\nq2\td2\t1\n", encoding="utf-8")
    code, out, err = cli(["validate", "--corpus", root, "--qa", root], capsys)
    assert code == 2 and "choose one (--split NAME)" in err
    code, out, err = cli(["validate", "--corpus", root, "--qa", root, "--split", "train", "--json"], capsys)
    assert code == 0, err
    assert json.loads(out)["questions"] == 2
    code, out, err = cli(["validate", "--corpus", root, "--qa", root, "--split", "nope"], capsys)
    assert code == 2 and "has no split 'nope'; its qrels are dev, train" in err
    code, out, err = cli(["validate", "--corpus", "it_helpdesk", "--qa", "it_helpdesk", "--split", "dev"], capsys)
    assert code == 2 and "--split chooses the qrels of a BEIR folder" in err


def test_a_plain_folder_as_qa_says_what_a_question_set_is(tmp_path, capsys):
    d = tmp_path / "mydata"
    d.mkdir()
    write_lines(d / "qa.jsonl", [{"query_id": "q"}])
    code, out, err = cli(["validate", "--corpus", "it_helpdesk", "--qa", d], capsys)
    assert code == 2
    msg = " ".join(err.split())
    assert "is a directory without a question set; expected a QA file (JSONL" in msg
    assert "or a BEIR folder" in msg and "it holds qa.jsonl: give one of those files" in msg
    (d / "summary.json").write_text("{}")
    with pytest.raises(InputError, match="this is a run or score folder"):
        load_qa(d)


def test_convert_a_trec_file_without_queries_says_to_give_them(tmp_path, capsys):
    q = tmp_path / "q.trec"
    q.write_text("q1 0 d1 1\nq2 0 d2 1\n")
    code, out, err = cli(["convert", "--to", "ragexam", "--qa", q, "--out", tmp_path / "o"], capsys)
    msg = " ".join(err.split())
    assert code == 2 and "is a qrels file" in msg and "--queries" in msg and "invalid JSON" not in msg
    assert not (tmp_path / "o").exists()
    tsv = tmp_path / "q.tsv"
    tsv.write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    code, out, err = cli(["convert", "--to", "ragexam", "--qa", tsv, "--out", tmp_path / "o"], capsys)
    assert code == 2 and "--queries" in err
    (tmp_path / "queries.tsv").write_text("q1\tquestion one\nq2\tquestion two\n")
    code, out, err = cli(["convert", "--to", "ragexam", "--qa", q, "--queries", tmp_path / "queries.tsv", "--out",
                          tmp_path / "o"], capsys)
    assert code == 0, err


def test_answer_contexts_out_of_range_names_the_option():
    from ragexam.analysis.answers.answering import answer_tasks

    for k in (0, 11):
        with pytest.raises(InputError) as ei:
            answer_tasks(None, None, None, model="m", endpoint="e", contexts=k)
        assert str(ei.value).startswith("--contexts: field 'contexts': received") and "field 'k'" not in str(ei.value)


# -- doc relevance with doc ids nobody knows ----------------------------------------------------------------------
def test_doc_relevance_with_unknown_doc_ids_is_an_error_not_zeros(tmp_path):
    qa = load_qa("it_helpdesk")
    qs = [q for q in qa if q.answerable]
    chunk_ids = [{"query_id": q.query_id, "contexts": [{"text": "t", "doc_id": f"chunk-{i}"}]}
                 for i, q in enumerate(qs)]
    f = write_lines(tmp_path / "r.jsonl", chunk_ids)
    with pytest.raises(InputError) as ei:
        ragexam.grade("it_helpdesk", f, relevance="doc", progress=False)
    msg = str(ei.value)
    assert "none of the" in msg and "judged by the question set" in msg and "'chunk-0'" in msg
    assert "every doc-relevance metric would be 0" in msg
    with pytest.raises(InputError, match="is in the corpus"):
        ragexam.grade("it_helpdesk", f, relevance="doc", corpus="it_helpdesk", progress=False)
    # some unknown: graded, with a warning
    some = [{"query_id": q.query_id, "contexts": [{"text": f"t {q.query_id}", "doc_id": sorted(q.grades)[0]},
                                                  {"text": f"u {q.query_id}", "doc_id": "chunk-9"}]} for q in qs]
    write_lines(f, some)
    res = ragexam.grade("it_helpdesk", f, relevance="doc", progress=False, n_resamples=20, n_permutations=20)
    assert res.summary["results"]["r"]["metrics"]["hit@1"] == 1.0
    # without a corpus an unjudged id is just not relevant (issue 39: no warning on every realistic file) ...
    assert not [w for w in res.summary["warnings"] if "doc_id(s)" in w]
    res = ragexam.grade("it_helpdesk", f, relevance="doc", corpus="it_helpdesk", progress=False, n_resamples=20,
                        n_permutations=20)  # ... with one, an id it does not hold is worth a word
    assert any("1 of the" in w and "'chunk-9'" in w and "not in the corpus" in w for w in res.summary["warnings"])
    # and ids that look like chunks of judged documents are suspect even without a corpus
    chunky = [{"query_id": q.query_id, "contexts": [{"text": f"t {q.query_id}", "doc_id": sorted(q.grades)[0]},
                                                    {"text": f"u {q.query_id}", "doc_id": sorted(q.grades)[0] + "#3"}]}
              for q in qs]
    write_lines(f, chunky)
    res = ragexam.grade("it_helpdesk", f, relevance="doc", progress=False, n_resamples=20, n_permutations=20)
    assert any("look like chunks of judged documents" in w and "#3'" in w for w in res.summary["warnings"])


def test_grade_relevance_doc_on_the_command_line(tmp_path, capsys):
    qa = load_qa("it_helpdesk")
    f = write_lines(tmp_path / "r.jsonl", [{"query_id": q.query_id, "contexts": [{"text": "t", "doc_id": "x/1"}]}
                                           for q in qa if q.answerable])
    code, out, err = cli(["grade", "--qa", "it_helpdesk", "--retrieved", f, "--relevance", "doc", *QUICK], capsys)
    assert code == 2 and "every doc-relevance metric would be 0" in " ".join(err.split())


# -- secrets never echoed -----------------------------------------------------------------------------------------
KEY = "sk-proj-CONFIGURED-0123456789abcdef"


@pytest.mark.parametrize("where", ["environment", "dotenv"])
def test_a_spec_holding_the_configured_key_is_refused_without_echoing_it(tmp_path, monkeypatch, capsys, where):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    if where == "environment":
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
    else:
        monkeypatch.chdir(tmp_path)
        (tmp_path / ".env").write_text(f"OPENAI_API_KEY={KEY}\n")
    for spec in (f"dense:openai:{KEY}?bogus=1", f"dense:openai:{KEY}", f"bm25>rerank:llm:{KEY}"):
        code, out, err = cli(["run", "--corpus", "it_helpdesk", "--qa", "it_helpdesk", "-r", spec, *QUICK], capsys)
        assert code == 2 and KEY not in err + out and "[redacted]" in err
    code, out, err = cli(["run", "--corpus", "it_helpdesk", "--qa", "it_helpdesk", "-r", "bm25?k1=" + KEY, *QUICK],
                         capsys)
    assert code == 2 and KEY not in err


def test_header_values_and_key_shaped_values_are_never_echoed(capsys):
    from ragexam.retrieval.spec import parse_retriever

    value = "tenant-SECRET-header-value"
    with pytest.raises(InputError) as ei:
        parse_retriever(f"http:http://localhost:1/s?query_field={value}", headers={"X-Tenant": value})
    assert value not in str(ei.value) and "holds an API key or a header value" in str(ei.value)
    unconfigured = "sk-ant-api03-" + "A" * 30  # a key nobody configured, by its shape
    with pytest.raises(InputError) as ei:
        parse_retriever(f"dense:openai:{unconfigured}")
    assert unconfigured not in str(ei.value)
    for secretish in ("api_key", "token", "password"):
        with pytest.raises(InputError) as ei:
            parse_retriever(f"http:http://localhost:1/s?{secretish}=hunter2hunter2")
        assert "hunter2" not in str(ei.value)


def test_a_header_with_a_line_break_stops_the_cli_before_any_request(tmp_path, capsys):
    from json_stub import json_server

    seen = []
    url, shutdown = json_server(lambda path, body, headers: (seen.append(body), (200, {"results": []}))[1])
    try:
        code, out, err = cli(["run", "--qa", "it_helpdesk", "-r", f"http:{url}/s", "--header",
                              "X-A: b\r\nX-Injected: 1", *QUICK], capsys)
    finally:
        shutdown()
    assert code == 2 and "line break" in err and "X-Injected" not in err and seen == []


def test_an_answers_file_line_nested_deep_or_holding_a_lone_surrogate(tmp_path):
    from ragexam.analysis.answers.files import load_answers

    f = write_lines(tmp_path / "a.jsonl", [{"query_id": "q1", "answer": "fine"},
                                           '{"query_id": "q2", "answer": %s}' % ("[" * 50_000 + "]" * 50_000)])
    with pytest.raises(InputError) as ei:
        load_answers(f)
    assert ei.value.line == 2 and "nested deeper than 100 levels" in ei.value.message
    write_lines(f, ['{"query_id": "q1", "answer": "broken %s"}' % LONE])
    with pytest.raises(InputError) as ei:
        load_answers(f)
    assert (ei.value.line, ei.value.field) == (1, "answer") and "lone surrogate" in ei.value.message


RUN = ["run", "--corpus", "it_helpdesk", "--qa", "it_helpdesk", "--no-history"]


@pytest.mark.parametrize("args, option", [([*RUN, "-r", ","], "--retriever"), ([*RUN, "-r", " "], "--retriever"),
                                          ([*RUN, "-c", ""], "--chunker"), ([*RUN, "-c", ","], "--chunker"),
                                          (["compare", "a", "b", "-m", ","], "--metric")])
def test_an_option_value_that_names_nothing_is_refused_not_read_as_the_default(args, option, capsys):
    """``-r ,`` ran the default pipelines (bm25 and dense) as if -r had not been given."""
    code, out, err = cli(args, capsys)
    assert code == 2 and "Traceback" not in err
    assert f"error: {option}: " in err and "expected one or more" in err and f"leave {option} out" in err
    assert "Pipelines" not in out


def test_an_answers_file_with_a_byte_order_mark_says_so_as_every_reader_does(tmp_path):
    from ragexam.analysis.answers.files import load_answers
    from ragexam.data.reading import BOM_MESSAGE

    path = tmp_path / "a.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps({"query_id": "hq_001", "answer": "x"}).encode() + b"\n")
    with pytest.raises(InputError) as e:
        load_answers(path)
    assert str(e.value) == f"{path}:1: {BOM_MESSAGE}" and "UTF-8 with BOM" in BOM_MESSAGE


def test_a_negative_list_length_is_refused(capsys):
    """score --list -1 listed every question (a slice from the end)."""
    code, out, err = cli(["score", "--qa", "it_helpdesk", "--answers", "it_helpdesk", "--no-history", "--list", "-1"],
                         capsys)
    assert code == 2 and "--list" in err and "questions to read" not in out
