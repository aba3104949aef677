"""What the fast e5 builds once per machine and keeps on disk: the optimized onnxruntime graphs, the
tokenizer's tables and the backend calibration (:mod:`ragexam.retrieval.e5.calibrate`).

Each test points ``RAGEXAM_CACHE_DIR`` at its own folder; the graphs of the test session's cache are linked in
where a test does not need to build them (building one takes seconds)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest

from ragexam.errors import InputError
from ragexam.retrieval.e5 import E5Embedder
from ragexam.retrieval.e5 import calibrate as C
from ragexam.retrieval.e5 import forward_onnx as F
from ragexam.retrieval.e5.model_file import read_model_file

TEXTS = ["계정이 잠겼을 때는 헬프데스크에 문의하세요. " * 12, "VPN 오류 619", ""]


@pytest.fixture(scope="module")
def session_graphs():
    """The session cache's graph folder, with the int8, fp32 and q4 graphs built."""
    model = read_model_file()
    for precision in F.PRECISIONS:
        F.OnnxEncoder(model, threads=1, precision=precision)
    return F.graph_path(model, "int8", "fused").parent


@pytest.fixture()
def fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGEXAM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("RAGEXAM_E5_BACKEND", raising=False)
    return tmp_path / "cache"


def _with_graphs(cache: Path, graphs: Path) -> None:
    (cache / "e5").mkdir(parents=True)
    os.symlink(graphs, cache / "e5" / "graphs")


def test_a_graph_is_built_once_then_loaded_without_onnx(fresh_cache, monkeypatch):
    model = read_model_file()
    path = F.graph_path(model, "int8", "fused")
    assert not path.exists()
    built = F.OnnxEncoder(model, threads=1, precision="int8")
    assert path.is_file() and not list(path.parent.glob("*.tmp"))  # written whole (renamed into place)
    ids = np.array([[0, 9, 17, 2]])

    def no_build(*a, **k):
        raise AssertionError("built again")

    with monkeypatch.context() as m:
        m.setattr(F, "build_graph", no_build)
        m.setitem(sys.modules, "onnx", None)  # a cached graph needs no onnx
        loaded = F.OnnxEncoder(model, threads=1, precision="int8")
    assert np.array_equal(loaded.pooled(ids, np.array([4])), built.pooled(ids, np.array([4])))

    path.write_bytes(b"not a graph")  # a damaged file is built again
    again = F.OnnxEncoder(model, threads=1, precision="int8")
    assert np.array_equal(again.pooled(ids, np.array([4])), built.pooled(ids, np.array([4])))
    assert path.stat().st_size > 1_000_000


def test_the_graph_key_names_weights_onnxruntime_precision_and_cpu(monkeypatch):
    model = read_model_file()
    a = F.graph_path(model, "int8", "fused")
    assert a.name.startswith("e5-int8-fused-ort") and a.suffix == ".ort"
    assert len({a, F.graph_path(model, "fp32", "fused"), F.graph_path(model, "int8", "plain")}) == 3
    with monkeypatch.context() as m:
        m.setattr("ragexam.exec.machine.cpu_fingerprint", lambda: "another-cpu")
        assert F.graph_path(model, "int8", "fused") != a
    monkeypatch.setattr("ragexam.retrieval.embedders._dist_version",
                        lambda name: "9.9" if name == "onnxruntime" else "0.3.0")
    assert F.graph_path(model, "int8", "fused") != a


def test_tokenizer_tables_are_kept_and_a_damaged_file_is_rebuilt(fresh_cache):
    from ragexam.retrieval.e5 import tokenizer as T

    model = read_model_file()
    first = T.E5Tokenizer(model)
    files = list((fresh_cache / "e5" / "tokenizer").glob("*.marshal"))
    assert len(files) == 1
    kept = T.E5Tokenizer(read_model_file())
    assert kept._vocab == first._vocab and kept._scores == first._scores and kept._longest == first._longest
    assert kept.content_ids("passage: 안녕하세요 ragexam") == first.content_ids("passage: 안녕하세요 ragexam")
    files[0].write_bytes(b"\x00garbage")
    again = T.E5Tokenizer(read_model_file())
    assert again._vocab == first._vocab and files[0].stat().st_size > 1_000_000


def test_choice_rule_keeps_the_reference_unless_another_is_clearly_faster():
    assert C.choose({"onnx": 0.050, "onnx-q4": 0.120, "onnx-fp32": 0.090}) == "onnx"
    assert C.choose({"onnx": 0.050, "onnx-q4": 0.047, "onnx-fp32": 0.090}) == "onnx"  # 6% is noise
    assert C.choose({"onnx": 0.100, "onnx-q4": 0.060, "onnx-fp32": 0.080}) == "onnx-q4"
    assert C.choose({"onnx": 0.100, "onnx-q4": 0.120, "onnx-fp32": 0.080}) == "onnx-fp32"
    assert C.choose({"int8x2": 0.010, "q4": 0.0095}, "int8x2") == "int8x2"  # the short windows' reference
    assert C.choose({"int8x2": 0.010, "q4": 0.008}, "int8x2") == "q4"


