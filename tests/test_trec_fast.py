"""The compiled TREC reader (``ragexam.data._trecfast``) against the line-by-line parser: the same columns on
every plain file, the other readers on every file it does not take, and a run read against its qrels that
gives the same metrics with less work."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragexam.data import trec
from ragexam.data.trec import PackedVocab, read_trec_qrels, read_trec_run, vocab_list
from ragexam.errors import InputError
from ragexam.metrics.ranking import Qrels, Run, evaluate
from trec_readers import reader, require_compiled

METRICS = ["ndcg@10", "map", "mrr", "p@3", "r@5", "rprec", "hit@1"]


@pytest.fixture(autouse=True)
def _compiled():
    require_compiled()


def _columns(cols):
    """Row by row: (query, document, value) with the value's exact bits."""
    q, d = cols.qid_vocab, vocab_list(cols.doc_vocab)
    return [(q[a], d[b], np.float64(v).tobytes() if cols.values.dtype == np.float64 else int(v))
            for a, b, v in zip(cols.qid_codes.tolist(), cols.doc_codes.tolist(), cols.values.tolist())]


def _both(path, kind, **kw):
    """The file read by the compiled reader (checked to have taken it) and by the Python parser."""
    read = read_trec_run if kind == "run" else read_trec_qrels
    with reader("compiled"):
        fast = read(path, **kw)
    with reader("python"):
        slow = read(path)
    return fast, slow


# -- plain files: every field, number and line end ------------------------------------------------------------

ids = st.text(alphabet=st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=1, max_size=40)
digits = st.text(alphabet="0123456789", min_size=1, max_size=25)
decimals = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.floats(allow_nan=False, allow_infinity=False, width=32).map(lambda x: f"{x:.9g}"),
    st.builds(lambda s, a, b, e: f"{s}{a}.{b}{e}", st.sampled_from(["", "-", "+"]), digits, digits,
              st.sampled_from(["", "e5", "E-3", "e+22", "e-30", "e300", "e400", "e-400"])),
    st.builds(lambda s, a: f"{s}.{a}", st.sampled_from(["", "-"]), digits),
    st.builds(lambda a: f"{a}.", digits),
    st.integers(-10**18, 10**18).map(str),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.tuples(ids, ids, st.integers(-999, 10**6), decimals), min_size=1, max_size=30),
       sep=st.sampled_from([" ", "\t"]), crlf=st.booleans(), blank=st.booleans(), last_newline=st.booleans())
def test_a_plain_run_reads_as_the_python_parser_reads_it(tmp_path, rows, sep, crlf, blank, last_newline):
    seen, lines = set(), []
    for q, d, rank, score in rows:
        if (q, d) in seen:
            continue
        seen.add((q, d))
        lines.append(sep.join([q, "Q0", d, str(rank), score, "tag"]))
        if blank and len(lines) % 3 == 0:
            lines.append("")
    nl = "\r\n" if crlf else "\n"
    path = tmp_path / "r.trec"
    path.write_bytes((nl.join(lines) + (nl if last_newline else "")).encode("ascii"))
    fast, slow = _both(path, "run")
    assert isinstance(fast.doc_vocab, PackedVocab)  # the compiled reader took it
    assert fast.qid_vocab == slow.qid_vocab and vocab_list(fast.doc_vocab) == slow.doc_vocab
    assert _columns(fast) == _columns(slow)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.tuples(ids, ids, st.integers(-10**17, 10**17)), min_size=1, max_size=30),
       header=st.booleans())
def test_a_plain_qrels_reads_as_the_python_parser_reads_it(tmp_path, rows, header):
    seen, lines = set(), []
    for q, d, rel in rows:
        if (q, d) not in seen:
            seen.add((q, d))
            lines.append(f"{q}\t{d}\t{rel}" if header else f"{q} 0 {d} {rel}")
    path = tmp_path / "q.trec"
    path.write_text(("query-id\tcorpus-id\tscore\n" if header else "") + "\n".join(lines) + "\n", encoding="ascii")
    fast, slow = _both(path, "qrels")
    if header and any(trec.qrels_header(line.split("\t")) for line in lines[:1]):
        return  # a first data line that reads as a header: not this test's subject
    assert isinstance(fast.doc_vocab, PackedVocab)
    assert _columns(fast) == _columns(slow)


