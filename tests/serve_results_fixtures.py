"""Results for the ``ragexam serve`` results tests (no tests here): two run folders of the bundled it_helpdesk
questions (tests/test_report_fixtures.py, Korean questions, evidence and chunks), a score folder judged through
the loopback judge stub (tests/test_judge_stub.py) over the handcrafted case of tests/test_score_fixtures.py with
its run folder, and a history holding the two runs and the score.

``build(folder)`` writes them once and returns :class:`Built`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass
class Built:
    run_a: Path
    run_b: Path
    score: Path
    scored_run: Path
    history: Path
    qa: Path


def build(folder: Path) -> Built:
    from test_check_scores import _tagged_answers
    from test_judge_stub import API_KEY, start_stub
    from test_report_fixtures import make_run, write_run
    from test_score_fixtures import write_case

    from ragexam.analysis.answers.files import load_answers
    from ragexam.analysis.gating.history import record_score
    from ragexam.analysis.answers.scoring import save_score, score_answers
    from ragexam.data.loaders import load_qa
    from ragexam.metrics.judge import Judge
    from ragexam.storage.history import History
    from ragexam.storage.runfolder import read_folder

    folder.mkdir(parents=True, exist_ok=True)
    history = folder / "history.sqlite3"
    a = make_run(n_questions=40, seed=5, skills=(0.5, 0.7, 0.85), run_id="20261130T144005Z-aaaaaa")
    b = make_run(n_questions=40, seed=6, skills=(0.8, 0.7, 0.5), run_id="20261201T090000Z-bbbbbb")
    run_a, run_b = write_run(folder / "run_a", *a), write_run(folder / "run_b", *b)
    hist = History(history)
    hist.record_run(*a)
    hist.record_run(*b)
    qa, _, _, scored_run = write_case(folder / "case")
    answers = _tagged_answers(folder / "case", {"q3": "incorrect"})
    stub, shutdown = start_stub()
    try:
        judge = Judge("stub-judge", base_url=stub.base_url, api_key=API_KEY, cache_dir=str(folder / "cache"),
                      backoff=0.0, max_retries=0, max_attempts=1)
        run = read_folder(scored_run)
        report = score_answers(load_qa(qa), load_answers(answers), run=run, judge=judge,
                               judge_metrics=["answer_correctness", "faithfulness"])
    finally:
        shutdown()
    score = save_score(report, folder / "score")
    record_score(report, run.summary, history)
    return Built(run_a, run_b, Path(score), scored_run, history, qa)
