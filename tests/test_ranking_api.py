"""Ranking metrics: hand-derived cases, the lecture's tables, names, IO errors, CLI."""

from __future__ import annotations

import json
import math

import pytest
from typer.testing import CliRunner

from ragexam.cli import app
from ragexam.data.trec import resolve_trec_path
from ragexam.errors import InputError, MetricNameError
from ragexam.metrics.ranking import Qrels, Run, evaluate, parse_metric, rank_metrics


def test_rank_helper_textbook_examples():
    assert tuple(round(x, 3) for x in rank_metrics([1, 3, None], k=3)) == (0.333, 0.667, 0.444)
    assert tuple(round(x, 3) for x in rank_metrics([1, 1, 2, 1, 5], k=3)) == (0.6, 0.8, 0.74)


@pytest.mark.parametrize("ranks,k", [([], 3), ([0], 3), ([1.5], 3), ([1], 0), ([True], 3)])
def test_rank_helper_rejects_bad_input(ranks, k):
    with pytest.raises(InputError):
        rank_metrics(ranks, k=k)


def test_rank_helper_agrees_with_engine():
    ranks = [1, 3, None, 2, 7]
    run = {f"q{i}": [f"x{j}" for j in range(10)] for i in range(len(ranks))}
    qrels = {}
    for i, r in enumerate(ranks):
        qrels[f"q{i}"] = {f"x{r - 1}" if r else "missing": 1}
    res = evaluate(qrels, run, ["hit@1", "hit@3", "mrr"])
    h1, h3, mrr = rank_metrics(ranks, k=3)
    assert res.mean == pytest.approx({"hit@1": h1, "hit@3": h3, "mrr": mrr})


def test_lecture_tables():
    """The 2026-04-01 lecture's K sweep and F-beta@3 table, from the bundled TREC pair."""
    names = ["p@1", "r@1", "f1@1", "p@3", "r@3", "f1@3", "p@5", "r@5", "f1@5", "f0.5@3", "f2@3"]
    res = evaluate(resolve_trec_path("lecture", "qrels"), resolve_trec_path("lecture", "run"), names)
    got = {k: round(v, 3) for k, v in res.mean.items()}
    assert got == {"p@1": 1.0, "r@1": 0.958, "f1@1": 0.972, "p@3": 0.333, "r@3": 0.958, "f1@3": 0.492,
                   "p@5": 0.217, "r@5": 1.0, "f1@5": 0.353, "f0.5@3": 0.382, "f2@3": 0.693}


def test_fbeta_and_mrr_cutoff_by_hand():
    # 4 relevant (a, b, c, d); ranking a, x, b -> P@3 = 2/3, R@3 = 1/2
    qrels = {"q": {"a": 1, "b": 1, "c": 1, "d": 1}}
    run = {"q": ["a", "x", "b"]}
    res = evaluate(qrels, run, ["p@3", "r@3", "f1@3", "f2@3", "f0.5@3", "mrr@1", "mrr", "p@5", "rprec", "map",
                                "map@2", "r@2"]).mean
    P, R = 2 / 3, 1 / 2
    assert res["f1@3"] == pytest.approx(2 * P * R / (P + R))
    assert res["f2@3"] == pytest.approx(5 * P * R / (4 * P + R))  # (1+b^2)PR/(b^2 P + R), b = 2
    assert res["f0.5@3"] == pytest.approx(1.25 * P * R / (0.25 * P + R))
    assert res["f2@3"] != pytest.approx(3 * P * R / (2 * P + R))  # trec_eval's set_F.2 (x = beta^2) differs
    # the research notes' E4 numbers (trec_eval, ranx and ir_measures agree)
    assert (res["p@5"], res["rprec"], round(res["map"], 4), res["map@2"], res["r@2"]) == (0.4, 0.5, 0.4167, 0.25, 0.25)
    assert res["mrr"] == 1.0 and res["mrr@1"] == 1.0
    late = evaluate({"q": {"c": 1}}, {"q": ["a", "b", "c"]}, ["mrr", "mrr@2", "mrr@3"]).mean
    assert late == pytest.approx({"mrr": 1 / 3, "mrr@2": 0.0, "mrr@3": 1 / 3})


def test_f_is_zero_not_nan_when_nothing_relevant_retrieved():
    res = evaluate({"q": {"a": 1}}, {"q": ["x", "y"]}, ["f1@2", "f0.5@2", "ndcg@2", "map"])
    assert all(v == 0.0 and not math.isnan(v) for v in res.mean.values())


