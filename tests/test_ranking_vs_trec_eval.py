"""ragexam's ranking metrics equal pytrec_eval's (trec_eval 9.x) to 1e-9, on generated data."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytrec_eval = pytest.importorskip("pytrec_eval")

from ragexam.errors import InputError  # noqa: E402
from ragexam.metrics.ranking import Qrels, Run, evaluate  # noqa: E402

from test_ranking_files import write_random_pair  # noqa: E402
from trec_readers import READERS, reader  # noqa: E402

CHILD = Path(__file__).with_name("pytrec_child.py")

CUTOFFS = (1, 2, 3, 5, 10)
# ours -> trec_eval measure key in pytrec_eval's output
PAIRS = {"mrr": "recip_rank", "ndcg": "ndcg", "rprec": "Rprec", "map": "map"}
for _k in CUTOFFS:
    PAIRS.update({f"hit@{_k}": f"success_{_k}", f"ndcg@{_k}": f"ndcg_cut_{_k}", f"p@{_k}": f"P_{_k}",
                  f"r@{_k}": f"recall_{_k}", f"map@{_k}": f"map_cut_{_k}"})
_ks = ",".join(map(str, CUTOFFS))
TREC_MEASURES = {"recip_rank", "ndcg", "Rprec", "map", f"success.{_ks}", f"ndcg_cut.{_ks}", f"P.{_ks}",
                 f"recall.{_ks}", f"map_cut.{_ks}"}

qids = st.sampled_from([f"q{i}" for i in range(6)])
docids = st.sampled_from([f"d{i}" for i in range(14)] + ["D1", "a", "z9"])
grades = st.integers(min_value=-2, max_value=3)
# few distinct scores so that ties are common; some float noise too
scores = st.one_of(st.sampled_from([0.0, 1.0, 1.5, 2.0, -1.0]),
                   st.floats(min_value=-5, max_value=5, allow_nan=False, allow_infinity=False))
# pytrec_eval 0.5.11 corrupts memory (segfaults or hangs) on two kinds of input, so generated
# data avoids them and they are tested by hand below: an empty entry such as {"q5": {}} (a TREC
# file cannot hold one anyway), and a query whose judgments are all negative
# (qrels {"q6": {"a": -2}, "q0": {"d12": 2}}, run {"q0": {"a": 1.0}, "q6": {"d5": -1.0}}).
judged_st = st.dictionaries(docids, grades, min_size=1, max_size=10).filter(lambda d: max(d.values()) >= 0)
qrels_st = st.dictionaries(qids, judged_st, min_size=1, max_size=6)
run_st = st.dictionaries(qids, st.dictionaries(docids, scores, min_size=1, max_size=14), min_size=0, max_size=6)




def _trec_many(cases, relevance_level=1):
    """pytrec_eval results for many (qrels, run) cases, in a child process; ``None`` where it crashed."""
    out: list = [None] * len(cases)
    i = 0
    while i < len(cases):
        payload = "".join(json.dumps([q, r, sorted(TREC_MEASURES), relevance_level]) + "\n" for q, r in cases[i:])
        try:
            proc = subprocess.run([sys.executable, str(CHILD)], input=payload, capture_output=True, text=True,
                                  timeout=60)
            lines, failed = proc.stdout.splitlines(), proc.returncode != 0
        except subprocess.TimeoutExpired as err:  # pytrec_eval hung on a case: skip it like a crash
            lines, failed = (err.stdout or b"").decode().splitlines(), True
        for j, line in enumerate(lines):
            out[i + j] = json.loads(line)
        i += len(lines)
        if failed:
            i += 1  # the case that crashed pytrec_eval stays None
    return out


def _check(qrels, run, expected, relevance_level=1):
    # trec_eval scores a judged query with nothing retrieved as 0 on every measure; an empty
    # ranking ({"q": {}}) is given to pytrec_eval too, so expected already holds it when it ran.
    metrics = list(PAIRS)
    try:
        ours = evaluate(qrels, run, metrics, trec_compat=True, relevance_level=relevance_level)
    except InputError:  # no query scorable: pytrec_eval must output nothing then
        assert not expected
        return
    assert set(ours.query_ids) == set(expected), (ours.query_ids, sorted(expected))
    per_q = ours.per_query
    for q, vals in expected.items():
        for mine, theirs in PAIRS.items():
            a, b = per_q[q][mine], vals[theirs]
            assert not math.isnan(a)
            assert abs(a - b) <= 1e-9, (q, mine, a, b, qrels.get(q), run.get(q))


def _compare_batch(cases, relevance_level=1):
    expected = _trec_many(cases, relevance_level)
    crashed = 0
    for (qrels, run), exp in zip(cases, expected):
        if exp is None:
            crashed += 1
            continue
        _check(qrels, run, exp, relevance_level)
    assert crashed <= len(cases) // 10, f"pytrec_eval crashed on {crashed} of {len(cases)} cases"


cases_st = st.lists(st.tuples(qrels_st, run_st), min_size=8, max_size=8)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(cases=cases_st)
def test_equal_to_pytrec_eval(cases):
    """320 hypothesis-generated (qrels, run) pairs: ties, graded/zero/negative grades,
    queries missing on either side."""
    _compare_batch(cases)


def _random_case(rng):
    def docs(n):
        return rng.sample([f"d{i}" for i in range(20)] + ["D1", "a", "z9", "doc-10"], n)

    qrels = {f"q{i}": {d: rng.randint(-2, 3) for d in docs(rng.randint(1, 9))}
             for i in rng.sample(range(8), rng.randint(1, 6))}
    for judged in qrels.values():  # see judged_st: all-negative queries are tested by hand
        if max(judged.values()) < 0:
            judged[next(iter(judged))] = 0
    run = {f"q{i}": {d: rng.choice([0.0, 1.0, 1.5, -1.0, round(rng.uniform(-3, 3), 2), rng.uniform(-3, 3)])
                     for d in docs(rng.randint(1, 24))}
           for i in rng.sample(range(8), rng.randint(0, 6))}
    return qrels, run


@pytest.mark.parametrize("seed", [0, 1])
def test_equal_to_pytrec_eval_seeded_bulk(seed):
    """1,000 seeded random pairs per seed, in one pytrec_eval process."""
    import random

    rng = random.Random(seed)
    _compare_batch([_random_case(rng) for _ in range(1000)])


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(cases=cases_st, level=st.integers(min_value=1, max_value=3))
def test_equal_to_pytrec_eval_relevance_level(cases, level):
    _compare_batch(cases, relevance_level=level)


@settings(max_examples=25, deadline=None)
@given(qrels=qrels_st, run=run_st)
def test_files_equal_dicts_and_pytrec_parsers(tmp_path_factory, qrels, run):
    """Through TREC files: our reader + engine equals pytrec_eval's parse_qrel/parse_run + evaluate."""
    d = tmp_path_factory.mktemp("trec")
    qp, rp = d / "qrels.trec", d / "run.trec"
    Qrels.from_dict(qrels).to_trec(qp)
    Run.from_dict(run).to_trec(rp)
    with open(qp) as f:
        pq = pytrec_eval.parse_qrel(f)
    with open(rp) as f:
        pr = pytrec_eval.parse_run(f)
    # a file cannot hold a query with no lines: compare against what the file holds
    [expected] = _trec_many([(pq, pr)])
    if expected is not None:
        _check(pq, pr, expected)
    if pr:
        try:
            from_dicts = evaluate(pq, pr, list(PAIRS), trec_compat=True)
        except InputError:
            from_dicts = None
            assert not expected
        for name in READERS:  # every reader must agree
            with reader(name):
                try:
                    from_files = evaluate(qp, rp, list(PAIRS), trec_compat=True)
                except InputError:
                    assert from_dicts is None
                    continue
            assert from_files.query_ids == from_dicts.query_ids
            assert (abs(from_files.values - from_dicts.values) <= 1e-12).all()