@pytest.mark.parametrize("text", [
    "q1 Q0 d1 1 0.5 t\nq1  Q0 d2 2 0.4 t\n",          # two spaces: an empty field
    "q1 Q0 d1 1 0.5 t\nq1\tQ0 d2 2 0.4 t\n",          # tabs and spaces
    "q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 0.4 t \n",          # a trailing space
    "q1 Q0 d1 1 0.5 t\nq1 Q0 d\u00e92 2 0.4 t\n",     # a non-ASCII id (pyarrow or Python read it)
    "q1 Q0 d1 1 0.5 t\nq1 Q0 d\x0b2 2 0.4 t\n",       # other whitespace
    "q1 Q0 d1 1 0.5 t\rq1 Q0 d2 2 0.4 t\n",           # a lone CR
    "q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 0x1p-2 t\n",        # a hexadecimal float
    "q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 1_000 t\n",         # digits grouped (Python reads them)
    "q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 inf t\n",
    "q1 Q0 d1 1 0.5 t\nq1 Q0 d2 +2 0.4 t\n" + "q1 Q0 d3 1234567890123456789 0.3 t\n",  # a rank beyond 18 digits
])
def test_a_file_that_is_not_plain_goes_to_the_other_readers(tmp_path, text):
    path = tmp_path / "r.trec"
    path.write_bytes(text.encode("utf-8"))
    assert trec._compiled().read(path.read_bytes(), 0, 6, 0, 2, 4, 3, True) is None

    def outcome():
        try:
            return _columns(read_trec_run(path))
        except InputError as err:  # a line the Python parser rejects: the same words either way
            return str(err)

    with reader("compiled"):
        got = outcome()
    with reader("python"):
        want = outcome()
    assert got == want


@pytest.mark.parametrize("text, line, message", [
    ("q1 Q0 d1 1 0.5 t\nq1 Q0 d1 2 0.4 t\n", 2, "document 'd1' is retrieved twice for the same query 'q1'"),
    # not grouped by query: read again with one table of every document, and checked after
    ("q1 Q0 d1 1 0.5 t\nq2 Q0 d1 1 0.5 t\nq1 Q0 d1 2 0.4 t\n", 3,
     "document 'd1' is retrieved twice for the same query 'q1'"),
    ("q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 nan t\n", 2, "score is NaN"),
    ("q1 Q0 d1 1 0.5 t\nq1 Q0 d2 x 0.4 t\n", 2, "rank 'x' is not an integer"),
    ("q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 0.4\n", 2, "expected 6 fields"),
])
def test_a_bad_line_is_reported_as_the_python_parser_reports_it(tmp_path, text, line, message):
    path = tmp_path / "r.trec"
    path.write_text(text, encoding="ascii")
    qrels = tmp_path / "q.trec"
    qrels.write_text("q1 0 d1 1\n", encoding="ascii")
    errors = []
    for name in ("compiled", "python"):
        with reader(name):
            for docs in (None, read_trec_qrels(qrels)):
                with pytest.raises(InputError) as err:
                    read_trec_run(path, docs=docs)
                errors.append(str(err.value))
    assert len(set(errors)) == 1 and message in errors[0] and f"r.trec:{line}:" in errors[0]


# -- a run read against its qrels -----------------------------------------------------------------------------


def _pair(tmp_path, rng, *, n_queries=40, depth=25, n_docs=300, shuffle=False):
    qrels, run = [], []
    for q in range(n_queries):
        docs = rng.choice(n_docs, size=depth, replace=False)
        for i, d in enumerate(docs):
            run.append(f"q{q} Q0 doc{d} {i + 1} {float(rng.integers(0, 9)) / 4} t\n")  # ties
        for d in rng.choice(n_docs, size=6, replace=False):  # some retrieved, some not
            qrels.append(f"q{q} 0 doc{d} {int(rng.integers(-1, 4))}\n")
    qrels.append("q999 0 doc1 2\n")  # a query the run lacks
    run.append("q998 Q0 doc2 1 1.0 t\n")  # a query the qrels lack
    if shuffle:
        rng.shuffle(run)
    qp, rp = tmp_path / "q.trec", tmp_path / "r.trec"
    qp.write_text("".join(qrels), encoding="ascii")
    rp.write_text("".join(run), encoding="ascii")
    return qp, rp


