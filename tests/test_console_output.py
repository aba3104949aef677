"""What ``run``, ``grade``, ``compare``, ``demo``, ``score`` and ``answer`` print, checked the way a reader reads it:
a line names a file only when it was written (else it says how to get it), and a count of 0 is not printed."""

from __future__ import annotations

import pytest
from rich.console import Console

from test_report_fixtures import real_demo_dir

from ragexam.cli import main
from ragexam.report import console_run
from ragexam.storage.runfolder import read_run_folder as load_run_dir


@pytest.fixture(scope="module")
def demo():
    return load_run_dir(real_demo_dir()).summary


def _text(fn, *args, width=200, **kw) -> str:
    con = Console(record=True, width=width, color_system=None)
    fn(*args, con, **kw)
    return con.export_text()


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory):
    import ragexam

    folder = tmp_path_factory.mktemp("console-output")
    ragexam.run("it_helpdesk", "it_helpdesk", ["bm25"], ["paragraphs:400"], progress=False, n_resamples=50,
                n_permutations=50, cache_dir=folder / "cache").save(folder / "run")
    return folder


def _cli(argv, capsys):
    with pytest.raises(SystemExit) as ei:
        main([str(a) for a in argv])
    out = capsys.readouterr()
    return ei.value.code, out.out, out.err


# -- a file is named only when it was written ------------------------------------------------------------------


def test_the_missed_list_names_files_only_when_they_were_written(demo):
    """``ragexam demo`` (no --out) said '… and 2 more (see per_question.csv, or summary.json 'missed')'."""
    unsaved = _text(console_run.render_run, demo, max_missed=1)
    assert "more (write them all with --out DIR: per_question.csv, summary.json 'missed')" in unsaved
    assert "see per_question.csv" not in unsaved
    saved = _text(console_run.render_run, demo, max_missed=1, saved=console_run.Saved("runs/today"))
    assert "more (see runs/today/per_question.csv, or summary.json 'missed')" in saved
    stored = _text(console_run.render_run, demo, max_missed=1, saved=console_run.Saved(stored=True))
    assert "more (all in the summary's 'missed': --json prints it)" in stored


def test_score_names_per_answer_csv_only_when_it_was_written(run_folder, tmp_path, capsys, monkeypatch):
    """``score`` without --out said 'questions to read (30 of 42 not ok; all in per_answer.csv)'."""
    monkeypatch.setenv("RAGEXAM_HOME", str(tmp_path / "home"))
    argv = ["score", "--qa", "it_helpdesk", "--answers", "it_helpdesk", "--run", run_folder / "run",
            "--correct-if", "chrf>=0.5", "--no-history"]
    code, out, _ = _cli(argv, capsys)
    assert code == 0 and "not ok; --out DIR writes all to per_answer.csv)" in out and "; all in" not in out
    code, out, _ = _cli(argv + ["--out", tmp_path / "sc"], capsys)
    assert code == 0 and f"not ok; all in {tmp_path / 'sc' / 'per_answer.csv'})" in out
    assert (tmp_path / "sc" / "per_answer.csv").is_file()


# -- no number for 0 items -------------------------------------------------------------------------------------


def test_the_dataset_card_says_every_evidence_string_is_held_without_a_zero(demo):
    """The demo printed 'held by no chunk (never creditable): 0 under paragraphs:400'."""
    assert all(n == 0 for n in demo.dataset.n_unmatched_evidence.values())
    text = _card(demo)
    assert "held by no chunk" not in text and "0 under" not in text
    assert "evidence strings; each held whole by a chunk under paragraphs:400" in text


def _card(summary) -> str:
    con = Console(record=True, width=200, color_system=None)
    console_run._dataset_card(con, summary, console_run.Saved())
    return con.export_text()


