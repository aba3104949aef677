"""``ragexam bleu`` and ``ragexam chrf`` on plain text files."""

from __future__ import annotations

import json

import pytest

from ragexam.cli import main
from ragexam.metrics.text import corpus_bleu, corpus_chrf
from ragexam.metrics.text.synthetic import random_pairs


def _run(argv, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    out = capsys.readouterr()
    return exit_info.value.code, out.out, out.err


@pytest.fixture()
def files(tmp_path):
    hyps, refs = random_pairs(50, "mixed", seed=61, p_empty=0.1)
    refs = [r[0] for r in refs]
    hyps = [h.replace("\n", " ") for h in hyps]
    (tmp_path / "refs.txt").write_text("\n".join(refs) + "\n", encoding="utf-8")
    (tmp_path / "hyps.txt").write_text("\r\n".join(hyps) + "\r\n", encoding="utf-8")  # CRLF is fine
    return tmp_path / "refs.txt", tmp_path / "hyps.txt", hyps, refs


def test_bleu_json(files, capsys):
    ref_path, hyp_path, hyps, refs = files
    code, out, _ = _run(["bleu", str(ref_path), str(hyp_path), "--tokenize", "intl", "--smooth", "floor",
                         "--lowercase", "--json"], capsys)
    assert code in (0, None)
    data = json.loads(out)
    expected = corpus_bleu(hyps, refs, tokenize="intl", smooth="floor", lowercase=True)
    assert data["score"] == expected.score and 0 <= data["score"] <= 1
    assert data["signature"] == expected.signature
    assert data["precisions"] == list(expected.precisions)
    assert (data["bp"], data["sys_len"], data["ref_len"]) == (expected.bp, expected.sys_len, expected.ref_len)


def test_bleu_text_line_matches_sacrebleu(files, capsys):
    sacrebleu = pytest.importorskip("sacrebleu")
    ref_path, hyp_path, hyps, refs = files
    code, out, _ = _run(["bleu", str(ref_path), str(hyp_path)], capsys)
    assert code in (0, None)
    assert out.startswith("BLEU|nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:ragexam-")
    score = float(out.split(" = ")[1].split()[0])
    assert score == pytest.approx(sacrebleu.corpus_bleu(hyps, [refs]).score / 100, abs=5e-5)


@pytest.mark.parametrize("plus", [False, True])
def test_chrf(files, capsys, plus):
    ref_path, hyp_path, hyps, refs = files
    code, out, _ = _run(["chrf", str(ref_path), str(hyp_path), "--json"] + (["--plus"] if plus else []), capsys)
    assert code in (0, None)
    data = json.loads(out)
    expected = corpus_chrf(hyps, refs, word_order=2 if plus else 0)
    assert data == {"score": expected.score, "signature": expected.signature}
    code, out, _ = _run(["chrf", str(ref_path), str(hyp_path)] + (["--plus"] if plus else []), capsys)
    assert out.startswith("chrF2++|" if plus else "chrF2|")


def test_mismatched_line_counts(tmp_path, capsys):
    (tmp_path / "r.txt").write_text("a\nb\nc\n", encoding="utf-8")
    (tmp_path / "h.txt").write_text("a\nb\n", encoding="utf-8")
    for cmd in ("bleu", "chrf"):
        code, _, err = _run([cmd, str(tmp_path / "r.txt"), str(tmp_path / "h.txt")], capsys)
        assert code == 2
        assert "r.txt has 3 lines" in err and "h.txt" in err and "has 2" in err


def test_unknown_tokenizer_and_missing_file(tmp_path, capsys):
    (tmp_path / "r.txt").write_text("a\n", encoding="utf-8")
    code, _, err = _run(["bleu", str(tmp_path / "r.txt"), str(tmp_path / "r.txt"), "-t", "moses"], capsys)
    assert code == 2 and "valid choices" in err and "'13a'" in err
    code, _, err = _run(["bleu", str(tmp_path / "r.txt"), str(tmp_path / "nope.txt")], capsys)
    assert code == 2 and "nope.txt" in err


def test_invalid_utf8(tmp_path, capsys):
    (tmp_path / "r.txt").write_bytes(b"ok\n\xff\xfe\n")
    (tmp_path / "h.txt").write_text("a\nb\n", encoding="utf-8")
    code, _, err = _run(["chrf", str(tmp_path / "r.txt"), str(tmp_path / "h.txt")], capsys)
    assert code == 2 and "r.txt:2" in err and "UTF-8" in err
