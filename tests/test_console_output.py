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
