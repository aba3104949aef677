"""The typed score summary (``ragexam.storage.score_summary.ScoreSummary``): what ``score`` writes and every reader
reads -- a folder's ``score.json`` reads typed and writes back byte for byte, an older format writes back nothing it
lacked, the history's record adds its keys after the summary's, and ``score --report`` puts the typed judge section
and attribution matrices into the run's summary."""

from __future__ import annotations

import io
import json

import pytest
from rich.console import Console

from test_judge_stub import API_KEY, start_stub
from test_score_fixtures import write_case

from ragexam.analysis.answers.files import load_answers
from ragexam.analysis.answers.scoring import save_score, score_answers
from ragexam.data.loaders import load_qa
from ragexam.errors import InputError
from ragexam.metrics.judge import Judge
from ragexam.metrics.verdicts import parse_correct_if
from ragexam.storage.runfolder import read_folder, read_score_folder
from ragexam.storage.score_summary import JudgeSection, JudgeStat, ScoreSummary, StageVerdict
from ragexam.storage.summary import RunSummary


@pytest.fixture(scope="module")
def judged(tmp_path_factory):
    """A score of the handcrafted case with the stub judge, its folder and its run folder."""
    tmp = tmp_path_factory.mktemp("typed")
    qa, _, answers, run = write_case(tmp)
    stub, shutdown = start_stub()
    try:
        judge = Judge("stub-judge", base_url=stub.base_url, api_key=API_KEY, cache_dir=str(tmp / "cache"),
                      backoff=0.0, max_retries=0, max_attempts=1)
        report = score_answers(load_qa(qa), load_answers(answers), run=read_folder(run), judge=judge,
                               judge_metrics=["answer_correctness", "faithfulness", "context_relevance"])
    finally:
        shutdown()
    return report, save_score(report, tmp / "score"), run


def test_a_score_folder_reads_typed_and_writes_back_byte_for_byte(judged):
    report, folder, _ = judged
    text = (folder / "score.json").read_text(encoding="utf-8")
    s = read_score_folder(folder).summary
    assert isinstance(s, ScoreSummary) and s == report.summary
    assert json.dumps(s.to_dict(), ensure_ascii=False, indent=2) + "\n" == text
    # by attribute, every part typed
    p = s.dataset.pipelines[0]
    assert s.results[p].metrics["answer_correctness"] == report.results()[p].metrics["answer_correctness"]
    stat = s.judge.summary[p]["faithfulness"]
    assert isinstance(stat, JudgeStat) and stat.n_judged <= stat.n and isinstance(stat.ci95, tuple)
    assert s.text[p].signatures["bleu"].startswith("nrefs:1|") and s.settings.judge.model == "stub-judge"
    assert isinstance(s.attribution.questions[0], StageVerdict) and s.attribution.by_type[p]
    assert s["results"][p]["metrics"] == s.results[p].metrics  # the JSON view, for code written against it


def test_a_score_of_the_previous_format_writes_back_nothing_it_lacked(judged):
    _, folder, _ = judged
    old = json.loads((folder / "score.json").read_text(encoding="utf-8"))
    del old["results"], old["kind"], old["dataset"]["n_answers"]
    old["format"] = "ragexam-score/1"
    s = ScoreSummary.from_dict(old, source="old")
    assert s.to_dict() == old and list(s.to_dict()) == list(old)
    assert s.results == {} and s.dataset.n_answers is None and s.run_id is None


def test_a_wrong_value_names_its_path(judged):
    _, folder, _ = judged
    bad = json.loads((folder / "score.json").read_text(encoding="utf-8"))
    p = bad["dataset"]["pipelines"][0]
    bad["results"][p]["metrics"]["bleu"] = "high"
    with pytest.raises(InputError) as err:
        ScoreSummary.from_dict(bad, source="score.json")
    assert err.value.source == "score.json" and err.value.field == f"results[{p!r}].metrics['bleu']"


def test_the_history_record_adds_its_keys_after_the_summarys(judged, tmp_path):
    from ragexam.analysis.gating.history import record_score
    from ragexam.storage.history import History

    report, _, run = judged
    run_summary = read_folder(run).summary
    rid = record_score(report, run_summary, tmp_path / "h.db")
    stored = History(tmp_path / "h.db").get(rid).summary
    assert isinstance(stored, ScoreSummary) and stored.run_id == rid
    assert list(stored.to_dict())[-4:] == ["run_id", "scored_run", "config", "pipelines"]
    assert stored.scored_run == run_summary.run_id and stored.config == report.summary.settings.to_dict()
    assert stored.dataset.qa == run_summary.config.qa and stored.pipeline_names == report.pipelines
    # without a run: scored_run is written as null, as it always was
    alone = report.summary.recorded(None)
    assert alone.to_dict()["scored_run"] is None and "run_id" not in report.summary.to_dict()


def test_score_report_puts_the_typed_judge_and_attribution_into_the_runs_summary(judged):
    from ragexam.analysis.gating.history import score_report_inputs
    from ragexam.report.views import RunView

    report, _, run = judged
    summary, rows, answers = score_report_inputs(read_folder(run), report)
    assert isinstance(summary, RunSummary) and isinstance(summary.judge, JudgeSection)
    assert set(summary.attribution) == set(summary.pipeline_names) & set(report.pipelines)
    again = RunSummary.from_dict(summary.to_dict())
    assert again == summary and isinstance(again.judge, JudgeSection) and again.extra == {}
    view = RunView.of(again, rows, answers)
    assert view.judge.summary and view.attribution == summary.attribution


def _printed(fn, *args) -> str:
    buf = io.StringIO()
    fn(*args, Console(file=buf, width=140, color_system=None))
    return buf.getvalue()


def test_the_stored_score_prints_the_same_from_the_typed_summary_and_its_json(judged):
    from ragexam.report.console import print_score_summary

    report, folder, _ = judged
    typed = read_score_folder(folder).summary
    text = _printed(print_score_summary, typed)
    assert text == _printed(print_score_summary, typed.to_dict())
    assert "LLM judge: stub-judge" in text and "Stage attribution: P1" in text


def test_text_only_scores_have_no_judge_section(tmp_path):
    qa, _, answers, run = write_case(tmp_path)
    report = score_answers(load_qa(qa), load_answers(answers), run=read_folder(run),
                           correct_if=parse_correct_if("chrf>=0.5"))
    d = report.to_dict()
    assert d["judge"] is None and d["settings"]["judge"] is None and report.summary.judged_metrics() == []
    assert d["settings"]["correctness_source"] == "text" and d["attribution"]["signature"].startswith("retrieval:")
