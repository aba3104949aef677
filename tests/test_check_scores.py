"""``ragexam check`` on scores (issue 9): judge metrics gate CI from a ``score --out`` folder and from a
recorded score, with ``--point`` and with lower bounds bootstrapped over the judged answers only; corpus
BLEU/chrF get the bootstrap of the corpus statistic; ``score`` fails a CI on judge coverage."""

from __future__ import annotations

import csv
import json

import pytest


from test_score_answer_cmd import stub  # noqa: E402,F401 (the loopback judge fixture)
from test_score_fixtures import ANSWERS, write_case, write_jsonl  # noqa: E402

from ragexam import stats  # noqa: E402
from ragexam.analysis.gating.gate import check_run, parse_floor  # noqa: E402
from ragexam.cli import main  # noqa: E402
from ragexam.errors import InputError  # noqa: E402
from ragexam.storage.history import History, resolve_run  # noqa: E402
from ragexam.storage.runfolder import read_folder, read_score_folder  # noqa: E402


def cli(argv, capsys):
    with pytest.raises(SystemExit) as ei:
        main([str(a) for a in argv])
    out = capsys.readouterr()
    return ei.value.code or 0, out.out, out.err


def _tagged_answers(tmp_path, tags):
    """The handcrafted answers with ``[[s:TAG]]`` appended to P2's answer of each query in ``tags``
    (the stub judge then replies per scenario: ``incorrect`` -> score 1, ``bad_json`` -> unjudged)."""
    rows = [dict(a, answer=a["answer"] + f" [[s:{tags[a['query_id']]}]]")
            if a["pipeline"] == "P2" and a["query_id"] in tags else a for a in ANSWERS]
    return write_jsonl(tmp_path / "tagged.jsonl", rows)


def _score(stub, tmp_path, answers, *extra):
    qa, _, _, run = write_case(tmp_path)
    return ["score", "--qa", qa, "--answers", answers, "--run", run, "--judge-model", "stub-judge", "--base-url",
            stub.base_url, "--cache-dir", tmp_path / "cache", "--metric", "answer_correctness", "--list", "0",
            *extra]


def test_judge_metric_floor_on_a_score_folder_and_a_recorded_score(stub, tmp_path, capsys):
    answers = _tagged_answers(tmp_path, {"q3": "incorrect", "q4": "bad_json"})
    out, hist = tmp_path / "out", tmp_path / "h.db"
    code, _, err = cli(_score(stub, tmp_path, answers, "--out", out, "--history", hist), capsys)
    assert code == 0, err
    # P2: q1-q6 are judgeable; q3 scored 1, q4 unjudged (bad JSON every time), the others 5
    judged = [5.0, 5.0, 1.0, 5.0, 5.0]
    folder = read_score_folder(out)
    q4 = folder.row("P2", "q4")
    assert q4.value("answer_correctness") is None and "answer_correctness" in q4  # unjudged: never a number
    (recorded,) = History(hist).list_runs()
    # a set of 6 questions cannot show the judge separates (a judge-check needs 10): no gate unless told
    (no,) = check_run(read_score_folder(out), [parse_floor("answer_correctness=3.5")], pipeline="P2", point=True)
    assert not no.passed and no.judge_verdict == "unchecked" and "has 6 questions" in no.refused
    assert "the judge stub-judge at" in no.refused and "--trust-judge" in no.refused
    for ref in (out, recorded.run_id):
        run = resolve_run(ref, hist)
        (point,) = check_run(run, [parse_floor("answer_correctness=3.5")], pipeline="P2", point=True, trust_judge=True)
        assert point.passed and point.value == pytest.approx(sum(judged) / 5) and point.basis == "mean"
        assert (point.judged, point.judgeable) == (5, 6)
        (low,) = check_run(run, [parse_floor("answer_correctness=3.5")], pipeline="P2", trust_judge=True)
        ci = stats.bootstrap_ci(judged, n_resamples=2000, seed=stats.DEFAULT_SEED)
        assert (low.ci_low, low.ci_high, low.n) == (ci.low, ci.high, 5) and low.value == ci.low
        assert low.interval == "bootstrap of the mean (recorded)" and low.passed == (ci.low >= 3.5)
    code, text, _ = cli(["check", out, "--min", "answer_correctness=3.5", "--point", "-p", "P2"], capsys)
    assert code == 1 and "FAIL answer_correctness >= 3.5: mean 4.200; judged 5 of 6; not gated:" in text
    code, text, _ = cli(["check", out, "--min", "answer_correctness=3.5", "--point", "-p", "P2", "--trust-judge"],
                        capsys)
    assert code == 0 and "PASS answer_correctness >= 3.5: mean 4.200" in text and "judged 5 of 6" in text
    code, text, _ = cli(["check", recorded.run_id, "--history", hist, "--min", "answer_correctness=4.5",
                         "--point", "--trust-judge"], capsys)
    assert code == 1 and "FAIL answer_correctness >= 4.5: mean 4.200" in text and "[P2]" in text
    assert "PASS answer_correctness >= 4.5: mean 5.000" in text and "[P1]" in text


