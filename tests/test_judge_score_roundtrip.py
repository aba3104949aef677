"""Judge metrics through ``score_answers`` into the score's outputs: a custom rubric file -> metric -> score.json,
per_answer.csv, the history, ``check``, the console; intervals and pass rates in every table; the judge beside
the evidence; pairwise answers of two pipelines."""

from __future__ import annotations

import csv
import io
import json

import pytest
from rich.console import Console

from test_check_scores import _tagged_answers
from test_judge_stub import API_KEY, start_stub
from test_score_fixtures import write_case

from ragexam import stats
from ragexam.analysis.answers.files import load_answers
from ragexam.analysis.gating.gate import check_run, parse_floor
from ragexam.analysis.answers.pairwise import pairwise_answers
from ragexam.analysis.gating.history import record_score
from ragexam.analysis.answers.scoring import save_score, score_answers
from ragexam.data.loaders import load_qa
from ragexam.metrics.judge import Judge, load_rubric
from ragexam.report.console import print_score_summary
from ragexam.report.console_judge import print_pairwise
from ragexam.storage.history import resolve_run
from ragexam.storage.runfolder import read_folder, read_score_folder

RUBRIC = """
name: politeness
version: 1
language: ko
criteria: 답변이 직원에게 공손하고 해야 할 일을 분명히 알려 주는지 평가합니다.
inputs: [question, answer]
scale:
  1: 무례하거나 알 수 없다
  2: 거칠다
  3: 보통이다
  4: 공손하다
  5: 공손하고 분명하다
pass: 4
"""


@pytest.fixture
def stub():
    s, shutdown = start_stub()
    yield s
    shutdown()


def _judge(stub, tmp_path, **kw):
    return Judge("stub-judge", base_url=stub.base_url, api_key=API_KEY, cache_dir=str(tmp_path / "cache"),
                 backoff=0.0, max_retries=0, max_attempts=1, **kw)


def _render(fn, *args) -> str:
    buf = io.StringIO()
    fn(*args, Console(file=buf, width=250, color_system=None))
    return buf.getvalue()