@pytest.mark.parametrize("name", READERS)
def test_large_random_run_matches(tmp_path, name):
    """10k-line files through every reader, ties included."""
    qp, rp = write_random_pair(tmp_path, seed=7, n_queries=300, n_docs=5000, depth=60, judged=6, ties=20)
    expected = _pytrec_files(qp, rp)
    with reader(name):
        _assert_equal_files(qp, rp, expected)


def test_empty_ranking_and_unjudged_queries_by_hand():
    """The cases pytrec_eval cannot be asked about: a query retrieved nothing, a query has no judgment."""
    qrels = {"q1": {"d1": 1}, "q2": {"d2": 2}, "q3": {}}
    run = {"q1": {}, "q2": {"d2": 0.5, "d9": 0.7}, "q3": {"d1": 1.0}}
    metrics = list(PAIRS)
    res = evaluate(qrels, run, metrics, trec_compat=True)
    assert res.query_ids == ["q1", "q2"]  # q3 has no judgment at all: not scored, as trec_eval
    assert all(v == 0.0 for v in res.per_query["q1"].values())  # judged, nothing retrieved: 0
    assert res.per_query["q2"]["mrr"] == 0.5
    assert {"query_id": "q3", "reason": "no judgments"} in res.excluded
    default = evaluate(qrels, run, metrics)  # the RAG default agrees here
    assert default.query_ids == ["q1", "q2"]


