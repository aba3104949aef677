"""Every signature is a :class:`ragexam.signature.Signature` that parses back to itself: the ones recorded in the
golden run summaries (tests/data/golden/), the ones every producer in the code returns, and those of older folders
(``version:X`` without the ``ragexam-`` prefix)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragexam import __version__
from ragexam.signature import Signature

GOLDEN = Path(__file__).parent / "data" / "golden"
VERSION = f"version:ragexam-{__version__}"


def _signatures(obj, path=""):
    """``(path, text)`` of every signature in a summary: keys ``signature``/``*_signature``, ``signatures`` maps
    and the intervals' ``interval``."""
    if isinstance(obj, dict):
        for key, value in obj.items():
            where = f"{path}.{key}"
            if isinstance(value, str) and (key == "signature" or key.endswith("_signature") or key == "interval"):
                yield where, value
            elif key == "signatures" and isinstance(value, dict):
                yield from ((f"{where}.{k}", v) for k, v in value.items())
            else:
                yield from _signatures(value, where)
    elif isinstance(obj, list):
        for i, value in enumerate(obj):
            yield from _signatures(value, f"{path}[{i}]")


def _check(sig, what: str) -> Signature:
    assert isinstance(sig, Signature), f"{what}: a {type(sig).__name__}, not a Signature"
    back = Signature.parse(str(sig))
    assert back == sig and back.items() == sig.items() and back.joins == sig.joins, what
    assert "version:" not in str(sig) or VERSION in str(sig), f"{what}: one version format ({sig})"
    return back


def test_every_golden_signature_parses_back_to_itself():
    found = 0
    for summary in sorted(GOLDEN.glob("*/summary.json")):
        for where, text in _signatures(json.loads(summary.read_text(encoding="utf-8"))):
            sig = Signature.parse(text)
            assert sig == text and str(sig) == text, (summary, where)
            found += 1
            if where.endswith(".signature") and where.startswith((".results", ".pipelines")):
                # a pipeline's signature: its retriever's, then how its lists were graded (ending in the version)
                assert sig.joins[-1] == "||" and sig.sections[-1]["version"].startswith("ragexam-"), where
                assert sig.sections[-1]["relevance"] in ("evidence", "doc"), where
    assert found > 100


def test_compound_golden_signatures_name_their_parts():
    data = json.loads((GOLDEN / "helpdesk" / "summary.json").read_text(encoding="utf-8"))
    sigs = {p["name"]: Signature.parse(p["signature"]) for p in data["pipelines"]}
    hybrid = sigs["hybrid:bm25+bm25:whitespace | paragraphs:400"]
    assert [m["bm25"] for m in hybrid.members] == ["kiwi", "whitespace"]
    assert hybrid.sections[0]["hybrid"] == "rrf" and hybrid.sections[1]["chunker"] == "paragraphs:400"
    reranked = next(s for name, s in sigs.items() if name.startswith("bm25>rerank"))
    assert reranked.joins == (">>", "||") and reranked.sections[1]["shape"] == "cohere"
    assert reranked.sections[1]["top"] == "20" and reranked.sections[0]["bm25"] == "kiwi"


def test_signatures_of_older_folders_still_read():
    """Before every producer used the one builder, two statistics wrote ``version:X`` (no ``ragexam-``)."""
    old = "stat:ppi_mean|ci:normal|conf:0.95|n_all:65|n_labelled:28|version:0.1.0"
    assert Signature.parse(old) == old and Signature.parse(old)["version"] == "0.1.0"
    custom = Signature.of("my retriever v2")  # a user's component that signs itself in words
    assert custom == "my retriever v2" and custom.items() == []
    assert custom.then("rerank:x|top:3", join=">>") == "my retriever v2>>rerank:x|top:3"


def test_retrieval_signatures(monkeypatch):
    from ragexam.retrieval.spec import parse_retriever

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    specs = ["bm25", "bm25:whitespace", "bm25?variant=bm25+&delta=0.5", "hybrid:bm25+bm25:whitespace",
             "bm25>rerank:http:http://127.0.0.1:9/cohere", "dense:openai:text-embedding-3-small",
             "bm25>rerank:dense:openai:text-embedding-3-small", "hybrid:bm25+dense:openai:text-embedding-3-small",
             "http:http://127.0.0.1:9/search"]
    for spec in specs:
        sig = _check(parse_retriever(spec).signature, spec)
        assert sig.get("version") is None  # a retriever's signature: the run's grading adds the version
    hybrid = Signature.parse(parse_retriever("hybrid:bm25+dense:openai:text-embedding-3-small").signature)
    assert hybrid.members[1]["dense"] == "openai:text-embedding-3-small" and hybrid.members[1]["sim"] == "cosine"
    reranked = Signature.parse(parse_retriever("bm25>rerank:dense:openai:text-embedding-3-small").signature)
    assert reranked.joins == (">>",) and reranked.sections[1]["rerank"] == "dense"