def test_a_rerank_stage_without_partial_or_failed_queries_prints_no_zero(demo):
    """The demo printed '71 reranked · 0 partly (...) · 0 failed (...)'."""
    from ragexam.storage.summary import RerankCeiling, RerankStage, RerankStatus

    stage = RerankStage(first_stage="bm25", top=20, status=RerankStatus(reranked=71),
                        ceiling=RerankCeiling(top=20, n_within=65, recall_at_top=1.0, misses=0, k=5))
    rows = dict(console_run._rerank_rows(demo, demo.pipelines[0].name, stage))
    assert rows["queries"] == "71 reranked"
    assert rows["fixed / broken"] == "none: no question moved into or out of the top 5"
    assert "misses" not in rows["recall ceiling"] and " 0 " not in rows["recall ceiling"]
    partly = RerankStage(first_stage="bm25", top=20, status=RerankStatus(reranked=70, failed=1),
                         ceiling=RerankCeiling(top=20, n_within=60, misses=3, misses_outside=3, k=5))
    rows = dict(console_run._rerank_rows(demo, demo.pipelines[0].name, partly))
    assert rows["queries"] == "70 reranked · 1 failed (first-stage order kept)"
    assert rows["recall ceiling"].endswith("of the 3 misses at k=5, 3 lay outside the candidates (no reranker can "
                                           "fix them)")


def test_compare_of_identical_runs_says_no_question_flipped(run_folder):
    """compare printed 'Flipped at k=5: 0 found → missed, 0 missed → found'."""
    from ragexam.analysis.exam.compare import compare_runs
    from ragexam.report.console import print_comparison
    from ragexam.storage.runfolder import read_run_folder

    run = read_run_folder(run_folder / "run")
    text = _text(print_comparison, compare_runs(run, run, metrics=["hit@5"]))
    assert "Flipped at k=5: no question flipped" in text and "0 found" not in text
    assert "only in" not in text


def test_answer_prints_no_zero_failed():
    """``ragexam answer`` printed 'Wrote 213 answers (0 failed, see their 'error')'."""
    from types import SimpleNamespace

    from ragexam.report.console_score import print_answer_outcome

    usage = {"calls": 2, "cached": 0, "prompt_tokens": 10, "completion_tokens": 5}
    done = SimpleNamespace(note=None, plan=None, usage=usage, records=[1, 2], failed=0, out="a.jsonl", cost=0.0)
    text = _text(lambda con: print_answer_outcome(done, con))
    assert text.startswith("Wrote 2 answers to a.jsonl.") and "failed" not in text
    text = _text(lambda con: print_answer_outcome(SimpleNamespace(**{**vars(done), "failed": 1}), con))
    assert text.startswith("Wrote 2 answers (1 failed, see their 'error') to a.jsonl.")


def test_the_judge_table_has_no_row_or_count_of_nothing():
    """Traced answers: the judge table printed 'abstention ... 0/0' and 'quoted: 0/135 claims'."""
    from ragexam.report.console_judge import print_judge
    from ragexam.storage.score_summary import JudgeSection, JudgeStat, QuotedUnits

    faithful = JudgeStat(metric="faithfulness", n=61, n_judged=53, coverage=53 / 61, mean=0.5, labels={"faithful": 53},
                         quoted=QuotedUnits(units=0, of=135))
    judge = JudgeSection(model="stub", endpoint="http://x", language="ko",
                         summary={"answers": {"faithfulness": faithful, "abstention": JudgeStat(metric="abstention")}})
    text = _text(lambda con: print_judge(judge, con))
    assert "quoted" not in text and "0/0" not in text and "0/135" not in text
    assert "nothing to judge (no answer of the kind the metric judges): P1 abstention" in text
    assert "53/61" in text
    quoted = JudgeSection(model="stub", endpoint="http://x", language="ko", summary={"answers": {
        "faithfulness": JudgeStat(metric="faithfulness", n=3, n_judged=3, mean=1.0, quoted=QuotedUnits(units=2, of=3))}})
    assert "quoted: 2/3 claims" in _text(lambda con: print_judge(quoted, con))