def test_all_negative_judgments_by_hand():
    """A query judged only negatively has no relevant item: excluded by default, 0 in trec_compat."""
    qrels = {"q6": {"a": -2}, "q0": {"d12": 2}}
    run = {"q0": {"a": 1.0, "d12": 0.5}, "q6": {"d5": -1.0, "a": 0.0}}
    res = evaluate(qrels, run, list(PAIRS))
    assert res.query_ids == ["q0"]
    assert res.excluded == [{"query_id": "q6", "reason": "no relevant judgment (no grade >= 1)"}]
    assert res.per_query["q0"]["mrr"] == 0.5
    compat = evaluate(qrels, run, list(PAIRS), trec_compat=True)
    assert compat.query_ids == ["q0", "q6"]
    assert all(v == 0.0 for v in compat.per_query["q6"].values())


def _pytrec_files(qp, rp):
    with open(qp) as f:
        pq = pytrec_eval.parse_qrel(f)
    with open(rp) as f:
        pr = pytrec_eval.parse_run(f)
    [expected] = _trec_many([(pq, pr)])
    assert expected is not None
    return expected


def _assert_equal_files(qp, rp, expected):
    ours = evaluate(qp, rp, list(PAIRS), trec_compat=True).per_query
    assert set(ours) == set(expected)
    for q, vals in expected.items():
        for mine, theirs in PAIRS.items():
            assert abs(ours[q][mine] - vals[theirs]) <= 1e-9, (q, mine)


@pytest.mark.parametrize("name", ["pyarrow", "compiled"])
@pytest.mark.parametrize("shuffle", [False, True], ids=["grouped", "shuffled"])
def test_files_read_in_blocks_match(tmp_path, shuffle, name):
    """Files over 1 MiB, grouped by query or shuffled line by line, many ties broken by docid: pyarrow reads
    them in several blocks, each with its own document dictionary; the compiled reader reads a grouped run
    against the qrels' documents and a shuffled one again with one table of every document."""
    qp, rp = write_random_pair(tmp_path, seed=11, n_queries=2500, n_docs=3000, depth=50, judged=12, ties=8,
                           shuffle=shuffle, qid="topic-{}", docid="document-{}")
    expected = _pytrec_files(qp, rp)
    with reader(name):
        q = Qrels.from_file(qp)
        cols = Run.from_file(rp, q).cols
        assert rp.stat().st_size > 1 << 20
        assert bool(cols.doc_segments) == (name == "pyarrow")
        assert (cols.doc_base is q.cols.doc_vocab) == (name == "compiled")
        _assert_equal_files(qp, rp, expected)


def test_hashed_join_matches(tmp_path, monkeypatch):
    """Large (query, document) spaces look grades up by hashing pairs instead of a dense table."""
    from ragexam.metrics.ranking import engine

    qp, rp = write_random_pair(tmp_path, seed=5, n_queries=400, n_docs=100_000, depth=30, judged=5, ties=10,
                           unretrieved=3, docid="d{}")
    expected = _pytrec_files(qp, rp)
    _assert_equal_files(qp, rp, expected)  # dense table
    monkeypatch.setattr(engine, "_DENSE_CELLS", 0)
    _assert_equal_files(qp, rp, expected)  # hashed pairs
    # grades outside int8 take the hashed path too
    monkeypatch.setattr(engine, "_DENSE_CELLS", 1 << 24)
    big = tmp_path / "big.trec"
    big.write_text(qp.read_text().replace(" 3\n", " 300\n"))
    _assert_equal_files(big, rp, _pytrec_files(big, rp))
