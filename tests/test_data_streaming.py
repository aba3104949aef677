"""JSONL corpora, question sets and results files are read as a stream of lines: a big corpus is never held as
raw bytes, decoded text and a list of lines at once (issue 15: corpora read as a stream)."""

from __future__ import annotations

import json
import tracemalloc

import pytest

from ragexam.data.loaders import load_corpus
from ragexam.data.problems import ProblemCollector
from ragexam.data.reading import read_lines, read_text
from ragexam.errors import InputError


def _corpus(path, n=20000):
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(n):
            fh.write(json.dumps({"doc_id": f"d{i}", "title": "t", "content": "가나다라 마바사 " * 60},
                                ensure_ascii=False) + "\n")
    return path.stat().st_size


def test_loading_a_jsonl_corpus_holds_one_line_beyond_the_documents(tmp_path):
    size = _corpus(tmp_path / "corpus.jsonl")
    tracemalloc.start()
    try:
        corpus = load_corpus(tmp_path / "corpus.jsonl")
        current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(corpus) == 20000
    # read whole, the file's bytes, its text and its list of lines were alive together: ~3x the file
    assert peak - current < 0.25 * size, (size, current, peak)


@pytest.mark.parametrize("end", [b"", b"\n"])
def test_streamed_lines_equal_the_whole_text_split(tmp_path, end):
    p = tmp_path / "x.jsonl"
    p.write_bytes(b'{"a": 1}\r\n\n{"b": "\xea\xb0\x80"}\n  \n{"c": 3}' + end)
    col = ProblemCollector(strict=True)
    whole = read_text(p, str(p), col).split("\n")
    assert list(read_lines(p, str(p), col)) == (whole[:-1] if end else whole)  # a final newline ends a line


@pytest.mark.parametrize("prefix,kind", [(b"\xef\xbb\xbf", "byte-order mark"), (b"\xff\xfe", "UTF-16")])
def test_streamed_file_start_is_checked_before_any_line(tmp_path, prefix, kind):
    p = tmp_path / "c.jsonl"
    p.write_bytes(prefix + b'{"doc_id": "a", "content": "x"}\n')
    with pytest.raises(InputError, match=kind):
        load_corpus(p)


def test_a_bad_byte_names_its_line_and_column_in_a_stream(tmp_path):
    p = tmp_path / "c.jsonl"
    bad = '{"doc_id": "b", "content": "한글"}'.encode("cp949")
    p.write_bytes(b'{"doc_id": "a", "content": "x"}\n\n' + bad + b"\n")
    with pytest.raises(InputError) as err:
        load_corpus(p)
    msg = str(err.value)
    assert "c.jsonl:3:" in msg and "byte column 29" in msg and "CP949" in msg, msg
