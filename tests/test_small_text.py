"""Small text a new user reads: help that shows every word of each option's help, flags without a type,
``--version``, counts in the right number ("1 document", "queries"), one full stop at a sentence's end.

Before: ``ragexam --help`` listed ``--version <bool>`` (and every flag with ``<bool>``), ``--version`` itself
failed with "Missing command", ``bleu --help`` said "ko-mecab (needs ragexam)" (rich ate ``[ko]`` as
markup), validate printed "(1 documents", the embedding progress bar "embedding querys", and a refused
connection "Connection error..".
"""

from __future__ import annotations

import importlib
import re
import socket

import pytest
import typer

from ragexam.cli import app, main
from ragexam.cli_options import _LATE_HELP

#: a count of exactly one followed by a plural noun
ONE_PLURAL = re.compile(r"(?<![\d.,/])\b1 (?!of\b)([a-z_-]+(?:s|es))\b")
#: words ending in s that are not plurals
NOT_PLURAL = {"is", "was", "has", "does", "miss", "bias", "process", "class", "access", "less", "plus", "yes"}


def _cli(argv, capsys, monkeypatch=None):
    with pytest.raises(SystemExit) as ei:
        main([str(a) for a in argv])
    out = capsys.readouterr()
    return ei.value.code or 0, out.out, out.err


def _singular_slips(text):
    return [m.group(0) for m in ONE_PLURAL.finditer(text) if m.group(1) not in NOT_PLURAL]


def _commands():
    group = typer.main.get_command(app)
    return [(name, cmd) for name, cmd in group.commands.items()]


def _flat(text):
    """Help text without the panel borders, as one line of single spaces."""
    return " ".join(re.sub(r"[│╭╮╰╯─]", " ", text).split())


def test_version_and_root_help(capsys, monkeypatch):
    from ragexam import __version__

    code, out, _ = _cli(["--version"], capsys)
    assert code == 0 and out.strip() == f"ragexam {__version__}"
    monkeypatch.setenv("COLUMNS", "100")
    code, out, _ = _cli(["--help"], capsys)
    assert code == 0 and "--version" in out and "<bool>" not in out


@pytest.mark.parametrize("name,cmd", _commands(), ids=[n for n, _ in _commands()])
def test_command_help_shows_every_option_help_whole(name, cmd, capsys, monkeypatch):
    """Every option's help text appears word for word (rich markup such as ``[ko]`` must be escaped in the
    source) and no flag is shown as taking a ``<bool>``."""
    monkeypatch.setenv("COLUMNS", "200")
    code, out, _ = _cli([name, "--help"], capsys)
    assert code == 0
    shown = _flat(out)
    assert "<bool>" not in shown
    for p in cmd.params:
        text = getattr(p, "help", None)
        owner = _LATE_HELP.get((name, p.name))
        if p.name == "max_tokens":  # the command's own default, filled in when it is invoked (max_tokens_help)
            from ragexam.cli_options import max_tokens_help

            text = max_tokens_help(name)
            assert "the default is the command's" not in text, name  # every LLM command states its own
        elif owner is not None:  # a help text its module owns, filled in when the command is invoked
            assert text not in shown, (name, p.name, "the placeholder is shown")
            module, fn = owner.split(":")
            text = getattr(importlib.import_module(module), fn)()
        if text:
            want = " ".join(text.replace("\\[", "[").split())
            assert want in shown, (name, p.name, want)


def test_bleu_help_names_the_ko_extra(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    _, out, _ = _cli(["bleu", "--help"], capsys)
    assert "ko-mecab (needs ragexam[ko])" in _flat(out)


def _one_doc_set(tmp_path):
    (tmp_path / "c.jsonl").write_text('{"doc_id": "d1", "content": "VPN 접속 오류 VPN-ERR-619는 인증서 만료 때문입니다."}\n',
                                      encoding="utf-8")
    (tmp_path / "q.jsonl").write_text('{"query_id": "q1", "question": "VPN-ERR-619가 뭐예요?", '
                                      '"ground_truth": "인증서 만료", "evidence": ["인증서 만료"], '
                                      '"relevant_doc_ids": ["d1"]}\n', encoding="utf-8")
    return tmp_path / "c.jsonl", tmp_path / "q.jsonl"


def test_counts_of_one_are_singular(tmp_path, capsys):
    corpus, qa = _one_doc_set(tmp_path)
    code, out, err = _cli(["validate", "--corpus", corpus, "--qa", qa], capsys)
    assert "1 document, 1 question" in out and _singular_slips(out) == [], out
    code, out, err = _cli(["run", "--corpus", corpus, "--qa", qa, "-r", "bm25:whitespace", "-k", "1",
                           "--n-resamples", "50", "--n-permutations", "50", "--no-history"], capsys)
    assert code == 0, err
    assert "1 document" in out and "1 scored question" in out
    assert _singular_slips(out) == [], _singular_slips(out)


def test_embedding_progress_label_is_plural(monkeypatch):
    import numpy as np

    from ragexam.retrieval import embedding

    labels = []
    real = embedding.progress_bar

    def record(description, total, enabled=True):
        labels.append(description)
        return real(description, total, False)

    monkeypatch.setattr(embedding, "progress_bar", record)

    class Fake:
        name = "fake"
        identity = "fake"

        def embed_queries(self, texts):
            return np.ones((len(texts), 4), dtype=np.float32)

        embed_passages = embed_queries

    embedding.embed_cached(Fake(), ["a", "b"], "query", None)
    embedding.embed_cached(Fake(), ["a", "b"], "passage", None)
    assert labels == ["embedding queries (fake)", "embedding passages (fake)"]


def test_connection_error_message_ends_once():
    from ragexam.errors import RagexamError
    from ragexam.retrieval.embedders import OpenAIEmbedder

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    emb = OpenAIEmbedder("m", base_url=f"http://127.0.0.1:{port}/v1", api_key="sk-x", max_retries=0,
                         timeout=5, sleep=lambda s: None)
    with pytest.raises(RagexamError) as err:
        emb.embed_queries(["x"])
    msg = str(err.value)
    assert "after 1 attempt:" in msg and ".." not in msg, msg
