"""The judge's measured trust beside every judged number (issue 37 item 4, issue 41 points 2-4):

* ``score`` runs a judge-check on a seeded sample when none of this judge, rubric, scoring and question set is
  recorded (its calls in ``--dry-run``; ``--no-judge-check`` skips it) and puts the verdict beside each judged
  metric: console, ``--json``, the score folder, ``show``, the HTML report, serve's score page, ``compare``;
* a judge that gives every item the same score "does not separate", with no extra command, and ``check --min`` on
  it exits 1 naming the judge and the fix; with the stub judge it separates and ``check`` gates as before;
* the judge beside the evidence of these answers overrules, with no extra call (41.2);
* the gate honours "too few" (no interval, no pass on a lower bound);
* PPI estimates take the judge's place in the tables when human labels exist, marked; probability means are named
  with the written mean beside them in the report and serve (41.3);
* run tables draw Wilson's interval (or none) where the bootstrap would read as certainty (41.4).
"""

from __future__ import annotations

import html
import json
import re

import pytest

from test_cli_pipelines import cli as _cli

from ragexam.cli import main
from ragexam.testing.stub import StubEndpoint, metric_of, synthetic_logprobs

CORRECTNESS, RELEVANCE = "answer_correctness", "context_relevance"


class FlatJudge(StubEndpoint):
    """The stub judge, except that every item of ``flat`` metrics gets the same score (``3``, or a relevance of 3
    for every context): a judge that cannot tell good from bad on them."""

    def __init__(self, flat=(CORRECTNESS,)):
        super().__init__()
        self.flat = set(flat)

    def _chat(self, body):
        out = super()._chat(body)
        metric = metric_of(body)
        if metric in self.flat:
            reply = json.loads(out["choices"][0]["message"]["content"])
            if "scores" in reply:
                reply["scores"] = [3 for _ in reply["scores"]]
                reply["average"] = 3
            else:
                reply["score"] = 3
            content = json.dumps(reply, ensure_ascii=False)
            out["choices"][0]["message"]["content"] = content
            if body.get("logprobs"):
                out["choices"][0]["logprobs"] = {"content": synthetic_logprobs(content)}
        return out


def _score(ep, tmp_path, capsys, *extra, model="judge-x"):
    return _cli(["score", "--qa", "it_helpdesk", "--answers", "it_helpdesk", "--judge-model", model, "--base-url",
                 ep.base_url, "--api-key", "x", "--cache-dir", tmp_path / "cache", "--no-history", *extra], capsys)


def _chat_calls(ep):
    return sum(n for path, n in ep.counts.items() if path.endswith("/chat/completions"))


def test_a_flat_judge_does_not_separate_and_check_refuses_to_gate_on_it(tmp_path, capsys, monkeypatch):
    """Issue 37's Done-when, both halves."""
    monkeypatch.setenv("COLUMNS", "200")
    with FlatJudge() as flat:
        code, text, err = _score(flat, tmp_path, capsys, "-m", CORRECTNESS, "--out", tmp_path / "flat",
                                 model="flat-judge")
    assert code in (0, None), err
    assert f"{CORRECTNESS}: no -- this judge does not separate correct answers" in text
    assert "read its numbers as the judge's opinion, not a measurement" in text
    assert re.search(rf"{CORRECTNESS} \(expected score\).*\bno\b", text)  # the table's column too
    code, text, _ = _cli(["check", tmp_path / "flat", "--min", f"{CORRECTNESS}=1"], capsys)
    text = " ".join(text.split())
    assert code == 1 and f"FAIL {CORRECTNESS} >= 1:" in text
    assert "the judge flat-judge at http://127.0.0.1:" in text and "does not separate" in text
    assert "a stronger --judge-model, or --trust-judge to gate anyway" in text
    code, text, _ = _cli(["check", tmp_path / "flat", "--min", f"{CORRECTNESS}=1", "--trust-judge"], capsys)
    assert code == 0 and f"PASS {CORRECTNESS} >= 1" in text
    # the stub judge separates, and check gates on it as before: a low floor passes, a high one fails on the number
    with StubEndpoint() as stub:
        code, text, err = _score(stub, tmp_path, capsys, "-m", CORRECTNESS, "--out", tmp_path / "stub",
                                 model="stub-judge")
    assert code in (0, None), err
    assert f"{CORRECTNESS}: yes -- this judge separates correct answers" in text
    code, text, _ = _cli(["check", tmp_path / "stub", "--min", f"{CORRECTNESS}=1", "--min", f"{CORRECTNESS}=4.9"],
                         capsys)
    assert code == 1 and f"PASS {CORRECTNESS} >= 1: ci95 lower bound" in text
    assert f"FAIL {CORRECTNESS} >= 4.9: ci95 lower bound" in text and "not gated" not in text
    # the verdicts are in the folder's typed summary and in show
    from ragexam.storage.runfolder import read_score_folder

    t = read_score_folder(tmp_path / "flat").score.judge.trust[CORRECTNESS]
    assert t.verdict == "does_not" and t.check is not None and t.check.ran and t.check.n_questions >= 10
    code, text, _ = _cli(["show", tmp_path / "flat"], capsys)
    assert "Is the judge worth reading?" in text and f"{CORRECTNESS}: no -- this judge does not separate" in text