@pytest.mark.parametrize("shuffle", [False, True], ids=["grouped", "shuffled"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_run_read_against_its_qrels_scores_as_every_reader_does(tmp_path, seed, shuffle):
    qp, rp = _pair(tmp_path, np.random.default_rng(seed), shuffle=shuffle)
    results = {}
    for name in ("compiled", "pyarrow", "python"):
        with reader(name):
            for compat in (False, True):
                results[name, compat] = evaluate(qp, rp, METRICS, trec_compat=compat)
    for compat in (False, True):
        want = results["python", compat]
        for name in ("compiled", "pyarrow"):
            got = results[name, compat]
            assert got.query_ids == want.query_ids and got.missing_from_run == want.missing_from_run
            assert np.array_equal(got.values, want.values), name
    with reader("compiled"):
        q = Qrels.from_file(qp)
        r = Run.from_file(rp, q)
    assert r.cols.doc_base is q.cols.doc_vocab
    assert r.to_dict() == Run.from_dict(Run.from_file(rp).to_dict()).to_dict()


def test_judged_documents_keep_their_qrels_codes_and_the_rest_get_one_per_row(tmp_path):
    qp, rp = tmp_path / "q.trec", tmp_path / "r.trec"
    qp.write_text("a 0 x 1\na 0 y 2\nb 0 z 1\n", encoding="ascii")
    rp.write_text("a Q0 z 1 3 t\na Q0 x 2 2 t\nb Q0 z 1 3 t\nb Q0 w 2 2 t\nc Q0 w 1 1 t\n", encoding="ascii")
    with reader("compiled"):
        q = read_trec_qrels(qp)
        r = read_trec_run(rp, docs=q)
    assert vocab_list(q.doc_vocab) == ["x", "y", "z"]
    assert r.doc_base is q.doc_vocab
    # z is judged for b only: for a it is one more string of the run; w and the second z have their own rows
    assert r.doc_codes.tolist() == [3, 0, 2, 4, 5]
    assert vocab_list(r.doc_vocab) == ["x", "y", "z", "z", "w", "w"]
    assert [vocab_list(r.doc_vocab)[c] for c in r.doc_codes.tolist()] == ["z", "x", "z", "w", "w"]


def test_the_environment_variable_turns_the_compiled_reader_off(tmp_path, monkeypatch):
    path = tmp_path / "r.trec"
    path.write_text("q1 Q0 d1 1 0.5 t\n", encoding="ascii")
    assert isinstance(read_trec_run(path).doc_vocab, PackedVocab)
    monkeypatch.setenv("RAGEXAM_PURE_PYTHON", "1")
    cols = read_trec_run(path)
    assert trec._compiled() is None and not isinstance(cols.doc_vocab, PackedVocab)
    assert vocab_list(cols.doc_vocab) == ["d1"]


# -- the pieces -----------------------------------------------------------------------------------------------


@settings(max_examples=50, deadline=None)
@given(keys=st.lists(st.integers(-2**63, 2**63 - 1), max_size=60), values=st.lists(st.integers(-50, 50), max_size=40))
def test_index_in_finds_the_first_occurrence_of_each_key(keys, values):
    keys = keys + values[:5]
    k, v = np.array(keys, dtype=np.int64), np.array(values, dtype=np.int64)
    got = np.frombuffer(trec._compiled().index_in(k, v), dtype=np.int64)
    want = [values.index(x) if x in values else -1 for x in keys]
    assert got.tolist() == want
    assert trec.codes_index(k, v).tolist() == (want if v.size else [-1] * len(keys))


def test_a_packed_vocabulary_decodes_on_demand():
    words = ["alpha", "", "b\u00e9ta", "gamma"]
    data = "".join(words).encode("utf-8")
    offsets = np.cumsum([0] + [len(w.encode("utf-8")) for w in words]).astype(np.int64)
    v = PackedVocab(data, offsets)
    assert len(v) == 4 and v[2] == "b\u00e9ta" and v[-1] == "gamma" and list(v) == words
    assert v.take(np.array([3, 0])) == ["gamma", "alpha"] and v.to_list() == words
    assert v.arrow().to_pylist() == words
    assert trec.vocab_index(["gamma", "zeta"], v).tolist() == [3, -1]
    with pytest.raises(IndexError):
        v[4]


# -- the build ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("compiler", ["cc", "none"])
def test_the_install_builds_the_reader_where_it_can_and_goes_on_where_it_cannot(tmp_path, compiler):
    """README: with a C compiler the wheel holds the compiled reader; without one (``CC=false``) it is built
    all the same, without it (the reader is an optional extension)."""
    import os
    import shutil
    import subprocess
    import sys
    import zipfile
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    src = tmp_path / "tree"
    shutil.copytree(root / "src", src / "src", ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.egg-info"))
    for name in ("setup.py", "pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(root / name, src / name)
    env = dict(os.environ)
    if compiler == "none":
        env["CC"] = "false"
    out = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", str(src), "-w", str(tmp_path / "w")],
                         capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    [wheel] = (tmp_path / "w").glob("ragexam-*.whl")
    built = [n for n in zipfile.ZipFile(wheel).namelist() if n.startswith("ragexam/data/_trecfast.")
             and n.endswith((".so", ".pyd"))]
    assert bool(built) == (compiler == "cc"), built
