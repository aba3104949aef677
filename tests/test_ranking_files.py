"""TREC files: layouts (tabs, CRLF, headers, compression), empty and odd files, the messages
``ragexam evaluate`` gives about them, large files read in several blocks, and no pandas."""

from __future__ import annotations

import bz2
import gzip
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ragexam.data.trec import read_trec_qrels, read_trec_run
from ragexam.errors import InputError
from ragexam.metrics.ranking import Qrels, Run, evaluate
from trec_readers import READERS
from trec_readers import reader as use_reader

QRELS = "q1 0 d1 1\nq1 0 d2 0\nq1 0 d4 2\nq2 0 d3 2\n"
RUN = "q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 1.0 t\nq1 Q0 d4 3 0.5 t\nq2 Q0 d9 1 1.0 t\nq2 Q0 d3 2 0.5 t\n"
METRICS = ["ndcg@10", "map", "mrr", "p@2", "r@2"]


def _write(path: Path, text: str) -> Path:
    path.write_bytes(text.encode("utf-8"))
    return path


@pytest.fixture(params=READERS)
def reader(request):
    """Every file of these tests is read by each reader in turn (tests/trec_readers.py)."""
    with use_reader(request.param):
        yield request.param


@pytest.fixture
def pair(tmp_path):
    return _write(tmp_path / "q.trec", QRELS), _write(tmp_path / "r.trec", RUN)


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ragexam.cli", "evaluate", *args], capture_output=True, text=True)


# --- layouts ---------------------------------------------------------------------------------


@pytest.mark.parametrize("transform", [
    pytest.param(lambda t: t.replace(" ", "\t"), id="tabs"),
    pytest.param(lambda t: t.replace("\n", "\r\n"), id="crlf"),
    pytest.param(lambda t: t.replace(" ", "\t", 2), id="mixed-tabs-and-spaces"),
    pytest.param(lambda t: t.replace(" ", "  "), id="double-spaces"),
    pytest.param(lambda t: "\n\n" + t.replace("\n", "\n\n"), id="blank-lines"),
    pytest.param(lambda t: t.replace("\n", " \n"), id="trailing-space"),
])
def test_whitespace_variants_read_the_same(tmp_path, pair, transform, reader):
    expected = evaluate(*pair, METRICS)
    q = _write(tmp_path / "q2.trec", transform(QRELS))
    r = _write(tmp_path / "r2.trec", transform(RUN))
    got = evaluate(q, r, METRICS)
    assert got.query_ids == expected.query_ids and (got.values == expected.values).all()


@pytest.mark.parametrize("header", ["query-id\tcorpus-id\tscore", "qid docid rel", "QID DOCID REL"])
def test_qrels_header_and_three_columns(tmp_path, pair, header, reader):
    """BEIR's qrels (a header, then 'query-id corpus-id score', tab-separated) read as the TREC file."""
    sep = "\t" if "\t" in header else " "
    rows = [line.split() for line in QRELS.splitlines()]
    q = _write(tmp_path / "qrels.tsv", header + "\n" + "".join(sep.join((a, c, d)) + "\n" for a, _, c, d in rows))
    got = evaluate(q, pair[1], METRICS)
    expected = evaluate(*pair, METRICS)
    assert got.query_ids == expected.query_ids and (got.values == expected.values).all()
    # a header with an iteration column is skipped too
    q4 = _write(tmp_path / "qrels4.trec", "qid iter docid rel\n" + QRELS)
    assert (evaluate(q4, pair[1], METRICS).values == expected.values).all()


def test_header_lines_are_reported_with_line_numbers(tmp_path, pair, reader):
    # three columns need a header (a 'qid docid rank' run must not read as judgments)
    q = _write(tmp_path / "q3.trec", "q1 d1 1\n")
    with pytest.raises(InputError, match=r"q3.trec:1: expected 4 fields .*needs a header line"):
        Qrels.from_file(q)
    # a data error after a header names the right line
    q = _write(tmp_path / "qh.trec", "query-id\tcorpus-id\tscore\n\nq1\td1\t1\nq1\td2\thigh\n")
    with pytest.raises(InputError, match=r"qh.trec:4: field 'rel': relevance 'high' is not an integer grade$"):
        Qrels.from_file(q)
    # a duplicate after a header: both lines named
    q = _write(tmp_path / "qd.trec", "qid docid rel\nq1 d1 1\nq1 d2 1\nq1 d1 0\n")
    with pytest.raises(InputError, match=r"qd.trec:4: document 'd1' is judged twice .*first at line 2"):
        Qrels.from_file(q)
    # run files have no header: say so
    r = _write(tmp_path / "rh.trec", "qid Q0 docid rank score tag\n" + RUN)
    with pytest.raises(InputError, match=r"rh.trec:1: field 'rank'.*header line\? TREC run files have none"):
        Run.from_file(r)


