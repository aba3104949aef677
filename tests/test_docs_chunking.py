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
