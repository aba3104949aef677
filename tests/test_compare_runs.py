"""ragexam compare: paired differences with Holm across metrics, and the questions that flipped."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest

from ragexam import stats
from ragexam.cli import main
from ragexam.errors import InputError, MetricNameError
from ragexam.analysis.exam.compare import compare_runs
from ragexam.storage.runfolder import RunData, coerce_rows, read_run_folder
from test_report_fixtures import METRICS, MISS_K, _per_question_metrics, make_run, write_run

PIPE = "bm25 | paragraphs:400"


def _cli(argv, capsys):
    with pytest.raises(SystemExit) as info:
        main(argv)
    out = capsys.readouterr()
    return info.value.code or 0, out.out, out.err


def _set_rank(summary, rows, pipeline, qid, rank):
    """Move question ``qid``'s first correct chunk to ``rank`` in a copy's rows and missed list."""
    row = next(r for r in rows if r["pipeline"] == pipeline and r["query_id"] == qid)
    row["first_rank"] = rank
    row["unit_ranks"] = {u: rank for u in row["unit_ranks"]}
    row.update(_per_question_metrics(rank))
    missed = summary["missed"][pipeline]
    missed[:] = [e for e in missed if e["query_id"] != qid]
    if rank is None or rank > MISS_K:
        from ragexam.data import load_qa

        q = load_qa("it_helpdesk")[qid]
        missed.append({"query_id": qid, "question": q.question, "type": q.type, "evidence": list(q.evidence),
                       "first_rank": rank, "unit_ranks": row["unit_ranks"], "k": MISS_K, "top": []})


@pytest.fixture(scope="module")
def pair():
    summary, rows = make_run(n_questions=30, seed=21, n_resamples=200, n_permutations=500)
    a = RunData(summary, coerce_rows(rows), "A")
    b_summary, b_rows = copy.deepcopy(summary), copy.deepcopy(rows)
    b_summary["run_id"] = "run-b"
    scored = [r for r in rows if r["pipeline"] == PIPE and r["answerable"]]
    found = [r["query_id"] for r in scored if r["first_rank"] is not None and r["first_rank"] <= MISS_K]
    lost = [r["query_id"] for r in scored if r["first_rank"] is None or r["first_rank"] > MISS_K]
    # B loses two questions A found and gains one A missed; a third found one moves within the top k
    _set_rank(b_summary, b_rows, PIPE, found[0], 40)
    _set_rank(b_summary, b_rows, PIPE, found[1], None)
    _set_rank(b_summary, b_rows, PIPE, lost[0], 2)
    _set_rank(b_summary, b_rows, PIPE, found[2], MISS_K)
    b = RunData(b_summary, coerce_rows(b_rows), "B")
    return a, b, {"lost": found[:2], "gained": lost[:1], "moved": found[2]}


def test_flips(pair):
    a, b, expect = pair
    res = compare_runs(a, b, pipeline=PIPE)
    (pc,) = res.pipelines
    assert pc.k == MISS_K and pc.n_shared == a.summary["dataset"]["n_scored"] and not pc.only_a and not pc.only_b
    assert sorted(f.query_id for f in pc.lost) == sorted(expect["lost"])
    assert [f.query_id for f in pc.gained] == expect["gained"]
    flip = next(f for f in pc.flips if f.query_id == expect["lost"][1])
    assert flip.direction == "found→missed" and flip.first_rank_b is None and flip.first_rank_a <= MISS_K
    assert flip.evidence and flip.question  # from B's missed list
    assert flip.top_a == next(r["top_ids"] for r in a.per_question
                              if r["pipeline"] == PIPE and r["query_id"] == flip.query_id)
    gained = pc.gained[0]
    assert gained.first_rank_b == 2 and gained.evidence  # evidence from A's missed list
    assert expect["moved"] not in {f.query_id for f in pc.flips}
    # every pipeline is compared by default; only the changed one flips
    res_all = compare_runs(a, b)
    assert [p.pipeline_a for p in res_all.pipelines] == a.pipelines
    assert [len(p.flips) for p in res_all.pipelines] == [3, 0, 0]
    assert all(m.diff == 0 and m.p_value == 1.0 for p in res_all.pipelines[1:] for m in p.metrics)


def test_holm_across_metrics_and_the_numbers(pair):
    a, b, _ = pair
    (pc,) = compare_runs(a, b, pipeline=PIPE, seed=5, n_resamples=300, n_permutations=400).pipelines
    assert [m.metric for m in pc.metrics] == list(METRICS)
    raw = [m.p_value for m in pc.metrics]
    assert np.allclose([m.p_holm for m in pc.metrics], stats.holm(raw))
    assert all(m.p_holm >= m.p_value for m in pc.metrics)
    assert any(m.p_holm > m.p_value for m in pc.metrics)
    order = [r["query_id"] for r in a.rows(PIPE) if r["answerable"]]
    va = [next(r for r in a.rows(PIPE) if r["query_id"] == q)["mrr"] for q in order]
    vb = [next(r for r in b.rows(PIPE) if r["query_id"] == q)["mrr"] for q in order]
    ref = stats.compare(va, vb, seed=5, n_resamples=300, n_permutations=400)
    mrr = next(m for m in pc.metrics if m.metric == "mrr")
    assert (mrr.diff, mrr.ci_low, mrr.ci_high, mrr.p_value) == (ref.diff, ref.ci_low, ref.ci_high, ref.p_value)
    assert mrr.mean_b - mrr.mean_a == pytest.approx(mrr.diff)
    assert "mcc:holm" in pc.signature and "seed:5" in pc.signature
    assert f"n:{a.summary['dataset']['n_scored']}" in pc.signature
    # a metric subset is corrected over that subset only
    (sub,) = compare_runs(a, b, pipeline=PIPE, metrics=["hit@5", "mrr"], seed=5, n_resamples=300,
                          n_permutations=400).pipelines
    assert [m.metric for m in sub.metrics] == ["hit@5", "mrr"]
    assert np.allclose([m.p_holm for m in sub.metrics], stats.holm([m.p_value for m in sub.metrics]))


def test_question_sets_that_differ():
    sa, ra = make_run(n_questions=30, seed=3, n_resamples=50, n_permutations=50)
    sb, rb = make_run(n_questions=30, seed=3, n_resamples=50, n_permutations=50, drop=("hq_001", "hq_002"),
                      run_id="other")
    sb["dataset"]["qa_sha256"] = "b" * 64
    # another question set is another grading: refused unless asked for, then said
    with pytest.raises(InputError, match=r"graded differently -- the question set.*allow_grading_change=True"):
        compare_runs(RunData(sa, coerce_rows(ra)), RunData(sb, coerce_rows(rb)), pipeline=PIPE)
    res = compare_runs(RunData(sa, coerce_rows(ra)), RunData(sb, coerce_rows(rb)), pipeline=PIPE,
                       allow_grading_change=True)
    (pc,) = res.pipelines
    assert pc.only_a == ["hq_001", "hq_002"] and len(pc.only_b) == 2
    assert pc.n_shared == sa["dataset"]["n_scored"] - 2
    text = " ".join(res.notes)
    assert "include the change of grading" in text and "the question set" in text
    assert "question sets differ" in text and "2 scored only in A, 2 only in B" in text


def test_pipelines_by_name_and_errors(pair):
    a, b, _ = pair
    (pc,) = compare_runs(a, b, pipeline=PIPE, pipeline_b="dense | paragraphs:400").pipelines
    assert (pc.pipeline_a, pc.pipeline_b) == (PIPE, "dense | paragraphs:400")
    with pytest.raises(InputError, match="not a pipeline of run A"):
        compare_runs(a, b, pipeline="nope")
    with pytest.raises(MetricNameError, match="hit@5"):
        compare_runs(a, b, metrics=["hit@7"])
    other = make_run(n_questions=10, seed=1, pipelines=("x | y",), n_resamples=20, n_permutations=20)
    with pytest.raises(InputError, match="share no pipeline"):
        compare_runs(a, RunData(other[0], coerce_rows(other[1])))
    with pytest.raises(InputError, match="per-question"):
        compare_runs(a, RunData(b.summary, []))


def test_cli_compare(pair, tmp_path, capsys):
    a, b, expect = pair
    fa = write_run(tmp_path / "a", a.summary, a.per_question)
    fb = write_run(tmp_path / "b", b.summary, b.per_question)
    code, out, _ = _cli(["compare", str(fa), str(fb), "-p", PIPE, "--json"], capsys)
    assert code == 0
    data = json.loads(out)
    (pc,) = data["pipelines"]
    assert {f["query_id"] for f in pc["flips"]} == set(expect["lost"] + expect["gained"])
    assert len(pc["metrics"]) == len(METRICS)
    code, out, _ = _cli(["compare", str(fa), str(fb), "-p", PIPE], capsys)
    assert code == 0 and "found → missed" in out and "Holm" in out and expect["lost"][0] in out
    # by recorded id
    db = tmp_path / "h.db"
    _cli(["runs", "--history", str(db), "--record", str(fa)], capsys)
    _cli(["runs", "--history", str(db), "--record", str(fb)], capsys)
    code, out, _ = _cli(["compare", a.summary["run_id"], "run-b", "--history", str(db), "-p", PIPE, "--json"], capsys)
    assert code == 0 and json.loads(out)["run_b"] == "run-b"
    code, _, err = _cli(["compare", str(fa), str(fb), "-m", "bogus@1"], capsys)
    assert code == 2 and "hit@1" in err
    assert read_run_folder(fa).summary == a.summary


def test_run_and_compare_word_the_same_case_the_same_way(tmp_path):
    """Issue 9: ``compare`` said "A is better than B (p=0.022)" where the Holm-adjusted p was 0.157, while
    ``run`` called the same case "better (not after Holm)".  Both now decide on the corrected p and word
    it with one function (ragexam.stats.verdict.assess)."""
    import ragexam
    from test_run_api import FixedRetriever

    corpus, qa = tmp_path / "c.jsonl", tmp_path / "q.jsonl"
    corpus.write_text("".join(json.dumps({"doc_id": f"d{i}", "content": f"fact{i} is here."}) + "\n"
                              for i in range(40)), encoding="utf-8")
    qa.write_text("".join(json.dumps({"query_id": f"q{i}", "question": f"question {i}", "evidence": f"fact{i} is here"})
                          + "\n" for i in range(40)), encoding="utf-8")
    # the baseline finds every evidence at rank 2; the other at rank 1 for 8 of the 40 questions
    base = {f"question {i}": [f"d{(i + 1) % 40}#0", f"d{i}#0"] for i in range(40)}
    other = {q: (ids[::-1] if i < 8 else ids) for i, (q, ids) in enumerate(base.items())}
    res = ragexam.run(corpus, qa, retrievers=[FixedRetriever(base, "base"), FixedRetriever(other, "other")],
                      chunkers=["whole"], k=(1, 3), n_resamples=500, n_permutations=2000, progress=False)
    in_run = {c["metric"]: c for c in res.summary["comparisons"]}
    hit1 = in_run["hit@1"]
    # 8 wins of 8 changed questions: exact p = 2/256, below 0.05; Holm over the 9 metrics lifts it above
    assert hit1["p_value"] == 2 / 256 and hit1["p_holm"] > 0.05 and hit1["ci95"][0] > 0
    assert hit1["reading"] == "not after Holm"
    assert hit1["verdict"].startswith("not significant after Holm's correction: other | whole is ahead of "
                                      "base | whole by 0.2")
    assert f"Holm-adjusted p={hit1['p_holm']:.3f} (unadjusted p=0.008)" in hit1["verdict"]
    run = RunData(res.summary, res.per_question, "run")
    (pc,) = compare_runs(run, run, pipeline="base | whole", pipeline_b="other | whole").pipelines
    assert [m.metric for m in pc.metrics] == list(in_run)
    for m in pc.metrics:
        c = in_run[m.metric]
        assert (m.diff, m.p_value, m.p_holm) == (c["diff"], c["p_value"], c["p_holm"])
        assert m.reading == c["reading"]
        assert m.verdict == c["verdict"].replace("other | whole", "B").replace("base | whole", "A")
    assert {m.reading for m in pc.metrics} >= {"not after Holm", "same"}


def _score_data(values, side):
    """A score of 12 answers of pipeline ``p``: ``values`` its faithfulness (``None``: not judged), a chrf per
    answer, q0/q3/q6/q9 found only in B."""
    rows = [{"pipeline": "p", "query_id": f"q{i}", "type": "meaning", "answerable": True,
             "first_rank": 1 if i % 3 or side == "B" else 7, "chrf": 0.1 * (i % 5), "faithfulness": v}
            for i, v in enumerate(values)]
    summary = {"format": "ragexam-score/2", "kind": "score", "settings": {"seed": 7},
               "dataset": {"n_questions": len(values), "pipelines": ["p"]},
               "attribution": {"questions": [{"pipeline": "p", "query_id": f"q{i}", "label": "ok", "correct": True}
                                             for i in range(len(values))]}}
    return RunData(summary=summary, per_question=rows, source=side)


def test_two_scores_compare_on_the_answers_both_judged_and_name_sentence_means(capsys):
    """E2: a declining answer (no faithfulness value) no longer refuses the comparison; E6: a mean of per-answer
    chrf is not named as the corpus chrf; E14: a flipped answer of a score shows each side's verdict, no empty
    rows."""
    from rich.console import Console

    from ragexam.report.console import print_comparison

    a = _score_data([None if i % 4 == 0 else 0.5 + 0.01 * i for i in range(12)], "A")
    b = _score_data([None if i % 5 == 0 else 0.6 for i in range(12)], "B")
    cmp = compare_runs(a, b)
    (pc,) = cmp.pipelines
    by = {m.column: m for m in pc.metrics}
    assert by["faithfulness"].n == 7 and by["faithfulness"].left_out == 5 and by["chrf"].n == 12
    assert by["faithfulness"].mean_a == pytest.approx(np.mean([0.5 + 0.01 * i for i in (1, 2, 3, 6, 7, 9, 11)]))
    assert any("faithfulness compared on the 7 questions both scores have a value for; 5 of the 12 shared left out"
               in n
               for n in cmp.notes)
    assert by["chrf"].metric == "chrf (mean per answer)" and by["faithfulness"].metric == "faithfulness"
    assert cmp.to_dict()["pipelines"][0]["metrics"][0]["metric"] == "chrf (mean per answer)"
    assert {f.query_id for f in pc.flips} == {"q0", "q3", "q6", "q9"}
    assert pc.flips[0].verdict_a == "ok: correct"
    con = Console(width=200, record=True)
    print_comparison(cmp, con)
    text = con.export_text()
    assert "chrf (mean per answer)" in text and "faithfulness (on 7; 5 left out)" in text
    assert "answer A ok: correct" in text
    assert "top A" not in text and "evidence" not in text
    from ragexam.analysis.exam.compare import _values

    first = {"q0": a.rows("p")[0]}  # not judged: two runs keep their rule, a value for every question
    with pytest.raises(InputError, match="is empty for"):
        _values(first, first, ["q0"], "faithfulness", False)