def test_calibration_measures_once_per_machine_and_the_choice_is_in_identity_and_signature(
        fresh_cache, session_graphs, monkeypatch):
    _with_graphs(fresh_cache, session_graphs)
    e = E5Embedder()
    record = e.calibration
    assert record["backend"] == e.backend in C.CANDIDATES
    assert set(record["cpu_ms_per_window"]) == set(C.CANDIDATES) and record["cpu"].startswith("CPU: ")
    assert record["tokens"] == C.TOKENS and len(record["load"]) == 3
    assert record["short"] in C.SHORT_CANDIDATES and set(record["short_cpu_ms_per_window"]) == set(C.SHORT_CANDIDATES)
    assert record["short_tokens"] == C.SHORT_TOKENS
    path = C.calibration_path(e._path())
    assert json.loads(path.read_text(encoding="utf-8")) == record

    monkeypatch.setattr(C, "calibrate", lambda model: pytest.fail("measured again"))
    assert E5Embedder().backend == record["backend"]  # read back, no measuring, no model loaded

    path.write_text(json.dumps({**record, "backend": "onnx-q4"}), encoding="utf-8")  # as a CPU where q4 wins
    q4 = E5Embedder()
    assert q4.backend == "onnx-q4" and ":onnx-q4:g" in q4.identity and q4.spec == "dense:e5"
    assert q4.signature_fields.endswith("|backend:auto=onnx-q4")
    assert E5Embedder(backend="onnx").signature_fields.endswith("|backend:onnx")
    vec = q4.embed_passages(TEXTS)
    assert np.array_equal(vec, E5Embedder(backend="onnx-q4").embed_passages(TEXTS))


def test_a_calibration_that_gives_short_windows_to_q4_is_named_and_followed(fresh_cache, session_graphs):
    from ragexam.retrieval.e5.embedder import SHORT_WINDOW

    _with_graphs(fresh_cache, session_graphs)
    e = E5Embedder()
    path = C.calibration_path(e._path())
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"backend": "onnx", "short": "q4"}), encoding="utf-8")  # as a CPU without VNNI
    assert e.backend == "onnx" and ":onnx+q4short:g" in e.identity
    assert e.signature_fields.endswith("|backend:auto=onnx+q4short") and e.spec == "dense:e5"
    assert e._precision(SHORT_WINDOW) == "q4" and e._precision(SHORT_WINDOW + 1) == "int8"
    short, long_ = TEXTS[1], TEXTS[0]          # one window of a few tokens; one of more than 64
    assert max(map(len, e.token_ids(short, "passage"))) <= SHORT_WINDOW < min(map(len, e.token_ids(long_, "passage")))
    got = e.embed_passages([short, long_])
    assert np.array_equal(got[0], E5Embedder(backend="onnx-q4").embed_passages([short])[0])
    assert np.array_equal(got[1], E5Embedder(backend="onnx").embed_passages([long_])[0])
    assert E5Embedder(backend="onnx")._precision(SHORT_WINDOW) == "int8x2"  # asked for by name: the default
    path.write_text(json.dumps({"backend": "onnx", "short": "fp16"}), encoding="utf-8")  # not a choice: measured again
    assert C._read(path) is None


def test_an_auto_embedder_sent_to_a_worker_keeps_the_drivers_choice(fresh_cache, session_graphs, monkeypatch):
    import pickle

    _with_graphs(fresh_cache, session_graphs)
    e = E5Embedder()
    C.calibration_path(e._path()).parent.mkdir(parents=True)
    C.calibration_path(e._path()).write_text(json.dumps({"backend": "onnx-fp32"}), encoding="utf-8")
    clone = pickle.loads(pickle.dumps(e))
    monkeypatch.setattr(C, "calibrated_backend", lambda *a: pytest.fail("the worker calibrated again"))
    assert clone.backend == "onnx-fp32" and clone.with_threads(1).backend == "onnx-fp32"
    assert clone.signature_fields == e.signature_fields


def test_pinning_the_backend_skips_the_calibration(fresh_cache, monkeypatch):
    monkeypatch.setattr(C, "calibrate", lambda model: pytest.fail("measured"))
    monkeypatch.setenv("RAGEXAM_E5_BACKEND", "onnx-fp32")
    assert E5Embedder().backend == "onnx-fp32"
    monkeypatch.setenv("RAGEXAM_E5_BACKEND", "fast")
    with pytest.raises(InputError, match="RAGEXAM_E5_BACKEND: field 'backend': received 'fast'; expected one of "
                                         "onnx, onnx-q4, onnx-fp32"):
        E5Embedder().backend


def test_the_calibration_times_short_graphs_and_keeps_none(fresh_cache):
    """A first use on a machine (issue 40: 14 s on 2 cores) times each candidate on a graph of C.LAYERS layers built
    in memory; only the chosen backend's whole graphs are built afterwards, at its first window."""
    e = E5Embedder()
    record = e.calibration
    assert record["layers"] == C.LAYERS < read_model_file().layers and record["seconds"] > 0
    assert record["backend"] in C.CANDIDATES and record["short"] in C.SHORT_CANDIDATES
    assert not list((fresh_cache / "e5").glob("graphs/*"))  # the short graphs were not kept
    short = F.OnnxEncoder(read_model_file(), threads=1, precision="int8", layers=1)
    assert short.pooled(np.array([[0, 9, 17, 2]]), np.array([4])).shape == (1, 384)
    assert not list((fresh_cache / "e5").glob("graphs/*"))
