"""The README's Quick start and .ci/run stay true to each other."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEST_COMMAND = "python3 -m venv .venv && .venv/bin/pip install -e '.[test]' && .venv/bin/python -m pytest -q"
MAIN_COMMAND = "python3 -m venv .venv && .venv/bin/pip install -e . && .venv/bin/ragexam demo"


def test_readme_quick_start_has_the_two_commands():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    quick = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    blocks = [b.strip() for b in quick.split("```")[1::2]]
    assert blocks == [MAIN_COMMAND, TEST_COMMAND]


def test_ci_runs_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert TEST_COMMAND in ci