def test_swapped_files_are_named(pair):
    q, r = pair
    with pytest.raises(InputError, match=r"r.trec:1: expected 4 fields .*were --qrels and --run swapped"):
        Qrels.from_file(r)
    with pytest.raises(InputError, match=r"q.trec:1: expected 6 fields .*were --qrels and --run swapped"):
        Run.from_file(q)


@pytest.mark.parametrize("suffix,compress", [(".gz", gzip.compress), (".bz2", bz2.compress)])
def test_compressed_files(tmp_path, pair, suffix, compress, reader):
    q = tmp_path / f"q.trec{suffix}"
    r = tmp_path / f"r.trec{suffix}"
    q.write_bytes(compress(QRELS.encode()))
    r.write_bytes(compress(RUN.encode()))
    assert (evaluate(q, r, METRICS).values == evaluate(*pair, METRICS).values).all()
    bad = tmp_path / "bad.trec.gz"
    bad.write_bytes(b"not gzip at all")
    with pytest.raises(InputError, match=r"bad.trec.gz: cannot decompress the .gz file"):
        Run.from_file(bad)


def test_encodings_named(tmp_path, reader):
    p = tmp_path / "u16.trec"
    p.write_bytes(RUN.encode("utf-16"))
    with pytest.raises(InputError, match=r"u16.trec:1: .*UTF-16"):
        Run.from_file(p)
    p = tmp_path / "cp949.trec"
    p.write_bytes("q1 Q0 문서1 1 1.0 t\n".encode("cp949"))
    with pytest.raises(InputError, match=r"cp949.trec:1: .*not valid UTF-8.*CP949"):
        Run.from_file(p)


# --- empty files, directories, ids that do not match ------------------------------------------


@pytest.mark.parametrize("content,what", [("", "0 bytes"), ("\n  \n\t\n", "only blank lines"),
                                          ("query-id\tcorpus-id\tscore\n\n", "only a header line")])
def test_empty_qrels_file_is_named(tmp_path, pair, content, what):
    q = _write(tmp_path / "empty.qrels", content)
    with pytest.raises(InputError) as err:
        evaluate(q, pair[1], METRICS)
    assert str(err.value) == (f"{q}: the qrels file is empty ({what}); expected judgment lines 'qid iter docid rel' "
                              "(e.g. 'q1 0 doc7 1')")
    out = _cli("--qrels", str(q), "--run", str(pair[1]))
    assert out.returncode == 2 and f"{q}: the qrels file is empty" in out.stderr and "Traceback" not in out.stderr


@pytest.mark.parametrize("content", ["", "\n \n"])
def test_empty_run_file_warns_naming_it(tmp_path, pair, content, reader):
    r = _write(tmp_path / "empty.run", content)
    res = evaluate(pair[0], r, METRICS)
    assert (res.values == 0).all() and res.missing_from_run == ["q1", "q2"]
    assert res.warnings == [f"the run file {r} is empty: it ranks nothing, so every query scores 0"]
    out = _cli("--qrels", str(pair[0]), "--run", str(r), "--json")
    assert out.returncode == 0
    assert out.stderr == f"warning: the run file {r} is empty: it ranks nothing, so every query scores 0\n"
    assert json.loads(out.stdout)["warnings"] == res.warnings
    table = _cli("--qrels", str(pair[0]), "--run", str(r))
    assert table.returncode == 0 and table.stderr == out.stderr and "map" in table.stdout
    # trec_eval's rules drop every query absent from the run: then nothing can be scored
    with pytest.raises(InputError, match=rf"no query can be scored: the run file {r} is empty"):
        evaluate(pair[0], r, METRICS, trec_compat=True)


