"""Options a reviewer found in no doc: each is named on the doc page of its command, and the command has it."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragexam import cli

DOCS = Path(__file__).resolve().parents[1] / "docs"

#: (command, option, doc page)
DOCUMENTED = [
    (("judge-check",), "--check-seed", "judge.md"),
    (("locate-evidence",), "--no-windows", "evidence.md"),
    (("review", "audit"), "--interactive", "generate.md"),
    (("review", "audit"), "--restart", "generate.md"),
    (("score",), "--abstain-phrases", "score.md"),
    (("score",), "--bleu-tokenize", "score.md"),
    (("evaluate",), "--relevance-level", "run.md"),
    (("run",), "--n-resamples", "run.md"),
    (("run",), "--n-permutations", "run.md"),
    (("grade",), "--n-resamples", "run.md"),
    (("grade",), "--n-permutations", "run.md"),
    *[(("bleu",), o, "run.md") for o in ("--tokenize", "--smooth", "--smooth-value", "--lowercase",
                                         "--effective-order")],
    *[(("chrf",), o, "run.md") for o in ("--plus", "--lowercase", "--whitespace")],
]


@pytest.mark.parametrize("command, option, page", DOCUMENTED)
def test_option_is_on_its_commands_doc_page(monkeypatch, command, option, page):
    monkeypatch.setenv("COLUMNS", "300")
    result = CliRunner().invoke(cli.app, [*command, "--help"])
    assert result.exit_code == 0 and option in result.output
    assert f"`{option}" in (DOCS / page).read_text(encoding="utf-8") or f"/{option}" in (DOCS / page).read_text(
        encoding="utf-8"), f"{' '.join(command)} {option} is not in docs/{page}"