def test_adapter_signatures():
    from ragexam.retrieval.langchain_adapter import LangChainRetriever
    from ragexam.retrieval.llamaindex_adapter import LlamaIndexRetriever

    class Nodes:
        def retrieve(self, query):
            return []

    class Docs:
        def invoke(self, query):
            return []

    sig = _check(LlamaIndexRetriever(Nodes(), name="my index").signature, "llamaindex")
    assert sig["doc_id"] == "metadata.doc_id,ref_doc_id" and sig["llamaindex"] == "my index"
    _check(LangChainRetriever(Docs(), name="lc").signature, "langchain")


def test_statistics_and_text_metric_signatures():
    from ragexam import stats
    from ragexam.metrics.text import corpus_bleu, corpus_chrf, corpus_rouge_l
    from ragexam.stats.discrimination import auc_ci
    from ragexam.stats.ppi import ppi_mean

    a, b = [0.1, 0.5, 0.9, 0.4, 0.7, 0.3], [0.2, 0.6, 0.8, 0.9, 0.7, 0.5]
    _check(stats.bootstrap_ci(a, n_resamples=50, seed=1).signature, "bootstrap")
    _check(stats.compare(a, b, n_resamples=50, n_permutations=64, seed=1).signature, "comparison")
    _check(stats.paired_randomization_test(a, b, n_permutations=64, seed=1).signature, "randomization")
    _check(auc_ci([0.9, 0.8, 0.7], [0.1, 0.5, 0.2], ["q1", "q2", "q3"], ["q1", "q2", "q3"], n_resamples=50).signature,
           "auc")
    _check(ppi_mean([4, 5, 3, 4, 2, 5], [4, 5, 3], [5, 5, 2]).signature, "ppi")
    hyps, refs = ["the cat sat on the mat"], [["the cat is on the mat"]]
    for fn in (corpus_bleu, corpus_chrf, corpus_rouge_l):
        _check(fn(hyps, refs).signature, fn.__name__)


def test_ranking_relevance_and_compare_signatures(tmp_path):
    import ragexam

    res = ragexam.run("it_helpdesk", "it_helpdesk", ["bm25:whitespace"], ["paragraphs:400"], progress=False,
                      n_resamples=20, n_permutations=20, cache_dir=tmp_path)
    (pipe,) = res.summary.pipelines
    sig = Signature.parse(pipe.signature)
    assert sig.joins == ("||",) and sig.sections[0]["bm25"] == "whitespace"
    assert sig.sections[1]["relevance"] == "evidence" and sig.sections[1]["norm"] == "nfkc+ws"
    from ragexam.metrics.ranking import evaluate

    _check(evaluate({"q": {"d": 1}}, {"q": {"d": 1.0}}, ["hit@1"]).signature, "ranking")


def test_judge_pairwise_and_score_signatures(tmp_path):
    from test_judge_stub import API_KEY, start_stub
    from test_score_fixtures import write_case

    from ragexam.analysis.answers.files import load_answers
    from ragexam.analysis.answers.scoring import score_answers
    from ragexam.data.loaders import load_qa
    from ragexam.metrics.judge import Judge, PairItem, judge_pairs
    from ragexam.storage.runfolder import read_folder

    stub, shutdown = start_stub()
    try:
        judge = Judge("stub-judge", base_url=stub.base_url, api_key=API_KEY, cache_dir=str(tmp_path / "cache"),
                      backoff=0.0, max_retries=0, max_attempts=1)
        sig = _check(judge.signature("answer_correctness", "ko"), "judge")
        assert sig["judge"] == "stub-judge"
        run = judge_pairs(judge, [PairItem("q1", "물음?", "가", "나", "가")])
        pair = _check(run.signature, "pairwise")
        assert pair["orders"] == "both" and str(pair).endswith("|orders:both|" + VERSION)
        qa, _, answers, folder = write_case(tmp_path)
        report = score_answers(load_qa(qa), load_answers(answers), run=read_folder(folder), judge=judge,
                               judge_metrics=["answer_correctness"])
    finally:
        shutdown()
    _check(report.attribution.signature, "attribution")
    for name, text in report.text["P1"].signatures.items():
        _check(Signature.parse(text), name)
    for m, text in report.to_dict()["judge"]["signatures"].items():
        _check(Signature.parse(text), m)