def test_custom_rubric_round_trip(stub, tmp_path):
    path = tmp_path / "polite.yaml"
    path.write_text(RUBRIC, encoding="utf-8")
    metric = load_rubric(path)
    qa, _, _, run = write_case(tmp_path)
    # P2: q3 gets a reply outside the scale (unjudged invalid_reply), the others score 4 (pass)
    answers = _tagged_answers(tmp_path, {"q3": "range"})
    judge = _judge(stub, tmp_path, custom=[metric])
    report = score_answers(load_qa(qa), load_answers(answers), run=read_folder(run), judge=judge,
                           judge_metrics=["politeness", "answer_correctness"], seed=99)
    s = report.judge_summary("P2", "politeness")
    assert (s.n, s.n_judged, s.unjudged) == (8, 7, {"invalid_reply": 1}) and s.mean == 4.0 and s.pass_rate == 1.0
    # score.json: the summary with intervals, the rubric's hash and source, the pass rule
    d = report.to_dict()
    sig = d["judge"]["signatures"]["politeness"]
    assert f"rubric:politeness/ko/v1@{metric.rubric('ko').sha}|pass:>=4|" in sig
    assert d["judge"]["rubrics"]["politeness"]["source"] == str(path)
    assert d["judge"]["definitions"]["politeness"]["pass"] == "score >= 4"
    assert d["settings"]["judge"]["rubrics"] == [str(path)] and d["settings"]["seed"] == 99
    res = d["results"]["P2"]
    assert res["metrics"]["politeness"] == 4.0 and res["metrics"]["politeness_pass"] == 1.0
    assert res["coverage"]["politeness"] == {"n": 8, "n_judged": 7, "n_not_applicable": 0}
    from ragexam.metrics.judge.results import mean_interval

    # every judged answer scored 4: no spread to bootstrap -- Wilson's interval of 4's place on the scale, not [4, 4]
    (lo, hi), _, note = mean_interval([4.0] * 7, 99, 2000, tuple(metric.score_range))
    assert res["ci95"]["politeness"] == [lo, hi] and lo < 4.0 < hi and "every judged item scored 4" in note
    # answer_correctness has a real interval: the bootstrap of its judged scores with the score's seed
    ac = [r.judge["answer_correctness"].score for r in report.rows if r.pipeline == "P2"
          and "answer_correctness" in r.judge and r.judge["answer_correctness"].judged]
    ci, _, _ = mean_interval(ac, 99, 2000, (1.0, 5.0))  # the bootstrap, or Wilson's when every score is the same
    assert res["ci95"]["answer_correctness"] == list(ci)
    # the folder: per_answer.csv has the pass column; read back, check gates on it
    out = save_score(report, tmp_path / "score")
    with open(out / "per_answer.csv", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert {r["politeness_pass"] for r in rows if r["pipeline"] == "P2"} == {"1", ""}
    folder = read_score_folder(out)
    assert folder.row("P2", "q1").value("politeness_pass") == 1.0
    assert folder.row("P2", "q3").value("politeness") is None
    # a rubric that judges the answer alone: no judge-check can measure it, so check does not gate on it unless told
    (no,) = check_run(folder, [parse_floor("politeness_pass=0.6")], pipeline="P2")
    assert not no.passed and no.judge_verdict == "no_contrast" and "--trust-judge" in no.refused
    (g,) = check_run(folder, [parse_floor("politeness_pass=0.6")], pipeline="P2", trust_judge=True)
    assert g.passed and g.judged == 7 and g.judgeable == 8 and g.interval == "Wilson interval (recorded)"
    (g9,) = check_run(folder, [parse_floor("politeness_pass=0.9")], pipeline="P2", trust_judge=True)
    assert not g9.passed and round(g9.value, 3) == 0.646  # 7 passes of 7 cannot show 0.9: Wilson's lower end
    # the history keeps it too
    hist = tmp_path / "h.db"
    rid = record_score(report, None, hist)
    (g2,) = check_run(resolve_run(rid, hist), [parse_floor("politeness=4.5")], pipeline="P2", trust_judge=True)
    assert not g2.passed and g2.value == lo
    # the console shows the custom metric with its interval, pass rate and pass rule
    text = _render(print_score_summary, json.loads((out / "score.json").read_text(encoding="utf-8")))
    line = next(ln for ln in text.splitlines() if "politeness" in ln and " P2 " in ln)
    assert f"{lo:.2f}–{hi:.2f}" in line and "7/8" in line and "invalid_reply: 1" in line
    assert "politeness: score >= 4" in text and f"politeness/ko/v1@{metric.rubric('ko').sha}" in text


def test_intervals_repeats_and_evidence_in_the_tables(stub, tmp_path):
    qa, _, _, run = write_case(tmp_path)
    answers = _tagged_answers(tmp_path, {"q1": "flip"})
    report = score_answers(load_qa(qa), load_answers(answers), run=read_folder(run), judge=_judge(stub, tmp_path),
                           judge_metrics=["answer_correctness", "context_precision", "context_recall",
                                          "context_relevance"], repeat=2)
    d = report.to_dict()["judge"]
    ac = d["summary"]["P2"]["answer_correctness"]
    assert ac["ties"] == 1 and ac["n_repeated"] == ac["n_judged"] and ac["flip_share"] == pytest.approx(1 / ac["n_judged"])
    vs = {c["judge_metric"]: c for c in d["vs_evidence"]["P2"]}
    assert set(vs) == {"context_precision", "context_recall", "context_relevance"}
    # the evidence twins are computed from the same contexts: recompute one by hand
    row = next(r for r in report.rows if r.pipeline == "P2" and r.evidence)
    flags = row.evidence["flags"]
    assert len(flags) == len(row.contexts) and row.evidence["evidence_hit"] == float(any(flags))
    assert vs["context_relevance"]["judge_value"] == "pass rate" and 0 <= vs["context_recall"]["agree"] <= 1
    text = _render(print_score_summary, report.to_dict())
    assert "flipped" in text and "ties" in text and "the judge beside the evidence" in text
    assert "evidence_precision" in text and "judge agreement with itself over 2 repeats" in text


def test_pairwise_answers_of_two_pipelines(stub, tmp_path):
    qa, _, answers, _ = write_case(tmp_path)
    recs = load_answers(answers)
    pr = pairwise_answers(load_qa(qa), recs, _judge(stub, tmp_path), a="P1", b="P2")
    s = pr.summary()
    assert s.n == len(load_qa(qa)) and s.n_judged + sum(s.unjudged.values()) == s.n
    # the scripted judge ties every untagged pair: both orders say tie
    assert s.counts["tie"] == s.n_judged and s.preference_b == 0.0
    text = _render(print_pairwise, pr.to_dict())
    assert "B preferred" in text and "first-shown answer won" in text and "|orders:both|" in text
    with pytest.raises(Exception) as ei:
        pairwise_answers(load_qa(qa), recs, _judge(stub, tmp_path), a="P1", b="P9")
    assert "no answers of pipeline 'P9'" in str(ei.value)


# --- the command line ---------------------------------------------------------------------------------
def _cli(argv, capsys):
    from ragexam.cli import main

    with pytest.raises(SystemExit) as ei:
        main([str(a) for a in argv])
    out = capsys.readouterr()
    return ei.value.code, out.out, out.err


def test_score_with_a_rubric_file_and_pairwise_on_the_command_line(stub, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    rubric = tmp_path / "polite.yaml"
    rubric.write_text(RUBRIC, encoding="utf-8")
    qa, _, answers, run = write_case(tmp_path)
    base = ["score", "--qa", qa, "--answers", answers, "--run", run, "--judge-model", "stub-judge", "--base-url",
            stub.base_url, "--cache-dir", tmp_path / "cache", "--rubric", rubric, "--no-history"]
    code, text, err = _cli(base + ["--dry-run", "--json"], capsys)
    plan = json.loads(text)
    assert code == 0 and set(plan["by_metric"]) == {"context_relevance", "faithfulness", "answer_correctness",
                                                      "abstention", "politeness"}
    code, text, err = _cli(base + ["--metric", "politeness", "--metric", "context_recall", "--json"], capsys)
    d = json.loads(text)
    assert code == 0 and list(d["judge"]["summary"]["P1"]) == ["politeness", "context_recall"]
    assert d["results"]["P1"]["metrics"]["politeness_pass"] == 1.0
    code, text, err = _cli(base + ["--metric", "politeness"], capsys)
    assert code == 0 and "95% CI" in text and "pass rate" in text and "politeness: score >= 4" in text
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: Bad Name\n", encoding="utf-8")
    code, _, err = _cli(base[:-3] + ["--rubric", bad, "--no-history"], capsys)
    assert code == 2 and "bad.yaml" in err and "field 'name'" in err
    out = tmp_path / "pairs.json"
    pw = ["pairwise", "--qa", qa, "--answers", answers, "--a", "P1", "--b", "P2", "--judge-model", "stub-judge",
          "--base-url", stub.base_url, "--cache-dir", tmp_path / "cache"]
    code, text, _ = _cli(pw + ["--dry-run", "--json"], capsys)
    assert code == 0 and json.loads(text)["by_metric"]["pairwise"]["total"] == 2 * len(load_qa(qa))
    code, text, _ = _cli(pw + ["--out", out], capsys)
    assert code == 0 and "B preferred" in text and json.loads(out.read_text(encoding="utf-8"))["b"] == "P2"


def test_html_report_shows_the_judge_with_intervals(stub, tmp_path):
    from ragexam.analysis.gating.history import score_report_inputs
    from ragexam.report.html import write_report

    qa, _, _, run = write_case(tmp_path)
    answers = _tagged_answers(tmp_path, {"q3": "incorrect"})
    folder = read_folder(run)
    report = score_answers(load_qa(qa), load_answers(answers), run=folder, judge=_judge(stub, tmp_path),
                           judge_metrics=["answer_correctness", "context_precision"])
    summary, per_question, shown = score_report_inputs(folder, report)
    html = write_report(summary, per_question, tmp_path / "r.html", answers=shown).read_text(encoding="utf-8")
    s = report.judge_summary("P2", "answer_correctness")
    assert '<section id="judge"><h2>LLM judge</h2>' in html and "The judge beside the evidence" in html
    ci = f"{s.ci95[0]:.3f}–{s.ci95[1]:.3f}"
    pci = f"{s.pass_ci95[0]:.3f}–{s.pass_ci95[1]:.3f}"
    assert ci in html and pci in html and f"{s.n_judged}/{s.n}" in html
    # E15: the judge beside the evidence says what its value is measured on (its n: the answers with evidence)
    vs = report.summary.judge.vs_evidence["P2"][0]
    assert "answers with evidence" in html and f'<td class="num">{vs.n}</td>' in html
    assert "not over every answer as in the judge&#x27;s table above" in html or \
        "not over every answer as in the judge's table above" in html
    # E20: a missed question's judge verdict shows its score formatted, never a raw float
    import re

    verdicts = re.findall(r"<dt>judge</dt><dd>([^<]*)</dd>", html)
    assert verdicts and all(re.fullmatch(r"[a-z_]+ · \d+\.\d{3}", v) for v in verdicts), verdicts
