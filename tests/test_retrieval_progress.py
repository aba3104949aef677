"""Progress bars: silent when stderr is not a terminal or progress=False; drawn on stderr otherwise."""

from __future__ import annotations

from ragexam.retrieval import progress
from ragexam.retrieval.bm25 import BM25Retriever


def test_no_output_when_stderr_is_not_a_tty(capsys, tmp_path):
    r = BM25Retriever("whitespace", cache_dir=tmp_path, progress=True).index(["a", "b"], ["x y", "y z"])
    r.search(["x"], 2)
    out = capsys.readouterr()
    assert out.out == "" and out.err == ""


def test_bar_is_drawn_on_stderr_for_a_terminal(capsys, monkeypatch):
    monkeypatch.setattr(progress, "_stderr_is_tty", lambda: True)
    with progress.progress_bar("embedding passages (fake)", 3, enabled=True) as bar:
        bar.advance(3)
    assert capsys.readouterr().out == ""
    with progress.progress_bar("off", 3, enabled=False) as bar:
        assert isinstance(bar, progress._NullBar)
    with progress.progress_bar("empty", 0, enabled=True) as bar:
        assert isinstance(bar, progress._NullBar)
