"""``ragexam run`` / ``score`` record themselves in the history and write ``--report`` HTML.

A run is recorded under the ``run_id`` of its summary.json (printed on the console; on stderr with
``--json``, so stdout stays one JSON object), ``runs`` lists it and ``show`` prints it again.  A
score is recorded as kind ``score`` and ``show`` prints its text metrics and attribution tables;
``score --report`` writes the run's report with the answers and the attribution matrix.
"""

from __future__ import annotations

import json
import os
import re
from html import escape
from pathlib import Path

import pytest

from ragexam.cli import main
from ragexam.storage.history import History

RUN = ["run", "--corpus", "it_helpdesk", "--qa", "it_helpdesk", "-r", "bm25", "--n-resamples", "100",
       "--n-permutations", "100"]


def _cli(argv, capsys):
    with pytest.raises(SystemExit) as ex:
        main([str(a) for a in argv])
    out = capsys.readouterr()
    return ex.value.code or 0, out.out, out.err


@pytest.fixture()
def recorded_run(tmp_path, capsys):
    """One bm25 run on the bundled IT-helpdesk set: its folder, report, history and console output."""
    hist = tmp_path / "h.sqlite3"
    out_dir, report = tmp_path / "run", tmp_path / "R.html"
    code, out, err = _cli([*RUN, "--out", out_dir, "--report", report, "--history", hist], capsys)
    assert code == 0, err
    return out_dir, report, hist, out


def test_run_is_recorded_listed_shown_and_reported(recorded_run, capsys):
    out_dir, report, hist, out = recorded_run
    summary = json.loads((out_dir / "summary.json").read_text(encoding="utf-8"))
    run_id = summary["run_id"]
    assert f"Recorded as run {run_id} in {hist}" in out and f"Wrote the HTML report to {report}" in out
    code, listed, _ = _cli(["runs", "--history", hist, "--json"], capsys)
    entries = json.loads(listed)
    assert code == 0 and len(entries) == 1
    assert entries[0]["run_id"] == run_id and entries[0]["kind"] == "run"
    assert entries[0]["n_rows"] == len((out_dir / "per_question.csv").read_text(encoding="utf-8").splitlines()) - 1
    code, shown, _ = _cli(["show", run_id, "--history", hist], capsys)
    assert code == 0 and "Retrieval metrics" in shown and run_id in shown
    code, stored, _ = _cli(["show", "latest", "--history", hist, "--json"], capsys)
    assert code == 0 and json.loads(stored) == summary
    html = report.read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>") and run_id in html


def test_json_stdout_stays_clean_and_default_history_is_the_env_one(capsys):
    code, out, err = _cli([*RUN, "--json"], capsys)
    assert code == 0
    summary = json.loads(out)  # nothing but the JSON object on stdout
    assert f"Recorded as run {summary['run_id']}" in err
    env_hist = Path(os.environ["RAGEXAM_HISTORY"])  # set per test by conftest.py
    assert [e.run_id for e in History(env_hist).list_runs()] == [summary["run_id"]]


def test_no_history_records_nothing(tmp_path, capsys):
    hist = tmp_path / "h.sqlite3"
    code, out, _ = _cli([*RUN, "--no-history", "--history", hist], capsys)
    assert code == 0 and "Recorded" not in out
    assert not hist.exists() and not Path(os.environ["RAGEXAM_HISTORY"]).exists()


