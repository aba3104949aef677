"""``ragexam evaluate`` through the console script's lean entry (:mod:`ragexam.cli_lean`): the same output, help,
messages and exit codes as the full CLI, without loading typer."""

from __future__ import annotations

import os
import subprocess
import sys
from importlib.metadata import entry_points

import pytest

from ragexam import cli, cli_lean
from trec_readers import require_compiled

DATA = os.path.join(os.path.dirname(__file__), "data")


def _both(capsys, args):
    out = []
    for main in (cli_lean.main, cli.main):
        code = 0
        try:
            main(list(args))
        except SystemExit as exit_:
            code = exit_.code or 0
        captured = capsys.readouterr()
        out.append((code, captured.out, captured.err))
    return out


@pytest.mark.parametrize("args", [
    ["evaluate", "--qrels", "lecture", "--run", "lecture"],
    ["evaluate", "--qrels", "lecture", "--run", "lecture", "--json"],
    ["evaluate", "--run=lecture", "--qrels=lecture", "-m", "ndcg@3", "--metric", "map", "--metric=P_5", "--json"],
    ["evaluate", "--qrels", "lecture", "--run", "lecture", "--trec-compat", "-l", "2", "-m", "mrr"],
    ["evaluate", "--qrels", "lecture", "--run", "lecture", "--relevance-level=1", "--json"],
])
def test_lean_evaluate_prints_what_the_full_cli_prints(capsys, monkeypatch, args):
    monkeypatch.setenv("COLUMNS", "100")
    lean, full = _both(capsys, args)
    assert lean == full and lean[0] == 0 and lean[1]


@pytest.mark.parametrize("args, code", [
    (["evaluate", "--help"], 0),
    (["evaluate", "--qrels", "lecture"], 2),                                   # --run missing
    (["evaluate", "--qrels", "lecture", "--run", "lecture", "--bogus"], 2),
    (["evaluate", "--qrels", "lecture", "--run", "lecture", "-l", "x"], 2),
    (["evaluate", "--qrels", "no-such-file.trec", "--run", "lecture"], 2),     # a RagexamError, worded by the CLI
    (["evaluate", "--qrels", "lecture", "--run", "lecture", "-m", "ndcg@zz"], 2),
])
def test_anything_else_goes_to_the_full_cli(capsys, monkeypatch, args, code):
    monkeypatch.setenv("COLUMNS", "100")
    lean, full = _both(capsys, args)
    assert lean == full and lean[0] == code


def test_the_lean_path_loads_neither_typer_nor_the_other_commands():
    code = ("import sys\nfrom ragexam.cli_lean import main\n"
            "main(['evaluate', '--qrels', 'lecture', '--run', 'lecture'])\n"
            "loaded = [m for m in ('typer', 'click', 'ragexam.cli', 'ragexam.cli_options', 'pandas') if m in sys.modules]\n"
            "print('LOADED', loaded)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "LOADED []" in out and "ndcg@10" in out


@pytest.mark.parametrize("pure", [False, True], ids=["compiled", "pyarrow"])
def test_the_lean_path_loads_no_run_summary_and_no_numpy_ma(tmp_path, monkeypatch, pure):
    """Start-up is most of the command on a 10k-query pair: ``np.unique`` loads numpy.ma (16 ms) and the run
    summary's records (25 ms) are not needed; read by pyarrow, a run of several blocks takes the multi-segment
    path; read by the compiled reader, neither pyarrow nor its thread pool is loaded."""
    if pure:
        monkeypatch.setenv("RAGEXAM_PURE_PYTHON", "1")
    qrels, run = tmp_path / "q.trec", tmp_path / "r.trec"
    qrels.write_text("".join(f"q{q} 0 d{q * 7 % 1000} 1\n" for q in range(2000)), encoding="utf-8")
    run.write_text("".join(f"q{q} Q0 doc_with_a_longer_id_{(q * 31 + r) % 5000} {r + 1} {100 - r} x\n"
                           for q in range(2000) for r in range(30)), encoding="utf-8")
    assert run.stat().st_size > 2 << 20  # more than one pyarrow block
    code = ("import sys\nfrom ragexam.cli_lean import main\n"
            f"main(['evaluate', '--qrels', {str(qrels)!r}, '--run', {str(run)!r}, '-m', 'map'])\n"
            "print('LOADED', [m for m in ('numpy.ma', 'ragexam.storage.summary') if m in sys.modules])\n"
            "print('PYARROW', 'pyarrow' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "LOADED []" in out and "map" in out
    if not pure:
        require_compiled()
    assert f"PYARROW {pure}" in out


def test_the_console_script_enters_through_the_lean_path():
    (ep,) = [e for e in entry_points(group="console_scripts") if e.name == "ragexam"]
    assert ep.value == "ragexam.cli_lean:main"
