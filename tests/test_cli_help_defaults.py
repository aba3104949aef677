"""Help texts that state a default say the one the command uses, read from the constant the code uses."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from ragexam import cli


def _help(monkeypatch, *command: str) -> str:
    monkeypatch.setenv("COLUMNS", "400")
    result = CliRunner().invoke(cli.app, [*command, "--help"])
    assert result.exit_code == 0, result.output
    return re.sub(r"[\s│]+", " ", result.output)


def _option(text: str, option: str) -> str:
    return re.split(r" --[a-z-]+ <", text.split(option, 1)[1], maxsplit=1)[0]


def test_generate_max_tokens_help_gives_the_focus_default(monkeypatch):
    from ragexam.questions.config import DEFAULT_MAX_TOKENS, FOCUS_MAX_TOKENS

    text = _option(_help(monkeypatch, "generate"), "--max-tokens")
    assert f"default: {FOCUS_MAX_TOKENS} with --cite focus" in text
    assert f"{DEFAULT_MAX_TOKENS} with --cite spans or sentences" in text


@pytest.mark.parametrize("command, expected", [
    (("answer",), "ragexam.api:ANSWER_MAX_TOKENS"),
    (("score",), "ragexam.metrics.judge.core:Judge.DEFAULT_MAX_TOKENS"),
    (("judge-check",), "ragexam.metrics.judge.core:Judge.DEFAULT_MAX_TOKENS"),
    (("locate-evidence",), "ragexam.questions.locate_llm:_MAX_TOKENS"),
    (("llm", "probe"), "ragexam.llm.probe:MAX_TOKENS"),
])
def test_max_tokens_help_gives_each_commands_own_default(monkeypatch, command, expected):
    import importlib

    module, name = expected.split(":")
    value = importlib.import_module(module)
    for part in name.split("."):
        value = getattr(value, part)
    text = _option(_help(monkeypatch, *command), "--max-tokens")
    assert re.search(rf"\b{value}\b", text), text
    assert "2048" not in text or value == 2048


def test_cache_dir_help_names_xdg_cache_home(monkeypatch):
    text = _option(_help(monkeypatch, "score"), "--cache-dir")
    assert "$RAGEXAM_CACHE_DIR, else $XDG_CACHE_HOME/ragexam, else ~/.cache/ragexam" in text