def test_ndcg_worked_example():
    """Research note E2: qrels d1:2, d2:1, d3:0, d4:-1; run d2, d4, d1, d3."""
    qrels = {"q": {"d1": 2, "d2": 1, "d3": 0, "d4": -1}}
    run = {"q": ["d2", "d4", "d1", "d3"]}
    res = evaluate(qrels, run, ["ndcg", "ndcg@2"]).mean
    assert round(res["ndcg"], 4) == 0.7602 and round(res["ndcg@2"], 4) == 0.3801


def test_ties_broken_by_docid_descending_and_lists_keep_order():
    qrels = {"q": {"d1": 1}}
    assert evaluate(qrels, {"q": {"d1": 1.0, "d2": 1.0, "d3": 1.0}}, ["mrr"]).mean["mrr"] == pytest.approx(1 / 3)
    assert evaluate(qrels, {"q": ["d1", "d2", "d3"]}, ["mrr"]).mean["mrr"] == 1.0


def test_default_vs_trec_compat_query_sets():
    qrels = {"q1": {"d1": 1}, "q2": {"d2": 0}, "q3": {"d3": 1}}
    run = {"q1": ["d1"], "q2": ["d2"], "q4": ["d9"]}
    default = evaluate(qrels, run, ["r@10"])
    assert default.query_ids == ["q1", "q3"] and default.mean["r@10"] == 0.5
    assert default.missing_from_run == ["q3"]
    reasons = {e["query_id"]: e["reason"] for e in default.excluded}
    assert reasons == {"q2": "no relevant judgment (no grade >= 1)", "q4": "not in qrels"}
    compat = evaluate(qrels, run, ["r@10"], trec_compat=True)
    assert compat.query_ids == ["q1", "q2"] and compat.mean["r@10"] == 0.5
    assert "missing:dropped" in compat.signature and "missing:zero" in default.signature


def test_no_scorable_query_is_an_error():
    with pytest.raises(InputError, match="no query can be scored"):
        evaluate({"q": {"a": 0}}, {"q": ["a"]}, ["map"])


@pytest.mark.parametrize("name,canonical", [("P.10", "p@10"), ("ndcg_cut.10", "ndcg@10"), ("recip_rank", "mrr"),
                                            ("success.5", "hit@5"), ("map_cut.3", "map@3"), ("Rprec", "rprec"),
                                            ("recall@100", "r@100"), ("F0.5@3", "f0.5@3"), ("f2@3", "f2@3")])
def test_metric_aliases(name, canonical):
    assert parse_metric(name).name == canonical


@pytest.mark.parametrize("name", ["ndgc@10", "p", "rprec@5", "ndcg@0", "ndcg@x", "f0@3", ""])
def test_unknown_metric_lists_valid_forms(name):
    with pytest.raises(MetricNameError) as err:
        parse_metric(name)
    assert "Valid forms: hit@K, mrr, mrr@K, ndcg, ndcg@K, p@K, r@K, f1@K" in str(err.value)


@pytest.mark.parametrize("content,line,needle", [
    ("q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 0.4\n", 2, "expected 6 fields"),
    ("q1 Q0 d1 1 0.5 t\nq1 Q0 d2 x 0.4 t\n", 2, "rank 'x' is not an integer"),
    ("q1 Q0 d1 1 abc t\n", 1, "score 'abc' is not a number"),
    ("q1 Q0 d1 1 nan t\n", 1, "NaN"),
    ("q1 Q0 d1 1 0.5 t\n\nq1 Q0 d1 2 0.4 t\n", 3, "retrieved twice"),
    ("q1  Q0 d1 1 0.5 t\nq1 Q0 d2 1 0.5 t extra\n", 2, "expected 6 fields"),
])
def test_malformed_run_lines_name_file_and_line(tmp_path, content, line, needle):
    p = tmp_path / "run.trec"
    p.write_text(content)
    with pytest.raises(InputError) as err:
        Run.from_file(p)
    assert f"{p}:{line}" in str(err.value) and needle in str(err.value)


def test_malformed_qrels_and_encoding(tmp_path):
    p = tmp_path / "q.trec"
    p.write_text("q1 0 d1 1\nq1 0 d2 high\n")
    with pytest.raises(InputError, match=r"q.trec:2: field 'rel': relevance 'high' is not an integer"):
        Qrels.from_file(p)
    p.write_bytes(b"q1 0 d1 1\nq1 0 d\xff2 1\n")
    with pytest.raises(InputError, match=r"q.trec:2: .*not valid UTF-8"):
        Qrels.from_file(p)
    p.write_bytes(b"\xef\xbb\xbfq1 0 d1 1\n")
    with pytest.raises(InputError, match=r"q.trec:1: .*byte-order mark"):
        Qrels.from_file(p)


