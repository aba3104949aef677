"""BEIR folders wherever a corpus or question set is accepted, ``convert`` between BEIR, ragexam JSONL and
TREC qrels, and ids with spaces everywhere (only the TREC writer encodes them)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import ragexam
from ragexam.data.beir import read_qrels
from ragexam.data.convert import convert
from ragexam.data.loaders import load_corpus, load_qa
from ragexam.data.problems import ProblemCollector
from ragexam.data.trec import read_trec_qrels, read_trec_run, vocab_list
from ragexam.data.trec_ids import decode_trec_id, encode_trec_id
from ragexam.data.validation import validate
from ragexam.errors import InputError
from ragexam.metrics.ranking import Qrels, Run, evaluate


def spaced(doc_id: str) -> str:
    """An AutoRAGRetrieval-like id with spaces and Hangul."""
    return f"helpdesk - {doc_id} 안내서.pdf - 1"


def write_beir(root: Path, *, splits=("test",), header=True) -> Path:
    """The bundled helpdesk set as a hand-written BEIR folder: spaced ids, graded qrels (the relevant document
    2, a neighbour document 1 for every third question), the out-of-corpus questions left out."""
    corpus = load_corpus("it_helpdesk")
    qa = load_qa("it_helpdesk")
    root.mkdir(parents=True, exist_ok=True)
    with open(root / "corpus.jsonl", "w", encoding="utf-8") as fh:
        for d in corpus:
            fh.write(json.dumps({"_id": spaced(d.doc_id), "title": d.title or "", "text": d.content},
                                ensure_ascii=False) + "\n")
    with open(root / "queries.jsonl", "w", encoding="utf-8") as fh:
        for q in qa:
            fh.write(json.dumps({"_id": q.query_id, "text": q.question, "metadata": {"src": "bundled"}},
                                ensure_ascii=False) + "\n")
    (root / "qrels").mkdir(exist_ok=True)
    ids = [d.doc_id for d in corpus]
    for split in splits:
        lines = ["query-id\tcorpus-id\tscore"] if header else []
        for i, q in enumerate(q for q in qa if q.answerable):
            for d in q.relevant_docs:
                lines.append(f"{q.query_id}\t{spaced(d)}\t2")
            if i % 3 == 0:
                other = ids[(ids.index(q.relevant_docs[0]) + 1) % len(ids)]
                if other not in q.relevant_docs:
                    lines.append(f"{q.query_id}\t{spaced(other)}\t1")
        (root / "qrels" / f"{split}.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


def test_beir_folder_runs_like_its_converted_jsonl(tmp_path):
    beir = write_beir(tmp_path / "beir")
    assert load_corpus(beir).doc_ids[0] == spaced("hd_01")
    qa = load_qa(beir, corpus=beir)
    assert len(qa) == 65 and qa["hq_001"].relevance[spaced("hd_01")] == 2  # graded qrels kept
    assert validate(beir, beir).ok
    opts = dict(retrievers=["bm25"], progress=False, n_resamples=200, n_permutations=200)
    a = ragexam.run(beir, beir, **opts)
    out = convert("ragexam", tmp_path / "jsonl", corpus=beir, qa=beir)
    n_lines = len((beir / "qrels" / "test.tsv").read_text(encoding="utf-8").splitlines()) - 1
    assert [Path(f).name for f in out.files] == ["corpus.jsonl", "qa.jsonl"] and out.n_judgments == n_lines
    b = ragexam.run(tmp_path / "jsonl" / "corpus.jsonl", tmp_path / "jsonl" / "qa.jsonl", **opts)
    assert a.summary["config"]["relevance"] == "doc"
    assert a.summary["results"]["bm25 | paragraphs:400"]["metrics"] == \
        b.summary["results"]["bm25 | paragraphs:400"]["metrics"]
    # graded: ndcg counts grade 2 above grade 1
    assert a.summary["results"]["bm25 | paragraphs:400"]["metrics"]["ndcg@10"] > 0
    # the run folder's TREC files encode the spaces and reproduce the metrics
    folder = a.save(tmp_path / "run")
    run = read_trec_run(folder / "runs" / "bm25___paragraphs_400.trec")
    docs = vocab_list(run.doc_vocab)
    assert all(" " not in d for d in docs) and any(d.startswith("helpdesk%20-%20") for d in docs)
    assert {decode_trec_id(d).rsplit("#", 1)[0] for d in docs} <= set(load_corpus(beir).doc_ids)
    units = folder / "runs" / "bm25___paragraphs_400.units"
    res = evaluate(Qrels.from_file(str(units) + ".qrels"), Run.from_file(str(units) + ".trec"), ["ndcg@10", "mrr"])
    assert res.mean["ndcg@10"] == pytest.approx(a.summary["results"]["bm25 | paragraphs:400"]["metrics"]["ndcg@10"])


def test_ragexam_to_beir_and_back_is_lossless(tmp_path):
    done = convert("beir", tmp_path / "b", corpus="it_helpdesk", qa="it_helpdesk")
    assert any("metadata" in n for n in done.notes)
    head = (tmp_path / "b" / "qrels" / "test.tsv").read_text(encoding="utf-8").splitlines()[0]
    assert head == "query-id\tcorpus-id\tscore"
    convert("ragexam", tmp_path / "r", corpus=tmp_path / "b", qa=tmp_path / "b")
    q0, q1 = load_qa("it_helpdesk"), load_qa(tmp_path / "r" / "qa.jsonl")
    assert [q.query_id for q in q0] == [q.query_id for q in q1]
    for x, y in zip(q0, q1):
        assert (x.question, x.grades, x.evidence, x.ground_truth, x.type, x.answerable) == \
            (y.question, y.grades, y.evidence, y.ground_truth, y.type, y.answerable)
    assert list(load_corpus("it_helpdesk")) == list(load_corpus(tmp_path / "r" / "corpus.jsonl"))
    # the BEIR folder itself grades like the bundled set, evidence mode included
    opts = dict(retrievers=["bm25"], progress=False, n_resamples=100, n_permutations=100)
    a = ragexam.run("it_helpdesk", "it_helpdesk", **opts)
    b = ragexam.run(tmp_path / "b", tmp_path / "b", **opts)
    assert a.summary["config"]["relevance"] == b.summary["config"]["relevance"] == "evidence"
    assert a.summary["results"] == {k: dict(v, signature=a.summary["results"][k]["signature"])
                                    for k, v in b.summary["results"].items()}


def test_trec_qrels_with_spaces_round_trip(tmp_path):
    beir = write_beir(tmp_path / "beir")
    done = convert("trec", tmp_path / "q.trec", qa=beir)
    assert any("%20" in n for n in done.notes)
    cols = read_trec_qrels(tmp_path / "q.trec")
    assert all(" " not in d for d in vocab_list(cols.doc_vocab))
    back = read_qrels(tmp_path / "q.trec", ProblemCollector(strict=True))
    assert back["hq_001"][spaced("hd_01")][0] == 2
    # TREC qrels + a queries TSV make a question set again
    (tmp_path / "queries.tsv").write_text("".join(f"{q.query_id}\t{q.question}\n" for q in load_qa(beir)),
                                          encoding="utf-8")
    convert("ragexam", tmp_path / "again", qa=tmp_path / "q.trec", queries=tmp_path / "queries.tsv")
    again = load_qa(tmp_path / "again" / "qa.jsonl", corpus=beir)
    assert {q.query_id: q.grades for q in again} == {q.query_id: q.grades for q in load_qa(beir)}


def test_splits_headers_and_layout_errors(tmp_path):
    beir = write_beir(tmp_path / "beir", splits=("dev", "train"), header=False)
    with pytest.raises(InputError, match="splits dev, train and none is 'test'"):
        load_qa(beir)
    assert len(load_qa(beir, split="dev")) == 65  # no header line: read as data
    res = ragexam.run(beir, beir, ["bm25:whitespace"], split="dev", progress=False, n_resamples=20,
                      n_permutations=20)
    assert res.summary["config"]["split"] == "dev" and res.summary["dataset"]["n_scored"] == 65
    with pytest.raises(InputError, match="has no split 'test'"):
        load_qa(beir, split="test")
    with pytest.raises(InputError, match="BEIR queries.jsonl record") as err:
        load_qa(beir / "queries.jsonl")
    assert err.value.line == 1
    (beir / "qrels" / "dev.tsv").write_text("query-id\tcorpus-id\tscore\nhq_001\tx\n", encoding="utf-8")
    with pytest.raises(InputError, match="2 tab-separated fields") as err:
        load_qa(beir, split="dev")
    assert err.value.line == 2
    (beir / "qrels" / "dev.tsv").write_text("hq_001\tx\t1\nzz_9\tx\t1\n", encoding="utf-8")
    with pytest.raises(InputError, match="does not have.*'zz_9'"):
        load_qa(beir, split="dev")
    (beir / "qrels" / "dev.tsv").write_text("hq_001\tx\t1\nhq_001\ty\thigh\n", encoding="utf-8")
    with pytest.raises(InputError, match="not an integer grade"):
        load_qa(beir, split="dev")
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="directory without corpus.jsonl"):
        load_corpus(tmp_path / "empty")


def test_convert_refuses_what_a_format_cannot_hold(tmp_path):
    qa = tmp_path / "qa.jsonl"
    qa.write_text(json.dumps({"query_id": "q1", "question": "?", "evidence": "VPN"}, ensure_ascii=False) + "\n",
                  encoding="utf-8")
    with pytest.raises(InputError, match="evidence but no judged document"):
        convert("beir", tmp_path / "b", qa=qa)
    with pytest.raises(InputError, match="is a file"):
        convert("beir", qa, qa=qa)
    with pytest.raises(InputError, match="expected one of ragexam, beir, trec"):
        convert("csv", tmp_path / "x", qa=qa)


def test_qrels_jsonl_layout(tmp_path):
    p = tmp_path / "test.jsonl"
    p.write_text('{"query-id": "q 1", "corpus-id": "d 1", "score": 1}\n{"query-id": "q 1", "corpus-id": "d 2", '
                 '"score": 0.0}\n', encoding="utf-8")
    assert read_qrels(p, ProblemCollector(strict=True)) == {"q 1": {"d 1": (1, 1), "d 2": (0, 2)}}


@given(st.text(min_size=1))
def test_trec_id_encoding_is_reversible_and_has_no_whitespace(s):
    e = encode_trec_id(s)
    assert decode_trec_id(e) == s
    assert not any(c.isspace() for c in e)
    if "%" not in s and not any(c.isspace() for c in s):
        assert e == s
