"""``ragexam.run`` on a tiny handcrafted set with a deterministic fake retriever: hand-computed metrics."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

import ragexam
from ragexam.analysis.exam.run import slugify
from ragexam.errors import InputError

CORPUS = [
    {"doc_id": "d1", "title": "one", "content": "alpha apple.\n\nbeta banana."},
    {"doc_id": "d2", "title": "two", "content": "gamma grape.\n\ndelta date."},
    {"doc_id": "d3", "title": "three", "content": "epsilon egg."},
]
QA = [
    {"query_id": "q1", "question": "Q1 what is yellow", "evidence": "beta banana", "relevant_doc_ids": ["d1"],
     "type": "lexical"},
    {"query_id": "q2", "question": "Q2 what is purple", "evidence": "gamma grape", "relevant_doc_ids": ["d2"],
     "type": "meaning"},
    {"query_id": "q3", "question": "Q3 red and white", "evidence": ["alpha apple", "epsilon egg"],
     "relevant_doc_ids": ["d1", "d3"], "type": "meaning"},
    {"query_id": "q4", "question": "Q4 holidays", "answerable": False, "type": "out_of_corpus"},
]
#: the fake retriever's ranked chunk ids per question text
RANKED = {
    "Q1 what is yellow": ["d2#0", "d1#1", "d1#0"],
    "Q2 what is purple": ["d2#0", "d1#0"],
    "Q3 red and white": ["d1#0", "d2#1", "d2#0", "d3#0"],
    "Q4 holidays": ["d3#0"],
}


class FixedRetriever:
    """Returns RANKED[question], scores n, n-1, ...; counts index/search calls."""

    def __init__(self, ranked=RANKED, spec="fixed"):
        self.ranked = ranked
        self.spec = spec
        self.signature = f"fixed:{spec}"
        self.indexed = None
        self.calls = 0

    def index(self, ids, texts):
        self.indexed = list(ids)
        return self

    def search(self, queries, top_n):
        self.calls += 1
        out = []
        for q in queries:
            ids = [c for c in self.ranked[q] if c in self.indexed][:top_n]
            out.append([(c, float(len(ids) - i)) for i, c in enumerate(ids)])
        return out


def write_set(tmp_path):
    corpus = tmp_path / "corpus.jsonl"
    qa = tmp_path / "qa.jsonl"
    corpus.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in CORPUS), encoding="utf-8")
    qa.write_text("".join(json.dumps(q, ensure_ascii=False) + "\n" for q in QA), encoding="utf-8")
    return corpus, qa


@pytest.fixture()
def files(tmp_path):
    return write_set(tmp_path)


def _run(files, **kw):
    corpus, qa = files
    kw.setdefault("retrievers", [FixedRetriever()])
    kw.setdefault("chunkers", ["paragraphs"])
    kw.setdefault("k", (1, 3, 5))
    kw.setdefault("n_resamples", 200)
    kw.setdefault("n_permutations", 200)
    return ragexam.run(corpus, qa, **kw)


def test_evidence_metrics_equal_hand_computed(files):
    res = _run(files)
    name = "fixed | paragraphs"
    assert [p.name for p in res.pipelines] == [name]
    m = res.summary["results"][name]["metrics"]
    # q1: ev1 at rank 2; q2: rank 1; q3: ev1 at rank 1, ev2 at rank 4
    expected = {
        "hit@1": 2 / 3, "hit@3": 1.0, "hit@5": 1.0, "mrr": (0.5 + 1 + 1) / 3,
        "p@1": 2 / 3, "r@1": (0 + 1 + 0.5) / 3, "p@3": 1 / 3, "r@3": (1 + 1 + 0.5) / 3,
        "p@5": (0.2 + 0.2 + 0.4) / 3, "r@5": 1.0,
        "f1@5": (1 / 3 + 1 / 3 + 0.8 / 1.4) / 3,
        "rprec": (0 + 1 + 0.5) / 3,
        "map": (0.5 + 1 + (1 + 2 / 4) / 2) / 3,
    }
    for k, v in expected.items():
        assert m[k] == pytest.approx(v, abs=1e-12), k
    ndcg5_q3 = (1 + 1 / np.log2(5)) / (1 + 1 / np.log2(3))
    assert m["ndcg@5"] == pytest.approx((1 / np.log2(3) + 1 + ndcg5_q3) / 3, abs=1e-12)
    # F-beta@3 from the lecture's formula, per question then averaged
    def fb(p, r, b):
        return 0.0 if b * b * p + r == 0 else (1 + b * b) * p * r / (b * b * p + r)
    for beta, key in ((0.5, "0.5"), (1.0, "1"), (2.0, "2")):
        want = np.mean([fb(1 / 3, 1, beta), fb(1 / 3, 1, beta), fb(1 / 3, 0.5, beta)])
        assert res.summary["results"][name]["fbeta"][key]["3"] == pytest.approx(want, abs=1e-12)
    sw = res.summary["results"][name]["sweep"]
    assert sw["3"] == pytest.approx({"p": 1 / 3, "r": 2.5 / 3, "f1": m["f1@3"]})
    assert set(sw) == {"1", "3", "5"}


def test_doc_relevance_counts_documents(files):
    res = _run(files, relevance="doc")
    name = "fixed | paragraphs"
    m = res.summary["results"][name]["metrics"]
    # q1 docs [d2, d1] -> d1 at 2; q2 [d2, d1] -> 1; q3 [d1, d2, d3] -> d1 at 1, d3 at 3
    assert m["hit@1"] == pytest.approx(2 / 3)
    assert m["p@3"] == pytest.approx((1 / 3 + 1 / 3 + 2 / 3) / 3)
    assert m["r@3"] == pytest.approx(1.0)
    rows = {r["query_id"]: r for r in res.per_question}
    assert rows["q3"]["unit_ranks"] == {"d1": 1, "d3": 3}
    assert res.summary["config"]["relevance"] == "doc"
    ev = _run(files)
    assert {r["query_id"]: r for r in ev.per_question}["q3"]["unit_ranks"] == {"ev1": 1, "ev2": 4}
    assert ev.summary["config"]["relevance"] == "evidence"  # the default when questions have evidence


def test_out_of_corpus_counted_not_scored(files):
    res = _run(files)
    ds = res.summary["dataset"]
    assert (ds["n_questions"], ds["n_answerable"], ds["n_out_of_corpus"], ds["n_scored"]) == (4, 3, 1, 3)
    assert ds["types"] == {"lexical": 1, "meaning": 2, "out_of_corpus": 1}
    assert ds["n_chunks"] == {"paragraphs": 5}
    assert res.summary["results"]["fixed | paragraphs"]["n"] == 3
    assert res.scored_ids == ["q1", "q2", "q3"]
    q4 = [r for r in res.per_question if r["query_id"] == "q4"][0]
    assert q4["answerable"] is False and q4["first_rank"] is None and q4["hit@1"] is None
    assert q4["top_ids"] == ["d3#0"]  # still retrieved, so answers can be joined on it


def test_per_question_rows_and_missed(files):
    res = _run(files, miss_k=1)
    rows = res.per_question
    assert [r["query_id"] for r in rows] == ["q1", "q2", "q3", "q4"]
    r1 = rows[0]
    assert r1["first_rank"] == 2 and r1["unit_ranks"] == {"ev1": 2} and r1["n_units"] == 1
    assert r1["hit@1"] == 0.0 and r1["mrr"] == 0.5 and r1["top_ids"] == ["d2#0", "d1#1", "d1#0"]
    missed = res.summary["missed"]["fixed | paragraphs"]
    assert [e["query_id"] for e in missed] == ["q1"]
    e = missed[0]
    assert e["first_rank"] == 2 and e["k"] == 1 and e["evidence"] == ["beta banana"]
    assert [t["chunk_id"] for t in e["top"]] == ["d2#0", "d1#1", "d1#0"]
    assert e["top"][0]["text"] == "gamma grape." and e["top"][0]["doc_id"] == "d2"
    df = res.to_dataframe()
    assert len(df) == 4 and list(df.columns[:3]) == ["pipeline", "retriever", "chunker"]
    table = res.metrics_table()
    assert list(table.index) == ["fixed | paragraphs"] and "hit@1" in table.columns
    assert list(res.metrics_table("all").columns) == res.metrics


def test_cis_by_type_and_signature(files):
    res = _run(files)
    r = res.summary["results"]["fixed | paragraphs"]
    # 3 questions: too few for an interval (issue 41.4: no [1.00-1.00] from a bootstrap of 3)
    assert r["n"] == 3 and r["ci95"]["hit@1"] is None and 0 <= r["metrics"]["hit@1"] <= 1
    assert r["by_type_n"] == {"lexical": 1, "meaning": 2}
    assert r["by_type"]["meaning"]["hit@1"] == 1.0 and r["by_type"]["lexical"]["mrr"] == 0.5
    assert r["signature"].startswith("fixed:fixed||chunker:paragraphs|relevance:evidence|")
    assert "|depth:100|" in r["signature"] and "nq:3" in r["signature"]
    assert res.summary["format"] == "ragexam-run/3"
    assert res.summary["main_metrics"] == ["hit@1", "hit@3", "hit@5", "mrr", "ndcg@5", "p@5", "r@5", "f1@5",
                                           "rprec", "map"]


def test_seed_reproduces(files):
    a = _run(files, retrievers=[FixedRetriever(), FixedRetriever({**RANKED, "Q2 what is purple": ["d1#0", "d2#0"]})])
    b = _run(files, retrievers=[FixedRetriever(), FixedRetriever({**RANKED, "Q2 what is purple": ["d1#0", "d2#0"]})])
    assert a.summary["comparisons"] == b.summary["comparisons"]
    assert a.summary["results"] == b.summary["results"]
    # duplicate labels get a suffix so every pipeline has its own name
    assert [p.name for p in a.pipelines] == ["fixed | paragraphs", "fixed #2 | paragraphs"]


def test_several_chunkers_make_pipelines(files):
    res = _run(files, retrievers=["bm25:whitespace"], chunkers=["paragraphs", "whole"])
    assert [p.name for p in res.pipelines] == ["bm25:whitespace | paragraphs", "bm25:whitespace | whole"]
    assert res.summary["dataset"]["n_chunks"] == {"paragraphs": 5, "whole": 3}
    assert res.summary["config"]["chunkers"] == ["paragraphs", "whole"]


def test_boundary_cut_evidence_is_reported(files):
    res = _run(files, retrievers=["bm25:whitespace"], chunkers=["chars:8:0"])
    um = res.summary["unmatched_evidence"]
    assert um and all(u["reason"] == "cut by a chunk boundary" for u in um)
    assert res.summary["dataset"]["n_unmatched_evidence"]["chars:8:0"] == len(um)
    assert um[0]["cuts"][0]["chunks"]


def test_save_files_and_evaluate_reproduces(files, tmp_path, capsys):
    from ragexam.cli import main

    res = _run(files, retrievers=[FixedRetriever(), "bm25:whitespace"])
    out = res.save(tmp_path / "out")
    assert (out / "summary.json").exists() and (out / "per_question.csv").exists()
    assert json.loads((out / "summary.json").read_text(encoding="utf-8")) == res.summary
    with open(out / "per_question.csv", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 8
    assert list(rows[0])[:9] == ["pipeline", "retriever", "chunker", "query_id", "type", "answerable",
                                 "first_rank", "unit_ranks", "n_units"]
    assert list(rows[0])[-1] == "top_ids"
    q4 = [r for r in rows if r["query_id"] == "q4"][0]
    assert q4["answerable"] == "false" and q4["first_rank"] == "" and q4["hit@1"] == ""
    assert json.loads(rows[0]["unit_ranks"]) == {"ev1": 2}
    for p in res.pipelines:
        assert p.slug == slugify(p.name)
        base = out / "runs" / p.slug
        assert (out / "runs" / f"{p.slug}.trec").exists()
        metrics = res.metrics
        argv = ["evaluate", "--qrels", f"{base}.units.qrels", "--run", f"{base}.units.trec", "--json"]
        for m in metrics:
            argv += ["-m", m]
        with pytest.raises(SystemExit) as ex:
            main(argv)
        assert ex.value.code in (0, None)
        data = json.loads(capsys.readouterr().out)
        want = res.summary["results"][p.name]["metrics"]
        assert data["n_queries"] == 3
        for m in metrics:
            assert data["metrics"][m] == pytest.approx(want[m], abs=1e-12), (p.name, m)


def test_langchain_adapter_as_retriever(files):
    from ragexam.retrieval import LangChainRetriever

    class Doc:
        def __init__(self, text, cid):
            self.page_content = text
            self.metadata = {"chunk_id": cid}

    texts = {"d1#0": "alpha apple.", "d1#1": "beta banana.", "d2#0": "gamma grape.", "d2#1": "delta date.",
             "d3#0": "epsilon egg."}

    class Store:
        def invoke(self, query):
            return [Doc(texts[c], c) for c in RANKED[query]]

    # graded on the texts it returns: the same numbers as the fixed chunk-id retriever, no chunker of ragexam's
    res = _run(files, retrievers=[LangChainRetriever(Store(), name="store", id_key="chunk_id")])
    assert res.pipelines[0].name == "langchain:store" and res.pipelines[0].kind == "texts"
    assert res.summary["results"]["langchain:store"]["metrics"]["mrr"] == pytest.approx(2.5 / 3)
    assert res.per_question[0].top_ids == RANKED["Q1 what is yellow"]


def test_bad_inputs(files):
    with pytest.raises(InputError, match="k=200 is larger"):
        _run(files, k=(1, 200))
    with pytest.raises(InputError, match="expected 'doc' or 'evidence'"):
        _run(files, relevance="chunks")
    class Stray(FixedRetriever):
        def search(self, queries, top_n):
            return [[("nope#0", 1.0)] for _ in queries]

    with pytest.raises(InputError, match="not a chunk of this chunking"):
        _run(files, retrievers=[Stray()])
    with pytest.raises(InputError, match="given twice"):
        _run(files, chunkers=["whole", "whole"])


def test_evidence_mode_needs_evidence_everywhere(tmp_path):
    corpus, qa = write_set(tmp_path)
    rows = [dict(q) for q in QA]
    del rows[1]["evidence"]
    qa.write_text("".join(json.dumps(q) + "\n" for q in rows), encoding="utf-8")
    with pytest.raises(InputError, match="q2"):
        ragexam.run(corpus, qa, retrievers=[FixedRetriever()], chunkers=["paragraphs"], relevance="evidence")
    res = ragexam.run(corpus, qa, retrievers=[FixedRetriever()], chunkers=["paragraphs"], relevance="doc",
                      n_resamples=50, n_permutations=50)
    assert res.summary["config"]["relevance"] == "doc"


def test_chunker_objects(files):
    from ragexam.data.chunking import parse_chunker

    class EveryDoc:
        """Duck-typed chunker: one chunk per document, minus a trailing period."""

        spec = "custom:nodot"

        def spans(self, content):
            return [(0, len(content.rstrip(".")))]

    res = _run(files, retrievers=["bm25:whitespace"], chunkers=[parse_chunker("whole"), EveryDoc()])
    assert [p.chunker for p in res.pipelines] == ["whole", "custom:nodot"]
    assert res.chunkings["custom:nodot"]["d1#0"].text == "alpha apple.\n\nbeta banana"
    with pytest.raises(InputError, match="chunker spec string"):
        _run(files, chunkers=[object()])


def test_missed_entries_show_where_the_evidence_was_found():
    """A missed question found below the cutoff carries that chunk, cut around the evidence,
    and the HTML report renders it with the evidence marked."""
    import ragexam
    from ragexam.report.html import render_report

    res = ragexam.run("it_helpdesk", "it_helpdesk", retrievers=["bm25"], progress=False)
    missed = res.summary["missed"]["bm25 | paragraphs:400"]
    found = [e for e in missed if isinstance(e["first_rank"], int)]
    assert found and all("first_correct" in e for e in found)
    for e in found:
        fc = e["first_correct"]
        assert fc["rank"] == e["first_rank"] > e["k"]
        assert res.rankings["bm25 | paragraphs:400"][e["query_id"]][fc["rank"] - 1][0] == fc["chunk_id"]
        assert any(ev[:20] in fc["text"] for ev in e["evidence"])
    html = render_report(res.summary, res.per_question)
    assert html.count("Where the evidence was found") == len(found)
    assert "<mark" in html


# -- what a user's retriever returns, checked --------------------------------------------------------------------


class Greedy(FixedRetriever):
    """Ignores ``top_n``: every chunk, best first."""

    def search(self, queries, top_n):
        return [[(c, float(100 - i)) for i, c in enumerate(self.indexed)] for _ in queries]


def test_a_chunk_retriever_that_ignores_top_n_is_graded_to_the_depth(files):
    res = _run(files, retrievers=[Greedy()], depth=2, k=(1, 2), miss_k=2)
    assert {len(r) for r in res.rankings[res.baseline].values()} == {2}
    first = {r["query_id"]: r["first_rank"] for r in res.per_question}
    # the five chunks come in index order d1#0, d1#1, d2#0, ...: q2's "gamma grape" (d2#0) is third, past the depth
    assert first["q1"] == 2 and first["q3"] == 1 and first["q2"] is None


def test_a_chunk_retriever_is_refused_an_infinite_score_or_a_missing_list_naming_the_question(files):
    class Infinite(FixedRetriever):
        def search(self, queries, top_n):
            return [[("d1#0", float("inf"))] for _ in queries]

    class NoneList(FixedRetriever):
        def search(self, queries, top_n):
            return [None for _ in queries]

    with pytest.raises(InputError, match=r"question 'q1': returned the score inf for chunk 'd1#0'; expected finite"):
        _run(files, retrievers=[Infinite()])
    with pytest.raises(InputError, match=r"question 'q1': received None instead of its result list"):
        _run(files, retrievers=[NoneList()])


def test_a_chunk_retriever_returning_nothing_for_every_question_is_warned_of(files):
    """Every question a miss, with no word but a table of zeros; a results file of empty contexts warned. (Not
    'produced nothing': BM25 rightly returns nothing for a question that shares no word with any chunk.)"""
    class Nothing(FixedRetriever):
        def search(self, queries, top_n):
            return [[] for _ in queries]

    res = _run(files, retrievers=[Nothing()])
    assert res.summary.failed_pipelines == {}
    assert f"pipeline {res.baseline!r} returned an empty list for every question (4 questions): each is graded as " \
           "a miss" in res.summary.warnings
    assert not any("every question" in w for w in _run(files).summary.warnings)


class TwoArguments:
    """A text retriever with the two-argument ``retrieve`` docs/run.md shows."""

    spec = "two-args"

    def retrieve(self, queries, top_n):
        return [["beta banana, and more"] for _ in queries]


def test_a_text_retriever_may_take_only_queries_and_top_n(files):
    res = _run(files, retrievers=[TwoArguments()])
    row = next(r for r in res.per_question if r["query_id"] == "q1")
    assert row["first_rank"] == 1


def test_what_a_text_retriever_returns_is_checked_as_a_results_file_is(files):
    from ragexam.data.retrieved import RetrievedItem
    from ragexam.retrieval.texts import Retrieval

    def pipeline(make):
        class P:
            spec = "p"

            def retrieve(self, queries, top_n, query_ids=None):
                return [make() for _ in queries]

        return P()

    cases = [
        (lambda: Retrieval(("beta banana",), failure="partial: a shard timed out"),
         r"question 'q1': field 'failure': received 1 item and the failure 'partial: a shard timed out'; a failed"),
        (lambda: Retrieval(("beta banana",), latency=float("nan")),
         r"question 'q1': field 'latency': received nan; expected a number of seconds >= 0"),
        (lambda: Retrieval(("beta banana",), latency=-1.0), r"field 'latency': received -1.0"),
        (lambda: [RetrievedItem("beta banana", score=float("nan"))],
         r"question 'q1': field 'item 0.score': score is NaN; expected a finite number"),
        (lambda: [RetrievedItem("beta banana", doc_id=7)], r"field 'item 0.doc_id': doc_id is 7"),
        (lambda: [3], r"question 'q1': field 'item 0': received 3 \(a int\)"),
        (lambda: None, r"question 'q1': received None; expected a Retrieval or a list of items"),
    ]
    for make, message in cases:
        with pytest.raises(InputError, match=message):
            _run(files, retrievers=[pipeline(make)])
    # a failure without items, and a measured latency, are what the interface asks for
    res = _run(files, retrievers=[pipeline(lambda: Retrieval((), failure="timeout: no reply"))])
    assert res.summary.results["p"].unretrieved.n == 4


def _objects():
    from ragexam.data import Corpus, Document, QASet, Question

    corpus = Corpus([Document(d["doc_id"], d["content"], d["title"]) for d in CORPUS])
    good = [Question("q1", "Q1 what is yellow", relevant_doc_ids=("d1",), evidence=("beta banana",)),
            Question("q2", "Q2 what is purple", relevant_doc_ids=("d2",), evidence=("gamma grape",))]
    return corpus, good, QASet


def test_a_question_set_object_is_checked_against_the_corpus_as_a_file_is(files):
    """A QASet made in Python gets the checks a question file gets: evidence in the corpus, known document ids,
    a judgment or answerable=False (it used to be graded without them, its bad question a silent miss)."""
    from ragexam.data import Question

    corpus, good, QASet = _objects()
    bad_evidence = Question("x1", "VPN?", relevant_doc_ids=("d1",), evidence=("this text is not in the corpus",))
    with pytest.raises(InputError, match=r"QASet, query_id 'x1': field 'evidence': .*occurs in no document"):
        _run((corpus, QASet([bad_evidence, *good])))
    unknown_doc = Question("x2", "VPN?", relevant_doc_ids=("d9",))
    with pytest.raises(InputError, match=r"query_id 'x2': field 'relevant_doc_ids': document 'd9' is not in"):
        _run((corpus, QASet([*good, unknown_doc])), relevance="doc")
    with pytest.raises(InputError, match=r"query_id 'x3': field 'answerable': no relevance or evidence"):
        _run((corpus, QASet([*good, Question("x3", "?")])))
    res = _run((corpus, QASet(good)))  # the same questions, all good: graded
    assert res.summary.dataset.n_scored == 2


def test_questions_and_documents_check_their_fields():
    """A field of the wrong type is refused when the record is made, naming it (a string used to be split into
    characters: evidence='VPN' was three units); one evidence string is one unit, as in a file."""
    from ragexam.data import Document, Question

    assert Question("y", "VPN?", evidence="VPN").evidence == ("VPN",)
    assert Question("y", "VPN?", relevant_doc_ids=["hd_01"]).relevant_doc_ids == ("hd_01",)
    cases = [(lambda: Question("y", "?", relevant_doc_ids="hd_01"), r"Question 'y': field 'relevant_doc_ids': "
              r"received str 'hd_01'; expected a tuple of strings; write relevant_doc_ids=\('hd_01',\)"),
             (lambda: Question("y", "?", evidence=("a", 3)), "field 'evidence': received tuple"),
             (lambda: Question("y", "?", answerable="false"), "field 'answerable': received str 'false'; expected "
              "True or False"),
             (lambda: Question("y", "?", relevance={"d": True}), "field 'relevance'"),
             (lambda: Question(7, "?"), "field 'query_id': received int 7"),
             (lambda: Document("d", None), "Document 'd': field 'content': received NoneType None; expected a "
              "string")]
    for make, message in cases:
        with pytest.raises(InputError, match=message):
            make()


def test_lists_and_wrong_types_given_for_inputs(files):
    """A list of questions or records is a question set; a corpus as a list of records too; anything else for
    corpus, qa, retrievers, retrieved or headers is an InputError naming the parameter (these used to be raw
    TypeErrors from deep inside)."""
    corpus, good, _ = _objects()
    records = [dict(q) for q in QA[:3]]
    res = _run((CORPUS, [*good, records[2]]))
    assert res.summary.dataset.n_scored == 3
    with pytest.raises(InputError, match=r"qa\[1\]: field 'question': the required field 'question' is absent"):
        _run((corpus, [good[0], {"query_id": "z"}]))
    with pytest.raises(InputError, match="corpus: field 'corpus': received a dict; expected a corpus file"):
        _run(({"doc_id": "a", "content": "x"}, files[1]))
    with pytest.raises(InputError, match="field 'qa': item 2: received int 3"):
        _run((corpus, [good[0], 3]))
    with pytest.raises(InputError, match=r"received the class FixedRetriever; .*FixedRetriever\(...\)"):
        _run(files, retrievers=[FixedRetriever])
    with pytest.raises(InputError, match="field 'retrieved': received int 3; expected a results file"):
        _run(files, retrieved=(x for x in [3]))
    with pytest.raises(InputError, match="field 'retrieved': received dict {'mine': 'results.jsonl'}; expected"):
        _run(files, retrieved={"mine": "results.jsonl"})
    with pytest.raises(InputError, match="field 'cache_dir': received 3; expected a folder"):
        _run(files, cache_dir=3)
    with pytest.raises(InputError, match=r"field 'headers': received a list; expected a dict"):
        _run(files, headers=["Authorization: x"])
    with pytest.raises(InputError, match=r"field 'llm': received dict .*; expected an LLMSettings object. Fix: pass "
                       r"llm=LLMSettings\('rerank', base_url=...\)"):
        _run(files, llm={"base_url": "http://127.0.0.1:9/v1"})
    with pytest.raises(InputError, match="field 'progress': received 'no'; expected True or False"):
        _run(files, progress="no")


def test_what_validate_warns_of_a_question_set_run_says_too(tmp_path):
    """Evidence found only outside a question's relevant documents: validate warned, run said nothing."""
    corpus, qa = write_set(tmp_path)
    rows = [dict(q) for q in QA]
    rows[0]["relevant_doc_ids"] = ["d2"]  # "beta banana" is in d1
    qa.write_text("".join(json.dumps(q) + "\n" for q in rows), encoding="utf-8")
    res = ragexam.run(corpus, qa, retrievers=[FixedRetriever()], chunkers=["paragraphs"], n_resamples=50,
                      n_permutations=50)
    assert any(w.startswith("1 question of the set: evidence occurs only in documents outside relevant_doc_ids "
                            f"(evidence_not_in_relevant; e.g. {qa}:1); `ragexam validate` lists each") for w in
               res.summary.warnings), res.summary.warnings
    from ragexam.data import QASet, load_corpus, load_qa

    made = QASet(list(load_qa(qa).questions))  # a set made in Python is warned of the same way
    res = ragexam.run(load_corpus(corpus), made, retrievers=[FixedRetriever()], chunkers=["paragraphs"],
                      n_resamples=50, n_permutations=50)
    assert any("evidence_not_in_relevant; e.g. QASet" in w for w in res.summary.warnings), res.summary.warnings