def test_a_floor_outside_a_score_metrics_values_is_refused(stub, tmp_path, capsys):
    """A judge mean lies on its scale (answer_correctness 1-5), a text metric and a pass rate in [0, 1]: a floor
    outside is an error naming --min, not a check every pipeline fails."""
    out = tmp_path / "out"
    code, _, err = cli(_score(stub, tmp_path, write_jsonl(tmp_path / "a.jsonl", ANSWERS), "--out", out,
                              "--no-history"), capsys)
    assert code == 0, err
    run = read_score_folder(out)
    for bad, scale in (("answer_correctness=50", "from 0 to 5"), ("answer_correctness_pass=80", "from 0 to 1"),
                       ("chrf=50", "from 0 to 1")):
        with pytest.raises(InputError) as info:
            check_run(run, [parse_floor(bad)], point=True, trust_judge=True)
        assert info.value.field == "--min" and scale in str(info.value), bad
    assert check_run(run, [parse_floor("answer_correctness=4.5")], point=True, trust_judge=True)


def test_score_exits_nonzero_when_coverage_is_too_low(stub, tmp_path, capsys):
    partial = _tagged_answers(tmp_path, {"q4": "bad_json"})
    code, text, _ = cli(_score(stub, tmp_path, partial, "--no-history", "--min-coverage", "0.9"), capsys)
    assert code == 1 and "answer_correctness of 'P2': judged 5 of 6 judgeable (83%), below --min-coverage 0.9" in text
    assert "answer_correctness of 'P1'" not in text  # P1 judged 5 of 5
    code, _, err = cli(_score(stub, tmp_path, partial, "--no-history", "--min-coverage", "0.8"), capsys)
    assert code == 0, err
    # nothing judged at all: non-zero without --min-coverage, after writing the outputs
    nothing = write_jsonl(tmp_path / "none.jsonl", [dict(a, answer=a["answer"] + " [[s:bad_json]]")
                                                    for a in ANSWERS])
    out = tmp_path / "zero"
    code, text, _ = cli(_score(stub, tmp_path, nothing, "--no-history", "--out", out), capsys)
    assert code == 1 and "nothing was judged: 0 of 11 judgments succeeded" in text
    assert json.loads((out / "score.json").read_text(encoding="utf-8"))["results"]["P2"]["metrics"][
        "answer_correctness"] is None
    # a bad floor or one without a judge fails before any request
    n = stub.count()
    code, _, err = cli(_score(stub, tmp_path, partial, "--min-coverage", "1.5"), capsys)
    assert code == 2 and "fraction from 0 to 1" in err
    code, _, err = cli(["score", "--qa", "it_helpdesk", "--answers", "it_helpdesk", "--min-coverage", "0.5"], capsys)
    assert code == 2 and "--judge-model" in err
    assert stub.count() == n