def test_run_whose_ids_match_no_qrels_query(tmp_path, pair):
    r = _write(tmp_path / "other.run", RUN.replace("q1", "1").replace("q2", "2"))
    res = evaluate(pair[0], r, ["map"])
    assert res.mean == {"map": 0.0}
    assert res.warnings == [f"none of the 2 queries of the run file {r} ('1', '2') is in the qrels file {pair[0]} "
                            "('q1', 'q2'), so every query scores 0; do the query ids match?"]
    with pytest.raises(InputError, match=r"no query can be scored: none of the 2 queries of the run file .* "
                                         r"\('1', '2'\) is in the qrels file .*\('q1', 'q2'\); do the query ids match"):
        evaluate(pair[0], r, ["map"], trec_compat=True)
    # the dict API words it without files
    with pytest.raises(InputError, match=r"the only query of the run \('x'\) is not in the qrels \('q'\)"):
        evaluate({"q": {"a": 1}}, {"x": ["a"]}, ["map"], trec_compat=True)


def test_directories_and_missing_files(tmp_path, pair):
    d = tmp_path / "adir"
    d.mkdir()
    out = _cli("--qrels", str(pair[0]), "--run", str(d))
    assert out.returncode == 2 and f"{d}: is a directory; expected a TREC run file" in out.stderr
    out = _cli("--qrels", str(d), "--run", str(pair[1]))
    assert out.returncode == 2 and f"{d}: is a directory; expected a TREC qrels file" in out.stderr
    out = _cli("--qrels", str(pair[0]), "--run", str(tmp_path / "nope.trec"))
    assert out.returncode == 2 and "nope.trec: no such file (expected a TREC run file)" in out.stderr


# --- large files: several blocks, no pandas ---------------------------------------------------


def write_random_pair(tmp_path, *, seed, n_queries, n_docs, depth, judged, ties, unretrieved=0, shuffle=False,
                  qid="q{}", docid="doc{}"):
    """A qrels and a run file: ``depth`` docs per query out of ``n_docs``, scores on a grid of
    ``ties`` values (ties are common), ``judged`` of the retrieved docs graded -1..3, plus
    ``unretrieved`` judged docs that may not be retrieved; lines shuffled if asked."""
    rng = np.random.default_rng(seed)
    qrels_lines, run_lines = [], []
    for q in range(n_queries):
        docs = rng.choice(n_docs, size=depth, replace=False)
        for i, dd in enumerate(docs):
            run_lines.append(f"{qid.format(q)} Q0 {docid.format(dd)} {i + 1} {float(rng.integers(0, ties)) / 4} t\n")
        graded = list(rng.choice(docs, size=judged, replace=False)) + list(rng.choice(n_docs, size=unretrieved))
        for dd in dict.fromkeys(graded):
            qrels_lines.append(f"{qid.format(q)} 0 {docid.format(dd)} {int(rng.integers(-1, 4))}\n")
    if shuffle:
        rng.shuffle(run_lines)
        rng.shuffle(qrels_lines)
    qp, rp = tmp_path / "q.trec", tmp_path / "r.trec"
    qp.write_text("".join(qrels_lines))
    rp.write_text("".join(run_lines))
    return qp, rp


def _big_pair(tmp_path: Path, *, shuffle: bool = False) -> tuple[Path, Path]:
    """A qrels and a run over 1 MiB each (pyarrow reads them in several blocks), with ties."""
    qp, rp = write_random_pair(tmp_path, seed=3, n_queries=3000, n_docs=500, depth=40, judged=20, ties=12,
                               shuffle=shuffle, qid="query{}", docid="document-{}")
    assert qp.stat().st_size > 1 << 20 and rp.stat().st_size > 1 << 20
    return qp, rp