@pytest.mark.parametrize("spans, message", [
    (lambda n: [(0, n + 50)], r"span 0 \(0, \d+\) is not inside the text: expected 0 <= start < end <= \d+"),
    (lambda n: [(-5, 10), (10, n)], r"span 0 \(-5, 10\) is not inside the text"),
    (lambda n: [(10, 0)], r"span 0 \(10, 0\) is not inside the text"),
    (lambda n: [(0, n), (0, n)], r"span 1 \(0, \d+\) is span 0 again: expected each span once"),
    (lambda n: None, r"spans\(\) returned None; expected a list of \(start, end\) character offsets"),
    (lambda n: [(0.0, float(n))], r"span 0 is \(0.0, \d+.0\); expected a pair of integer character offsets"),
    (lambda n: [], r"produced no chunk for any of the 3 documents \(their texts are not empty\): spans\(\) "
                   r"returned \[\] for every one"),
])
def test_a_chunker_of_the_users_is_checked_span_by_span(files, spans, message):
    """Spans past the end, negative, reversed or repeated were taken as they came (a chunk past the end of its
    document; a chunk counted twice); None gave a TypeError; [] said the documents were empty."""
    class Spans:
        spec = "custom:spans"

        def spans(self, content):
            return spans(len(content))

    with pytest.raises(InputError, match=message):
        _run(files, retrievers=["bm25:whitespace"], chunkers=[Spans()])


def test_a_chunker_of_the_users_may_nest_its_spans(files):
    """A parent chunk and its children (the same start, or one inside another) are a chunker's choice."""
    class Nested:
        spec = "custom:nested"

        def spans(self, content):
            return [(0, len(content)), (0, len(content) // 2), (len(content) // 2, len(content))]

    res = _run(files, retrievers=["bm25:whitespace"], chunkers=[Nested()])
    assert len(res.chunkings["custom:nested"].chunks) == 9


def test_a_chunker_of_the_users_may_return_spans_as_any_iterable_of_integer_pairs(files):
    import numpy as np

    class Halves:
        spec = "custom:halves"

        def spans(self, content):
            half = len(content) // 2
            yield from ((np.int64(0), np.int64(half)), [half, len(content)])

    res = _run(files, retrievers=["bm25:whitespace"], chunkers=[Halves()])
    n = len(CORPUS[0]["content"])  # "alpha apple.\n\nbeta banana."
    assert [(c.start, c.end) for c in res.chunkings["custom:halves"].chunks[:2]] == [(0, n // 2), (n // 2, n)]