def test_score_report_and_record(recorded_run, tmp_path, capsys):
    out_dir, _, hist, _ = recorded_run
    run_id = json.loads((out_dir / "summary.json").read_text(encoding="utf-8"))["run_id"]
    report = tmp_path / "S.html"
    code, out, err = _cli(["score", "--run", out_dir, "--answers", "it_helpdesk", "--qa", "it_helpdesk",
                           "--correct-if", "chrf>=0.5", "--report", report, "--history", hist, "--json"], capsys)
    assert code == 0, err
    score = json.loads(out)  # stdout is only score.json
    html = report.read_text(encoding="utf-8")
    # the attribution matrix replaces the "no stage attribution" note
    assert 'data-plot="attribution"' in html and "No stage attribution in this run" not in html
    for stage in ("retrieval_miss", "generation_miss"):
        assert stage in html
    # the answer text of a missed question (one listed in the run's summary) is in its details
    summary = json.loads((out_dir / "summary.json").read_text(encoding="utf-8"))
    missed = {e["query_id"] for entries in summary["missed"].values() for e in entries}
    answers = {}
    for line in (Path(__file__).parents[1] / "src/ragexam/data/samples/it_helpdesk/answers.jsonl").read_text(
            encoding="utf-8").splitlines():
        rec = json.loads(line)
        answers[rec["query_id"]] = rec["answer"]
    qid = sorted(missed & set(answers))[0]
    assert escape(answers[qid], quote=True) in html
    # recorded as a score, after the run; show prints it
    entries = History(hist).list_runs()
    assert [e.kind for e in entries] == ["score", "run"] and entries[1].run_id == run_id
    score_id = entries[0].run_id
    assert score_id.startswith("score-") and f"Recorded as {score_id}" in err
    assert entries[0].headline_metric == "chrf"
    assert entries[0].headline["bm25 | paragraphs:400"] == pytest.approx(score["text"]["bm25 | paragraphs:400"]["chrf"])
    stored, rows = History(hist).get(score_id)
    assert stored["kind"] == "score" and stored["scored_run"] == run_id
    assert stored["attribution"] == score["attribution"]
    assert len(rows) == 71 and {"chrf", "bleu", "rouge_l"} <= set(rows[0])
    # that question's details show its verdict: the answer's own chrF against the --correct-if threshold
    chrf = next(r for r in rows if r.query_id == qid).value("chrf")
    details = [d for d in re.findall(r'<tr class="detail".*?</tr>', html, re.S)
               if escape(answers[qid], quote=True) in d]
    assert len(details) == 1 and f"<dt>judge</dt><dd>chrf={chrf:.3f}</dd>" in details[0]
    assert f"<dt>stage</dt><dd>{next(e['label'] for e in score['attribution']['questions'] if e['query_id'] == qid)}" \
        in details[0]
    code, shown, _ = _cli(["show", score_id, "--history", hist], capsys)
    assert code == 0
    for text in (score_id, "Text metrics", "Stage attribution: bm25 | paragraphs:400", "generation_miss",
                 f"run {run_id}"):
        assert text in shown, text
    # a score is not a run: `ragexam report` says so
    code, _, err = _cli(["report", score_id, "--history", hist, "--out", tmp_path / "x.html"], capsys)
    assert code == 2 and f"{score_id}: is a recorded score, not a run" in err
    code, _, err = _cli(["report", "latest", "--history", hist, "--out", tmp_path / "x.html"], capsys)
    assert code == 2 and f"latest: is a recorded score ({score_id}), not a run" in err


def test_score_report_needs_a_run(tmp_path, capsys):
    code, _, err = _cli(["score", "--answers", "it_helpdesk", "--qa", "it_helpdesk", "--correct-if", "chrf>=0.5",
                         "--report", tmp_path / "S.html"], capsys)
    assert code == 2 and "--report needs --run DIR" in err
    assert not (tmp_path / "S.html").exists()
    assert not Path(os.environ["RAGEXAM_HISTORY"]).exists()  # nothing scored, nothing recorded


def test_score_without_run_is_recorded_and_no_history_skips(tmp_path, capsys):
    hist = tmp_path / "h.sqlite3"
    code, out, _ = _cli(["score", "--answers", "it_helpdesk", "--qa", "it_helpdesk", "--history", hist,
                         "--list", "0"], capsys)
    assert code == 0 and "Recorded as score-" in out
    (entry,) = History(hist).list_runs()
    stored, _ = History(hist).get(entry.run_id)
    assert entry.kind == "score" and stored["scored_run"] is None
    code, out, _ = _cli(["score", "--answers", "it_helpdesk", "--qa", "it_helpdesk", "--history", hist,
                         "--no-history", "--list", "0"], capsys)
    assert code == 0 and "Recorded" not in out and len(History(hist).list_runs()) == 1