@pytest.mark.parametrize("pure", [False, True], ids=["compiled", "pyarrow"])
def test_large_files_do_not_import_pandas(tmp_path, monkeypatch, pure):
    qp, rp = _big_pair(tmp_path)
    if pure:
        monkeypatch.setenv("RAGEXAM_PURE_PYTHON", "1")
        assert Run.from_file(rp).cols.doc_segments  # read in several blocks
    code = ("import sys, runpy\n"
            f"sys.argv = ['ragexam', 'evaluate', '--qrels', {str(qp)!r}, '--run', {str(rp)!r}, '--json']\n"
            "try:\n    runpy.run_module('ragexam.cli', run_name='__main__')\nexcept SystemExit as e:\n"
            "    assert not e.code, e.code\n"
            "sys.stderr.write('pandas imported' if 'pandas' in sys.modules else 'no pandas')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stderr.endswith("no pandas")
    assert json.loads(out.stdout)["n_queries"] > 0


@pytest.mark.parametrize("shuffle", [False, True], ids=["grouped", "shuffled"])
@pytest.mark.parametrize("kind", ["run", "qrels"])
def test_duplicates_across_blocks_are_found(tmp_path, shuffle, kind):
    qp, rp = _big_pair(tmp_path, shuffle=shuffle)
    path = rp if kind == "run" else qp
    lines = path.read_text().splitlines(keepends=True)
    reader = read_trec_run if kind == "run" else read_trec_qrels
    with use_reader("pyarrow"):
        cols = read_trec_run(rp)
    assert cols.doc_segments  # the run is read in blocks; qrels in one (its codes are global)
    boundary = cols.doc_segments[len(cols.doc_segments) // 2] if kind == "run" else len(lines) // 2
    # repeat the line before a block boundary as the first line after it (same query, other block)
    fields = lines[boundary - 1].split()
    if kind == "run":
        fields[3], fields[4] = "999", "0.125"
    else:
        fields[3] = "3"
    lines.insert(boundary, " ".join(fields) + "\n")
    bad = tmp_path / f"dup.{kind}"
    bad.write_text("".join(lines))
    what = "retrieved" if kind == "run" else "judged"
    message = (f"{bad}:{boundary + 1}: document '{fields[2]}' is {what} twice for the same query "
               f"'{fields[0]}' (first at line {boundary}); each (qid, docid) pair may appear once")
    judged = read_trec_qrels(qp)
    for name in ("pyarrow", "compiled"):
        with use_reader(name):
            with pytest.raises(InputError) as err:
                reader(bad)
            assert str(err.value) == message
            if kind == "run":  # read against the qrels, as evaluate reads it
                with pytest.raises(InputError) as err:
                    read_trec_run(bad, docs=judged)
                assert str(err.value) == message
            # the same document for two different queries, in different blocks, is fine
            assert reader(path).qid_codes.size == len(lines) - 1


@pytest.mark.parametrize("threads", [True, False])
def test_large_files_equal_small_reads(tmp_path, monkeypatch, threads):
    """Block dictionaries (a vocabulary that repeats strings) give the same metrics as one
    dictionary, whether pyarrow parses with threads (an idle machine) or without (a busy one)."""
    from ragexam.data import trec

    monkeypatch.setattr(trec, "_threads_help", lambda: threads)
    qp, rp = _big_pair(tmp_path, shuffle=True)
    from_files = evaluate(qp, rp, METRICS + ["ndcg", "rprec", "hit@3"])
    as_dicts = evaluate(Qrels.from_file(qp).to_dict(), Run.from_file(rp).to_dict(), METRICS + ["ndcg", "rprec", "hit@3"])
    assert from_files.query_ids == as_dicts.query_ids
    assert np.array_equal(from_files.values, as_dicts.values)


def test_relevance_level_above_every_grade_says_so(pair):
    with pytest.raises(InputError) as err:
        evaluate(pair[0], pair[1], ["map"], relevance_level=3)
    assert str(err.value) == (f"{pair[0]}: no query can be scored: 2 queries excluded, no relevant judgment "
                              f"(no grade >= 3) (the qrels file {pair[0]}, the run file {pair[1]}); the highest "
                              "grade in the qrels is 2: lower the relevance level (now 3)")


@pytest.mark.parametrize("bad", ["", "d 1", "d\t1", "d\u30001", "d\u00a01", "d\n"])
def test_writing_a_trec_run_refuses_ids_a_trec_file_cannot_hold(tmp_path, bad):
    from ragexam.data.trec import write_trec_run
    from ragexam.errors import InputError

    with pytest.raises(InputError, match="empty or contains whitespace"):
        write_trec_run(tmp_path / "r.trec", [("q1", "d0", 1, 1.0), ("q1", bad, 2, 0.5)])
    write_trec_run(tmp_path / "ok.trec", [("q1", "d0", 1, 1.0), ("q1", "문서-1", 2, 0.5)])
    assert (tmp_path / "ok.trec").read_text(encoding="utf-8").splitlines()[1] == "q1 Q0 문서-1 2 0.5 ragexam"
