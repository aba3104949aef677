"""One bounded JSON reader for every file ragexam reads back (issue 39, traceback 6): a summary nested 50,000 deep,
a history payload, a review sheet cell, a settings file, a JSON Lines line -- each an InputError naming the file
(and line, and field), never a RecursionError; a file over the size cap is refused before it is read."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys

import pytest

from ragexam.errors import InputError

DEEP = 50_000


def deep(depth: int = DEEP) -> str:
    return "[" * depth + "]" * depth


def deep_run(folder):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "summary.json").write_text('{"format": "ragexam-run/3", "results": {"x": ' + deep() + "}}",
                                         encoding="utf-8")
    return folder


def test_read_json_bounds_nesting_and_size(tmp_path, monkeypatch):
    from ragexam.storage import readback

    f = tmp_path / "summary.json"
    f.write_text('{"results": ' + deep() + "}", encoding="utf-8")
    with pytest.raises(InputError, match="nested deeper than 100 levels") as err:
        readback.read_json(f)
    assert err.value.source == str(f)
    f.write_text('{"a": ' + deep(100) + "}", encoding="utf-8")  # 101 levels with the object
    with pytest.raises(InputError, match="nested deeper"):
        readback.read_json(f)
    f.write_text('{"a": ' + deep(99) + "}", encoding="utf-8")  # 100: the limit itself is fine
    assert isinstance(readback.read_json(f)["a"], list)
    f.write_text('{"a": 1,}', encoding="utf-8")
    with pytest.raises(InputError, match="is not valid JSON") as err:
        readback.read_json(f)
    assert err.value.line == 1
    f.write_bytes(b'{"a": "\xff"}')
    with pytest.raises(InputError, match="not valid UTF-8"):
        readback.read_json(f)
    monkeypatch.setattr(readback, "MAX_FILE_BYTES", 10)
    f.write_text('{"a": "0123456789"}', encoding="utf-8")
    with pytest.raises(InputError, match="has 19 bytes; expected a JSON file of at most 10 bytes"):
        readback.read_json(f, max_bytes=readback.MAX_FILE_BYTES)
    with pytest.raises(InputError, match="cannot be read"):
        readback.read_json(tmp_path / "missing.json")
    with pytest.raises(InputError, match="nested deeper") as err:
        readback.parse_json(deep(), source="qa.review.csv", line=7, field="evidence")
    assert (err.value.source, err.value.line, err.value.field) == ("qa.review.csv", 7, "evidence")


@pytest.mark.parametrize("argv", [["show", "{run}"], ["report", "{run}", "--out", "{tmp}/r.html"],
                                  ["compare", "{run}", "{run}"], ["check", "{run}", "--min", "hit@5=0.5"]])
def test_commands_reading_a_deeply_nested_summary_say_which_file(tmp_path, argv):
    run = deep_run(tmp_path / "deep")
    args = [a.format(run=run, tmp=tmp_path) for a in argv]
    p = subprocess.run([sys.executable, "-m", "ragexam.cli", *args], capture_output=True, text=True, timeout=300)
    out = p.stdout + p.stderr
    assert p.returncode == 2, out[-2000:]
    assert "Traceback" not in out and "RecursionError" not in out
    assert "summary.json" in out and "nested deeper than 100" in out


def test_a_deeply_nested_history_record_is_an_input_error(tmp_path):
    from test_report_fixtures import make_run

    from ragexam.storage.history import History

    h = History(tmp_path / "history.sqlite3")
    summary, rows = make_run(n_questions=6, seed=1)
    rid = h.record_run(summary, rows)
    with sqlite3.connect(h.path) as con:
        con.execute("UPDATE runs SET summary = ? WHERE id = ?", ('{"results": ' + deep() + "}", rid))
    with pytest.raises(InputError, match="nested deeper") as err:
        h.get(rid)
    assert str(h.path) in str(err.value) and rid in str(err.value)
    with sqlite3.connect(h.path) as con:
        con.execute("UPDATE runs SET pipelines = ? WHERE id = ?", (deep(), rid))
    with pytest.raises(InputError, match="nested deeper"):
        h.list_runs()


def test_a_history_file_replaced_by_garbage_is_an_input_error(tmp_path):
    from test_report_fixtures import make_run

    from ragexam.storage.history import History

    h = History(tmp_path / "history.sqlite3")
    rid = h.record_run(*make_run(n_questions=6, seed=1))
    assert h.has(rid) and not h.has(rid[:-1])
    for suffix in ("-wal", "-shm"):
        (tmp_path / f"history.sqlite3{suffix}").unlink(missing_ok=True)
    h.path.write_bytes(b"garbage " * 1000)
    for call in (lambda: h.page_runs(), lambda: h.get(rid), lambda: h.has(rid), lambda: h.list_runs(),
                 lambda: h.resolve_id(rid)):
        with pytest.raises(InputError, match="not a ragexam history database") as err:
            call()
        assert err.value.source == str(h.path)


def test_settings_files_are_bounded(tmp_path):
    from ragexam.storage.files import read_settings_file

    for name, text in (("c.json", '{"a": ' + deep() + "}"), ("c.yaml", "a: " + deep(2_000)),
                       ("c.toml", "a = " + deep(2_000))):
        f = tmp_path / name
        f.write_text(text, encoding="utf-8")
        with pytest.raises(InputError, match="nested deeper") as err:
            read_settings_file(f, what="config", suffixes=(".json", ".yaml", ".toml"))
        assert err.value.source == str(f), name
    ok = tmp_path / "ok.toml"
    ok.write_text('a = [[1]]\nb = "x"\n', encoding="utf-8")
    assert read_settings_file(ok, what="config", suffixes=(".toml",)) == {"a": [[1]], "b": "x"}


def test_a_deep_review_sheet_cell_and_chunks_line_name_their_line(tmp_path):
    from ragexam.questions.review import _evidence_cell
    from ragexam.storage.runfolder import _read_chunks

    with pytest.raises(InputError, match="nested deeper") as err:
        _evidence_cell(deep(), "qa.review.csv", 4)
    assert (err.value.source, err.value.line, err.value.field) == ("qa.review.csv", 4, "evidence")
    chunks = tmp_path / "chunks.jsonl"
    chunks.write_text(json.dumps({"pipeline": "p", "chunk_id": "c", "text": "t"}) + "\n" + deep() + "\n",
                      encoding="utf-8")
    with pytest.raises(InputError, match="nested deeper") as err:
        _read_chunks(chunks)
    assert err.value.line == 2 and err.value.source == str(chunks)


def test_a_cut_off_file_and_answers_line_name_the_column_whole(tmp_path):
    """A file cut off inside a string: the message says where the string starts (json's msg alone ends "at")."""
    from ragexam.analysis.answers.files import load_answers
    from ragexam.storage.readback import read_json

    f = tmp_path / "summary.json"
    f.write_text('{"run_id": "x",\n "title": "abc', encoding="utf-8")
    with pytest.raises(InputError) as info:
        read_json(f)
    assert info.value.line == 2 and "(Unterminated string starting at column 11)" in str(info.value)
    a = tmp_path / "answers.jsonl"
    a.write_text('{"query_id": "q1", "answer": "VPN 클라이언트를\n', encoding="utf-8")
    with pytest.raises(InputError) as info:
        load_answers(a)
    assert info.value.line == 1 and "invalid JSON: Invalid control character at column 41;" in str(info.value)
