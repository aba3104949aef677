"""Every Python example of docs/chunking.md runs as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[1] / "docs" / "chunking.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)


def test_the_doc_has_examples():
    assert len(BLOCKS) >= 4


@pytest.mark.parametrize("i", range(len(BLOCKS)))
def test_python_example_runs(i, capsys):
    exec(compile(BLOCKS[i], f"docs/chunking.md[{i}]", "exec"), {})
    if "print(" in BLOCKS[i]:
        assert capsys.readouterr().out.strip()


def test_the_budget_table_is_what_its_snippet_prints():
    """The table of "bigger chunks win by construction" is the run its snippet makes (it once showed intervals of an
    older bootstrap: hit@5 of paragraphs:800 [0.785, 0.954] where the snippet printed [0.8, 0.954])."""
    import ragexam

    text = DOC.read_text(encoding="utf-8")
    rows = re.findall(r"^\| (paragraphs:\d+) \| (.+) \|$", text.split("### An example: bigger chunks", 1)[1], re.M)
    assert [r[0] for r in rows] == ["paragraphs:200", "paragraphs:800"]
    res = ragexam.run("it_helpdesk", "it_helpdesk", retrievers=["bm25"], chunkers=[r[0] for r in rows], progress=False)
    s = res.summary
    for chunker, cells in rows:
        p = f"bm25 | {chunker}"
        m, ci = s.results[p].metrics, s.results[p].ci95
        printed = [f"{m[x]:.3f} [{ci[x][0]:.3f}, {ci[x][1]:.3f}]" for x in ("hit@5", "hit@2000c", "r@5", "r@2000c")]
        assert cells.split(" | ") == printed, chunker