def test_the_comparisons_note_says_why_an_mdd_is_missing():
    """Identical per-question values have no MDD (the cell shows '-'): the note under the table says why."""
    from ragexam.storage.summary import Comparison

    same = Comparison(baseline="a", pipeline="b", metric="hit@5", diff=0.0, n=65, mdd=None, reading="same")
    text = _text(lambda con: console_run._comparisons_note(con, [same]))
    assert "MDD '-': the per-question differences did not vary (identical values)" in text
    assert "not detectable" not in text
    noisy = Comparison(baseline="a", pipeline="b", metric="hit@1", diff=0.05, n=65, mdd=0.12, reading="within noise")
    text = _text(lambda con: console_run._comparisons_note(con, [noisy]))
    assert "differences below about 0.12–0.12 are not detectable" in text and "MDD '-'" not in text


def test_a_judge_dry_run_names_judgments_settled_without_a_call_as_such():
    """The column read 'no input 164' for faithfulness although every answer had contexts: they were claims quoted
    word for word, settled without a call."""
    from types import SimpleNamespace

    from rich.console import Console

    from ragexam.report.console_score import print_plan

    row = {"total": 200, "cached": 0, "shared": 0, "skipped": 164, "calls": 36, "est_prompt_tokens": 9000,
           "est_completion_tokens": 900}
    plan = SimpleNamespace(model="m", endpoint="http://127.0.0.1:1/v1", language="ko", repeat=1,
                           by_metric={"faithfulness": row}, total=200, cached=0, shared=0, skipped=164, calls=36,
                           est_prompt_tokens=9000, est_completion_tokens=900, scoring="sample", est_cost="unknown")
    console = Console(record=True, width=160)
    print_plan(plan, console)
    text = console.export_text()
    assert "no call" in text and "no input" not in text
    assert "no call: judgments settled without the judge (an input is missing, or every claim is quoted" in text
    console = Console(record=True, width=160)
    print_plan(SimpleNamespace(**{**vars(plan), "skipped": 0, "by_metric": {"faithfulness": dict(row, skipped=0)}}),
               console)
    assert "settled without the judge" not in console.export_text()


def test_a_tag_on_a_pipeline_row_stays_when_the_name_is_dropped_to_fit():
    """A run too wide for the names printed 'P1' alone: the row of zeros of a pipeline that produced nothing lost
    its '[produced nothing]'."""
    from ragexam.report.tables import pipeline_keys

    full, short = pipeline_keys([("P1", "bm25", ""), ("P2", "http:http://x/s", " [produced nothing]"), None,
                                 ("P3", "dense")])
    assert [r[0].plain if r[0] != "" else "" for r in short.cells] == ["P1", "P2 [produced nothing]", "", "P3"]
    assert full.cells[1][0].plain == "P2 http:http://x/s [produced nothing]" and full.cells[3][0].plain == "P3 dense"


def test_questions_to_read_count_undecided_answers_apart_from_the_not_ok(tmp_path, capsys):
    """Without a judge most answers are undecided: 'N not ok' counted them as failures, which ok_share does not."""
    code = 0
    try:
        main(["score", "--qa", "it_helpdesk", "--answers", "it_helpdesk", "--no-history"])
    except SystemExit as e:
        code = e.code or 0
    out = capsys.readouterr().out
    assert code == 0
    assert "questions to read (30 of 67 not ok or undecided: 2 not ok, 65 undecided; --out DIR writes" in out


def test_show_of_a_score_not_recorded_names_no_id_of_none(tmp_path, capsys):
    for args in (["score", "--qa", "it_helpdesk", "--answers", "it_helpdesk", "--no-history", "--out", tmp_path / "s"],
                 ["show", tmp_path / "s"]):
        try:
            main([str(a) for a in args])
        except SystemExit as e:
            assert not e.code
    out = capsys.readouterr().out
    assert "score None" not in out and "score (not recorded in the history) · " in out