def test_coverage_is_judged_of_judgeable_an_answer_that_declines_is_not_applicable(stub, tmp_path, capsys):
    """E4: P1's q7 declines ("문서에서 찾을 수 없습니다."): faithfulness has no claim to check (no_claims, not
    applicable), so it is not judgeable -- P1 is judged 6 of 6, not 6 of 7 (86%) below --min-coverage 0.9; the
    declining answer is counted apart in score.json, the console, show, the HTML and what check prints."""
    from ragexam.report.sections import judge as judge_html

    out = tmp_path / "out"
    answers = write_jsonl(tmp_path / "a.jsonl", ANSWERS)
    code, text, err = cli(_score(stub, tmp_path, answers, "--no-history", "--out", out, "--min-coverage", "0.9",
                                 "--metric", "faithfulness"), capsys)
    assert code == 0, text + err
    data = json.loads((out / "score.json").read_text(encoding="utf-8"))
    st = data["judge"]["summary"]["P1"]["faithfulness"]
    assert (st["n"], st["n_judged"], st["n_not_applicable"], st["coverage"]) == (6, 6, 1, 1.0)
    assert st["unjudged"] == {"no_claims": 1}
    assert data["results"]["P1"]["coverage"]["faithfulness"] == {"n": 6, "n_judged": 6, "n_not_applicable": 1}
    flat = " ".join(text.split())
    assert "6/6 (100%); 1 n/a" in flat
    assert "P1 faithfulness: 1 not applicable (no_claims: the answer makes no factual claim (e.g. it declines))" \
        in flat
    code, shown, _ = cli(["show", out], capsys)
    assert "6/6 (100%); 1 n/a" in " ".join(shown.split())
    code, gate, _ = cli(["check", out, "--min", "faithfulness=0.1", "--trust-judge", "-p", "P1"], capsys)
    assert "judged 6 of 6" in gate
    html = judge_html(read_score_folder(out).score.judge, lambda p: "")
    assert ">6/6<br><small>1 not applicable</small>" in html and "counted apart" in html


def test_corpus_bleu_interval_contains_the_corpus_score(tmp_path, capsys):
    """The issue's case: bundled answers, ``--min bleu``.  The interval is the bootstrap of corpus BLEU
    itself; the old one (of the mean sentence BLEU) does not even contain the corpus score."""
    from ragexam.data import load_qa
    from ragexam.analysis.answers.files import load_answers
    from ragexam.metrics.text import bleu_scores, bleu_stats, chrf_scores, chrf_stats

    out, hist = tmp_path / "s", tmp_path / "h.db"
    code, _, err = cli(["score", "--qa", "it_helpdesk", "--answers", "it_helpdesk", "--out", out, "--history", hist,
                        "--list", "0"], capsys)
    assert code == 0, err
    score = json.loads((out / "score.json").read_text(encoding="utf-8"))
    qa = load_qa("it_helpdesk")
    answers = {a.query_id: a.answer for a in load_answers("it_helpdesk")}
    use = [q for q in qa if q.answerable and q.query_id in answers]
    hyps, refs = [answers[q.query_id] for q in use], [q.ground_truth for q in use]
    direct = {"bleu": stats.bootstrap_sums_ci(bleu_stats(hyps, refs, tokenize="ko-kiwi"), bleu_scores, seed=12345),
              "chrf": stats.bootstrap_sums_ci(chrf_stats(hyps, refs), chrf_scores, seed=12345)}
    (entry,) = History(hist).list_runs()
    for ref in (out, entry.run_id):
        results = check_run(resolve_run(ref, hist), [parse_floor("bleu=0.3"), parse_floor("chrf=0.3")])
        for r in results:
            assert r.mean == score["text"]["(answers)"][r.metric] == pytest.approx(direct[r.metric].mean, abs=1e-12)
            assert (r.ci_low, r.ci_high) == pytest.approx((direct[r.metric].low, direct[r.metric].high), abs=1e-12)
            assert r.ci_low <= r.mean <= r.ci_high and r.interval == "corpus bootstrap" and r.n == len(use)
    sentence = stats.bootstrap_ci(bleu_scores(bleu_stats(hyps, refs, tokenize="ko-kiwi"), effective_order=True),
                                  seed=12345)
    assert not sentence.low <= score["text"]["(answers)"]["bleu"] <= sentence.high
    code, text, _ = cli(["check", out, "--min", "bleu=0.3"], capsys)
    assert code == 0 and f"mean {direct['bleu'].mean:.3f}, 95% CI {direct['bleu'].low:.3f}–" in text


