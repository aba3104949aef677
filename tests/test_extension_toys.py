"""Extension points, tried as a plugin author would (issue 35): a toy judge metric and a toy retriever, declared in
a temporary module the way ragexam's own are (a ``JudgeMetric`` with keywords and ``register``; a builder with one
``@retriever_family`` decorator), appear in the ``--metric`` / ``-r`` help, in the errors that list the valid
names and forms, and in results -- with no other edit.  And what a newcomer tried with ``-r`` (issue 39)."""

from __future__ import annotations

import importlib
import json
import re
import sys

import pytest

from test_cli_pipelines import cli

from ragexam.errors import InputError
from ragexam.retrieval import registry as retrieval_registry
from ragexam.retrieval.spec import parse_retriever, split_specs
from ragexam.testing.stub import StubEndpoint

QUICK = ["--n-resamples", "20", "--n-permutations", "20", "--no-history"]

TOY_MODULE = '''
"""A toy judge metric and a toy retriever, declared as ragexam declares its own."""

from ragexam.metrics.judge import stubs
from ragexam.metrics.judge.contract import Contract, Field, Levels
from ragexam.metrics.judge.metric import Allowance, JudgeMetric
from ragexam.metrics.judge.prompts import REASONING, Prompts
from ragexam.metrics.judge.registry import register
from ragexam.metrics.judge.replies import Verdict
from ragexam.retrieval.base import Retriever, check_corpus, check_queries, check_top_n
from ragexam.retrieval.registry import Build, Form, integer, retriever_family

PROMPT = """Judge whether the answer is short.

## Question
{question}

## Answer
{answer}

## Response format (JSON)
{"score": 1-3, "reasoning": "why"}"""

METRIC = register(JudgeMetric(
    name="toy_brevity", question="is the answer short (1-3)", needs=("answer",), applies_to="all",
    labels=("1", "2", "3"), score_range=(1.0, 3.0), unit_scale=(1, 2, 3), ordinal=True,
    prompts=Prompts({"en": PROMPT, "ko": PROMPT}), contract=Contract((Field("score", Levels((1, 2, 3))), REASONING),
                                                                    score="score"),
    reader=lambda r, units: Verdict(float(r["score"]), str(r["score"]), {"reasoning": r["reasoning"]}),
    stub=lambda x: {"score": 3 if len(x.answer) < 40 else 1, "reasoning": stubs.WHY},
    pass_rule=lambda s, label, d: s >= 3, pass_text="score 3", allowance=Allowance(base=40)))


class ToyRetriever(Retriever):
    """Chunks ranked by how many distinct characters they share with the query (at least ``min_chars``)."""

    def __init__(self, *, min_chars=1, cache=True, cache_dir=None, progress=True):
        self.min_chars = min_chars

    @property
    def spec(self):
        return "toy" if self.min_chars == 1 else f"toy?min_chars={self.min_chars}"

    @property
    def signature(self):
        return f"toy:shared-characters|min_chars:{self.min_chars}"

    def index(self, ids, texts):
        ids, texts = check_corpus(ids, texts, "toy")
        self._chunks = [(i, set(t)) for i, t in zip(ids, texts)]
        self._indexed = True
        return self

    def search(self, queries, top_n):
        self._require_index()
        top_n = check_top_n(top_n, "toy")
        out = []
        for q in check_queries(queries, "toy"):
            scored = [(len(set(q) & chars), i) for i, chars in self._chunks]
            hits = sorted((s, i) for s, i in scored if s >= self.min_chars)
            hits.sort(key=lambda h: (-h[0], h[1]))
            out.append([(i, float(s)) for s, i in hits[:top_n]])
        return out


@retriever_family("toy", forms=(Form("toy", "a toy: chunks ranked by the characters they share with the question"),),
                  options={"min_chars": integer("1")}, order=90)
def _toy(b: Build) -> ToyRetriever:
    return ToyRetriever(**b.options)
'''