def test_the_check_runs_once_and_dry_run_prices_it_and_no_judge_check_skips_it(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    with StubEndpoint() as ep:
        code, text, _ = _score(ep, tmp_path, capsys, "-m", CORRECTNESS, "--dry-run")
        assert code in (0, None) and _chat_calls(ep) == 0  # nothing sent
        assert "and the judge-check of answer_correctness on a seeded sample of 20 questions of it_helpdesk" in text
        assert re.search(r"in all: \d+ calls to make", text)
        code, out, _ = _score(ep, tmp_path, capsys, "-m", CORRECTNESS, "--dry-run", "--json")
        plan = json.loads(out)
        assert plan["judge_check"]["calls"] > 0 and plan["calls"] > 0
        code, out, _ = _score(ep, tmp_path, capsys, "-m", CORRECTNESS, "--no-judge-check", "--json")
        report = json.loads(out)
        judging = report["judge"]["usage"]["calls"]
        assert _chat_calls(ep) == judging + 1  # the judging and the scoring probe: no check
        t = report["judge"]["trust"][CORRECTNESS]
        assert t["verdict"] == "unchecked" and "skipped (--no-judge-check)" in t["text"]
        before = _chat_calls(ep)
        code, out, _ = _score(ep, tmp_path, capsys, "-m", CORRECTNESS, "--json")
        first = _chat_calls(ep) - before
        assert json.loads(out)["judge"]["trust"][CORRECTNESS]["verdict"] == "separates"
        assert any("judge-check of judge-x on a seeded sample of 20 questions" in n for n in json.loads(out)["notes"])
        # recorded: the next score pays nothing for it, and the dry run says there is nothing to send
        before = _chat_calls(ep)
        code, out, _ = _score(ep, tmp_path, capsys, "-m", CORRECTNESS, "--json")
        assert _chat_calls(ep) - before < first and not any("calls made" in n for n in json.loads(out)["notes"])
        again = json.loads(out)["judge"]["trust"][CORRECTNESS]
        assert again["verdict"] == "separates" and not again["check"]["ran"]
        code, text, _ = _score(ep, tmp_path, capsys, "-m", CORRECTNESS, "--dry-run")
        assert "judge-check: nothing to send -- recorded on it_helpdesk" in text


@pytest.fixture(scope="module")
def helpdesk_run(tmp_path_factory):
    """A BM25 run over the bundled IT-helpdesk set (the contexts the answers are judged on)."""
    import ragexam

    folder = tmp_path_factory.mktemp("trust-run")
    ragexam.run("it_helpdesk", "it_helpdesk", ["bm25"], ["paragraphs:400"], progress=False, n_resamples=200,
                n_permutations=200, cache_dir=folder / "cache").save(folder / "run")
    return folder / "run"


def test_the_judge_beside_the_evidence_overrules_with_no_extra_call(helpdesk_run, tmp_path, capsys):
    """41.2: a judge that rates every context alike, beside whether each context holds the evidence -- from the
    judgments score made anyway (no judge-check asked for)."""
    with FlatJudge(flat=(RELEVANCE,)) as ep:
        code, out, err = _score(ep, tmp_path, capsys, "-m", RELEVANCE, "--run", helpdesk_run, "--no-judge-check",
                                "--json")
        calls = _chat_calls(ep)
    assert code in (0, None), err
    report = json.loads(out)
    t = report["judge"]["trust"][RELEVANCE]
    assert t["verdict"] == "does_not" and t["check"] is None and t["evidence"]["n_questions"] >= 10
    assert "beside the evidence of these answers" in t["text"] and "no extra call" in t["text"]
    assert calls == report["judge"]["usage"]["calls"] + 1  # the judging and the probe, nothing more
    assert any(n.startswith(f"{RELEVANCE}: beside the evidence") and "not a measurement" in n
               for n in report["notes"])


def test_the_gate_honours_too_few_for_an_interval(tmp_path, capsys):
    """A judge mean over fewer than 5 judged answers has no interval: no floor on its lower bound can pass."""
    from ragexam.analysis.gating.gate import check_run, parse_floor
    from ragexam.storage.runfolder import read_score_folder

    answers = tmp_path / "four.jsonl"
    answers.write_text("".join(json.dumps({"query_id": f"hq_00{i}", "answer": "모르겠습니다."}) + "\n"
                               for i in range(1, 5)), encoding="utf-8")
    with StubEndpoint() as ep:
        code, _, err = _cli(["score", "--qa", "it_helpdesk", "--answers", answers, "--judge-model", "m", "--base-url",
                             ep.base_url, "--api-key", "x", "--cache-dir", tmp_path / "c", "--no-history", "-m",
                             CORRECTNESS, "--out", tmp_path / "s"], capsys)
    assert code in (0, None), err
    run = read_score_folder(tmp_path / "s")
    (low,) = check_run(run, [parse_floor(f"{CORRECTNESS}=0.5")], trust_judge=True)
    assert not low.passed and low.ci_low is None and "n = 4: too few for an interval" in low.refused
    (point,) = check_run(run, [parse_floor(f"{CORRECTNESS}=0.5")], trust_judge=True, point=True)
    assert point.passed and point.value == point.mean
    code, text, _ = _cli(["check", tmp_path / "s", "--min", f"{CORRECTNESS}=0.5", "--trust-judge"], capsys)
    assert code == 1 and "n = 4: too few for an interval" in text
    # a pass rate keeps Wilson's interval, meaningful on 4 items (0 of 4: [0.00-0.49]), and is gated on it
    (rate,) = check_run(run, [parse_floor(f"{CORRECTNESS}_pass=0.6")], trust_judge=True)
    assert rate.interval == "Wilson interval (recorded)" and rate.ci_high < 0.6 and not rate.passed


@pytest.fixture(scope="module")
def labelled_score(helpdesk_run, tmp_path_factory):
    """A score of the bundled answers on the run, probability-weighted, with human labels of 30 answers."""
    folder = tmp_path_factory.mktemp("trust-score")
    labels = folder / "labels.jsonl"
    labels.write_text("".join(json.dumps({"query_id": f"hq_{i:03d}", "human": {CORRECTNESS: 5 if i % 4 else 2}})
                              + "\n" for i in range(1, 31)), encoding="utf-8")
    with StubEndpoint() as ep, pytest.MonkeyPatch.context() as mp:
        mp.setenv("COLUMNS", "200")
        with pytest.raises(SystemExit):
            main(["score", "--qa", "it_helpdesk", "--answers", "it_helpdesk", "--run", str(helpdesk_run),
                  "--judge-model", "stub-judge", "--base-url", ep.base_url, "--api-key", "x", "--cache-dir",
                  str(folder / "c"), "--no-history", "-m", CORRECTNESS, "-m", "faithfulness", "--human",
                  str(labels), "--out", str(folder / "score"), "--report", str(folder / "report.html")])
    return folder


def test_human_labels_take_the_judges_place_marked_in_console_and_report(labelled_score, capsys, monkeypatch):
    from ragexam.storage.runfolder import read_score_folder

    monkeypatch.setenv("COLUMNS", "220")
    jd = read_score_folder(labelled_score / "score").score.judge
    (pipeline,) = jd.ppi
    human = jd.ppi[pipeline][CORRECTNESS]
    which, value, _ = human.preferred
    n = human.n_labelled
    code, text, _ = _cli(["show", labelled_score / "score"], capsys)
    marked = f"mean: corrected by {n} human labels" if which == "corrected" else f"mean of {n} human labels alone"
    row = next(x for x in text.splitlines() if f"{CORRECTNESS} (expected score; {marked})" in x)
    assert f"{value:.3f}" in row and "the table shows the estimate they support (marked)" in text
    page = (labelled_score / "report.html").read_text(encoding="utf-8")
    word = f"corrected by {n} human labels" if which == "corrected" else f"the {n} human labels' own mean"
    assert f"mean: {word}" in html.unescape(page) and "the table shows the estimate they support" in page


def test_the_report_and_serve_name_probability_means_and_the_trust_verdict(labelled_score):
    """41.3: never a probability mean beside a pass rate of written labels without saying which is which."""
    from starlette.testclient import TestClient

    from ragexam.serve.app import Catalog, create_app
    from ragexam.serve.security import ServeOptions

    page = html.unescape((labelled_score / "report.html").read_text(encoding="utf-8"))
    judge = re.search(r'<section id="judge">.*?</section>', page, re.S).group(0)
    assert "(expected score)" in judge and "(mean P(true))" in judge and ">written<" in judge
    assert "the pass rate always counts the written verdicts" in judge
    assert "Is the judge worth reading?" in judge and 'class="trust separates"' in judge
    opts = ServeOptions(port=8765, lang="en")
    c = TestClient(create_app(Catalog.of([], None, [labelled_score / "score"], None), opts),
                   base_url="http://127.0.0.1:8765")
    served = html.unescape(c.get("/run/f1").text)
    heads = re.search(r'<section id="results">.*?</thead>', served, re.S).group(0)
    assert "expected score" in heads and "pass rate of the written verdicts" in heads
    assert "judge separates? yes" in heads
    assert "Is the judge worth reading?" in served


def test_compare_of_two_scores_says_whose_judge_separates(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    with FlatJudge() as flat:
        _score(flat, tmp_path, capsys, "-m", CORRECTNESS, "--out", tmp_path / "a", "--scoring", "sample",
               model="flat-judge")
    with StubEndpoint() as stub:
        _score(stub, tmp_path, capsys, "-m", CORRECTNESS, "--out", tmp_path / "b", "--scoring", "sample",
               model="stub-judge")
    code, text, _ = _cli(["compare", tmp_path / "a", tmp_path / "b", "-m", CORRECTNESS], capsys)
    assert code in (0, None)
    assert f"{CORRECTNESS} (judge separates? A no, B yes)" in text
    assert f"{CORRECTNESS}: the judge was not shown to separate good from bad in A" in " ".join(text.split())
    code, out, _ = _cli(["compare", tmp_path / "a", tmp_path / "b", "-m", CORRECTNESS, "--json"], capsys)
    assert json.loads(out)["judge_trust"] == {CORRECTNESS: {"A": "does_not", "B": "separates"}}


def test_run_tables_draw_wilson_or_nothing_where_the_bootstrap_reads_as_certainty():
    """41.4 in the tables: 4 of 4 is not [1.00-1.00]; 20 of 20 gets Wilson's; a large set keeps its bootstrap."""
    from rich.console import Console

    from ragexam.report.console_run import _cell
    from ragexam.report.sections import value_cell
    from ragexam.stats.proportion import table_interval, wilson

    assert table_interval([1.0] * 4, (1.0, 1.0)) is None
    assert table_interval([1.0] * 20, (1.0, 1.0)) == pytest.approx(wilson(1.0, 20))
    assert table_interval([1.0] * 20 + [0.0] * 2, (0.8, 1.0)) == pytest.approx(wilson(20 / 22, 22))
    big = [1.0] * 60 + [0.0] * 40
    assert table_interval(big, (0.5, 0.7)) == (0.5, 0.7)  # 100 questions, 40 misses: the bootstrap stays
    assert table_interval([0.5, 0.25, 1.0, 0.0, 0.75, 0.5], (0.2, 0.8)) == (0.2, 0.8)  # not a proportion
    con = Console(width=40, record=True)
    con.print(_cell(1.0, None, 4))
    assert "n = 4: too few" in con.export_text()
    assert "n = 4: too few for an interval" in value_cell(1.0, None, n=4)
    assert "too few" not in value_cell(0.5, [0.4, 0.6], n=40)


def test_the_run_summary_records_no_interval_below_five_questions(tmp_path):
    import ragexam

    from ragexam.data.datasets import bundled_path

    qa = tmp_path / "qa.jsonl"
    lines = [x for x in bundled_path("it_helpdesk", "qa").read_text(encoding="utf-8").splitlines()
             if x.strip() and json.loads(x).get("evidence")][:4]
    qa.write_text("\n".join(lines) + "\n", encoding="utf-8")
    res = ragexam.run("it_helpdesk", str(qa), ["bm25"], progress=False, n_resamples=200, n_permutations=200,
                      cache_dir=tmp_path / "c")
    (r,) = res.summary.results.values()
    assert r.n == 4 and r.ci95["hit@5"] is None and r.metrics["hit@5"] is not None
    folder = res.save(tmp_path / "run")
    # serve says it where the interval would be: the runs list's headline and the run page's table
    from starlette.testclient import TestClient

    from ragexam.serve.app import Catalog, create_app
    from ragexam.serve.security import ServeOptions

    c = TestClient(create_app(Catalog.of([], None, [folder], None), ServeOptions(port=8765, lang="en")),
                   base_url="http://127.0.0.1:8765")
    assert "n = 4: too few for an interval" in html.unescape(c.get("/runs").text)
    scores = re.search(r'<section id="scores">.*?</section>', html.unescape(c.get("/run/f1").text), re.S).group(0)
    assert scores.count("n = 4: too few for an interval") >= len(res.main_metrics)
    ko = TestClient(create_app(Catalog.of([], None, [folder], None), ServeOptions(port=8765, lang="ko")),
                    base_url="http://127.0.0.1:8765")
    assert "n = 4: 구간을 내기에는 너무 적음" in html.unescape(ko.get("/run/f1").text)


def test_the_stub_judge_reads_a_swapped_number_or_a_negated_sentence():
    from ragexam.metrics.judge.stubs import contradicts

    key = "긴급 장애는 접수 후 12시간 이내에 처리합니다."
    assert contradicts("긴급 장애는 접수 후 24시간 이내에 처리합니다.", key)
    assert contradicts("VPN 접속은 사내에서 할 수 없습니다.", "VPN 접속은 사내에서 할 수 있습니다.")
    assert not contradicts("긴급 장애는 접수 후 12시간 이내에 처리합니다.", key)
    assert not contradicts("12시간 안에 처리돼요.", key)  # a paraphrase with the same number
    assert contradicts("VPN은 사용할 수 없습니다, 재부팅하세요.", "VPN은 사용할 수 있습니다, 재부팅하세요.", clauses=True)


def test_traffic_without_a_question_set_says_where_its_judges_verdict_comes_from(tmp_path, capsys):
    """Answers with their own questions (``score --by`` on traces, no ``--qa``): no check can be built; a check of
    the same judge recorded on another set is named as such, never taken for one on these questions."""
    from segments_traffic import ANSWERS

    faith = "faithfulness"
    with StubEndpoint() as ep:
        code, out, err = _score(ep, tmp_path, capsys, "-m", faith, "--json")  # records a check on it_helpdesk
        assert json.loads(out)["judge"]["trust"][faith]["verdict"] == "separates", err
        args = ["score", "--answers", ANSWERS, "--by", "model", "--judge-model", "judge-x", "--base-url", ep.base_url,
                "--api-key", "x", "--no-history", "-m", faith, "--json"]
        code, out, err = _cli(args + ["--cache-dir", tmp_path / "cache"], capsys)
        elsewhere = json.loads(out)["judge"]["trust"][faith]
        code, out, err = _cli(args + ["--cache-dir", tmp_path / "fresh"], capsys)
        fresh = json.loads(out)
    assert code in (0, None), err
    assert elsewhere["verdict"] == "other_set" and "on another data set (it_helpdesk" in elsewhere["text"]
    t = fresh["judge"]["trust"][faith]
    assert t["verdict"] == "unchecked" and "no question set to build it from" in t["text"]
    assert any(w.startswith(f"{faith}: ") for w in fresh["segments"]["warnings"])


def test_the_judge_beside_the_evidence_counts_questions_and_resamples_them_together():
    """Review T2: 54 traced answers of 22 exam questions read "50 questions" and were resampled as independent."""
    from ragexam.analysis.judging.check import evidence_contrast

    rows4, rows3 = [], []
    for i in range(60):  # 60 answers of 12 questions, each answer two contexts: one with evidence, one without
        q = f"exam:q{i % 12}"
        good, bad = (0.9 if i % 12 < 9 else 0.2), (0.1 if i % 12 < 9 else 0.8)
        rows4 += [(f"trace{i}", q, good, True), (f"trace{i}", q, bad, False)]
        rows3 += [(f"trace{i}", good, True), (f"trace{i}", bad, False)]
    clustered = evidence_contrast("context_relevance", "sample", rows4, seed=1)
    flat = evidence_contrast("context_relevance", "sample", rows3, seed=1)
    assert clustered.n_questions == 12 and "60 answers of 12 questions" in clustered.text
    assert flat.n_questions == 60 and "60 questions" in flat.text
    assert clustered.auc.auc == flat.auc.auc and clustered.auc.n_clusters == 12
    # 12 clusters, not 60: the interval is wider (the Wilson floor over 12 alone is wider than over 60)
    assert clustered.auc.high - clustered.auc.low > flat.auc.high - flat.auc.low