def test_a_score_folder_of_the_previous_format(stub, tmp_path, capsys):
    """A ``ragexam-score/1`` folder (no results, no ok, no stats): judge metrics are read from their
    ``<metric>_score`` columns; corpus BLEU has no interval there, so only ``--point`` works."""
    answers = _tagged_answers(tmp_path, {"q3": "incorrect", "q4": "bad_json"})
    out = tmp_path / "old"
    code, _, err = cli(_score(stub, tmp_path, answers, "--out", out, "--no-history"), capsys)
    assert code == 0, err
    score = json.loads((out / "score.json").read_text(encoding="utf-8"))
    del score["results"], score["kind"]
    score["format"] = "ragexam-score/1"
    (out / "score.json").write_text(json.dumps(score, ensure_ascii=False), encoding="utf-8")
    with open(out / "per_answer.csv", encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    cols = [c for c in rows[0] if c not in ("ok", "stats")]
    with open(out / "per_answer.csv", "w", encoding="utf-8", newline="") as fh:
        w = csv.DictWriter(fh, cols, extrasaction="ignore", lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    run = read_folder(out)
    (r,) = check_run(run, [parse_floor("answer_correctness=3.5")], pipeline="P2")
    assert (r.judged, r.judgeable, r.n) == (5, 6, 5)
    assert r.ci_low == stats.bootstrap_ci([5.0, 5.0, 1.0, 5.0, 5.0], seed=12345).low
    with pytest.raises(Exception, match="--point"):
        check_run(run, [parse_floor("bleu=0.1")], pipeline="P2")
    (b,) = check_run(run, [parse_floor("bleu=0.1")], pipeline="P2", point=True)
    assert b.passed and b.ci_low is None and b.value == score["text"]["P2"]["bleu"]


def test_a_floor_on_a_metric_nothing_was_judged_on_fails(stub, tmp_path, capsys):
    nothing = write_jsonl(tmp_path / "none.jsonl", [dict(a, answer=a["answer"] + " [[s:bad_json]]") for a in ANSWERS])
    out = tmp_path / "zero"
    code, _, _ = cli(_score(stub, tmp_path, nothing, "--no-history", "--out", out), capsys)
    assert code == 1
    for point in (True, False):
        (r,) = check_run(read_folder(out), [parse_floor("answer_correctness=0")], pipeline="P2", point=point)
        assert not r.passed and r.value is None and (r.judged, r.judgeable) == (0, 6)
        assert r.line() == "FAIL answer_correctness >= 0: nothing was judged; judged 0 of 6 [P2]"


def test_ok_share_is_a_share_of_the_decided_answers_and_no_value_without_any(tmp_path, capsys):
    """``ok_share`` counts only answers some verdict decided (judge, --correct-if, abstention rule): without a
    correctness source the 65 answerable answers of it_helpdesk are unjudged, so the share is of the 6
    out-of-corpus ones (4 abstained) -- not 4 of 71 -- and says on how many; a question set without ground truth
    decides nothing: no value, and a floor on it fails saying so."""
    out = tmp_path / "bundled"
    code, _, err = cli(["score", "--qa", "it_helpdesk", "--answers", "it_helpdesk", "--out", out, "--no-history",
                        "--list", "0"], capsys)
    assert code == 0, err
    res = json.loads((out / "score.json").read_text(encoding="utf-8"))["results"]["(answers)"]
    assert res["metrics"]["ok_share"] == pytest.approx(4 / 6)
    assert res["coverage"]["ok_share"] == {"n": 71, "n_judged": 6, "n_not_applicable": 0}
    with open(out / "per_answer.csv", encoding="utf-8") as fh:
        oks = {r["label"]: r["ok"] for r in csv.DictReader(fh)}
    assert oks["unjudged"] == "" and oks["abstained_ok"] == "true" and oks["hallucinated"] == "false"
    (gate,) = check_run(read_score_folder(out), [parse_floor("ok_share=0.5")], point=True)
    assert gate.passed and gate.mean == pytest.approx(4 / 6) and gate.n == 6
    assert "decided 6 of 71" in gate.line()
    code, text, _ = cli(["show", out], capsys)
    assert "0.667 (n 6 decided of 71)" in text

    qa = write_jsonl(tmp_path / "nogt.jsonl", [{"query_id": f"q{i}", "question": f"question {i}?",
                                                "evidence": [f"fact {i}"], "relevant_doc_ids": ["d1"]}
                                               for i in range(3)])
    answers = write_jsonl(tmp_path / "a.jsonl", [{"query_id": f"q{i}", "answer": f"fact {i}"} for i in range(3)])
    out = tmp_path / "nogt"
    code, _, err = cli(["score", "--qa", qa, "--answers", answers, "--out", out, "--no-history"], capsys)
    assert code == 0, err
    res = json.loads((out / "score.json").read_text(encoding="utf-8"))["results"]["(answers)"]
    assert res["metrics"]["ok_share"] is None and res["coverage"]["ok_share"] == {"n": 3, "n_judged": 0,
                                                                                   "n_not_applicable": 0}
    for point in (["--point"], []):
        code, text, err = cli(["check", out, "--min", "ok_share=0.5", *point], capsys)
        assert code == 1 and "FAIL ok_share >= 0.5: no value (no answer was decided); decided 0 of 3" in text, err


def test_the_fix_of_an_unchecked_judge_is_the_one_its_reason_calls_for():
    """A score of traces (no question set) was told 'score again without --no-judge-check', a flag it never used."""
    from types import SimpleNamespace

    from ragexam.analysis.gating.gate import _refusal
    from ragexam.analysis.answers.trusted import NO_SET

    def refusal(text):
        t = SimpleNamespace(gated=False, verdict="unchecked", text=text)
        return _refusal(SimpleNamespace(trust={"faithfulness": t}, model="m", endpoint="http://e"), "faithfulness")[1]

    traces = refusal(f"faithfulness: judge-check {NO_SET}")
    assert "--no-judge-check" not in traces and "pass --qa" in traces and "with what the check needs" in traces
    skipped = refusal("faithfulness: judge-check skipped (--no-judge-check)")
    assert skipped.endswith("score again without --no-judge-check, or --trust-judge to gate anyway")
    # review D4: traced answers scored without --qa, with a check of the judge recorded on another set
    for verdict in ("other_set", "unchecked"):
        t = SimpleNamespace(gated=False, verdict=verdict, text="this judge separates ... (judge-check on another "
                                                               "data set (it_helpdesk, 2026-01-01), not on this one)")
        why = _refusal(SimpleNamespace(trust={"faithfulness": t}, model="m", endpoint="http://e"), "faithfulness",
                       True)[1]
        assert "--no-judge-check" not in why and why.endswith(
            "no question set here: --trust-judge to gate on the judge's opinion anyway, or score again with --qa QA "
            "(a set with evidence and references) and --corpus (or --run) so a judge-check runs")
    t = SimpleNamespace(gated=False, verdict="other_set", text="... (judge-check on another data set (x), not on "
                                                               "this one)")
    other = _refusal(SimpleNamespace(trust={"faithfulness": t}, model="m", endpoint="http://e"), "faithfulness")[1]
    assert "so a judge-check runs on this question set" in other


def test_the_reason_a_metric_was_not_checked_names_it_once():
    """Review E25/T12a: ``answer_correctness: not checked -- answer_correctness: judge-check no corpus …``."""
    from ragexam.storage.score_summary import JudgeTrust

    t = JudgeTrust("answer_correctness", "unchecked", "answer_correctness: judge-check no corpus to build the "
                   "judge-check's contrast set from: pass --run DIR (a run records its corpus) or --corpus")
    assert t.text == ("no corpus to build the judge-check's contrast set from: pass --run DIR (a run records its "
                      "corpus) or --corpus")
    assert JudgeTrust.from_dict(t.to_dict()).text == t.text
    skipped = JudgeTrust("faithfulness", "unchecked", "faithfulness: judge-check skipped (--no-judge-check)")
    assert skipped.text == "judge-check skipped (--no-judge-check)"
    checked = JudgeTrust("faithfulness", "weakly", "this judge separates ... (judge-check on qa.jsonl, run by this "
                                                   "score)")
    assert checked.text.startswith("this judge")


def test_a_floor_on_a_human_corrected_metric_gates_on_the_number_score_says_to_quote(stub, tmp_path, capsys):
    """Review E10: ``score --human`` said to quote the corrected mean 2.626 [1.28-3.97] while ``check`` gated on the
    judge's own 2.258-3.023.  The judge scores P2's correct answers 5; people labelled 6 of them 1, 2 or 3."""
    labels = write_jsonl(tmp_path / "labels.jsonl", [
        {"query_id": q, "pipeline": "P2", "human": {"answer_correctness": v}}
        for q, v in zip(["q1", "q2", "q3", "q4", "q5", "q6"], [1, 2, 3, 1, 2, 3])])
    out = tmp_path / "out"
    code, _, err = cli(_score(stub, tmp_path, write_case(tmp_path)[2], "--out", out, "--human", labels,
                              "--no-history"), capsys)
    assert code == 0, err
    run = read_score_folder(out)
    hc = run.score.judge.ppi["P2"]["answer_correctness"]
    kind, mean, (lo, hi) = hc.preferred
    for trust in (False, True):  # the labels anchor it: the judge's unchecked verdict does not refuse it
        (g,) = check_run(run, [parse_floor("answer_correctness=1")], pipeline="P2", trust_judge=trust)
        assert (g.mean, g.ci_low, g.ci_high, g.value) == (mean, lo, hi, lo) and g.refused is None
        assert g.judge_mean == pytest.approx(5.0) and g.judge_mean != g.mean and g.passed == (lo >= 1)
    code, text, _ = cli(["check", out, "--min", "answer_correctness=3", "-p", "P2"], capsys)
    text = " ".join(text.split())
    assert code == 1 and f"FAIL answer_correctness >= 3: ci95 lower bound {lo:.3f}" in text
    assert "human label" in text and "as `score --human` says to quote (judge alone 5.000" in text
    (p1,) = check_run(run, [parse_floor("answer_correctness=1")], pipeline="P1", trust_judge=True)
    assert p1.human is None  # no labels on P1: the judge's own interval, as before


def test_no_judge_check_reads_a_check_recorded_on_the_same_set_and_none_else(stub, tmp_path, capsys):
    """Review E11, as docs/judge.md now says: ``--no-judge-check`` runs no check; one recorded earlier for this judge
    on this question set is read (and gated on), and without one the metric reads ``not checked`` (not gated)."""
    def score(out, *extra):
        code, _, err = cli(["score", "--qa", "it_helpdesk", "--answers", "it_helpdesk", "--judge-model", "stub-judge",
                            "--base-url", stub.base_url, "--api-key", "x", "--cache-dir", tmp_path / "cache",
                            "-m", "answer_correctness", "--no-history", "--list", "0", "--out", out, *extra], capsys)
        assert code == 0, err
        return read_score_folder(out)

    floor = [parse_floor("answer_correctness=1")]
    first = score(tmp_path / "a", "--no-judge-check")
    t = first.score.judge.trust["answer_correctness"]
    assert t.verdict == "unchecked" and t.text == "judge-check skipped (--no-judge-check)"
    (g,) = check_run(first, floor)
    assert not g.passed and g.refused.endswith("score again without --no-judge-check, or --trust-judge to gate anyway")
    score(tmp_path / "b")  # runs the judge-check and records it
    again = score(tmp_path / "c", "--no-judge-check")
    t = again.score.judge.trust["answer_correctness"]
    assert t.verdict != "unchecked" and "(judge-check on it_helpdesk, " in t.text
    (g,) = check_run(again, floor)
    assert (g.refused is None) == t.gated




def test_show_gives_the_ok_share_its_own_n_not_the_rows_answerable_questions():
    """E16: ``show``'s text row is over the answerable questions (n = 33); its ok share is over every decided
    answer (36, out-of-corpus ones too): the cell says its own n."""
    from ragexam.report.console import _ok_share
    from ragexam.storage.score_summary import Coverage, ScoreResult

    assert _ok_share(0.361, ScoreResult(n=33, coverage={"ok_share": Coverage(36, 36)})) == "0.361 (n 36)"
    assert _ok_share(0.3, ScoreResult(n=33, coverage={"ok_share": Coverage(36, 30)})) == "0.300 (n 30 decided of 36)"
    assert _ok_share(None, ScoreResult(n=33, coverage={"ok_share": Coverage(36, 0)})) == "-"