@pytest.fixture
def toys(tmp_path, monkeypatch):
    """The toy module, imported (its metric and family forgotten afterwards)."""
    (tmp_path / "ragexam_toys.py").write_text(TOY_MODULE, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("ragexam_toys")
    yield module
    from ragexam.metrics.judge.registry import unregister

    unregister("toy_brevity")
    retrieval_registry.unregister("retriever", "toy")
    sys.modules.pop("ragexam_toys", None)


def _help(capsys, monkeypatch, *command):
    monkeypatch.setenv("COLUMNS", "250")
    code, out, _ = cli([*command, "--help"], capsys)
    assert code == 0
    return " ".join(out.replace("│", " ").split())


def test_the_toys_are_in_the_help(toys, capsys, monkeypatch):
    # the registered metrics in order, the toy last (another test's own plugin metric may stand before it)
    assert re.search(r"abstention, (\w+, )*toy_brevity, or a --rubric file's name", _help(capsys, monkeypatch, "score"))
    assert "toy_brevity" in _help(capsys, monkeypatch, "judge-agreement")
    for command in ("run", "grade"):
        assert "http:URL, toy, and any of them followed by a rerank stage" in _help(capsys, monkeypatch, command)


def test_the_toys_are_in_the_errors_that_list_valid_names(toys, capsys):
    code, _, err = cli(["score", "--qa", "it_helpdesk", "--answers", "it_helpdesk", "--judge-model", "stub",
                        "--base-url", "http://127.0.0.1:9/v1", "--metric", "toy_brevty", "--no-history"], capsys)
    assert code == 2 and "unknown judge metric 'toy_brevty'" in err and "toy_brevity" in err
    with pytest.raises(InputError) as ei:
        parse_retriever("toys")
    assert "unknown retriever 'toys'" in str(ei.value)
    assert "toy                     a toy: chunks ranked by the characters they share" in str(ei.value)
    with pytest.raises(InputError, match=r"toy has no option 'k1'; its options are cache \(true\), cache_dir, "
                                         r"min_chars \(1\), progress \(true\)"):
        parse_retriever("toy?k1=1.2")
    with pytest.raises(InputError, match="toy takes nothing after ':'"):
        parse_retriever("toy:big")


def test_the_toy_retriever_runs_alone_beside_bm25_and_in_a_hybrid(toys, capsys):
    code, out, err = cli(["run", "--corpus", "it_helpdesk", "--qa", "it_helpdesk", "-r", "bm25,toy?min_chars=2",
                          "-c", "paragraphs:400", "--json", *QUICK], capsys)
    assert code == 0, err
    results = json.loads(out)["results"]
    assert [name.split(" | ")[0] for name in results] == ["bm25", "toy?min_chars=2"]
    toy = next(v for k, v in results.items() if k.startswith("toy"))
    assert 0 < toy["metrics"]["hit@10"] <= 1
    hybrid = parse_retriever("hybrid:toy+bm25:whitespace", min_chars=3)
    assert hybrid.spec == "hybrid:(toy?min_chars=3)+bm25:whitespace" and hybrid.retrievers[0].min_chars == 3


def test_the_toy_metric_is_judged_and_reported(toys, capsys, tmp_path):
    with StubEndpoint() as ep:
        code, out, err = cli(["score", "--qa", "it_helpdesk", "--answers", "it_helpdesk", "--judge-model", "stub",
                              "--base-url", ep.base_url, "--cache-dir", str(tmp_path / "cache"), "--metric",
                              "toy_brevity", "--json", "--no-history"], capsys)
    assert code == 0, err
    summary = json.loads(out)["judge"]["summary"]
    toy = next(iter(summary.values()))["toy_brevity"]
    assert toy["n_judged"] == toy["n"] > 0 and 1.0 <= toy["mean"] <= 3.0
    assert "rubric:toy_brevity/" in json.dumps(json.loads(out)["judge"])


# -- issue 39: -r as a newcomer tries it --------------------------------------------------------------------------
@pytest.mark.parametrize("spec, message", [
    ("hybrid", "hybrid needs two or more members joined by '+', e.g. hybrid:bm25+dense."),
    ("hybrid:", "hybrid needs two or more members joined by '+', e.g. hybrid:bm25+dense."),
    ("hybrid?k=30", "hybrid needs two or more members joined by '+'"),
    ("http", "http needs the URL of your service: http:http://localhost:8000/search."),
    ("hybrid:bm25+hybrid:bm25+dense", "a hybrid spec cannot be a member of another hybrid spec."),
    ("bm25,dnse", "unknown retriever 'bm25,dnse'. A comma separates two specs only before a retriever's name"),
])
def test_a_bare_family_says_what_its_spec_needs(spec, message):
    with pytest.raises(InputError) as ei:
        parse_retriever(spec)
    assert message in str(ei.value)


def test_a_bare_hybrid_on_the_command_line(capsys):
    code, _, err = cli(["run", "--corpus", "it_helpdesk", "--qa", "it_helpdesk", "-r", "hybrid", *QUICK], capsys)
    assert code == 2 and "hybrid needs two or more members joined by '+'" in err
    assert "cannot be a member" not in err


@pytest.mark.parametrize("given, specs", [
    (["bm25,dense"], ["bm25", "dense"]),
    (["bm25, dense", "http://localhost:8000/s"], ["bm25", "dense", "http://localhost:8000/s"]),
    (["bm25>rerank:dense,dense:st:/models/e5"], ["bm25>rerank:dense", "dense:st:/models/e5"]),
    # a comma inside a spec's grammar (a list value) stays, before a spec's name it splits
    (["hybrid:bm25+dense?method=wsum&weights=0.3,0.7"], ["hybrid:bm25+dense?method=wsum&weights=0.3,0.7"]),
    (["hybrid:bm25+dense?weights=0.3,0.7,bm25:whitespace"], ["hybrid:bm25+dense?weights=0.3,0.7", "bm25:whitespace"]),
    (["hybrid:(bm25?k1=1,dense)+dense"], ["hybrid:(bm25?k1=1,dense)+dense"]),  # inside parentheses: no split
    (["bm25,", ","], ["bm25"]),
    ([], None),
])
def test_commas_separate_specs_only_where_a_spec_starts(given, specs):
    assert split_specs(given) == specs


def test_two_retrievers_in_one_r_run_as_two_pipelines_and_a_list_value_keeps_its_comma(capsys):
    code, out, err = cli(["run", "--corpus", "it_helpdesk", "--qa", "it_helpdesk", "-r", "bm25,bm25:whitespace",
                          "-r", "hybrid:bm25+bm25:whitespace?method=wsum&weights=0.3,0.7", "--json", *QUICK], capsys)
    assert code == 0, err
    names = [name.split(" | ")[0] for name in json.loads(out)["results"]]
    assert names == ["bm25", "bm25:whitespace", "hybrid:bm25+bm25:whitespace?method=wsum&weights=0.3,0.7"]