def test_io_roundtrips_and_dataframes(tmp_path):
    qrels = {"q1": {"a": 2, "b": 0}, "q2": {"c": 1}}
    run = {"q1": {"a": 0.5, "b": 0.9, "z": 0.1}, "q2": {"c": 1.25}}
    Qrels.from_dict(qrels).to_trec(tmp_path / "q")
    Run.from_dict(run).to_trec(tmp_path / "r")
    assert Qrels.from_file(tmp_path / "q").to_dict() == qrels
    assert Run.from_file(tmp_path / "r").to_dict() == run
    qdf = Qrels.from_dict(qrels).to_dataframe()
    rdf = Run.from_dict(run).to_dataframe()
    a = evaluate(qdf, rdf, ["ndcg@3", "map"])
    b = evaluate(qrels, run, ["ndcg@3", "map"])
    assert a.mean == b.mean
    df = b.to_dataframe()
    assert list(df.columns) == ["ndcg@3", "map"] and list(df.index) == ["q1", "q2"]


def test_cli_evaluate_json_matches_api():
    runner = CliRunner()
    out = runner.invoke(app, ["evaluate", "--qrels", "lecture", "--run", "lecture", "-m", "ndcg@5", "-m", "P.3",
                              "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert set(data) >= {"metrics", "per_query", "n_queries", "excluded_queries"}
    # keyed by the names as asked (P.3 stays P.3), with the canonical name beside each
    assert data["n_queries"] == 12 and round(data["metrics"]["P.3"], 3) == 0.333
    assert list(data["metrics"]) == ["ndcg@5", "P.3"]
    assert data["canonical_names"] == {"ndcg@5": "ndcg@5", "P.3": "p@3"}
    assert set(data["per_query"]["q07"]) == {"ndcg@5", "P.3"}
    assert data["warnings"] == []
    api = evaluate(resolve_trec_path("lecture", "qrels"), resolve_trec_path("lecture", "run"), ["ndcg@5", "P.3"])
    assert data["metrics"] == api.mean and data["per_query"] == api.per_query


def test_cli_bad_metric_exits_2(capsys):
    from ragexam.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["evaluate", "--qrels", "lecture", "--run", "lecture", "-m", "ndgc@5"])
    assert exc.value.code == 2
    assert "invalid metric name 'ndgc@5'" in capsys.readouterr().err


def test_results_keyed_by_names_as_asked():
    qrels = {"q1": {"a": 1, "b": 1}, "q2": {"c": 2}}
    run = {"q1": ["a", "x", "b"], "q2": ["y", "c"]}
    res = evaluate(qrels, run, ["recall@10", "P.1", "r@10", " ndcg_cut.2 ", "recall@10", "mrr"])
    assert res.metrics == ["recall@10", "P.1", "r@10", "ndcg_cut.2", "mrr"]  # a name given twice is kept once
    assert res.canonical == ["r@10", "p@1", "r@10", "ndcg@2", "mrr"]
    assert res.canonical_names == {"recall@10": "r@10", "P.1": "p@1", "r@10": "r@10", "ndcg_cut.2": "ndcg@2",
                                   "mrr": "mrr"}
    assert list(res.mean) == res.metrics and list(res.per_query["q1"]) == res.metrics
    assert res.mean["recall@10"] == res.mean["r@10"] == 1.0 and res.mean["P.1"] == 0.5
    assert res.column("recall@10").tolist() == res.column("recall.10").tolist() == [1.0, 1.0]
    assert res.column("P.1").tolist() == res.column("precision@1").tolist() == [1.0, 0.0]
    assert list(res.to_dataframe().columns) == res.metrics
    d = res.to_dict()
    assert d["metrics"] == res.mean and d["canonical_names"] == res.canonical_names and d["warnings"] == []
    assert json.loads(res.to_json()) == d
    with pytest.raises(InputError, match="'map' was not evaluated"):
        res.column("map")
    # Metric objects and one comma-separated string work too
    from ragexam.metrics.ranking import Metric

    assert evaluate(qrels, run, [Metric("p", 1)]).metrics == ["p@1"]
    assert evaluate(qrels, run, "recall@10, P.1").metrics == ["recall@10", "P.1"]


def test_cli_table_shows_names_as_asked():
    runner = CliRunner()
    out = runner.invoke(app, ["evaluate", "--qrels", "lecture", "--run", "lecture", "-m", "recall@3", "-m", "P.3",
                              "-m", "map"])
    assert out.exit_code == 0, out.output
    rows = [line.strip("│┃ ").split()[0] for line in out.stdout.splitlines() if line.startswith("│")]
    assert rows == ["recall@3", "P.3", "map"]
    assert "names as asked; canonical: recall@3 = r@3, P.3 = p@3" in out.stdout
    sig = [line for line in out.stdout.splitlines() if line.startswith("signature: ")]
    assert len(sig) == 1 and sig[0].endswith("version:ragexam-" + __import__("ragexam").__version__)
