"""What a new user hit on a fresh clone (issue 19, item 9): every one of these failed before its fix."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from rich.cells import cell_len

from ragexam.cli import main


def test_plots_is_a_module():
    import ragexam.plots
    from ragexam.plots import attribution, k_sweep  # noqa: F401
    from ragexam.report import plots

    assert ragexam.plots.k_sweep is plots.k_sweep


def test_score_is_a_function_of_the_package():
    import ragexam
    from ragexam.api import score

    assert ragexam.score is score


@pytest.mark.parametrize("cmd", ["bleu", "chrf"])
def test_text_metric_help_says_which_file_comes_first(cmd, capsys):
    with pytest.raises(SystemExit):
        main([cmd, "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert f"ragexam {cmd} REFS HYPS" in out and "references file first" in out


def test_run_honours_columns_when_piped(tmp_path):
    """`ragexam run | less` with COLUMNS=80: every table line fits (it was a fixed 132)."""
    env = dict(os.environ, COLUMNS="80", RAGEXAM_HISTORY=str(tmp_path / "h.sqlite3"))
    proc = subprocess.run([sys.executable, "-m", "ragexam.cli", "run", "--corpus", "it_helpdesk", "--qa",
                           "it_helpdesk", "-r", "bm25:whitespace", "--n-resamples", "50", "--n-permutations", "50"],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    table = lines[lines.index(next(x for x in lines if x.startswith("Retrieval metrics"))):][:12]
    assert table and all(cell_len(line.rstrip()) <= 80 for line in table), table


def test_compare_a_run_with_a_score_says_so(tmp_path, capsys):
    from test_score_fixtures import write_case

    qa, corpus, answers, run = write_case(tmp_path / "case")
    with pytest.raises(SystemExit):
        main(["score", "--qa", str(qa), "--answers", str(answers), "--run", str(run), "--out", str(tmp_path / "s"),
              "--no-history"])
    capsys.readouterr()
    with pytest.raises(SystemExit) as ei:
        main(["compare", str(run), str(tmp_path / "s")])
    err = capsys.readouterr().err
    assert ei.value.code == 2 and "is a run and B" in err and "is a score" in err, err


def test_report_nav_signatures_and_arrows(tmp_path):
    """The report links its LLM-judge section, lists each signature once, and draws '>' with a Latin face."""
    import re

    from test_report_fixtures import make_run

    from ragexam.report.html import FONT_STACK, render_report

    summary, rows = make_run(n_questions=6, seed=1, n_resamples=20, n_permutations=20, attribution=True)
    html = render_report(summary, rows)
    sigs = re.findall(r'<td class="sig">([^<]*)</td>', html)
    assert sigs and len(sigs) == len(set(sigs)), "a signature is listed twice"
    first = FONT_STACK.split(",")[0].strip().strip('"')
    assert first in ("Segoe UI", "Roboto", "Arial", "DejaVu Sans"), "a Korean face draws '>' like '〉'"
    if 'id="judge"' in html:
        assert 'href="#judge"' in html


def test_a_command_said_to_speak_korean_with_lang_has_the_option():
    """The README said `ragexam runs`, `ragexam show latest`, `ragexam report`, "in Korean with `--lang ko`", but
    only `report` has --lang: every command named in the clause of such a claim (from the last "(", ":", ";" or
    sentence end before it) must take the option."""
    import re
    from pathlib import Path

    import typer

    from ragexam.cli import app

    root = Path(__file__).parents[1]
    group = typer.main.get_command(app)
    claims = 0
    for doc in [root / "README.md", *sorted((root / "docs").glob("*.md"))]:
        text = " ".join(doc.read_text(encoding="utf-8").split())
        for m in re.finditer(r"in Korean with `--lang", text):
            clause = re.split(r"[(:;]|\. ", text[: m.start()])[-1]
            for name in re.findall(r"`ragexam ([a-z-]+)", clause):
                claims += 1
                options = {o for p in group.commands[name].params for o in p.opts}
                assert "--lang" in options, f"{doc.name}: `ragexam {name}` is said to speak Korean with --lang"
    assert claims >= 1
